// `verl report RUN_DIR`: rebuilds RUN_DIR/report.html from RUN_DIR/metrics.jsonl.
#include <filesystem>
#include <iostream>

#include "verl/cli/cli.h"
#include "verl/common/error.h"
#include "verl/config/config_node.h"
#include "verl/config/yaml_io.h"
#include "verl/trainer/tracking.h"

namespace verl::cli {

const char* const kReportUsage =
    "usage: verl report RUN_DIR [--out FILE]\n"
    "\n"
    "Rebuilds the self-contained HTML report (inline SVG charts of every metric, grouped by prefix) from\n"
    "RUN_DIR/metrics.jsonl, which runs write when trainer.logger contains jsonl. Writes RUN_DIR/report.html\n"
    "(or FILE) atomically and prints its path. The title comes from RUN_DIR/config.yaml when present.\n"
    "\n"
    "example:\n"
    "  verl report checkpoints/verl_examples/gsm8k\n";

namespace {

std::string report_title(const std::filesystem::path& run_dir) {
  std::filesystem::path config_path = run_dir / "config.yaml";
  if (std::filesystem::exists(config_path)) {
    config::Node root = config::load_yaml_file(config_path.string());
    const config::Node* project = config::find_path(root, "trainer.project_name");
    const config::Node* experiment = config::find_path(root, "trainer.experiment_name");
    if (project && experiment && project->kind() == config::Kind::String && experiment->kind() == config::Kind::String) {
      return project->as_string() + " / " + experiment->as_string();
    }
  }
  return std::filesystem::absolute(run_dir).lexically_normal().filename().string();
}

}  // namespace

int run_report_command(const Args& args) {
  std::string run_dir;
  std::string out;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--out") {
      if (i + 1 >= args.size()) {
        std::cerr << "error: --out needs a file path\n" << kReportUsage;
        return 2;
      }
      out = args[++i];
    } else if (run_dir.empty() && !args[i].empty() && args[i][0] != '-') {
      run_dir = args[i];
    } else {
      std::cerr << "error: unexpected argument '" << args[i] << "'\n" << kReportUsage;
      return 2;
    }
  }
  if (run_dir.empty()) {
    std::cerr << "error: expected a run folder\n" << kReportUsage;
    return 2;
  }
  std::filesystem::path dir(run_dir);
  VERL_CHECK(std::filesystem::is_directory(dir), "report", "run folder '", run_dir, "' does not exist");
  trainer::MetricHistory history = trainer::read_metrics_jsonl((dir / "metrics.jsonl").string());
  if (out.empty()) out = (dir / "report.html").string();
  trainer::write_html_report(out, report_title(dir), history);
  std::cout << out << "\n";
  return 0;
}

}  // namespace verl::cli
