// jsonl backend: RUN_DIR/metrics.jsonl, one flat JSON object per step, flushed after every line.
// Also the reader `verl report` and the html backend use to rebuild a run's history.
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>

#include "verl/common/error.h"
#include "verl/common/logging.h"
#include "verl/common/strings.h"
#include "verl/trainer/tracking.h"

namespace verl::trainer {

namespace {

class JsonlBackend : public TrackingBackend {
 public:
  explicit JsonlBackend(const std::string& run_dir)
      : path_((std::filesystem::path(run_dir) / "metrics.jsonl").string()) {
    // Append: a resumed run continues the same file (the reader keeps the last record of a step).
    drop_torn_last_line();
    file_ = std::fopen(path_.c_str(), "ab");
    VERL_CHECK(file_ != nullptr, "tracking", "cannot open '", path_, "' for appending: ", std::strerror(errno));
  }
  ~JsonlBackend() override { close(); }

  void log(const Metrics& metrics, int64_t step) override {
    VERL_CHECK(file_ != nullptr, "tracking", "metrics.jsonl is already closed");
    std::string line = format_jsonl_record(metrics, step) + "\n";
    // One write per line, then flush to the OS: a crash of this process loses at most nothing logged so far.
    size_t written = std::fwrite(line.data(), 1, line.size(), file_);
    VERL_CHECK(written == line.size() && std::fflush(file_) == 0, "tracking", "writing '", path_,
               "' failed: ", std::strerror(errno));
  }
  void finish() override { close(); }

 private:
  // A run killed mid-write leaves a last line without its newline; appending to it would glue the resumed
  // run's first record onto the torn one, so it is cut off before appending.
  void drop_torn_last_line() {
    std::error_code error;
    const auto size = std::filesystem::file_size(path_, error);
    if (error || size == 0) return;
    std::ifstream in(path_, std::ios::binary);
    char last = '\n';
    in.seekg(-1, std::ios::end);
    in.get(last);
    if (last == '\n') return;  // the usual case: only the last byte is read
    in.seekg(0);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    in.close();
    const size_t last_newline = text.rfind('\n');
    const size_t keep = last_newline == std::string::npos ? 0 : last_newline + 1;
    VERL_LOG(Warn, "tracking") << path_ << ": dropping a truncated last line (the previous run stopped mid-write)";
    std::filesystem::resize_file(path_, keep, error);
    VERL_CHECK(!error, "tracking", "cannot truncate '", path_, "': ", error.message());
  }
  void close() {
    if (file_ != nullptr) std::fclose(file_);
    file_ = nullptr;
  }
  std::string path_;
  std::FILE* file_ = nullptr;
};

// A minimal reader for the flat objects this file holds: string keys, number / NaN / Infinity / null values.
class FlatJsonParser {
 public:
  FlatJsonParser(const std::string& text, const std::string& where) : text_(text), where_(where) {}

  std::map<std::string, double> parse() {
    std::map<std::string, double> object;
    skip_space();
    expect('{');
    skip_space();
    if (peek() == '}') {
      ++pos_;
    } else {
      while (true) {
        skip_space();
        std::string key = parse_string();
        skip_space();
        expect(':');
        skip_space();
        std::optional<double> value = parse_value();
        if (value) object[key] = *value;
        skip_space();
        if (peek() == ',') {
          ++pos_;
          continue;
        }
        expect('}');
        break;
      }
    }
    skip_space();
    VERL_CHECK(pos_ == text_.size(), "report", where_, ": unexpected text after the JSON object");
    return object;
  }

 private:
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  void skip_space() {
    while (pos_ < text_.size() && std::strchr(" \t\r\n", text_[pos_]) != nullptr) ++pos_;
  }
  void expect(char c) {
    VERL_CHECK(peek() == c, "report", where_, ": expected '", c, "' at column ", pos_ + 1);
    ++pos_;
  }
  bool consume(const char* word) {
    size_t n = std::strlen(word);
    if (text_.compare(pos_, n, word) != 0) return false;
    pos_ += n;
    return true;
  }
  std::string parse_string() {
    expect('"');
    std::string out;
    while (true) {
      VERL_CHECK(pos_ < text_.size(), "report", where_, ": unterminated string");
      char c = text_[pos_++];
      if (c == '"') return out;
      if (c != '\\') {
        out += c;
        continue;
      }
      VERL_CHECK(pos_ < text_.size(), "report", where_, ": unterminated escape");
      char e = text_[pos_++];
      switch (e) {
        case '"': case '\\': case '/': out += e; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'u': {
          VERL_CHECK(pos_ + 4 <= text_.size(), "report", where_, ": bad \\u escape");
          unsigned code = static_cast<unsigned>(std::stoul(text_.substr(pos_, 4), nullptr, 16));
          pos_ += 4;
          // UTF-8 encode (surrogate pairs are not produced by our writer; they are kept as two code units).
          if (code < 0x80) {
            out += static_cast<char>(code);
          } else if (code < 0x800) {
            out += static_cast<char>(0xC0 | (code >> 6));
            out += static_cast<char>(0x80 | (code & 0x3F));
          } else {
            out += static_cast<char>(0xE0 | (code >> 12));
            out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (code & 0x3F));
          }
          break;
        }
        default: VERL_FAIL("report", where_, ": bad escape '\\", e, "'");
      }
    }
  }
  std::optional<double> parse_value() {
    if (consume("null")) return std::nullopt;
    if (consume("NaN")) return std::nan("");
    if (consume("Infinity")) return HUGE_VAL;
    if (consume("-Infinity")) return -HUGE_VAL;
    if (consume("true")) return 1.0;
    if (consume("false")) return 0.0;
    const char* begin = text_.c_str() + pos_;
    char* end = nullptr;
    double value = std::strtod(begin, &end);
    VERL_CHECK(end != begin, "report", where_, ": expected a number at column ", pos_ + 1,
               " (metrics.jsonl holds flat objects of numbers)");
    pos_ += static_cast<size_t>(end - begin);
    return value;
  }

  const std::string& text_;
  std::string where_;
  size_t pos_ = 0;
};

}  // namespace

void append_json_string(std::string& out, const std::string& text) {
  out += '"';
  for (unsigned char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          char buffer[8];
          std::snprintf(buffer, sizeof(buffer), "\\u%04x", c);
          out += buffer;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

std::string format_json_number(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "Infinity" : "-Infinity";
  return shortest_round_trip(value);
}

std::string format_jsonl_record(const Metrics& metrics, int64_t step) {
  std::string line = "{\"step\":" + std::to_string(step);
  for (const auto& [key, value] : metrics) {
    VERL_CHECK(key != "step", "tracking", "a metric may not be named 'step' (metrics.jsonl uses it for the step)");
    line += ',';
    append_json_string(line, key);
    line += ':';
    line += format_json_number(value);
  }
  line += '}';
  return line;
}

void add_to_history(MetricHistory& history, const Metrics& metrics, int64_t step) {
  for (const auto& [key, value] : metrics) history[key][step] = value;
}

MetricHistory read_metrics_jsonl(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  VERL_CHECK(in.good(), "report", "cannot read '", path, "' (expected the metrics.jsonl a run writes with ",
             "trainer.logger containing jsonl)");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  MetricHistory history;
  size_t start = 0;
  int64_t line_number = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    bool last_unterminated = end == std::string::npos;
    std::string line = text.substr(start, last_unterminated ? std::string::npos : end - start);
    start = last_unterminated ? text.size() : end + 1;
    ++line_number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = str_cat(path, ":", line_number);
    std::map<std::string, double> object;
    try {
      object = FlatJsonParser(line, where).parse();
    } catch (const Error&) {
      if (last_unterminated) {
        VERL_LOG(Warn, "report") << where << ": skipping a truncated last line (the run stopped mid-write)";
        break;
      }
      throw;
    }
    auto step_it = object.find("step");
    VERL_CHECK(step_it != object.end(), "report", where, ": the record has no \"step\"");
    int64_t step = static_cast<int64_t>(step_it->second);
    object.erase(step_it);
    add_to_history(history, object, step);
  }
  return history;
}

std::unique_ptr<TrackingBackend> make_jsonl_backend(const std::string& run_dir) {
  return std::make_unique<JsonlBackend>(run_dir);
}

}  // namespace verl::trainer
