#include "verl/io/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "verl/common/error.h"
#include "verl/common/input_limits.h"

namespace verl::io {
namespace {

constexpr const char* kComponent = "safetensors";
constexpr uint64_t kMaxHeaderBytes = 100u * 1000u * 1000u;  // the reference implementation's limit

struct DTypeInfo {
  DType dtype;
  const char* name;
  size_t size;
};
constexpr DTypeInfo kDTypes[] = {
    {DType::F64, "F64", 8}, {DType::F32, "F32", 4}, {DType::F16, "F16", 2},  {DType::BF16, "BF16", 2},
    {DType::I64, "I64", 8}, {DType::I32, "I32", 4}, {DType::I8, "I8", 1},    {DType::U8, "U8", 1},
    {DType::BOOL, "BOOL", 1},
};

const DTypeInfo& info(DType dtype) {
  for (const auto& entry : kDTypes)
    if (entry.dtype == dtype) return entry;
  VERL_ASSERT(false, kComponent, "unknown dtype enum");
}

// numel x element size with overflow detection; nullopt on overflow.
std::optional<uint64_t> byte_size(const std::vector<int64_t>& shape, size_t element) {
  unsigned __int128 total = element;
  for (int64_t d : shape) {
    total *= static_cast<uint64_t>(d);
    if (total > (static_cast<unsigned __int128>(1) << 62)) return std::nullopt;
  }
  return static_cast<uint64_t>(total);
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

}  // namespace

size_t dtype_size(DType dtype) { return info(dtype).size; }
const char* dtype_name(DType dtype) { return info(dtype).name; }
std::optional<DType> parse_dtype(const std::string& name) {
  for (const auto& entry : kDTypes)
    if (name == entry.name) return entry.dtype;
  return std::nullopt;
}

int64_t TensorView::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

SafetensorsFile::SafetensorsFile(const std::string& path) : path_(path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  VERL_CHECK(fd >= 0, kComponent, "cannot open '", path, "': ", std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    VERL_FAIL(kComponent, "'", path, "' is not a regular file");
  }
  map_size_ = static_cast<size_t>(st.st_size);
  if (map_size_ < 8) {
    ::close(fd);
    VERL_FAIL(kComponent, "'", path, "' is truncated: ", map_size_, " bytes, a safetensors file needs at least 8");
  }
  map_ = ::mmap(nullptr, map_size_, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map_ == MAP_FAILED) {
    map_ = nullptr;
    VERL_FAIL(kComponent, "cannot map '", path, "': ", std::strerror(errno));
  }
  try {
    const auto* bytes = static_cast<const uint8_t*>(map_);
    uint64_t header_len = 0;
    for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | bytes[i];
    VERL_CHECK(header_len <= kMaxHeaderBytes, kComponent, "'", path, "': header length ", header_len,
               " is not sane (limit ", kMaxHeaderBytes, " bytes); not a safetensors file?");
    VERL_CHECK(8 + header_len <= map_size_, kComponent, "'", path, "' is truncated: the header claims ",
               header_len, " bytes but the file has ", map_size_, " bytes in all");
    const uint8_t* data = bytes + 8 + header_len;
    const uint64_t data_size = map_size_ - 8 - header_len;

    const std::string header_text(reinterpret_cast<const char*>(bytes + 8), header_len);
    check_json_limits(header_text, path + " (header)");
    nlohmann::json header;
    try {
      header = nlohmann::json::parse(header_text);
    } catch (const nlohmann::json::exception& e) {
      VERL_FAIL(kComponent, "'", path, "': header is not valid JSON (", e.what(), ")");
    }
    VERL_CHECK(header.is_object(), kComponent, "'", path, "': header must be a JSON object");

    for (auto it = header.begin(); it != header.end(); ++it) {
      const std::string& name = it.key();
      const auto& entry = it.value();
      if (name == "__metadata__") {
        VERL_CHECK(entry.is_object(), kComponent, "'", path, "': __metadata__ must be an object of strings");
        for (auto m = entry.begin(); m != entry.end(); ++m) {
          VERL_CHECK(m.value().is_string(), kComponent, "'", path, "': __metadata__.", m.key(), " must be a string");
          metadata_[m.key()] = m.value().get<std::string>();
        }
        continue;
      }
      const std::string where = "'" + path + "': tensor '" + name + "'";
      VERL_CHECK(entry.is_object() && entry.contains("dtype") && entry.contains("shape") &&
                     entry.contains("data_offsets"),
                 kComponent, where, " needs dtype, shape and data_offsets");
      VERL_CHECK(entry["dtype"].is_string(), kComponent, where, ": dtype must be a string");
      auto dtype = parse_dtype(entry["dtype"].get<std::string>());
      VERL_CHECK(dtype.has_value(), kComponent, where, ": unknown dtype '", entry["dtype"].get<std::string>(),
                 "' (supported: F64, F32, F16, BF16, I64, I32, I8, U8, BOOL)");
      VERL_CHECK(entry["shape"].is_array(), kComponent, where, ": shape must be a list");
      TensorView view;
      view.name = name;
      view.dtype = *dtype;
      for (const auto& d : entry["shape"]) {
        VERL_CHECK(d.is_number_unsigned(), kComponent, where, ": shape entries must be non-negative integers");
        VERL_CHECK(d.get<uint64_t>() < (1ull << 62), kComponent, where, ": shape entry too large");
        view.shape.push_back(static_cast<int64_t>(d.get<uint64_t>()));
      }
      const auto& offsets = entry["data_offsets"];
      VERL_CHECK(offsets.is_array() && offsets.size() == 2 && offsets[0].is_number_unsigned() &&
                     offsets[1].is_number_unsigned(),
                 kComponent, where, ": data_offsets must be two non-negative integers");
      uint64_t begin = offsets[0].get<uint64_t>(), end = offsets[1].get<uint64_t>();
      VERL_CHECK(begin <= end, kComponent, where, ": data_offsets [", begin, ", ", end, "] run backwards");
      VERL_CHECK(end <= data_size, kComponent, where, ": data_offsets [", begin, ", ", end,
                 "] lie outside the data buffer of ", data_size, " bytes (truncated file?)");
      auto expected = byte_size(view.shape, dtype_size(view.dtype));
      VERL_CHECK(expected.has_value() && *expected == end - begin, kComponent, where, ": ", end - begin,
                 " bytes do not match dtype ", dtype_name(view.dtype), " x shape ", shape_text(view.shape));
      view.data = data + begin;
      view.nbytes = end - begin;
      tensors_.push_back(std::move(view));
    }
    // Contiguous cover of the data buffer, in offset order: no overlap, no holes.
    std::vector<size_t> order(tensors_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      if (tensors_[a].data != tensors_[b].data) return tensors_[a].data < tensors_[b].data;
      return tensors_[a].nbytes < tensors_[b].nbytes;
    });
    uint64_t cursor = 0;
    std::vector<TensorView> sorted;
    for (size_t i : order) {
      const TensorView& t = tensors_[i];
      uint64_t begin = static_cast<uint64_t>(t.data - data);
      VERL_CHECK(begin >= cursor, kComponent, "'", path, "': tensor '", t.name, "' at offset ", begin,
                 " overlaps the previous tensor (which ends at ", cursor, ")");
      VERL_CHECK(begin == cursor, kComponent, "'", path, "': hole in the data buffer before tensor '", t.name,
                 "' (bytes ", cursor, "..", begin, " belong to no tensor)");
      cursor = begin + t.nbytes;
      sorted.push_back(t);
    }
    VERL_CHECK(cursor == data_size, kComponent, "'", path, "': ", data_size - cursor,
               " trailing bytes after the last tensor belong to no tensor");
    tensors_ = std::move(sorted);
    for (size_t i = 0; i < tensors_.size(); ++i) {
      names_.push_back(tensors_[i].name);
      index_[tensors_[i].name] = i;
    }
  } catch (...) {
    ::munmap(map_, map_size_);
    map_ = nullptr;
    throw;
  }
}

SafetensorsFile::~SafetensorsFile() {
  if (map_ != nullptr) ::munmap(map_, map_size_);
}

const TensorView& SafetensorsFile::get(const std::string& name) const {
  auto it = index_.find(name);
  VERL_CHECK(it != index_.end(), kComponent, "tensor '", name, "' is not in '", path_, "'");
  return tensors_[it->second];
}

void SafetensorsFile::release(const std::string& name, size_t offset, size_t length) const {
  const TensorView& view = get(name);
  VERL_CHECK(offset <= view.nbytes, kComponent, "release: offset ", offset, " is past tensor '", name, "' (",
             view.nbytes, " bytes)");
  length = std::min(length, view.nbytes - offset);
  // The whole pages inside those bytes (a neighbour's bytes may share the pages at either end).
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<uintptr_t>(view.data) + offset, end = begin + length;
  const uintptr_t first = (begin + page - 1) / page * page, last = end / page * page;
  // A read-only private file mapping: the dropped pages read back from the file. Failure only costs memory.
  if (last > first) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

void write_safetensors(const std::string& path, const std::vector<TensorBytes>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) {
    nlohmann::ordered_json meta = nlohmann::ordered_json::object();
    for (const auto& [k, v] : metadata) meta[k] = v;
    header["__metadata__"] = meta;
  }
  std::set<std::string> seen;
  uint64_t offset = 0;
  for (const auto& t : tensors) {
    VERL_CHECK(!t.name.empty() && t.name != "__metadata__", kComponent, "invalid tensor name '", t.name, "'");
    VERL_CHECK(seen.insert(t.name).second, kComponent, "tensor '", t.name, "' given twice for '", path, "'");
    for (int64_t d : t.shape) VERL_CHECK(d >= 0, kComponent, "tensor '", t.name, "' has a negative dimension");
    auto expected = byte_size(t.shape, dtype_size(t.dtype));
    VERL_CHECK(expected.has_value() && *expected == t.nbytes, kComponent, "tensor '", t.name, "': ", t.nbytes,
               " bytes do not match dtype ", dtype_name(t.dtype), " x shape ", shape_text(t.shape));
    nlohmann::ordered_json entry;
    entry["dtype"] = dtype_name(t.dtype);
    entry["shape"] = t.shape;
    entry["data_offsets"] = {offset, offset + t.nbytes};
    header[t.name] = entry;
    offset += t.nbytes;
  }
  std::string text = header.dump();
  while ((8 + text.size()) % 8 != 0) text.push_back(' ');  // align the data buffer to 8 bytes
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    VERL_CHECK(out.good(), kComponent, "cannot write '", tmp, "'");
    uint8_t len[8];
    uint64_t n = text.size();
    for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(n >> (8 * i));
    out.write(reinterpret_cast<const char*>(len), 8);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    for (const auto& t : tensors)
      if (t.nbytes > 0) out.write(static_cast<const char*>(t.data), static_cast<std::streamsize>(t.nbytes));
    out.flush();
    if (!out.good()) {
      out.close();
      std::remove(tmp.c_str());
      VERL_FAIL(kComponent, "writing '", tmp, "' failed (disk full?)");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    VERL_FAIL(kComponent, "cannot rename '", tmp, "' to '", path, "': ", std::strerror(errno));
  }
}

SafetensorsCheckpoint::SafetensorsCheckpoint(const std::string& path) {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  if (fs::is_directory(path)) {
    const fs::path index = fs::path(path) / "model.safetensors.index.json";
    const fs::path single = fs::path(path) / "model.safetensors";
    if (fs::exists(index)) {
      std::ifstream in(index, std::ios::binary);
      std::stringstream text;
      text << in.rdbuf();
      check_json_limits(text.str(), index.string());
      nlohmann::json j;
      try {
        j = nlohmann::json::parse(text.str());
      } catch (const nlohmann::json::exception& e) {
        VERL_FAIL(kComponent, "'", index.string(), "' is not valid JSON (", e.what(), ")");
      }
      VERL_CHECK(j.is_object() && j.contains("weight_map") && j["weight_map"].is_object(), kComponent, "'",
                 index.string(), "' needs a \"weight_map\" object (tensor name -> shard file)");
      VERL_CHECK(!j["weight_map"].empty(), kComponent, "'", index.string(), "': weight_map lists no tensors");
      std::map<std::string, std::string> weight_map;
      std::set<std::string> shard_names;
      for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
        VERL_CHECK(it.value().is_string(), kComponent, "'", index.string(), "': weight_map.", it.key(),
                   " must be a file name");
        weight_map[it.key()] = it.value().get<std::string>();
        shard_names.insert(it.value().get<std::string>());
      }
      std::map<std::string, size_t> shard_index;
      for (const auto& shard : shard_names) {
        VERL_CHECK(shard.find('/') == std::string::npos, kComponent, "'", index.string(), "': shard '", shard,
                   "' must be a file name in the same folder");
        shard_index[shard] = files_.size();
        files_.push_back(std::make_unique<SafetensorsFile>((fs::path(path) / shard).string()));
      }
      for (const auto& [name, shard] : weight_map) {
        const size_t i = shard_index[shard];
        VERL_CHECK(files_[i]->contains(name), kComponent, "'", index.string(), "' maps '", name, "' to '", shard,
                   "' but that file has no such tensor");
        where_[name] = i;
      }
      for (size_t i = 0; i < files_.size(); ++i)
        for (const auto& name : files_[i]->names())
          VERL_CHECK(where_.count(name) && where_[name] == i, kComponent, "'", files_[i]->path(),
                     "' holds tensor '", name, "' that '", index.string(), "' does not map to it");
      return;
    }
    VERL_CHECK(fs::exists(single), kComponent, "'", path,
               "' has neither model.safetensors nor model.safetensors.index.json");
    files.push_back(single.string());
  } else {
    VERL_CHECK(fs::exists(path), kComponent, "'", path, "' does not exist");
    files.push_back(path);
  }
  for (const auto& f : files) {
    files_.push_back(std::make_unique<SafetensorsFile>(f));
    for (const auto& name : files_.back()->names()) where_[name] = files_.size() - 1;
  }
}

std::vector<std::string> SafetensorsCheckpoint::names() const {
  std::vector<std::string> out;
  for (const auto& [name, i] : where_) out.push_back(name);
  return out;
}

const TensorView& SafetensorsCheckpoint::get(const std::string& name) const {
  auto it = where_.find(name);
  VERL_CHECK(it != where_.end(), kComponent, "tensor '", name, "' is not in the checkpoint");
  return files_[it->second]->get(name);
}

void SafetensorsCheckpoint::release(const std::string& name, size_t offset, size_t length) const {
  auto it = where_.find(name);
  VERL_CHECK(it != where_.end(), kComponent, "tensor '", name, "' is not in the checkpoint");
  files_[it->second]->release(name, offset, length);
}

std::vector<std::string> write_checkpoint(const std::string& dir, const std::vector<TensorBytes>& tensors,
                                          size_t max_shard_bytes) {
  namespace fs = std::filesystem;
  fs::create_directories(dir);
  std::vector<std::vector<const TensorBytes*>> shards(1);
  size_t current = 0, total = 0;
  for (const auto& t : tensors) {
    if (max_shard_bytes > 0 && current > 0 && current + t.nbytes > max_shard_bytes) {
      shards.emplace_back();
      current = 0;
    }
    shards.back().push_back(&t);
    current += t.nbytes;
    total += t.nbytes;
  }
  // Remove weights of an earlier save so the folder holds exactly one checkpoint.
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name == "model.safetensors.index.json" ||
        (name.rfind("model", 0) == 0 && entry.path().extension() == ".safetensors"))
      fs::remove(entry.path());
  }
  std::vector<std::string> written;
  const std::map<std::string, std::string> meta = {{"format", "pt"}};
  if (shards.size() == 1) {
    std::vector<TensorBytes> list;
    for (const auto* t : shards[0]) list.push_back(*t);
    const std::string file = (fs::path(dir) / "model.safetensors").string();
    write_safetensors(file, list, meta);
    written.push_back(file);
    return written;
  }
  nlohmann::ordered_json weight_map = nlohmann::ordered_json::object();
  const size_t n = shards.size();
  for (size_t i = 0; i < n; ++i) {
    char name[64];
    std::snprintf(name, sizeof(name), "model-%05zu-of-%05zu.safetensors", i + 1, n);
    std::vector<TensorBytes> list;
    for (const auto* t : shards[i]) {
      list.push_back(*t);
      weight_map[t->name] = name;
    }
    const std::string file = (fs::path(dir) / name).string();
    write_safetensors(file, list, meta);
    written.push_back(file);
  }
  nlohmann::ordered_json index;
  index["metadata"] = {{"total_size", total}};
  index["weight_map"] = weight_map;
  const std::string index_path = (fs::path(dir) / "model.safetensors.index.json").string();
  const std::string tmp = index_path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp);
    out << index.dump(2) << "\n";
    VERL_CHECK(out.good(), kComponent, "cannot write '", tmp, "'");
  }
  fs::rename(tmp, index_path);
  written.push_back(index_path);
  return written;
}

}  // namespace verl::io
