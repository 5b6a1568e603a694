// `verl data show|convert|preprocess`: look at parquet / JSONL files, convert between them, and build verl's
// example datasets (gsm8k, its multi-turn variants, math) from their JSONL sources.
#include <algorithm>
#include <fstream>
#include <iostream>

#include "verl/cli/cli.h"
#include "verl/cli/option_values.h"
#include "verl/common/error.h"
#include "verl/common/strings.h"
#include "verl/io/jsonl.h"
#include "verl/data/preprocess/preprocess.h"
#include "verl/io/parquet/reader.h"
#include "verl/io/parquet/writer.h"

namespace verl::cli {

const char* const kDataUsage =
    "usage: verl data show FILE [--schema] [--limit N] [--columns a,b]\n"
    "\n"
    "show     prints FILE (.parquet or .jsonl) as one JSON object per row per line: keys in schema order,\n"
    "         integers as integers, floats in shortest round-trip form. --schema prints the parquet schema\n"
    "         instead; --limit N stops after N rows; --columns a,b reads only those top-level columns.\n"
    "\n"
    "usage: verl data convert IN OUT [--codec snappy|zstd|gzip|none] [--row-group-rows N]\n"
    "\n"
    "convert  JSONL to parquet (schema inferred: ints int64, floats double, text string, lists, structs) or\n"
    "         parquet to JSONL, by the file extensions (.parquet, .jsonl/.json). Parquet to JSONL streams\n"
    "         one row group at a time; JSONL input is read whole (the schema is inferred from every row).\n"
    "\n"
    "usage: verl data preprocess gsm8k|gsm8k_multiturn_w_tool|gsm8k_multiturn_w_interaction|math\n"
    "                            --input FILE.jsonl --split NAME --output FILE.parquet\n"
    "\n"
    "preprocess  builds verl's example datasets (examples/data_preprocess/gsm8k.py, gsm8k_multiturn_w_tool.py,\n"
    "         gsm8k_multiturn_w_interaction.py, math_dataset.py) from their JSONL sources: gsm8k rows\n"
    "         {question, answer}, MATH rows {problem, solution, ...}. The multi-turn ones write verl's system and\n"
    "         user messages with extra_info.tools_kwargs (calc_gsm8k_reward) and interaction_kwargs.\n"
    "\n"
    "usage: verl data preprocess digit_completion --output-dir DIR [--seed S] [--reward-columns]\n"
    "\n"
    "         verl's arithmetic-sequence toy task: all 1000 prompts \"a,b:9,k\", shuffled with seed S\n"
    "         (default 0) and split 80/20 into DIR/train.parquet and DIR/test.parquet (a prompt column, as\n"
    "         verl writes it). --reward-columns adds data_source \"digit_completion\" and\n"
    "         reward_model.ground_truth (the prompt), so `verl train` scores it (examples/digit_completion_ppo.yaml).\n"
    "\n"
    "usage: verl data preprocess arithmetic --output-dir DIR [--seed S] [--size N] [--test-size N]\n"
    "                                       [--sft-size N] [--sft-val-size N]\n"
    "\n"
    "         the embedded default's task: integer problems \"12+35=\", \"71-80=\", \"13*7=\" answered \"#### N\"\n"
    "         (data_source \"arithmetic\", scored by the GSM8K rule). Writes DIR/train.parquet (--size rows,\n"
    "         default 10000) and DIR/test.parquet (--test-size distinct held-out problems, default 500) in verl's\n"
    "         schema, and DIR/sft_train.parquet (--sft-size, default 40000) / DIR/sft_val.parquet (--sft-val-size,\n"
    "         default 500) with prompt / response columns. Test and SFT-val problems appear in no other split.\n"
    "\n"
    "usage: verl data preprocess arithmetic_tool --output-dir DIR [--seed S] [--size N] [--test-size N]\n"
    "                                            [--sft-size N] [--sft-val-size N] [--tool-fraction X]\n"
    "\n"
    "         `verl demo --tools`'s task: \"12*34+5=\" with a calculator tool (examples/multi_turn/\n"
    "         calculator_tool_config.yaml). The same four files and sizes as arithmetic (--sft-size default\n"
    "         20000): train/test in verl's multi-turn layout (system + user messages, extra_info.tools_kwargs.\n"
    "         calculator.create_kwargs), sft_train/sft_val with the tool listing in the system message and, for\n"
    "         a share X of rows (default 0.85), the tool-call transcript as the response.\n";

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool is_parquet(const std::string& path) { return ends_with(path, ".parquet") || ends_with(path, ".pq"); }

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    if (end > start) parts.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

// Values of `--name VALUE` options; flags listed in `flags` take no value. Positional args are returned.
struct ParsedArgs {
  std::vector<std::string> positional;
  std::vector<std::pair<std::string, std::string>> options;
  std::string get(const std::string& name, const std::string& fallback = "") const {
    for (const auto& o : options) {
      if (o.first == name) return o.second;
    }
    return fallback;
  }
  bool has(const std::string& name) const {
    for (const auto& o : options) {
      if (o.first == name) return true;
    }
    return false;
  }
};

ParsedArgs parse_args(const Args& args, const std::vector<std::string>& flags, const std::vector<std::string>& valued) {
  ParsedArgs parsed;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.rfind("--", 0) != 0) {
      parsed.positional.push_back(a);
      continue;
    }
    std::string name = a, value;
    size_t eq = a.find('=');
    if (eq != std::string::npos) {
      name = a.substr(0, eq);
      value = a.substr(eq + 1);
    }
    bool is_flag = std::find(flags.begin(), flags.end(), name) != flags.end();
    bool is_valued = std::find(valued.begin(), valued.end(), name) != valued.end();
    std::vector<std::string> all = flags;
    all.insert(all.end(), valued.begin(), valued.end());
    VERL_CHECK(is_flag || is_valued, "data", "unknown option '", name, "'; options: ", join(all, ", "));
    if (is_valued && eq == std::string::npos) {
      VERL_CHECK(i + 1 < args.size(), "data", "option ", name, " needs a value");
      value = args[++i];
    }
    parsed.options.emplace_back(name, value);
  }
  return parsed;
}

int run_show(const Args& args) {
  ParsedArgs p = parse_args(args, {"--schema"}, {"--limit", "--columns"});
  VERL_CHECK(p.positional.size() == 1, "data", "expected one FILE for 'verl data show'");
  const std::string& path = p.positional[0];
  int64_t limit = p.has("--limit") ? parse_count_option("--limit", p.get("--limit")) : -1;
  std::vector<std::string> columns = split_commas(p.get("--columns"));
  std::string line;
  int64_t shown = 0;
  if (is_parquet(path)) {
    io::parquet::Reader reader(path);
    if (p.has("--schema")) {
      std::cout << reader.schema().to_text();
      return 0;
    }
    reader.select_columns(columns);
    for (size_t g = 0; g < reader.num_row_groups() && (limit < 0 || shown < limit); ++g) {
      for (const auto& row : reader.read_row_group(g)) {
        if (limit >= 0 && shown >= limit) break;
        line.clear();
        io::append_json(row, line);
        line += '\n';
        std::cout << line;
        ++shown;
      }
    }
    return 0;
  }
  VERL_CHECK(!p.has("--schema"), "data", path, ": --schema needs a parquet file");
  std::ifstream file(path, std::ios::binary);
  VERL_CHECK(file.is_open(), "data", path, ": cannot open file");
  size_t number = 0;
  while ((limit < 0 || shown < limit) && std::getline(file, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    io::Value row = io::parse_json(line, path + ":" + std::to_string(number));
    io::Value out = row;
    if (!columns.empty()) {
      VERL_CHECK(row.is_struct(), "data", path, ":", number, ": --columns needs JSON objects");
      io::Struct picked;
      for (const auto& field : row.as_struct()) {
        if (std::find(columns.begin(), columns.end(), field.first) != columns.end()) picked.push_back(field);
      }
      out = io::Value(std::move(picked));
    }
    std::cout << io::to_json(out) << '\n';
    ++shown;
  }
  VERL_CHECK(!file.bad(), "data", path, ": read error");
  return 0;
}

io::parquet::Codec parse_codec(const std::string& name) {
  if (name == "snappy") return io::parquet::Codec::kSnappy;
  if (name == "zstd") return io::parquet::Codec::kZstd;
  if (name == "gzip") return io::parquet::Codec::kGzip;
  if (name == "none" || name == "uncompressed") return io::parquet::Codec::kUncompressed;
  VERL_FAIL("data", "unknown codec '", name, "'; valid: snappy, zstd, gzip, none");
}

int run_convert(const Args& args) {
  ParsedArgs p = parse_args(args, {}, {"--codec", "--row-group-rows"});
  VERL_CHECK(p.positional.size() == 2, "data", "expected 'verl data convert IN OUT'");
  const std::string& in = p.positional[0];
  const std::string& out = p.positional[1];
  if (is_parquet(in) && !is_parquet(out)) {
    // Parquet to JSONL streams one row group at a time.
    io::parquet::Reader reader(in);
    std::ofstream file(out, std::ios::binary | std::ios::trunc);
    VERL_CHECK(file.is_open(), "data", out, ": cannot open for writing");
    std::string line;
    size_t count = 0;
    for (size_t g = 0; g < reader.num_row_groups(); ++g) {
      for (const auto& row : reader.read_row_group(g)) {
        line.clear();
        io::append_json(row, line);
        line += '\n';
        file.write(line.data(), static_cast<std::streamsize>(line.size()));
        ++count;
      }
    }
    file.close();
    VERL_CHECK(!file.fail(), "data", out, ": write failed");
    std::cerr << "wrote " << count << " rows to " << out << "\n";
    return 0;
  }
  std::vector<io::Value> rows = is_parquet(in) ? io::parquet::read_parquet(in) : io::read_jsonl(in);
  if (is_parquet(out)) {
    io::parquet::WriterOptions options;
    options.codec = parse_codec(p.get("--codec", "snappy"));
    if (p.has("--row-group-rows")) {
      options.row_group_rows = static_cast<size_t>(parse_count_option("--row-group-rows", p.get("--row-group-rows")));
    }
    io::parquet::write_parquet(out, rows, options);
  } else {
    io::write_jsonl(out, rows);
  }
  std::cerr << "wrote " << rows.size() << " rows to " << out << "\n";
  return 0;
}

int run_digit_completion(const ParsedArgs& p) {
  VERL_CHECK(p.has("--output-dir"), "data", "verl data preprocess digit_completion needs --output-dir");
  uint64_t seed = p.has("--seed") ? static_cast<uint64_t>(parse_count_option("--seed", p.get("--seed"))) : 0;
  data::DigitCompletionSplits splits = data::digit_completion_splits(seed);
  if (p.has("--reward-columns")) splits = data::with_digit_completion_reward_columns(splits);
  const std::string dir = p.get("--output-dir");
  data::write_parquet_splits(dir, {{"train", &splits.train}, {"test", &splits.test}});
  std::cerr << "wrote " << splits.train.rows.size() << " train and " << splits.test.rows.size() << " test rows to "
            << dir << "\n";
  return 0;
}

// --seed, --size, --test-size, --sft-size, --sft-val-size of the generated tasks with RL and SFT splits.
template <typename Options>
void read_split_options(const ParsedArgs& p, Options& options) {
  if (p.has("--seed")) options.seed = static_cast<uint64_t>(parse_count_option("--seed", p.get("--seed")));
  if (p.has("--size")) options.train_size = parse_count_option("--size", p.get("--size"));
  if (p.has("--test-size")) options.test_size = parse_count_option("--test-size", p.get("--test-size"));
  if (p.has("--sft-size")) options.sft_train_size = parse_count_option("--sft-size", p.get("--sft-size"));
  if (p.has("--sft-val-size")) options.sft_val_size = parse_count_option("--sft-val-size", p.get("--sft-val-size"));
}

template <typename Options>
void report_rl_and_sft_rows(const Options& options, const std::string& dir) {
  std::cerr << "wrote " << options.train_size << " train, " << options.test_size << " test, " << options.sft_train_size
            << " sft_train and " << options.sft_val_size << " sft_val rows to " << dir << "\n";
}

int run_arithmetic(const ParsedArgs& p) {
  VERL_CHECK(p.has("--output-dir"), "data", "verl data preprocess arithmetic needs --output-dir");
  data::ArithmeticOptions options;
  read_split_options(p, options);
  data::write_arithmetic_dataset(p.get("--output-dir"), options);
  report_rl_and_sft_rows(options, p.get("--output-dir"));
  return 0;
}

int run_arithmetic_tool(const ParsedArgs& p) {
  VERL_CHECK(p.has("--output-dir"), "data", "verl data preprocess arithmetic_tool needs --output-dir");
  data::ArithmeticToolOptions options;
  read_split_options(p, options);
  if (p.has("--tool-fraction")) {
    options.tool_fraction = parse_number_option("--tool-fraction", p.get("--tool-fraction"));
  }
  data::write_arithmetic_tool_dataset(p.get("--output-dir"), options);
  report_rl_and_sft_rows(options, p.get("--output-dir"));
  return 0;
}

int run_preprocess(const Args& args) {
  ParsedArgs p = parse_args(args, {"--reward-columns"}, {"--input", "--split", "--output", "--output-dir", "--seed", "--size",
                                       "--test-size", "--sft-size", "--sft-val-size", "--tool-fraction"});
  VERL_CHECK(p.positional.size() == 1, "data",
             "expected 'verl data preprocess gsm8k|math --input ... --split ... --output ...' or "
             "'verl data preprocess digit_completion|arithmetic|arithmetic_tool --output-dir DIR [--seed S]'");
  const std::string& dataset = p.positional[0];
  data::check_preprocess_dataset(dataset);
  VERL_CHECK(!p.has("--reward-columns") || dataset == "digit_completion", "data",
             "--reward-columns is an option of digit_completion only (", dataset, " rows carry their reward columns)");
  VERL_CHECK(!p.has("--tool-fraction") || dataset == "arithmetic_tool", "data",
             "--tool-fraction is an option of arithmetic_tool only");
  if (dataset == "digit_completion") return run_digit_completion(p);
  if (dataset == "arithmetic") return run_arithmetic(p);
  if (dataset == "arithmetic_tool") return run_arithmetic_tool(p);
  for (const char* option : {"--input", "--split", "--output"}) {
    VERL_CHECK(p.has(option), "data", "verl data preprocess ", dataset, " needs ", option);
  }
  std::vector<io::Value> source = io::read_jsonl(p.get("--input"));
  data::PreprocessedDataset result = data::preprocess_dataset(dataset, source, p.get("--split"), p.get("--input"));
  io::parquet::write_parquet(p.get("--output"), result.rows, result.schema);
  std::cerr << "wrote " << result.rows.size() << " rows to " << p.get("--output") << "\n";
  return 0;
}

}  // namespace

int run_data_command(const Args& args) {
  if (args.empty()) {
    std::cerr << "error: expected 'verl data show|convert|preprocess ...'\n" << kDataUsage;
    return 2;
  }
  Args rest(args.begin() + 1, args.end());
  if (args[0] == "show") return run_show(rest);
  if (args[0] == "convert") return run_convert(rest);
  if (args[0] == "preprocess") return run_preprocess(rest);
  std::cerr << "error: unknown 'verl data' action '" << args[0] << "'; valid: show, convert, preprocess\n" << kDataUsage;
  return 2;
}

}  // namespace verl::cli
