// data.custom_cls (data/custom_dataset.h): a Python dataset class run in a child process of the embedded
// installation's python, its rows fed to RLHFDataset with each prompt its raw_prompt (letter tokenizer, ids worked
// out by hand); and the one-line errors for a class that is missing, raises, exits, crashes, hangs or returns rows
// that are not verl's row dicts. (A subclass of verl's own RLHFDataset: oracle.CustomDatasetOracle.)
#include <gtest/gtest.h>

#include <filesystem>

#include "support/config_overrides.h"
#include "support/error_text.h"
#include "support/letter_tokenizer.h"
#include "support/run_command.h"
#include "support/scoped_env.h"
#include "verl/data/custom_dataset.h"
#include "verl/data/rl_dataset.h"

namespace verl::data {
namespace {

using test::error_of;
using Json = nlohmann::json;

// A class in verl's custom-dataset form: the constructor gets data_files, tokenizer, config, processor and
// max_samples; __getitem__ gives verl's row dict. Reads "question\tanswer" lines.
constexpr const char* kQaDataset = R"PY(
try:
    from torch.utils.data import Dataset
except ImportError:  # this Python may have no torch; the loader then asks for __len__ and __getitem__ only
    Dataset = object


class QaDataset(Dataset):
    def __init__(self, data_files, tokenizer, config, processor=None, max_samples=-1):
        self.rows = []
        for path in data_files:
            with open(path) as f:
                self.rows += [line.rstrip("\n").split("\t") for line in f if line.strip()]
        if max_samples > 0:
            self.rows = self.rows[:max_samples]
        self.max_len = config.max_prompt_length  # attribute access, as on verl's DictConfig
        self.prompt_key = config.get("prompt_key")
        self.processor = processor

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, item):
        question, answer = self.rows[item]
        return {"raw_prompt": [{"role": "user", "content": question}], "data_source": "qa",
                "reward_model": {"style": "rule", "ground_truth": answer},
                "extra_info": {"index": item, "max_len": self.max_len, "prompt_key": self.prompt_key,
                               "processor": repr(self.processor)},
                "index": 100 + item, "tools_kwargs": {"calc": {"create_kwargs": {"n": item}}}, "pair": (1, 2.5)}
)PY";

struct CustomCase {
  std::string dir, data_file;
};

CustomCase write_case(const std::string& name, const std::string& module_source) {
  CustomCase c;
  c.dir = test::make_temp_dir(name);
  test::write_file(c.dir + "/my_dataset.py", module_source);
  c.data_file = c.dir + "/qa.tsv";
  test::write_file(c.data_file, "ab\tx\nabc\ty\nzz\tz\nq\tw\n");
  return c;
}

CustomDatasetRequest request_for(const CustomCase& c, const std::string& name = "QaDataset") {
  CustomDatasetRequest r;
  r.path = c.dir + "/my_dataset.py";
  r.name = name;
  r.data_files = {c.data_file};
  r.tokenizer_path = c.dir;  // not read unless the class uses the tokenizer
  r.config = {{"prompt_key", "prompt"}, {"max_prompt_length", 6}};
  r.timeout_s = 60;
  r.what = "train";
  return r;
}

config::DataConfig data_config() {
  config::DataConfig d;
  d.prompt_key = "prompt";
  d.max_prompt_length = 6;
  d.truncation = "left";
  d.return_raw_chat = true;
  return d;
}

TEST(CustomDataset, TheClassRowsFeedTheDatasetInOrderWithTheirRawPrompt) {
  const CustomCase c = write_case("custom_dataset_rows", kQaDataset);
  CustomDatasetRequest request = request_for(c);
  request.max_samples = 3;
  CustomDatasetRows rows = load_custom_dataset(request);
  EXPECT_EQ(rows.class_name, "QaDataset");
  ASSERT_EQ(rows.rows.size(), 3u);  // the class applied max_samples

  auto tokenizer = std::make_shared<const tokenizer::Tokenizer>(
      tokenizer::Tokenizer::from_folder(test::letter_tokenizer_dir("custom_dataset_tok")));
  const RLHFDataset dataset(std::move(rows), tokenizer, data_config());
  ASSERT_EQ(dataset.size(), 3);
  const protocol::DataProto batch = dataset.collate({0, 1, 2});
  // "u|ab>" = 25 3 5 6 4, left-padded to 6; "u|abc>" fits exactly; "u|zz>" padded.
  const torch::Tensor expected_ids =
      torch::tensor({0, 25, 3, 5, 6, 4, 25, 3, 5, 6, 7, 4, 0, 25, 3, 30, 30, 4}, torch::kInt64).view({3, 6});
  EXPECT_TRUE(torch::equal(batch.tensor("input_ids"), expected_ids)) << batch.tensor("input_ids");
  EXPECT_TRUE(torch::equal(batch.tensor("attention_mask"), (expected_ids != 0).to(torch::kInt64)));

  const auto& nt = batch.non_tensor_batch;
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(nt.at("data_source")[i], "qa");
    EXPECT_EQ(nt.at("reward_model")[i]["ground_truth"], std::string(1, "xyz"[i]));
    EXPECT_EQ(nt.at("index")[i], 100 + i);  // the row's own index, not extra_info's
    EXPECT_EQ(nt.at("tools_kwargs")[i], Json::parse(R"({"calc":{"create_kwargs":{"n":)" + std::to_string(i) + "}}}"));
    EXPECT_EQ(nt.at("interaction_kwargs")[i], Json::object());
    EXPECT_EQ(nt.at("pair")[i], Json::parse("[1, 2.5]"));
    EXPECT_EQ(nt.at("extra_info")[i]["max_len"], 6);
    EXPECT_EQ(nt.at("extra_info")[i]["prompt_key"], "prompt");
    EXPECT_EQ(nt.at("extra_info")[i]["processor"], "None");
    EXPECT_EQ(nt.at("raw_prompt")[i][0]["role"], "user");
  }
  EXPECT_EQ(nt.at("raw_prompt_ids")[1], Json::parse("[25, 3, 5, 6, 7, 4]"));
}

// verl's load_extern_object forms: a path, file://path, or pkg://module (imported from sys.path: PYTHONPATH here).
TEST(CustomDataset, TheClassIsFoundByPathFileUrlOrPackage) {
  const CustomCase c = write_case("custom_dataset_forms", kQaDataset);
  const test::ScopedEnvVar pythonpath("PYTHONPATH", c.dir);
  for (const std::string& path : {"file://" + c.dir + "/my_dataset.py", std::string("pkg://my_dataset")}) {
    CustomDatasetRequest request = request_for(c);
    request.path = path;
    EXPECT_EQ(load_custom_dataset(request).rows.size(), 4u) << path;
  }
}

TEST(CustomDataset, ErrorsNameTheClassAndTheCause) {
  struct Case {
    std::string what, source, name, expected;
    double timeout = 60;
  };
  const std::string base =
      "class Base:\n    def __len__(self):\n        return 1\n    def __getitem__(self, i):\n        return {}\n";
  const std::vector<Case> cases = {
      {"no such class", kQaDataset, "Nope", "has no 'Nope'"},
      {"not a class", "def QaDataset(**kwargs):\n    return []\n", "QaDataset", "is a function, expected a class"},
      {"constructor raises",
       base + "class QaDataset(Base):\n    def __init__(self, **kwargs):\n"
              "        raise ValueError('no such split')\n"
              "    def __getitem__(self, i):\n        return {}\n",
       "QaDataset", "failed on the train data: ValueError: no such split (at "},
      {"row not a dict",
       base + "class QaDataset(Base):\n    def __init__(self, **kwargs):\n        pass\n"
              "    def __getitem__(self, i):\n        return [1]\n",
       "QaDataset", "row 0 is a list, expected a dict"},
      {"no raw_prompt",
       base + "class QaDataset(Base):\n    def __init__(self, **kwargs):\n        pass\n"
              "    def __getitem__(self, i):\n        return {'prompt': []}\n",
       "QaDataset", "row 0 (train) has no 'raw_prompt'"},
      {"a set",
       base + "class QaDataset(Base):\n    def __init__(self, **kwargs):\n        pass\n"
              "    def __getitem__(self, i):\n        return {'raw_prompt': [], 'tags': {1}}\n",
       "QaDataset", "row 0['tags'] is a builtins.set, expected JSON-like values"},
      {"nan",
       base + "class QaDataset(Base):\n    def __init__(self, **kwargs):\n        pass\n"
              "    def __getitem__(self, i):\n        return {'raw_prompt': [], 'extra': {'s': float('nan')}}\n",
       "QaDataset", "row 0['extra']['s'] is nan, which JSON cannot hold"},
      {"on_batch_end", base + "class QaDataset(Base):\n    def on_batch_end(self, batch):\n        pass\n", "QaDataset",
       "defines on_batch_end (a dataset that changes after each training batch"},
      {"os._exit",
       "import os\n" + base +
           "class QaDataset(Base):\n    def __init__(self, **kwargs):\n"
           "        os._exit(3)\n",
       "QaDataset", "exited with code 3 before every row of the train data was read"},
      {"killed",
       "import os, signal\n" + base +
           "class QaDataset(Base):\n    def __init__(self, **kwargs):\n"
           "        os.kill(os.getpid(), signal.SIGKILL)\n",
       "QaDataset", "was ended by signal 9"},
      {"hangs",
       "import time\n" + base +
           "class QaDataset(Base):\n    def __init__(self, **kwargs):\n"
           "        time.sleep(600)\n",
       "QaDataset", "did not finish loading the train data within 1 s (data.custom_cls.timeout; 0: no limit)", 1},
  };
  for (const Case& k : cases) {
    const CustomCase c = write_case("custom_dataset_error", k.source);
    CustomDatasetRequest request = request_for(c, k.name);
    request.timeout_s = k.timeout;
    const std::string error = error_of([&] { load_custom_dataset(request); });
    EXPECT_NE(error.find("data.custom_cls '" + k.name + "'"), std::string::npos) << k.what << ": " << error;
    EXPECT_NE(error.find(k.expected), std::string::npos) << k.what << ": " << error;
    EXPECT_EQ(error.find('\n'), std::string::npos) << k.what << ": " << error;
  }

  CustomCase c = write_case("custom_dataset_missing", kQaDataset);
  CustomDatasetRequest missing = request_for(c);
  missing.path = c.dir + "/nowhere.py";
  EXPECT_NE(error_of([&] { load_custom_dataset(missing); }).find("file '" + c.dir + "/nowhere.py' does not exist"),
            std::string::npos);
}

TEST(CustomDataset, ThePathNeedsAClassName) {
  EXPECT_NE(test::config_error_of({"data.custom_cls.path=my_dataset.py"})
                .find("data.custom_cls.path is 'my_dataset.py' but data.custom_cls.name is null"),
            std::string::npos);
  EXPECT_EQ(test::config_error_of({"data.custom_cls.path=my_dataset.py", "data.custom_cls.name=QaDataset"}), "");
  EXPECT_NE(test::config_error_of({"data.custom_cls.timeout=-1"}).find("data.custom_cls.timeout must be"),
            std::string::npos);
}

}  // namespace
}  // namespace verl::data
