// Parquet files (datasets): footer, Thrift metadata, schema, pages, encodings, codecs, record assembly.
#include <cstdint>
#include <string>

#include "fuzz_support.h"
#include "verl/io/parquet/reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = verl::fuzz::scratch_path("input.parquet");
  verl::fuzz::write_bytes(path, data, size);
  verl::fuzz::expect_only_verl_errors([&] { verl::io::parquet::read_parquet(path); });
  return 0;
}
