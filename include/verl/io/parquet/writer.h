// Parquet file writer: rows of io::Value structs to a parquet file (schema given or inferred). Strings are
// dictionary-encoded, pages SNAPPY-compressed by default; lists are written in the standard 3-level LIST form
// (`optional group x (LIST) { repeated group list { optional T element; } }`) so other readers understand them.
//
//   parquet::write_parquet("out.parquet", rows);                       // schema inferred, defaults
//   parquet::Writer writer("out.parquet", schema, options);            // streaming
//   for (auto& row : rows) writer.write_row(row);
//   writer.close();
#pragma once

#include <cstdint>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "verl/io/parquet/metadata.h"
#include "verl/io/value.h"

namespace verl::io::parquet {

enum class FieldKind { kBool, kInt32, kInt64, kFloat, kDouble, kString, kBinary, kFixed, kList, kStruct };

// One field of the write schema. kList has exactly one child (the element, any name); kStruct its fields.
struct WriteField {
  std::string name;
  FieldKind kind = FieldKind::kString;
  bool nullable = true;
  int fixed_length = 0;  // kFixed
  std::vector<WriteField> children;
};

struct WriterOptions {
  Codec codec = Codec::kSnappy;
  size_t row_group_rows = 1 << 16;    // rows per row group
  size_t page_bytes = 1 << 20;        // a data page ends at the first record boundary past this many value bytes
  bool dictionary = true;             // dictionary-encode string / binary columns
  bool data_page_v2 = false;
  Encoding int_encoding = Encoding::kPlain;         // or DELTA_BINARY_PACKED
  Encoding byte_array_encoding = Encoding::kPlain;  // without dictionary: or DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY
};

// The schema `rows` fit: ints int64, floats double (ints and floats mixed: double), text string, lists and
// structs merged across rows (struct fields in first-seen order), everything nullable; a field that is always
// null becomes a string column. Conflicting kinds are an error naming the field.
std::vector<WriteField> infer_schema(const std::vector<Value>& rows);

class Writer {
 public:
  Writer(const std::string& path, std::vector<WriteField> schema, WriterOptions options = {});
  ~Writer();  // closes when close() was not called (errors then are logged, not thrown)
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  // `row` must be a struct; fields are looked up by name (missing ones are null, extra ones an error).
  void write_row(const Value& row);
  void close();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

void write_parquet(const std::string& path, const std::vector<Value>& rows, const WriterOptions& options = {});
void write_parquet(const std::string& path, const std::vector<Value>& rows, std::vector<WriteField> schema,
                   const WriterOptions& options = {});

}  // namespace verl::io::parquet
