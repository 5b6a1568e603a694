// `verl model init` and `verl model forward` as a user runs them.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "support/run_command.h"
#include "verl/io/safetensors.h"

namespace verl::test {
namespace {

TEST(ModelCli, InitWritesAnHfFolderAndForwardWritesPerRowLogits) {
  const std::string dir = make_temp_dir("model_cli");
  write_file(dir + "/tokenizer.json", "{\"model\": {}}");
  write_file(dir + "/tokenizer_config.json", "{}");
  auto r = run_command(verl_binary() + " model init --arch qwen3 --out " + dir + "/m --seed 5 --hidden-size 32 " +
                       "--num-layers 1 --num-heads 2 --num-kv-heads 1 --intermediate-size 40 --vocab-size 50 " +
                       "--tokenizer " + dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* f : {"config.json", "model.safetensors", "generation_config.json", "tokenizer.json",
                        "tokenizer_config.json"})
    EXPECT_TRUE(std::filesystem::exists(dir + "/m/" + f)) << f;
  auto cfg = nlohmann::json::parse(read_file(dir + "/m/config.json"));
  EXPECT_EQ(cfg["architectures"][0], "Qwen3ForCausalLM");
  EXPECT_EQ(cfg["hidden_size"], 32);
  EXPECT_EQ(cfg["num_key_value_heads"], 1);
  EXPECT_EQ(cfg["vocab_size"], 50);
  EXPECT_EQ(cfg["eos_token_id"], 48);
  // Same seed, same weights.
  auto r2 = run_command(verl_binary() + " model init --arch qwen3 --out " + dir + "/m2 --seed 5 --hidden-size 32 " +
                        "--num-layers 1 --num-heads 2 --num-kv-heads 1 --intermediate-size 40 --vocab-size 50");
  ASSERT_EQ(r2.exit_code, 0) << r2.err;
  EXPECT_EQ(read_file(dir + "/m/model.safetensors"), read_file(dir + "/m2/model.safetensors"));

  write_file(dir + "/ids.json", R"({"input_ids": [[1, 2, 3], [4], [5, 6]]})");
  auto f = run_command(verl_binary() + " model forward --model " + dir + "/m --input " + dir + "/ids.json --output " +
                       dir + "/out.safetensors");
  ASSERT_EQ(f.exit_code, 0) << f.err;
  io::SafetensorsFile out(dir + "/out.safetensors");
  EXPECT_EQ(out.get("logits_0").shape, (std::vector<int64_t>{3, 50}));
  EXPECT_EQ(out.get("logits_1").shape, (std::vector<int64_t>{1, 50}));
  EXPECT_EQ(out.get("logits_2").shape, (std::vector<int64_t>{2, 50}));
}

TEST(ModelCli, ErrorsAreOneClearLine) {
  const std::string dir = make_temp_dir("model_cli_errors");
  auto r = run_command(verl_binary() + " model init --arch gemma --out " + dir + "/m");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("supported: llama, qwen2, qwen3, mistral"), std::string::npos) << r.err;
  r = run_command(verl_binary() + " model init --arch llama");
  EXPECT_EQ(r.exit_code, 2);
  r = run_command(verl_binary() + " model init --arch llama --out " + dir + "/m --num-heads 3 --hidden-size 32");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("multiple of --num-heads"), std::string::npos) << r.err;
  r = run_command(verl_binary() + " model init --arch llama --out " + dir + "/m --sliding-window 8");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--sliding-window is for mistral, qwen2 and qwen3"), std::string::npos) << r.err;
  r = run_command(verl_binary() + " model init --arch qwen2 --out " + dir +
                  "/m --sliding-window 8 --max-window-layers 2");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--max-window-layers must be in [0, --num-layers)"), std::string::npos) << r.err;
  ASSERT_EQ(run_command(verl_binary() + " model init --arch llama --out " + dir + "/m --vocab-size 20").exit_code, 0);
  write_file(dir + "/bad.json", R"({"input_ids": [[1, 99]]})");
  r = run_command(verl_binary() + " model forward --model " + dir + "/m --input " + dir + "/bad.json --output " + dir + "/o.safetensors");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("input_ids[0] holds 99"), std::string::npos) << r.err;
  // A config that does not match the weights.
  auto cfg = nlohmann::json::parse(read_file(dir + "/m/config.json"));
  cfg["vocab_size"] = 30;
  write_file(dir + "/m/config.json", cfg.dump());
  write_file(dir + "/ok.json", R"({"input_ids": [[1, 2]]})");
  r = run_command(verl_binary() + " model forward --model " + dir + "/m --input " + dir + "/ok.json --output " + dir + "/o.safetensors");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("vocab_size=30, hidden_size=64 imply [30, 64] for 'model.embed_tokens.weight' but the "
                       "checkpoint has [20, 64]"),
            std::string::npos)
      << r.err;
  // A truncated weights file.
  std::string bytes = read_file(dir + "/m/model.safetensors");
  write_file(dir + "/m/model.safetensors", bytes.substr(0, bytes.size() / 2));
  r = run_command(verl_binary() + " model forward --model " + dir + "/m --input " + dir + "/ok.json --output " + dir + "/o.safetensors");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("model.safetensors"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace verl::test
