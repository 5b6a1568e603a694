// safetensors files (torch-free): a memory-mapped, validated reader; an atomic writer; sharded checkpoints
// through model.safetensors.index.json. Tensor conversion to LibTorch lives in verl/model/weights.h.
//
// Format: 8-byte little-endian header length N, N bytes of JSON
//   {"__metadata__": {"k": "v"}, "name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...}
// then the data buffer; offsets are relative to its start. The reader rejects: a header length that is
// not sane (over 100 MB or past the end of the file), bad JSON, an unknown dtype, a negative or non-integer
// shape, begin > end, offsets outside the buffer, a byte size that disagrees with dtype x shape, and
// tensors that overlap or leave holes in the buffer (safetensors requires a contiguous cover).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace verl::io {

enum class DType { F64, F32, F16, BF16, I64, I32, I8, U8, BOOL };

size_t dtype_size(DType dtype);
const char* dtype_name(DType dtype);  // "F32", "BF16", ...
std::optional<DType> parse_dtype(const std::string& name);

// A tensor inside a mapped file (valid while the file object lives).
struct TensorView {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  const uint8_t* data = nullptr;
  size_t nbytes = 0;
  int64_t numel() const;
};

class SafetensorsFile {
 public:
  // Maps and validates `path`; throws verl::Error naming the file and the problem.
  explicit SafetensorsFile(const std::string& path);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return path_; }
  // Tensor names in data order.
  const std::vector<std::string>& names() const { return names_; }
  bool contains(const std::string& name) const { return index_.count(name) > 0; }
  // Throws naming the tensor and the file when absent.
  const TensorView& get(const std::string& name) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  // Drops the mapped pages under a tensor's bytes [offset, offset + length) (default: all of them) from this
  // process's resident set; they stay in the page cache and a later read maps them again. A loader calls it on
  // what it has copied out, so that loading holds the model and a slice of the file, not the model and the file.
  void release(const std::string& name, size_t offset = 0, size_t length = SIZE_MAX) const;

 private:
  std::string path_;
  void* map_ = nullptr;
  size_t map_size_ = 0;
  std::vector<std::string> names_;
  std::vector<TensorView> tensors_;
  std::map<std::string, size_t> index_;
  std::map<std::string, std::string> metadata_;
};

// A tensor to write: raw little-endian bytes of dtype x shape.
struct TensorBytes {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  const void* data = nullptr;
  size_t nbytes = 0;
};

// Writes one file atomically (PATH.tmp.<pid> then rename). Tensors are stored in the given order; names
// must be unique and sizes must match dtype x shape.
void write_safetensors(const std::string& path, const std::vector<TensorBytes>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

// A model folder's weights: model.safetensors, or the shards listed by model.safetensors.index.json
// ("weight_map": name -> shard file). `path` may be the folder or a single .safetensors file.
class SafetensorsCheckpoint {
 public:
  explicit SafetensorsCheckpoint(const std::string& path);
  std::vector<std::string> names() const;  // sorted
  bool contains(const std::string& name) const { return where_.count(name) > 0; }
  const TensorView& get(const std::string& name) const;
  void release(const std::string& name, size_t offset = 0, size_t length = SIZE_MAX) const;  // SafetensorsFile's
  size_t num_files() const { return files_.size(); }

 private:
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, size_t> where_;
};

// Writes `dir`/model.safetensors when everything fits in `max_shard_bytes` (0 = no limit), else
// model-0000i-of-0000n.safetensors shards plus model.safetensors.index.json (HF's layout). Stale weight
// files from an earlier save in `dir` are removed. Returns the files written.
std::vector<std::string> write_checkpoint(const std::string& dir, const std::vector<TensorBytes>& tensors,
                                          size_t max_shard_bytes = 0);

}  // namespace verl::io
