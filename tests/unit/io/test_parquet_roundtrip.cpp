// Randomized round trip: rows -> our writer -> our reader give the same rows, for every codec, both data page
// versions, dictionary on and off, the delta encodings, and row groups / pages small enough to split records.
#include <gtest/gtest.h>

#include "random_rows.h"
#include "verl/common/error.h"
#include "support/run_command.h"
#include "verl/io/parquet/reader.h"
#include "verl/io/parquet/writer.h"

namespace verl::test {
namespace {

using io::parquet::Codec;
using io::parquet::Encoding;
using io::parquet::WriterOptions;

struct Variant {
  const char* name;
  WriterOptions options;
};

std::vector<Variant> variants() {
  std::vector<Variant> out;
  WriterOptions o;
  out.push_back({"snappy_v1_dictionary", o});
  o = WriterOptions();
  o.codec = Codec::kZstd;
  o.data_page_v2 = true;
  o.dictionary = false;
  o.int_encoding = Encoding::kDeltaBinaryPacked;
  o.byte_array_encoding = Encoding::kDeltaByteArray;
  out.push_back({"zstd_v2_delta", o});
  o = WriterOptions();
  o.codec = Codec::kGzip;
  o.dictionary = false;
  o.byte_array_encoding = Encoding::kDeltaLengthByteArray;
  o.row_group_rows = 37;
  out.push_back({"gzip_v1_delta_length_small_groups", o});
  o = WriterOptions();
  o.codec = Codec::kUncompressed;
  o.data_page_v2 = true;
  o.row_group_rows = 11;
  o.page_bytes = 200;
  out.push_back({"uncompressed_v2_dictionary_tiny_pages", o});
  return out;
}

TEST(ParquetRoundTrip, RandomNestedRowsEveryVariant) {
  const std::string dir = make_temp_dir("parquet_roundtrip");
  for (uint64_t seed : {1u, 2u, 3u}) {
    std::vector<io::Value> rows = RandomRows(seed, false).make(seed == 1 ? 300 : 120);
    for (const Variant& v : variants()) {
      const std::string path = dir + "/" + v.name + "_" + std::to_string(seed) + ".parquet";
      io::parquet::write_parquet(path, rows, random_rows_schema(), v.options);
      std::vector<io::Value> back = io::parquet::read_parquet(path);
      ASSERT_EQ(back.size(), rows.size()) << v.name;
      for (size_t i = 0; i < rows.size(); ++i) {
        ASSERT_EQ(back[i], rows[i]) << v.name << " seed " << seed << " row " << i << "\n  wrote: "
                                    << io::to_json(rows[i]).substr(0, 3000) << "\n  read:  "
                                    << io::to_json(back[i]).substr(0, 3000);
      }
    }
  }
}

TEST(ParquetRoundTrip, ProjectionReadsOnlyChosenColumnsInSchemaOrder) {
  const std::string dir = make_temp_dir("parquet_projection");
  std::vector<io::Value> rows = RandomRows(9, false).make(50);
  WriterOptions options;
  options.row_group_rows = 16;
  io::parquet::write_parquet(dir + "/p.parquet", rows, random_rows_schema(), options);
  io::parquet::Reader reader(dir + "/p.parquet");
  EXPECT_EQ(reader.num_row_groups(), 4u);
  reader.select_columns({"msgs", "i64"});
  std::vector<io::Value> back = reader.read_all();
  ASSERT_EQ(back.size(), rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    io::Value expected(io::Struct{{"i64", *rows[i].find("i64")}, {"msgs", *rows[i].find("msgs")}});
    ASSERT_EQ(back[i], expected) << i;
  }
  EXPECT_THROW(reader.select_columns({"nope"}), Error);
}

TEST(ParquetRoundTrip, InferredSchemaFromJsonLikeRows) {
  const std::string dir = make_temp_dir("parquet_infer");
  std::vector<io::Value> rows = {
      io::parse_json(R"({"a":1,"b":"x","c":[{"k":1.5}],"d":null,"e":{"z":true}})", "r0"),
      io::parse_json(R"({"a":2.5,"b":null,"c":[],"d":null,"e":{"z":null,"y":[1,2]}})", "r1"),
      io::parse_json(R"({"a":null,"c":null,"e":null})", "r2"),
  };
  io::parquet::write_parquet(dir + "/i.parquet", rows);
  io::parquet::Reader reader(dir + "/i.parquet");
  EXPECT_EQ(reader.schema().to_text(),
            "message schema {\n"
            "  optional double a;\n"
            "  optional binary b (STRING);\n"
            "  optional group c (LIST) {\n"
            "    repeated group list {\n"
            "      optional group element {\n"
            "        optional double k;\n"
            "      }\n"
            "    }\n"
            "  }\n"
            "  optional binary d (STRING);\n"
            "  optional group e {\n"
            "    optional boolean z;\n"
            "    optional group y (LIST) {\n"
            "      repeated group list {\n"
            "        optional int64 element;\n"
            "      }\n"
            "    }\n"
            "  }\n"
            "}\n");
  std::vector<io::Value> back = reader.read_all();
  ASSERT_EQ(back.size(), 3u);
  EXPECT_EQ(io::to_json(back[0]), R"({"a":1.0,"b":"x","c":[{"k":1.5}],"d":null,"e":{"z":true,"y":null}})");
  EXPECT_EQ(io::to_json(back[1]), R"({"a":2.5,"b":null,"c":[],"d":null,"e":{"z":null,"y":[1,2]}})");
  EXPECT_EQ(io::to_json(back[2]), R"({"a":null,"b":null,"c":null,"d":null,"e":null})");
  // Conflicting kinds name the field.
  std::vector<io::Value> bad = {io::parse_json(R"({"a":{"b":1}})", "x"), io::parse_json(R"({"a":{"b":"s"}})", "y")};
  try {
    io::parquet::write_parquet(dir + "/bad.parquet", bad);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'a.b'"), std::string::npos) << e.what();
  }
}

TEST(ParquetRoundTrip, WriterRejectsValuesThatDoNotFitTheSchema) {
  const std::string dir = make_temp_dir("parquet_writer_errors");
  std::vector<WriteField> schema = {leaf_field("n", FieldKind::kInt32, false)};
  EXPECT_THROW(io::parquet::write_parquet(dir + "/a.parquet", {io::parse_json(R"({"n":null})", "x")}, schema), Error);
  EXPECT_THROW(io::parquet::write_parquet(dir + "/b.parquet", {io::parse_json(R"({"n":4294967296})", "x")}, schema),
               Error);
  EXPECT_THROW(io::parquet::write_parquet(dir + "/c.parquet", {io::parse_json(R"({"n":1,"m":2})", "x")}, schema),
               Error);
}

}  // namespace
}  // namespace verl::test
