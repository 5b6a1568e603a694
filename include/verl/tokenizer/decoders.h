// Decoders of Hugging Face tokenizer.json ("decoder" key): token strings -> text. Each decoder maps the list
// of tokens to a new list (HF's decode_chain); the final text is their concatenation. Supported types:
// ByteLevel, ByteFallback, Fuse, Strip, Replace, Metaspace, Sequence. Any other type is an error naming it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace verl::tokenizer {

class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual std::vector<std::string> decode_chain(std::vector<std::string> tokens) const = 0;
  std::string decode(std::vector<std::string> tokens) const;
};

std::unique_ptr<Decoder> make_decoder(const nlohmann::json& config, const std::string& where);

}  // namespace verl::tokenizer
