#include "verl/io/parquet/writer.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <limits>
#include <string_view>
#include <unordered_map>

#include "verl/common/error.h"
#include "verl/common/logging.h"
#include "verl/io/parquet/compression.h"
#include "verl/io/parquet/encodings.h"

namespace verl::io::parquet {

// ---- schema inference ------------------------------------------------------------------------------

namespace {

struct Inferred {
  enum Kind { kUnknown, kBool, kInt, kDouble, kString, kList, kStruct } kind = kUnknown;
  std::unique_ptr<Inferred> element;
  std::vector<std::pair<std::string, Inferred>> fields;
};

const char* inferred_name(Inferred::Kind k) {
  static const char* names[] = {"null", "bool", "int", "float", "string", "list", "struct"};
  return names[k];
}

void merge(Inferred& into, const Value& v, const std::string& path) {
  Inferred::Kind k;
  switch (v.kind()) {
    case Value::Kind::kNull: return;
    case Value::Kind::kBool: k = Inferred::kBool; break;
    case Value::Kind::kInt: k = Inferred::kInt; break;
    case Value::Kind::kDouble: k = Inferred::kDouble; break;
    case Value::Kind::kString: k = Inferred::kString; break;
    case Value::Kind::kList: k = Inferred::kList; break;
    default: k = Inferred::kStruct; break;
  }
  if (into.kind == Inferred::kUnknown) {
    into.kind = k;
  } else if ((into.kind == Inferred::kInt && k == Inferred::kDouble) ||
             (into.kind == Inferred::kDouble && k == Inferred::kInt)) {
    into.kind = Inferred::kDouble;
  } else {
    VERL_CHECK(into.kind == k, "parquet", "field '", path, "' holds both ", inferred_name(into.kind), " and ",
               inferred_name(k), " values; give a schema or make them agree");
  }
  if (k == Inferred::kList) {
    if (!into.element) into.element = std::make_unique<Inferred>();
    for (const auto& item : v.as_list()) merge(*into.element, item, path + "[]");
  } else if (k == Inferred::kStruct) {
    for (const auto& f : v.as_struct()) {
      Inferred* slot = nullptr;
      for (auto& existing : into.fields) {
        if (existing.first == f.first) slot = &existing.second;
      }
      if (slot == nullptr) {
        into.fields.emplace_back(f.first, Inferred());
        slot = &into.fields.back().second;
      }
      merge(*slot, f.second, path.empty() ? f.first : path + "." + f.first);
    }
  }
}

WriteField to_field(const std::string& name, const Inferred& t) {
  WriteField f;
  f.name = name;
  switch (t.kind) {
    case Inferred::kUnknown:
    case Inferred::kString: f.kind = FieldKind::kString; break;
    case Inferred::kBool: f.kind = FieldKind::kBool; break;
    case Inferred::kInt: f.kind = FieldKind::kInt64; break;
    case Inferred::kDouble: f.kind = FieldKind::kDouble; break;
    case Inferred::kList:
      f.kind = FieldKind::kList;
      if (t.element) {
        f.children.push_back(to_field("element", *t.element));
      } else {
        f.children.push_back(to_field("element", Inferred()));
      }
      break;
    case Inferred::kStruct:
      f.kind = FieldKind::kStruct;
      for (const auto& [child_name, child] : t.fields) f.children.push_back(to_field(child_name, child));
      break;
  }
  return f;
}

}  // namespace

std::vector<WriteField> infer_schema(const std::vector<Value>& rows) {
  Inferred root;
  root.kind = Inferred::kStruct;
  for (size_t i = 0; i < rows.size(); ++i) {
    VERL_CHECK(rows[i].is_struct(), "parquet", "row ", i, " is a ", kind_name(rows[i].kind()),
               ", expected an object");
    merge(root, rows[i], "");
  }
  std::vector<WriteField> fields;
  for (const auto& [name, t] : root.fields) fields.push_back(to_field(name, t));
  return fields;
}

// ---- writer ----------------------------------------------------------------------------------------

namespace {

// A node of the parquet-level schema derived from the WriteFields (lists expanded to 3 levels).
struct PNode {
  std::string name;
  Repetition repetition = Repetition::kOptional;
  const WriteField* field = nullptr;  // the WriteField this node stands for (null for the `list` level)
  bool is_list_wrapper = false;       // the LIST-annotated group
  std::vector<PNode> children;
  int column = -1;  // leaves
  int max_def = 0, max_rep = 0;
  bool is_leaf() const { return column >= 0; }
};

struct ColumnBuffer {
  std::vector<std::string> path;
  const WriteField* field = nullptr;
  PhysicalType type = PhysicalType::kByteArray;
  int max_def = 0, max_rep = 0;
  std::vector<uint16_t> def, rep;
  std::vector<int64_t> ints;
  std::vector<double> doubles;
  std::vector<uint8_t> bools;
  std::vector<std::string> strings;
  size_t value_bytes = 0;
  size_t num_values() const {
    return ints.size() + doubles.size() + bools.size() + strings.size();
  }
  void clear() {
    def.clear();
    rep.clear();
    ints.clear();
    doubles.clear();
    bools.clear();
    strings.clear();
    value_bytes = 0;
  }
};

PhysicalType physical_of(const WriteField& f) {
  switch (f.kind) {
    case FieldKind::kBool: return PhysicalType::kBoolean;
    case FieldKind::kInt32: return PhysicalType::kInt32;
    case FieldKind::kInt64: return PhysicalType::kInt64;
    case FieldKind::kFloat: return PhysicalType::kFloat;
    case FieldKind::kDouble: return PhysicalType::kDouble;
    case FieldKind::kFixed: return PhysicalType::kFixedLenByteArray;
    default: return PhysicalType::kByteArray;
  }
}

void append_le(std::vector<uint8_t>& out, const void* p, size_t n) {
  const uint8_t* b = static_cast<const uint8_t*>(p);
  out.insert(out.end(), b, b + n);
}

}  // namespace

struct Writer::Impl {
  std::string path;
  std::ofstream out;
  uint64_t offset = 0;
  std::vector<WriteField> schema;
  WriterOptions options;
  std::vector<PNode> top;
  std::vector<ColumnBuffer> columns;
  FileMetaData meta;
  size_t rows_in_group = 0;
  int64_t rows_total = 0;
  bool closed = false;

  void build(PNode& node, const WriteField& f, int def, int rep, std::vector<std::string> path_names) {
    node.name = f.name;
    node.field = &f;
    node.repetition = f.nullable ? Repetition::kOptional : Repetition::kRequired;
    node.max_def = def + (f.nullable ? 1 : 0);
    node.max_rep = rep;
    path_names.push_back(f.name);
    if (f.kind == FieldKind::kList) {
      VERL_CHECK(f.children.size() == 1, "parquet", path, ": list field '", f.name, "' needs exactly one element type");
      node.is_list_wrapper = true;
      PNode list;
      list.name = "list";
      list.repetition = Repetition::kRepeated;
      list.max_def = node.max_def + 1;
      list.max_rep = rep + 1;
      path_names.push_back("list");
      PNode element;
      build(element, f.children[0], list.max_def, list.max_rep, path_names);
      element.name = "element";
      list.children.push_back(std::move(element));
      node.children.push_back(std::move(list));
    } else if (f.kind == FieldKind::kStruct) {
      for (const auto& child : f.children) {
        PNode c;
        build(c, child, node.max_def, rep, path_names);
        node.children.push_back(std::move(c));
      }
    } else {
      VERL_CHECK(f.kind != FieldKind::kFixed || f.fixed_length > 0, "parquet", path, ": fixed field '", f.name,
                 "' needs a positive fixed_length");
      node.column = static_cast<int>(columns.size());
      ColumnBuffer col;
      col.path = path_names;
      col.field = &f;
      col.type = physical_of(f);
      col.max_def = node.max_def;
      col.max_rep = node.max_rep;
      columns.push_back(std::move(col));
    }
  }

  void emit_null(const PNode& node, int r, int d) {
    if (node.is_leaf()) {
      ColumnBuffer& col = columns[static_cast<size_t>(node.column)];
      if (col.max_rep > 0) col.rep.push_back(static_cast<uint16_t>(r));
      if (col.max_def > 0) col.def.push_back(static_cast<uint16_t>(d));
      return;
    }
    for (const auto& c : node.children) emit_null(c, r, d);
  }

  void push_value(ColumnBuffer& col, const Value& v, const std::string& where) {
    const WriteField& f = *col.field;
    switch (f.kind) {
      case FieldKind::kBool:
        VERL_CHECK(v.is_bool(), "parquet", where, ": expected a bool, got ", kind_name(v.kind()));
        col.bools.push_back(v.as_bool());
        col.value_bytes += 1;
        return;
      case FieldKind::kInt32:
        VERL_CHECK(v.is_int() && v.as_int() >= INT32_MIN && v.as_int() <= INT32_MAX, "parquet", where,
                   ": expected a 32-bit integer, got ", to_json(v));
        col.ints.push_back(v.as_int());
        col.value_bytes += 4;
        return;
      case FieldKind::kInt64:
        VERL_CHECK(v.is_int(), "parquet", where, ": expected an integer, got ", kind_name(v.kind()));
        col.ints.push_back(v.as_int());
        col.value_bytes += 8;
        return;
      case FieldKind::kFloat:
      case FieldKind::kDouble:
        VERL_CHECK(v.is_int() || v.is_double(), "parquet", where, ": expected a number, got ", kind_name(v.kind()));
        col.doubles.push_back(v.as_double());
        col.value_bytes += f.kind == FieldKind::kFloat ? 4 : 8;
        return;
      case FieldKind::kFixed:
        VERL_CHECK(v.is_string() && v.as_string().size() == static_cast<size_t>(f.fixed_length), "parquet", where,
                   ": expected a string of ", f.fixed_length, " bytes");
        col.strings.push_back(v.as_string());
        col.value_bytes += v.as_string().size();
        return;
      default:
        VERL_CHECK(v.is_string(), "parquet", where, ": expected a string, got ", kind_name(v.kind()));
        col.strings.push_back(v.as_string());
        col.value_bytes += 4 + v.as_string().size();
        return;
    }
  }

  void shred(const PNode& node, const Value& v, int r, int d, const std::string& where) {
    if (v.is_null()) {
      VERL_CHECK(node.repetition != Repetition::kRequired, "parquet", where, ": null in required field '", node.name,
                 "'");
      emit_null(node, r, d);
      return;
    }
    if (node.repetition == Repetition::kOptional) ++d;
    if (node.is_leaf()) {
      ColumnBuffer& col = columns[static_cast<size_t>(node.column)];
      push_value(col, v, where);
      if (col.max_rep > 0) col.rep.push_back(static_cast<uint16_t>(r));
      if (col.max_def > 0) col.def.push_back(static_cast<uint16_t>(d));
      return;
    }
    if (node.is_list_wrapper) {
      VERL_CHECK(v.is_list(), "parquet", where, ": expected a list, got ", kind_name(v.kind()));
      const PNode& list = node.children[0];
      const List& items = v.as_list();
      if (items.empty()) {
        emit_null(list, r, d);
        return;
      }
      for (size_t i = 0; i < items.size(); ++i) {
        shred(list.children[0], items[i], i == 0 ? r : list.max_rep, d + 1, where);
      }
      return;
    }
    VERL_CHECK(v.is_struct(), "parquet", where, ": expected an object, got ", kind_name(v.kind()));
    check_extra_fields(node.children, v, where);
    static const Value kNull;
    for (const auto& child : node.children) {
      const Value* cv = v.find(child.name);
      shred(child, cv ? *cv : kNull, r, d, where + "." + child.name);
    }
  }

  void check_extra_fields(const std::vector<PNode>& children, const Value& v, const std::string& where) {
    for (const auto& f : v.as_struct()) {
      bool known = false;
      for (const auto& c : children) known = known || c.name == f.first;
      VERL_CHECK(known, "parquet", where, ": field '", f.first, "' is not in the schema");
    }
  }

  // ---- encoding and output ----

  void write_bytes(const uint8_t* p, size_t n) {
    out.write(reinterpret_cast<const char*>(p), static_cast<std::streamsize>(n));
    VERL_CHECK(out.good(), "parquet", path, ": write failed");
    offset += n;
  }

  void plain_encode(const ColumnBuffer& col, size_t begin, size_t end, std::vector<uint8_t>& out_bytes) const {
    switch (col.type) {
      case PhysicalType::kBoolean: {
        size_t start = out_bytes.size();
        out_bytes.resize(start + (end - begin + 7) / 8, 0);
        for (size_t i = begin; i < end; ++i) {
          if (col.bools[i]) out_bytes[start + (i - begin) / 8] |= static_cast<uint8_t>(1u << ((i - begin) % 8));
        }
        return;
      }
      case PhysicalType::kInt32:
        for (size_t i = begin; i < end; ++i) {
          int32_t v = static_cast<int32_t>(col.ints[i]);
          append_le(out_bytes, &v, 4);
        }
        return;
      case PhysicalType::kInt64:
        for (size_t i = begin; i < end; ++i) append_le(out_bytes, &col.ints[i], 8);
        return;
      case PhysicalType::kFloat:
        for (size_t i = begin; i < end; ++i) {
          float v = static_cast<float>(col.doubles[i]);
          append_le(out_bytes, &v, 4);
        }
        return;
      case PhysicalType::kDouble:
        for (size_t i = begin; i < end; ++i) append_le(out_bytes, &col.doubles[i], 8);
        return;
      case PhysicalType::kFixedLenByteArray:
        for (size_t i = begin; i < end; ++i) append_le(out_bytes, col.strings[i].data(), col.strings[i].size());
        return;
      default:
        for (size_t i = begin; i < end; ++i) {
          uint32_t len = static_cast<uint32_t>(col.strings[i].size());
          append_le(out_bytes, &len, 4);
          append_le(out_bytes, col.strings[i].data(), col.strings[i].size());
        }
        return;
    }
  }

  // Writes one page (header + payload); returns {compressed total, uncompressed total} including the header.
  std::pair<size_t, size_t> write_page(PageHeader header, const std::vector<uint8_t>& uncompressed_levels,
                                       const std::vector<uint8_t>& body) {
    std::vector<uint8_t> payload = uncompressed_levels;
    std::vector<uint8_t> compressed_body = compress(options.codec, body.data(), body.size());
    payload.insert(payload.end(), compressed_body.begin(), compressed_body.end());
    header.uncompressed_page_size = static_cast<int32_t>(uncompressed_levels.size() + body.size());
    header.compressed_page_size = static_cast<int32_t>(payload.size());
    std::vector<uint8_t> h = serialize_page_header(header);
    write_bytes(h.data(), h.size());
    write_bytes(payload.data(), payload.size());
    return {h.size() + payload.size(), h.size() + static_cast<size_t>(header.uncompressed_page_size)};
  }

  void encode_levels(const std::vector<uint16_t>& levels, size_t begin, size_t end, int max_level, bool prefix,
                     std::vector<uint8_t>& out_bytes) {
    std::vector<uint32_t> tmp(levels.begin() + static_cast<std::ptrdiff_t>(begin),
                              levels.begin() + static_cast<std::ptrdiff_t>(end));
    std::vector<uint8_t> encoded;
    encode_rle_hybrid(tmp.data(), tmp.size(), bit_width_for(static_cast<uint64_t>(max_level)), encoded);
    if (prefix) {
      uint32_t len = static_cast<uint32_t>(encoded.size());
      append_le(out_bytes, &len, 4);
    }
    out_bytes.insert(out_bytes.end(), encoded.begin(), encoded.end());
  }

  ColumnChunk write_column(ColumnBuffer& col) {
    ColumnChunk chunk;
    ColumnMetaData& m = chunk.meta_data;
    m.type = col.type;
    m.path_in_schema = col.path;
    m.codec = options.codec;
    const size_t num_levels = col.max_def > 0 ? col.def.size() : (col.max_rep > 0 ? col.rep.size() : col.num_values());
    m.num_values = static_cast<int64_t>(num_levels);
    size_t compressed_total = 0, uncompressed_total = 0;

    // Dictionary for strings: ids per value, distinct values in first-seen order.
    bool use_dictionary = options.dictionary && col.type == PhysicalType::kByteArray && !col.strings.empty();
    std::vector<uint32_t> ids;
    std::vector<const std::string*> dict_values;  // point into col.strings
    std::unordered_map<std::string_view, uint32_t> index;
    if (use_dictionary) {
      size_t dict_bytes = 0;
      ids.reserve(col.strings.size());
      for (const auto& s : col.strings) {
        auto it = index.find(s);
        if (it == index.end()) {
          it = index.emplace(std::string_view(s), static_cast<uint32_t>(dict_values.size())).first;
          dict_values.push_back(&s);
          dict_bytes += 4 + s.size();
        }
        ids.push_back(it->second);
      }
      // A dictionary that saves nothing (mostly distinct long values) or grows past 8 MiB is not worth it.
      if (dict_bytes > (size_t{8} << 20) || dict_values.size() * 2 > col.strings.size() + 16) use_dictionary = false;
    }
    Encoding value_encoding = Encoding::kPlain;
    if (use_dictionary) {
      value_encoding = Encoding::kRleDictionary;
      std::vector<uint8_t> body;
      for (const std::string* s : dict_values) {
        uint32_t len = static_cast<uint32_t>(s->size());
        append_le(body, &len, 4);
        append_le(body, s->data(), s->size());
      }
      PageHeader h;
      h.type = PageType::kDictionaryPage;
      h.dictionary_page = DictionaryPageHeader{static_cast<int32_t>(dict_values.size()), Encoding::kPlain};
      m.dictionary_page_offset = static_cast<int64_t>(offset);
      auto sizes = write_page(h, {}, body);
      compressed_total += sizes.first;
      uncompressed_total += sizes.second;
    } else if ((col.type == PhysicalType::kInt32 || col.type == PhysicalType::kInt64) &&
               options.int_encoding == Encoding::kDeltaBinaryPacked) {
      value_encoding = Encoding::kDeltaBinaryPacked;
    } else if (col.type == PhysicalType::kByteArray && options.byte_array_encoding != Encoding::kPlain) {
      value_encoding = options.byte_array_encoding;
    }
    m.data_page_offset = static_cast<int64_t>(offset);

    // Data pages, cut at record boundaries once a page holds page_bytes of values.
    size_t level = 0, value = 0;
    const size_t avg_value_bytes = col.num_values() ? std::max<size_t>(1, col.value_bytes / col.num_values()) : 1;
    while (level < num_levels) {
      size_t end = level, value_end = value, rows = 0;
      while (end < num_levels) {
        size_t r = col.max_rep > 0 ? col.rep[end] : 0;
        if (r == 0) {
          if (end > level && (value_end - value) * avg_value_bytes >= options.page_bytes) break;
          ++rows;
        }
        bool defined = col.max_def == 0 || col.def[end] == col.max_def;
        value_end += defined ? 1 : 0;
        ++end;
      }
      std::vector<uint8_t> levels_bytes, body;
      if (options.data_page_v2) {
        std::vector<uint8_t> rep_bytes, def_bytes;
        if (col.max_rep > 0) encode_levels(col.rep, level, end, col.max_rep, false, rep_bytes);
        if (col.max_def > 0) encode_levels(col.def, level, end, col.max_def, false, def_bytes);
        levels_bytes = rep_bytes;
        levels_bytes.insert(levels_bytes.end(), def_bytes.begin(), def_bytes.end());
        encode_values(col, value_encoding, ids, value, value_end, dict_values.size(), body);
        PageHeader h;
        h.type = PageType::kDataPageV2;
        DataPageHeaderV2 d;
        d.num_values = static_cast<int32_t>(end - level);
        d.num_nulls = static_cast<int32_t>((end - level) - (value_end - value));
        d.num_rows = static_cast<int32_t>(rows);
        d.encoding = value_encoding;
        d.repetition_levels_byte_length = static_cast<int32_t>(rep_bytes.size());
        d.definition_levels_byte_length = static_cast<int32_t>(def_bytes.size());
        d.is_compressed = options.codec != Codec::kUncompressed;
        h.data_page_v2 = d;
        auto sizes = write_page(h, levels_bytes, body);
        compressed_total += sizes.first;
        uncompressed_total += sizes.second;
      } else {
        if (col.max_rep > 0) encode_levels(col.rep, level, end, col.max_rep, true, body);
        if (col.max_def > 0) encode_levels(col.def, level, end, col.max_def, true, body);
        encode_values(col, value_encoding, ids, value, value_end, dict_values.size(), body);
        PageHeader h;
        h.type = PageType::kDataPage;
        h.data_page = DataPageHeader{static_cast<int32_t>(end - level), value_encoding, Encoding::kRle, Encoding::kRle};
        auto sizes = write_page(h, {}, body);
        compressed_total += sizes.first;
        uncompressed_total += sizes.second;
      }
      level = end;
      value = value_end;
    }
    m.encodings = {Encoding::kRle, value_encoding};
    if (use_dictionary) m.encodings.push_back(Encoding::kPlain);
    m.total_compressed_size = static_cast<int64_t>(compressed_total);
    m.total_uncompressed_size = static_cast<int64_t>(uncompressed_total);
    chunk.file_offset = 0;
    return chunk;
  }

  void encode_values(const ColumnBuffer& col, Encoding encoding, const std::vector<uint32_t>& ids, size_t begin,
                     size_t end, size_t dict_size, std::vector<uint8_t>& out_bytes) {
    switch (encoding) {
      case Encoding::kRleDictionary: {
        int width = bit_width_for(dict_size > 0 ? dict_size - 1 : 0);
        out_bytes.push_back(static_cast<uint8_t>(width));
        encode_rle_hybrid(ids.data() + begin, end - begin, width, out_bytes);
        return;
      }
      case Encoding::kDeltaBinaryPacked:
        encode_delta_binary_packed(col.ints.data() + begin, end - begin, out_bytes, col.type == PhysicalType::kInt32);
        return;
      case Encoding::kDeltaLengthByteArray:
        encode_delta_length_byte_array(std::vector<std::string>(col.strings.begin() + static_cast<std::ptrdiff_t>(begin),
                                                                col.strings.begin() + static_cast<std::ptrdiff_t>(end)),
                                       out_bytes);
        return;
      case Encoding::kDeltaByteArray:
        encode_delta_byte_array(std::vector<std::string>(col.strings.begin() + static_cast<std::ptrdiff_t>(begin),
                                                         col.strings.begin() + static_cast<std::ptrdiff_t>(end)),
                                out_bytes);
        return;
      default:
        plain_encode(col, begin, end, out_bytes);
        return;
    }
  }

  void flush_row_group() {
    if (rows_in_group == 0) return;
    RowGroup group;
    group.num_rows = static_cast<int64_t>(rows_in_group);
    for (auto& col : columns) {
      group.columns.push_back(write_column(col));
      group.total_byte_size += group.columns.back().meta_data.total_uncompressed_size;
      col.clear();
    }
    meta.row_groups.push_back(std::move(group));
    rows_in_group = 0;
  }

  void schema_elements(const PNode& node, std::vector<SchemaElement>& out_elements) {
    SchemaElement e;
    e.name = node.name;
    e.repetition = node.repetition;
    if (node.is_leaf()) {
      const WriteField& f = *node.field;
      e.type = physical_of(f);
      if (f.kind == FieldKind::kFixed) e.type_length = f.fixed_length;
      if (f.kind == FieldKind::kString) {
        e.converted_type = ConvertedType::kUtf8;
        e.logical_type.kind = LogicalType::kString;
      }
      out_elements.push_back(e);
      return;
    }
    e.num_children = static_cast<int32_t>(node.children.size());
    if (node.is_list_wrapper) {
      e.converted_type = ConvertedType::kList;
      e.logical_type.kind = LogicalType::kList;
    }
    out_elements.push_back(e);
    for (const auto& c : node.children) schema_elements(c, out_elements);
  }
};

Writer::Writer(const std::string& path, std::vector<WriteField> schema, WriterOptions options)
    : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  s.path = path;
  s.schema = std::move(schema);
  s.options = options;
  VERL_CHECK(options.row_group_rows > 0, "parquet", path, ": row_group_rows must be positive");
  VERL_CHECK(options.codec == Codec::kUncompressed || options.codec == Codec::kSnappy || options.codec == Codec::kGzip ||
                 options.codec == Codec::kZstd,
             "parquet", path, ": cannot write codec ", codec_name(options.codec));
  for (const auto& f : s.schema) {
    PNode node;
    s.build(node, f, 0, 0, {});
    s.top.push_back(std::move(node));
  }
  // Column paths name the list element "element" whatever the WriteField calls it.
  std::function<void(const PNode&, std::vector<std::string>)> fix_paths = [&](const PNode& n,
                                                                              std::vector<std::string> names) {
    names.push_back(n.name);
    if (n.is_leaf()) {
      s.columns[static_cast<size_t>(n.column)].path = names;
      return;
    }
    for (const auto& c : n.children) fix_paths(c, names);
  };
  for (const auto& n : s.top) fix_paths(n, {});
  SchemaElement root;
  root.name = "schema";
  root.num_children = static_cast<int32_t>(s.top.size());
  s.meta.schema.push_back(root);
  for (const auto& n : s.top) s.schema_elements(n, s.meta.schema);
  s.meta.version = 1;
  s.meta.created_by = "verl.cpp parquet writer";
  s.out.open(path, std::ios::binary | std::ios::trunc);
  VERL_CHECK(s.out.is_open(), "parquet", path, ": cannot open for writing");
  s.write_bytes(reinterpret_cast<const uint8_t*>("PAR1"), 4);
}

Writer::~Writer() {
  if (impl_ && !impl_->closed) {
    try {
      close();
    } catch (const std::exception& e) {
      VERL_LOG(Error, "parquet") << "closing " << impl_->path << " failed: " << e.what();
    }
  }
}

void Writer::write_row(const Value& row) {
  Impl& s = *impl_;
  VERL_CHECK(!s.closed, "parquet", s.path, ": write_row after close");
  const std::string where = str_cat(s.path, ": row ", s.rows_total);
  VERL_CHECK(row.is_struct(), "parquet", where, ": expected an object, got ", kind_name(row.kind()));
  s.check_extra_fields(s.top, row, where);
  static const Value kNull;
  for (const auto& node : s.top) {
    const Value* v = row.find(node.name);
    s.shred(node, v ? *v : kNull, 0, 0, where + ": " + node.name);
  }
  ++s.rows_in_group;
  ++s.rows_total;
  if (s.rows_in_group >= s.options.row_group_rows) s.flush_row_group();
}

void Writer::close() {
  Impl& s = *impl_;
  if (s.closed) return;
  s.closed = true;
  s.flush_row_group();
  s.meta.num_rows = s.rows_total;
  std::vector<uint8_t> footer = serialize_file_metadata(s.meta);
  s.write_bytes(footer.data(), footer.size());
  uint32_t len = static_cast<uint32_t>(footer.size());
  s.write_bytes(reinterpret_cast<const uint8_t*>(&len), 4);
  s.write_bytes(reinterpret_cast<const uint8_t*>("PAR1"), 4);
  s.out.close();
  VERL_CHECK(!s.out.fail(), "parquet", s.path, ": close failed");
}

void write_parquet(const std::string& path, const std::vector<Value>& rows, const WriterOptions& options) {
  write_parquet(path, rows, infer_schema(rows), options);
}

void write_parquet(const std::string& path, const std::vector<Value>& rows, std::vector<WriteField> schema,
                   const WriterOptions& options) {
  Writer writer(path, std::move(schema), options);
  for (const auto& row : rows) writer.write_row(row);
  writer.close();
}

}  // namespace verl::io::parquet
