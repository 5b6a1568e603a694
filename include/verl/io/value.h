// A small row value: null, bool, int64, double, string, list, struct (fields in order). Rows read from parquet
// or JSONL are Values; `to_json` prints them the way `verl data show` does (keys in schema order, UTF-8 text,
// integers as integers, floats in shortest round-trip form).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace verl::io {

class Value;
using List = std::vector<Value>;
using Field = std::pair<std::string, Value>;
using Struct = std::vector<Field>;

class Value {
 public:
  enum class Kind { kNull, kBool, kInt, kDouble, kString, kList, kStruct };

  Value() = default;
  Value(std::nullptr_t) {}
  Value(bool v) : data_(v) {}
  Value(int v) : data_(static_cast<int64_t>(v)) {}
  Value(int64_t v) : data_(v) {}
  Value(double v) : data_(v) {}
  Value(const char* v) : data_(std::string(v)) {}
  Value(std::string v) : data_(std::move(v)) {}
  Value(List v) : data_(std::move(v)) {}
  Value(Struct v) : data_(std::move(v)) {}

  Kind kind() const { return static_cast<Kind>(data_.index()); }
  bool is_null() const { return kind() == Kind::kNull; }
  bool is_bool() const { return kind() == Kind::kBool; }
  bool is_int() const { return kind() == Kind::kInt; }
  bool is_double() const { return kind() == Kind::kDouble; }
  bool is_string() const { return kind() == Kind::kString; }
  bool is_list() const { return kind() == Kind::kList; }
  bool is_struct() const { return kind() == Kind::kStruct; }

  // Typed access; the wrong kind is an internal error (verl::Error), never undefined behaviour.
  bool as_bool() const;
  int64_t as_int() const;
  double as_double() const;  // ints convert
  const std::string& as_string() const;
  const List& as_list() const;
  List& as_list();
  const Struct& as_struct() const;
  Struct& as_struct();

  // Struct field by name, nullptr when absent (or when this is not a struct).
  const Value* find(const std::string& key) const;
  Value* find(const std::string& key);

  bool operator==(const Value& other) const { return data_ == other.data_; }
  bool operator!=(const Value& other) const { return !(*this == other); }

 private:
  std::variant<std::monostate, bool, int64_t, double, std::string, List, Struct> data_;
};

const char* kind_name(Value::Kind kind);

// Compact JSON (no spaces), as Python's json.dumps(..., ensure_ascii=False, separators=(",", ":")) writes it,
// except that NaN and infinities (not JSON) are written as null. Invalid UTF-8 bytes become U+FFFD.
std::string to_json(const Value& value);
void append_json(const Value& value, std::string& out);

// Shortest text that reads back as the same double; always has a '.', 'e' or is "null" for non-finite.
std::string format_double(double value);

// Parses one JSON document (object keys keep their order; integers that fit int64 are ints, other numbers
// doubles). `where` names the input in errors.
Value parse_json(const std::string& text, const std::string& where);

}  // namespace verl::io
