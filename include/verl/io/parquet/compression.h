// Page codecs: UNCOMPRESSED, SNAPPY (libsnappy), GZIP (zlib), ZSTD (libzstd) both ways; LZ4_RAW, the deprecated
// LZ4 (liblz4) and BROTLI (libbrotli) read only. Other codecs (LZO) are an error naming them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "verl/io/parquet/metadata.h"

namespace verl::io::parquet {

// Decompresses exactly `uncompressed_size` bytes; any mismatch or codec failure is an error naming `where`.
void decompress(Codec codec, const uint8_t* data, size_t size, size_t uncompressed_size, std::vector<uint8_t>& out,
                const std::string& where);

std::vector<uint8_t> compress(Codec codec, const uint8_t* data, size_t size);

}  // namespace verl::io::parquet
