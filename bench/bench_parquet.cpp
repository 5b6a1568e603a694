// Parquet decode and encode throughput on a GSM8K-train-sized file (7473 rows of verl's gsm8k layout:
// data_source, prompt list<struct>, ability, reward_model struct, extra_info struct; ~600 bytes of text per
// row, SNAPPY, dictionary-encoded repeated strings). Decode MB/s counts uncompressed page bytes.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <random>

#include "verl/data/preprocess/preprocess.h"
#include "verl/io/parquet/reader.h"
#include "verl/io/parquet/writer.h"

namespace {

constexpr size_t kGsm8kTrainRows = 7473;

std::string random_text(std::mt19937_64& rng, size_t length) {
  static const char* words[] = {"Janet", "sells", "eggs", "per", "day", "and", "the", "market", "how", "many",
                                "dollars", "does", "she", "make", "<<16-3-4=9>>9", "bolts", "of", "fiber", "total"};
  std::string out;
  while (out.size() < length) {
    if (!out.empty()) out += ' ';
    out += words[rng() % (sizeof(words) / sizeof(words[0]))];
    if (rng() % 7 == 0) out += std::to_string(rng() % 1000);
  }
  return out;
}

const std::string& gsm8k_sized_file() {
  static const std::string path = [] {
    std::mt19937_64 rng(7473);
    std::vector<verl::io::Value> source;
    for (size_t i = 0; i < kGsm8kTrainRows; ++i) {
      std::string answer = random_text(rng, 280) + "\n#### " + std::to_string(rng() % 10000);
      source.push_back(verl::io::Value(verl::io::Struct{{"question", verl::io::Value(random_text(rng, 240))},
                                                        {"answer", verl::io::Value(answer)}}));
    }
    verl::data::PreprocessedDataset data = verl::data::preprocess_gsm8k(source, "train", "bench");
    std::string file = (std::filesystem::temp_directory_path() / "verl_bench_gsm8k_train.parquet").string();
    verl::io::parquet::write_parquet(file, data.rows, data.schema);
    return file;
  }();
  return path;
}

void BM_ParquetDecodeGsm8kTrain(benchmark::State& state) {
  const std::string& path = gsm8k_sized_file();
  size_t bytes = 0, rows = 0;
  for (auto _ : state) {
    verl::io::parquet::Reader reader(path);
    std::vector<verl::io::Value> all = reader.read_all();
    rows += all.size();
    bytes += reader.uncompressed_bytes_read();
    benchmark::DoNotOptimize(all.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
  state.counters["rows/s"] = benchmark::Counter(static_cast<double>(rows), benchmark::Counter::kIsRate);
  state.counters["file_MB"] = static_cast<double>(std::filesystem::file_size(path)) / 1e6;
}
BENCHMARK(BM_ParquetDecodeGsm8kTrain)->Unit(benchmark::kMillisecond);

void BM_ParquetEncodeGsm8kTrain(benchmark::State& state) {
  std::vector<verl::io::Value> rows = verl::io::parquet::read_parquet(gsm8k_sized_file());
  verl::data::PreprocessedDataset layout = verl::data::preprocess_gsm8k({}, "train", "bench");
  const std::string out = (std::filesystem::temp_directory_path() / "verl_bench_gsm8k_rewrite.parquet").string();
  size_t bytes = 0;
  for (auto _ : state) {
    verl::io::parquet::write_parquet(out, rows, layout.schema);
    bytes += std::filesystem::file_size(out);
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
}
BENCHMARK(BM_ParquetEncodeGsm8kTrain)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
