// Helpers shared by the libFuzzer harnesses in fuzz/ (see fuzz/CMakeLists.txt and docs/fuzzing.md).
// A harness feeds one input to one parser of outside input; the parser may accept it or throw verl::Error,
// anything else (a sanitizer report, another exception type, a signal) is a finding.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "verl/common/error.h"

namespace verl::fuzz {

// Runs `body`; verl::Error is an accepted outcome for bad input, any other exception aborts (a finding).
template <typename F>
void expect_only_verl_errors(F&& body) {
  try {
    body();
  } catch (const verl::Error&) {
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz: exception other than verl::Error: %s\n", e.what());
    std::abort();
  }
}

// A per-process scratch file for parsers that read paths (parquet, safetensors, tokenizer folders).
inline std::string scratch_path(const std::string& name) {
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/verl_fuzz_" + std::to_string(::getpid()) + "_" + name;
}

inline void write_bytes(const std::string& path, const uint8_t* data, size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
}

}  // namespace verl::fuzz
