// verl's memory metrics of an update (legacy fsdp / megatron workers' update_actor): the device's peaks and the
// machine's used memory, in GiB, as one-element lists like the worker's other metrics.
#pragma once

#include <torch/types.h>

#include <nlohmann/json.hpp>

namespace verl::workers {

// {"perf/max_memory_allocated_gb": [..], "perf/max_memory_reserved_gb": [..], "perf/cpu_memory_used_gb": [..]};
// a figure this machine cannot report is left out rather than logged as a number.
nlohmann::json memory_metrics(const torch::Device& device);

}  // namespace verl::workers
