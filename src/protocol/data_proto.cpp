#include "verl/protocol/data_proto.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <optional>

#include "verl/common/error.h"
#include "verl/common/input_limits.h"

namespace verl::protocol {

namespace {

constexpr char kMagic[] = "VERLDP";  // 6 bytes + format version
constexpr uint32_t kFormatVersion = 1;

torch::Tensor rows_tensor(const std::vector<int64_t>& rows) {
  return torch::tensor(rows, torch::dtype(torch::kInt64));
}

// dtype <-> a stable byte code for the wire format.
const std::vector<std::pair<torch::ScalarType, uint8_t>>& dtype_codes() {
  static const std::vector<std::pair<torch::ScalarType, uint8_t>> codes = {
      {torch::kFloat32, 0}, {torch::kFloat64, 1}, {torch::kFloat16, 2}, {torch::kBFloat16, 3}, {torch::kInt64, 4},
      {torch::kInt32, 5},   {torch::kInt16, 6},   {torch::kInt8, 7},    {torch::kUInt8, 8},    {torch::kBool, 9}};
  return codes;
}

class Writer {
 public:
  void bytes(const void* data, size_t n) { out_.append(static_cast<const char*>(data), n); }
  template <typename T>
  void pod(T value) { bytes(&value, sizeof(T)); }
  void blob(const std::string& text) {
    pod<uint64_t>(text.size());
    out_ += text;
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(const std::string& in) : in_(in) {}
  const char* bytes(size_t n) {
    VERL_CHECK(n <= in_.size() - pos_, "protocol", "serialized DataProto is truncated (needed ", n, " bytes at offset ",
               pos_, ", ", in_.size() - pos_, " left)");
    const char* p = in_.data() + pos_;
    pos_ += n;
    return p;
  }
  template <typename T>
  T pod() {
    T value;
    std::memcpy(&value, bytes(sizeof(T)), sizeof(T));
    return value;
  }
  std::string blob() {
    uint64_t n = pod<uint64_t>();
    return std::string(bytes(n), n);
  }
  bool done() const { return pos_ == in_.size(); }
  size_t left() const { return in_.size() - pos_; }

 private:
  const std::string& in_;
  size_t pos_ = 0;
};

// CBOR -> Json with the nesting limit of verl/common/input_limits.h: nlohmann's CBOR reader recurses once per
// level, so a few hundred KB of nested arrays would overflow the stack. The DOM builder is fed through a SAX
// that refuses to open a container beyond kMaxNestingDepth, which stops the recursion there.
class DepthBoundedSax : public nlohmann::json_sax<Json> {
 public:
  explicit DepthBoundedSax(Json& result) : dom_(result, /*allow_exceptions=*/true) {}
  bool null() override { return dom_.null(); }
  bool boolean(bool v) override { return dom_.boolean(v); }
  bool number_integer(number_integer_t v) override { return dom_.number_integer(v); }
  bool number_unsigned(number_unsigned_t v) override { return dom_.number_unsigned(v); }
  bool number_float(number_float_t v, const string_t& s) override { return dom_.number_float(v, s); }
  bool string(string_t& v) override { return dom_.string(v); }
  bool binary(binary_t& v) override { return dom_.binary(v); }
  bool start_object(std::size_t n) override { return enter() && dom_.start_object(n); }
  bool key(string_t& k) override { return dom_.key(k); }
  bool end_object() override { return leave() && dom_.end_object(); }
  bool start_array(std::size_t n) override { return enter() && dom_.start_array(n); }
  bool end_array() override { return leave() && dom_.end_array(); }
  bool parse_error(std::size_t position, const std::string& token, const nlohmann::detail::exception& e) override {
    return dom_.parse_error(position, token, e);
  }

 private:
  bool enter() {
    VERL_CHECK(++depth_ <= kMaxNestingDepth, "protocol", "serialized DataProto: meta or columns nested deeper than ",
               kMaxNestingDepth, " levels (limit ", kMaxNestingDepth, ")");
    return true;
  }
  bool leave() {
    --depth_;
    return true;
  }
  nlohmann::detail::json_sax_dom_parser<Json> dom_;
  int depth_ = 0;
};

Json from_cbor_bounded(const std::string& bytes) {
  Json result;
  DepthBoundedSax sax(result);
  Json::sax_parse(bytes, &sax, nlohmann::detail::input_format_t::cbor);
  return result;
}

}  // namespace

DataProto DataProto::from_dict(TensorMap tensors, NonTensorMap non_tensors, Json meta) {
  VERL_CHECK(meta.is_object(), "protocol", "meta_info must be a JSON object");
  DataProto proto;
  proto.batch = std::move(tensors);
  proto.non_tensor_batch = std::move(non_tensors);
  proto.meta_info = std::move(meta);
  proto.check_consistent();
  return proto;
}

void DataProto::check_consistent() const {
  int64_t rows = -1;
  std::string first;
  auto check = [&](const std::string& key, int64_t n) {
    if (rows < 0) {
      rows = n;
      first = key;
      return;
    }
    VERL_CHECK(n == rows, "protocol", "DataProto key '", key, "' has ", n, " rows but '", first, "' has ", rows);
  };
  for (const auto& [key, tensor] : batch) {
    VERL_CHECK(tensor.defined() && tensor.dim() >= 1, "protocol", "DataProto tensor '", key,
               "' must have at least one dimension (rows)");
    check(key, tensor.size(0));
  }
  for (const auto& [key, column] : non_tensor_batch) check(key, static_cast<int64_t>(column.size()));
}

int64_t DataProto::size() const {
  if (!batch.empty()) return batch.begin()->second.size(0);
  if (!non_tensor_batch.empty()) return static_cast<int64_t>(non_tensor_batch.begin()->second.size());
  return 0;
}

const torch::Tensor& DataProto::tensor(const std::string& key) const {
  auto it = batch.find(key);
  VERL_CHECK(it != batch.end(), "protocol", "DataProto has no tensor '", key, "'");
  return it->second;
}

const std::vector<Json>& DataProto::column(const std::string& key) const {
  auto it = non_tensor_batch.find(key);
  VERL_CHECK(it != non_tensor_batch.end(), "protocol", "DataProto has no non-tensor column '", key, "'");
  return it->second;
}

DataProto DataProto::select(const std::vector<std::string>& batch_keys, const std::vector<std::string>& non_tensor_keys,
                            const std::vector<std::string>& meta_keys, bool keep_all_if_empty) const {
  DataProto out;
  if (batch_keys.empty() && keep_all_if_empty) {
    out.batch = batch;
  } else {
    for (const auto& key : batch_keys) out.batch[key] = tensor(key);
  }
  if (non_tensor_keys.empty() && keep_all_if_empty) {
    out.non_tensor_batch = non_tensor_batch;
  } else {
    for (const auto& key : non_tensor_keys) out.non_tensor_batch[key] = column(key);
  }
  if (meta_keys.empty() && keep_all_if_empty) {
    out.meta_info = meta_info;
  } else {
    for (const auto& key : meta_keys) {
      VERL_CHECK(meta_info.contains(key), "protocol", "DataProto has no meta_info key '", key, "'");
      out.meta_info[key] = meta_info[key];
    }
  }
  return out;
}

DataProto DataProto::pop(const std::vector<std::string>& batch_keys, const std::vector<std::string>& non_tensor_keys,
                         const std::vector<std::string>& meta_keys) {
  DataProto out = select(batch_keys, non_tensor_keys, meta_keys);
  for (const auto& key : batch_keys) batch.erase(key);
  for (const auto& key : non_tensor_keys) non_tensor_batch.erase(key);
  for (const auto& key : meta_keys) meta_info.erase(key);
  return out;
}

DataProto& DataProto::union_with(const DataProto& other) {
  union_rows_with(other);
  for (auto it = other.meta_info.begin(); it != other.meta_info.end(); ++it) {
    if (meta_info.contains(it.key())) {
      VERL_CHECK(meta_info[it.key()] == it.value(), "protocol", "union: meta_info '", it.key(), "' differs (",
                 meta_info[it.key()].dump(), " vs ", it.value().dump(), ")");
    } else {
      meta_info[it.key()] = it.value();
    }
  }
  return *this;
}

DataProto& DataProto::union_rows_with(const DataProto& other) {
  if (size() != 0 && other.size() != 0) {
    VERL_CHECK(size() == other.size(), "protocol", "cannot union DataProtos of ", size(), " and ", other.size(), " rows");
  }
  for (const auto& [key, value] : other.batch) {
    auto it = batch.find(key);
    if (it == batch.end()) {
      batch[key] = value;
      continue;
    }
    const bool same = it->second.scalar_type() == value.scalar_type() && it->second.sizes() == value.sizes() &&
                      torch::equal(it->second, value);
    VERL_CHECK(same, "protocol", "union: tensor '", key, "' differs between the two DataProtos");
  }
  for (const auto& [key, value] : other.non_tensor_batch) {
    auto it = non_tensor_batch.find(key);
    if (it == non_tensor_batch.end()) {
      non_tensor_batch[key] = value;
      continue;
    }
    VERL_CHECK(it->second == value, "protocol", "union: non-tensor column '", key,
               "' differs between the two DataProtos");
  }
  check_consistent();
  return *this;
}

DataProto DataProto::slice(int64_t start, int64_t end) const {
  VERL_ASSERT(0 <= start && start <= end && end <= size(), "protocol", "slice [", start, ", ", end, ") of ", size(),
              " rows");
  DataProto out;
  for (const auto& [key, value] : batch) out.batch[key] = value.slice(0, start, end);
  for (const auto& [key, column] : non_tensor_batch) {
    out.non_tensor_batch[key] = std::vector<Json>(column.begin() + start, column.begin() + end);
  }
  out.meta_info = meta_info;
  return out;
}

DataProto DataProto::index(const std::vector<int64_t>& rows) const {
  const int64_t n = size();
  for (int64_t row : rows) {
    VERL_ASSERT(row >= 0 && row < n, "protocol", "row index ", row, " out of range for ", n, " rows");
  }
  DataProto out;
  torch::Tensor idx = rows_tensor(rows);
  for (const auto& [key, value] : batch) out.batch[key] = value.index_select(0, idx.to(value.device()));
  for (const auto& [key, column] : non_tensor_batch) {
    std::vector<Json> picked;
    picked.reserve(rows.size());
    for (int64_t row : rows) picked.push_back(column[static_cast<size_t>(row)]);
    out.non_tensor_batch[key] = std::move(picked);
  }
  out.meta_info = meta_info;
  return out;
}

void DataProto::reorder(const std::vector<int64_t>& order) {
  std::vector<int64_t> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> identity(static_cast<size_t>(size()));
  std::iota(identity.begin(), identity.end(), 0);
  VERL_ASSERT(sorted == identity, "protocol", "reorder needs a permutation of 0..", size() - 1);
  *this = index(order);
}

std::vector<DataProto> DataProto::chunk(int64_t chunks) const {
  VERL_ASSERT(chunks > 0, "protocol", "chunk count must be > 0");
  VERL_CHECK(size() % chunks == 0, "protocol", "cannot chunk ", size(), " rows into ", chunks,
             " equal parts; pad to a multiple of ", chunks, " first");
  const int64_t rows = size() / chunks;
  std::vector<DataProto> parts;
  for (int64_t i = 0; i < chunks; ++i) parts.push_back(slice(i * rows, (i + 1) * rows));
  return parts;
}

std::vector<DataProto> DataProto::split(int64_t rows) const {
  VERL_ASSERT(rows > 0, "protocol", "split size must be > 0");
  std::vector<DataProto> parts;
  for (int64_t start = 0; start < size(); start += rows) parts.push_back(slice(start, std::min(size(), start + rows)));
  return parts;
}

DataProto DataProto::concat(const std::vector<DataProto>& parts) {
  VERL_ASSERT(!parts.empty(), "protocol", "concat of no DataProtos");
  DataProto out;
  const DataProto& first = parts.front();
  for (const auto& [key, value] : first.batch) {
    std::vector<torch::Tensor> pieces;
    for (const auto& part : parts) {
      auto it = part.batch.find(key);
      VERL_CHECK(it != part.batch.end(), "protocol", "concat: tensor '", key, "' is missing from a part");
      pieces.push_back(it->second);
    }
    out.batch[key] = torch::cat(pieces, 0);
  }
  for (const auto& [key, column] : first.non_tensor_batch) {
    std::vector<Json> merged;
    for (const auto& part : parts) {
      auto it = part.non_tensor_batch.find(key);
      VERL_CHECK(it != part.non_tensor_batch.end(), "protocol", "concat: column '", key, "' is missing from a part");
      merged.insert(merged.end(), it->second.begin(), it->second.end());
    }
    out.non_tensor_batch[key] = std::move(merged);
  }
  for (const auto& part : parts) {
    VERL_CHECK(part.batch.size() == first.batch.size() && part.non_tensor_batch.size() == first.non_tensor_batch.size(),
               "protocol", "concat: parts have different keys");
  }
  Json metrics = Json::object();
  for (const auto& part : parts) {
    for (auto it = part.meta_info.begin(); it != part.meta_info.end(); ++it) {
      if (it.key() == "metrics") {
        VERL_CHECK(it.value().is_object(), "protocol", "meta_info 'metrics' must be an object");
        for (auto m = it.value().begin(); m != it.value().end(); ++m) {
          Json& list = metrics[m.key()];
          if (list.is_null()) list = Json::array();
          if (m.value().is_array()) {
            for (const auto& v : m.value()) list.push_back(v);
          } else {
            list.push_back(m.value());
          }
        }
      } else if (out.meta_info.contains(it.key())) {
        VERL_CHECK(out.meta_info[it.key()] == it.value(), "protocol", "concat: meta_info '", it.key(),
                   "' differs between parts");
      } else {
        out.meta_info[it.key()] = it.value();
      }
    }
  }
  if (!metrics.empty()) out.meta_info["metrics"] = metrics;
  out.check_consistent();
  return out;
}

DataProto DataProto::repeat(int64_t times, bool interleave) const {
  VERL_ASSERT(times > 0, "protocol", "repeat count must be > 0");
  std::vector<int64_t> rows;
  const int64_t n = size();
  rows.reserve(static_cast<size_t>(n * times));
  if (interleave) {
    for (int64_t i = 0; i < n; ++i) rows.insert(rows.end(), static_cast<size_t>(times), i);
  } else {
    for (int64_t t = 0; t < times; ++t)
      for (int64_t i = 0; i < n; ++i) rows.push_back(i);
  }
  return index(rows);
}

int64_t DataProto::pad_to_divisor(int64_t divisor) {
  VERL_ASSERT(divisor > 0, "protocol", "divisor must be > 0");
  const int64_t n = size();
  if (n == 0 || n % divisor == 0) return 0;
  const int64_t pad = divisor - n % divisor;
  std::vector<int64_t> extra;
  for (int64_t i = 0; i < pad; ++i) extra.push_back(i % n);
  DataProto tail = index(extra);
  tail.meta_info = meta_info;
  *this = concat({*this, tail});
  return pad;
}

void DataProto::unpad(int64_t pad) {
  VERL_ASSERT(pad >= 0 && pad <= size(), "protocol", "cannot unpad ", pad, " of ", size(), " rows");
  if (pad > 0) *this = slice(0, size() - pad);
}

std::string DataProto::serialize() const {
  Writer out;
  out.bytes(kMagic, 6);
  out.pod<uint32_t>(kFormatVersion);
  std::vector<uint8_t> meta = Json::to_cbor(meta_info);
  out.blob(std::string(meta.begin(), meta.end()));
  Json columns = Json::object();
  for (const auto& [key, column] : non_tensor_batch) columns[key] = column;
  std::vector<uint8_t> cbor = Json::to_cbor(columns);
  out.blob(std::string(cbor.begin(), cbor.end()));
  out.pod<uint32_t>(static_cast<uint32_t>(batch.size()));
  for (const auto& [key, value] : batch) {
    VERL_CHECK(value.device().is_cpu(), "protocol", "serialize: tensor '", key, "' must be on the CPU");
    torch::Tensor dense = value.contiguous();
    uint8_t code = 255;
    for (const auto& [dtype, c] : dtype_codes()) {
      if (dtype == dense.scalar_type()) code = c;
    }
    VERL_CHECK(code != 255, "protocol", "serialize: tensor '", key, "' has unsupported dtype ", dense.scalar_type());
    out.blob(key);
    out.pod<uint8_t>(code);
    out.pod<uint32_t>(static_cast<uint32_t>(dense.dim()));
    for (int64_t d : dense.sizes()) out.pod<int64_t>(d);
    const size_t nbytes = static_cast<size_t>(dense.numel()) * dense.element_size();
    out.pod<uint64_t>(nbytes);
    out.bytes(dense.data_ptr(), nbytes);
  }
  return out.take();
}

DataProto DataProto::deserialize(const std::string& bytes) {
  Reader in(bytes);
  VERL_CHECK(std::memcmp(in.bytes(6), kMagic, 6) == 0, "protocol", "not a serialized DataProto (bad magic)");
  uint32_t version = in.pod<uint32_t>();
  VERL_CHECK(version == kFormatVersion, "protocol", "serialized DataProto has format version ", version,
             ", this build reads version ", kFormatVersion);
  DataProto out;
  std::string meta = in.blob();
  std::string columns = in.blob();
  try {
    out.meta_info = from_cbor_bounded(meta);
    // As from_dict: workers index meta_info by key, which on an array or a scalar is an exception of its own.
    VERL_CHECK(out.meta_info.is_object(), "protocol", "serialized DataProto has a meta_info of type ",
               out.meta_info.type_name(), ", expected a JSON object");
    Json parsed = from_cbor_bounded(columns);
    VERL_CHECK(parsed.is_object(), "protocol", "serialized DataProto has columns of type ", parsed.type_name(),
               ", expected a JSON object of arrays");
    for (auto it = parsed.begin(); it != parsed.end(); ++it) {
      out.non_tensor_batch[it.key()] = it.value().get<std::vector<Json>>();
    }
  } catch (const Json::exception& e) {
    VERL_FAIL("protocol", "serialized DataProto has corrupt meta or columns: ", e.what());
  }
  uint32_t count = in.pod<uint32_t>();
  for (uint32_t i = 0; i < count; ++i) {
    std::string key = in.blob();
    uint8_t code = in.pod<uint8_t>();
    std::optional<torch::ScalarType> dtype;
    for (const auto& [d, c] : dtype_codes()) {
      if (c == code) dtype = d;
    }
    VERL_CHECK(dtype.has_value(), "protocol", "serialized tensor '", key, "' has unknown dtype code ", int(code));
    uint32_t dims = in.pod<uint32_t>();
    VERL_CHECK(dims >= 1 && dims <= 16, "protocol", "serialized tensor '", key, "' has ", dims, " dimensions");
    std::vector<int64_t> shape;
    int64_t numel = 1;
    // The product of the non-zero extents is bounded too: a zero extent makes numel 0, but torch::empty still
    // computes strides from the others and throws c10::Error when they overflow.
    int64_t nonzero_product = 1;
    for (uint32_t d = 0; d < dims; ++d) {
      int64_t extent = in.pod<int64_t>();
      VERL_CHECK(extent >= 0 && extent <= (int64_t(1) << 40) / nonzero_product, "protocol", "serialized tensor '", key,
                 "' has a bad shape (extent ", extent, " in dimension ", d, "; limit 2^40 elements)");
      shape.push_back(extent);
      numel *= extent;
      if (extent > 0) nonzero_product *= extent;
    }
    uint64_t nbytes = in.pod<uint64_t>();
    // Sizes are checked against the bytes present before the tensor is allocated.
    const uint64_t needed = static_cast<uint64_t>(numel) * c10::elementSize(*dtype);
    VERL_CHECK(nbytes == needed, "protocol", "serialized tensor '", key, "' holds ", nbytes,
               " bytes, its shape needs ", needed);
    VERL_CHECK(nbytes <= in.left(), "protocol", "serialized DataProto is truncated: tensor '", key, "' needs ", nbytes,
               " bytes, ", in.left(), " left");
    torch::Tensor tensor = torch::empty(shape, torch::dtype(*dtype));
    const char* source = in.bytes(nbytes);
    if (nbytes > 0) std::memcpy(tensor.data_ptr(), source, nbytes);  // an empty tensor's data_ptr() is null
    out.batch[key] = tensor;
  }
  VERL_CHECK(in.done(), "protocol", "serialized DataProto has trailing bytes");
  out.check_consistent();
  return out;
}

}  // namespace verl::protocol
