#include "verl/io/jsonl.h"

#include <fstream>

#include "verl/common/error.h"

namespace verl::io {

std::vector<Value> read_jsonl(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  VERL_CHECK(in.is_open(), "jsonl", path, ": cannot open file");
  std::vector<Value> rows;
  std::string line;
  size_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    rows.push_back(parse_json(line, path + ":" + std::to_string(number)));
  }
  VERL_CHECK(!in.bad(), "jsonl", path, ": read error");
  return rows;
}

void write_jsonl(const std::string& path, const std::vector<Value>& rows) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  VERL_CHECK(out.is_open(), "jsonl", path, ": cannot open for writing");
  std::string line;
  for (const auto& row : rows) {
    line.clear();
    append_json(row, line);
    line += '\n';
    out.write(line.data(), static_cast<std::streamsize>(line.size()));
  }
  out.flush();
  VERL_CHECK(out.good(), "jsonl", path, ": write failed");
}

}  // namespace verl::io
