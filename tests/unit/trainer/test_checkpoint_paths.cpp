// Checkpoint layout, resume-mode resolution, rotation and atomic writes.
#include <gtest/gtest.h>

#include <filesystem>

#include "support/run_command.h"
#include "verl/common/atomic_file.h"
#include "verl/common/error.h"
#include "verl/trainer/checkpoint_paths.h"

namespace verl::trainer {
namespace {

namespace fs = std::filesystem;

void make_step(const std::string& root, int64_t step, const std::vector<std::string>& roles) {
  for (const auto& role : roles) fs::create_directories(global_step_dir(root, step) + "/" + role);
}

TEST(CheckpointPaths, LayoutAndStepParsing) {
  EXPECT_EQ(global_step_dir("ckpt/p/e", 12), "ckpt/p/e/global_step_12");
  EXPECT_EQ(latest_tracker_path("ckpt"), "ckpt/latest_checkpointed_iteration.txt");
  EXPECT_EQ(global_step_from_path("/a/global_step_40"), 40);
  EXPECT_EQ(global_step_from_path("/a/global_step_7/"), 7);
  EXPECT_THROW(global_step_from_path("/a/step_7"), Error);
  EXPECT_THROW(global_step_from_path("/a/global_step_7/actor"), Error);
}

TEST(CheckpointPaths, ResumeModes) {
  const std::string root = test::make_temp_dir("resume_modes");
  EXPECT_EQ(resolve_resume_path("auto", root, std::nullopt), std::nullopt);  // nothing saved yet
  make_step(root, 3, {"actor"});
  write_latest_tracker(root, 3);
  EXPECT_EQ(test::read_file(latest_tracker_path(root)), "3");
  EXPECT_EQ(resolve_resume_path("auto", root, std::nullopt), global_step_dir(root, 3));
  EXPECT_EQ(resolve_resume_path("disable", root, std::nullopt), std::nullopt);
  make_step(root, 1, {"actor"});
  EXPECT_EQ(resolve_resume_path("resume_path", root, global_step_dir(root, 1)), global_step_dir(root, 1));
  EXPECT_THROW(resolve_resume_path("resume_path", root, std::nullopt), Error);
  EXPECT_THROW(resolve_resume_path("resume_path", root, root + "/global_step_9"), Error);
  EXPECT_THROW(resolve_resume_path("sometimes", root, std::nullopt), Error);
}

TEST(CheckpointPaths, BrokenTrackerIsAnError) {
  const std::string root = test::make_temp_dir("broken_tracker");
  test::write_file(latest_tracker_path(root), "abc");
  EXPECT_THROW(find_latest_checkpoint(root), Error);
  test::write_file(latest_tracker_path(root), "5\n");
  try {
    find_latest_checkpoint(root);
    FAIL() << "missing folder accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("global_step_5' does not exist"), std::string::npos) << e.what();
  }
}

// Found with fuzz/fuzz_checkpoint_metadata.cpp (regression-tracker-step-beyond-int64): std::stoll threw
// std::out_of_range, which named no file.
TEST(CheckpointPaths, StepBeyondInt64IsAnErrorNamingTheFile) {
  const std::string root = test::make_temp_dir("tracker_overflow");
  test::write_file(latest_tracker_path(root), "123456789012345678901234567890\n");
  try {
    find_latest_checkpoint(root);
    FAIL() << "a step beyond int64 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("latest_checkpointed_iteration.txt' names step '123456789012345678901234567890'"),
              std::string::npos) << e.what();
  }
  EXPECT_THROW(global_step_from_path("/a/global_step_99999999999999999999"), Error);
}

TEST(CheckpointPaths, RotationKeepsNewestPerRole) {
  const std::string root = test::make_temp_dir("rotation");
  for (int64_t step : {2, 4, 6, 8}) make_step(root, step, {"actor", "critic"});
  auto deleted = rotate_checkpoints(root, "actor", 2);
  EXPECT_EQ(deleted.size(), 2u);
  EXPECT_FALSE(fs::exists(global_step_dir(root, 2) + "/actor"));
  EXPECT_TRUE(fs::exists(global_step_dir(root, 2) + "/critic"));  // other roles rotate on their own
  EXPECT_TRUE(fs::exists(global_step_dir(root, 6) + "/actor"));
  EXPECT_TRUE(fs::exists(global_step_dir(root, 8) + "/actor"));
  rotate_checkpoints(root, "critic", 3);
  EXPECT_FALSE(fs::exists(global_step_dir(root, 2)));  // emptied step folder removed
  EXPECT_TRUE(rotate_checkpoints(root, "actor", std::nullopt).empty());
}

TEST(AtomicFile, WriteReplacesWholeFile) {
  const std::string dir = test::make_temp_dir("atomic_write");
  write_file_atomic(dir + "/f.txt", "first version");
  write_file_atomic(dir + "/f.txt", "2");
  EXPECT_EQ(test::read_file(dir + "/f.txt"), "2");
  int entries = 0;
  for (const auto& e : fs::directory_iterator(dir)) entries += e.is_regular_file() ? 1 : 0;
  EXPECT_EQ(entries, 1);  // no temporary left behind
  EXPECT_THROW(write_file_atomic(dir + "/missing/f.txt", "x"), Error);
}

TEST(AtomicFile, StagedDirectoryPublishesOnlyOnCommit) {
  const std::string root = test::make_temp_dir("staged");
  const std::string target = root + "/global_step_1";
  {
    StagedDirectory staged(target);
    test::write_file(staged.path() + "/model.bin", "weights");
    EXPECT_FALSE(fs::exists(target));
  }  // abandoned: an error happened while writing
  EXPECT_FALSE(fs::exists(target));
  EXPECT_TRUE(fs::is_empty(root));
  {
    StagedDirectory staged(target);
    test::write_file(staged.path() + "/model.bin", "v1");
    staged.commit();
  }
  EXPECT_EQ(test::read_file(target + "/model.bin"), "v1");
  {
    StagedDirectory staged(target);
    test::write_file(staged.path() + "/model.bin", "v2");
    staged.commit();
  }
  EXPECT_EQ(test::read_file(target + "/model.bin"), "v2");
  EXPECT_EQ(std::distance(fs::directory_iterator(root), fs::directory_iterator()), 1);
}

}  // namespace
}  // namespace verl::trainer
