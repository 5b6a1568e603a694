#include "verl/reward/scorers/math_reward.h"

#include <vector>

#include "verl/common/logging.h"
#include "verl/reward/scorers/py_str.h"

namespace verl::reward {

namespace {

// Python's int() accepts signs, "_" separators and Unicode digits, but fix_a_slash_b then demands
// text == f"{int(a)}/{int(b)}", which only the canonical decimal form survives: "0" or -?[1-9][0-9]*.
// ("-0" fails: int("-0") prints as "0".) Python >= 3.10.7 also refuses int() of more than 4300 digits,
// which makes fix_a_slash_b keep the text.
bool is_canonical_python_int(const std::string& text) {
  constexpr size_t kMaxIntDigits = 4300;
  const size_t digits_begin = (!text.empty() && text[0] == '-') ? 1 : 0;
  const size_t digit_count = text.size() - digits_begin;
  if (digit_count == 0 || digit_count > kMaxIntDigits) return false;
  for (size_t i = digits_begin; i < text.size(); ++i) {
    if (text[i] < '0' || text[i] > '9') return false;
  }
  if (text[digits_begin] == '0') return text == "0";
  return true;
}

}  // namespace

std::optional<std::string> math_through_balanced_brace(const std::string& text, size_t start) {
  int open_braces = 0;
  for (size_t i = start; i < text.size(); ++i) {
    if (text[i] == '{') ++open_braces;
    if (text[i] == '}') {
      --open_braces;
      if (open_braces == 0) return text.substr(start, i - start + 1);
    }
  }
  return std::nullopt;
}

std::optional<std::string> math_last_boxed_only_string(const std::string& text) {
  size_t idx = text.rfind("\\boxed");
  if (py::contains(text, "\\boxed ")) {
    return "\\boxed " + py::split(py::split(text, "\\boxed ").back(), "$").front();
  }
  if (idx == std::string::npos) {
    idx = text.rfind("\\fbox");
    if (idx == std::string::npos) return std::nullopt;
  }
  return math_through_balanced_brace(text, idx);
}

std::optional<std::string> math_remove_boxed(const std::string& boxed) {
  const std::string space_form = "\\boxed ";
  if (py::contains(boxed, space_form)) {
    if (boxed.compare(0, space_form.size(), space_form) != 0) return std::nullopt;
    return boxed.substr(space_form.size());
  }
  const std::string brace_form = "\\boxed{";
  if (boxed.compare(0, brace_form.size(), brace_form) != 0) return std::nullopt;
  if (boxed.empty() || boxed.back() != '}') return std::nullopt;
  // s[len("\boxed{"):-1]; "\boxed{" itself ends in "{", so a passing string is at least "\boxed{}".
  return boxed.substr(brace_form.size(), boxed.size() - brace_form.size() - 1);
}

std::optional<std::string> math_fix_fracs(const std::string& text) {
  const std::vector<std::string> pieces = py::split(text, "\\frac");
  std::string out = pieces[0];
  for (size_t p = 1; p < pieces.size(); ++p) {
    out += "\\frac";
    const std::u32string piece = py::decode(pieces[p]);
    if (piece.empty()) return std::nullopt;  // substr[0] raises IndexError (nothing catches it here)
    if (piece[0] == U'{') {
      out += pieces[p];
      continue;
    }
    if (piece.size() < 2) return text;  // the caught `assert len(substr) >= 2`: give the input back
    const std::string a = py::encode(piece[0]);
    const std::string b = py::encode(piece[1]);
    const std::string rest = py::encode(piece.substr(2));
    if (b != "{") {
      out += "{" + a + "}{" + b + "}" + rest;
    } else {
      out += "{" + a + "}" + b + rest;
    }
  }
  return out;
}

std::optional<std::string> math_fix_sqrt(const std::string& text) {
  if (!py::contains(text, "\\sqrt")) return text;
  const std::vector<std::string> pieces = py::split(text, "\\sqrt");
  std::string out = pieces[0];
  for (size_t p = 1; p < pieces.size(); ++p) {
    const std::u32string piece = py::decode(pieces[p]);
    if (piece.empty()) return std::nullopt;  // split[0] raises IndexError
    if (piece[0] != U'{') {
      out += "\\sqrt{" + py::encode(piece[0]) + "}" + py::encode(piece.substr(1));
    } else {
      out += "\\sqrt" + pieces[p];
    }
  }
  return out;
}

std::string math_fix_a_slash_b(const std::string& text) {
  const std::vector<std::string> parts = py::split(text, "/");
  if (parts.size() != 2) return text;
  if (!is_canonical_python_int(parts[0]) || !is_canonical_python_int(parts[1])) return text;
  return "\\frac{" + parts[0] + "}{" + parts[1] + "}";
}

std::optional<std::string> math_remove_right_units(const std::string& text) {
  if (!py::contains(text, "\\text{ ")) return text;
  const std::vector<std::string> parts = py::split(text, "\\text{ ");
  if (parts.size() != 2) return std::nullopt;  // assert len(splits) == 2
  return parts[0];
}

std::optional<std::string> math_strip_string(const std::string& input) {
  std::string s = py::sanitize_utf8(input);
  s = py::replace(s, "\n", "");                    // 1 line breaks
  s = py::replace(s, "\\!", "");                   // 2 inverse spaces
  s = py::replace(s, "\\\\", "\\");                // 3 "\\" -> "\"
  s = py::replace(s, "tfrac", "frac");             // 4 tfrac, dfrac -> frac
  s = py::replace(s, "dfrac", "frac");
  s = py::replace(s, "\\left", "");                // 5 \left, \right
  s = py::replace(s, "\\right", "");
  s = py::replace(s, "^{\\circ}", "");             // 6 degrees
  s = py::replace(s, "^\\circ", "");
  s = py::replace(s, "\\$", "");                   // 7 dollar signs
  std::optional<std::string> no_units = math_remove_right_units(s);  // 8 units on the right
  if (!no_units) return std::nullopt;
  s = *no_units;
  s = py::replace(s, "\\\\%", "");                 // 9 percent
  s = py::replace(s, "\\%", "");
  s = py::replace(s, " .", " 0.");                 // 10 leading zeros
  s = py::replace(s, "{.", "{0.");
  if (s.empty()) return s;
  if (s[0] == '.') s = "0" + s;
  const std::vector<std::string> sides = py::split(s, "=");  // 11 "k = ..." with a short left side
  if (sides.size() == 2 && py::length(sides[0]) <= 2) s = sides[1];
  std::optional<std::string> sqrt_fixed = math_fix_sqrt(s);  // 12 \sqrt3 -> \sqrt{3}
  if (!sqrt_fixed) return std::nullopt;
  s = py::replace(*sqrt_fixed, " ", "");           // 13 spaces
  std::optional<std::string> fracs_fixed = math_fix_fracs(s);  // 14 \frac12 -> \frac{1}{2}
  if (!fracs_fixed) return std::nullopt;
  s = *fracs_fixed;
  if (s == "0.5") s = "\\frac{1}{2}";              // 15
  return math_fix_a_slash_b(s);                    // 16 a/b -> \frac{a}{b}
}

bool math_is_equiv(const std::optional<std::string>& a, const std::optional<std::string>& b) {
  if (!a && !b) return true;
  if (!a || !b) return false;
  const std::optional<std::string> stripped_a = math_strip_string(*a);
  const std::optional<std::string> stripped_b = math_strip_string(*b);
  if (!stripped_a || !stripped_b) return *a == *b;
  return *stripped_a == *stripped_b;
}

double math_compute_score(const std::string& solution_str, const std::string& ground_truth) {
  const std::string solution = py::sanitize_utf8(solution_str);
  const std::optional<std::string> boxed = math_last_boxed_only_string(solution);
  if (!boxed) return 0.0;
  const std::optional<std::string> answer = math_remove_boxed(*boxed);
  if (!answer) {
    // verl prints the AssertionError from remove_boxed and scores 0.
    VERL_LOG(Debug, "reward") << "MATH answer box is not \\boxed{...}: " << *boxed;
    return 0.0;
  }
  return math_is_equiv(*answer, ground_truth) ? 1.0 : 0.0;
}

}  // namespace verl::reward
