// Test helper: a schema touching every physical type and nesting form, and seeded random rows for it
// (nulls, empty and long strings, unicode, empty lists, lists of structs, lists of lists).
#pragma once

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "verl/io/parquet/writer.h"
#include "verl/io/value.h"

namespace verl::test {

using io::List;
using io::Struct;
using io::Value;
using io::parquet::FieldKind;
using io::parquet::WriteField;

inline WriteField leaf_field(const std::string& name, FieldKind kind, bool nullable = true, int fixed = 0) {
  return WriteField{name, kind, nullable, fixed, {}};
}

inline std::vector<WriteField> random_rows_schema() {
  WriteField message{"element", FieldKind::kStruct, true, 0,
                     {leaf_field("role", FieldKind::kString, false), leaf_field("content", FieldKind::kString),
                      leaf_field("score", FieldKind::kDouble),
                      WriteField{"ids", FieldKind::kList, true, 0, {leaf_field("element", FieldKind::kInt64, false)}}}};
  WriteField words{"words", FieldKind::kList, true, 0,
                   {WriteField{"element", FieldKind::kList, true, 0, {leaf_field("element", FieldKind::kString)}}}};
  return {
      leaf_field("b", FieldKind::kBool),
      leaf_field("i32", FieldKind::kInt32),
      leaf_field("i64", FieldKind::kInt64, false),
      leaf_field("f32", FieldKind::kFloat),
      leaf_field("f64", FieldKind::kDouble),
      leaf_field("s", FieldKind::kString),
      leaf_field("bin", FieldKind::kBinary),
      leaf_field("fx", FieldKind::kFixed, true, 5),
      WriteField{"tags", FieldKind::kList, true, 0, {leaf_field("element", FieldKind::kString)}},
      WriteField{"msgs", FieldKind::kList, true, 0, {message}},
      WriteField{"meta", FieldKind::kStruct, true, 0,
                 {leaf_field("index", FieldKind::kInt64),
                  WriteField{"nested", FieldKind::kStruct, false, 0, {leaf_field("flag", FieldKind::kBool), words}}}},
  };
}

class RandomRows {
 public:
  // utf8_only: binary values are valid UTF-8 and int64s stay within +-2^53 (what a JS reader prints exactly).
  RandomRows(uint64_t seed, bool utf8_only) : rng_(seed), utf8_only_(utf8_only) {}

  std::vector<Value> make(size_t n) {
    std::vector<Value> rows;
    for (size_t i = 0; i < n; ++i) rows.push_back(row(i));
    return rows;
  }

 private:
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  int64_t below(int64_t n) { return static_cast<int64_t>(rng_() % static_cast<uint64_t>(n)); }
  template <typename F>
  Value maybe(F make) { return chance(0.15) ? Value() : make(); }

  std::string text() {
    static const std::vector<std::string> pool = {"", "user", "assistant", "héllo wörld", "数据集", "emoji 🚀🎉",
                                                  "quote \" backslash \\ newline \n tab \t", "#### 42"};
    switch (below(4)) {
      case 0: return pool[static_cast<size_t>(below(static_cast<int64_t>(pool.size())))];
      case 1: return std::string(static_cast<size_t>(below(20000)), static_cast<char>('a' + below(26)));
      default: {
        std::string s;
        int64_t len = below(40);
        for (int64_t k = 0; k < len; ++k) s += static_cast<char>(' ' + below(95));
        return s;
      }
    }
  }

  std::string bytes() {
    if (utf8_only_) return text();
    std::string s;
    int64_t len = below(30);
    for (int64_t k = 0; k < len; ++k) s += static_cast<char>(below(256));
    return s;
  }

  double number() {
    switch (below(3)) {
      case 0: return static_cast<double>(below(2000) - 1000);
      case 1: return std::uniform_real_distribution<double>(-1e6, 1e6)(rng_);
      default: return std::ldexp(std::uniform_real_distribution<double>(-1, 1)(rng_), static_cast<int>(below(600)) - 300);
    }
  }

  int64_t big() {
    if (utf8_only_) return below(int64_t{1} << 53) - (int64_t{1} << 52);
    return static_cast<int64_t>(rng_());
  }

  Value message() {
    List ids;
    int64_t n = below(4);
    for (int64_t k = 0; k < n; ++k) ids.push_back(Value(big()));
    return Value(Struct{{"role", Value(chance(0.5) ? "user" : "assistant")},
                        {"content", maybe([&] { return Value(text()); })},
                        {"score", maybe([&] { return Value(number()); })},
                        {"ids", chance(0.2) ? Value() : Value(std::move(ids))}});
  }

  Value row(size_t index) {
    auto list_of = [&](int64_t max, auto make) {
      List items;
      int64_t n = below(max + 1);
      for (int64_t k = 0; k < n; ++k) items.push_back(make());
      return Value(std::move(items));
    };
    Struct r;
    r.emplace_back("b", maybe([&] { return Value(chance(0.5)); }));
    r.emplace_back("i32", maybe([&] { return Value(static_cast<int64_t>(static_cast<int32_t>(rng_()))); }));
    r.emplace_back("i64", Value(chance(0.3) ? static_cast<int64_t>(index) : big()));
    r.emplace_back("f32", maybe([&] { return Value(static_cast<double>(static_cast<float>(number()))); }));
    r.emplace_back("f64", maybe([&] { return Value(number()); }));
    r.emplace_back("s", maybe([&] { return Value(text()); }));
    r.emplace_back("bin", maybe([&] { return Value(bytes()); }));
    r.emplace_back("fx", maybe([&] {
      std::string s;
      for (int k = 0; k < 5; ++k) s += static_cast<char>('A' + below(26));
      return Value(s);
    }));
    r.emplace_back("tags", maybe([&] { return list_of(4, [&] { return maybe([&] { return Value(text()); }); }); }));
    r.emplace_back("msgs", maybe([&] { return list_of(3, [&] { return maybe([&] { return message(); }); }); }));
    r.emplace_back("meta", maybe([&] {
      Value words = maybe([&] {
        return list_of(3, [&] { return maybe([&] { return list_of(3, [&] { return maybe([&] { return Value(text()); }); }); }); });
      });
      return Value(Struct{{"index", maybe([&] { return Value(static_cast<int64_t>(index)); })},
                          {"nested", Value(Struct{{"flag", maybe([&] { return Value(chance(0.5)); })},
                                                  {"words", std::move(words)}})}});
    }));
    return Value(std::move(r));
  }

  std::mt19937_64 rng_;
  bool utf8_only_;
};

}  // namespace verl::test
