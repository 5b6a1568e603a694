// The multi-turn rollout under tensor parallelism. The T ranks of one model copy hold slices of every layer, so each
// forward of a policy turn needs all of them, in the same order; but the conversations themselves (the chat
// template, the tool calls, the interaction's replies) must be driven once: a tool with side effects or a random
// answer run on every rank would run T times and could send the ranks different text. So the group's first rank
// drives the tool agent loop (as verl's agent loop drives one TP rollout server) and, before each batch of policy
// turns, sends the batch to the others: per conversation its id, the tokens appended since its last turn and the
// turn's budget. They run the same batch on their slices, each keeping its own KV caches (the slices' heads) by
// conversation id, and so make the same collective calls; the tokens are the same on every rank (the same logits
// and the same seed; the engine checks it every step).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>

#include "verl/agent/continuation_engine.h"
#include "verl/agent/tool_agent_loop.h"
#include "verl/parallel/comm.h"

namespace verl::agent {

class TensorParallelTurns {
 public:
  // `group`: the tensor-parallel ranks (rank 0 drives). `local`: this rank's generator of turns (the engine on its
  // slices), called by the driver for each batch after sending it, by the others for each batch received.
  TensorParallelTurns(std::shared_ptr<parallel::Comm> group, TurnGenerator local);

  // Driver: the loop's generator (sends each batch, then runs it here).
  TurnGenerator driver();
  // Driver: tells the others the loop ended; with `error`, that it failed outside a batch (they stop waiting and
  // fail naming it). After a failure inside a batch the others failed in the same batch (the engine's errors are
  // the same on every rank), so nothing is sent: `failed_in_batch()` says which.
  void finish(const std::string& error = "");
  bool failed_in_batch() const { return in_batch_; }
  bool finished() const { return finished_; }
  // The others: run the driver's batches until it finishes; throws when it reports a failure.
  void follow();

 private:
  std::shared_ptr<parallel::Comm> group_;
  TurnGenerator local_;
  std::unordered_map<const SequenceCache*, int64_t> ids_;  // driver: the conversations' ids, in order of first use
  std::map<int64_t, SequenceCache> caches_;                // the others: their caches by conversation id
  bool in_batch_ = false;
  bool finished_ = false;
};

}  // namespace verl::agent
