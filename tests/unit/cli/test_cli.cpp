// The `verl` binary as a user meets it: help, version, unknown commands, `config show`.
#include <gtest/gtest.h>
#include <torch/version.h>

#include <nlohmann/json.hpp>

#include <functional>
#include <regex>

#include "support/run_command.h"
#include "support/test_python.h"
#include "verl/cli/option_values.h"
#include "verl/common/error.h"
#include "verl/config/config_node.h"
#include "verl/config/yaml_io.h"

namespace verl::test {
namespace {

TEST(Cli, HelpListsEveryCommandWithOneLine) {
  CommandResult r = run_command(verl_binary() + " --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("commands:"), std::string::npos) << r.out;
  // Names are padded to the longest command name, so match "  config <spaces>Show ...".
  EXPECT_TRUE(std::regex_search(r.out, std::regex("\n  config +Show the resolved config"))) << r.out;
}

TEST(Cli, NoArgumentsPrintsHelpAndFails) {
  CommandResult r = run_command(verl_binary());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("usage: verl <command>"), std::string::npos) << r.err;
}

TEST(Cli, SubcommandHelp) {
  CommandResult r = run_command(verl_binary() + " config --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("usage: verl config show"), std::string::npos) << r.out;
}

TEST(Cli, VersionNamesProjectAndLibTorch) {
  CommandResult r = run_command(verl_binary() + " --version");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out.rfind("verl.cpp ", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("LibTorch"), std::string::npos) << r.out;
}

// `verl env --json`: what the issue asks the binary to tell about itself, checked against this build: the
// LibTorch 2.x it was compiled against, loaded from the project's environment, with CUDA compiled in (the PyPI
// wheel), and the thread count OMP_NUM_THREADS asks for.
TEST(Cli, EnvReportsLibTorchCudaMpiAndThreads) {
  CommandResult r = run_command("env OMP_NUM_THREADS=1 CUDA_VISIBLE_DEVICES= " + verl_binary() + " env --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto env = nlohmann::json::parse(r.out);
  EXPECT_EQ(env["libtorch"], TORCH_VERSION);
  EXPECT_EQ(env["libtorch"].get<std::string>().rfind("2.", 0), 0u);
  EXPECT_NE(env["libtorch_path"].get<std::string>().find("libtorch_cpu.so"), std::string::npos);
  EXPECT_TRUE(env["cuda_compiled"].get<bool>());
  EXPECT_EQ(env["cuda_devices"], 0);  // none visible: CUDA_VISIBLE_DEVICES is empty
  EXPECT_NE(env["mpi"].get<std::string>().find("MPI"), std::string::npos);
  EXPECT_EQ(env["intra_op_threads"], 1);
  EXPECT_NE(env["blas"].get<std::string>(), "");
  EXPECT_NE(env["python"].get<std::string>().find(" at /"), std::string::npos);
  r = run_command(verl_binary() + " env --bogus");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("unknown option '--bogus'"), std::string::npos) << r.err;
}

TEST(Cli, UnknownSubcommandListsValidOnes) {
  CommandResult r = run_command(verl_binary() + " confgi");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("error: unknown command 'confgi'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("did you mean 'config'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("valid commands: config"), std::string::npos) << r.err;
}

TEST(Cli, ConfigShowPrintsOverriddenLearningRate) {
  CommandResult r = run_command(verl_binary() + " config show actor_rollout_ref.actor.optim.lr=3e-6");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  config::Node shown = config::parse_yaml(r.out, "stdout");
  const config::Node* lr = config::find_path(shown, "actor_rollout_ref.actor.optim.lr");
  ASSERT_NE(lr, nullptr);
  EXPECT_EQ(lr->kind(), config::Kind::Float);
  EXPECT_EQ(lr->as_double(), 3e-6);
}

TEST(Cli, ConfigShowOutputReadsAsFloatInPyYaml) {
  // An independent YAML 1.1 reader (PyYAML) must see the same float.
  if (!test_python_imports("yaml")) FAIL() << test_python_missing_hint();
  const std::string dir = make_temp_dir("cli_pyyaml");
  CommandResult r = run_command(verl_binary() + " config show actor_rollout_ref.actor.optim.lr=3e-6 > " + dir +
                                "/c.yaml && " + test_python() + "-c \"import yaml; c = yaml.safe_load(open('" + dir +
                                "/c.yaml')); v = c['actor_rollout_ref']['actor']['optim']['lr']; "
                                "print(type(v).__name__, repr(v), c['data']['seed'], c['trainer']['logger'])\"");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "float 3e-06 None ['console']\n");
}

// --validate adds the checks `verl train` makes of the config before it starts (here: batch sizes against the
// devices, a rollout TP size that does not divide them), as one error line; without it the same config resolves.
TEST(Cli, ConfigShowValidateRunsTheTrainersChecks) {
  const std::string config =
      " --config '" + std::string(VERL_SOURCE_DIR_FOR_TESTS) + "/examples/digit_completion_ppo.yaml'";
  EXPECT_EQ(run_command(verl_binary() + " config show --validate" + config).exit_code, 0);
  for (const auto& [override_text, message] : std::vector<std::pair<std::string, std::string>>{
           {"trainer.n_gpus_per_node=3", "800 responses per step must be divisible by the 3 devices"},
           {"actor_rollout_ref.rollout.tensor_model_parallel_size=3",
            "actor_rollout_ref.rollout.tensor_model_parallel_size=3 must divide the rollout's 1 devices"}}) {
    EXPECT_EQ(run_command(verl_binary() + " config show" + config + " " + override_text).exit_code, 0);
    CommandResult r = run_command(verl_binary() + " config show --validate" + config + " " + override_text);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(r.out, "");
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "expected one line: " << r.err;
  }
}

TEST(Cli, ConfigShowUnknownKeyFailsWithSuggestion) {
  CommandResult r = run_command(verl_binary() + " config show actor_rollout_ref.actor.optim.lrr=1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("did you mean 'actor_rollout_ref.actor.optim.lr'"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "expected one line: " << r.err;
}

TEST(Cli, ConfigShowRoundTripsThroughConfigFile) {
  const std::string dir = make_temp_dir("cli_roundtrip");
  CommandResult first = run_command(verl_binary() +
                                    " config show algorithm.adv_estimator=grpo trainer.experiment_name=007 "
                                    "trainer.logger=[console,jsonl] data.seed=3 actor_rollout_ref.actor.optim.lr=1e-7");
  ASSERT_EQ(first.exit_code, 0) << first.err;
  write_file(dir + "/shown.yaml", first.out);
  CommandResult second = run_command(verl_binary() + " config show --config " + dir + "/shown.yaml");
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_EQ(first.out, second.out);
  EXPECT_NE(first.out.find("experiment_name: \"007\""), std::string::npos) << first.out;
  EXPECT_NE(first.out.find("default_local_dir: checkpoints/verl_examples/007"), std::string::npos);
}

TEST(Cli, ConfigShowRejectsStrayArguments) {
  CommandResult r = run_command(verl_binary() + " config show --bogus");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("unexpected argument '--bogus'"), std::string::npos) << r.err;
  r = run_command(verl_binary() + " config shw");
  EXPECT_EQ(r.exit_code, 2);
}

// Option values: the whole text parses, or a one-line error names the option.
TEST(OptionValues, WholeTextMustParse) {
  EXPECT_EQ(cli::parse_int_option("--n", "-3"), -3);
  EXPECT_EQ(cli::parse_count_option("--n", "12"), 12);
  EXPECT_DOUBLE_EQ(cli::parse_number_option("--x", "1e4"), 1e4);
  const auto message = [](const std::function<void()>& fn) {
    try {
      fn();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(message([] { cli::parse_int_option("--n", "3x"); }), "[cli] --n expects an integer, got '3x'");
  EXPECT_EQ(message([] { cli::parse_int_option("--n", ""); }), "[cli] --n expects an integer, got ''");
  EXPECT_EQ(message([] { cli::parse_count_option("--n", "-1"); }),
            "[cli] --n expects a non-negative integer, got '-1'");
  EXPECT_EQ(message([] { cli::parse_number_option("--x", "1e4x"); }), "[cli] --x expects a number, got '1e4x'");
  // Through the binary: `verl model init` used to read "500000x" as 500000.
  const std::string dir = make_temp_dir("option_values_cli");
  CommandResult r = run_command(verl_binary() + " model init --arch llama --out " + dir + "/m --rope-theta 500000x");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--rope-theta expects a number, got '500000x'"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace verl::test
