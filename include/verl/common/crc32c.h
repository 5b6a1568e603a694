// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), as used by TFRecord framing.
//   crc32c("123456789") == 0xE3069283
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace verl {

// CRC-32C of `size` bytes; `crc` continues a previous value (0 to start).
uint32_t crc32c(const void* data, size_t size, uint32_t crc = 0);
inline uint32_t crc32c(const std::string& bytes) { return crc32c(bytes.data(), bytes.size()); }

// TFRecord's masked form: ((crc >> 15) | (crc << 17)) + 0xa282ead8.
uint32_t mask_crc32c(uint32_t crc);

}  // namespace verl
