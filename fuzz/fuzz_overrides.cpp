// Command-line overrides (`key.path=value`, `+key=...`, `~key`), one per input line, applied to a small
// config with every value type, then interpolations resolved.
#include <cstdint>
#include <sstream>
#include <string>

#include "fuzz_support.h"
#include "verl/config/interpolation.h"
#include "verl/config/overrides.h"
#include "verl/config/yaml_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const verl::config::Node base = verl::config::parse_yaml(
      "data:\n  train_files: ~/data/train.parquet\n  max_prompt_length: 512\n  shuffle: true\n"
      "trainer:\n  logger: [console]\n  project_name: p\n  default_local_dir: ckpt/${trainer.project_name}\n"
      "actor:\n  optim:\n    lr: 1.0e-06\n  kwargs: {}\n  checkpoint: null\n",
      "base.yaml");
  const std::string text(reinterpret_cast<const char*>(data), size);
  verl::fuzz::expect_only_verl_errors([&] {
    verl::config::Node root = base;
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line)) {
      if (!verl::config::is_override_argument(line)) continue;
      verl::config::apply_override(root, verl::config::parse_override(line));
    }
    verl::config::resolve_interpolations(root);
  });
  return 0;
}
