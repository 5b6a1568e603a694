// safetensors reader/writer: round trips of every dtype, sharded checkpoints, rejected files (truncated,
// lying headers), and an independent Python reader/writer (tests/golden/io/safetensors_check.py).
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support/run_command.h"
#include "support/test_python.h"
#include "verl/common/error.h"
#include "verl/io/safetensors.h"

namespace verl::io {
namespace {

using test::make_temp_dir;

std::string raw_file(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>(n >> (8 * i));
  return out + header + data;
}

void write_raw(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string safetensors_error_of(const std::string& path) {
  try {
    SafetensorsFile f(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::string safetensors_script() {
  return std::string(VERL_SOURCE_DIR_FOR_TESTS) + "/tests/golden/io/safetensors_check.py";
}

TEST(Safetensors, RoundTripsEveryDtype) {
  const std::string dir = make_temp_dir("st_roundtrip");
  const double f64[] = {1.5, -2.25};
  const float f32[] = {0.1f, -7.5f, 3.0f};
  const uint16_t f16[] = {0x3800, 0xBC00};  // 0.5, -1
  const uint16_t bf16[] = {0x3F80, 0xC000};  // 1, -2
  const int64_t i64[] = {-(int64_t(1) << 40), 7};
  const int32_t i32[] = {-5};
  const int8_t i8[] = {-128, 127};
  const uint8_t u8[] = {0, 255, 17};
  const uint8_t b[] = {1, 0};
  std::vector<TensorBytes> tensors = {
      {"f64", DType::F64, {2}, f64, sizeof f64},     {"f32", DType::F32, {1, 3}, f32, sizeof f32},
      {"f16", DType::F16, {2}, f16, sizeof f16},     {"bf16", DType::BF16, {2, 1}, bf16, sizeof bf16},
      {"i64", DType::I64, {2}, i64, sizeof i64},     {"i32", DType::I32, {1}, i32, sizeof i32},
      {"i8", DType::I8, {2}, i8, sizeof i8},         {"u8", DType::U8, {3}, u8, sizeof u8},
      {"bool", DType::BOOL, {2}, b, sizeof b},       {"empty", DType::F32, {0, 4}, nullptr, 0},
  };
  write_safetensors(dir + "/a.safetensors", tensors, {{"format", "pt"}});
  EXPECT_FALSE(std::filesystem::exists(dir + "/a.safetensors.tmp." + std::to_string(::getpid())));
  SafetensorsFile f(dir + "/a.safetensors");
  EXPECT_EQ(f.metadata().at("format"), "pt");
  ASSERT_EQ(f.names().size(), tensors.size());
  for (const auto& t : tensors) {
    const TensorView& v = f.get(t.name);
    EXPECT_EQ(v.dtype, t.dtype) << t.name;
    EXPECT_EQ(v.shape, t.shape) << t.name;
    ASSERT_EQ(v.nbytes, t.nbytes) << t.name;
    if (t.nbytes) EXPECT_EQ(std::memcmp(v.data, t.data, t.nbytes), 0) << t.name;
  }
  EXPECT_EQ(f.names()[0], "f64");  // data order is the write order
  EXPECT_THROW(f.get("nope"), Error);
  // The data buffer starts 8-byte aligned.
  EXPECT_EQ(reinterpret_cast<uintptr_t>(f.get("f64").data) % 8, 0u);
}

// This process's resident file-backed pages (RssFile in /proc/self/status), in KiB.
int64_t resident_file_kib() {
  std::ifstream status("/proc/self/status");
  std::string key;
  int64_t kib = -1;
  while (status >> key) {
    if (key == "RssFile:") {
      status >> kib;
      return kib;
    }
    status.ignore(1 << 12, '\n');
  }
  return -1;
}

// release() takes a tensor's pages out of the resident set (what loading relies on to hold the model and one
// tensor of the file at a time); the bytes read back the same afterwards, and its neighbours are untouched.
TEST(Safetensors, ReleasedTensorsLeaveTheResidentSetAndReadBackTheSame) {
  const std::string dir = make_temp_dir("st_release");
  std::vector<float> big(16 << 20);  // 64 MiB
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<float>(i % 9973) - 17.25f;
  const float small[] = {1.5f, -2.0f, 3.25f};
  write_safetensors(dir + "/r.safetensors", {{"small", DType::F32, {3}, small, sizeof small},
                                             {"big", DType::F32, {16 << 20}, big.data(), big.size() * 4},
                                             {"tail", DType::F32, {3}, small, sizeof small}});
  SafetensorsCheckpoint ckpt(dir + "/r.safetensors");
  const TensorView& v = ckpt.get("big");
  EXPECT_EQ(std::memcmp(v.data, big.data(), v.nbytes), 0);  // every page resident now
  const int64_t before = resident_file_kib();
  ASSERT_GT(before, 60 << 10) << "RssFile not readable or the mapping not resident";
  ckpt.release("big", 0, 32 << 20);  // the first half
  const int64_t half = resident_file_kib();
  EXPECT_LT(half, before - (28 << 10)) << "the first half's pages stayed resident";
  EXPECT_GT(half, before - (36 << 10)) << "more than the first half was released";
  ckpt.release("big", 32 << 20);  // the rest
  EXPECT_LT(resident_file_kib(), before - (60 << 10)) << "the tensor's pages stayed resident";
  EXPECT_EQ(std::memcmp(ckpt.get("small").data, small, sizeof small), 0);
  EXPECT_EQ(std::memcmp(ckpt.get("tail").data, small, sizeof small), 0);
  EXPECT_EQ(std::memcmp(v.data, big.data(), v.nbytes), 0) << "released bytes read back differently";
  EXPECT_THROW(ckpt.release("nope"), Error);
  EXPECT_THROW(ckpt.release("small", 13), Error);  // past its 12 bytes
}

TEST(Safetensors, WriterRejectsSizeMismatchAndDuplicates) {
  const std::string dir = make_temp_dir("st_writer_bad");
  const float x[3] = {1, 2, 3};
  EXPECT_THROW(write_safetensors(dir + "/a.safetensors", {{"x", DType::F32, {2, 2}, x, sizeof x}}), Error);
  EXPECT_THROW(write_safetensors(dir + "/a.safetensors", {{"x", DType::F32, {3}, x, sizeof x},
                                                          {"x", DType::F32, {3}, x, sizeof x}}),
               Error);
  EXPECT_FALSE(std::filesystem::exists(dir + "/a.safetensors"));
}

TEST(Safetensors, TruncatedFilesAreClearErrors) {
  const std::string dir = make_temp_dir("st_truncated");
  const float x[4] = {1, 2, 3, 4};
  write_safetensors(dir + "/ok.safetensors", {{"x", DType::F32, {4}, x, sizeof x}});
  std::string bytes = test::read_file(dir + "/ok.safetensors");
  write_raw(dir + "/short_data.safetensors", bytes.substr(0, bytes.size() - 3));
  EXPECT_NE(safetensors_error_of(dir + "/short_data.safetensors").find("outside the data buffer"), std::string::npos)
      << safetensors_error_of(dir + "/short_data.safetensors");
  write_raw(dir + "/short_header.safetensors", bytes.substr(0, 20));
  EXPECT_NE(safetensors_error_of(dir + "/short_header.safetensors").find("truncated"), std::string::npos);
  write_raw(dir + "/tiny.safetensors", bytes.substr(0, 5));
  EXPECT_NE(safetensors_error_of(dir + "/tiny.safetensors").find("truncated"), std::string::npos);
  write_raw(dir + "/empty.safetensors", "");
  EXPECT_NE(safetensors_error_of(dir + "/empty.safetensors").find("truncated"), std::string::npos);
  EXPECT_NE(safetensors_error_of(dir + "/missing.safetensors").find("cannot open"), std::string::npos);
}

TEST(Safetensors, LyingHeadersAreClearErrors) {
  const std::string dir = make_temp_dir("st_lying");
  const std::string data(16, '\0');
  struct Case {
    std::string header, data, expect;
  };
  const std::vector<Case> cases = {
      {R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,16]}})", data, "do not match dtype"},
      {R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,32]}})", data, "outside the data buffer"},
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
       data.substr(0, 12), "overlaps"},
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[12,16]}})",
       data, "hole"},
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", data, "trailing bytes"},
      {R"({"a":{"dtype":"Q4","shape":[4],"data_offsets":[0,16]}})", data, "unknown dtype 'Q4'"},
      {R"({"a":{"dtype":"F32","shape":[-4],"data_offsets":[0,16]}})", data, "non-negative"},
      {R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[16,0]}})", data, "backwards"},
      {R"({"a":{"dtype":"F32","shape":[4]}})", data, "needs dtype, shape and data_offsets"},
      {R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]})", data, "not valid JSON"},
      {R"([1,2])", data, "must be a JSON object"},
      {R"({"a":{"dtype":"F32","shape":[4611686018427387903,4],"data_offsets":[0,16]}})", data, "do not match"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string path = dir + "/c" + std::to_string(i) + ".safetensors";
    write_raw(path, raw_file(cases[i].header, cases[i].data));
    const std::string err = safetensors_error_of(path);
    EXPECT_NE(err.find(cases[i].expect), std::string::npos) << "case " << i << ": " << err;
    EXPECT_NE(err.find(path), std::string::npos) << "error names the file: " << err;
  }
  // A header length that is not sane.
  std::string huge(8, '\xff');
  write_raw(dir + "/huge.safetensors", huge + "{}");
  EXPECT_NE(safetensors_error_of(dir + "/huge.safetensors").find("not sane"), std::string::npos);
}

TEST(Safetensors, ShardedCheckpointThroughIndex) {
  const std::string dir = make_temp_dir("st_sharded");
  std::vector<std::vector<float>> data;
  std::vector<TensorBytes> tensors;
  for (int i = 0; i < 5; ++i) data.push_back(std::vector<float>(10, static_cast<float>(i)));
  for (int i = 0; i < 5; ++i)
    tensors.push_back({"t" + std::to_string(i), DType::F32, {10}, data[i].data(), 40});
  auto files = write_checkpoint(dir, tensors, /*max_shard_bytes=*/80);
  ASSERT_EQ(files.size(), 4u);  // 3 shards + index
  EXPECT_TRUE(std::filesystem::exists(dir + "/model-00001-of-00003.safetensors"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/model.safetensors"));
  auto index = nlohmann::json::parse(test::read_file(dir + "/model.safetensors.index.json"));
  EXPECT_EQ(index["metadata"]["total_size"], 200);
  EXPECT_EQ(index["weight_map"]["t4"], "model-00003-of-00003.safetensors");
  SafetensorsCheckpoint ckpt(dir);
  EXPECT_EQ(ckpt.num_files(), 3u);
  EXPECT_EQ(ckpt.names().size(), 5u);
  for (int i = 0; i < 5; ++i) {
    const auto& v = ckpt.get("t" + std::to_string(i));
    EXPECT_EQ(reinterpret_cast<const float*>(v.data)[9], static_cast<float>(i));
  }
  // Saving again unsharded replaces the shards.
  write_checkpoint(dir, tensors, 0);
  EXPECT_FALSE(std::filesystem::exists(dir + "/model.safetensors.index.json"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/model-00001-of-00003.safetensors"));
  EXPECT_EQ(SafetensorsCheckpoint(dir).num_files(), 1u);
}

TEST(Safetensors, IndexThatLiesIsAnError) {
  const std::string dir = make_temp_dir("st_index_lies");
  const float x[2] = {1, 2};
  write_safetensors(dir + "/s1.safetensors", {{"a", DType::F32, {2}, x, sizeof x}});
  test::write_file(dir + "/model.safetensors.index.json", R"({"weight_map": {"a": "s1.safetensors", "b": "s1.safetensors"}})");
  try {
    SafetensorsCheckpoint c(dir);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'b'"), std::string::npos) << e.what();
  }
  test::write_file(dir + "/model.safetensors.index.json", R"({"weight_map": {}})");
  EXPECT_THROW(SafetensorsCheckpoint c(dir), Error);  // maps no tensor at all
  write_safetensors(dir + "/s2.safetensors", {{"a", DType::F32, {2}, x, sizeof x}, {"b", DType::F32, {2}, x, sizeof x}});
  test::write_file(dir + "/model.safetensors.index.json", R"({"weight_map": {"a": "s2.safetensors"}})");
  try {
    SafetensorsCheckpoint c(dir);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("holds tensor 'b'"), std::string::npos) << e.what();
  }
  std::filesystem::remove(dir + "/model.safetensors.index.json");
  EXPECT_THROW(SafetensorsCheckpoint c(dir), Error);  // neither model.safetensors nor an index
}

TEST(Safetensors, PythonReadsWhatWeWrite) {
  if (!test::test_python_imports("torch")) FAIL() << test::test_python_missing_hint();
  const std::string dir = make_temp_dir("st_python_read");
  const uint16_t bf16[] = {0x3F80, 0xBC00};  // 1.0, -0.0078125
  const int64_t i64[] = {-3, 1LL << 50};
  const float f32[] = {0.25f, -1e-3f, 6.0f, 7.0f};
  const uint8_t b[] = {1, 0, 1};
  write_safetensors(dir + "/w.safetensors",
                    {{"bf16", DType::BF16, {2}, bf16, 4}, {"i64", DType::I64, {1, 2}, i64, 16},
                     {"f32", DType::F32, {2, 2}, f32, 16}, {"bool", DType::BOOL, {3}, b, 3}},
                    {{"format", "pt"}});
  auto r = test::run_command(test::test_python() + safetensors_script() + " read " + dir + "/w.safetensors");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["__metadata__"]["format"], "pt");
  EXPECT_EQ(j["bf16"]["values"], (std::vector<double>{1.0, -0.0078125}));
  EXPECT_EQ(j["i64"]["shape"], (std::vector<int>{1, 2}));
  EXPECT_EQ(j["i64"]["values"][1].get<double>(), static_cast<double>(1LL << 50));
  EXPECT_EQ(j["f32"]["values"][1].get<double>(), static_cast<double>(-1e-3f));
  EXPECT_EQ(j["bool"]["dtype"], "BOOL");
  EXPECT_EQ(j["bool"]["values"], (std::vector<double>{1, 0, 1}));
}

TEST(Safetensors, WeReadWhatPythonWrites) {
  if (!test::test_python_imports("torch")) FAIL() << test::test_python_missing_hint();
  const std::string dir = make_temp_dir("st_python_write");
  auto r = test::run_command(test::test_python() + safetensors_script() + " write " + dir + "/p.safetensors");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  SafetensorsFile f(dir + "/p.safetensors");
  EXPECT_EQ(f.names().size(), 10u);
  auto as = [&](const std::string& name, auto zero) {
    const auto& v = f.get(name);
    using T = decltype(zero);
    std::vector<T> out(v.nbytes / sizeof(T));
    std::memcpy(out.data(), v.data, v.nbytes);
    return out;
  };
  EXPECT_EQ(f.get("f64").shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(as("f64", 0.0), (std::vector<double>{1.5, -2.25, 3.0, 1e-300}));
  EXPECT_EQ(as("f32", 0.0f), (std::vector<float>{0.1f, -7.5f, 3.25e10f}));
  EXPECT_EQ(as("f16", uint16_t{}), (std::vector<uint16_t>{0x3800, 0xBC00, 0x7BFF}));
  EXPECT_EQ(as("bf16", uint16_t{})[0], 0x3F80);
  EXPECT_EQ(as("bf16", uint16_t{})[1], 0xBC00);
  EXPECT_EQ(as("i64", int64_t{}), (std::vector<int64_t>{-(int64_t(1) << 40), 7}));
  EXPECT_EQ(as("i32", int32_t{}), (std::vector<int32_t>{-5, 1 << 30}));
  EXPECT_EQ(as("i8", int8_t{}), (std::vector<int8_t>{-128, 127}));
  EXPECT_EQ(as("u8", uint8_t{}), (std::vector<uint8_t>{0, 255, 17}));
  EXPECT_EQ(as("bool", uint8_t{}), (std::vector<uint8_t>{1, 0, 1}));
  EXPECT_EQ(f.get("bool").dtype, DType::BOOL);
  EXPECT_EQ(f.get("empty").shape, (std::vector<int64_t>{0, 3}));
}

}  // namespace
}  // namespace verl::io
