#include "verl/agent/tensor_parallel_turns.h"

#include <cstring>
#include <utility>
#include <vector>

#include "verl/common/error.h"

namespace verl::agent {

namespace {

constexpr const char* kTensorParallelTurnsComponent = "multi_turn";

// The driver's messages: int64 words, the first the kind. A batch: the count, then per request its conversation id,
// budget, number of new tokens and the tokens. A failure: the text after the word.
enum Kind : int64_t { kBatch = 0, kDone = 1, kFailed = 2 };

void put(std::string& out, int64_t word) { out.append(reinterpret_cast<const char*>(&word), sizeof(word)); }

class Reader {
 public:
  explicit Reader(const std::string& bytes) : bytes_(bytes) {}
  int64_t next() {
    VERL_ASSERT(at_ + sizeof(int64_t) <= bytes_.size(), kTensorParallelTurnsComponent,
                "a truncated message from the first tensor-parallel rank");
    int64_t word = 0;
    std::memcpy(&word, bytes_.data() + at_, sizeof(word));
    at_ += sizeof(word);
    return word;
  }
  std::string rest() const { return bytes_.substr(at_); }

 private:
  const std::string& bytes_;
  size_t at_ = 0;
};

}  // namespace

TensorParallelTurns::TensorParallelTurns(std::shared_ptr<parallel::Comm> group, TurnGenerator local)
    : group_(std::move(group)), local_(std::move(local)) {
  VERL_ASSERT(group_ != nullptr && local_, kTensorParallelTurnsComponent, "a tensor-parallel group and a generator");
}

TurnGenerator TensorParallelTurns::driver() {
  VERL_ASSERT(group_->rank() == 0, kTensorParallelTurnsComponent, "only the group's first rank drives the loop");
  return [this](std::vector<ContinueRequest>& requests) {
    std::string message;
    put(message, kBatch);
    put(message, static_cast<int64_t>(requests.size()));
    for (const ContinueRequest& r : requests) {
      const auto [it, fresh] = ids_.emplace(r.cache, static_cast<int64_t>(ids_.size()));
      put(message, it->second);
      put(message, r.max_new_tokens);
      put(message, static_cast<int64_t>(r.new_tokens.size()));
      for (int64_t token : r.new_tokens) put(message, token);
    }
    group_->broadcast_bytes(message, 0);
    in_batch_ = true;
    auto results = local_(requests);
    in_batch_ = false;
    return results;
  };
}

void TensorParallelTurns::finish(const std::string& error) {
  VERL_ASSERT(group_->rank() == 0 && !finished_, kTensorParallelTurnsComponent, "the driver finishes once");
  finished_ = true;
  std::string message;
  put(message, error.empty() ? kDone : kFailed);
  message += error;
  group_->broadcast_bytes(message, 0);
}

void TensorParallelTurns::follow() {
  VERL_ASSERT(group_->rank() != 0, kTensorParallelTurnsComponent, "the group's first rank drives, it does not follow");
  for (;;) {
    std::string message;
    group_->broadcast_bytes(message, 0);
    Reader in(message);
    const int64_t kind = in.next();
    if (kind == kDone) return;
    VERL_CHECK(kind != kFailed, kTensorParallelTurnsComponent,
               "the multi-turn rollout failed on tensor-parallel rank 0 "
               "of this model copy (it drives the conversations): ",
               in.rest());
    VERL_ASSERT(kind == kBatch, kTensorParallelTurnsComponent, "an unknown message kind ", kind);
    const int64_t count = in.next();
    std::vector<ContinueRequest> requests(static_cast<size_t>(count));
    for (ContinueRequest& r : requests) {
      r.cache = &caches_[in.next()];
      r.max_new_tokens = in.next();
      r.new_tokens.resize(static_cast<size_t>(in.next()));
      for (int64_t& token : r.new_tokens) token = in.next();
    }
    local_(requests);
  }
}

}  // namespace verl::agent
