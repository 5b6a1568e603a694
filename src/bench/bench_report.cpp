#include "verl/bench/bench_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "verl/common/atomic_file.h"
#include "verl/common/error.h"

namespace verl::bench {

std::string format_table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& row : rows) {
    if (width.size() < row.size()) width.resize(row.size(), 0);
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::ostringstream out;
  for (size_t r = 0; r < rows.size(); ++r) {
    std::string line;
    for (size_t i = 0; i < rows[r].size(); ++i) {
      if (i > 0) line += "  ";
      // Text left-aligned in the first column, numbers right-aligned elsewhere.
      const std::string pad(width[i] - rows[r][i].size(), ' ');
      line += i == 0 ? rows[r][i] + pad : pad + rows[r][i];
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << "\n";
    if (r == 0) {
      size_t total = 0;
      for (size_t i = 0; i < width.size(); ++i) total += width[i] + (i > 0 ? 2 : 0);
      out << std::string(total, '-') << "\n";
    }
  }
  return out.str();
}

std::string format_number(double value) {
  if (!std::isfinite(value)) return "n/a";
  char buf[32];
  const double a = std::fabs(value);
  if (a != 0 && (a < 1e-3 || a >= 1e6)) {
    std::snprintf(buf, sizeof(buf), "%.3g", value);
  } else if (a >= 100) {
    std::snprintf(buf, sizeof(buf), "%.0f", value);
  } else if (a >= 10) {
    std::snprintf(buf, sizeof(buf), "%.1f", value);
  } else if (a >= 1) {
    std::snprintf(buf, sizeof(buf), "%.2f", value);
  } else {
    std::snprintf(buf, sizeof(buf), "%.3f", value);
  }
  return buf;
}

std::string format_si(double value, const std::string& unit) {
  static const char* prefixes[] = {"", "k", "M", "G", "T", "P"};
  int i = 0;
  double v = value;
  while (std::fabs(v) >= 1000 && i < 5) {
    v /= 1000;
    ++i;
  }
  return format_number(v) + " " + prefixes[i] + unit;
}

void append_json_record(const std::string& path, const nlohmann::json& record) {
  std::string text;
  if (std::filesystem::exists(path)) {
    std::ifstream in(path, std::ios::binary);
    VERL_CHECK(in.good(), "bench", "cannot read '", path, "' to append to it");
    std::ostringstream buf;
    buf << in.rdbuf();
    text = buf.str();
    if (!text.empty() && text.back() != '\n') text += '\n';
  }
  text += record.dump() + "\n";
  const auto parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent);
  write_file_atomic(path, text);
}

std::string utc_timestamp() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace verl::bench
