// verl's rollout-trace bookkeeping (agent/rollout_trace.h): the trace tags of a batch (verl's get_trajectory_info:
// rollout_n counts consecutive equal indices) and the rows max_samples_per_step_per_worker keeps (whole groups of
// n rollouts); the trace config's keys and their errors.
#include <gtest/gtest.h>

#include <set>

#include "support/config_overrides.h"
#include "verl/agent/rollout_trace.h"

namespace verl::agent {
namespace {

using nlohmann::json;

TEST(RolloutTrace, TagsCountRolloutsOfConsecutiveEqualIndices) {
  const std::vector<json> index = {5, 5, 7, 7, 7, "a", nullptr};
  const auto tags = trace_tags(index, 3, false, "exp");
  ASSERT_EQ(tags.size(), 7u);
  const std::vector<int64_t> rollout_n = {0, 1, 0, 1, 2, 0, 0};
  for (size_t i = 0; i < tags.size(); ++i) {
    EXPECT_EQ(tags[i]["rollout_n"], rollout_n[i]) << i;
    EXPECT_EQ(tags[i]["step"], 3);
    EXPECT_EQ(tags[i]["validate"], false);
    EXPECT_EQ(tags[i]["experiment_name"], "exp");
  }
  EXPECT_EQ(tags[0]["sample_index"], 5);
  EXPECT_EQ(tags[5]["sample_index"], "a");
  EXPECT_EQ(tags[6]["sample_index"], 6);  // no index: the row's position (verl's np.arange)
  // verl's attribute order.
  std::vector<std::string> keys;
  for (const auto& item : tags[0].items()) keys.push_back(item.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"sample_index", "step", "rollout_n", "validate", "experiment_name"}));
}

TEST(RolloutTrace, MaxSamplesKeepsWholeGroupsOfDistinctIndices) {
  const std::vector<json> index = {1, 1, 2, 2, 3, 3, 4, 4};
  EXPECT_EQ(traced_rows(index, std::nullopt, 0), std::vector<bool>(8, true));
  EXPECT_EQ(traced_rows(index, 4, 0), std::vector<bool>(8, true));
  EXPECT_EQ(traced_rows(index, 9, 0), std::vector<bool>(8, true));
  EXPECT_EQ(traced_rows(index, 0, 0), std::vector<bool>(8, false));
  std::set<std::string> drawn_sets;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    const auto rows = traced_rows(index, 2, seed);
    std::set<int64_t> chosen;
    for (size_t i = 0; i < rows.size(); ++i) {
      if (rows[i]) chosen.insert(index[i].get<int64_t>());
    }
    EXPECT_EQ(chosen.size(), 2u);
    for (size_t i = 0; i < rows.size(); i += 2) EXPECT_EQ(rows[i], rows[i + 1]) << "a group is traced whole";
    drawn_sets.insert(json(std::vector<int64_t>(chosen.begin(), chosen.end())).dump());
  }
  EXPECT_GT(drawn_sets.size(), 1u) << "the draw depends on the seed";
}

TEST(RolloutTrace, ConfigKeys) {
  auto t = test::load_with_overrides({"actor_rollout_ref.rollout.trace.backend=mlflow",
                                      "actor_rollout_ref.rollout.trace.token2text=True",
                                      "actor_rollout_ref.rollout.trace.max_samples_per_step_per_worker=4",
                                      "trainer.project_name=proj", "trainer.experiment_name=exp"})
               .ppo.actor_rollout_ref.rollout.trace;
  EXPECT_EQ(t.backend.value_or(""), "mlflow");
  EXPECT_TRUE(t.token2text);
  EXPECT_EQ(t.max_samples_per_step_per_worker.value_or(-1), 4);
  EXPECT_EQ(t.project_name, "proj");  // verl: ${oc.select:trainer.project_name,null}
  EXPECT_EQ(t.experiment_name, "exp");
  EXPECT_FALSE(test::load_with_overrides({}).ppo.actor_rollout_ref.rollout.trace.backend.has_value());
  const std::string weave = test::config_error_of({"actor_rollout_ref.rollout.trace.backend=weave"});
  EXPECT_NE(weave.find("actor_rollout_ref.rollout.trace.backend' is 'weave'"), std::string::npos) << weave;
  EXPECT_EQ(weave.find('\n'), std::string::npos) << weave;
  const std::string negative =
      test::config_error_of({"actor_rollout_ref.rollout.trace.max_samples_per_step_per_worker=-1"});
  EXPECT_NE(negative.find("max_samples_per_step_per_worker must be a non-negative integer"), std::string::npos)
      << negative;
}

}  // namespace
}  // namespace verl::agent
