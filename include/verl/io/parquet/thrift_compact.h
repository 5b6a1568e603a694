// Thrift compact protocol, the encoding of parquet's footer and page headers. The reader works on a bounded
// byte span and reports any overrun or malformed value as a verl::Error naming `where` (the file).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace verl::io::parquet {

// Compact-protocol type codes as they appear in field headers.
enum class ThriftType : uint8_t {
  kStop = 0, kTrue = 1, kFalse = 2, kByte = 3, kI16 = 4, kI32 = 5, kI64 = 6, kDouble = 7,
  kBinary = 8, kList = 9, kSet = 10, kMap = 11, kStruct = 12,
};

class ThriftReader {
 public:
  ThriftReader(const uint8_t* data, size_t size, std::string where);

  // Struct traversal: begin_struct(); while (read_field(id, type)) { ... or skip(type) } (end is implicit).
  void begin_struct();
  bool read_field(int16_t& id, ThriftType& type);  // false at the struct's STOP (then the struct is closed)

  bool read_bool(ThriftType field_type);  // the value of a bool field lives in its type code
  int8_t read_byte();
  int32_t read_i32();
  int64_t read_i64();
  double read_double();
  std::string read_binary();
  // List header: element type and count (count checked against the bytes left).
  void read_list_header(ThriftType& element_type, uint32_t& size);
  void skip(ThriftType type);

  size_t position() const { return pos_; }
  const std::string& where() const { return where_; }

 private:
  uint64_t read_varint();
  uint8_t next_byte();
  void skip_depth(ThriftType type, int depth);

  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
  std::string where_;
  std::vector<int16_t> last_field_id_;
};

class ThriftWriter {
 public:
  void begin_struct();
  void end_struct();  // writes STOP
  void field_header(int16_t id, ThriftType type);
  void field_i32(int16_t id, int32_t value);
  void field_i64(int16_t id, int64_t value);
  void field_bool(int16_t id, bool value);
  void field_binary(int16_t id, const std::string& value);
  void field_struct_begin(int16_t id) { field_header(id, ThriftType::kStruct); begin_struct(); }
  void field_list_begin(int16_t id, ThriftType element_type, uint32_t size);
  void write_i32(int32_t value);
  void write_i64(int64_t value);
  void write_binary(const std::string& value);

  const std::vector<uint8_t>& bytes() const { return out_; }
  std::vector<uint8_t>& bytes() { return out_; }

 private:
  void write_varint(uint64_t value);
  std::vector<uint8_t> out_;
  std::vector<int16_t> last_field_id_;
};

}  // namespace verl::io::parquet
