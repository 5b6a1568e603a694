#include "verl/workers/update_metrics.h"

#include <algorithm>
#include <numeric>

#include "verl/common/error.h"

namespace verl::workers {

void UpdateMetrics::add(const std::string& key, double value, MetricAggregation aggregation) {
  auto [it, inserted] = pending_.try_emplace(key, Pending{aggregation, {}});
  VERL_ASSERT(it->second.aggregation == aggregation, "workers", "metric '", key,
              "' added with two different aggregations");
  it->second.values.push_back(value);
}

void UpdateMetrics::add_per_mini_batch(const std::string& key, double value) { done_[key].push_back(value); }

void UpdateMetrics::end_mini_batch() {
  for (auto& [key, pending] : pending_) {
    const std::vector<double>& v = pending.values;
    if (v.empty()) continue;
    std::vector<double>& out = done_[key];
    switch (pending.aggregation) {
      case MetricAggregation::Sum:
        out.push_back(std::accumulate(v.begin(), v.end(), 0.0));
        break;
      case MetricAggregation::Mean:
        out.push_back(std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size()));
        break;
      case MetricAggregation::Min:
        out.push_back(*std::min_element(v.begin(), v.end()));
        break;
      case MetricAggregation::Max:
        out.push_back(*std::max_element(v.begin(), v.end()));
        break;
      case MetricAggregation::Each:
        out.insert(out.end(), v.begin(), v.end());
        break;
    }
    pending.values.clear();
  }
}

std::map<std::string, std::vector<double>> UpdateMetrics::lists() const {
  VERL_ASSERT(std::all_of(pending_.begin(), pending_.end(), [](const auto& kv) { return kv.second.values.empty(); }),
              "workers", "update metrics read before end_mini_batch");
  return done_;
}

nlohmann::json UpdateMetrics::to_json() const {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [key, values] : lists()) out[key] = values;
  return out;
}

}  // namespace verl::workers
