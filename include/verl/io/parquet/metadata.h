// Parquet's footer and page headers (the parts of parquet.thrift a reader and writer need), parsed from and
// serialized to the Thrift compact protocol. Enum values are the format's.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace verl::io::parquet {

enum class PhysicalType : int32_t {
  kBoolean = 0, kInt32 = 1, kInt64 = 2, kInt96 = 3, kFloat = 4, kDouble = 5, kByteArray = 6, kFixedLenByteArray = 7,
};
enum class Repetition : int32_t { kRequired = 0, kOptional = 1, kRepeated = 2 };
enum class ConvertedType : int32_t {
  kUtf8 = 0, kMap = 1, kMapKeyValue = 2, kList = 3, kEnum = 4, kDecimal = 5, kDate = 6, kTimeMillis = 7,
  kTimeMicros = 8, kTimestampMillis = 9, kTimestampMicros = 10, kUint8 = 11, kUint16 = 12, kUint32 = 13,
  kUint64 = 14, kInt8 = 15, kInt16 = 16, kInt32 = 17, kInt64 = 18, kJson = 19, kBson = 20, kInterval = 21,
};
enum class Encoding : int32_t {
  kPlain = 0, kPlainDictionary = 2, kRle = 3, kBitPacked = 4, kDeltaBinaryPacked = 5, kDeltaLengthByteArray = 6,
  kDeltaByteArray = 7, kRleDictionary = 8, kByteStreamSplit = 9,
};
enum class Codec : int32_t {
  kUncompressed = 0, kSnappy = 1, kGzip = 2, kLzo = 3, kBrotli = 4, kLz4 = 5, kZstd = 6, kLz4Raw = 7,
};
enum class PageType : int32_t { kDataPage = 0, kIndexPage = 1, kDictionaryPage = 2, kDataPageV2 = 3 };

// LogicalType union: which member is set (ids as in parquet.thrift) plus the parameters we use.
struct LogicalType {
  enum Kind : int16_t {
    kNone = 0, kString = 1, kMap = 2, kList = 3, kEnum = 4, kDecimal = 5, kDate = 6, kTime = 7, kTimestamp = 8,
    kInteger = 10, kUnknown = 11, kJson = 12, kBson = 13, kUuid = 14, kFloat16 = 15,
  };
  Kind kind = kNone;
  int32_t scale = 0, precision = 0;       // DECIMAL
  int8_t bit_width = 0;                   // INTEGER
  bool is_signed = true;                  // INTEGER
  bool adjusted_to_utc = false;           // TIME, TIMESTAMP
  int16_t unit = 0;                       // TIME, TIMESTAMP: 1 millis, 2 micros, 3 nanos
};

struct SchemaElement {
  std::optional<PhysicalType> type;  // absent for groups
  int32_t type_length = 0;
  std::optional<Repetition> repetition;  // absent for the root
  std::string name;
  int32_t num_children = 0;
  std::optional<ConvertedType> converted_type;
  int32_t scale = 0, precision = 0;
  LogicalType logical_type;
};

struct ColumnMetaData {
  PhysicalType type = PhysicalType::kInt32;
  std::vector<Encoding> encodings;
  std::vector<std::string> path_in_schema;
  Codec codec = Codec::kUncompressed;
  int64_t num_values = 0;
  int64_t total_uncompressed_size = 0;
  int64_t total_compressed_size = 0;
  int64_t data_page_offset = 0;
  std::optional<int64_t> dictionary_page_offset;
};

struct ColumnChunk {
  int64_t file_offset = 0;
  bool has_file_path = false;
  ColumnMetaData meta_data;
};

struct RowGroup {
  std::vector<ColumnChunk> columns;
  int64_t total_byte_size = 0;
  int64_t num_rows = 0;
};

struct KeyValue {
  std::string key;
  std::optional<std::string> value;
};

struct FileMetaData {
  int32_t version = 1;
  std::vector<SchemaElement> schema;
  int64_t num_rows = 0;
  std::vector<RowGroup> row_groups;
  std::vector<KeyValue> key_value_metadata;
  std::string created_by;
};

struct DataPageHeader {
  int32_t num_values = 0;
  Encoding encoding = Encoding::kPlain;
  Encoding definition_level_encoding = Encoding::kRle;
  Encoding repetition_level_encoding = Encoding::kRle;
};

struct DataPageHeaderV2 {
  int32_t num_values = 0, num_nulls = 0, num_rows = 0;
  Encoding encoding = Encoding::kPlain;
  int32_t definition_levels_byte_length = 0, repetition_levels_byte_length = 0;
  bool is_compressed = true;
};

struct DictionaryPageHeader {
  int32_t num_values = 0;
  Encoding encoding = Encoding::kPlain;
};

struct PageHeader {
  PageType type = PageType::kDataPage;
  int32_t uncompressed_page_size = 0;
  int32_t compressed_page_size = 0;
  std::optional<DataPageHeader> data_page;
  std::optional<DataPageHeaderV2> data_page_v2;
  std::optional<DictionaryPageHeader> dictionary_page;
};

class ThriftReader;
class ThriftWriter;

// `where` names the file in error messages.
FileMetaData parse_file_metadata(const uint8_t* data, size_t size, const std::string& where);
// Parses one page header; `consumed` receives its length in bytes.
PageHeader parse_page_header(const uint8_t* data, size_t size, const std::string& where, size_t& consumed);

std::vector<uint8_t> serialize_file_metadata(const FileMetaData& meta);
std::vector<uint8_t> serialize_page_header(const PageHeader& header);

const char* physical_type_name(PhysicalType type);
const char* encoding_name(Encoding encoding);
const char* codec_name(Codec codec);

}  // namespace verl::io::parquet
