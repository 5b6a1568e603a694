// A parquet file assembled by hand from the format's structures (no writer involved), covering what our
// writer never produces: INT96 timestamps, DECIMAL and unsigned ints, a legacy 2-level LIST, a bare repeated
// field, and BIT_PACKED levels. Expected values are worked out by hand.
#include <gtest/gtest.h>

#include <cstring>

#include "support/run_command.h"
#include "verl/io/parquet/encodings.h"
#include "verl/io/parquet/metadata.h"
#include "verl/io/parquet/reader.h"

namespace verl::test {
namespace {

// Declarations, not `using namespace`: in a unity build the next file of the batch shares this namespace.
using io::parquet::bit_width_for;
using io::parquet::Codec;
using io::parquet::ColumnChunk;
using io::parquet::ConvertedType;
using io::parquet::DataPageHeader;
using io::parquet::encode_rle_hybrid;
using io::parquet::Encoding;
using io::parquet::FileMetaData;
using io::parquet::PageHeader;
using io::parquet::PageType;
using io::parquet::PhysicalType;
using io::parquet::read_parquet;
using io::parquet::Repetition;
using io::parquet::RowGroup;
using io::parquet::SchemaElement;
using io::parquet::serialize_file_metadata;
using io::parquet::serialize_page_header;

struct Column {
  PhysicalType type;
  std::vector<std::string> path;
  std::vector<uint32_t> rep, def;  // empty when the max level is 0
  int max_rep = 0, max_def = 0;
  std::vector<uint8_t> values;  // PLAIN bytes
  size_t num_values = 0;
  Encoding def_encoding = Encoding::kRle;
};

void append(std::vector<uint8_t>& out, const void* p, size_t n) {
  out.insert(out.end(), static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(p) + n);
}

void levels(std::vector<uint8_t>& body, const std::vector<uint32_t>& values, int max_level, Encoding encoding) {
  if (max_level == 0) return;
  std::vector<uint8_t> encoded;
  int width = bit_width_for(static_cast<uint64_t>(max_level));
  if (encoding == Encoding::kRle) {
    encode_rle_hybrid(values.data(), values.size(), width, encoded);
    uint32_t len = static_cast<uint32_t>(encoded.size());
    append(body, &len, 4);
  } else {
    // BIT_PACKED: most significant bit first.
    encoded.assign((values.size() * static_cast<size_t>(width) + 7) / 8, 0);
    size_t bit = 0;
    for (uint32_t v : values) {
      for (int b = width - 1; b >= 0; --b, ++bit) {
        if ((v >> b) & 1) encoded[bit / 8] |= static_cast<uint8_t>(0x80 >> (bit % 8));
      }
    }
  }
  body.insert(body.end(), encoded.begin(), encoded.end());
}

SchemaElement element(const std::string& name, Repetition rep, std::optional<PhysicalType> type, int children = 0) {
  SchemaElement e;
  e.name = name;
  e.repetition = rep;
  e.type = type;
  e.num_children = children;
  return e;
}

TEST(ParquetHandmade, LegacyTypesAndListForms) {
  // Schema:
  //   required int96 ts;
  //   required int32 price (DECIMAL(9,2));
  //   required int32 count (UINT_32);
  //   optional group legacy (LIST) { repeated int32 element; }     -- 2-level list
  //   repeated binary names (UTF8);                                -- bare repeated field
  std::vector<SchemaElement> schema;
  SchemaElement root;
  root.name = "schema";
  root.num_children = 5;
  schema.push_back(root);
  schema.push_back(element("ts", Repetition::kRequired, PhysicalType::kInt96));
  SchemaElement price = element("price", Repetition::kRequired, PhysicalType::kInt32);
  price.converted_type = ConvertedType::kDecimal;
  price.scale = 2;
  price.precision = 9;
  schema.push_back(price);
  SchemaElement count = element("count", Repetition::kRequired, PhysicalType::kInt32);
  count.converted_type = ConvertedType::kUint32;
  schema.push_back(count);
  SchemaElement legacy = element("legacy", Repetition::kOptional, std::nullopt, 1);
  legacy.converted_type = ConvertedType::kList;
  schema.push_back(legacy);
  schema.push_back(element("element", Repetition::kRepeated, PhysicalType::kInt32));
  SchemaElement names = element("names", Repetition::kRepeated, PhysicalType::kByteArray);
  names.converted_type = ConvertedType::kUtf8;
  schema.push_back(names);

  // Three rows.
  std::vector<Column> columns(5);
  columns[0].type = PhysicalType::kInt96;
  columns[0].path = {"ts"};
  for (int row = 0; row < 3; ++row) {
    int64_t nanos = 1000 * row;
    int32_t julian_day = 2440588 + row;  // 2440588 is 1970-01-01
    append(columns[0].values, &nanos, 8);
    append(columns[0].values, &julian_day, 4);
  }
  columns[0].num_values = 3;
  columns[1].type = PhysicalType::kInt32;
  columns[1].path = {"price"};
  for (int32_t v : {12345, -5, 0}) append(columns[1].values, &v, 4);
  columns[1].num_values = 3;
  columns[2].type = PhysicalType::kInt32;
  columns[2].path = {"count"};
  for (int32_t v : {-1, 7, INT32_MIN}) append(columns[2].values, &v, 4);
  columns[2].num_values = 3;
  // legacy: [1, 2], null, []  -> (r,d): (0,2)=1 (1,2)=2 (0,0) (0,1)
  columns[3].type = PhysicalType::kInt32;
  columns[3].path = {"legacy", "element"};
  columns[3].max_rep = 1;
  columns[3].max_def = 2;
  columns[3].rep = {0, 1, 0, 0};
  columns[3].def = {2, 2, 0, 1};
  for (int32_t v : {1, 2}) append(columns[3].values, &v, 4);
  columns[3].num_values = 4;
  columns[3].def_encoding = Encoding::kBitPacked;
  // names: [], ["a", "bc"], ["d"]  -> (0,0) (0,1)="a" (1,1)="bc" (0,1)="d"
  columns[4].type = PhysicalType::kByteArray;
  columns[4].path = {"names"};
  columns[4].max_rep = 1;
  columns[4].max_def = 1;
  columns[4].rep = {0, 0, 1, 0};
  columns[4].def = {0, 1, 1, 1};
  for (std::string s : {"a", "bc", "d"}) {
    uint32_t len = static_cast<uint32_t>(s.size());
    append(columns[4].values, &len, 4);
    append(columns[4].values, s.data(), s.size());
  }
  columns[4].num_values = 4;

  std::vector<uint8_t> file = {'P', 'A', 'R', '1'};
  FileMetaData meta;
  meta.schema = schema;
  meta.num_rows = 3;
  RowGroup group;
  group.num_rows = 3;
  for (const Column& c : columns) {
    std::vector<uint8_t> body;
    levels(body, c.rep, c.max_rep, Encoding::kRle);
    levels(body, c.def, c.max_def, c.def_encoding);
    body.insert(body.end(), c.values.begin(), c.values.end());
    PageHeader header;
    header.type = PageType::kDataPage;
    header.uncompressed_page_size = header.compressed_page_size = static_cast<int32_t>(body.size());
    header.data_page = DataPageHeader{static_cast<int32_t>(c.num_values), Encoding::kPlain, c.def_encoding,
                                      Encoding::kRle};
    std::vector<uint8_t> h = serialize_page_header(header);
    ColumnChunk chunk;
    chunk.meta_data.type = c.type;
    chunk.meta_data.path_in_schema = c.path;
    chunk.meta_data.codec = Codec::kUncompressed;
    chunk.meta_data.num_values = static_cast<int64_t>(c.num_values);
    chunk.meta_data.data_page_offset = static_cast<int64_t>(file.size());
    chunk.meta_data.total_compressed_size = chunk.meta_data.total_uncompressed_size =
        static_cast<int64_t>(h.size() + body.size());
    chunk.meta_data.encodings = {Encoding::kPlain, Encoding::kRle};
    file.insert(file.end(), h.begin(), h.end());
    file.insert(file.end(), body.begin(), body.end());
    group.columns.push_back(chunk);
  }
  meta.row_groups.push_back(group);
  std::vector<uint8_t> footer = serialize_file_metadata(meta);
  file.insert(file.end(), footer.begin(), footer.end());
  uint32_t len = static_cast<uint32_t>(footer.size());
  append(file, &len, 4);
  append(file, "PAR1", 4);

  const std::string path = make_temp_dir("parquet_handmade") + "/legacy.parquet";
  write_file(path, std::string(file.begin(), file.end()));
  std::vector<io::Value> rows = read_parquet(path);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(io::to_json(rows[0]), R"({"ts":0,"price":123.45,"count":4294967295,"legacy":[1,2],"names":[]})");
  EXPECT_EQ(io::to_json(rows[1]),
            R"({"ts":86400000001000,"price":-0.05,"count":7,"legacy":null,"names":["a","bc"]})");
  EXPECT_EQ(io::to_json(rows[2]), R"({"ts":172800000002000,"price":0.0,"count":2147483648,"legacy":[],"names":["d"]})");
}

}  // namespace
}  // namespace verl::test
