// The metrics of one update call (update_actor / update_critic) as verl 0.9.1's engine workers aggregate them
// (verl/utils/metric: Metric with an AggregationType, train_mini_batch's aggregate_dp): each micro-batch adds its
// values, each mini-batch then reduces them to one number per key, and the controller averages those numbers over
// mini-batches and data-parallel ranks (the trainer's reduce_metrics; by name: max / min keys take the extreme).
//   Sum   the global-batch-normalised losses (pg_loss, vf_loss, loss, ...): a mini-batch's micro-batch values add up
//         to its loss
//   Mean  per-micro-batch statistics (pg_clipfrac, ppo_kl, ...): their mean over the mini-batch
//   Min / Max  the extreme over the mini-batch
//   Each  plain numbers verl logs per micro-batch (the critic's vf_clipfrac, vpred_mean): every value kept
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace verl::workers {

enum class MetricAggregation { Sum, Mean, Min, Max, Each };

class UpdateMetrics {
 public:
  // One micro-batch's value. A key keeps the aggregation it was first added with.
  void add(const std::string& key, double value, MetricAggregation aggregation);
  // One value per mini-batch as it is (grad_norm).
  void add_per_mini_batch(const std::string& key, double value);
  // Reduces the micro-batch values added since the last call, one number per key (Each: all of them).
  void end_mini_batch();
  // key -> list of numbers, verl's dict of lists.
  std::map<std::string, std::vector<double>> lists() const;
  nlohmann::json to_json() const;

 private:
  struct Pending {
    MetricAggregation aggregation;
    std::vector<double> values;
  };
  std::map<std::string, Pending> pending_;
  std::map<std::string, std::vector<double>> done_;
};

}  // namespace verl::workers
