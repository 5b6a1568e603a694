// data::distributed_sampler_indices (the rows of one data-parallel rank per epoch in `mpirun verl sft`) against
// PyTorch's own DistributedSampler(drop_last=True) after set_epoch, run live by
// tests/golden/data/distributed_sampler_reference.py under .venv/test: shuffled and in order, sizes that divide the
// rank count and sizes that do not (the remainder dropped), more ranks than rows, one rank.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/run_command.h"
#include "support/test_python.h"
#include "verl/data/distributed_sampler.h"

namespace verl::test {
namespace {

TEST(DistributedSamplerGolden, EveryRanksRowsEqualTorchsDistributedSampler) {
  const std::string script =
      std::string(VERL_SOURCE_DIR_FOR_TESTS) + "/tests/golden/data/distributed_sampler_reference.py";
  const CommandResult r = run_command(test_python() + script);
  ASSERT_EQ(r.exit_code, 0) << test_python_missing_hint() << "\n" << r.err;
  const nlohmann::json reference = nlohmann::json::parse(r.out);
  ASSERT_GE(reference["cases"].size(), 6u);
  for (const auto& c : reference["cases"]) {
    const int64_t n = c["size"], replicas = c["replicas"], seed = c["seed"];
    const bool shuffle = c["shuffle"];
    for (int64_t rank = 0; rank < replicas; ++rank) {
      const auto& epochs = c["ranks"][static_cast<size_t>(rank)];
      for (size_t epoch = 0; epoch < epochs.size(); ++epoch) {
        const std::vector<int64_t> want = epochs[epoch].get<std::vector<int64_t>>();
        EXPECT_EQ(data::distributed_sampler_indices(n, replicas, rank, shuffle, seed, static_cast<int64_t>(epoch)),
                  want)
            << "size " << n << ", " << replicas << " ranks, rank " << rank << ", epoch " << epoch;
      }
    }
  }
}

}  // namespace
}  // namespace verl::test
