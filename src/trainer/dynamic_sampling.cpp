// DAPO dynamic sampling, as verl's recipe/dapo/dapo_ray_trainer.py filters and accumulates groups.
#include "verl/trainer/dynamic_sampling.h"

#include <cmath>
#include <map>

#include "verl/common/error.h"
#include "verl/common/strings.h"

namespace verl::trainer {

using protocol::DataProto;

std::vector<double> filter_metric_values(const DataProto& batch, const std::string& metric) {
  std::vector<double> values;
  if (metric == "reward" || metric == "seq_reward" || metric == "seq_final_reward") {
    const char* key = metric == "seq_final_reward" ? "token_level_rewards" : "token_level_scores";
    const torch::Tensor sums = batch.tensor(key).sum(-1).to(torch::kFloat64).contiguous();
    values.assign(sums.data_ptr<double>(), sums.data_ptr<double>() + sums.numel());
    return values;
  }
  if (!batch.non_tensor_batch.count(metric)) {
    std::vector<std::string> available = {"reward", "seq_reward", "seq_final_reward"};
    for (const auto& [key, column] : batch.non_tensor_batch) available.push_back(key);
    VERL_FAIL("trainer", "algorithm.filter_groups.metric=", metric,
              " is neither reward / seq_reward / seq_final_reward nor a column the reward function returned; "
              "available: ", join(available, ", "));
  }
  for (const auto& value : batch.column(metric)) {
    VERL_CHECK(value.is_number() || value.is_boolean(), "trainer", "algorithm.filter_groups.metric=", metric,
               " holds a non-numeric value: ", value.dump());
    values.push_back(value.is_boolean() ? (value.get<bool>() ? 1.0 : 0.0) : value.get<double>());
  }
  return values;
}

// For each uid u with values x_1..x_k: keep when k == 1 or sqrt(mean_j (x_j - mean x)^2) > 0.
std::vector<int64_t> kept_group_rows(const std::vector<std::string>& uids, const std::vector<double>& metric_values,
                                     int64_t& kept_groups) {
  VERL_ASSERT(uids.size() == metric_values.size(), "trainer", uids.size(), " uids for ", metric_values.size(),
              " metric values");
  std::map<std::string, std::vector<double>> groups;
  for (size_t i = 0; i < uids.size(); ++i) groups[uids[i]].push_back(metric_values[i]);
  std::map<std::string, bool> keep;
  kept_groups = 0;
  for (const auto& [uid, values] : groups) {
    double mean = 0;
    for (double v : values) mean += v;
    mean /= static_cast<double>(values.size());
    double var = 0;
    for (double v : values) var += (v - mean) * (v - mean);
    const bool kept = values.size() == 1 || std::sqrt(var / static_cast<double>(values.size())) > 0;
    keep[uid] = kept;
    kept_groups += kept ? 1 : 0;
  }
  std::vector<int64_t> rows;
  for (size_t i = 0; i < uids.size(); ++i) {
    if (keep[uids[i]]) rows.push_back(static_cast<int64_t>(i));
  }
  return rows;
}

DynamicSampler::DynamicSampler(config::FilterGroupsConfig config, int64_t train_batch_size, int64_t n)
    : config_(std::move(config)), train_batch_size_(train_batch_size), n_(n) {}

bool DynamicSampler::add(const DataProto& new_batch) {
  num_gen_batches_ += 1;
  std::vector<std::string> uids;
  for (const auto& uid : new_batch.column("uid")) uids.push_back(uid.get<std::string>());
  int64_t kept_groups = 0;
  const std::vector<int64_t> rows =
      kept_group_rows(uids, filter_metric_values(new_batch, config_.metric), kept_groups);
  num_prompt_in_batch_ += kept_groups;
  DataProto kept = new_batch.index(rows);
  batch_ = batch_ ? DataProto::concat({*batch_, kept}) : kept;
  if (num_prompt_in_batch_ >= train_batch_size_) return true;
  const int64_t max_batches = config_.max_num_gen_batches;
  VERL_CHECK(max_batches <= 0 || num_gen_batches_ < max_batches, "trainer", "num_gen_batches=", num_gen_batches_,
             " >= max_num_gen_batches=", max_batches, " (algorithm.filter_groups.max_num_gen_batches) with ",
             num_prompt_in_batch_, " of data.train_batch_size=", train_batch_size_, " groups kept. Generated too many. ",
             "Please check if your data are too difficult. You could also try set max_num_gen_batches=0 to enable "
             "endless trials.");
  return false;
}

DataProto DynamicSampler::take() {
  VERL_ASSERT(batch_.has_value() && num_prompt_in_batch_ >= train_batch_size_, "trainer",
              "take() before enough groups were kept");
  DataProto out = batch_->slice(0, train_batch_size_ * n_);
  batch_.reset();
  num_gen_batches_ = 0;
  num_prompt_in_batch_ = 0;
  return out;
}

}  // namespace verl::trainer
