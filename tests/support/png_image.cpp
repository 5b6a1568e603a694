#include "support/png_image.h"

#include <zlib.h>

#include <cstdlib>
#include <stdexcept>

namespace verl::test {

namespace {

uint32_t be32(const std::string& s, size_t at) {
  return (static_cast<uint32_t>(static_cast<uint8_t>(s[at])) << 24) |
         (static_cast<uint32_t>(static_cast<uint8_t>(s[at + 1])) << 16) |
         (static_cast<uint32_t>(static_cast<uint8_t>(s[at + 2])) << 8) | static_cast<uint32_t>(static_cast<uint8_t>(s[at + 3]));
}

std::string inflate_all(const std::string& compressed) {
  z_stream zs{};
  if (inflateInit(&zs) != Z_OK) throw std::runtime_error("png: inflateInit failed");
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
  zs.avail_in = static_cast<uInt>(compressed.size());
  std::string out;
  char buffer[1 << 16];
  int rc = Z_OK;
  while (rc == Z_OK) {
    zs.next_out = reinterpret_cast<Bytef*>(buffer);
    zs.avail_out = sizeof(buffer);
    rc = inflate(&zs, Z_NO_FLUSH);
    out.append(buffer, sizeof(buffer) - zs.avail_out);
  }
  inflateEnd(&zs);
  if (rc != Z_STREAM_END) throw std::runtime_error("png: corrupt IDAT stream");
  return out;
}

uint8_t paeth(int a, int b, int c) {
  const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
  if (pa <= pb && pa <= pc) return static_cast<uint8_t>(a);
  return static_cast<uint8_t>(pb <= pc ? b : c);
}

}  // namespace

RgbImage decode_png(const std::string& bytes) {
  if (bytes.size() < 33 || bytes.compare(0, 8, std::string("\x89PNG\r\n\x1a\n", 8)) != 0) {
    throw std::runtime_error("png: not a PNG file");
  }
  RgbImage image;
  int channels = 0;
  std::string idat;
  for (size_t at = 8; at + 12 <= bytes.size();) {
    const uint32_t length = be32(bytes, at);
    const std::string type = bytes.substr(at + 4, 4);
    if (at + 12 + length > bytes.size()) throw std::runtime_error("png: chunk " + type + " runs past the end");
    const size_t data = at + 8;
    if (type == "IHDR") {
      image.width = static_cast<int>(be32(bytes, data));
      image.height = static_cast<int>(be32(bytes, data + 4));
      const int depth = static_cast<uint8_t>(bytes[data + 8]), color = static_cast<uint8_t>(bytes[data + 9]);
      const int interlace = static_cast<uint8_t>(bytes[data + 12]);
      if (depth != 8 || interlace != 0) throw std::runtime_error("png: only 8-bit non-interlaced images");
      channels = color == 2 ? 3 : color == 6 ? 4 : color == 0 ? 1 : color == 4 ? 2 : 0;
      if (channels == 0) throw std::runtime_error("png: palette images are not supported");
    } else if (type == "IDAT") {
      idat += bytes.substr(data, length);
    } else if (type == "IEND") {
      break;
    }
    at += 12 + length;
  }
  if (channels == 0 || image.width <= 0 || image.height <= 0) throw std::runtime_error("png: no IHDR");
  const std::string raw = inflate_all(idat);
  const size_t stride = static_cast<size_t>(image.width) * channels;
  if (raw.size() < (stride + 1) * image.height) throw std::runtime_error("png: short pixel data");
  std::vector<uint8_t> previous(stride, 0), current(stride);
  image.rgb.resize(static_cast<size_t>(image.width) * image.height * 3);
  for (int y = 0; y < image.height; ++y) {
    const size_t row = static_cast<size_t>(y) * (stride + 1);
    const int filter = static_cast<uint8_t>(raw[row]);
    for (size_t i = 0; i < stride; ++i) {
      const int x = static_cast<uint8_t>(raw[row + 1 + i]);
      const int a = i >= static_cast<size_t>(channels) ? current[i - channels] : 0;
      const int b = previous[i];
      const int c = i >= static_cast<size_t>(channels) ? previous[i - channels] : 0;
      switch (filter) {
        case 0: current[i] = static_cast<uint8_t>(x); break;
        case 1: current[i] = static_cast<uint8_t>(x + a); break;
        case 2: current[i] = static_cast<uint8_t>(x + b); break;
        case 3: current[i] = static_cast<uint8_t>(x + (a + b) / 2); break;
        case 4: current[i] = static_cast<uint8_t>(x + paeth(a, b, c)); break;
        default: throw std::runtime_error("png: bad filter byte " + std::to_string(filter));
      }
    }
    for (int x = 0; x < image.width; ++x) {
      const uint8_t* px = current.data() + static_cast<size_t>(x) * channels;
      uint8_t* out = image.rgb.data() + (static_cast<size_t>(y) * image.width + x) * 3;
      if (channels >= 3) {
        out[0] = px[0], out[1] = px[1], out[2] = px[2];
      } else {
        out[0] = out[1] = out[2] = px[0];
      }
    }
    previous.swap(current);
  }
  return image;
}

}  // namespace verl::test
