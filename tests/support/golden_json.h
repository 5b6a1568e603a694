// Test helper for the golden tests: a committed golden JSON file read from the source tree (an error naming the
// generator to run when it is missing), and its nested number arrays as tensors.
#pragma once

#include <torch/torch.h>

#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>
#include <nlohmann/json.hpp>

namespace verl::test {

// relative_path and generator are relative to the source tree, e.g. "tests/golden/algo/core_algos_golden.json".
inline nlohmann::json read_golden_json(const std::string& relative_path, const std::string& generator) {
  const std::string path = std::string(VERL_SOURCE_DIR_FOR_TESTS) + "/" + relative_path;
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path + "; run " + generator);
  return nlohmann::json::parse(in);
}

inline void flatten_into(const nlohmann::json& j, std::vector<double>& out) {
  if (j.is_array()) {
    for (const auto& e : j) flatten_into(e, out);
  } else {
    out.push_back(j.get<double>());
  }
}

// A nested array of numbers as a tensor of its shape (an empty array: shape [0]).
inline torch::Tensor tensor_of(const nlohmann::json& j, torch::ScalarType dtype = torch::kDouble) {
  std::vector<int64_t> shape;
  const nlohmann::json* cur = &j;
  while (cur->is_array()) {
    shape.push_back(static_cast<int64_t>(cur->size()));
    if (cur->empty()) break;
    cur = &(*cur)[0];
  }
  std::vector<double> flat;
  flatten_into(j, flat);
  return torch::tensor(flat, torch::kDouble).view(shape).to(dtype);
}

}  // namespace verl::test
