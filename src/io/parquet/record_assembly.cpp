#include "verl/io/parquet/record_assembly.h"

#include "verl/common/error.h"

namespace verl::io::parquet {

namespace {

Value& field_of(Value& parent, const std::string& name) {
  Struct& fields = parent.as_struct();
  for (auto& f : fields) {
    if (f.first == name) return f.second;
  }
  fields.emplace_back(name, Value());
  return fields.back().second;
}

// Stage 1: every column's (rep, def, value) triples into a raw tree that mirrors the parquet schema: groups are
// structs, repeated fields lists of their instances, absent optionals null.
void assemble_column(const Schema& schema, size_t column, ColumnData& data, std::vector<Value>& rows, size_t num_rows,
                     const std::string& where_file) {
  const std::vector<int> path = schema.column_path(column);
  const SchemaNode& leaf = schema.node(path.back());
  const std::string where = where_file + ": column '" + leaf.element.name + "'";
  std::vector<size_t> index(path.size(), 0);  // current element of each repeated node on the path
  size_t value_i = 0;
  size_t row = static_cast<size_t>(-1);
  for (size_t i = 0; i < data.num_levels; ++i) {
    const int r = data.rep.empty() ? 0 : data.rep[i];
    const int d = data.def.empty() ? leaf.max_def : data.def[i];
    if (r == 0) {
      ++row;
      VERL_CHECK(row < num_rows, "parquet", where, ": more records than the row group's ", num_rows, " rows");
      if (row == rows.size()) rows.emplace_back(Struct{});
      for (auto& k : index) k = 0;
    } else {
      VERL_CHECK(row != static_cast<size_t>(-1), "parquet", where, ": first value continues a record");
      for (size_t k = 0; k < path.size(); ++k) {
        const SchemaNode& n = schema.node(path[k]);
        if (!n.is_repeated()) continue;
        if (n.max_rep == r) ++index[k];
        else if (n.max_rep > r) index[k] = 0;
      }
    }
    Value* current = &rows[row];
    for (size_t k = 0; k < path.size(); ++k) {
      const SchemaNode& n = schema.node(path[k]);
      Value& field = field_of(*current, n.element.name);
      if (n.is_repeated()) {
        if (field.is_null()) field = Value(List{});
        VERL_CHECK(field.is_list(), "parquet", where, ": levels disagree with other columns at row ", row);
        if (d < n.max_def) break;  // the list is empty
        List& list = field.as_list();
        VERL_CHECK(index[k] <= list.size(), "parquet", where, ": repetition levels skip an element at row ", row);
        if (index[k] == list.size()) list.emplace_back(n.is_leaf() ? Value() : Value(Struct{}));
        current = &list[index[k]];
      } else {
        if (d < n.max_def) break;  // absent optional: stays null
        current = &field;
        if (!n.is_leaf() && current->is_null()) *current = Value(Struct{});
      }
      if (n.is_leaf()) {
        VERL_CHECK(value_i < data.values.size(), "parquet", where, ": fewer values than definition levels say");
        *current = std::move(data.values[value_i++]);
      } else {
        VERL_CHECK(current->is_struct(), "parquet", where, ": levels disagree with other columns at row ", row);
      }
    }
  }
  VERL_CHECK(value_i == data.values.size(), "parquet", where, ": ", data.values.size() - value_i,
             " values left over after the levels");
  VERL_CHECK(row + 1 == num_rows, "parquet", where, ": column holds ", row + 1, " rows, the row group ", num_rows);
}

bool is_list_group(const SchemaNode& n) {
  return !n.is_leaf() && (n.element.logical_type.kind == LogicalType::kList ||
                          n.element.converted_type == ConvertedType::kList);
}

bool is_map_group(const SchemaNode& n) {
  return !n.is_leaf() && (n.element.logical_type.kind == LogicalType::kMap ||
                          n.element.converted_type == ConvertedType::kMap ||
                          n.element.converted_type == ConvertedType::kMapKeyValue);
}

Value convert_field(const Schema& schema, int node, Value& raw);

// One instance of `node` (a repeated node's element, or a non-repeated node's value).
Value convert_single(const Schema& schema, int node_index, Value& raw) {
  const SchemaNode& n = schema.node(node_index);
  if (raw.is_null() || n.is_leaf()) return std::move(raw);
  if (is_list_group(n) && n.children.size() == 1 && schema.node(n.children[0]).is_repeated()) {
    const SchemaNode& repeated = schema.node(n.children[0]);
    Value* items = raw.find(repeated.element.name);
    List out;
    if (items == nullptr || items->is_null()) return Value(std::move(out));
    bool unwrap = !repeated.is_leaf() && repeated.children.size() == 1 && repeated.element.name != "array" &&
                  repeated.element.name != n.element.name + "_tuple";
    out.reserve(items->as_list().size());
    for (Value& item : items->as_list()) {
      if (unwrap) {
        const SchemaNode& element = schema.node(repeated.children[0]);
        Value* inner = item.find(element.element.name);
        Value missing;
        out.push_back(convert_field(schema, repeated.children[0], inner ? *inner : missing));
      } else {
        out.push_back(convert_single(schema, n.children[0], item));
      }
    }
    return Value(std::move(out));
  }
  if (is_map_group(n) && n.children.size() == 1 && schema.node(n.children[0]).is_repeated() &&
      !schema.node(n.children[0]).is_leaf() && schema.node(n.children[0]).children.size() == 2) {
    const SchemaNode& key_value = schema.node(n.children[0]);
    Value* entries = raw.find(key_value.element.name);
    Struct out;
    if (entries == nullptr || entries->is_null()) return Value(std::move(out));
    for (Value& entry : entries->as_list()) {
      Value* key = entry.find(schema.node(key_value.children[0]).element.name);
      Value* value = entry.find(schema.node(key_value.children[1]).element.name);
      Value missing;
      std::string key_text = key == nullptr ? "null" : key->is_string() ? key->as_string() : to_json(*key);
      out.emplace_back(key_text, value ? convert_field(schema, key_value.children[1], *value) : Value());
    }
    return Value(std::move(out));
  }
  Struct out;
  for (int child : n.children) {
    Value* field = raw.find(schema.node(child).element.name);
    if (field == nullptr) continue;  // not projected
    out.emplace_back(schema.node(child).element.name, convert_field(schema, child, *field));
  }
  return Value(std::move(out));
}

Value convert_field(const Schema& schema, int node_index, Value& raw) {
  const SchemaNode& n = schema.node(node_index);
  if (!n.is_repeated() || raw.is_null()) return convert_single(schema, node_index, raw);
  List out;
  out.reserve(raw.as_list().size());
  for (Value& item : raw.as_list()) out.push_back(convert_single(schema, node_index, item));
  return Value(std::move(out));
}

}  // namespace

std::vector<Value> assemble_rows(const Schema& schema, const std::vector<int>& top_fields,
                                 const std::vector<ColumnData*>& columns, size_t num_rows, const std::string& where) {
  std::vector<Value> raw;
  bool any = false;
  for (size_t c = 0; c < columns.size(); ++c) {
    if (columns[c] == nullptr) continue;
    assemble_column(schema, c, *columns[c], raw, num_rows, where);
    any = true;
  }
  if (!any) raw.assign(num_rows, Value(Struct{}));
  std::vector<Value> rows;
  rows.reserve(raw.size());
  for (Value& r : raw) {
    Struct out;
    out.reserve(top_fields.size());
    for (int field : top_fields) {
      const std::string& name = schema.node(field).element.name;
      Value* v = r.find(name);
      Value missing;
      out.emplace_back(name, convert_field(schema, field, v ? *v : missing));
    }
    rows.emplace_back(std::move(out));
  }
  return rows;
}

}  // namespace verl::io::parquet
