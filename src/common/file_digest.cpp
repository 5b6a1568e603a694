#include "verl/common/file_digest.h"

#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "verl/common/atomic_file.h"
#include "verl/common/crc32c.h"
#include "verl/common/error.h"

namespace verl {

std::string digest_path_for(const std::string& path) { return path + ".crc32c"; }

uint32_t file_crc32c(const std::string& path, uint64_t* size) {
  std::ifstream in(path, std::ios::binary);
  VERL_CHECK(in.is_open(), "io", "cannot read '", path, "'");
  std::vector<char> buffer(1 << 20);
  uint32_t crc = 0;
  uint64_t total = 0;
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    const std::streamsize n = in.gcount();
    if (n <= 0) break;
    crc = crc32c(buffer.data(), static_cast<size_t>(n), crc);
    total += static_cast<uint64_t>(n);
  }
  VERL_CHECK(!in.bad(), "io", "reading '", path, "' failed");
  if (size != nullptr) *size = total;
  return crc;
}

void write_file_digest(const std::string& path) {
  uint64_t size = 0;
  const uint32_t crc = file_crc32c(path, &size);
  char text[64];
  std::snprintf(text, sizeof(text), "crc32c %08x %" PRIu64 "\n", crc, size);
  write_file_atomic(digest_path_for(path), text);
}

bool verify_file_digest(const std::string& path, const std::string& component) {
  const std::string sidecar = digest_path_for(path);
  if (!std::filesystem::exists(sidecar)) return false;
  std::ifstream in(sidecar);
  std::string word, hex;
  uint64_t expected_size = 0;
  in >> word >> hex >> expected_size;
  uint32_t expected = 0;
  const bool parsed = !in.fail() && word == "crc32c" && hex.size() == 8 &&
                      std::sscanf(hex.c_str(), "%8x", &expected) == 1;
  VERL_CHECK(parsed, component, "'", sidecar, "' is not a checksum file (expected \"crc32c <8 hex digits> <size>\")");
  uint64_t size = 0;
  const uint32_t crc = file_crc32c(path, &size);
  char found[16], recorded[16];
  std::snprintf(found, sizeof(found), "%08x", crc);
  std::snprintf(recorded, sizeof(recorded), "%08x", expected);
  VERL_CHECK(size == expected_size && crc == expected, component, "'", path, "' is damaged: ", size, " bytes with CRC32C ",
             found, ", but ", expected_size, " bytes with CRC32C ", recorded, " were saved (", sidecar,
             "); resume from another checkpoint");
  return true;
}

}  // namespace verl
