#include "verl/data/preprocess/preprocess.h"

#include "verl/common/error.h"

namespace verl::data {

PreprocessedDataset preprocess_dataset(const std::string& dataset, const std::vector<io::Value>& source,
                                       const std::string& split, const std::string& where) {
  if (dataset == "gsm8k") return preprocess_gsm8k(source, split, where);
  if (dataset == "math") return preprocess_math(source, split, where);
  VERL_FAIL("data", "unknown dataset '", dataset, "'; valid: gsm8k, math");
}

}  // namespace verl::data
