// Mutation fuzzer for the parquet reader, built under AddressSanitizer (see CMakeLists.txt here).
//   verl_parquet_asan WORK_DIR [FIXTURE_DIR]
// Writes seed files with the writer (every codec, data page v1 and v2, dictionary and delta encodings,
// nested lists of structs), adds the *.parquet files of FIXTURE_DIR when it exists, then reads thousands of
// mutated copies (bit flips, byte overwrites, truncation, spliced garbage). Each read must succeed or throw
// verl::Error; a memory error aborts through the sanitizer and fails the test.
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "verl/common/error.h"
#include "verl/io/parquet/reader.h"
#include "verl/io/parquet/writer.h"

namespace {

using verl::io::List;
using verl::io::Struct;
using verl::io::Value;
namespace pq = verl::io::parquet;

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::vector<Value> seed_rows(std::mt19937_64& rng, size_t n) {
  std::vector<Value> rows;
  for (size_t i = 0; i < n; ++i) {
    List msgs;
    for (uint64_t k = 0; k < rng() % 3; ++k) {
      msgs.push_back(Value(Struct{{"role", Value(k % 2 ? "assistant" : "user")},
                                  {"content", rng() % 5 ? Value(std::string(rng() % 50, 'a' + char(k))) : Value()}}));
    }
    List ids;
    for (uint64_t k = 0; k < rng() % 4; ++k) ids.push_back(Value(static_cast<int64_t>(rng() % 1000)));
    rows.push_back(Value(Struct{
        {"id", Value(static_cast<int64_t>(i))},
        {"flag", rng() % 4 ? Value(rng() % 2 == 0) : Value()},
        {"small", Value(static_cast<int64_t>(static_cast<int32_t>(rng())))},
        {"ratio", rng() % 4 ? Value(static_cast<double>(rng() % 1000) / 7.0) : Value()},
        {"f", Value(static_cast<double>(static_cast<float>(rng() % 100) / 4.0f))},
        {"text", Value(rng() % 3 ? "shared" : std::string(rng() % 30, 'x'))},
        {"fixed", Value(std::string("ABCD"))},
        {"msgs", rng() % 5 ? Value(std::move(msgs)) : Value()},
        {"meta", Value(Struct{{"ids", Value(std::move(ids))}, {"split", Value("test")}})},
    }));
  }
  return rows;
}

std::vector<pq::WriteField> seed_schema() {
  using K = pq::FieldKind;
  auto leaf = [](const char* name, K kind, bool nullable = true, int fixed = 0) {
    return pq::WriteField{name, kind, nullable, fixed, {}};
  };
  pq::WriteField message{"element", K::kStruct, true, 0, {leaf("role", K::kString, false), leaf("content", K::kString)}};
  return {leaf("id", K::kInt64, false), leaf("flag", K::kBool), leaf("small", K::kInt32), leaf("ratio", K::kDouble),
          leaf("f", K::kFloat), leaf("text", K::kString), leaf("fixed", K::kFixed, true, 4),
          pq::WriteField{"msgs", K::kList, true, 0, {message}},
          pq::WriteField{"meta", K::kStruct, true, 0,
                         {pq::WriteField{"ids", K::kList, true, 0, {leaf("element", K::kInt64)}}, leaf("split", K::kString)}}};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: verl_parquet_asan WORK_DIR [FIXTURE_DIR]\n");
    return 2;
  }
  const std::string work = argv[1];
  std::filesystem::create_directories(work);
  std::mt19937_64 rng(20261122);
  std::vector<std::string> seeds;
  struct Variant {
    pq::Codec codec;
    bool v2;
    bool dictionary;
    pq::Encoding ints, strings;
  };
  const std::vector<Variant> variants = {
      {pq::Codec::kSnappy, false, true, pq::Encoding::kPlain, pq::Encoding::kPlain},
      {pq::Codec::kZstd, true, false, pq::Encoding::kDeltaBinaryPacked, pq::Encoding::kDeltaByteArray},
      {pq::Codec::kGzip, false, false, pq::Encoding::kDeltaBinaryPacked, pq::Encoding::kDeltaLengthByteArray},
      {pq::Codec::kUncompressed, true, true, pq::Encoding::kPlain, pq::Encoding::kPlain},
  };
  for (size_t v = 0; v < variants.size(); ++v) {
    pq::WriterOptions options;
    options.codec = variants[v].codec;
    options.data_page_v2 = variants[v].v2;
    options.dictionary = variants[v].dictionary;
    options.int_encoding = variants[v].ints;
    options.byte_array_encoding = variants[v].strings;
    options.row_group_rows = 25;
    options.page_bytes = 300;
    const std::string path = work + "/seed_" + std::to_string(v) + ".parquet";
    pq::write_parquet(path, seed_rows(rng, 60), seed_schema(), options);
    seeds.push_back(read_bytes(path));
  }
  if (argc >= 3 && std::filesystem::exists(argv[2])) {
    for (const auto& entry : std::filesystem::directory_iterator(argv[2])) {
      if (entry.path().extension() == ".parquet" && std::filesystem::file_size(entry.path()) < (1 << 20)) {
        seeds.push_back(read_bytes(entry.path().string()));
      }
    }
  }
  // Every seed must read cleanly before mutation.
  for (size_t s = 0; s < seeds.size(); ++s) {
    const std::string path = work + "/check.parquet";
    write_bytes(path, seeds[s]);
    pq::read_parquet(path);
  }
  const std::string path = work + "/mutated.parquet";
  size_t reads = 0, errors = 0;
  for (const std::string& seed : seeds) {
    const int trials = seed.size() > 100000 ? 40 : 400;  // big fixtures cost a full decode per read
    for (int trial = 0; trial < trials; ++trial) {
      std::string bytes = seed;
      int edits = 1 + static_cast<int>(rng() % 6);
      for (int e = 0; e < edits && !bytes.empty(); ++e) {
        size_t at = rng() % bytes.size();
        switch (rng() % 6) {
          case 0: bytes[at] = static_cast<char>(rng()); break;
          case 1: bytes[at] = static_cast<char>(bytes[at] ^ (1 << (rng() % 8))); break;
          case 2: bytes[at] = static_cast<char>(rng() % 2 ? 0xFF : 0x00); break;
          case 3:
            for (size_t k = 0; k < 12 && at + k < bytes.size(); ++k) bytes[at + k] = static_cast<char>(rng());
            break;
          case 4: bytes.resize(at); break;  // truncation
          default: {
            // Corrupt the footer region specifically (the thrift metadata).
            uint32_t len = 0;
            if (bytes.size() >= 8) std::memcpy(&len, bytes.data() + bytes.size() - 8, 4);
            if (len > 0 && len + 8 <= bytes.size()) {
              size_t pos = bytes.size() - 8 - len + rng() % len;
              bytes[pos] = static_cast<char>(rng());
            }
          }
        }
      }
      write_bytes(path, bytes);
      ++reads;
      try {
        pq::Reader reader(path);
        for (size_t g = 0; g < reader.num_row_groups(); ++g) reader.read_row_group(g);
      } catch (const verl::Error&) {
        ++errors;
      }
    }
  }
  std::printf("parquet mutation fuzz: %zu seeds, %zu mutated reads, %zu rejected with verl::Error, 0 crashes\n",
              seeds.size(), reads, errors);
  return 0;
}
