// A hand-made letter tokenizer whose ids are worked out by hand, for data tests: <pad>=0 <eos>=1 <unk>=2 '|'=3
// '>'=4 'a'..'z'=5..30. No pre-tokenizer and no merges: one id per character. The chat template writes the first
// letter of each role, '|', the content, and '>' as the generation prompt, then an optional `suffix` kwarg.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "support/run_command.h"
#include "verl/common/strings.h"

namespace verl::test {

// The tokenizer folder (tokenizer.json + tokenizer_config.json) in a fresh temp folder `name`.
inline std::string letter_tokenizer_dir(const std::string& name, bool with_pad = true) {
  const std::string dir = make_temp_dir(name);
  std::string vocab = R"("<pad>":0,"<eos>":1,"<unk>":2,"|":3,">":4)";
  for (char c = 'a'; c <= 'z'; ++c) vocab += str_cat(",\"", c, "\":", 5 + (c - 'a'));
  write_file(dir + "/tokenizer.json", R"({"model":{"type":"BPE","vocab":{)" + vocab +
                                          R"(},"unk_token":"<unk>","merges":[]},"added_tokens":[
    {"id":0,"content":"<pad>","lstrip":false,"rstrip":false,"single_word":false,"normalized":false,"special":true},
    {"id":1,"content":"<eos>","lstrip":false,"rstrip":false,"single_word":false,"normalized":false,"special":true}]})");
  nlohmann::json config = {
      {"eos_token", "<eos>"},
      {"chat_template",
       "{% for m in messages %}{{ m['role'][0] }}|{{ m['content'] }}{% endfor %}"
       "{% if add_generation_prompt %}>{% endif %}{% if suffix is defined %}{{ suffix }}{% endif %}"}};
  if (with_pad) config["pad_token"] = "<pad>";
  write_file(dir + "/tokenizer_config.json", config.dump());
  return dir;
}

}  // namespace verl::test
