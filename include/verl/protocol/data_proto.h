// DataProto: the batch that travels between the controller and the workers (verl/protocol.py).
//   batch             named tensors sharing dim 0 (B rows): input_ids (B, P+R), responses (B, R), ...
//   non_tensor_batch  named columns of JSON-like values, one per row: uid, data_source, reward_model, ...
//   meta_info         one JSON object for the whole batch: temperature, eos_token_id, metrics, ...
// Every operation keeps all three consistent; a size mismatch is an error naming the key.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace verl::protocol {

using Json = nlohmann::json;
using TensorMap = std::map<std::string, torch::Tensor>;
using NonTensorMap = std::map<std::string, std::vector<Json>>;

class DataProto {
 public:
  DataProto() : meta_info(Json::object()) {}
  // Checks that every tensor and column has the same number of rows.
  static DataProto from_dict(TensorMap tensors, NonTensorMap non_tensors = {}, Json meta = Json::object());

  int64_t size() const;  // rows (0 for an empty proto)
  bool has_tensor(const std::string& key) const { return batch.count(key) > 0; }
  const torch::Tensor& tensor(const std::string& key) const;  // error naming the key if absent
  const std::vector<Json>& column(const std::string& key) const;

  // Keeps only the named keys (all when a list is empty and `keep_all_if_empty`); shares tensor storage.
  DataProto select(const std::vector<std::string>& batch_keys, const std::vector<std::string>& non_tensor_keys = {},
                   const std::vector<std::string>& meta_keys = {}, bool keep_all_if_empty = false) const;
  // Removes the named keys from this proto and returns them.
  DataProto pop(const std::vector<std::string>& batch_keys, const std::vector<std::string>& non_tensor_keys = {},
                const std::vector<std::string>& meta_keys = {});

  // Merges `other` into this proto. Keys present in both must hold equal values (tensors, columns and meta).
  DataProto& union_with(const DataProto& other);
  // The same for tensors and columns only; meta_info stays this proto's (a worker's output, whose timing and
  // metrics the caller reads first, merged into the controller's batch).
  DataProto& union_rows_with(const DataProto& other);

  // Rows [start, end).
  DataProto slice(int64_t start, int64_t end) const;
  // Rows in the given order (duplicates allowed).
  DataProto index(const std::vector<int64_t>& rows) const;
  // Reorders rows in place: row i becomes old row order[i]; `order` must be a permutation.
  void reorder(const std::vector<int64_t>& order);

  // `chunks` contiguous equal parts; size must divide evenly (pad first with pad_to_divisor).
  std::vector<DataProto> chunk(int64_t chunks) const;
  // Consecutive parts of `rows` rows (the last may be shorter).
  std::vector<DataProto> split(int64_t rows) const;
  // Rows of all parts in order. Meta keys must agree across parts, except "metrics", whose per-key values
  // are collected into lists (verl's list-of-dict to dict-of-list).
  static DataProto concat(const std::vector<DataProto>& parts);

  // n copies of each row: interleaved [a,a,b,b] or tiled [a,b,a,b].
  DataProto repeat(int64_t times, bool interleave = true) const;

  // Appends rows taken from the start (cycling) until size % divisor == 0; returns how many were added.
  int64_t pad_to_divisor(int64_t divisor);
  // Drops the last `pad` rows.
  void unpad(int64_t pad);

  // Versioned binary form (for the MPI transport): exact round trip of tensors (dtype, shape, bytes),
  // columns and meta. Tensors must be on the CPU.
  std::string serialize() const;
  static DataProto deserialize(const std::string& bytes);

  TensorMap batch;
  NonTensorMap non_tensor_batch;
  Json meta_info;

 private:
  void check_consistent() const;
};

}  // namespace verl::protocol
