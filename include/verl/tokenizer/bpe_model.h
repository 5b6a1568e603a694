// The BPE model of Hugging Face tokenizer.json ("model": {"type": "BPE"}): vocab, ranked merges (as "a b"
// strings or ["a", "b"] pairs), byte_fallback (<0xXX> tokens, Llama 2 / Mistral), ignore_merges (Llama 3),
// unk_token with fuse_unk, continuing_subword_prefix and end_of_word_suffix. Words are merged lowest rank
// first (ties: leftmost) with a heap over a linked list of symbols; results are cached per word.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace verl::tokenizer {

// The two large parts of a BPE model, read by a streaming parser (see tokenizer_json.cpp) rather than as JSON
// trees: (token, id) in file order and merges as (left, right) in rank order.
struct BpeVocab {
  std::vector<std::pair<std::string, int32_t>> vocab;
  std::vector<std::pair<std::string, std::string>> merges;
};

class BpeModel {
 public:
  // `config` is tokenizer.json's "model" object (its "vocab" and "merges" are ignored: they come in `data`);
  // `where` names it in errors.
  BpeModel(const nlohmann::json& config, BpeVocab data, const std::string& where);
  ~BpeModel();
  BpeModel(const BpeModel&) = delete;
  BpeModel& operator=(const BpeModel&) = delete;

  // Appends the ids of one pre-tokenized piece to `out`.
  void encode_word(const std::string& word, std::vector<int32_t>& out) const;

  std::optional<int32_t> token_to_id(std::string_view token) const;
  // nullptr when `id` is not in the vocab.
  const std::string* id_to_token(int32_t id) const;
  // One past the largest id in the vocab.
  size_t id_limit() const { return id_to_token_.size(); }
  size_t vocab_size() const { return vocab_.size(); }
  size_t merge_count() const { return merges_.size(); }

 private:
  struct Merge {
    int32_t rank;
    int32_t new_id;
  };
  void merge_word(std::string_view word, std::vector<int32_t>& out) const;

  std::unordered_map<std::string, int32_t> vocab_;
  std::vector<std::string> id_to_token_;
  std::vector<char> has_id_;
  std::unordered_map<uint64_t, Merge> merges_;
  std::optional<int32_t> unk_id_;
  bool fuse_unk_ = false;
  bool byte_fallback_ = false;
  bool ignore_merges_ = false;
  std::string continuing_subword_prefix_;
  std::string end_of_word_suffix_;
  int32_t byte_ids_[256];  // id of "<0xXX>" or -1

  struct Cache;
  std::unique_ptr<Cache> cache_;
};

}  // namespace verl::tokenizer
