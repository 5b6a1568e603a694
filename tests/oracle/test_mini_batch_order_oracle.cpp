// The rows of each mini-batch of an update (workers/mini_batch_order.h) against verl 0.9.1's own make_iterator
// (the torch DataLoader its engine workers train through), run live by tests/oracle/mini_batch_order_oracle.py in
// .venv/test: every epoch's mini-batches, shuffled and not, for several sizes, epochs and seeds (a seed being
// data_loader_seed + the data-parallel rank).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/run_command.h"
#include "support/test_python.h"
#include "verl/workers/mini_batch_order.h"

namespace verl::test {
namespace {

const std::string kMiniBatchOrderOracle = VERL_SOURCE_DIR_FOR_TESTS "/tests/oracle/mini_batch_order_oracle.py";

struct OrderCase {
  int64_t rows, mini_batch, epochs;
  bool shuffle;
  int64_t seed;
};

TEST(MiniBatchOrderOracle, EveryEpochsMiniBatchesAreVerlsRows) {
  const std::vector<OrderCase> cases = {
      {8, 4, 2, true, 42}, {8, 4, 2, true, 43},  {8, 8, 1, true, 42},  {12, 3, 3, true, 0},
      {1, 1, 2, true, 42}, {96, 16, 2, true, 7}, {8, 4, 2, false, 42}, {6, 3, 1, false, 1},
  };
  nlohmann::json request = nlohmann::json::array();
  for (const OrderCase& c : cases) {
    request.push_back({{"rows", c.rows},
                       {"mini_batch", c.mini_batch},
                       {"epochs", c.epochs},
                       {"shuffle", c.shuffle},
                       {"seed", c.seed}});
  }
  const CommandResult r = run_command(test_python() + kMiniBatchOrderOracle + " '" + request.dump() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err << "\n" << test_python_missing_hint();
  const auto verl = nlohmann::json::parse(r.out).get<std::vector<std::vector<std::vector<int64_t>>>>();
  ASSERT_EQ(verl.size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    const OrderCase& c = cases[i];
    EXPECT_EQ(workers::mini_batch_rows(c.rows, c.mini_batch, c.epochs, {c.shuffle, c.seed}), verl[i])
        << "rows " << c.rows << ", mini-batch " << c.mini_batch << ", epochs " << c.epochs
        << (c.shuffle ? ", shuffled" : "") << ", seed " << c.seed;
  }
}

}  // namespace
}  // namespace verl::test
