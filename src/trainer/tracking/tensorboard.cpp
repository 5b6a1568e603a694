// tensorboard backend: an events.out.tfevents.<unix time>.<host> file TensorBoard reads.
//
// File  = TFRecord*; TFRecord = uint64 length | uint32 masked_crc32c(length bytes) | data | uint32
//         masked_crc32c(data), all little-endian.
// data  = one tensorflow.Event protobuf, hand-encoded:
//   Event   { double wall_time = 1; int64 step = 2; string file_version = 3; Summary summary = 5; }
//   Summary { repeated Value value = 1; }
//   Value   { string tag = 1; float simple_value = 2; }
// The first record is {wall_time, file_version: "brain.Event:2"}; then one Event per metric per step.
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "verl/common/crc32c.h"
#include "verl/common/error.h"
#include "verl/trainer/tracking.h"

namespace verl::trainer {

namespace {

// Protobuf wire types.
constexpr uint32_t kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5;

void put_varint(std::string& out, uint64_t value) {
  while (value >= 0x80) {
    out += static_cast<char>((value & 0x7F) | 0x80);
    value >>= 7;
  }
  out += static_cast<char>(value);
}

void put_tag(std::string& out, uint32_t field, uint32_t wire_type) { put_varint(out, (field << 3) | wire_type); }

void put_le(std::string& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out += static_cast<char>((value >> (8 * i)) & 0xFF);
}

void put_double(std::string& out, uint32_t field, double value) {
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  put_tag(out, field, kFixed64);
  put_le(out, bits, 8);
}

void put_float(std::string& out, uint32_t field, float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  put_tag(out, field, kFixed32);
  put_le(out, bits, 4);
}

void put_bytes(std::string& out, uint32_t field, const std::string& bytes) {
  put_tag(out, field, kLengthDelimited);
  put_varint(out, bytes.size());
  out += bytes;
}

double now_seconds() {
  using namespace std::chrono;
  return duration_cast<duration<double>>(system_clock::now().time_since_epoch()).count();
}

std::string host_name() {
  char buffer[256] = {0};
  if (::gethostname(buffer, sizeof(buffer) - 1) != 0 || buffer[0] == '\0') return "localhost";
  return buffer;
}

class TensorboardBackend : public TrackingBackend {
 public:
  explicit TensorboardBackend(const std::string& run_dir) {
    namespace fs = std::filesystem;
    const double start = now_seconds();
    std::string base = (fs::path(run_dir) / str_cat("events.out.tfevents.", static_cast<int64_t>(start), ".",
                                                    host_name()))
                           .string();
    // A second tracker in the same second (a quick resume) gets its own file; TensorBoard reads them all.
    path_ = base;
    for (int n = 1; fs::exists(path_); ++n) path_ = str_cat(base, ".", n);
    file_ = std::fopen(path_.c_str(), "wb");
    VERL_CHECK(file_ != nullptr, "tracking", "cannot create '", path_, "': ", std::strerror(errno));
    write_record(encode_file_version_event(start));
    flush();
  }
  ~TensorboardBackend() override { close(); }

  void log(const Metrics& metrics, int64_t step) override {
    VERL_CHECK(file_ != nullptr, "tracking", "'", path_, "' is already closed");
    const double wall_time = now_seconds();
    for (const auto& [tag, value] : metrics) {
      write_record(encode_scalar_event(wall_time, step, tag, static_cast<float>(value)));
    }
    flush();
  }
  void finish() override { close(); }

 private:
  void write_record(const std::string& event) {
    std::string record = tfrecord_frame(event);
    VERL_CHECK(std::fwrite(record.data(), 1, record.size(), file_) == record.size(), "tracking", "writing '",
               path_, "' failed: ", std::strerror(errno));
  }
  void flush() {
    VERL_CHECK(std::fflush(file_) == 0, "tracking", "writing '", path_, "' failed: ", std::strerror(errno));
  }
  void close() {
    if (file_ != nullptr) std::fclose(file_);
    file_ = nullptr;
  }
  std::string path_;
  std::FILE* file_ = nullptr;
};

}  // namespace

std::string encode_file_version_event(double wall_time) {
  std::string event;
  put_double(event, 1, wall_time);
  put_bytes(event, 3, "brain.Event:2");
  return event;
}

std::string encode_scalar_event(double wall_time, int64_t step, const std::string& tag, float value) {
  std::string summary_value;
  put_bytes(summary_value, 1, tag);
  put_float(summary_value, 2, value);
  std::string summary;
  put_bytes(summary, 1, summary_value);
  std::string event;
  put_double(event, 1, wall_time);
  put_tag(event, 2, kVarint);
  put_varint(event, static_cast<uint64_t>(step));  // int64: negative values take ten bytes, as protobuf does
  put_bytes(event, 5, summary);
  return event;
}

std::string tfrecord_frame(const std::string& data) {
  std::string header;
  put_le(header, data.size(), 8);
  std::string record = header;
  put_le(record, mask_crc32c(crc32c(header)), 4);
  record += data;
  put_le(record, mask_crc32c(crc32c(data)), 4);
  return record;
}

std::unique_ptr<TrackingBackend> make_tensorboard_backend(const std::string& run_dir) {
  return std::make_unique<TensorboardBackend>(run_dir);
}

}  // namespace verl::trainer
