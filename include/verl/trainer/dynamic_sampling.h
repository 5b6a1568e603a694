// DAPO dynamic sampling (verl's recipe/dapo RayDAPOTrainer, algorithm.filter_groups): after the reward, the
// groups (responses sharing a uid) whose metric does not vary are dropped; generation batches are added until
// data.train_batch_size groups remain, and the batch is cut to train_batch_size x n responses.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "verl/config/ppo_config.h"
#include "verl/protocol/data_proto.h"

namespace verl::trainer {

// One value per response of the filter metric: reward / seq_reward = sum_t token_level_scores,
// seq_final_reward = sum_t token_level_rewards, any other name = that reward extra-info column (acc, score, ...).
std::vector<double> filter_metric_values(const protocol::DataProto& batch, const std::string& metric);

// Rows (in order) of the groups kept: population std (np.std) of the metric > 0, or a group of one response.
// `kept_groups` receives the number of groups kept.
std::vector<int64_t> kept_group_rows(const std::vector<std::string>& uids, const std::vector<double>& metric_values,
                                     int64_t& kept_groups);

class DynamicSampler {
 public:
  DynamicSampler(config::FilterGroupsConfig config, int64_t train_batch_size, int64_t n);

  // Adds one generation batch (rewards computed): keeps its varying groups. Returns true when the kept
  // groups reach train_batch_size (take() then gives the batch); false to generate another batch. Throws,
  // as verl, when more batches are needed and max_num_gen_batches (> 0) are already spent.
  bool add(const protocol::DataProto& new_batch);
  // The first train_batch_size x n kept responses; resets the counters for the next step.
  protocol::DataProto take();

  int64_t num_gen_batches() const { return num_gen_batches_; }      // generation batches of this step so far
  int64_t num_prompt_in_batch() const { return num_prompt_in_batch_; }

 private:
  config::FilterGroupsConfig config_;
  int64_t train_batch_size_;
  int64_t n_;
  std::optional<protocol::DataProto> batch_;
  int64_t num_gen_batches_ = 0;
  int64_t num_prompt_in_batch_ = 0;
};

}  // namespace verl::trainer
