#include "verl/io/value.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>

#include <nlohmann/json.hpp>

#include "verl/common/error.h"
#include "verl/common/input_limits.h"

namespace verl::io {

const char* kind_name(Value::Kind kind) {
  switch (kind) {
    case Value::Kind::kNull: return "null";
    case Value::Kind::kBool: return "bool";
    case Value::Kind::kInt: return "int";
    case Value::Kind::kDouble: return "double";
    case Value::Kind::kString: return "string";
    case Value::Kind::kList: return "list";
    case Value::Kind::kStruct: return "struct";
  }
  return "?";
}

#define VERL_VALUE_GET(KIND, TYPE)                                                                       \
  VERL_ASSERT(kind() == KIND, "value", "expected a ", kind_name(KIND), " value, got ", kind_name(kind())); \
  return std::get<TYPE>(data_)

bool Value::as_bool() const { VERL_VALUE_GET(Kind::kBool, bool); }
int64_t Value::as_int() const { VERL_VALUE_GET(Kind::kInt, int64_t); }
double Value::as_double() const {
  if (is_int()) return static_cast<double>(std::get<int64_t>(data_));
  VERL_VALUE_GET(Kind::kDouble, double);
}
const std::string& Value::as_string() const { VERL_VALUE_GET(Kind::kString, std::string); }
const List& Value::as_list() const { VERL_VALUE_GET(Kind::kList, List); }
List& Value::as_list() { VERL_VALUE_GET(Kind::kList, List); }
const Struct& Value::as_struct() const { VERL_VALUE_GET(Kind::kStruct, Struct); }
Struct& Value::as_struct() { VERL_VALUE_GET(Kind::kStruct, Struct); }
#undef VERL_VALUE_GET

const Value* Value::find(const std::string& key) const {
  if (!is_struct()) return nullptr;
  for (const auto& field : std::get<Struct>(data_)) {
    if (field.first == key) return &field.second;
  }
  return nullptr;
}

Value* Value::find(const std::string& key) {
  return const_cast<Value*>(static_cast<const Value*>(this)->find(key));
}

std::string format_double(double value) {
  if (!std::isfinite(value)) return "null";
  // Shortest round-trip digits in scientific form, then laid out the way Python's repr(float) does.
  char buf[64];
  auto result = std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::scientific);
  std::string sci(buf, result.ptr);
  size_t e_pos = sci.find('e');
  std::string mantissa = sci.substr(0, e_pos);
  int exponent = std::atoi(sci.c_str() + e_pos + 1);
  bool negative = !mantissa.empty() && mantissa[0] == '-';
  std::string digits;
  for (char c : mantissa) {
    if (c >= '0' && c <= '9') digits += c;
  }
  std::string out = negative ? "-" : "";
  if (exponent >= -5 + 1 && exponent < 16) {
    int point = exponent + 1;  // digits before the decimal point
    if (point <= 0) {
      out += "0." + std::string(static_cast<size_t>(-point), '0') + digits;
    } else if (static_cast<size_t>(point) >= digits.size()) {
      out += digits + std::string(static_cast<size_t>(point) - digits.size(), '0') + ".0";
    } else {
      out += digits.substr(0, static_cast<size_t>(point)) + "." + digits.substr(static_cast<size_t>(point));
    }
  } else {
    out += digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char exp_buf[16];
    std::snprintf(exp_buf, sizeof(exp_buf), "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    out += exp_buf;
  }
  return out;
}

namespace {

// Length of the valid UTF-8 sequence starting at s[i], or 0 when invalid.
size_t utf8_sequence_length(const std::string& s, size_t i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = byte(i);
  size_t n = s.size();
  auto cont = [&](size_t k) { return k < n && (byte(k) & 0xC0) == 0x80; };
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return cont(i + 1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (!cont(i + 1) || !cont(i + 2)) return 0;
    if (c == 0xE0 && byte(i + 1) < 0xA0) return 0;
    if (c == 0xED && byte(i + 1) >= 0xA0) return 0;  // surrogates
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (!cont(i + 1) || !cont(i + 2) || !cont(i + 3)) return 0;
    if (c == 0xF0 && byte(i + 1) < 0x90) return 0;
    if (c == 0xF4 && byte(i + 1) >= 0x90) return 0;
    return 4;
  }
  return 0;
}

void append_json_string(const std::string& s, std::string& out) {
  out += '"';
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"': out += "\\\""; ++i; continue;
      case '\\': out += "\\\\"; ++i; continue;
      case '\n': out += "\\n"; ++i; continue;
      case '\r': out += "\\r"; ++i; continue;
      case '\t': out += "\\t"; ++i; continue;
      case '\b': out += "\\b"; ++i; continue;
      case '\f': out += "\\f"; ++i; continue;
      default: break;
    }
    if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
      ++i;
      continue;
    }
    size_t len = utf8_sequence_length(s, i);
    if (len == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD
      ++i;
    } else {
      out.append(s, i, len);
      i += len;
    }
  }
  out += '"';
}

}  // namespace

void append_json(const Value& value, std::string& out) {
  switch (value.kind()) {
    case Value::Kind::kNull: out += "null"; break;
    case Value::Kind::kBool: out += value.as_bool() ? "true" : "false"; break;
    case Value::Kind::kInt: out += std::to_string(value.as_int()); break;
    case Value::Kind::kDouble: out += format_double(value.as_double()); break;
    case Value::Kind::kString: append_json_string(value.as_string(), out); break;
    case Value::Kind::kList: {
      out += '[';
      bool first = true;
      for (const auto& item : value.as_list()) {
        if (!first) out += ',';
        first = false;
        append_json(item, out);
      }
      out += ']';
      break;
    }
    case Value::Kind::kStruct: {
      out += '{';
      bool first = true;
      for (const auto& field : value.as_struct()) {
        if (!first) out += ',';
        first = false;
        append_json_string(field.first, out);
        out += ':';
        append_json(field.second, out);
      }
      out += '}';
      break;
    }
  }
}

std::string to_json(const Value& value) {
  std::string out;
  append_json(value, out);
  return out;
}

namespace {

Value from_json(const nlohmann::ordered_json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null: return Value();
    case nlohmann::json::value_t::boolean: return Value(j.get<bool>());
    case nlohmann::json::value_t::number_integer: return Value(j.get<int64_t>());
    case nlohmann::json::value_t::number_unsigned: {
      uint64_t u = j.get<uint64_t>();
      if (u <= static_cast<uint64_t>(INT64_MAX)) return Value(static_cast<int64_t>(u));
      return Value(static_cast<double>(u));
    }
    case nlohmann::json::value_t::number_float: return Value(j.get<double>());
    case nlohmann::json::value_t::string: return Value(j.get<std::string>());
    case nlohmann::json::value_t::array: {
      List list;
      list.reserve(j.size());
      for (const auto& item : j) list.push_back(from_json(item));
      return Value(std::move(list));
    }
    case nlohmann::json::value_t::object: {
      Struct fields;
      fields.reserve(j.size());
      for (auto it = j.begin(); it != j.end(); ++it) fields.emplace_back(it.key(), from_json(it.value()));
      return Value(std::move(fields));
    }
    default: return Value();
  }
}

}  // namespace

Value parse_json(const std::string& text, const std::string& where) {
  check_json_limits(text, where);
  nlohmann::ordered_json parsed;
  try {
    parsed = nlohmann::ordered_json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    VERL_FAIL("json", where, ": invalid JSON: ", e.what());
  }
  return from_json(parsed);
}

}  // namespace verl::io
