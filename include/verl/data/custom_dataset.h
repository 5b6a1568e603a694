// data.custom_cls: verl's custom dataset class (a Python class, usually a subclass of verl's RLHFDataset that reads
// its own files) run unchanged in a child process of the embedded installation's python
// (src/data/custom_dataset_loader.py), constructed as verl's create_rl_dataset constructs it and read once, row 0
// to len - 1, at start-up. The rows (verl's __getitem__ dicts: raw_prompt, data_source, reward_model, extra_info,
// ...) then feed data::RLHFDataset like a file's rows.
//
// A child process, not the embedded interpreter: verl's RLHFDataset imports torch, whose Python package must not
// load a second LibTorch into this process, and `datasets` forks workers (num_proc); a class that hangs is ended
// after data.custom_cls.timeout seconds (its process group killed), one that raises or crashes is one error line.
// Packages: those of the embedded installation, PYTHONPATH and VERL_PYTHON_SITE_PACKAGES (python/interpreter.h),
// the working folder first on sys.path (as `python -m verl.trainer.main_ppo` has it).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "verl/io/value.h"

namespace verl::data {

struct CustomDatasetRequest {
  std::string path;  // data.custom_cls.path: a .py file, file://..., or pkg://module.path
  std::string name;  // data.custom_cls.name
  std::vector<std::string> data_files;
  std::string tokenizer_path;  // the actor model's tokenizer folder
  bool trust_remote_code = false;
  nlohmann::ordered_json config;  // the resolved `data` section, as verl hands the class its data config
  int64_t max_samples = -1;       // data.train_max_samples / val_max_samples
  double timeout_s = 600;         // 0: none
  std::string what;               // "train" / "val", for messages
};

struct CustomDatasetRows {
  std::vector<io::Value> rows;  // structs, in dataset order
  std::string class_name;       // its __qualname__
  std::vector<std::string> dropped_tensors;
  std::string source;  // "data.custom_cls 'Name' (path)", for messages
};

// Runs the class; one-line verl::Error naming data.custom_cls on every failure (the class's error, a timeout, a
// row that is not JSON-like or lacks raw_prompt).
CustomDatasetRows load_custom_dataset(const CustomDatasetRequest& request);

}  // namespace verl::data
