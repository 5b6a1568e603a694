#include "verl/tokenizer/bpe_model.h"

#include <cstdio>
#include <mutex>
#include <nlohmann/json.hpp>
#include <queue>

#include "verl/common/error.h"

namespace verl::tokenizer {

namespace {

using json = nlohmann::json;

uint64_t pair_key(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

size_t utf8_char_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if ((lead >> 5) == 0x6) return 2;
  if ((lead >> 4) == 0xE) return 3;
  if ((lead >> 3) == 0x1E) return 4;
  return 1;
}

std::string optional_string(const json& config, const char* key) {
  if (!config.contains(key) || config[key].is_null()) return "";
  return config[key].is_string() ? config[key].get<std::string>() : "";
}

constexpr size_t kMaxCachedWordBytes = 256;
constexpr size_t kMaxCacheEntries = 100000;

}  // namespace

struct BpeModel::Cache {
  std::mutex mutex;
  std::unordered_map<std::string, std::vector<int32_t>> words;
};

BpeModel::BpeModel(const json& config, BpeVocab data, const std::string& where)
    : cache_(std::make_unique<Cache>()) {
  vocab_.reserve(data.vocab.size() * 2);
  int64_t max_id = -1;
  for (auto& [token, id] : data.vocab) {
    max_id = std::max<int64_t>(max_id, id);
    vocab_.emplace(std::move(token), id);
  }
  id_to_token_.assign(static_cast<size_t>(max_id + 1), std::string());
  has_id_.assign(static_cast<size_t>(max_id + 1), 0);
  for (const auto& [token, id] : vocab_) {
    id_to_token_[id] = token;
    has_id_[id] = 1;
  }

  fuse_unk_ = config.value("fuse_unk", false);
  byte_fallback_ = config.value("byte_fallback", false);
  ignore_merges_ = config.value("ignore_merges", false);
  continuing_subword_prefix_ = optional_string(config, "continuing_subword_prefix");
  end_of_word_suffix_ = optional_string(config, "end_of_word_suffix");
  const std::string unk = optional_string(config, "unk_token");
  if (!unk.empty()) {
    auto it = vocab_.find(unk);
    VERL_CHECK(it != vocab_.end(), "tokenizer", where, ": unk_token '", unk, "' is not in the vocab");
    unk_id_ = it->second;
  }
  VERL_CHECK(!config.contains("dropout") || config["dropout"].is_null(), "tokenizer", where,
             ": BPE dropout is not supported (encoding would not be deterministic)");
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    auto it = vocab_.find(name);
    byte_ids_[b] = it == vocab_.end() ? -1 : it->second;
  }

  merges_.reserve(data.merges.size() * 2);
  std::string joined;
  for (size_t rank = 0; rank < data.merges.size(); ++rank) {
    const auto& [left, right] = data.merges[rank];
    joined.assign(left).append(right);
    auto l = vocab_.find(left), r = vocab_.find(right), m = vocab_.find(joined);
    VERL_CHECK(l != vocab_.end() && r != vocab_.end() && m != vocab_.end(), "tokenizer", where, ": merge #", rank,
               " ('", left, "', '", right, "') uses a token that is not in the vocab");
    merges_.emplace(pair_key(l->second, r->second), Merge{static_cast<int32_t>(rank), m->second});
  }
}

BpeModel::~BpeModel() = default;

std::optional<int32_t> BpeModel::token_to_id(std::string_view token) const {
  auto it = vocab_.find(std::string(token));
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

const std::string* BpeModel::id_to_token(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= id_to_token_.size() || !has_id_[id]) return nullptr;
  return &id_to_token_[id];
}

void BpeModel::encode_word(const std::string& word, std::vector<int32_t>& out) const {
  if (word.empty()) return;
  if (ignore_merges_) {
    auto it = vocab_.find(word);
    if (it != vocab_.end()) {
      out.push_back(it->second);
      return;
    }
  }
  const bool cacheable = word.size() <= kMaxCachedWordBytes;
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_->mutex);
    auto it = cache_->words.find(word);
    if (it != cache_->words.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<int32_t> ids;
  merge_word(word, ids);
  out.insert(out.end(), ids.begin(), ids.end());
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_->mutex);
    if (cache_->words.size() >= kMaxCacheEntries) cache_->words.clear();
    cache_->words.emplace(word, std::move(ids));
  }
}

void BpeModel::merge_word(std::string_view word, std::vector<int32_t>& out) const {
  // Symbols of the word as a doubly linked list over a vector; a merged-away symbol has id -1.
  struct Symbol {
    int32_t id;
    int32_t prev;
    int32_t next;
  };
  std::vector<Symbol> symbols;
  symbols.reserve(word.size());
  bool last_was_unk = false;
  auto push = [&](int32_t id) {
    const int32_t index = static_cast<int32_t>(symbols.size());
    symbols.push_back(Symbol{id, index - 1, -1});
    if (index > 0) symbols[index - 1].next = index;
  };
  std::string piece;
  size_t pos = 0;
  while (pos < word.size()) {
    const size_t len = std::min(utf8_char_length(static_cast<unsigned char>(word[pos])), word.size() - pos);
    const bool first = pos == 0;
    const bool last = pos + len == word.size();
    piece.clear();
    if (!first) piece += continuing_subword_prefix_;
    piece.append(word.data() + pos, len);
    if (last) piece += end_of_word_suffix_;
    auto it = vocab_.find(piece);
    if (it != vocab_.end()) {
      push(it->second);
      last_was_unk = false;
    } else {
      bool handled = false;
      if (byte_fallback_) {
        bool all = true;
        for (size_t k = 0; k < len; ++k) all = all && byte_ids_[static_cast<unsigned char>(word[pos + k])] >= 0;
        if (all) {
          for (size_t k = 0; k < len; ++k) push(byte_ids_[static_cast<unsigned char>(word[pos + k])]);
          handled = true;
          last_was_unk = false;
        }
      }
      if (!handled && unk_id_) {
        if (!(fuse_unk_ && last_was_unk)) push(*unk_id_);
        last_was_unk = true;
      }
      // Without an unk token, a character outside the vocab is dropped (as HF tokenizers does).
    }
    pos += len;
  }

  struct Candidate {
    int32_t rank;
    int32_t pos;
    int32_t new_id;
    bool operator>(const Candidate& other) const {
      return rank != other.rank ? rank > other.rank : pos > other.pos;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> queue;
  auto consider = [&](int32_t left) {
    if (left < 0) return;
    const int32_t right = symbols[left].next;
    if (right < 0) return;
    auto it = merges_.find(pair_key(symbols[left].id, symbols[right].id));
    if (it != merges_.end()) queue.push(Candidate{it->second.rank, left, it->second.new_id});
  };
  for (int32_t i = 0; i + 1 < static_cast<int32_t>(symbols.size()); ++i) consider(i);
  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    Symbol& left = symbols[top.pos];
    if (left.id < 0 || left.next < 0) continue;
    Symbol& right = symbols[left.next];
    auto it = merges_.find(pair_key(left.id, right.id));
    if (it == merges_.end() || it->second.new_id != top.new_id) continue;  // stale candidate
    const int32_t right_index = left.next;
    left.id = top.new_id;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = top.pos;
    right.id = -1;
    (void)right_index;
    consider(left.prev);
    consider(top.pos);
  }
  for (const Symbol& symbol : symbols) {
    if (symbol.id >= 0) out.push_back(symbol.id);
  }
}

}  // namespace verl::tokenizer
