// Crash consistency of the project's writes (common/atomic_file.h): the temporaries an interrupted write leaves
// are recognised and removed at the next start, and every file is flushed to disk before the rename that
// publishes it, and its folder after (checked with strace on a helper test of this binary).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "support/run_command.h"
#include "verl/common/atomic_file.h"

namespace verl {
namespace {

namespace fs = std::filesystem;

TEST(DurableWrites, StaleTemporariesAreRecognisedByTheirPattern) {
  EXPECT_TRUE(is_stale_temp_name("data.json.tmp.12345"));
  EXPECT_TRUE(is_stale_temp_name("actor.tmp.7"));
  EXPECT_TRUE(is_stale_temp_name("actor.old.4242"));
  EXPECT_FALSE(is_stale_temp_name("notes.tmp"));
  EXPECT_FALSE(is_stale_temp_name("run.tmp.abc"));
  EXPECT_FALSE(is_stale_temp_name(".tmp.12"));
  EXPECT_FALSE(is_stale_temp_name("model.safetensors"));
  EXPECT_FALSE(is_stale_temp_name("x.tmp.123456789012"));  // not a pid
}

TEST(DurableWrites, RemoveStaleTempFilesClearsOnlyThem) {
  const std::string dir = test::make_temp_dir("durable_stale");
  fs::create_directories(dir + "/global_step_2/actor.tmp.99/huggingface");
  test::write_file(dir + "/global_step_2/actor.tmp.99/model.safetensors", "half");
  fs::create_directories(dir + "/global_step_2/actor");
  test::write_file(dir + "/global_step_2/actor/model.safetensors", "whole");
  test::write_file(dir + "/global_step_2/data.json.tmp.5", "{");
  test::write_file(dir + "/latest_checkpointed_iteration.txt.tmp.31", "2");
  test::write_file(dir + "/latest_checkpointed_iteration.txt", "1");
  fs::create_directories(dir + "/global_step_1/actor.old.8");
  fs::create_directories(dir + "/global_step_1/actor");
  fs::create_directories(dir + "/global_step_3/critic.old.12");  // killed between the commit's two renames
  test::write_file(dir + "/global_step_3/critic.old.12/model.safetensors", "previous");
  test::write_file(dir + "/notes.tmp", "mine");
  test::write_file(dir + "/global_step_2/actor/deep.tmp.3", "three levels down: left alone at depth 1");
  std::vector<std::string> removed = remove_stale_temp_files(dir, 1);
  std::set<std::string> got(removed.begin(), removed.end());
  EXPECT_EQ(got, (std::set<std::string>{dir + "/latest_checkpointed_iteration.txt.tmp.31",
                                        dir + "/global_step_1/actor.old.8", dir + "/global_step_2/actor.tmp.99",
                                        dir + "/global_step_2/data.json.tmp.5"}));
  EXPECT_TRUE(fs::exists(dir + "/global_step_2/actor/model.safetensors"));
  EXPECT_TRUE(fs::exists(dir + "/notes.tmp"));
  EXPECT_TRUE(fs::exists(dir + "/global_step_2/actor/deep.tmp.3"));
  EXPECT_EQ(test::read_file(dir + "/global_step_3/critic/model.safetensors"), "previous");  // put back
  EXPECT_FALSE(fs::exists(dir + "/global_step_3/critic.old.12"));
  EXPECT_EQ(remove_stale_temp_files(dir + "/missing", 2).size(), 0u);
}

// Run by FsyncBeforeRenameAndFolderAfter under strace (disabled otherwise): one atomic file, one staged folder.
TEST(DurableWritesHelper, DISABLED_WriteFileAndStagedFolder) {
  const char* dir = std::getenv("VERL_DURABLE_WRITES_DIR");
  ASSERT_NE(dir, nullptr);
  write_file_atomic(std::string(dir) + "/tracker.txt", "3");
  StagedDirectory staged(std::string(dir) + "/actor");
  fs::create_directories(staged.path() + "/huggingface");
  std::ofstream(staged.path() + "/model.safetensors") << "weights";  // a writer that does not fsync
  std::ofstream(staged.path() + "/huggingface/config.json") << "{}";
  staged.commit();
}

TEST(DurableWrites, FsyncBeforeRenameAndFolderAfter) {
  if (test::run_command("command -v strace").exit_code != 0) GTEST_SKIP() << "strace is not installed";
  const std::string dir = fs::canonical(test::make_temp_dir("durable_fsync")).string();
  const std::string log = dir + "/strace.log";
  const std::string self = fs::read_symlink("/proc/self/exe").string();
  test::CommandResult r = test::run_command(
      "VERL_DURABLE_WRITES_DIR='" + dir + "' strace -f -y -qq -e trace=fsync,fdatasync,rename,renameat,renameat2 -o '" +
      log + "' '" + self + "' --gtest_also_run_disabled_tests --gtest_filter=DurableWritesHelper.*");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  // The calls in order, as "fsync <path>" / "rename <from> <to>".
  std::vector<std::string> calls;
  std::istringstream lines(test::read_file(log));
  std::string line;
  const std::regex sync(R"re((?:fsync|fdatasync)\(\d+<([^>]+)>\) = 0)re");
  const std::regex rename(R"re(rename(?:at2?)?\((?:[^,"]+, )?"([^"]+)", (?:[^,"]+, )?"([^"]+)".*\) = 0)re");
  for (std::smatch m; std::getline(lines, line);) {
    if (std::regex_search(line, m, sync)) calls.push_back("fsync " + m[1].str());
    if (std::regex_search(line, m, rename)) calls.push_back("rename " + m[1].str() + " " + m[2].str());
  }
  const auto index_of = [&](const std::string& call) -> long {
    for (size_t i = 0; i < calls.size(); ++i) {
      if (calls[i].rfind(call, 0) == 0) return static_cast<long>(i);
    }
    return -1;
  };
  std::string all;
  for (const auto& c : calls) all += c + "\n";
  const long tracker_sync = index_of("fsync " + dir + "/tracker.txt.tmp.");
  const long tracker_rename = index_of("rename " + dir + "/tracker.txt.tmp.");
  ASSERT_GE(tracker_sync, 0) << all;
  ASSERT_GT(tracker_rename, tracker_sync) << all;
  EXPECT_EQ(calls.at(static_cast<size_t>(tracker_rename) + 1), "fsync " + dir) << all;  // the rename is durable
  const long folder_rename = index_of("rename " + dir + "/actor.tmp.");
  ASSERT_GE(folder_rename, 0) << all;
  for (const std::string file : {"/model.safetensors", "/huggingface/config.json", "/huggingface"}) {
    bool synced_before = false;
    for (long i = 0; i < folder_rename; ++i) {
      synced_before = synced_before || (calls[static_cast<size_t>(i)].rfind("fsync " + dir + "/actor.tmp.", 0) == 0 &&
                                        calls[static_cast<size_t>(i)].size() >= file.size() &&
                                        calls[static_cast<size_t>(i)].compare(calls[static_cast<size_t>(i)].size() - file.size(),
                                                                              file.size(), file) == 0);
    }
    EXPECT_TRUE(synced_before) << file << " not flushed before the folder was published\n" << all;
  }
  EXPECT_EQ(calls.at(static_cast<size_t>(folder_rename) + 1), "fsync " + dir) << all;
}

}  // namespace
}  // namespace verl
