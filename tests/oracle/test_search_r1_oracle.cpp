// The searchR1_* data sources' reward (search_r1_qa_em.h) against verl 0.9.1's search_r1_like_qa_em.py, run by
// tests/oracle/search_r1_oracle.py in .venv/test: generated responses and targets scored by both, and the Unicode
// handling underneath (str.lower with its final sigma, re's \w) compared with that Python for every code point it
// assigns.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "support/run_command.h"
#include "support/test_python.h"
#include "verl/reward/scorers/default_compute_score.h"
#include "verl/reward/scorers/py_str.h"
#include "verl/reward/scorers/search_r1_qa_em.h"

namespace verl::reward {
namespace {

const std::string kSearchR1Oracle = VERL_SOURCE_DIR_FOR_TESTS "/tests/oracle/search_r1_oracle.py";

nlohmann::json search_r1_oracle(const std::string& what) {
  const test::CommandResult r = test::run_command(test::test_python() + "'" + kSearchR1Oracle + "' " + what);
  EXPECT_EQ(r.exit_code, 0) << r.err << "\n" << test::test_python_missing_hint();
  return r.exit_code == 0 ? nlohmann::json::parse(r.out) : nlohmann::json::array();
}

TEST(SearchR1Oracle, ScoresEqualVerls) {
  const nlohmann::json cases = search_r1_oracle("cases");
  ASSERT_GT(cases.size(), 1000u);
  int differing = 0, full = 0, quarter = 0, missing_answer = 0;
  for (size_t i = 0; i < cases.size() && differing < 20; ++i) {
    const nlohmann::json& c = cases[i];
    const std::string solution = c["solution"].get<std::string>();
    const std::optional<std::string> answer = search_r1_extract_answer(solution);
    const nlohmann::json got_answer = answer ? nlohmann::json(*answer) : nlohmann::json();
    const nlohmann::json got_normalized =
        answer ? nlohmann::json(search_r1_normalize_answer(*answer)) : nlohmann::json();
    const double score = default_compute_score_json("searchR1_nq", solution, c["ground_truth"], nullptr).score;
    if (got_answer != c["answer"] || got_normalized != c["normalized"] || score != c["score"].get<double>()) {
      ++differing;
      ADD_FAILURE() << "case " << i << " " << c.dump() << ": verl.cpp answer " << got_answer.dump() << ", normalized "
                    << got_normalized.dump() << ", score " << score;
    }
    full += score == 1.0;
    quarter += score == 0.25;
    missing_answer += !answer.has_value();
  }
  EXPECT_EQ(differing, 0);
  // The cases reach every branch: a match, a match past 10 tags, a miss, no answer.
  EXPECT_GT(full, 100);
  EXPECT_GT(quarter, 0);
  EXPECT_GT(missing_answer, 100);
  EXPECT_LT(full + quarter + missing_answer, static_cast<int>(cases.size()));
}

bool in_ranges(const nlohmann::json& ranges, char32_t c) {
  // ranges are sorted [first, last] pairs
  size_t lo = 0, hi = ranges.size();
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    if (ranges[mid][1].get<char32_t>() < c) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo < ranges.size() && ranges[lo][0].get<char32_t>() <= c;
}

TEST(SearchR1Oracle, LowerAndWordCharactersArePythons) {
  const nlohmann::json sets = search_r1_oracle("unicode");
  ASSERT_TRUE(sets.is_object());
  std::map<char32_t, std::string> lowered;
  for (const nlohmann::json& entry : sets["lower"]) lowered[entry[0].get<char32_t>()] = entry[1].get<std::string>();
  const std::string sigma = py::encode(char32_t{0x3A3}), final_sigma = py::encode(char32_t{0x3C2});
  const auto ends_with_final = [&](const std::string& text) {
    return text.size() >= final_sigma.size() &&
           text.compare(text.size() - final_sigma.size(), std::string::npos, final_sigma) == 0;
  };
  int differing = 0, checked = 0;
  for (const nlohmann::json& range : sets["assigned"]) {
    for (char32_t c = range[0].get<char32_t>(); c <= range[1].get<char32_t>(); ++c) {
      ++checked;
      const std::string ch = py::encode(c);
      const auto it = lowered.find(c);
      const std::string expected_lower = it == lowered.end() ? ch : it->second;
      std::string why;
      if (py::lower(ch) != expected_lower) why += " lower " + py::lower(ch) + " vs " + expected_lower;
      if (py::is_word(c) != in_ranges(sets["word"], c)) why += " \\w";
      if (ends_with_final(py::lower(ch + sigma)) != in_ranges(sets["sigma_after"], c)) why += " sigma after";
      if (ends_with_final(py::lower("A" + ch + sigma)) != in_ranges(sets["sigma_after_a"], c))
        why += " sigma after A+c";
      const std::string before = py::lower("A" + sigma + ch);
      if ((before.compare(1, final_sigma.size(), final_sigma) == 0) != in_ranges(sets["sigma_before"], c)) {
        why += " sigma before";
      }
      if (why.empty()) continue;
      if (++differing > 20) continue;  // the first 20 shown, all counted
      char hex[16];
      std::snprintf(hex, sizeof hex, "U+%04X", static_cast<unsigned>(c));
      ADD_FAILURE() << hex << ":" << why << " (Python's Unicode " << sets["unidata_version"].get<std::string>() << ")";
    }
  }
  EXPECT_EQ(differing, 0);
  EXPECT_GT(checked, 200000);
}

}  // namespace
}  // namespace verl::reward
