#include "verl/io/parquet/thrift_compact.h"

#include <cstring>

#include "verl/common/error.h"

namespace verl::io::parquet {

namespace {
constexpr int kMaxNesting = 64;
int64_t unzigzag(uint64_t v) { return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1); }
uint64_t zigzag(int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); }
}  // namespace

ThriftReader::ThriftReader(const uint8_t* data, size_t size, std::string where)
    : data_(data), size_(size), where_(std::move(where)) {}

uint8_t ThriftReader::next_byte() {
  VERL_CHECK(pos_ < size_, "parquet", where_, ": truncated metadata (thrift structure runs past ", size_, " bytes)");
  return data_[pos_++];
}

uint64_t ThriftReader::read_varint() {
  uint64_t result = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    uint8_t b = next_byte();
    result |= static_cast<uint64_t>(b & 0x7F) << shift;
    if ((b & 0x80) == 0) return result;
  }
  VERL_FAIL("parquet", where_, ": malformed metadata (varint longer than 10 bytes at offset ", pos_, ")");
}

void ThriftReader::begin_struct() {
  VERL_CHECK(last_field_id_.size() < kMaxNesting, "parquet", where_, ": malformed metadata (structs nested deeper than ",
             kMaxNesting, ")");
  last_field_id_.push_back(0);
}

bool ThriftReader::read_field(int16_t& id, ThriftType& type) {
  VERL_ASSERT(!last_field_id_.empty(), "parquet", "read_field outside a struct");
  uint8_t header = next_byte();
  uint8_t type_code = header & 0x0F;
  if (type_code == 0) {
    last_field_id_.pop_back();
    return false;
  }
  VERL_CHECK(type_code <= 12, "parquet", where_, ": malformed metadata (unknown thrift type ", int(type_code),
             " at offset ", pos_ - 1, ")");
  type = static_cast<ThriftType>(type_code);
  uint8_t delta = header >> 4;
  if (delta == 0) {
    id = static_cast<int16_t>(unzigzag(read_varint()));
  } else {
    id = static_cast<int16_t>(last_field_id_.back() + delta);
  }
  last_field_id_.back() = id;
  return true;
}

bool ThriftReader::read_bool(ThriftType field_type) {
  if (field_type == ThriftType::kTrue) return true;
  if (field_type == ThriftType::kFalse) return false;
  VERL_FAIL("parquet", where_, ": malformed metadata (expected a bool field, got thrift type ", int(field_type), ")");
}

int8_t ThriftReader::read_byte() { return static_cast<int8_t>(next_byte()); }
int32_t ThriftReader::read_i32() { return static_cast<int32_t>(unzigzag(read_varint())); }
int64_t ThriftReader::read_i64() { return unzigzag(read_varint()); }

double ThriftReader::read_double() {
  VERL_CHECK(size_ - pos_ >= 8, "parquet", where_, ": truncated metadata (double)");
  double v;
  std::memcpy(&v, data_ + pos_, 8);
  pos_ += 8;
  return v;
}

std::string ThriftReader::read_binary() {
  uint64_t len = read_varint();
  VERL_CHECK(len <= size_ - pos_, "parquet", where_, ": malformed metadata (string of ", len, " bytes with only ",
             size_ - pos_, " left)");
  std::string s(reinterpret_cast<const char*>(data_ + pos_), len);
  pos_ += len;
  return s;
}

void ThriftReader::read_list_header(ThriftType& element_type, uint32_t& size) {
  uint8_t header = next_byte();
  uint64_t n = header >> 4;
  if (n == 15) n = read_varint();
  element_type = static_cast<ThriftType>(header & 0x0F);
  // Every element takes at least one byte, so a count above the bytes left is a lie.
  VERL_CHECK(n <= size_ - pos_, "parquet", where_, ": malformed metadata (list of ", n, " elements with only ",
             size_ - pos_, " bytes left)");
  size = static_cast<uint32_t>(n);
}

void ThriftReader::skip(ThriftType type) { skip_depth(type, 0); }

void ThriftReader::skip_depth(ThriftType type, int depth) {
  VERL_CHECK(depth < kMaxNesting, "parquet", where_, ": malformed metadata (values nested deeper than ", kMaxNesting, ")");
  switch (type) {
    case ThriftType::kTrue:
    case ThriftType::kFalse: return;
    case ThriftType::kByte: next_byte(); return;
    case ThriftType::kI16:
    case ThriftType::kI32:
    case ThriftType::kI64: read_varint(); return;
    case ThriftType::kDouble: read_double(); return;
    case ThriftType::kBinary: {
      uint64_t len = read_varint();
      VERL_CHECK(len <= size_ - pos_, "parquet", where_, ": malformed metadata (binary of ", len, " bytes)");
      pos_ += len;
      return;
    }
    case ThriftType::kList:
    case ThriftType::kSet: {
      ThriftType element;
      uint32_t n;
      read_list_header(element, n);
      for (uint32_t i = 0; i < n; ++i) {
        if (element == ThriftType::kTrue || element == ThriftType::kFalse) {
          next_byte();  // bools inside containers take one byte each
        } else {
          skip_depth(element, depth + 1);
        }
      }
      return;
    }
    case ThriftType::kMap: {
      uint64_t n = read_varint();
      if (n == 0) return;
      VERL_CHECK(n <= size_ - pos_, "parquet", where_, ": malformed metadata (map of ", n, " entries)");
      uint8_t kv = next_byte();
      auto key = static_cast<ThriftType>(kv >> 4), value = static_cast<ThriftType>(kv & 0x0F);
      for (uint64_t i = 0; i < n; ++i) {
        for (ThriftType t : {key, value}) {
          if (t == ThriftType::kTrue || t == ThriftType::kFalse) next_byte();
          else skip_depth(t, depth + 1);
        }
      }
      return;
    }
    case ThriftType::kStruct: {
      begin_struct();
      int16_t id;
      ThriftType field_type;
      while (read_field(id, field_type)) skip_depth(field_type, depth + 1);
      return;
    }
    default:
      VERL_FAIL("parquet", where_, ": malformed metadata (unknown thrift type ", int(type), ")");
  }
}

// ---- writer ----

void ThriftWriter::write_varint(uint64_t value) {
  while (value >= 0x80) {
    out_.push_back(static_cast<uint8_t>(value | 0x80));
    value >>= 7;
  }
  out_.push_back(static_cast<uint8_t>(value));
}

void ThriftWriter::begin_struct() { last_field_id_.push_back(0); }

void ThriftWriter::end_struct() {
  out_.push_back(0);
  last_field_id_.pop_back();
}

void ThriftWriter::field_header(int16_t id, ThriftType type) {
  int delta = id - last_field_id_.back();
  if (delta > 0 && delta <= 15) {
    out_.push_back(static_cast<uint8_t>((delta << 4) | static_cast<uint8_t>(type)));
  } else {
    out_.push_back(static_cast<uint8_t>(type));
    write_varint(zigzag(id));
  }
  last_field_id_.back() = id;
}

void ThriftWriter::field_i32(int16_t id, int32_t value) {
  field_header(id, ThriftType::kI32);
  write_i32(value);
}
void ThriftWriter::field_i64(int16_t id, int64_t value) {
  field_header(id, ThriftType::kI64);
  write_i64(value);
}
void ThriftWriter::field_bool(int16_t id, bool value) {
  field_header(id, value ? ThriftType::kTrue : ThriftType::kFalse);
}
void ThriftWriter::field_binary(int16_t id, const std::string& value) {
  field_header(id, ThriftType::kBinary);
  write_binary(value);
}
void ThriftWriter::field_list_begin(int16_t id, ThriftType element_type, uint32_t size) {
  field_header(id, ThriftType::kList);
  if (size < 15) {
    out_.push_back(static_cast<uint8_t>((size << 4) | static_cast<uint8_t>(element_type)));
  } else {
    out_.push_back(static_cast<uint8_t>(0xF0 | static_cast<uint8_t>(element_type)));
    write_varint(size);
  }
}
void ThriftWriter::write_i32(int32_t value) { write_varint(zigzag(value)); }
void ThriftWriter::write_i64(int64_t value) { write_varint(zigzag(value)); }
void ThriftWriter::write_binary(const std::string& value) {
  write_varint(value.size());
  out_.insert(out_.end(), value.begin(), value.end());
}

}  // namespace verl::io::parquet
