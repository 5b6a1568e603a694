// `verl data show|convert|preprocess`: look at parquet / JSONL files, convert between them, and build verl's
// example datasets (gsm8k, math) from their JSONL sources.
#include <algorithm>
#include <iostream>

#include "verl/cli/cli.h"
#include "verl/common/error.h"
#include "verl/common/strings.h"
#include "verl/io/jsonl.h"
#include "verl/io/parquet/reader.h"

namespace verl::cli {

const char* const kDataUsage =
    "usage: verl data show FILE [--schema] [--limit N] [--columns a,b]\n"
    "\n"
    "show     prints FILE (.parquet or .jsonl) as one JSON object per row per line: keys in schema order,\n"
    "         integers as integers, floats in shortest round-trip form. --schema prints the parquet schema\n"
    "         instead; --limit N stops after N rows; --columns a,b reads only those top-level columns.\n";

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

int64_t parse_count(const std::string& text, const std::string& option) {
  size_t used = 0;
  long long v = -1;
  try {
    v = std::stoll(text, &used);
  } catch (const std::exception&) {
  }
  VERL_CHECK(used == text.size() && v >= 0, "data", option, " expects a non-negative integer, got '", text, "'");
  return v;
}

int run_show(const Args& args) {
  ParsedArgs p = parse_args(args, {"--schema"}, {"--limit", "--columns"});
  VERL_CHECK(p.positional.size() == 1, "data", "expected one FILE for 'verl data show'");
  const std::string& path = p.positional[0];
  int64_t limit = p.has("--limit") ? parse_count(p.get("--limit"), "--limit") : -1;
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
  for (const auto& row : io::read_jsonl(path)) {
    if (limit >= 0 && shown >= limit) break;
    io::Value out = row;
    if (!columns.empty()) {
      io::Struct picked;
      for (const auto& field : row.as_struct()) {
        if (std::find(columns.begin(), columns.end(), field.first) != columns.end()) picked.push_back(field);
      }
      out = io::Value(std::move(picked));
    }
    std::cout << io::to_json(out) << '\n';
    ++shown;
  }
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
  std::cerr << "error: unknown 'verl data' action '" << args[0] << "'; valid: show, convert, preprocess\n" << kDataUsage;
  return 2;
}

}  // namespace verl::cli
