#include "verl/io/parquet/schema.h"

#include "verl/common/error.h"

namespace verl::io::parquet {

namespace {
constexpr int kMaxDepth = 100;

const char* converted_name(ConvertedType t) {
  static const char* names[] = {"UTF8", "MAP", "MAP_KEY_VALUE", "LIST", "ENUM", "DECIMAL", "DATE", "TIME_MILLIS",
                                "TIME_MICROS", "TIMESTAMP_MILLIS", "TIMESTAMP_MICROS", "UINT_8", "UINT_16", "UINT_32",
                                "UINT_64", "INT_8", "INT_16", "INT_32", "INT_64", "JSON", "BSON", "INTERVAL"};
  return names[static_cast<int>(t)];
}

std::string logical_text(const SchemaElement& e) {
  const LogicalType& lt = e.logical_type;
  const char* unit = lt.unit == 1 ? "MILLIS" : lt.unit == 2 ? "MICROS" : "NANOS";
  switch (lt.kind) {
    case LogicalType::kString: return "STRING";
    case LogicalType::kMap: return "MAP";
    case LogicalType::kList: return "LIST";
    case LogicalType::kEnum: return "ENUM";
    case LogicalType::kDecimal: return str_cat("DECIMAL(", lt.precision, ",", lt.scale, ")");
    case LogicalType::kDate: return "DATE";
    case LogicalType::kTime: return str_cat("TIME(", unit, ",", lt.adjusted_to_utc ? "true" : "false", ")");
    case LogicalType::kTimestamp: return str_cat("TIMESTAMP(", unit, ",", lt.adjusted_to_utc ? "true" : "false", ")");
    case LogicalType::kInteger: return str_cat("INTEGER(", int(lt.bit_width), ",", lt.is_signed ? "true" : "false", ")");
    case LogicalType::kUnknown: return "UNKNOWN";
    case LogicalType::kJson: return "JSON";
    case LogicalType::kBson: return "BSON";
    case LogicalType::kUuid: return "UUID";
    case LogicalType::kFloat16: return "FLOAT16";
    case LogicalType::kNone: break;
  }
  if (e.converted_type) return converted_name(*e.converted_type);
  return "";
}

}  // namespace

Schema Schema::from_elements(const std::vector<SchemaElement>& elements, const std::string& where) {
  VERL_CHECK(!elements.empty(), "parquet", where, ": empty schema");
  Schema s;
  s.nodes_.reserve(elements.size());
  // Iterative depth-first build: a stack of (node, children still to read).
  struct Open {
    int node;
    int remaining;
  };
  std::vector<Open> stack;
  for (size_t i = 0; i < elements.size(); ++i) {
    SchemaNode n;
    n.element = elements[i];
    int index = static_cast<int>(s.nodes_.size());
    if (i == 0) {
      n.element.repetition.reset();
    } else {
      VERL_CHECK(!stack.empty(), "parquet", where, ": schema has more elements than its num_children counts cover (",
                 elements.size(), " elements)");
      SchemaNode& parent = s.nodes_[static_cast<size_t>(stack.back().node)];
      n.parent = stack.back().node;
      VERL_CHECK(n.element.repetition.has_value(), "parquet", where, ": schema field '", n.element.name,
                 "' has no repetition type");
      n.max_def = parent.max_def + (*n.element.repetition == Repetition::kRequired ? 0 : 1);
      n.max_rep = parent.max_rep + (*n.element.repetition == Repetition::kRepeated ? 1 : 0);
      parent.children.push_back(index);
      if (--stack.back().remaining == 0) stack.pop_back();
    }
    if (n.element.type) {
      VERL_CHECK(n.element.num_children == 0 || i == 0, "parquet", where, ": leaf '", n.element.name, "' has children");
      VERL_CHECK(i != 0, "parquet", where, ": schema root is a leaf");
      VERL_CHECK(*n.element.type != PhysicalType::kFixedLenByteArray || n.element.type_length > 0, "parquet", where,
                 ": FIXED_LEN_BYTE_ARRAY field '", n.element.name, "' has type_length ", n.element.type_length);
      n.column = static_cast<int>(s.leaves_.size());
      s.leaves_.push_back(index);
    } else {
      VERL_CHECK(n.element.num_children >= 0 && static_cast<size_t>(n.element.num_children) < elements.size() - i,
                 "parquet", where, ": group '", n.element.name, "' claims ", n.element.num_children, " children");
      if (n.element.num_children > 0) {
        VERL_CHECK(stack.size() < kMaxDepth, "parquet", where, ": schema nested deeper than ", kMaxDepth);
        stack.push_back({index, n.element.num_children});
      }
    }
    s.nodes_.push_back(std::move(n));
  }
  VERL_CHECK(stack.empty(), "parquet", where, ": schema ends before group '",
             s.nodes_[static_cast<size_t>(stack.empty() ? 0 : stack.back().node)].element.name, "' has all its children");
  return s;
}

std::vector<int> Schema::column_path(size_t column) const {
  std::vector<int> path;
  for (int n = leaves_[column]; n > 0; n = nodes_[static_cast<size_t>(n)].parent) path.push_back(n);
  return std::vector<int>(path.rbegin(), path.rend());
}

int Schema::top_level_of(size_t column) const {
  int n = leaves_[column];
  while (nodes_[static_cast<size_t>(n)].parent > 0) n = nodes_[static_cast<size_t>(n)].parent;
  return n;
}

int Schema::find_top_level(const std::string& name) const {
  for (int child : root().children) {
    if (node(child).element.name == name) return child;
  }
  return -1;
}

std::string Schema::to_text() const {
  std::string out = "message " + (root().element.name.empty() ? std::string("schema") : root().element.name) + " {\n";
  struct Item {
    int node;
    int depth;
    bool close;
  };
  std::vector<Item> stack;
  for (auto it = root().children.rbegin(); it != root().children.rend(); ++it) stack.push_back({*it, 1, false});
  while (!stack.empty()) {
    Item item = stack.back();
    stack.pop_back();
    std::string indent(static_cast<size_t>(item.depth) * 2, ' ');
    if (item.close) {
      out += indent + "}\n";
      continue;
    }
    const SchemaNode& n = node(item.node);
    const char* rep = n.element.repetition == Repetition::kRequired   ? "required"
                      : n.element.repetition == Repetition::kOptional ? "optional"
                                                                       : "repeated";
    std::string annotation = logical_text(n.element);
    out += indent + rep + " ";
    if (n.is_leaf()) {
      out += physical_type_name(*n.element.type);
      if (*n.element.type == PhysicalType::kFixedLenByteArray) out += str_cat("(", n.element.type_length, ")");
      out += " " + n.element.name;
      if (!annotation.empty()) out += " (" + annotation + ")";
      out += ";\n";
    } else {
      out += "group " + n.element.name;
      if (!annotation.empty()) out += " (" + annotation + ")";
      out += " {\n";
      stack.push_back({item.node, item.depth, true});
      for (auto it = n.children.rbegin(); it != n.children.rend(); ++it) stack.push_back({*it, item.depth + 1, false});
    }
  }
  out += "}\n";
  return out;
}

}  // namespace verl::io::parquet
