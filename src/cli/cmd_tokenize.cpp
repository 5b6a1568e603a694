// `verl tokenize` and `verl detokenize`: stdin text <-> JSON id list with a model folder's tokenizer.
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "verl/cli/cli.h"
#include "verl/common/error.h"
#include "verl/common/input_limits.h"
#include "verl/tokenizer/tokenizer.h"

namespace verl::cli {

const char* const kTokenizeUsage =
    "usage: verl tokenize --tokenizer DIR [--no-special]\n"
    "\n"
    "Reads all of stdin as one UTF-8 text and prints its token ids as a JSON list, as Hugging Face\n"
    "tokenizers would for DIR/tokenizer.json. Special-token strings in the text become their ids.\n"
    "--no-special leaves out the tokens the post-processor adds (add_special_tokens=False).\n";

const char* const kDetokenizeUsage =
    "usage: verl detokenize --tokenizer DIR [--skip-special]\n"
    "\n"
    "Reads a JSON list of token ids on stdin and prints the decoded text (no trailing newline).\n"
    "--skip-special leaves out special tokens (skip_special_tokens=True). Unknown ids are skipped.\n";

namespace {

struct TokenizeArgs {
  std::string dir;
  bool flag = false;
};

// Parses --tokenizer DIR and one optional flag; returns false (after printing why) on a usage mistake.
bool parse_args(const Args& args, const std::string& flag_name, const char* usage, TokenizeArgs& out) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--tokenizer" && i + 1 < args.size()) {
      out.dir = args[++i];
    } else if (args[i] == flag_name) {
      out.flag = true;
    } else {
      std::cerr << "error: unexpected argument '" << args[i] << "'\n" << usage;
      return false;
    }
  }
  if (out.dir.empty()) {
    std::cerr << "error: --tokenizer DIR is required\n" << usage;
    return false;
  }
  return true;
}

std::string read_stdin() {
  std::cin >> std::noskipws;
  return std::string(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
}

}  // namespace

int run_tokenize_command(const Args& args) {
  TokenizeArgs parsed;
  if (!parse_args(args, "--no-special", kTokenizeUsage, parsed)) return 2;
  const auto tokenizer = tokenizer::Tokenizer::from_folder(parsed.dir);
  const std::vector<int32_t> ids = tokenizer.encode(read_stdin(), /*add_special_tokens=*/!parsed.flag);
  std::cout << nlohmann::json(ids).dump() << "\n";
  return 0;
}

int run_detokenize_command(const Args& args) {
  TokenizeArgs parsed;
  if (!parse_args(args, "--skip-special", kDetokenizeUsage, parsed)) return 2;
  const auto tokenizer = tokenizer::Tokenizer::from_folder(parsed.dir);
  const std::string input = read_stdin();
  check_json_limits(input, "stdin");
  nlohmann::json list;
  try {
    list = nlohmann::json::parse(input);
  } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range for a number beyond double
    VERL_FAIL("tokenizer", "stdin: expected a JSON list of token ids: ", e.what());
  }
  VERL_CHECK(list.is_array(), "tokenizer", "stdin: expected a JSON list of token ids, got ", json_excerpt(list));
  std::vector<int32_t> ids;
  for (const auto& item : list) {
    VERL_CHECK(item.is_number_integer() && item.get<int64_t>() >= 0 && item.get<int64_t>() < (int64_t{1} << 31),
               "tokenizer", "stdin: token ids must be non-negative integers, got ", json_excerpt(item));
    ids.push_back(item.get<int32_t>());
  }
  std::cout << tokenizer.decode(ids, /*skip_special_tokens=*/parsed.flag);
  return 0;
}

}  // namespace verl::cli
