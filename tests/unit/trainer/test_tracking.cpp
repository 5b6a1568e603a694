// Tracking backends: console line, metrics.jsonl, TensorBoard event files (decoded by an independent Python
// reader), the HTML report and `verl report`, CRC32C vectors, the progress bar's text.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <regex>
#include <sstream>

#include "support/png_image.h"
#include "support/run_command.h"
#include "verl/common/crc32c.h"
#include "verl/common/error.h"
#include "verl/common/progress.h"
#include "verl/trainer/tracking.h"

namespace verl::test {
namespace {

namespace fs = std::filesystem;
using trainer::Metrics;
using trainer::Tracking;

const std::string kReader = std::string(VERL_SOURCE_DIR_FOR_TESTS) + "/tests/golden/trainer/read_tfevents.py";

size_t count_of(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + needle.size())) ++n;
  return n;
}

// Number of "x,y" pairs in the polyline of the chart for `metric`; -1 when the chart is missing.
int chart_points(const std::string& html, const std::string& metric) {
  size_t svg = html.find("data-metric=\"" + metric + "\"");
  if (svg == std::string::npos) return -1;
  size_t end = html.find("</svg>", svg);
  size_t poly = html.find("<polyline class=\"line\" points=\"", svg);
  if (poly == std::string::npos || poly > end) return 0;
  size_t start = poly + std::string("<polyline class=\"line\" points=\"").size();
  std::string points = html.substr(start, html.find('"', start) - start);
  std::regex pair(R"((-?[0-9.]+),(-?[0-9.]+))");
  return static_cast<int>(std::distance(std::sregex_iterator(points.begin(), points.end(), pair), std::sregex_iterator()));
}

// ---- CRC32C ----

TEST(Crc32c, KnownVectors) {
  EXPECT_EQ(crc32c(std::string("123456789")), 0xE3069283u);
  EXPECT_EQ(crc32c(std::string()), 0x00000000u);
  // RFC 3720 (iSCSI) B.4 vectors.
  EXPECT_EQ(crc32c(std::string(32, '\0')), 0x8A9136AAu);
  EXPECT_EQ(crc32c(std::string(32, '\xff')), 0x62A8AB43u);
  std::string ascending;
  for (int i = 0; i < 32; ++i) ascending += static_cast<char>(i);
  EXPECT_EQ(crc32c(ascending), 0x46DD794Eu);
  // Continuing a CRC over a split buffer equals the CRC of the whole.
  EXPECT_EQ(crc32c("56789", 5, crc32c("1234", 4)), 0xE3069283u);
}

TEST(Crc32c, MaskedForm) {
  // ((0xE3069283 >> 15) | (0xE3069283 << 17)) + 0xa282ead8 mod 2^32, worked by hand.
  EXPECT_EQ(mask_crc32c(0xE3069283u), 0xC78AB0E5u);
  EXPECT_EQ(mask_crc32c(0u), 0xA282EAD8u);
}

// ---- console ----

TEST(TrackingConsole, VerlLineFormat) {
  // verl: "step:{step}" then f"{k}:{v:.3f}" joined by " - ". Keys sorted (std::map).
  EXPECT_EQ(trainer::format_console_line({{"critic/score/mean", 0.5}, {"actor/pg_loss", -0.0123456}, {"a", 5}}, 3),
            "step:3 - a:5.000 - actor/pg_loss:-0.012 - critic/score/mean:0.500");
  EXPECT_EQ(trainer::format_console_line({}, 0), "step:0");
  // Python's f"{x:.3f}" for these values (binary rounding, sign kept, non-finite words).
  EXPECT_EQ(trainer::format_console_line({{"a", 0.0005}, {"b", 0.0015}, {"c", -0.0001}, {"d", 1e6}}, 12),
            "step:12 - a:0.001 - b:0.002 - c:-0.000 - d:1000000.000");
  EXPECT_EQ(trainer::format_console_line({{"x", std::nan("")}, {"y", HUGE_VAL}, {"z", -HUGE_VAL}}, 1),
            "step:1 - x:nan - y:inf - z:-inf");
}

TEST(TrackingConsole, TrackingPrintsOneLinePerStep) {
  std::string dir = make_temp_dir("tracking_console");
  std::ostringstream out;
  {
    Tracking tracking("p", "e", {"console"}, dir, "", &out);
    tracking.log({{"critic/rewards/mean", 1.25}}, 1);
    tracking.log({{"critic/rewards/mean", 0.75}, {"actor/entropy", 2.0}}, 2);
    tracking.finish();
    EXPECT_THROW(tracking.log({{"x", 1}}, 3), Error);
  }
  EXPECT_EQ(out.str(), "step:1 - critic/rewards/mean:1.250\nstep:2 - actor/entropy:2.000 - critic/rewards/mean:0.750\n");
  EXPECT_FALSE(fs::exists(dir + "/config.yaml"));  // no config given
}

// ---- backend selection and config ----

TEST(Tracking, UnknownBackendListsValidOnes) {
  std::string dir = make_temp_dir("tracking_unknown");
  try {
    Tracking tracking("p", "e", {"console", "clearml"}, dir + "/run", "x: 1\n");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("unknown logger backend 'clearml'"), std::string::npos) << m;
    EXPECT_NE(m.find("valid backends: console, file, wandb, mlflow, swanlab, tensorboard, jsonl, html"),
              std::string::npos) << m;
  }
  EXPECT_FALSE(fs::exists(dir + "/run"));  // validated before anything is created
  try {
    Tracking tracking("p", "e", {"jsnl"}, dir + "/run", "");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("did you mean 'jsonl'?"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Tracking("p", "e", {"html", "html"}, dir + "/run", ""), Error);
}

TEST(Tracking, SavesConfigAtomically) {
  std::string dir = make_temp_dir("tracking_config") + "/nested/run";
  const std::string yaml = "trainer:\n  project_name: p\n  logger: [console]\n";
  Tracking tracking("p", "e", {}, dir, yaml);
  EXPECT_EQ(read_file(dir + "/config.yaml"), yaml);
  for (const auto& entry : fs::directory_iterator(dir)) {
    EXPECT_EQ(entry.path().filename().string().find(".tmp"), std::string::npos) << entry.path();
  }
}

// ---- jsonl ----

TEST(TrackingJsonl, OneObjectPerStepFlushedEachStep) {
  std::string dir = make_temp_dir("tracking_jsonl");
  Tracking tracking("p", "e", {"jsonl"}, dir, "");
  tracking.log({{"critic/score/mean", 0.5}, {"actor/kl", 0.1}}, 1);
  // Readable before finish(): a crash after log() loses nothing.
  EXPECT_EQ(read_file(dir + "/metrics.jsonl"), "{\"step\":1,\"actor/kl\":0.1,\"critic/score/mean\":0.5}\n");
  tracking.log({{"critic/score/mean", -2}, {"actor/kl", 1e-06}, {"bad", std::nan("")}}, 2);
  tracking.finish();
  EXPECT_EQ(read_file(dir + "/metrics.jsonl"),
            "{\"step\":1,\"actor/kl\":0.1,\"critic/score/mean\":0.5}\n"
            "{\"step\":2,\"actor/kl\":1e-06,\"bad\":NaN,\"critic/score/mean\":-2}\n");
  // Python's json module reads it back (NaN included).
  CommandResult r = run_command("/usr/bin/python3 -c \"import json,sys; rows=[json.loads(l) for l in open(sys.argv[1])]; "
                                "print(rows[1]['step'], rows[1]['actor/kl'], rows[0]['actor/kl'])\" " + dir + "/metrics.jsonl");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "2 1e-06 0.1\n");
}

TEST(TrackingJsonl, KeysEscapedAsPythonsJsonDumpsWritesThem) {
  const std::string key =
      "a\"\\\b\f\n\r\t\x01\x1f\x7f"
      "\xc3\xa9/x";
  std::string ours;
  trainer::append_json_string(ours, key);
  // The oracle: Python's json.dumps(key, ensure_ascii=False) of the same bytes (the file and jsonl backends'
  // keys, which verl's FileLogger writes with orjson: the same escapes).
  std::string dir = make_temp_dir("tracking_json_string");
  write_file(dir + "/key.txt", key);
  CommandResult r = run_command(
      "/usr/bin/python3 -c \"import json,sys; "
      "sys.stdout.buffer.write(json.dumps(open(sys.argv[1], encoding='utf-8', newline='').read(), "
      "ensure_ascii=False).encode())\" " +
      dir + "/key.txt");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ours, r.out);
  EXPECT_EQ(ours, R"("a\"\\\b\f\n\r\t\u0001\u001f)"
                  "\x7f\xc3\xa9/x\"");
}

TEST(TrackingJsonl, ResumedRunDropsATornLastLineBeforeAppending) {
  std::string dir = make_temp_dir("tracking_jsonl_torn");
  write_file(dir + "/metrics.jsonl", "{\"step\":1,\"a\":1}\n{\"step\":2,\"a\":2}\n{\"step\":3,\"a");
  Tracking tracking("p", "e", {"jsonl"}, dir, "");
  tracking.log({{"a", 4}}, 3);
  tracking.finish();
  EXPECT_EQ(read_file(dir + "/metrics.jsonl"), "{\"step\":1,\"a\":1}\n{\"step\":2,\"a\":2}\n{\"step\":3,\"a\":4}\n");
  // A file whose only line is torn is emptied.
  write_file(dir + "/metrics.jsonl", "{\"step\":1,");
  Tracking again("p", "e", {"jsonl"}, dir, "");
  again.finish();
  EXPECT_EQ(read_file(dir + "/metrics.jsonl"), "");
}

TEST(TrackingJsonl, ShortestRoundTripNumbers) {
  EXPECT_EQ(trainer::format_json_number(0.1), "0.1");
  EXPECT_EQ(trainer::format_json_number(1.0 / 3.0), "0.3333333333333333");
  EXPECT_EQ(trainer::format_json_number(123456789.0), "123456789");
  EXPECT_EQ(trainer::format_json_number(-HUGE_VAL), "-Infinity");
}

// ---- tensorboard ----

std::string find_events_file(const std::string& dir) {
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().filename().string().rfind("events.out.tfevents.", 0) == 0) return entry.path().string();
  }
  return "";
}

TEST(TrackingTensorboard, IndependentReaderDecodesEvents) {
  std::string dir = make_temp_dir("tracking_tb");
  {
    Tracking tracking("p", "e", {"tensorboard"}, dir, "");
    tracking.log({{"critic/score/mean", 0.5}, {"actor/pg_loss", -1.25}}, 1);
    tracking.log({{"critic/score/mean", 0.1}}, 2);
    tracking.finish();
  }
  std::string path = find_events_file(dir);
  ASSERT_FALSE(path.empty());
  // Name: events.out.tfevents.<unix seconds>.<host>
  EXPECT_TRUE(std::regex_match(fs::path(path).filename().string(),
                               std::regex(R"(events\.out\.tfevents\.1[0-9]{9}\.[^/]+)")))
      << path;
  std::string bytes = read_file(path);
  // Every TensorFlow event file starts with this header: length 24 (the file_version event) and its masked CRC.
  ASSERT_GE(bytes.size(), 12u);
  EXPECT_EQ(bytes.substr(0, 12), std::string("\x18\0\0\0\0\0\0\0\xa3\x7f\x4b\x22", 12));

  CommandResult r = run_command("/usr/bin/python3 " + kReader + " " + path);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // float32(0.1) = 0.100000001490116119384765625, which Python prints as 0.10000000149011612.
  EXPECT_EQ(r.out,
            "{\"file_version\": \"brain.Event:2\", \"records\": 4, \"scalars\": ["
            "{\"step\": 1, \"tag\": \"actor/pg_loss\", \"value\": -1.25}, "
            "{\"step\": 1, \"tag\": \"critic/score/mean\", \"value\": 0.5}, "
            "{\"step\": 2, \"tag\": \"critic/score/mean\", \"value\": 0.10000000149011612}], "
            "\"wall_time_ok\": true}\n");

  // The reader checks CRCs: one flipped payload byte must make it fail.
  std::string corrupt = bytes;
  corrupt[20] ^= 0x01;
  write_file(dir + "/corrupt.tfevents", corrupt);
  CommandResult bad = run_command("/usr/bin/python3 " + kReader + " " + dir + "/corrupt.tfevents");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("CRC mismatch"), std::string::npos) << bad.err;
}

TEST(TrackingTensorboard, EventBytesByHand) {
  // Event{wall_time=1.0, step=300, summary{value{tag:"a", simple_value:1.0}}}
  std::string expected = std::string("\x09\0\0\0\0\0\0\xf0\x3f", 9)  // field 1, fixed64: 1.0
                         + std::string("\x10\xac\x02", 3)             // field 2, varint: 300
                         + std::string("\x2a\x0a", 2)                 // field 5, 10 bytes
                         + std::string("\x0a\x08", 2)                 //   value, 8 bytes
                         + std::string("\x0a\x01" "a", 3)             //     tag "a"
                         + std::string("\x15\0\0\x80\x3f", 5);        //     simple_value 1.0f
  EXPECT_EQ(trainer::encode_scalar_event(1.0, 300, "a", 1.0f), expected);
  std::string frame = trainer::tfrecord_frame("123456789");
  ASSERT_EQ(frame.size(), 8u + 4u + 9u + 4u);
  EXPECT_EQ(frame.substr(12, 9), "123456789");
  EXPECT_EQ(frame.substr(21), std::string("\xe5\xb0\x8a\xc7", 4));  // masked crc32c("123456789"), little-endian
}

// ---- html ----

TEST(TrackingHtml, ChartsGroupedWithAllPointsAndNoExternalAssets) {
  trainer::MetricHistory h;
  for (int step = 1; step <= 5; ++step) {
    h["critic/score/mean"][step] = 0.1 * step;
    h["timing_s/gen"][step] = 2.0;
    h["perf/throughput"][step] = 1000 + step;
  }
  h["val-core/arith/acc/mean@1"][0] = 0.2;
  h["val-core/arith/acc/mean@1"][5] = 0.6;
  h["loss"][1] = 1.0;
  h["loss"][2] = std::nan("");
  h["loss"][3] = 0.5;
  std::string html = trainer::render_html_report("proj / exp <1>", h);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("<title>proj / exp &lt;1&gt;</title>"), std::string::npos);
  EXPECT_EQ(count_of(html, "<svg"), 5u);
  EXPECT_EQ(count_of(html, "</svg>"), 5u);
  EXPECT_EQ(count_of(html, "<section"), count_of(html, "</section>"));
  EXPECT_EQ(chart_points(html, "critic/score/mean"), 5);
  EXPECT_EQ(chart_points(html, "timing_s/gen"), 5);
  EXPECT_EQ(chart_points(html, "perf/throughput"), 5);
  EXPECT_EQ(chart_points(html, "val-core/arith/acc/mean@1"), 2);
  EXPECT_EQ(chart_points(html, "loss"), 2);  // the NaN is not drawn
  for (const char* external : {"http://", "https://", "src=", "<script", "<link", "url(", "@import"}) {
    EXPECT_EQ(html.find(external), std::string::npos) << external;
  }
  // Validation first, then the critic, timing, throughput, and unprefixed metrics last.
  size_t val = html.find("data-prefix=\"val-core\""), critic = html.find("data-prefix=\"critic\"");
  size_t timing = html.find("data-prefix=\"timing_s\""), perf = html.find("data-prefix=\"perf\"");
  size_t other = html.find("data-prefix=\"\"");
  EXPECT_LT(val, critic);
  EXPECT_LT(critic, timing);
  EXPECT_LT(timing, perf);
  EXPECT_LT(perf, other);
  EXPECT_NE(other, std::string::npos);
}

TEST(TrackingHtml, BackendRewritesReportEachStep) {
  std::string dir = make_temp_dir("tracking_html");
  Tracking tracking("proj", "exp", {"jsonl", "html"}, dir, "");
  tracking.log({{"critic/score/mean", 0.1}, {"actor/entropy", 3}}, 1);
  std::string first = read_file(dir + "/report.html");
  EXPECT_EQ(chart_points(first, "critic/score/mean"), 1);
  tracking.log({{"critic/score/mean", 0.2}, {"actor/entropy", 2}}, 2);
  tracking.log({{"critic/score/mean", 0.3}}, 3);
  tracking.finish();
  std::string html = read_file(dir + "/report.html");
  EXPECT_EQ(chart_points(html, "critic/score/mean"), 3);
  EXPECT_EQ(chart_points(html, "actor/entropy"), 2);
  EXPECT_NE(html.find("<h1>proj / exp</h1>"), std::string::npos);
  for (const auto& entry : fs::directory_iterator(dir)) {
    EXPECT_EQ(entry.path().filename().string().find(".tmp"), std::string::npos) << entry.path();
  }
  // A resumed run (same folder) continues the history from metrics.jsonl; step 3 is logged again.
  {
    Tracking resumed("proj", "exp", {"jsonl", "html"}, dir, "");
    resumed.log({{"critic/score/mean", 0.35}}, 3);
    resumed.log({{"critic/score/mean", 0.4}}, 4);
  }
  html = read_file(dir + "/report.html");
  EXPECT_EQ(chart_points(html, "critic/score/mean"), 4);
  EXPECT_NE(html.find("last 0.4<"), std::string::npos);
}

// Chromium is installed by scripts/install-deps.sh (so CI runs this); elsewhere the test skips.
TEST(TrackingHtml, RendersInHeadlessChromiumWhenInstalled) {
  if (run_command("command -v chromium").exit_code != 0) GTEST_SKIP() << "chromium is not installed";
  std::string dir = make_temp_dir("tracking_chromium");
  trainer::MetricHistory h;
  for (int step = 1; step <= 20; ++step) h["critic/score/mean"][step] = 1.0 - 1.0 / step;  // rises, then flattens
  trainer::write_html_report(dir + "/report.html", "chromium check", h);
  CommandResult r = run_command("timeout 120 chromium --headless --no-sandbox --disable-gpu --no-first-run "
                                "--disable-background-networking --disable-component-update --disable-sync "
                                "--user-data-dir=" + dir + "/profile --window-size=800,600 --screenshot=" + dir +
                                "/shot.png file://" + dir + "/report.html");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  RgbImage image = decode_png(read_file(dir + "/shot.png"));
  ASSERT_EQ(image.width, 800);
  ASSERT_EQ(image.height, 600);
  // The page rendered: most pixels are the report's background #fafbfc, and the chart line (#2f6fdb) is there.
  int64_t background = 0, blue = 0;
  int min_x = image.width, max_x = -1;
  std::map<int, std::pair<double, int>> blue_rows_by_x;  // x -> (sum of y, count) of line pixels
  for (int y = 0; y < image.height; ++y) {
    for (int x = 0; x < image.width; ++x) {
      const uint8_t* p = image.pixel(x, y);
      if (std::abs(p[0] - 0xfa) <= 2 && std::abs(p[1] - 0xfb) <= 2 && std::abs(p[2] - 0xfc) <= 2) ++background;
      if (p[2] > 150 && p[0] < 120 && p[2] - p[0] > 80) {
        ++blue;
        min_x = std::min(min_x, x);
        max_x = std::max(max_x, x);
        blue_rows_by_x[x].first += y;
        blue_rows_by_x[x].second += 1;
      }
    }
  }
  EXPECT_GT(background, 800 * 600 / 2);
  ASSERT_GT(blue, 300) << "no chart line in the screenshot";
  // The plot area is 290 px wide (kWidth 360 - margins): the line spans most of it and goes up to the right
  // (screen y falls): steep at first, nearly flat at the end.
  EXPECT_GT(max_x - min_x, 250);
  auto mean_y = [&](int x) { return blue_rows_by_x.at(x).first / blue_rows_by_x.at(x).second; };
  EXPECT_GT(mean_y(min_x) - mean_y(max_x), 120) << "the line does not rise from left to right";
}

// ---- verl report ----

TEST(VerlReport, RebuildsReportFromMetricsJsonl) {
  std::string dir = make_temp_dir("verl_report");
  write_file(dir + "/config.yaml", "trainer:\n  project_name: demo\n  experiment_name: grpo_arith\n");
  write_file(dir + "/metrics.jsonl",
             "{\"step\": 0, \"val-core/arith/acc/mean@1\": 0.25}\n"
             "{\"step\": 1, \"critic/score/mean\": 0.1, \"actor/kl_loss\": 0.0, \"timing_s/step\": 3.5}\n"
             "{\"step\": 2, \"critic/score/mean\": 0.2, \"actor/kl_loss\": 0.001, \"timing_s/step\": 3.25}\n"
             "\n"
             "{\"step\": 2, \"critic/score/mean\": 0.3, \"actor/kl_loss\": 0.002, \"timing_s/step\": 3.0}\n"
             "{\"step\": 3, \"critic/score/mean\": 0.4, \"val-core/arith/acc/mean@1\": 0.5}\n"
             "{\"step\": 4, \"critic/sc");  // truncated by a crash: skipped
  CommandResult r = run_command(verl_binary() + " report " + dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, dir + "/report.html\n");
  EXPECT_NE(r.err.find("truncated last line"), std::string::npos) << r.err;
  std::string html = read_file(dir + "/report.html");
  EXPECT_NE(html.find("<title>demo / grpo_arith</title>"), std::string::npos);
  EXPECT_EQ(count_of(html, "<svg"), 4u);
  EXPECT_EQ(chart_points(html, "critic/score/mean"), 3);  // steps 1, 2 (replaced), 3
  EXPECT_EQ(chart_points(html, "actor/kl_loss"), 2);
  EXPECT_EQ(chart_points(html, "timing_s/step"), 2);
  EXPECT_EQ(chart_points(html, "val-core/arith/acc/mean@1"), 2);

  CommandResult out = run_command(verl_binary() + " report " + dir + " --out " + dir + "/other.html");
  EXPECT_EQ(out.exit_code, 0) << out.err;
  EXPECT_EQ(read_file(dir + "/other.html"), html);
}

TEST(VerlReport, ClearErrors) {
  std::string dir = make_temp_dir("verl_report_errors");
  CommandResult missing = run_command(verl_binary() + " report " + dir + "/nope");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("run folder '" + dir + "/nope' does not exist"), std::string::npos) << missing.err;
  CommandResult no_jsonl = run_command(verl_binary() + " report " + dir);
  EXPECT_EQ(no_jsonl.exit_code, 1);
  EXPECT_NE(no_jsonl.err.find("metrics.jsonl"), std::string::npos) << no_jsonl.err;
  write_file(dir + "/metrics.jsonl", "{\"step\": 1, \"a\": 1}\n{\"step\": 2, \"a\": oops}\n{\"step\": 3}\n");
  CommandResult bad = run_command(verl_binary() + " report " + dir);
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("metrics.jsonl:2"), std::string::npos) << bad.err;
  CommandResult usage = run_command(verl_binary() + " report");
  EXPECT_EQ(usage.exit_code, 2);
}

// ---- progress ----

TEST(Progress, LineAndSummaryText) {
  EXPECT_EQ(format_progress_line("gen", 10, 40, 5000, "tok", 2.0),
            "gen [#####               ] 10/40 25% | 2.50k tok/s | 2.0s ETA 6.0s");
  EXPECT_EQ(format_progress_line("upd", 3, 0, 0, "", 1.5), "upd 3 | 2.00 it/s | 1.5s");
  EXPECT_EQ(format_progress_summary("gen", 40, 40, 20000, "tok", 8.0), "gen: 40/40 in 8.0s (5.00 it/s, 2.50k tok/s)");
  EXPECT_EQ(format_duration(245), "4m05s");
  EXPECT_EQ(format_duration(3723), "1h02m03s");
  EXPECT_EQ(format_rate(1234567), "1.23M");
  EXPECT_EQ(format_rate(512), "512");
}

TEST(Progress, ModesWriteWhatTheyShould) {
  std::ostringstream summary, silent, live;
  {
    ProgressBar bar("gen", 3, "tok", ProgressBar::Mode::Summary, &summary);
    for (int i = 0; i < 3; ++i) bar.advance(1, 10);
    EXPECT_EQ(summary.str(), "");  // nothing until the end
  }
  EXPECT_EQ(summary.str().rfind("gen: 3/3 in ", 0), 0u) << summary.str();
  EXPECT_EQ(count_of(summary.str(), "\n"), 1u);
  EXPECT_NE(summary.str().find(" tok/s)\n"), std::string::npos) << summary.str();
  {
    ProgressBar bar("gen", 3, "tok", ProgressBar::Mode::Silent, &silent);
    bar.advance(3, 30);
  }
  EXPECT_EQ(silent.str(), "");
  {
    ProgressBar bar("gen", 2, "tok", ProgressBar::Mode::Live, &live);
    bar.advance(2, 8);  // completion always redraws
    bar.finish();
  }
  EXPECT_NE(live.str().find("\rgen [####################] 2/2 100%"), std::string::npos) << live.str();
  EXPECT_EQ(live.str().back(), '\n');
}

}  // namespace
}  // namespace verl::test
