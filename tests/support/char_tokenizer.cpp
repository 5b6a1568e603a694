#include "support/char_tokenizer.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "support/run_command.h"

namespace verl::test {

void write_char_tokenizer(const std::string& dir) {
  std::filesystem::create_directories(dir);
  nlohmann::ordered_json vocab;
  const std::string specials = "SEPU";
  for (size_t i = 0; i < specials.size(); ++i) vocab[std::string(1, specials[i])] = static_cast<int>(i);
  for (int d = 0; d < 10; ++d) vocab[std::to_string(d)] = 4 + d;
  vocab[","] = 14;
  vocab[":"] = 15;
  nlohmann::ordered_json added = nlohmann::ordered_json::array();
  for (size_t i = 0; i < specials.size(); ++i) {
    added.push_back({{"id", static_cast<int>(i)}, {"content", std::string(1, specials[i])}, {"single_word", false},
                     {"lstrip", false}, {"rstrip", false}, {"normalized", false}, {"special", true}});
  }
  nlohmann::ordered_json tokenizer = {
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", added},
      {"normalizer", nullptr},
      {"pre_tokenizer", nullptr},
      {"post_processor", nullptr},
      {"decoder", {{"type", "Fuse"}}},
      {"model",
       {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", "U"}, {"continuing_subword_prefix", nullptr},
        {"end_of_word_suffix", nullptr}, {"fuse_unk", false}, {"byte_fallback", false}, {"vocab", vocab},
        {"merges", nlohmann::ordered_json::array()}}}};
  write_file(dir + "/tokenizer.json", tokenizer.dump(1));
  nlohmann::ordered_json config = {
      {"tokenizer_class", "PreTrainedTokenizerFast"},
      {"bos_token", nullptr},
      {"eos_token", "E"},
      {"pad_token", "P"},
      {"unk_token", "U"},
      {"chat_template",
       "{% for message in messages %}{{ message['content'] }}{% endfor %}{% if add_generation_prompt %}S{% endif %}"}};
  write_file(dir + "/tokenizer_config.json", config.dump(1));
  write_file(dir + "/generation_config.json", R"({"eos_token_id": 1, "pad_token_id": 2})");
}

}  // namespace verl::test
