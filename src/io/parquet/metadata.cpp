#include "verl/io/parquet/metadata.h"

#include "verl/common/error.h"
#include "verl/io/parquet/thrift_compact.h"

namespace verl::io::parquet {

namespace {

using T = ThriftType;

void expect_type(ThriftReader& in, T actual, T expected, const char* what) {
  bool ok = actual == expected || ((expected == T::kTrue || expected == T::kFalse) &&
                                   (actual == T::kTrue || actual == T::kFalse));
  VERL_CHECK(ok, "parquet", in.where(), ": malformed metadata (", what, " has thrift type ", int(actual),
             ", expected ", int(expected), ")");
}

int32_t read_i32_field(ThriftReader& in, T type, const char* what) {
  VERL_CHECK(type == T::kI32 || type == T::kI16 || type == T::kByte, "parquet", in.where(), ": malformed metadata (",
             what, " has thrift type ", int(type), ", expected an integer)");
  if (type == T::kByte) return in.read_byte();
  return in.read_i32();
}

int64_t read_i64_field(ThriftReader& in, T type, const char* what) {
  VERL_CHECK(type == T::kI64 || type == T::kI32 || type == T::kI16, "parquet", in.where(),
             ": malformed metadata (", what, " has thrift type ", int(type), ", expected an integer)");
  return type == T::kI64 ? in.read_i64() : in.read_i32();
}

template <typename E>
E read_enum(ThriftReader& in, T type, const char* what, int32_t max_value) {
  int32_t v = read_i32_field(in, type, what);
  VERL_CHECK(v >= 0 && v <= max_value, "parquet", in.where(), ": unknown ", what, " ", v);
  return static_cast<E>(v);
}

// Reads a struct, passing each field to `on_field(id, type)`; the callback returns false to skip it.
template <typename F>
void read_struct(ThriftReader& in, F on_field) {
  in.begin_struct();
  int16_t id;
  T type;
  while (in.read_field(id, type)) {
    if (!on_field(id, type)) in.skip(type);
  }
}

template <typename F>
void read_list(ThriftReader& in, T type, const char* what, F on_element) {
  expect_type(in, type, T::kList, what);
  T element;
  uint32_t n;
  in.read_list_header(element, n);
  for (uint32_t i = 0; i < n; ++i) on_element(element);
}

void read_time_unit(ThriftReader& in, int16_t& unit) {
  read_struct(in, [&](int16_t id, T type) {
    if (type != T::kStruct) return false;
    unit = id;
    in.skip(type);
    return true;
  });
}

LogicalType read_logical_type(ThriftReader& in) {
  LogicalType lt;
  read_struct(in, [&](int16_t id, T type) {
    if (type != T::kStruct) return false;
    switch (id) {
      case LogicalType::kDecimal:
        lt.kind = LogicalType::kDecimal;
        read_struct(in, [&](int16_t fid, T ftype) {
          if (fid == 1) lt.scale = read_i32_field(in, ftype, "DecimalType.scale");
          else if (fid == 2) lt.precision = read_i32_field(in, ftype, "DecimalType.precision");
          else return false;
          return true;
        });
        return true;
      case LogicalType::kTime:
      case LogicalType::kTimestamp:
        lt.kind = static_cast<LogicalType::Kind>(id);
        read_struct(in, [&](int16_t fid, T ftype) {
          if (fid == 1) lt.adjusted_to_utc = in.read_bool(ftype);
          else if (fid == 2 && ftype == T::kStruct) read_time_unit(in, lt.unit);
          else return false;
          return true;
        });
        return true;
      case LogicalType::kInteger:
        lt.kind = LogicalType::kInteger;
        read_struct(in, [&](int16_t fid, T ftype) {
          if (fid == 1) lt.bit_width = static_cast<int8_t>(read_i32_field(in, ftype, "IntType.bitWidth"));
          else if (fid == 2) lt.is_signed = in.read_bool(ftype);
          else return false;
          return true;
        });
        return true;
      case LogicalType::kString: case LogicalType::kMap: case LogicalType::kList: case LogicalType::kEnum:
      case LogicalType::kDate: case LogicalType::kUnknown: case LogicalType::kJson: case LogicalType::kBson:
      case LogicalType::kUuid: case LogicalType::kFloat16:
        lt.kind = static_cast<LogicalType::Kind>(id);
        in.skip(type);
        return true;
      default:
        return false;  // a logical type newer than this reader: treated as absent
    }
  });
  return lt;
}

SchemaElement read_schema_element(ThriftReader& in) {
  SchemaElement e;
  bool has_name = false;
  read_struct(in, [&](int16_t id, T type) {
    switch (id) {
      case 1: e.type = read_enum<PhysicalType>(in, type, "physical type", 7); return true;
      case 2: e.type_length = read_i32_field(in, type, "type_length"); return true;
      case 3: e.repetition = read_enum<Repetition>(in, type, "repetition type", 2); return true;
      case 4: expect_type(in, type, T::kBinary, "name"); e.name = in.read_binary(); has_name = true; return true;
      case 5: e.num_children = read_i32_field(in, type, "num_children"); return true;
      case 6: {
        int32_t v = read_i32_field(in, type, "converted_type");
        if (v >= 0 && v <= 21) e.converted_type = static_cast<ConvertedType>(v);
        return true;
      }
      case 7: e.scale = read_i32_field(in, type, "scale"); return true;
      case 8: e.precision = read_i32_field(in, type, "precision"); return true;
      case 10: expect_type(in, type, T::kStruct, "logicalType"); e.logical_type = read_logical_type(in); return true;
      default: return false;
    }
  });
  VERL_CHECK(has_name, "parquet", in.where(), ": malformed metadata (schema element without a name)");
  return e;
}

ColumnMetaData read_column_metadata(ThriftReader& in) {
  ColumnMetaData m;
  read_struct(in, [&](int16_t id, T type) {
    switch (id) {
      case 1: m.type = read_enum<PhysicalType>(in, type, "physical type", 7); return true;
      case 2:
        read_list(in, type, "encodings", [&](T et) {
          m.encodings.push_back(static_cast<Encoding>(read_i32_field(in, et, "encoding")));
        });
        return true;
      case 3:
        read_list(in, type, "path_in_schema", [&](T et) {
          expect_type(in, et, T::kBinary, "path_in_schema element");
          m.path_in_schema.push_back(in.read_binary());
        });
        return true;
      case 4: m.codec = static_cast<Codec>(read_i32_field(in, type, "codec")); return true;
      case 5: m.num_values = read_i64_field(in, type, "num_values"); return true;
      case 6: m.total_uncompressed_size = read_i64_field(in, type, "total_uncompressed_size"); return true;
      case 7: m.total_compressed_size = read_i64_field(in, type, "total_compressed_size"); return true;
      case 9: m.data_page_offset = read_i64_field(in, type, "data_page_offset"); return true;
      case 11: m.dictionary_page_offset = read_i64_field(in, type, "dictionary_page_offset"); return true;
      default: return false;
    }
  });
  return m;
}

ColumnChunk read_column_chunk(ThriftReader& in) {
  ColumnChunk c;
  bool has_meta = false;
  read_struct(in, [&](int16_t id, T type) {
    switch (id) {
      case 1: c.has_file_path = true; return false;
      case 2: c.file_offset = read_i64_field(in, type, "file_offset"); return true;
      case 3: expect_type(in, type, T::kStruct, "meta_data"); c.meta_data = read_column_metadata(in); has_meta = true;
        return true;
      default: return false;
    }
  });
  VERL_CHECK(has_meta, "parquet", in.where(), ": column chunk without meta_data (unsupported or malformed file)");
  return c;
}

RowGroup read_row_group(ThriftReader& in) {
  RowGroup g;
  read_struct(in, [&](int16_t id, T type) {
    switch (id) {
      case 1:
        read_list(in, type, "row group columns", [&](T et) {
          expect_type(in, et, T::kStruct, "column chunk");
          g.columns.push_back(read_column_chunk(in));
        });
        return true;
      case 2: g.total_byte_size = read_i64_field(in, type, "total_byte_size"); return true;
      case 3: g.num_rows = read_i64_field(in, type, "num_rows"); return true;
      default: return false;
    }
  });
  return g;
}

}  // namespace

FileMetaData parse_file_metadata(const uint8_t* data, size_t size, const std::string& where) {
  ThriftReader in(data, size, where);
  FileMetaData meta;
  read_struct(in, [&](int16_t id, T type) {
    switch (id) {
      case 1: meta.version = read_i32_field(in, type, "version"); return true;
      case 2:
        read_list(in, type, "schema", [&](T et) {
          expect_type(in, et, T::kStruct, "schema element");
          meta.schema.push_back(read_schema_element(in));
        });
        return true;
      case 3: meta.num_rows = read_i64_field(in, type, "num_rows"); return true;
      case 4:
        read_list(in, type, "row_groups", [&](T et) {
          expect_type(in, et, T::kStruct, "row group");
          meta.row_groups.push_back(read_row_group(in));
        });
        return true;
      case 5:
        read_list(in, type, "key_value_metadata", [&](T et) {
          expect_type(in, et, T::kStruct, "key_value_metadata element");
          KeyValue kv;
          read_struct(in, [&](int16_t fid, T ftype) {
            if (fid == 1 && ftype == T::kBinary) kv.key = in.read_binary();
            else if (fid == 2 && ftype == T::kBinary) kv.value = in.read_binary();
            else return false;
            return true;
          });
          meta.key_value_metadata.push_back(std::move(kv));
        });
        return true;
      case 6: expect_type(in, type, T::kBinary, "created_by"); meta.created_by = in.read_binary(); return true;
      default: return false;
    }
  });
  VERL_CHECK(!meta.schema.empty(), "parquet", where, ": malformed footer (no schema)");
  VERL_CHECK(meta.num_rows >= 0, "parquet", where, ": malformed footer (num_rows ", meta.num_rows, ")");
  return meta;
}

PageHeader parse_page_header(const uint8_t* data, size_t size, const std::string& where, size_t& consumed) {
  ThriftReader in(data, size, where);
  PageHeader h;
  bool has_type = false;
  read_struct(in, [&](int16_t id, T type) {
    switch (id) {
      case 1: h.type = read_enum<PageType>(in, type, "page type", 3); has_type = true; return true;
      case 2: h.uncompressed_page_size = read_i32_field(in, type, "uncompressed_page_size"); return true;
      case 3: h.compressed_page_size = read_i32_field(in, type, "compressed_page_size"); return true;
      case 5: {
        expect_type(in, type, T::kStruct, "data_page_header");
        DataPageHeader d;
        read_struct(in, [&](int16_t fid, T ft) {
          switch (fid) {
            case 1: d.num_values = read_i32_field(in, ft, "num_values"); return true;
            case 2: d.encoding = static_cast<Encoding>(read_i32_field(in, ft, "encoding")); return true;
            case 3: d.definition_level_encoding = static_cast<Encoding>(read_i32_field(in, ft, "encoding")); return true;
            case 4: d.repetition_level_encoding = static_cast<Encoding>(read_i32_field(in, ft, "encoding")); return true;
            default: return false;
          }
        });
        h.data_page = d;
        return true;
      }
      case 7: {
        expect_type(in, type, T::kStruct, "dictionary_page_header");
        DictionaryPageHeader d;
        read_struct(in, [&](int16_t fid, T ft) {
          switch (fid) {
            case 1: d.num_values = read_i32_field(in, ft, "num_values"); return true;
            case 2: d.encoding = static_cast<Encoding>(read_i32_field(in, ft, "encoding")); return true;
            default: return false;
          }
        });
        h.dictionary_page = d;
        return true;
      }
      case 8: {
        expect_type(in, type, T::kStruct, "data_page_header_v2");
        DataPageHeaderV2 d;
        read_struct(in, [&](int16_t fid, T ft) {
          switch (fid) {
            case 1: d.num_values = read_i32_field(in, ft, "num_values"); return true;
            case 2: d.num_nulls = read_i32_field(in, ft, "num_nulls"); return true;
            case 3: d.num_rows = read_i32_field(in, ft, "num_rows"); return true;
            case 4: d.encoding = static_cast<Encoding>(read_i32_field(in, ft, "encoding")); return true;
            case 5: d.definition_levels_byte_length = read_i32_field(in, ft, "definition_levels_byte_length"); return true;
            case 6: d.repetition_levels_byte_length = read_i32_field(in, ft, "repetition_levels_byte_length"); return true;
            case 7: d.is_compressed = in.read_bool(ft); return true;
            default: return false;
          }
        });
        h.data_page_v2 = d;
        return true;
      }
      default: return false;
    }
  });
  VERL_CHECK(has_type, "parquet", where, ": malformed page header (no page type)");
  VERL_CHECK(h.compressed_page_size >= 0 && h.uncompressed_page_size >= 0, "parquet", where,
             ": malformed page header (negative page size)");
  consumed = in.position();
  return h;
}

namespace {

void write_logical_type(ThriftWriter& out, const LogicalType& lt) {
  out.begin_struct();
  out.field_struct_begin(lt.kind);
  if (lt.kind == LogicalType::kDecimal) {
    out.field_i32(1, lt.scale);
    out.field_i32(2, lt.precision);
  } else if (lt.kind == LogicalType::kInteger) {
    out.field_header(1, ThriftType::kByte);
    out.bytes().push_back(static_cast<uint8_t>(lt.bit_width));
    out.field_bool(2, lt.is_signed);
  } else if (lt.kind == LogicalType::kTime || lt.kind == LogicalType::kTimestamp) {
    out.field_bool(1, lt.adjusted_to_utc);
    out.field_struct_begin(2);
    out.field_struct_begin(lt.unit);
    out.end_struct();
    out.end_struct();
  }
  out.end_struct();
  out.end_struct();
}

}  // namespace

std::vector<uint8_t> serialize_file_metadata(const FileMetaData& meta) {
  ThriftWriter out;
  out.begin_struct();
  out.field_i32(1, meta.version);
  out.field_list_begin(2, ThriftType::kStruct, static_cast<uint32_t>(meta.schema.size()));
  for (const auto& e : meta.schema) {
    out.begin_struct();
    if (e.type) out.field_i32(1, static_cast<int32_t>(*e.type));
    if (e.type && *e.type == PhysicalType::kFixedLenByteArray) out.field_i32(2, e.type_length);
    if (e.repetition) out.field_i32(3, static_cast<int32_t>(*e.repetition));
    out.field_binary(4, e.name);
    if (!e.type) out.field_i32(5, e.num_children);
    if (e.converted_type) out.field_i32(6, static_cast<int32_t>(*e.converted_type));
    if (e.converted_type == ConvertedType::kDecimal) {
      out.field_i32(7, e.scale);
      out.field_i32(8, e.precision);
    }
    if (e.logical_type.kind != LogicalType::kNone) {
      out.field_header(10, ThriftType::kStruct);
      write_logical_type(out, e.logical_type);
    }
    out.end_struct();
  }
  out.field_i64(3, meta.num_rows);
  out.field_list_begin(4, ThriftType::kStruct, static_cast<uint32_t>(meta.row_groups.size()));
  for (const auto& g : meta.row_groups) {
    out.begin_struct();
    out.field_list_begin(1, ThriftType::kStruct, static_cast<uint32_t>(g.columns.size()));
    int64_t compressed = 0;
    for (const auto& c : g.columns) {
      const ColumnMetaData& m = c.meta_data;
      compressed += m.total_compressed_size;
      out.begin_struct();
      out.field_i64(2, c.file_offset);
      out.field_struct_begin(3);
      out.field_i32(1, static_cast<int32_t>(m.type));
      out.field_list_begin(2, ThriftType::kI32, static_cast<uint32_t>(m.encodings.size()));
      for (Encoding enc : m.encodings) out.write_i32(static_cast<int32_t>(enc));
      out.field_list_begin(3, ThriftType::kBinary, static_cast<uint32_t>(m.path_in_schema.size()));
      for (const auto& p : m.path_in_schema) out.write_binary(p);
      out.field_i32(4, static_cast<int32_t>(m.codec));
      out.field_i64(5, m.num_values);
      out.field_i64(6, m.total_uncompressed_size);
      out.field_i64(7, m.total_compressed_size);
      out.field_i64(9, m.data_page_offset);
      if (m.dictionary_page_offset) out.field_i64(11, *m.dictionary_page_offset);
      out.end_struct();
      out.end_struct();
    }
    out.field_i64(2, g.total_byte_size);
    out.field_i64(3, g.num_rows);
    if (!g.columns.empty()) {
      const ColumnMetaData& first = g.columns.front().meta_data;
      out.field_i64(5, first.dictionary_page_offset ? *first.dictionary_page_offset : first.data_page_offset);
    }
    out.field_i64(6, compressed);
    out.end_struct();
  }
  if (!meta.key_value_metadata.empty()) {
    out.field_list_begin(5, ThriftType::kStruct, static_cast<uint32_t>(meta.key_value_metadata.size()));
    for (const auto& kv : meta.key_value_metadata) {
      out.begin_struct();
      out.field_binary(1, kv.key);
      if (kv.value) out.field_binary(2, *kv.value);
      out.end_struct();
    }
  }
  if (!meta.created_by.empty()) out.field_binary(6, meta.created_by);
  out.end_struct();
  return std::move(out.bytes());
}

std::vector<uint8_t> serialize_page_header(const PageHeader& h) {
  ThriftWriter out;
  out.begin_struct();
  out.field_i32(1, static_cast<int32_t>(h.type));
  out.field_i32(2, h.uncompressed_page_size);
  out.field_i32(3, h.compressed_page_size);
  if (h.data_page) {
    out.field_struct_begin(5);
    out.field_i32(1, h.data_page->num_values);
    out.field_i32(2, static_cast<int32_t>(h.data_page->encoding));
    out.field_i32(3, static_cast<int32_t>(h.data_page->definition_level_encoding));
    out.field_i32(4, static_cast<int32_t>(h.data_page->repetition_level_encoding));
    out.end_struct();
  }
  if (h.dictionary_page) {
    out.field_struct_begin(7);
    out.field_i32(1, h.dictionary_page->num_values);
    out.field_i32(2, static_cast<int32_t>(h.dictionary_page->encoding));
    out.end_struct();
  }
  if (h.data_page_v2) {
    const DataPageHeaderV2& d = *h.data_page_v2;
    out.field_struct_begin(8);
    out.field_i32(1, d.num_values);
    out.field_i32(2, d.num_nulls);
    out.field_i32(3, d.num_rows);
    out.field_i32(4, static_cast<int32_t>(d.encoding));
    out.field_i32(5, d.definition_levels_byte_length);
    out.field_i32(6, d.repetition_levels_byte_length);
    out.field_bool(7, d.is_compressed);
    out.end_struct();
  }
  out.end_struct();
  return std::move(out.bytes());
}

const char* physical_type_name(PhysicalType type) {
  switch (type) {
    case PhysicalType::kBoolean: return "boolean";
    case PhysicalType::kInt32: return "int32";
    case PhysicalType::kInt64: return "int64";
    case PhysicalType::kInt96: return "int96";
    case PhysicalType::kFloat: return "float";
    case PhysicalType::kDouble: return "double";
    case PhysicalType::kByteArray: return "binary";
    case PhysicalType::kFixedLenByteArray: return "fixed_len_byte_array";
  }
  return "?";
}

const char* encoding_name(Encoding encoding) {
  switch (encoding) {
    case Encoding::kPlain: return "PLAIN";
    case Encoding::kPlainDictionary: return "PLAIN_DICTIONARY";
    case Encoding::kRle: return "RLE";
    case Encoding::kBitPacked: return "BIT_PACKED";
    case Encoding::kDeltaBinaryPacked: return "DELTA_BINARY_PACKED";
    case Encoding::kDeltaLengthByteArray: return "DELTA_LENGTH_BYTE_ARRAY";
    case Encoding::kDeltaByteArray: return "DELTA_BYTE_ARRAY";
    case Encoding::kRleDictionary: return "RLE_DICTIONARY";
    case Encoding::kByteStreamSplit: return "BYTE_STREAM_SPLIT";
  }
  return "unknown";
}

const char* codec_name(Codec codec) {
  switch (codec) {
    case Codec::kUncompressed: return "UNCOMPRESSED";
    case Codec::kSnappy: return "SNAPPY";
    case Codec::kGzip: return "GZIP";
    case Codec::kLzo: return "LZO";
    case Codec::kBrotli: return "BROTLI";
    case Codec::kLz4: return "LZ4";
    case Codec::kZstd: return "ZSTD";
    case Codec::kLz4Raw: return "LZ4_RAW";
  }
  return "unknown";
}

}  // namespace verl::io::parquet
