// Reads a Hugging Face tokenizer.json into its pipeline parts: normalizer, pre-tokenizer, model (BPE only),
// post-processor, decoder and added tokens. Malformed JSON, a missing key or an unsupported type is one
// verl::Error naming the file and the key.
#pragma once

#include <memory>
#include <string>

#include "verl/tokenizer/added_tokens.h"
#include "verl/tokenizer/bpe_model.h"
#include "verl/tokenizer/decoders.h"
#include "verl/tokenizer/normalizers.h"
#include "verl/tokenizer/post_processors.h"
#include "verl/tokenizer/pre_tokenizers.h"

namespace verl::tokenizer {

struct TokenizerPipeline {
  std::unique_ptr<Normalizer> normalizer;        // may be null
  std::unique_ptr<PreTokenizer> pre_tokenizer;   // may be null: the whole segment is one piece
  std::unique_ptr<BpeModel> model;
  std::unique_ptr<PostProcessor> post_processor; // may be null
  std::unique_ptr<Decoder> decoder;              // may be null: tokens joined with spaces
  std::unique_ptr<AddedVocabulary> added_tokens;
};

// `text` is the file's content; `where` (usually its path) names it in errors.
TokenizerPipeline parse_tokenizer_json(const std::string& text, const std::string& where);
TokenizerPipeline load_tokenizer_json(const std::string& path);

}  // namespace verl::tokenizer
