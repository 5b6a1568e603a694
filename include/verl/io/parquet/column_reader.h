// Decodes one column chunk (its pages, already read from the file) into definition / repetition levels and
// the non-null leaf values, converted to io::Value by the column's logical type.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "verl/io/parquet/metadata.h"
#include "verl/io/parquet/schema.h"
#include "verl/io/value.h"

namespace verl::io::parquet {

struct ColumnData {
  std::vector<uint16_t> def;  // one per level entry; empty when the column's max definition level is 0
  std::vector<uint16_t> rep;  // one per level entry; empty when the column's max repetition level is 0
  std::vector<Value> values;  // one per entry whose definition level is the maximum
  size_t num_levels = 0;
  size_t uncompressed_bytes = 0;  // page payload bytes after decompression (for throughput numbers)
};

// `chunk` holds the column chunk's bytes (from its first page to the end of its last page).
void decode_column_chunk(const uint8_t* chunk, size_t size, const SchemaNode& leaf, const ColumnMetaData& meta,
                         const std::string& where, ColumnData& out);

}  // namespace verl::io::parquet
