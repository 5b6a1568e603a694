// The Python `str` / `re` emulation the scorers rest on. Expected values are what CPython 3.11 prints for
// the same expressions (shown in each comment).
#include <gtest/gtest.h>

#include "verl/reward/scorers/py_regex.h"
#include "verl/reward/scorers/py_str.h"

namespace verl::reward::py {
namespace {

TEST(PySemantics, StrHelpers) {
  EXPECT_EQ(replace("aaa", "aa", "b"), "ba");                                   // 'aaa'.replace('aa','b')
  EXPECT_EQ(split("a,,b", ","), (std::vector<std::string>{"a", "", "b"}));      // 'a,,b'.split(',')
  EXPECT_EQ(tail("\xC3\xA9t\xC3\xA9", 2), "t\xC3\xA9");                         // 'été'[-2:] == 'té'
  EXPECT_EQ(tail("abc", 5), "abc");                                             // 'abc'[-5:]
  EXPECT_EQ(slice_from("abc", 1), "bc");
  EXPECT_EQ(slice_from("abc", 5), "");
  EXPECT_EQ(slice_from("abc", -2), "bc");
  EXPECT_EQ(slice_from("abc", -5), "abc");
  EXPECT_EQ(length("\xF0\x9F\x98\x80x"), 2u);                                   // len('😀x')
  // ' \x1c\u3000x y\u2029\t'.strip() == 'x y'
  EXPECT_EQ(strip(" \x1c\xE3\x80\x80x y\xE2\x80\xA9\t"), "x y");
  EXPECT_TRUE(is_digit("\xC2\xB2"));       // '²'.isdigit() is True
  EXPECT_FALSE(is_digit("\xC2\xBD"));      // '½'.isdigit() is False (Numeric, not Digit)
  EXPECT_TRUE(is_digit("\xD9\xA3"));       // '٣'.isdigit() is True
  EXPECT_FALSE(is_digit(""));
  EXPECT_FALSE(is_digit("1.5"));
}

TEST(PySemantics, InvalidUtf8BecomesReplacementCharacters) {
  // b'a\xffb\xe2\x82c'.decode('utf-8', 'replace') == 'a\ufffdb\ufffdc'
  EXPECT_EQ(sanitize_utf8("a\xFF" "b\xE2\x82" "c"), "a\xEF\xBF\xBD" "b\xEF\xBF\xBD" "c");
  // b'\xc0\xaf'.decode('utf-8', 'replace') == '\ufffd\ufffd' (0xC0 never starts a sequence)
  EXPECT_EQ(sanitize_utf8("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");
  // b'\xed\xa0\x80x'.decode(..., 'replace') == '\ufffd\ufffd\ufffdx' (a surrogate: 0xA0 cannot follow 0xED)
  EXPECT_EQ(sanitize_utf8("\xED\xA0\x80x"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBDx");
  // b'\xf0\x9f\x98x'.decode(..., 'replace') == '\ufffdx' (a truncated 4-byte sequence is one character)
  EXPECT_EQ(sanitize_utf8("\xF0\x9F\x98x"), "\xEF\xBF\xBDx");
  EXPECT_EQ(sanitize_utf8("ok \xC3\xA9"), "ok \xC3\xA9");
}

TEST(PySemantics, RegexScansLikePython) {
  // re.findall('x*', 'abxd') == ['', '', 'x', '', '']; re.sub('x*', '-', 'abxd') == '-a-b--d-'
  const Regex stars("x*");
  EXPECT_EQ(stars.findall("abxd"), (std::vector<std::string>{"", "", "x", "", ""}));
  EXPECT_EQ(stars.sub("-", "abxd"), "-a-b--d-");
  // re.sub('(a)(b)?', r'[\1\2]', 'ab a') == '[ab] [a]' (an unmatched group inserts nothing)
  EXPECT_EQ(Regex("(a)(b)?").sub("[\\1\\2]", "ab a"), "[ab] [a]");
  // '.' is one code point and never "\n": re.findall('a.', 'aé a\n') == ['aé']
  EXPECT_EQ(Regex("a.").findall("a\xC3\xA9 a\n"), (std::vector<std::string>{"a\xC3\xA9"}));
  // Python's \s: re.findall(r'\s', '\x1c\x85\u2028x') has 3 matches (PCRE2's \s would miss \x1c).
  EXPECT_EQ(Regex(std::string("[") + kPythonSpace + "]").findall("\x1c\xC2\x85\xE2\x80\xA8x").size(), 3u);
}

}  // namespace
}  // namespace verl::reward::py
