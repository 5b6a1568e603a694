#include "verl/io/parquet/column_reader.h"

#include <cmath>
#include <cstring>

#include "verl/common/error.h"
#include "verl/io/parquet/compression.h"
#include "verl/io/parquet/encodings.h"

namespace verl::io::parquet {

namespace {

constexpr size_t kMaxPageValues = size_t{1} << 24;
constexpr size_t kMaxPageBytes = size_t{512} << 20;

// How a physical value becomes a Value, decided once per column from the logical / converted type.
enum class Conversion { kPlain, kUnsigned32, kUnsigned64, kDecimal, kFloat16, kInt96 };

Conversion conversion_for(const SchemaElement& e) {
  const LogicalType& lt = e.logical_type;
  if (lt.kind == LogicalType::kDecimal || e.converted_type == ConvertedType::kDecimal) return Conversion::kDecimal;
  if (lt.kind == LogicalType::kFloat16) return Conversion::kFloat16;
  bool is_unsigned = (lt.kind == LogicalType::kInteger && !lt.is_signed) ||
                     e.converted_type == ConvertedType::kUint8 || e.converted_type == ConvertedType::kUint16 ||
                     e.converted_type == ConvertedType::kUint32 || e.converted_type == ConvertedType::kUint64;
  if (is_unsigned) return *e.type == PhysicalType::kInt64 ? Conversion::kUnsigned64 : Conversion::kUnsigned32;
  if (*e.type == PhysicalType::kInt96) return Conversion::kInt96;
  return Conversion::kPlain;
}

struct LeafDecoder {
  PhysicalType type;
  size_t type_length;
  Conversion conversion;
  int scale;
  const std::string& where;

  Value from_int(int64_t v) const {
    switch (conversion) {
      case Conversion::kUnsigned32: return Value(static_cast<int64_t>(static_cast<uint32_t>(v)));
      case Conversion::kUnsigned64:
        if (v < 0) return Value(static_cast<double>(static_cast<uint64_t>(v)));
        return Value(v);
      case Conversion::kDecimal: return Value(static_cast<double>(v) / std::pow(10.0, scale));
      default: return Value(v);
    }
  }

  Value from_bytes(const uint8_t* p, size_t n) const {
    if (conversion == Conversion::kDecimal) {
      // Big-endian two's complement.
      double value = 0;
      bool negative = n > 0 && (p[0] & 0x80);
      for (size_t i = 0; i < n; ++i) value = value * 256.0 + (negative ? static_cast<uint8_t>(~p[i]) : p[i]);
      if (negative) value = -(value + 1);
      return Value(value / std::pow(10.0, scale));
    }
    if (conversion == Conversion::kFloat16 && n == 2) {
      uint16_t h = static_cast<uint16_t>(p[0] | (p[1] << 8));
      int exponent = (h >> 10) & 0x1F;
      int mantissa = h & 0x3FF;
      double sign = (h & 0x8000) ? -1.0 : 1.0;
      if (exponent == 0) return Value(sign * std::ldexp(mantissa, -24));
      if (exponent == 31) return Value(mantissa ? std::nan("") : sign * INFINITY);
      return Value(sign * std::ldexp(mantissa + 1024, exponent - 25));
    }
    return Value(std::string(reinterpret_cast<const char*>(p), n));
  }

  Value from_int96(const uint8_t* p) const {
    int64_t nanos;
    int32_t julian_day;
    std::memcpy(&nanos, p, 8);
    std::memcpy(&julian_day, p + 8, 4);
    constexpr int64_t kUnixEpochJulianDay = 2440588;
    return Value(static_cast<int64_t>((static_cast<int64_t>(julian_day) - kUnixEpochJulianDay) * 86400000000000LL +
                                      nanos));
  }

  // Fixed width of a PLAIN value in bytes (0 for BYTE_ARRAY, which is length-prefixed; BOOLEAN is bit-packed).
  size_t plain_width() const {
    switch (type) {
      case PhysicalType::kInt32: case PhysicalType::kFloat: return 4;
      case PhysicalType::kInt64: case PhysicalType::kDouble: return 8;
      case PhysicalType::kInt96: return 12;
      case PhysicalType::kFixedLenByteArray: return type_length;
      default: return 0;
    }
  }

  Value from_fixed(const uint8_t* p) const {
    switch (type) {
      case PhysicalType::kInt32: {
        int32_t v;
        std::memcpy(&v, p, 4);
        return from_int(v);
      }
      case PhysicalType::kInt64: {
        int64_t v;
        std::memcpy(&v, p, 8);
        return from_int(v);
      }
      case PhysicalType::kFloat: {
        float v;
        std::memcpy(&v, p, 4);
        return Value(static_cast<double>(v));
      }
      case PhysicalType::kDouble: {
        double v;
        std::memcpy(&v, p, 8);
        return Value(v);
      }
      case PhysicalType::kInt96: return from_int96(p);
      default: return from_bytes(p, type_length);
    }
  }

  // PLAIN: appends `count` values; returns bytes consumed.
  size_t plain(const uint8_t* data, size_t size, size_t count, std::vector<Value>& out) const {
    if (type == PhysicalType::kBoolean) {
      VERL_CHECK(count <= size * 8, "parquet", where, ": PLAIN booleans: ", count, " values in ", size, " bytes");
      for (size_t i = 0; i < count; ++i) out.emplace_back(static_cast<bool>((data[i >> 3] >> (i & 7)) & 1));
      return (count + 7) / 8;
    }
    if (type == PhysicalType::kByteArray) {
      size_t pos = 0;
      for (size_t i = 0; i < count; ++i) {
        VERL_CHECK(size - pos >= 4, "parquet", where, ": PLAIN byte array ", i, " of ", count, " runs past the page");
        uint32_t len;
        std::memcpy(&len, data + pos, 4);
        pos += 4;
        VERL_CHECK(len <= size - pos, "parquet", where, ": PLAIN byte array of length ", len, " overruns the page (",
                   size - pos, " bytes left)");
        out.push_back(from_bytes(data + pos, len));
        pos += len;
      }
      return pos;
    }
    size_t width = plain_width();
    VERL_CHECK(width > 0 && count <= size / width, "parquet", where, ": PLAIN page holds ", size, " bytes, ", count,
               " values of ", width, " bytes expected");
    for (size_t i = 0; i < count; ++i) out.push_back(from_fixed(data + i * width));
    return count * width;
  }
};

void decode_levels(Encoding encoding, const uint8_t* data, size_t size, int max_level, size_t count,
                   std::vector<uint16_t>& out, const std::string& where) {
  int width = bit_width_for(static_cast<uint64_t>(max_level));
  size_t start = out.size();
  out.resize(start + count);
  if (encoding == Encoding::kRle) {
    std::vector<uint32_t> tmp(count);
    decode_rle_hybrid(data, size, width, count, tmp.data(), where);
    for (size_t i = 0; i < count; ++i) {
      VERL_CHECK(tmp[i] <= static_cast<uint32_t>(max_level), "parquet", where, ": level ", tmp[i], " above the maximum ",
                 max_level);
      out[start + i] = static_cast<uint16_t>(tmp[i]);
    }
  } else if (encoding == Encoding::kBitPacked) {
    // Deprecated BIT_PACKED levels: most significant bit first.
    VERL_CHECK(count * static_cast<size_t>(width) <= size * 8, "parquet", where, ": BIT_PACKED levels overrun the page");
    size_t bit = 0;
    for (size_t i = 0; i < count; ++i) {
      uint32_t v = 0;
      for (int b = 0; b < width; ++b, ++bit) v = (v << 1) | ((data[bit >> 3] >> (7 - (bit & 7))) & 1);
      VERL_CHECK(v <= static_cast<uint32_t>(max_level), "parquet", where, ": level ", v, " above the maximum ", max_level);
      out[start + i] = static_cast<uint16_t>(v);
    }
  } else {
    VERL_FAIL("parquet", where, ": unsupported level encoding ", encoding_name(encoding), " (", static_cast<int>(encoding),
              ")");
  }
}

uint32_t read_u32_le(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// Decodes `count` values in `encoding` from [data, data+size) and appends them.
void decode_values(const LeafDecoder& leaf, Encoding encoding, const uint8_t* data, size_t size, size_t count,
                   const std::vector<Value>* dictionary, std::vector<Value>& out, const std::string& where) {
  switch (encoding) {
    case Encoding::kPlain:
      leaf.plain(data, size, count, out);
      return;
    case Encoding::kPlainDictionary:
    case Encoding::kRleDictionary: {
      if (count == 0) return;
      VERL_CHECK(dictionary != nullptr, "parquet", where, ": dictionary-encoded page without a dictionary page");
      VERL_CHECK(size >= 1, "parquet", where, ": dictionary-encoded page without its bit width byte");
      std::vector<uint32_t> ids(count);
      decode_rle_hybrid(data + 1, size - 1, data[0], count, ids.data(), where);
      for (uint32_t id : ids) {
        VERL_CHECK(id < dictionary->size(), "parquet", where, ": dictionary index ", id, " out of range (dictionary has ",
                   dictionary->size(), " entries)");
        out.push_back((*dictionary)[id]);
      }
      return;
    }
    case Encoding::kRle: {
      VERL_CHECK(leaf.type == PhysicalType::kBoolean, "parquet", where, ": RLE value encoding on a ",
                 physical_type_name(leaf.type), " column (only booleans)");
      VERL_CHECK(size >= 4, "parquet", where, ": RLE booleans without their length prefix");
      uint32_t len = read_u32_le(data);
      VERL_CHECK(len <= size - 4, "parquet", where, ": RLE boolean run length ", len, " overruns the page");
      std::vector<uint32_t> bits(count);
      decode_rle_hybrid(data + 4, len, 1, count, bits.data(), where);
      for (uint32_t b : bits) out.emplace_back(b != 0);
      return;
    }
    case Encoding::kDeltaBinaryPacked: {
      VERL_CHECK(leaf.type == PhysicalType::kInt32 || leaf.type == PhysicalType::kInt64, "parquet", where,
                 ": DELTA_BINARY_PACKED on a ", physical_type_name(leaf.type), " column");
      std::vector<int64_t> ints;
      decode_delta_binary_packed(data, size, count, ints, where);
      VERL_CHECK(ints.size() == count, "parquet", where, ": DELTA_BINARY_PACKED holds ", ints.size(), " values, page needs ",
                 count);
      for (int64_t v : ints) out.push_back(leaf.from_int(leaf.type == PhysicalType::kInt32 ? static_cast<int32_t>(v) : v));
      return;
    }
    case Encoding::kDeltaLengthByteArray: {
      VERL_CHECK(leaf.type == PhysicalType::kByteArray, "parquet", where, ": DELTA_LENGTH_BYTE_ARRAY on a ",
                 physical_type_name(leaf.type), " column");
      std::vector<ByteRun> runs;
      decode_delta_length_byte_array(data, size, count, runs, where);
      VERL_CHECK(runs.size() == count, "parquet", where, ": DELTA_LENGTH_BYTE_ARRAY holds ", runs.size(),
                 " values, page needs ", count);
      for (const auto& r : runs) out.push_back(leaf.from_bytes(r.data, r.size));
      return;
    }
    case Encoding::kDeltaByteArray: {
      VERL_CHECK(leaf.type == PhysicalType::kByteArray || leaf.type == PhysicalType::kFixedLenByteArray, "parquet",
                 where, ": DELTA_BYTE_ARRAY on a ", physical_type_name(leaf.type), " column");
      std::vector<std::string> strings;
      decode_delta_byte_array(data, size, count, strings, where);
      VERL_CHECK(strings.size() == count, "parquet", where, ": DELTA_BYTE_ARRAY holds ", strings.size(),
                 " values, page needs ", count);
      for (const auto& s : strings) {
        VERL_CHECK(leaf.type != PhysicalType::kFixedLenByteArray || s.size() == leaf.type_length, "parquet", where,
                   ": DELTA_BYTE_ARRAY value of ", s.size(), " bytes in a FIXED_LEN_BYTE_ARRAY(", leaf.type_length,
                   ") column");
        out.push_back(leaf.from_bytes(reinterpret_cast<const uint8_t*>(s.data()), s.size()));
      }
      return;
    }
    case Encoding::kByteStreamSplit: {
      size_t width = leaf.plain_width();
      VERL_CHECK(width > 0 && leaf.type != PhysicalType::kInt96, "parquet", where, ": BYTE_STREAM_SPLIT on a ",
                 physical_type_name(leaf.type), " column");
      std::vector<uint8_t> plain;
      decode_byte_stream_split(data, size, width, count, plain, where);
      for (size_t i = 0; i < count; ++i) out.push_back(leaf.from_fixed(plain.data() + i * width));
      return;
    }
    default:
      VERL_FAIL("parquet", where, ": unsupported value encoding ", encoding_name(encoding), " (",
                static_cast<int>(encoding), ")");
  }
}

}  // namespace

void decode_column_chunk(const uint8_t* chunk, size_t size, const SchemaNode& node, const ColumnMetaData& meta,
                         const std::string& where_file, ColumnData& out) {
  const std::string where = where_file + ": column '" + node.element.name + "'";
  const SchemaElement& e = node.element;
  VERL_CHECK(meta.type == *e.type, "parquet", where, ": column chunk type ", physical_type_name(meta.type),
             " differs from the schema's ", physical_type_name(*e.type));
  LeafDecoder leaf{*e.type, static_cast<size_t>(e.type_length), conversion_for(e),
                   e.logical_type.kind == LogicalType::kDecimal ? e.logical_type.scale : e.scale, where};
  const int max_def = node.max_def, max_rep = node.max_rep;
  VERL_CHECK(max_def < 65535 && max_rep < 65535, "parquet", where, ": nesting too deep");
  VERL_CHECK(meta.num_values >= 0, "parquet", where, ": negative num_values");
  const size_t total = static_cast<size_t>(meta.num_values);

  std::vector<Value> dictionary;
  bool has_dictionary = false;
  std::vector<uint8_t> buffer;  // decompressed page payload
  size_t pos = 0;
  out.num_levels = 0;
  while (out.num_levels < total) {
    VERL_CHECK(pos < size, "parquet", where, ": column chunk ends after ", out.num_levels, " of ", total, " values");
    size_t consumed = 0;
    PageHeader header = parse_page_header(chunk + pos, size - pos, where, consumed);
    pos += consumed;
    const size_t compressed = static_cast<size_t>(header.compressed_page_size);
    const size_t uncompressed = static_cast<size_t>(header.uncompressed_page_size);
    VERL_CHECK(compressed <= size - pos, "parquet", where, ": page of ", compressed, " bytes overruns the column chunk (",
               size - pos, " bytes left)");
    VERL_CHECK(uncompressed <= kMaxPageBytes, "parquet", where, ": page claims ", uncompressed,
               " uncompressed bytes (limit ", kMaxPageBytes, ")");
    const uint8_t* page = chunk + pos;
    pos += compressed;

    if (header.type == PageType::kDictionaryPage) {
      VERL_CHECK(header.dictionary_page.has_value(), "parquet", where, ": dictionary page without its header");
      VERL_CHECK(!has_dictionary, "parquet", where, ": second dictionary page in one column chunk");
      const DictionaryPageHeader& d = *header.dictionary_page;
      VERL_CHECK(d.encoding == Encoding::kPlain || d.encoding == Encoding::kPlainDictionary, "parquet", where,
                 ": dictionary page encoding ", encoding_name(d.encoding), " (expected PLAIN)");
      decompress(meta.codec, page, compressed, uncompressed, buffer, where);
      out.uncompressed_bytes += uncompressed;
      VERL_CHECK(d.num_values >= 0 && static_cast<size_t>(d.num_values) <= uncompressed * 8 + 1, "parquet", where,
                 ": dictionary page claims ", d.num_values, " values in ", uncompressed, " bytes");
      dictionary.reserve(static_cast<size_t>(d.num_values));
      leaf.plain(buffer.data(), buffer.size(), static_cast<size_t>(d.num_values), dictionary);
      has_dictionary = true;
      continue;
    }
    if (header.type == PageType::kIndexPage) continue;

    size_t num_values = 0;
    Encoding value_encoding;
    const uint8_t* values_data = nullptr;
    size_t values_size = 0;
    size_t level_start = out.num_levels;
    if (header.type == PageType::kDataPage) {
      VERL_CHECK(header.data_page.has_value(), "parquet", where, ": data page without its header");
      const DataPageHeader& d = *header.data_page;
      VERL_CHECK(d.num_values >= 0 && static_cast<size_t>(d.num_values) <= kMaxPageValues, "parquet", where,
                 ": data page claims ", d.num_values, " values");
      num_values = static_cast<size_t>(d.num_values);
      value_encoding = d.encoding;
      decompress(meta.codec, page, compressed, uncompressed, buffer, where);
      out.uncompressed_bytes += uncompressed;
      size_t p = 0;
      auto read_v1_levels = [&](Encoding enc, int max_level, std::vector<uint16_t>& levels) {
        if (max_level == 0) return;
        if (enc == Encoding::kRle) {
          VERL_CHECK(buffer.size() - p >= 4, "parquet", where, ": data page too short for its level length prefix");
          uint32_t len = read_u32_le(buffer.data() + p);
          p += 4;
          VERL_CHECK(len <= buffer.size() - p, "parquet", where, ": level data of ", len, " bytes overruns the page");
          decode_levels(enc, buffer.data() + p, len, max_level, num_values, levels, where);
          p += len;
        } else {
          size_t len = (num_values * static_cast<size_t>(bit_width_for(static_cast<uint64_t>(max_level))) + 7) / 8;
          VERL_CHECK(len <= buffer.size() - p, "parquet", where, ": level data overruns the page");
          decode_levels(enc, buffer.data() + p, len, max_level, num_values, levels, where);
          p += len;
        }
      };
      read_v1_levels(d.repetition_level_encoding, max_rep, out.rep);
      read_v1_levels(d.definition_level_encoding, max_def, out.def);
      values_data = buffer.data() + p;
      values_size = buffer.size() - p;
    } else {
      VERL_CHECK(header.data_page_v2.has_value(), "parquet", where, ": data page v2 without its header");
      const DataPageHeaderV2& d = *header.data_page_v2;
      VERL_CHECK(d.num_values >= 0 && static_cast<size_t>(d.num_values) <= kMaxPageValues, "parquet", where,
                 ": data page claims ", d.num_values, " values");
      num_values = static_cast<size_t>(d.num_values);
      value_encoding = d.encoding;
      VERL_CHECK(d.repetition_levels_byte_length >= 0 && d.definition_levels_byte_length >= 0 &&
                     static_cast<size_t>(d.repetition_levels_byte_length) +
                             static_cast<size_t>(d.definition_levels_byte_length) <=
                         std::min(compressed, uncompressed),
                 "parquet", where, ": data page v2 level lengths exceed the page");
      size_t rep_len = static_cast<size_t>(d.repetition_levels_byte_length);
      size_t def_len = static_cast<size_t>(d.definition_levels_byte_length);
      if (max_rep > 0) decode_levels(Encoding::kRle, page, rep_len, max_rep, num_values, out.rep, where);
      if (max_def > 0) decode_levels(Encoding::kRle, page + rep_len, def_len, max_def, num_values, out.def, where);
      size_t levels = rep_len + def_len;
      if (d.is_compressed && meta.codec != Codec::kUncompressed) {
        decompress(meta.codec, page + levels, compressed - levels, uncompressed - levels, buffer, where);
      } else {
        VERL_CHECK(compressed == uncompressed, "parquet", where, ": uncompressed v2 page sizes differ (", compressed,
                   " vs ", uncompressed, ")");
        buffer.assign(page + levels, page + compressed);
      }
      out.uncompressed_bytes += uncompressed;
      values_data = buffer.data();
      values_size = buffer.size();
    }
    VERL_CHECK(num_values <= total - out.num_levels, "parquet", where, ": pages hold more values than the column chunk's ",
               total);
    size_t defined = num_values;
    if (max_def > 0) {
      defined = 0;
      for (size_t i = level_start; i < level_start + num_values; ++i) defined += out.def[i] == max_def;
    }
    if (max_rep > 0) {
      VERL_CHECK(num_values == 0 || level_start > 0 || out.rep[level_start] == 0, "parquet", where,
                 ": column chunk starts inside a record (repetition level ", out.rep[level_start], ")");
    }
    decode_values(leaf, value_encoding, values_data, values_size, defined, has_dictionary ? &dictionary : nullptr,
                  out.values, where);
    out.num_levels += num_values;
  }
}

}  // namespace verl::io::parquet
