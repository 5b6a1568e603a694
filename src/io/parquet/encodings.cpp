#include "verl/io/parquet/encodings.h"

#include <algorithm>
#include <cstring>

#include "verl/common/error.h"

namespace verl::io::parquet {

namespace {

// ULEB128 varint from a bounded span.
uint64_t read_uleb(const uint8_t* data, size_t size, size_t& pos, const std::string& where) {
  uint64_t result = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    VERL_CHECK(pos < size, "parquet", where, ": truncated encoded data (varint)");
    uint8_t b = data[pos++];
    result |= static_cast<uint64_t>(b & 0x7F) << shift;
    if ((b & 0x80) == 0) return result;
  }
  VERL_FAIL("parquet", where, ": malformed encoded data (varint longer than 10 bytes)");
}

void write_uleb(uint64_t v, std::vector<uint8_t>& out) {
  while (v >= 0x80) {
    out.push_back(static_cast<uint8_t>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<uint8_t>(v));
}

int64_t unzigzag(uint64_t v) { return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1); }
uint64_t zigzag(int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); }

// Unpacks `count` little-endian bit-packed values of `width` bits (0..64) starting at bit 0 of `data`.
// The caller guarantees count*width bits are readable.
void unpack_bits(const uint8_t* data, int width, size_t count, uint64_t* out) {
  if (width == 0) {
    for (size_t i = 0; i < count; ++i) out[i] = 0;
    return;
  }
  const uint64_t mask = width == 64 ? ~uint64_t{0} : ((uint64_t{1} << width) - 1);
  size_t bit = 0;
  for (size_t i = 0; i < count; ++i, bit += static_cast<size_t>(width)) {
    size_t byte = bit >> 3;
    int shift = static_cast<int>(bit & 7);
    // Gather up to 9 bytes (64 bits plus the shift).
    uint64_t lo = 0;
    size_t need = (static_cast<size_t>(shift + width) + 7) / 8;
    size_t take = need < 8 ? need : 8;
    std::memcpy(&lo, data + byte, take);
    uint64_t v = lo >> shift;
    if (need > 8) v |= static_cast<uint64_t>(data[byte + 8]) << (64 - shift);
    out[i] = v & mask;
  }
}

void pack_bits(const uint64_t* values, size_t count, int width, std::vector<uint8_t>& out) {
  size_t start = out.size();
  out.resize(start + (count * static_cast<size_t>(width) + 7) / 8, 0);
  uint8_t* dst = out.data() + start;
  size_t bit = 0;
  for (size_t i = 0; i < count; ++i) {
    uint64_t v = values[i];
    for (int b = 0; b < width; ++b, ++bit) {
      if ((v >> b) & 1) dst[bit >> 3] |= static_cast<uint8_t>(1u << (bit & 7));
    }
  }
}

}  // namespace

int bit_width_for(uint64_t max_value) {
  int w = 0;
  while (max_value) {
    ++w;
    max_value >>= 1;
  }
  return w;
}

size_t decode_rle_hybrid(const uint8_t* data, size_t size, int bit_width, size_t count, uint32_t* out,
                         const std::string& where) {
  VERL_CHECK(bit_width >= 0 && bit_width <= 32, "parquet", where, ": RLE bit width ", bit_width, " out of range 0..32");
  size_t pos = 0, done = 0;
  const size_t value_bytes = (static_cast<size_t>(bit_width) + 7) / 8;
  uint64_t unpacked[8];
  while (done < count) {
    uint64_t header = read_uleb(data, size, pos, where);
    if (header & 1) {
      uint64_t groups = header >> 1;
      VERL_CHECK(groups > 0, "parquet", where, ": bit-packed run of 0 groups");
      const size_t left = count - done;
      size_t use = groups >= (left + 7) / 8 ? left : static_cast<size_t>(groups) * 8;
      size_t needed_bytes = (use * static_cast<size_t>(bit_width) + 7) / 8;
      VERL_CHECK(needed_bytes <= size - pos, "parquet", where, ": bit-packed run needs ", needed_bytes,
                 " bytes, only ", size - pos, " left");
      size_t i = 0;
      for (; i + 8 <= use; i += 8) {
        unpack_bits(data + pos + i / 8 * static_cast<size_t>(bit_width), bit_width, 8, unpacked);
        for (int k = 0; k < 8; ++k) out[done + i + static_cast<size_t>(k)] = static_cast<uint32_t>(unpacked[k]);
      }
      if (i < use) {
        // Partial last group: copy what exists into a zeroed scratch of one full group.
        uint8_t scratch[40] = {0};
        size_t offset = i / 8 * static_cast<size_t>(bit_width);
        size_t avail = size - pos - offset;
        size_t group_bytes = static_cast<size_t>(bit_width);
        std::memcpy(scratch, data + pos + offset, avail < group_bytes ? avail : group_bytes);
        unpack_bits(scratch, bit_width, 8, unpacked);
        for (size_t k = 0; i + k < use; ++k) out[done + i + k] = static_cast<uint32_t>(unpacked[k]);
      }
      done += use;
      const size_t w = static_cast<size_t>(bit_width);
      if (w == 0 || groups >= (size - pos) / w + 1) pos = w == 0 ? pos : size;
      else pos += static_cast<size_t>(groups) * w;
    } else {
      uint64_t run = header >> 1;
      VERL_CHECK(value_bytes <= size - pos, "parquet", where, ": truncated RLE run");
      uint32_t v = 0;
      for (size_t b = 0; b < value_bytes; ++b) v |= static_cast<uint32_t>(data[pos + b]) << (8 * b);
      pos += value_bytes;
      VERL_CHECK(bit_width == 32 || v < (uint64_t{1} << bit_width), "parquet", where, ": RLE value ", v,
                 " exceeds bit width ", bit_width);
      VERL_CHECK(run > 0, "parquet", where, ": RLE run of length 0");
      size_t use = run < count - done ? static_cast<size_t>(run) : count - done;
      for (size_t k = 0; k < use; ++k) out[done + k] = v;
      done += use;
    }
  }
  return pos;
}

void encode_rle_hybrid(const uint32_t* values, size_t count, int bit_width, std::vector<uint8_t>& out) {
  const size_t value_bytes = (static_cast<size_t>(bit_width) + 7) / 8;
  size_t i = 0;
  std::vector<uint64_t> pending;  // values waiting to be bit-packed (a multiple of 8 except at the end)
  auto flush_packed = [&]() {
    if (pending.empty()) return;
    while (pending.size() % 8) pending.push_back(0);
    write_uleb(((pending.size() / 8) << 1) | 1, out);
    pack_bits(pending.data(), pending.size(), bit_width, out);
    pending.clear();
  };
  while (i < count) {
    size_t run = 1;
    while (i + run < count && values[i + run] == values[i]) ++run;
    if (run >= 8 && pending.size() % 8 == 0) {
      flush_packed();
      write_uleb(static_cast<uint64_t>(run) << 1, out);
      for (size_t b = 0; b < value_bytes; ++b) out.push_back(static_cast<uint8_t>(values[i] >> (8 * b)));
      i += run;
    } else {
      pending.push_back(values[i]);
      ++i;
    }
  }
  flush_packed();
}

size_t decode_delta_binary_packed(const uint8_t* data, size_t size, size_t max_count, std::vector<int64_t>& out,
                                  const std::string& where) {
  size_t pos = 0;
  uint64_t block_size = read_uleb(data, size, pos, where);
  uint64_t miniblocks = read_uleb(data, size, pos, where);
  uint64_t total = read_uleb(data, size, pos, where);
  int64_t value = unzigzag(read_uleb(data, size, pos, where));
  VERL_CHECK(block_size > 0 && block_size % 128 == 0 && block_size <= (1u << 20), "parquet", where,
             ": DELTA_BINARY_PACKED block size ", block_size, " is not a positive multiple of 128");
  VERL_CHECK(miniblocks > 0 && block_size % miniblocks == 0 && (block_size / miniblocks) % 32 == 0, "parquet", where,
             ": DELTA_BINARY_PACKED has ", miniblocks, " miniblocks per block of ", block_size);
  VERL_CHECK(total <= max_count, "parquet", where, ": DELTA_BINARY_PACKED holds ", total, " values, expected at most ",
             max_count);
  if (total == 0) return pos;
  const size_t per_mini = static_cast<size_t>(block_size / miniblocks);
  out.reserve(out.size() + total);
  out.push_back(value);
  size_t remaining = static_cast<size_t>(total) - 1;
  std::vector<uint64_t> unpacked(per_mini);
  std::vector<uint8_t> widths(static_cast<size_t>(miniblocks));
  while (remaining > 0) {
    int64_t min_delta = unzigzag(read_uleb(data, size, pos, where));
    VERL_CHECK(miniblocks <= size - pos, "parquet", where, ": truncated DELTA_BINARY_PACKED block header");
    std::memcpy(widths.data(), data + pos, widths.size());
    pos += widths.size();
    for (size_t m = 0; m < widths.size() && remaining > 0; ++m) {
      int w = widths[m];
      VERL_CHECK(w <= 64, "parquet", where, ": DELTA_BINARY_PACKED bit width ", w, " above 64");
      size_t bytes = per_mini * static_cast<size_t>(w) / 8;
      size_t use = per_mini < remaining ? per_mini : remaining;
      // The last miniblock may be cut short in files that omit its padding; require the bytes we use.
      size_t needed = (use * static_cast<size_t>(w) + 7) / 8;
      VERL_CHECK(needed <= size - pos, "parquet", where, ": truncated DELTA_BINARY_PACKED miniblock");
      if (bytes <= size - pos) {
        unpack_bits(data + pos, w, use, unpacked.data());
      } else {
        std::vector<uint8_t> scratch(bytes + 8, 0);
        std::memcpy(scratch.data(), data + pos, size - pos);
        unpack_bits(scratch.data(), w, use, unpacked.data());
      }
      for (size_t k = 0; k < use; ++k) {
        value = static_cast<int64_t>(static_cast<uint64_t>(value) + static_cast<uint64_t>(min_delta) + unpacked[k]);
        out.push_back(value);
      }
      remaining -= use;
      pos += bytes <= size - pos ? bytes : size - pos;
    }
  }
  return pos;
}

void encode_delta_binary_packed(const int64_t* values, size_t count, std::vector<uint8_t>& out, bool int32) {
  const size_t block = 128, minis = 4, per_mini = block / minis;
  // Deltas in the column's own width: an INT32 column's wrap around in 32 bits (as parquet-mr and Arrow compute
  // them, whose INT32 decoders reject bit widths over 32).
  auto delta = [int32](int64_t from, int64_t to) -> int64_t {
    const uint64_t d = static_cast<uint64_t>(to) - static_cast<uint64_t>(from);
    return int32 ? static_cast<int64_t>(static_cast<int32_t>(static_cast<uint32_t>(d))) : static_cast<int64_t>(d);
  };
  write_uleb(block, out);
  write_uleb(minis, out);
  write_uleb(count, out);
  write_uleb(zigzag(count ? values[0] : 0), out);
  std::vector<uint64_t> deltas;
  for (size_t start = 1; start < count; start += block) {
    size_t n = std::min(block, count - start);
    deltas.assign(n, 0);
    int64_t min_delta = INT64_MAX;
    for (size_t k = 0; k < n; ++k) min_delta = std::min(min_delta, delta(values[start + k - 1], values[start + k]));
    for (size_t k = 0; k < n; ++k) {
      const uint64_t d = static_cast<uint64_t>(delta(values[start + k - 1], values[start + k])) -
                         static_cast<uint64_t>(min_delta);
      deltas[k] = int32 ? static_cast<uint32_t>(d) : d;
    }
    write_uleb(zigzag(min_delta), out);
    size_t width_pos = out.size();
    out.resize(out.size() + minis, 0);
    for (size_t m = 0; m < minis; ++m) {
      size_t lo = m * per_mini;
      if (lo >= n) break;  // unneeded miniblocks: width bytes stay 0, no body
      uint64_t max_value = 0;
      std::vector<uint64_t> mini(per_mini, 0);
      for (size_t k = lo; k < std::min(n, lo + per_mini); ++k) {
        mini[k - lo] = deltas[k];
        max_value = std::max(max_value, deltas[k]);
      }
      int w = bit_width_for(max_value);
      out[width_pos + m] = static_cast<uint8_t>(w);
      pack_bits(mini.data(), per_mini, w, out);
    }
  }
}

size_t decode_delta_length_byte_array(const uint8_t* data, size_t size, size_t max_count, std::vector<ByteRun>& out,
                                      const std::string& where) {
  std::vector<int64_t> lengths;
  size_t pos = decode_delta_binary_packed(data, size, max_count, lengths, where);
  out.reserve(out.size() + lengths.size());
  for (int64_t len : lengths) {
    VERL_CHECK(len >= 0 && static_cast<uint64_t>(len) <= size - pos, "parquet", where, ": DELTA_LENGTH_BYTE_ARRAY length ",
               len, " overruns the page (", size - pos, " bytes left)");
    out.push_back({data + pos, static_cast<size_t>(len)});
    pos += static_cast<size_t>(len);
  }
  return pos;
}

void encode_delta_length_byte_array(const std::vector<std::string>& values, std::vector<uint8_t>& out) {
  std::vector<int64_t> lengths;
  lengths.reserve(values.size());
  for (const auto& v : values) lengths.push_back(static_cast<int64_t>(v.size()));
  encode_delta_binary_packed(lengths.data(), lengths.size(), out);
  for (const auto& v : values) out.insert(out.end(), v.begin(), v.end());
}

void decode_delta_byte_array(const uint8_t* data, size_t size, size_t max_count, std::vector<std::string>& out,
                             const std::string& where) {
  std::vector<int64_t> prefixes;
  size_t pos = decode_delta_binary_packed(data, size, max_count, prefixes, where);
  std::vector<ByteRun> suffixes;
  decode_delta_length_byte_array(data + pos, size - pos, max_count, suffixes, where);
  VERL_CHECK(suffixes.size() == prefixes.size(), "parquet", where, ": DELTA_BYTE_ARRAY has ", prefixes.size(),
             " prefixes but ", suffixes.size(), " suffixes");
  std::string previous;
  out.reserve(out.size() + prefixes.size());
  for (size_t i = 0; i < prefixes.size(); ++i) {
    VERL_CHECK(prefixes[i] >= 0 && static_cast<uint64_t>(prefixes[i]) <= previous.size(), "parquet", where,
               ": DELTA_BYTE_ARRAY prefix ", prefixes[i], " longer than the previous value (", previous.size(), ")");
    std::string value = previous.substr(0, static_cast<size_t>(prefixes[i]));
    value.append(reinterpret_cast<const char*>(suffixes[i].data), suffixes[i].size);
    out.push_back(value);
    previous = std::move(value);
  }
}

void encode_delta_byte_array(const std::vector<std::string>& values, std::vector<uint8_t>& out) {
  std::vector<int64_t> prefixes;
  std::vector<std::string> suffixes;
  const std::string* previous = nullptr;
  for (const auto& v : values) {
    size_t p = 0;
    if (previous) {
      while (p < v.size() && p < previous->size() && v[p] == (*previous)[p]) ++p;
    }
    prefixes.push_back(static_cast<int64_t>(p));
    suffixes.push_back(v.substr(p));
    previous = &v;
  }
  encode_delta_binary_packed(prefixes.data(), prefixes.size(), out);
  encode_delta_length_byte_array(suffixes, out);
}

void decode_byte_stream_split(const uint8_t* data, size_t size, size_t width, size_t count, std::vector<uint8_t>& out,
                              const std::string& where) {
  VERL_CHECK(width > 0 && count <= size / width, "parquet", where, ": BYTE_STREAM_SPLIT needs ", count, " values of ",
             width, " bytes, page has ", size, " bytes");
  size_t stride = size / width;  // values in the page
  out.resize(count * width);
  for (size_t i = 0; i < count; ++i) {
    for (size_t b = 0; b < width; ++b) out[i * width + b] = data[b * stride + i];
  }
}

}  // namespace verl::io::parquet
