// verl sft --config-name sft_trainer_engine's dataset against verl 0.9.1's own MultiTurnSFTDataset
// (tests/golden/data/multiturn_sft_reference.py under .venv/test, transformers' AutoTokenizer on the same folders):
// the tokens, loss masks and position ids of every row, over three chat templates (ChatML with tools; one with a
// default system turn and an enable_thinking switch; one that renders the last turn differently), both pad modes,
// the three truncations, verl's enable_thinking default, a per-row enable_thinking column and
// apply_chat_template_kwargs. The rows a case errs on (too long under truncation=error, a per-turn / whole mismatch)
// must be the same.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/run_command.h"
#include "support/test_python.h"
#include "support/tiny_sft_setup.h"
#include "verl/common/error.h"
#include "verl/config/sft_config.h"
#include "verl/data/multiturn_sft.h"
#include "verl/data/sft_dataset.h"
#include "verl/io/jsonl.h"
#include "verl/io/parquet/reader.h"

namespace verl::test {
namespace {

using ojson = nlohmann::ordered_json;

// A copy of the tokenizer folder `from` with another chat template.
std::string tokenizer_with_template(const std::string& from, const std::string& to, const std::string& chat_template) {
  std::filesystem::create_directories(to);
  for (const auto& entry : std::filesystem::directory_iterator(from)) {
    std::filesystem::copy_file(entry.path(), to + "/" + entry.path().filename().string(),
                               std::filesystem::copy_options::overwrite_existing);
  }
  ojson config = ojson::parse(read_file(to + "/tokenizer_config.json"));
  config["chat_template"] = chat_template;
  write_file(to + "/tokenizer_config.json", config.dump(2));
  return to;
}

// Rows written as JSONL and turned into parquet by pyarrow (Table.from_pylist), the file both sides read.
std::string write_parquet_with_pyarrow(const std::string& dir, const std::string& name, const ojson& rows) {
  std::string jsonl;
  for (const auto& row : rows) jsonl += row.dump() + "\n";
  write_file(dir + "/" + name + ".jsonl", jsonl);
  const std::string out = dir + "/" + name + ".parquet";
  const CommandResult r = run_command(test_python() +
                                      "-c \"import json, sys, pyarrow as pa, pyarrow.parquet as pq; "
                                      "rows = [json.loads(l) for l in open(sys.argv[1])]; "
                                      "pq.write_table(pa.Table.from_pylist(rows), sys.argv[2])\" " +
                                      dir + "/" + name + ".jsonl " + out);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return out;
}

ojson message(const std::string& role, const std::string& content) { return {{"role", role}, {"content", content}}; }

ojson conversations(bool with_tools) {
  const ojson add_tool = {{"type", "function"},
                          {"function",
                           {{"name", "add"},
                            {"description", "Add two integers"},
                            {"parameters",
                             {{"type", "object"},
                              {"properties", {{"a", {{"type", "integer"}}}, {"b", {{"type", "integer"}}}}},
                              {"required", {"a", "b"}}}}}}};
  ojson call = message("assistant", "");
  call["tool_calls"] =
      ojson::array({{{"type", "function"}, {"function", {{"name", "add"}, {"arguments", "{\"a\": 12, \"b\": 30}"}}}}});
  ojson long_talk = ojson::array({message("system", "You add numbers.")});
  for (int i = 0; i < 6; ++i) {
    long_talk.push_back(message("user", "what is " + std::to_string(i) + " plus " + std::to_string(i + 1) + "?"));
    long_talk.push_back(message("assistant", "it is " + std::to_string(2 * i + 1)));
  }
  ojson rows = ojson::array({
      {{"messages", ojson::array({message("user", "what is 2 plus 3?"), message("assistant", "5")})}},
      {{"messages", ojson::array({message("system", "be brief"), message("user", "a"), message("assistant", "b"),
                                  message("user", "c"), message("assistant", "d")})}},
      {{"messages", ojson::array({message("user", "add 12 and 30"), call, message("tool", "42"),
                                  message("assistant", "the sum is 42")})}},
      {{"messages", long_talk}},
  });
  // verl passes a null tools cell on as pandas' NA, which the template cannot iterate: every row has tools or none.
  if (with_tools) {
    for (auto& row : rows) row["tools"] = ojson::array({add_tool});
  }
  return rows;
}

// Qwen 2.5's shape: a default system turn when the conversation has none; <think> before an assistant turn when
// enable_thinking is set.
const char* kSystemThinkingTemplate =
    "{%- if messages[0]['role'] != 'system' %}{{ '<|im_start|>system\\nYou add numbers.<|im_end|>\\n' }}{%- endif %}"
    "{%- for m in messages %}{{ '<|im_start|>' + m['role'] + '\\n' }}"
    "{%- if m['role'] == 'assistant' and enable_thinking is defined and enable_thinking %}{{ '<think>' }}{%- endif %}"
    "{{ m['content'] + '<|im_end|>\\n' }}{%- endfor %}"
    "{%- if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{%- endif %}";

// Renders the last message differently (as Qwen3's thinking templates treat the last turn).
const char* kLastTurnTemplate =
    "{%- for m in messages %}{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] }}"
    "{%- if loop.last %}{{ ' (end)' }}{%- endif %}{{ '<|im_end|>\\n' }}{%- endfor %}"
    "{%- if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{%- endif %}";

struct GoldenCase {
  std::string name, tokenizer_dir, file;
  std::vector<std::string> overrides;  // verl sft --config-name sft_trainer_engine keys
};

config::SFTDataConfig engine_data_config(const GoldenCase& c) {
  config::ConfigArgs args;
  args.config_name = "sft_trainer_engine";
  args.overrides = {"trainer.device=cpu", "data.train_files=" + c.file, "model.path=" + c.tokenizer_dir};
  args.overrides.insert(args.overrides.end(), c.overrides.begin(), c.overrides.end());
  return config::load_sft_config(args).sft.data;
}

// What verl's dataset gets: the same settings, verl's own default 'none' for enable_thinking_default unless the case
// sets it null (verl reads 'none' itself).
ojson verl_data_config(const GoldenCase& c, const config::SFTDataConfig& d) {
  const bool unset =
      std::find(c.overrides.begin(), c.overrides.end(), "data.enable_thinking_default=null") != c.overrides.end();
  const ojson enable_thinking_default = unset ? ojson(nullptr) : ojson("none");
  return {{"messages_key", d.messages_key},
          {"tools_key", d.tools_key},
          {"enable_thinking_key", d.enable_thinking_key},
          {"enable_thinking_default", enable_thinking_default},
          {"max_length", d.max_length},
          {"truncation", d.truncation},
          {"pad_mode", d.pad_mode},
          {"apply_chat_template_kwargs", d.apply_chat_template_kwargs},
          {"ignore_input_ids_mismatch", d.ignore_input_ids_mismatch}};
}

std::vector<int64_t> ints(const ojson& list) { return list.get<std::vector<int64_t>>(); }

TEST(MultiTurnSFTGolden, RowsEqualVerlsMultiTurnSFTDataset) {
  const std::string dir = make_temp_dir("multiturn_sft_golden");
  TinySFTSetup s = make_tiny_sft_setup(dir + "/setup", 2, 2);
  const std::string chatml =
      tokenizer_with_template(s.tokenizer_dir, dir + "/chatml_tools", tokenizer::chatml_tools_template());
  const std::string system = tokenizer_with_template(s.tokenizer_dir, dir + "/system", kSystemThinkingTemplate);
  const std::string last = tokenizer_with_template(s.tokenizer_dir, dir + "/last", kLastTurnTemplate);
  const std::string talks = write_parquet_with_pyarrow(dir, "talks", conversations(false));
  const std::string tooled = write_parquet_with_pyarrow(dir, "tooled", conversations(true));
  ojson thinking_rows = conversations(false);
  for (size_t i = 0; i < thinking_rows.size(); ++i) thinking_rows[i]["enable_thinking"] = i % 2 == 0;
  const std::string thinking = write_parquet_with_pyarrow(dir, "thinking", thinking_rows);

  const std::vector<GoldenCase> cases = {
      {"chatml_no_tools", chatml, talks, {"data.max_length=1024"}},
      {"chatml_right", chatml, tooled, {"data.pad_mode=right", "data.max_length=160", "data.truncation=right"}},
      {"chatml_right_cut", chatml, tooled, {"data.pad_mode=right", "data.max_length=48", "data.truncation=right"}},
      {"chatml_left_cut", chatml, tooled, {"data.pad_mode=right", "data.max_length=48", "data.truncation=left"}},
      {"chatml_no_padding_left", chatml, tooled, {"data.max_length=48", "data.truncation=left"}},
      {"chatml_too_long", chatml, tooled, {"data.max_length=48"}},
      {"system_thinking_default", system, talks, {"data.max_length=1024"}},  // verl's 'none': enable_thinking=true
      {"system_no_thinking", system, talks, {"data.max_length=1024", "data.enable_thinking_default=null"}},
      {"system_thinking_column", system, thinking, {"data.max_length=1024", "data.enable_thinking_default=null"}},
      {"system_kwargs",
       system,
       talks,
       {"data.max_length=1024", "data.enable_thinking_default=null",
        "+data.apply_chat_template_kwargs.enable_thinking=true"}},
      {"last_turn_mismatch", last, talks, {"data.max_length=1024"}},
      {"last_turn_ignored", last, talks, {"data.max_length=1024", "data.ignore_input_ids_mismatch=true"}},
  };
  ojson spec = {{"cases", ojson::array()}};
  std::vector<config::SFTDataConfig> configs;
  for (const auto& c : cases) {
    configs.push_back(engine_data_config(c));
    spec["cases"].push_back({{"name", c.name},
                             {"tokenizer_dir", c.tokenizer_dir},
                             {"files", {c.file}},
                             {"config", verl_data_config(c, configs.back())}});
  }
  write_file(dir + "/spec.json", spec.dump());
  const std::string script = std::string(VERL_SOURCE_DIR_FOR_TESTS) + "/tests/golden/data/multiturn_sft_reference.py";
  const CommandResult r = run_command(test_python() + script + " " + dir + "/spec.json " + dir + "/out.json");
  ASSERT_EQ(r.exit_code, 0) << test_python_missing_hint() << "\n" << r.err;
  const ojson out = ojson::parse(read_file(dir + "/out.json"));

  int compared = 0, errors = 0, masked = 0;
  for (size_t k = 0; k < cases.size(); ++k) {
    const GoldenCase& c = cases[k];
    const config::SFTDataConfig& d = configs[k];
    SCOPED_TRACE(c.name);
    const ojson& want = out["cases"][c.name];
    ASSERT_FALSE(want.contains("error")) << want.dump();
    const tokenizer::Tokenizer tok = tokenizer::Tokenizer::from_folder(c.tokenizer_dir);
    const data::MultiTurnSFTTokenizer conversations_tokenizer(tok, d);
    EXPECT_EQ(std::vector<int64_t>(conversations_tokenizer.system_prompt().begin(),
                                   conversations_tokenizer.system_prompt().end()),
              ints(want["system_prompt"]));
    EXPECT_EQ(std::vector<int64_t>(conversations_tokenizer.generation_prompt().begin(),
                                   conversations_tokenizer.generation_prompt().end()),
              ints(want["generation_prompt"]));
    const std::vector<io::Value> rows = io::parquet::read_parquet(c.file);
    ASSERT_EQ(rows.size(), want["rows"].size());
    bool any_error = false;
    for (size_t i = 0; i < rows.size(); ++i) {
      const ojson& w = want["rows"][i];
      if (!w.contains("error")) continue;
      any_error = true;
      ++errors;
      // The row errs here too: in its tokenization (a mismatch), else in the dataset (too long, one-row files).
      bool erred = false;
      try {
        const data::SFTExample e = conversations_tokenizer.tokenize(rows[i], "row " + std::to_string(i));
        erred = static_cast<int64_t>(e.input_ids.size()) > d.max_length && d.truncation == "error";
      } catch (const Error&) {
        erred = true;
      }
      EXPECT_TRUE(erred) << "row " << i << ": verl says " << w["error"];
    }
    if (any_error) {
      EXPECT_THROW(data::SFTDataset({c.file}, tok, d), Error);
      continue;
    }
    const data::SFTDataset ds({c.file}, tok, d);
    const data::SFTBatch all = ds.all();
    for (size_t i = 0; i < rows.size(); ++i) {
      const ojson& w = want["rows"][i];
      const std::vector<int64_t> ids = ints(w["input_ids"]), loss = ints(w["loss_mask"]);
      const std::vector<int64_t> positions = ints(w["position_ids"]);
      // verl's right mode pads to max_length (attention_mask says where); no_padding returns the tokens only.
      std::vector<int64_t> attention =
          w.contains("attention_mask") ? ints(w["attention_mask"]) : std::vector<int64_t>(ids.size(), 1);
      const int64_t row = static_cast<int64_t>(i);
      for (size_t j = 0; j < ids.size(); ++j) {
        const int64_t col = static_cast<int64_t>(j);
        ASSERT_EQ(all.attention_mask[row][col].item<int64_t>(), attention[j]) << "row " << i << " col " << j;
        if (attention[j] == 0) continue;
        ASSERT_EQ(all.input_ids[row][col].item<int64_t>(), ids[j]) << "row " << i << " col " << j;
        ASSERT_EQ(all.loss_mask[row][col].item<int64_t>(), loss[j]) << "row " << i << " col " << j;
        ASSERT_EQ(all.position_ids[row][col].item<int64_t>(), positions[j]) << "row " << i << " col " << j;
        masked += loss[j];
      }
      const int64_t real = all.attention_mask[row].sum().item<int64_t>();
      EXPECT_EQ(real, std::count(attention.begin(), attention.end(), 1)) << "row " << i;
      ++compared;
    }
  }
  EXPECT_GE(compared, 30);
  EXPECT_GE(errors, 2);
  EXPECT_GT(masked, 100);
}

}  // namespace
}  // namespace verl::test
