// Normalizers of Hugging Face tokenizer.json ("normalizer" key): text -> text before pre-tokenization.
// Supported types: NFC, NFD, NFKC, NFKD (utf8proc), Lowercase, Replace (String or Regex pattern), Prepend,
// Strip, StripAccents, Sequence. Any other type is an error naming it.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace verl::tokenizer {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual std::string normalize(const std::string& text) const = 0;
};

// Builds the normalizer described by `config` (an object with "type"); `where` names it in errors.
// A JSON null gives nullptr (no normalization).
std::unique_ptr<Normalizer> make_normalizer(const nlohmann::json& config, const std::string& where);

// Unicode normal forms, exposed for tests and callers that need them directly.
std::string unicode_nfc(const std::string& text);
std::string unicode_nfd(const std::string& text);
std::string unicode_nfkc(const std::string& text);
std::string unicode_nfkd(const std::string& text);
// Full lowercase as Rust's str::to_lowercase for all single-code-point mappings plus U+0130 (final
// sigma context is not applied: U+03A3 always lowers to U+03C3).
std::string unicode_lowercase(const std::string& text);

}  // namespace verl::tokenizer
