// Parquet file reader: reads the footer, then one row group at a time, and only the selected top-level
// columns' chunks (by offset), so a large file is never loaded whole. Rows come back as io::Value structs.
//
//   parquet::Reader reader("data.parquet");
//   reader.select_columns({"prompt", "data_source"});
//   for (size_t g = 0; g < reader.num_row_groups(); ++g) for (auto& row : reader.read_row_group(g)) ...
#pragma once

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "verl/io/parquet/metadata.h"
#include "verl/io/parquet/schema.h"
#include "verl/io/value.h"

namespace verl::io::parquet {

class Reader {
 public:
  explicit Reader(const std::string& path);

  const std::string& path() const { return path_; }
  const FileMetaData& metadata() const { return meta_; }
  const Schema& schema() const { return schema_; }
  int64_t num_rows() const { return meta_.num_rows; }
  size_t num_row_groups() const { return meta_.row_groups.size(); }
  std::vector<std::string> column_names() const;  // top-level fields, schema order

  // Top-level fields to read, in any order (output keeps schema order); empty selects all. Unknown names are
  // an error listing the file's columns.
  void select_columns(const std::vector<std::string>& names);

  std::vector<Value> read_row_group(size_t index);
  std::vector<Value> read_all();

  // Decompressed page bytes decoded so far (for throughput numbers).
  size_t uncompressed_bytes_read() const { return uncompressed_bytes_; }

 private:
  std::string path_;
  std::ifstream file_;
  uint64_t file_size_ = 0;
  uint64_t data_end_ = 0;  // where the footer starts
  FileMetaData meta_;
  Schema schema_;
  std::vector<int> selected_;  // top-level node indices, schema order
  size_t uncompressed_bytes_ = 0;
};

// Every row of `path` (selected top-level columns; empty selects all).
std::vector<Value> read_parquet(const std::string& path, const std::vector<std::string>& columns = {});

}  // namespace verl::io::parquet
