// NumpyLegacyRandom against numpy's own legacy RandomState (the test Python's numpy): the draws verl's bootstrap
// metrics and its validation-sample shuffle make.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "support/test_python.h"
#include "verl/common/numpy_random.h"

namespace verl {
namespace {

std::string numpy_random_joined(const std::vector<int64_t>& values, const char* separator = " ") {
  std::ostringstream out;
  for (size_t i = 0; i < values.size(); ++i) out << (i ? separator : "") << values[i];
  return out.str();
}

TEST(NumpyLegacyRandom, RandintAndShuffleEqualNumpys) {
  // randint(0, n) one at a time over bounds that need every mask width, 1 (no draw) and 2^32 included.
  const std::vector<int64_t> bounds = {1, 2, 3, 7, 8, 9, 100, 1000, 65537, 2147483648LL, 4294967296LL, 5, 1};
  NumpyLegacyRandom ours(7);
  std::vector<int64_t> draws;
  for (int64_t n : bounds) draws.push_back(ours.randint_below(static_cast<uint64_t>(n)));
  std::vector<int64_t> items;
  for (int64_t i = 0; i < 37; ++i) items.push_back(i);
  NumpyLegacyRandom(42).shuffle(items);

  const std::string script =
      "import numpy as np\n"
      "rs = np.random.RandomState(7)\n"
      "print(' '.join(str(rs.randint(0, n)) for n in [" + numpy_random_joined(bounds, ", ") + "]))\n"
      "items = list(range(37))\n"
      "np.random.RandomState(42).shuffle(items)\n"
      "print(' '.join(map(str, items)))\n";
  test::CommandResult r = test::run_command(test::test_python() + "-c \"" + script + "\"");
  ASSERT_EQ(r.exit_code, 0) << test::test_python_missing_hint() << "\n" << r.err;
  EXPECT_EQ(r.out, numpy_random_joined(draws) + "\n" + numpy_random_joined(items) + "\n");
}

}  // namespace
}  // namespace verl
