// io::Value and its JSON text: Python json.dumps(ensure_ascii=False) layout, shortest round-trip floats.
#include <gtest/gtest.h>

#include <cmath>

#include "verl/common/error.h"
#include "verl/io/value.h"

namespace verl::io {
namespace {

TEST(IoValue, FloatsAsPythonReprWrites) {
  // Expected strings are Python's repr(float) for the same values.
  EXPECT_EQ(format_double(0.1), "0.1");
  EXPECT_EQ(format_double(1.0), "1.0");
  EXPECT_EQ(format_double(-0.0), "-0.0");
  EXPECT_EQ(format_double(100.0), "100.0");
  EXPECT_EQ(format_double(1e16), "1e+16");
  EXPECT_EQ(format_double(1234567890123456.0), "1234567890123456.0");
  EXPECT_EQ(format_double(1e-5), "1e-05");
  EXPECT_EQ(format_double(0.0001), "0.0001");
  EXPECT_EQ(format_double(1.0 / 3.0), "0.3333333333333333");
  EXPECT_EQ(format_double(2.5e-310), "2.5e-310");
  EXPECT_EQ(format_double(1.7976931348623157e308), "1.7976931348623157e+308");
  EXPECT_EQ(format_double(-203669.75), "-203669.75");
  EXPECT_EQ(format_double(std::nan("")), "null");
}

TEST(IoValue, FloatsRoundTrip) {
  uint64_t state = 12345;
  for (int i = 0; i < 20000; ++i) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    double v;
    uint64_t bits = state;
    std::memcpy(&v, &bits, 8);
    if (!std::isfinite(v)) continue;
    std::string text = format_double(v);
    EXPECT_EQ(std::strtod(text.c_str(), nullptr), v) << text;
  }
}

TEST(IoValue, JsonKeepsKeyOrderAndUnicode) {
  Value row(Struct{{"z", Value(int64_t{1})},
                   {"a", Value(List{Value(), Value(true), Value(2.5), Value("héllo \"q\"\n\t\\ 🚀")})},
                   {"m", Value(Struct{})}});
  EXPECT_EQ(to_json(row), "{\"z\":1,\"a\":[null,true,2.5,\"héllo \\\"q\\\"\\n\\t\\\\ 🚀\"],\"m\":{}}");
  EXPECT_EQ(to_json(Value(std::string("\x01\x7f"))), "\"\\u0001\\u007f\"");
  // Invalid UTF-8 becomes U+FFFD so the output stays valid JSON.
  EXPECT_EQ(to_json(Value(std::string("a\xff" "b"))), "\"a\xEF\xBF\xBD" "b\"");
  EXPECT_EQ(to_json(Value(int64_t{-9223372036854775807LL - 1})), "-9223372036854775808");
}

TEST(IoValue, ParseJsonKeepsOrderAndNumberKinds) {
  Value v = parse_json("{\"b\":1,\"a\":1.0,\"c\":[\"x\",null,{\"k\":false}],\"big\":18446744073709551615}", "inline");
  ASSERT_TRUE(v.is_struct());
  EXPECT_EQ(v.as_struct()[0].first, "b");
  EXPECT_TRUE(v.find("b")->is_int());
  EXPECT_TRUE(v.find("a")->is_double());
  EXPECT_TRUE(v.find("big")->is_double());
  EXPECT_EQ(to_json(*v.find("c")), "[\"x\",null,{\"k\":false}]");
  EXPECT_THROW(parse_json("{\"a\":", "inline"), Error);
}

TEST(IoValue, WrongKindIsAnErrorNotACrash) {
  Value v("text");
  EXPECT_THROW(v.as_int(), Error);
  EXPECT_THROW(v.as_list(), Error);
  EXPECT_EQ(v.find("x"), nullptr);
}

}  // namespace
}  // namespace verl::io
