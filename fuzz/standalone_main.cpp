// A driver for the harnesses where libFuzzer is not available (the GCC build's ctest smoke):
//   verl_fuzz_<name> [-seconds=N] [-seed=S] PATH...
// replays every file under each PATH (the committed seed corpus and regression inputs), then, for N seconds
// (default 0), mutates them (bit flips, byte overwrites, insertions, deletions, truncation, splices of two
// inputs, repeated chunks) and runs each mutant. Built with ASan + UBSan, so a memory error or undefined
// behaviour aborts and fails the test; the harness aborts on exceptions other than verl::Error.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void run(const std::string& input) {
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
}

std::string mutate(std::string s, const std::vector<std::string>& corpus, std::mt19937_64& rng) {
  const int steps = 1 + static_cast<int>(rng() % 4);
  for (int step = 0; step < steps; ++step) {
    const size_t pos = s.empty() ? 0 : rng() % s.size();
    switch (rng() % 7) {
      case 0:
        if (!s.empty()) s[pos] = static_cast<char>(s[pos] ^ (1 << (rng() % 8)));
        break;
      case 1:
        if (!s.empty()) s[pos] = static_cast<char>(rng());
        break;
      case 2: s.insert(pos, 1, "[]{}\":,0-9e.&*!\n "[rng() % 17]); break;
      case 3:
        if (!s.empty()) s.erase(pos, 1 + rng() % 8);
        break;
      case 4: s.resize(s.empty() ? 0 : rng() % s.size()); break;
      case 5: {
        const std::string& other = corpus[rng() % corpus.size()];
        if (!other.empty()) {
          const size_t from = rng() % other.size();
          s.insert(pos, other.substr(from, 1 + rng() % 64));
        }
        break;
      }
      case 6:
        if (!s.empty()) {
          const std::string chunk = s.substr(pos, 1 + rng() % 8);
          std::string repeated;
          for (uint64_t k = 0, n = 1 + rng() % 512; k < n; ++k) repeated += chunk;
          s.insert(pos, repeated);
        }
        break;
    }
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 0;
  uint64_t seed = 1;
  std::vector<std::string> corpus;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("-seconds=", 0) == 0) {
      seconds = std::stod(arg.substr(9));
    } else if (arg.rfind("-seed=", 0) == 0) {
      seed = std::stoull(arg.substr(6));
    } else if (std::filesystem::is_directory(arg)) {
      for (const auto& entry : std::filesystem::recursive_directory_iterator(arg))
        if (entry.is_regular_file()) corpus.push_back(read_bytes(entry.path().string()));
    } else {
      corpus.push_back(read_bytes(arg));
    }
  }
  if (corpus.empty()) corpus.push_back("");
  for (const auto& input : corpus) run(input);
  std::mt19937_64 rng(seed);
  size_t executions = corpus.size();
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    run(mutate(corpus[rng() % corpus.size()], corpus, rng));
    ++executions;
  }
  std::printf("%zu inputs replayed, %zu executions in all, no finding\n", corpus.size(), executions);
  return 0;
}
