// numpy's default_rng(seed) and Generator.choice(n, size, replace=False), against numpy in the test-only
// Python (.venv/test): raw 64-bit draws, bounded draws, and both of choice's algorithms
// (Floyd's for small picks, the tail shuffle for large populations).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/run_command.h"
#include "support/test_python.h"
#include "verl/common/error.h"
#include "verl/data/numpy_random.h"

namespace verl::data {
namespace {

nlohmann::json numpy(const std::string& expression) {
  test::CommandResult r = test::run_command(test::test_python() + "-c \"import json, numpy as np; print(json.dumps(" +
                                            expression + "))\"");
  if (r.exit_code != 0) return nullptr;
  return nlohmann::json::parse(r.out);
}

TEST(NumpyGenerator, RawDrawsMatchNumpy) {
  for (uint64_t seed : {0ull, 1ull, 42ull, 4294967296ull, 12345678901234ull}) {
    const nlohmann::json expected = numpy("[int(x) for x in np.random.default_rng(" + std::to_string(seed) +
                                          ").integers(0, 2**64, size=5, dtype=np.uint64)]");
    if (expected.is_null()) FAIL() << test::test_python_missing_hint();
    NumpyGenerator rng(seed);
    for (size_t i = 0; i < 5; ++i) EXPECT_EQ(rng.next_uint64(), expected[i].get<uint64_t>()) << "seed " << seed;
  }
}

TEST(NumpyGenerator, ChoiceWithoutReplacementMatchesNumpy) {
  struct Case { uint64_t seed; int64_t population, size; };
  // 7473 = GSM8K train rows. (20000, 1000) and (100000, 99999) take numpy's tail-shuffle branch.
  for (const Case& c : {Case{42, 10, 3}, Case{1, 100, 99}, Case{7, 7473, 100}, Case{7, 7473, 5000},
                        Case{3, 20000, 300}, Case{3, 20000, 1000}, Case{5, 100000, 99999}, Case{0, 2, 1}}) {
    const nlohmann::json expected =
        numpy("[int(x) for x in np.random.default_rng(" + std::to_string(c.seed) + ").choice(" +
              std::to_string(c.population) + ", size=" + std::to_string(c.size) + ", replace=False)]");
    if (expected.is_null()) FAIL() << test::test_python_missing_hint();
    NumpyGenerator rng(c.seed);
    EXPECT_EQ(nlohmann::json(rng.choice_without_replacement(c.population, c.size)), expected)
        << c.seed << " " << c.population << " " << c.size;
  }
}

TEST(NumpyGenerator, BadSizesAreErrors) {
  NumpyGenerator rng(1);
  EXPECT_THROW(rng.choice_without_replacement(3, 4), Error);
  EXPECT_THROW(rng.choice_without_replacement(3, -1), Error);
  EXPECT_TRUE(rng.choice_without_replacement(3, 0).empty());
}

}  // namespace
}  // namespace verl::data
