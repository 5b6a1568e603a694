#include "verl/io/parquet/reader.h"

#include <algorithm>
#include <cstring>

#include "verl/common/error.h"
#include "verl/common/strings.h"
#include "verl/io/parquet/column_reader.h"
#include "verl/io/parquet/record_assembly.h"

namespace verl::io::parquet {

namespace {

constexpr size_t kMaxRowsWithoutColumns = size_t{1} << 28;

void read_at(std::ifstream& file, uint64_t offset, size_t size, uint8_t* out, const std::string& path) {
  file.clear();
  file.seekg(static_cast<std::streamoff>(offset));
  file.read(reinterpret_cast<char*>(out), static_cast<std::streamsize>(size));
  VERL_CHECK(file.good() || (file.eof() && static_cast<size_t>(file.gcount()) == size), "parquet", path,
             ": read of ", size, " bytes at offset ", offset, " failed");
}

}  // namespace

Reader::Reader(const std::string& path) : path_(path) {
  file_.open(path, std::ios::binary);
  VERL_CHECK(file_.is_open(), "parquet", path, ": cannot open file");
  file_.seekg(0, std::ios::end);
  file_size_ = static_cast<uint64_t>(file_.tellg());
  VERL_CHECK(file_size_ >= 12, "parquet", path, ": not a parquet file (", file_size_, " bytes, too short)");
  uint8_t head[4], tail[8];
  read_at(file_, 0, 4, head, path);
  read_at(file_, file_size_ - 8, 8, tail, path);
  VERL_CHECK(std::memcmp(tail + 4, "PARE", 4) != 0, "parquet", path, ": encrypted parquet files are not supported");
  VERL_CHECK(std::memcmp(head, "PAR1", 4) == 0 && std::memcmp(tail + 4, "PAR1", 4) == 0, "parquet", path,
             ": not a parquet file (bad magic bytes; truncated?)");
  uint32_t footer_len;
  std::memcpy(&footer_len, tail, 4);
  VERL_CHECK(footer_len > 0 && footer_len <= file_size_ - 12, "parquet", path, ": footer length ", footer_len,
             " does not fit in a file of ", file_size_, " bytes");
  data_end_ = file_size_ - 8 - footer_len;
  std::vector<uint8_t> footer(footer_len);
  read_at(file_, data_end_, footer_len, footer.data(), path);
  meta_ = parse_file_metadata(footer.data(), footer.size(), path + ": footer");
  schema_ = Schema::from_elements(meta_.schema, path);
  int64_t rows = 0;
  for (size_t g = 0; g < meta_.row_groups.size(); ++g) {
    const RowGroup& group = meta_.row_groups[g];
    VERL_CHECK(group.columns.size() == schema_.num_columns(), "parquet", path, ": row group ", g, " has ",
               group.columns.size(), " column chunks, the schema ", schema_.num_columns(), " columns");
    VERL_CHECK(group.num_rows >= 0 && group.num_rows <= INT64_MAX - rows, "parquet", path, ": row group ", g,
               " has ", group.num_rows, " rows");
    rows += group.num_rows;
  }
  VERL_CHECK(rows == meta_.num_rows, "parquet", path, ": row groups hold ", rows, " rows, the footer says ",
             meta_.num_rows);
  selected_ = schema_.root().children;
}

std::vector<std::string> Reader::column_names() const {
  std::vector<std::string> names;
  for (int child : schema_.root().children) names.push_back(schema_.node(child).element.name);
  return names;
}

void Reader::select_columns(const std::vector<std::string>& names) {
  if (names.empty()) {
    selected_ = schema_.root().children;
    return;
  }
  std::vector<int> chosen;
  for (const auto& name : names) {
    int node = schema_.find_top_level(name);
    VERL_CHECK(node >= 0, "parquet", path_, ": no column '", name, "'; columns: ", join(column_names(), ", "));
    chosen.push_back(node);
  }
  std::sort(chosen.begin(), chosen.end());
  chosen.erase(std::unique(chosen.begin(), chosen.end()), chosen.end());
  selected_ = chosen;
}

std::vector<Value> Reader::read_row_group(size_t index) {
  VERL_CHECK(index < meta_.row_groups.size(), "parquet", path_, ": row group ", index, " of ",
             meta_.row_groups.size());
  const RowGroup& group = meta_.row_groups[index];
  const std::string where = str_cat(path_, ": row group ", index);
  VERL_CHECK(group.num_rows >= 0, "parquet", where, ": ", group.num_rows, " rows");
  // An empty row group has nothing to decode; Arrow's writer gives its chunks a dictionary page and a data page
  // offset of 0.
  if (group.num_rows == 0) return {};
  std::vector<ColumnData> decoded(schema_.num_columns());
  std::vector<ColumnData*> columns(schema_.num_columns(), nullptr);
  std::vector<uint8_t> chunk;
  for (size_t c = 0; c < schema_.num_columns(); ++c) {
    if (std::find(selected_.begin(), selected_.end(), schema_.top_level_of(c)) == selected_.end()) continue;
    const ColumnChunk& cc = group.columns[c];
    const ColumnMetaData& m = cc.meta_data;
    VERL_CHECK(!cc.has_file_path, "parquet", where, ": column data in another file is not supported");
    int64_t start = m.data_page_offset;
    if (m.dictionary_page_offset && *m.dictionary_page_offset > 0 && *m.dictionary_page_offset < start) {
      start = *m.dictionary_page_offset;
    }
    VERL_CHECK(start >= 4 && m.total_compressed_size >= 0 && static_cast<uint64_t>(start) <= data_end_ &&
                   static_cast<uint64_t>(m.total_compressed_size) <= data_end_ - static_cast<uint64_t>(start),
               "parquet", where, ": column chunk ", c, " at offset ", start, " with ", m.total_compressed_size,
               " bytes lies outside the data region (", data_end_, " bytes)");
    chunk.resize(static_cast<size_t>(m.total_compressed_size));
    read_at(file_, static_cast<uint64_t>(start), chunk.size(), chunk.data(), path_);
    decode_column_chunk(chunk.data(), chunk.size(), schema_.node(schema_.leaf_node(c)), m, where, decoded[c]);
    uncompressed_bytes_ += decoded[c].uncompressed_bytes;
    columns[c] = &decoded[c];
  }
  bool any = std::any_of(columns.begin(), columns.end(), [](ColumnData* d) { return d != nullptr; });
  VERL_CHECK(any || static_cast<size_t>(group.num_rows) <= kMaxRowsWithoutColumns, "parquet", where, ": ",
             group.num_rows, " rows");
  return assemble_rows(schema_, selected_, columns, static_cast<size_t>(group.num_rows), where);
}

std::vector<Value> Reader::read_all() {
  std::vector<Value> rows;
  for (size_t g = 0; g < num_row_groups(); ++g) {
    std::vector<Value> part = read_row_group(g);
    rows.insert(rows.end(), std::make_move_iterator(part.begin()), std::make_move_iterator(part.end()));
  }
  return rows;
}

std::vector<Value> read_parquet(const std::string& path, const std::vector<std::string>& columns) {
  Reader reader(path);
  reader.select_columns(columns);
  return reader.read_all();
}

}  // namespace verl::io::parquet
