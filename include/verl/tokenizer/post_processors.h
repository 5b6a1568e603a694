// Post-processors of Hugging Face tokenizer.json ("post_processor" key): add the model's special tokens
// around an encoded sequence when add_special_tokens is true. Supported types: TemplateProcessing (the
// "single" template), ByteLevel (no ids change), Sequence. Any other type is an error naming it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace verl::tokenizer {

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  virtual std::vector<int32_t> process(std::vector<int32_t> ids, bool add_special_tokens) const = 0;
};

std::unique_ptr<PostProcessor> make_post_processor(const nlohmann::json& config, const std::string& where);

// The template transformers' LlamaTokenizerFast.update_post_processor builds: [bos] A [eos], each optional.
std::unique_ptr<PostProcessor> make_bos_eos_processor(std::vector<int32_t> bos, std::vector<int32_t> eos);

}  // namespace verl::tokenizer
