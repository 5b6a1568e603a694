// Test helper: a minimal PNG decoder (8-bit RGB / RGBA / gray, non-interlaced: what headless Chromium's
// --screenshot writes) so tests can check what a rendered page shows. Other layouts throw.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace verl::test {

struct RgbImage {
  int width = 0, height = 0;
  std::vector<uint8_t> rgb;  // (height, width, 3), row-major
  const uint8_t* pixel(int x, int y) const { return rgb.data() + (static_cast<size_t>(y) * width + x) * 3; }
};

// Throws std::runtime_error on anything it does not read (bad signature, CRC-free chunk walk past the end,
// interlacing, palettes, 16-bit samples, a bad filter byte, short pixel data).
RgbImage decode_png(const std::string& bytes);

}  // namespace verl::test
