// configs/sft_trainer_engine.yaml against verl 0.9.1's own sft_trainer config (its YAML files composed by
// tests/golden/trainer/sft_engine_config_reference.py under .venv/test): the same keys and the same defaults, apart
// from the differences listed here.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "support/run_command.h"
#include "support/test_python.h"
#include "verl/config/node_json.h"
#include "verl/config/sft_config.h"

namespace verl::test {
namespace {

void collect_sft_engine_leaves(const config::Node& node, const std::string& prefix,
                               std::map<std::string, nlohmann::json>& out) {
  if (node.is_map() && !node.fields().empty()) {
    for (const auto& [key, child] : node.fields()) {
      collect_sft_engine_leaves(child, prefix.empty() ? key : prefix + "." + key, out);
    }
    return;
  }
  out[prefix] = nlohmann::json::parse(config::node_to_json(node).dump());
}

TEST(SFTEngineConfigGolden, KeysAndDefaultsAreVerls) {
  const std::string dir = make_temp_dir("sft_engine_config_golden");
  const std::string script =
      std::string(VERL_SOURCE_DIR_FOR_TESTS) + "/tests/golden/trainer/sft_engine_config_reference.py";
  const CommandResult r = run_command(test_python() + script + " " + dir + "/verl.json");
  ASSERT_EQ(r.exit_code, 0) << test_python_missing_hint() << "\n" << r.err;
  const nlohmann::json verl = nlohmann::json::parse(read_file(dir + "/verl.json"));
  std::map<std::string, nlohmann::json> ours;
  collect_sft_engine_leaves(config::default_sft_engine_config_tree(), "", ours);

  // verl.cpp's own keys, and the defaults it sets apart from verl's (docs/config.md).
  const std::set<std::string> own = {"data.chat_template_timeout", "trainer.num_cpu_threads"};
  const std::map<std::string, nlohmann::json> differs = {
      {"trainer.logger", {"console"}},  // verl: [console, wandb]; wandb needs an account or offline mode
      // ${oc.select:global_profiler...} in verl, whose SFT config has no global_profiler: their fallbacks.
      {"profiler.tool_config.nsys.discrete", nullptr},
      {"profiler.tool_config.precision_debugger.config_path", nullptr},
      {"profiler.tool_config.precision_debugger.stages", nullptr},
      {"profiler.tool_config.torch_memory.memory_snapshot_num_steps", 1},
      {"profiler.tool_config.torch_memory.stack_depth", 32},
      {"profiler.tool_config.torch_memory.trace_alloc_max_entries", 100000},
  };
  int compared = 0;
  for (const auto& [key, value] : verl.items()) {
    auto it = ours.find(key);
    ASSERT_NE(it, ours.end()) << "verl's key " << key << " is missing";
    const nlohmann::json want = differs.count(key) ? differs.at(key) : value;
    EXPECT_EQ(it->second, want) << key;
    ++compared;
  }
  for (const auto& [key, value] : ours) {
    EXPECT_TRUE(verl.contains(key) || own.count(key)) << "not verl's key: " << key;
  }
  EXPECT_GT(compared, 150);
}

}  // namespace
}  // namespace verl::test
