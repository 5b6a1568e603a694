// html backend: RUN_DIR/report.html, one self-contained page (inline CSS + inline SVG line charts, no
// scripts, no external resources), rewritten atomically after every step. `verl report` renders the same
// page from metrics.jsonl.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>

#include "verl/common/error.h"
#include "verl/trainer/tracking.h"

namespace verl::trainer {

namespace {

// Sections in reading order: validation first, then what verl's metric prefixes hold.
struct SectionInfo {
  const char* prefix;
  const char* title;
};
const SectionInfo kSections[] = {
    {"val-core", "Validation (core): held-out scores"},
    {"val-aux", "Validation (aux)"},
    {"val", "Validation"},
    {"critic", "Scores, rewards, advantages, returns, values"},
    {"actor", "Actor: losses, KL, entropy, clipping, gradients"},
    {"response_length", "Response length"},
    {"prompt_length", "Prompt length"},
    {"timing_s", "Per-phase timing (seconds)"},
    {"timing_per_token_ms", "Per-phase timing per token (ms)"},
    {"perf", "Throughput and performance"},
    {"training", "Training state"},
};

std::string escape_html(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string fmt(const char* format, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), format, value);
  return buffer;
}

std::string prefix_of(const std::string& name) {
  size_t slash = name.find('/');
  return slash == std::string::npos ? std::string() : name.substr(0, slash);
}

constexpr double kWidth = 360, kHeight = 210, kLeft = 58, kRight = 12, kTop = 28, kBottom = 30;

std::string render_chart(const std::string& name, const std::map<int64_t, double>& series) {
  std::vector<std::pair<double, double>> points;
  for (const auto& [step, value] : series) {
    if (std::isfinite(value)) points.emplace_back(static_cast<double>(step), value);
  }
  std::string svg = str_cat("<svg class=\"chart\" width=\"", kWidth, "\" height=\"", kHeight, "\" viewBox=\"0 0 ",
                            kWidth, " ", kHeight, "\" role=\"img\" data-metric=\"", escape_html(name),
                            "\" data-points=\"", points.size(), "\">\n");
  std::string last = series.empty() ? "" : fmt("%.6g", series.rbegin()->second);
  svg += str_cat("<text class=\"title\" x=\"8\" y=\"16\">", escape_html(name), "</text>\n");
  svg += str_cat("<text class=\"last\" x=\"", kLeft + (kWidth - kLeft - kRight) / 2, "\" y=\"", kHeight - 10,
                 "\" text-anchor=\"middle\">last ", escape_html(last), "</text>\n");
  const double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  svg += str_cat("<rect class=\"frame\" x=\"", kLeft, "\" y=\"", kTop, "\" width=\"", plot_w, "\" height=\"",
                 plot_h, "\"/>\n");
  if (points.empty()) {
    svg += str_cat("<text class=\"axis\" x=\"", kLeft + plot_w / 2, "\" y=\"", kTop + plot_h / 2,
                   "\" text-anchor=\"middle\">no finite values</text>\n</svg>\n");
    return svg;
  }
  double x_min = points.front().first, x_max = points.back().first;
  double y_min = points.front().second, y_max = y_min;
  for (const auto& p : points) {
    y_min = std::min(y_min, p.second);
    y_max = std::max(y_max, p.second);
  }
  if (x_max == x_min) {
    x_min -= 1;
    x_max += 1;
  }
  if (y_max == y_min) {
    double pad = y_min == 0 ? 1.0 : std::fabs(y_min) * 0.1;
    y_min -= pad;
    y_max += pad;
  }
  auto sx = [&](double x) { return kLeft + (x - x_min) / (x_max - x_min) * plot_w; };
  auto sy = [&](double y) { return kTop + (1.0 - (y - y_min) / (y_max - y_min)) * plot_h; };
  // Grid lines and axis labels: y at min / middle / max, x at first and last step.
  for (int i = 0; i <= 2; ++i) {
    double y = y_min + (y_max - y_min) * i / 2.0;
    svg += str_cat("<line class=\"grid\" x1=\"", kLeft, "\" x2=\"", kLeft + plot_w, "\" y1=\"", fmt("%.1f", sy(y)),
                   "\" y2=\"", fmt("%.1f", sy(y)), "\"/>\n");
    svg += str_cat("<text class=\"axis\" x=\"", kLeft - 4, "\" y=\"", fmt("%.1f", sy(y) + 4),
                   "\" text-anchor=\"end\">", fmt("%.3g", y), "</text>\n");
  }
  svg += str_cat("<text class=\"axis\" x=\"", kLeft, "\" y=\"", kHeight - 10, "\">step ",
                 fmt("%.0f", points.front().first), "</text>\n");
  svg += str_cat("<text class=\"axis\" x=\"", kLeft + plot_w, "\" y=\"", kHeight - 10, "\" text-anchor=\"end\">",
                 fmt("%.0f", points.back().first), "</text>\n");
  svg += "<polyline class=\"line\" points=\"";
  for (size_t i = 0; i < points.size(); ++i) {
    if (i) svg += ' ';
    svg += fmt("%.1f", sx(points[i].first)) + "," + fmt("%.1f", sy(points[i].second));
  }
  svg += "\"/>\n";
  // Sparse series (validation every test_freq steps) get a marker per point.
  if (points.size() <= 40) {
    for (const auto& p : points) {
      svg += str_cat("<circle class=\"dot\" cx=\"", fmt("%.1f", sx(p.first)), "\" cy=\"", fmt("%.1f", sy(p.second)),
                     "\" r=\"", points.size() == 1 ? 3 : 2, "\"/>\n");
    }
  }
  svg += "</svg>\n";
  return svg;
}

const char* kStyle = R"(body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px;color:#1d232b;background:#fafbfc}
h1{font-size:20px;margin:0 0 4px} h2{font-size:16px;margin:28px 0 8px;border-bottom:1px solid #d9dee5;padding-bottom:4px}
p.meta{color:#5b6573;margin:0 0 12px;font-size:13px}
.grid-charts{display:flex;flex-wrap:wrap;gap:12px}
svg.chart{background:#fff;border:1px solid #e1e5ea;border-radius:6px}
svg .title{font-size:12px;font-weight:600;fill:#1d232b} svg .last{font-size:11px;fill:#5b6573}
svg .axis{font-size:10px;fill:#5b6573} svg .frame{fill:none;stroke:#c9d0d8}
svg .grid{stroke:#eef1f4} svg .line{fill:none;stroke:#2f6fdb;stroke-width:1.6} svg .dot{fill:#2f6fdb}
)";

}  // namespace

std::string render_html_report(const std::string& title, const MetricHistory& history) {
  // Group metric names by prefix; known prefixes first in kSections order, then the rest alphabetically.
  std::map<std::string, std::vector<std::string>> groups;
  std::set<int64_t> steps;
  for (const auto& [name, series] : history) {
    groups[prefix_of(name)].push_back(name);
    for (const auto& entry : series) steps.insert(entry.first);
  }
  std::vector<std::pair<std::string, std::string>> order;  // (prefix, heading)
  for (const auto& section : kSections) {
    if (groups.count(section.prefix)) order.emplace_back(section.prefix, section.title);
  }
  for (const auto& [prefix, names] : groups) {
    bool known = std::any_of(std::begin(kSections), std::end(kSections),
                             [&](const SectionInfo& s) { return prefix == s.prefix; });
    if (!known) order.emplace_back(prefix, prefix.empty() ? "Other" : prefix);
  }

  std::string html = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" +
                     escape_html(title) + "</title>\n<style>\n" + kStyle + "</style>\n</head>\n<body>\n";
  html += "<h1>" + escape_html(title) + "</h1>\n";
  html += str_cat("<p class=\"meta\">", history.size(), " metrics, ", steps.size(), " steps",
                  steps.empty() ? std::string() : str_cat(" (", *steps.begin(), " to ", *steps.rbegin(), ")"),
                  ". Written by verl.cpp.</p>\n");
  for (const auto& [prefix, heading] : order) {
    html += "<section data-prefix=\"" + escape_html(prefix) + "\">\n<h2>" + escape_html(heading) + "</h2>\n";
    html += "<div class=\"grid-charts\">\n";
    for (const std::string& name : groups[prefix]) html += render_chart(name, history.at(name));
    html += "</div>\n</section>\n";
  }
  html += "</body>\n</html>\n";
  return html;
}

void write_html_report(const std::string& path, const std::string& title, const MetricHistory& history) {
  write_text_atomic(path, render_html_report(title, history));
}

namespace {

class HtmlBackend : public TrackingBackend {
 public:
  HtmlBackend(const std::string& run_dir, std::string title)
      : path_((std::filesystem::path(run_dir) / "report.html").string()), title_(std::move(title)) {
    // A resumed run continues the history its metrics.jsonl holds (read before this run appends to it).
    std::string jsonl = (std::filesystem::path(run_dir) / "metrics.jsonl").string();
    if (std::filesystem::exists(jsonl)) history_ = read_metrics_jsonl(jsonl);
  }
  void log(const Metrics& metrics, int64_t step) override {
    add_to_history(history_, metrics, step);
    write_html_report(path_, title_, history_);
  }
  void finish() override { write_html_report(path_, title_, history_); }

 private:
  std::string path_;
  std::string title_;
  MetricHistory history_;
};

}  // namespace

std::unique_ptr<TrackingBackend> make_html_backend(const std::string& run_dir, const std::string& title) {
  return std::make_unique<HtmlBackend>(run_dir, title);
}

}  // namespace verl::trainer
