//===- RuntimeApiTest.cpp - The runtime's C API and C++ wrapper ----------===//
//
// Runs test/unit/Inputs/runtime_model.onnxtxt, compiled by kilnc at build time
// with --dim batch=1:4, through the C API (kiln/runtime.h) and the C++
// wrapper (kiln/runtime.hpp) of the shared kiln_runtime library:
//   inputs  x f32 [batch, 16], b f32 [16], ids i64 [batch]
//   outputs y = x @ w + b f32 [batch, 16], m = mean(y, 1) f32 [batch],
//           k = ids + ids i64 [batch]
// The artifact's path comes from the KILN_TEST_ARTIFACT environment variable
// (CMake sets it on every test); that of Inputs/runtime_model_b.onnxtxt (the
// same signature, y = x @ w - b and k = ids * ids) from KILN_TEST_ARTIFACT_B,
// or else it is runtime_model_b.kiln in the same folder.
// Error paths check the status code and that the message names the culprit;
// none may crash.
//
//===----------------------------------------------------------------------===//
#include "kiln/abi/kernel_abi.h"
#include "kiln/runtime.h"
#include "kiln/runtime.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr int64_t kFeatures = 16;
constexpr int64_t kMaxBatch = 4;

const char *artifactPath() {
  const char *path = std::getenv("KILN_TEST_ARTIFACT");
  return path ? path : "";
}
/// KILN_TEST_ARTIFACT_B, or else runtime_model_b.kiln next to
/// KILN_TEST_ARTIFACT (where CMake puts it).
/// An artifact compiled next to KILN_TEST_ARTIFACT (test/unit/CMakeLists.txt).
std::string siblingArtifact(const std::string &name) {
  std::string a = artifactPath();
  size_t slash = a.rfind('/');
  return a.empty() ? "" : a.substr(0, slash == std::string::npos ? 0 : slash + 1) + name;
}

std::string artifactPathB() {
  if (const char *path = std::getenv("KILN_TEST_ARTIFACT_B"))
    return path;
  return siblingArtifact("runtime_model_b.kiln");
}

/// Owns a status; EXPECT-friendly accessors.
struct Status {
  explicit Status(kiln_status_t status) : status(status) {}
  ~Status() { kiln_status_free(status); }
  Status(const Status &) = delete;
  Status &operator=(const Status &) = delete;
  bool ok() const { return status == nullptr; }
  kiln_status_code_t code() const { return kiln_status_code(status); }
  std::string message() const { return kiln_status_message(status); }
  kiln_status_t status;
};

#define EXPECT_OK(expr)                                                        \
  do {                                                                         \
    Status status_(expr);                                                      \
    EXPECT_TRUE(status_.ok()) << #expr << ": " << status_.message();           \
  } while (0)
#define ASSERT_OK(expr)                                                        \
  do {                                                                         \
    Status status_(expr);                                                      \
    ASSERT_TRUE(status_.ok()) << #expr << ": " << status_.message();           \
  } while (0)
/// Expects `expr` to fail with `code` and a message containing `fragment`.
#define EXPECT_ERROR(expr, expectedCode, fragment)                             \
  do {                                                                         \
    Status status_(expr);                                                      \
    EXPECT_FALSE(status_.ok()) << #expr << " succeeded";                       \
    EXPECT_EQ(status_.code(), expectedCode) << status_.message();              \
    EXPECT_NE(status_.message().find(fragment), std::string::npos)             \
        << "message: " << status_.message() << "\nexpected to contain: "       \
        << (fragment);                                                         \
  } while (0)

float weight(int64_t i, int64_t j) {
  return static_cast<float>((7 * i + 3 * j) % 9 - 4) / 4.0f;
}

/// Inputs for one batch size, and the outputs runtime_model (or, with
/// `modelB`, runtime_model_b) should give for them.
struct Case {
  explicit Case(int64_t batch, int seed = 0, bool modelB = false) : batch(batch) {
    x.resize(batch * kFeatures);
    b.resize(kFeatures);
    ids.resize(batch);
    for (size_t i = 0; i < x.size(); ++i)
      x[i] = static_cast<float>((static_cast<int64_t>(i) * 37 + seed * 11) % 29 - 14) / 8.0f;
    for (int64_t j = 0; j < kFeatures; ++j)
      b[j] = static_cast<float>(j % 5) - 2.0f + 0.5f * seed;
    for (int64_t r = 0; r < batch; ++r)
      ids[r] = (r + 1) * (seed % 2 ? -1000003 : 7) + (int64_t(1) << 40);
    y.resize(batch * kFeatures);
    m.resize(batch);
    k.resize(batch);
    for (int64_t r = 0; r < batch; ++r) {
      double sum = 0;
      for (int64_t j = 0; j < kFeatures; ++j) {
        double acc = modelB ? -b[j] : b[j];
        for (int64_t i = 0; i < kFeatures; ++i)
          acc += double(x[r * kFeatures + i]) * weight(i, j);
        y[r * kFeatures + j] = static_cast<float>(acc);
        sum += acc;
      }
      m[r] = static_cast<float>(sum / kFeatures);
      // ids * ids wraps, as i64 arithmetic does in the model.
      k[r] = modelB ? static_cast<int64_t>(static_cast<uint64_t>(ids[r]) *
                                           static_cast<uint64_t>(ids[r]))
                    : 2 * ids[r];
    }
    xShape = {batch, kFeatures};
    bShape = {kFeatures};
    idsShape = {batch};
  }

  kiln_tensor_t xTensor() { return {KILN_DTYPE_F32, 2, xShape.data(), x.data(), x.size() * 4}; }
  kiln_tensor_t bTensor() { return {KILN_DTYPE_F32, 1, bShape.data(), b.data(), b.size() * 4}; }
  kiln_tensor_t idsTensor() {
    return {KILN_DTYPE_I64, 1, idsShape.data(), ids.data(), ids.size() * 8};
  }

  int64_t batch;
  std::vector<float> x, b, y, m;
  std::vector<int64_t> ids, k;
  std::vector<int64_t> xShape, bShape, idsShape;
};

void bindAll(kiln_session_t *session, Case &c) {
  kiln_tensor_t x = c.xTensor(), b = c.bTensor(), ids = c.idsTensor();
  ASSERT_OK(kiln_session_bind_input(session, 0, &x));
  ASSERT_OK(kiln_session_bind_input(session, 1, &b));
  ASSERT_OK(kiln_session_bind_input(session, 2, &ids));
}

/// Checks the session's outputs against the case's expected values.
void expectOutputs(const kiln_session_t *session, const Case &c) {
  kiln_tensor_t y, m, k;
  ASSERT_OK(kiln_session_output(session, 0, &y));
  ASSERT_OK(kiln_session_output(session, 1, &m));
  ASSERT_OK(kiln_session_output(session, 2, &k));
  ASSERT_EQ(y.dtype, KILN_DTYPE_F32);
  ASSERT_EQ(y.rank, 2);
  EXPECT_EQ(y.shape[0], c.batch);
  EXPECT_EQ(y.shape[1], kFeatures);
  ASSERT_EQ(y.byte_size, c.y.size() * sizeof(float));
  ASSERT_NE(y.data, nullptr);
  for (size_t i = 0; i < c.y.size(); ++i)
    EXPECT_NEAR(static_cast<const float *>(y.data)[i], c.y[i], 1e-4f) << "y[" << i << "]";
  ASSERT_EQ(m.dtype, KILN_DTYPE_F32);
  ASSERT_EQ(m.rank, 1);
  EXPECT_EQ(m.shape[0], c.batch);
  ASSERT_EQ(m.byte_size, c.m.size() * sizeof(float));
  for (size_t i = 0; i < c.m.size(); ++i)
    EXPECT_NEAR(static_cast<const float *>(m.data)[i], c.m[i], 1e-4f) << "m[" << i << "]";
  ASSERT_EQ(k.dtype, KILN_DTYPE_I64);
  ASSERT_EQ(k.rank, 1);
  EXPECT_EQ(k.shape[0], c.batch);
  ASSERT_EQ(k.byte_size, c.k.size() * sizeof(int64_t));
  for (size_t i = 0; i < c.k.size(); ++i)
    EXPECT_EQ(static_cast<const int64_t *>(k.data)[i], c.k[i]) << "k[" << i << "]";
}

/// An instance, the test model and a session, released in order.
class RuntimeApiTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_STRNE(artifactPath(), "")
        << "KILN_TEST_ARTIFACT must name the compiled runtime_model.kiln";
    kiln_instance_options_t options;
    kiln_instance_options_init(&options);
    options.num_threads = 2;
    ASSERT_OK(kiln_instance_create(&options, &instance));
    ASSERT_OK(kiln_model_load_file(instance, artifactPath(), &model));
    ASSERT_OK(kiln_session_create(model, &session));
  }
  void TearDown() override {
    kiln_session_release(session);
    kiln_model_release(model);
    kiln_instance_release(instance);
  }

  kiln_instance_t *instance = nullptr;
  kiln_model_t *model = nullptr;
  kiln_session_t *session = nullptr;
};

std::vector<char> readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(in), {});
}

std::string writeTemp(const std::string &name, const std::vector<char> &bytes) {
  std::string path = ::testing::TempDir() + "kiln_runtime_api_" + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), bytes.size());
  return path;
}

/// CRC-32 (zlib's) of `bytes` with the header's checksum field read as zero.
uint32_t artifactChecksum(const std::vector<char> &bytes) {
  uint32_t crc = 0xFFFFFFFFu;
  for (size_t i = 0; i < bytes.size(); ++i) {
    uint8_t byte = (i >= 72 && i < 76) ? 0 : static_cast<uint8_t>(bytes[i]);
    crc ^= byte;
    for (int bit = 0; bit < 8; ++bit)
      crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1)));
  }
  return ~crc;
}

template <typename T> T readAt(const std::vector<char> &bytes, size_t offset) {
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return value;
}
template <typename T> void writeAt(std::vector<char> &bytes, size_t offset, T value) {
  std::memcpy(bytes.data() + offset, &value, sizeof(T));
}
void fixChecksum(std::vector<char> &bytes) {
  writeAt<uint32_t>(bytes, 72, artifactChecksum(bytes));
}

} // namespace

//===----------------------------------------------------------------------===//
// Status and dtypes
//===----------------------------------------------------------------------===//

TEST(RuntimeStatus, NullStatusIsOk) {
  EXPECT_EQ(kiln_status_code(nullptr), KILN_STATUS_OK);
  EXPECT_STREQ(kiln_status_message(nullptr), "OK");
  kiln_status_free(nullptr); // must be a no-op
}

TEST(RuntimeStatus, ErrorCarriesCodeAndMessage) {
  kiln_instance_t *instance = nullptr;
  kiln_instance_options_t options = {-1};
  kiln_status_t status = kiln_instance_create(&options, &instance);
  ASSERT_NE(status, nullptr);
  EXPECT_EQ(kiln_status_code(status), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(kiln_status_message(status), "num_threads"), nullptr);
  kiln_status_free(status);
}

TEST(RuntimeDtype, SizesAndNames) {
  EXPECT_EQ(kiln_dtype_size(KILN_DTYPE_F32), 4u);
  EXPECT_EQ(kiln_dtype_size(KILN_DTYPE_F16), 2u);
  EXPECT_EQ(kiln_dtype_size(KILN_DTYPE_BF16), 2u);
  EXPECT_EQ(kiln_dtype_size(KILN_DTYPE_F64), 8u);
  EXPECT_EQ(kiln_dtype_size(KILN_DTYPE_I64), 8u);
  EXPECT_EQ(kiln_dtype_size(KILN_DTYPE_I32), 4u);
  EXPECT_EQ(kiln_dtype_size(KILN_DTYPE_I8), 1u);
  EXPECT_EQ(kiln_dtype_size(KILN_DTYPE_I16), 2u);
  EXPECT_EQ(kiln_dtype_size(KILN_DTYPE_BOOL), 1u);
  EXPECT_EQ(kiln_dtype_size(KILN_DTYPE_U64), 8u);
  EXPECT_EQ(kiln_dtype_size(KILN_DTYPE_U32), 4u);
  EXPECT_EQ(kiln_dtype_size(KILN_DTYPE_U16), 2u);
  EXPECT_EQ(kiln_dtype_size(KILN_DTYPE_U8), 1u);
  EXPECT_EQ(kiln_dtype_size(KILN_DTYPE_INVALID), 0u);
  EXPECT_EQ(kiln_dtype_size(static_cast<kiln_dtype_t>(99)), 0u);
  EXPECT_STREQ(kiln_dtype_name(KILN_DTYPE_F32), "f32");
  EXPECT_STREQ(kiln_dtype_name(KILN_DTYPE_I64), "i64");
  EXPECT_STREQ(kiln_dtype_name(KILN_DTYPE_BOOL), "bool");
  EXPECT_STREQ(kiln_dtype_name(KILN_DTYPE_I16), "i16");
  EXPECT_STREQ(kiln_dtype_name(KILN_DTYPE_U8), "u8");
  EXPECT_STREQ(kiln_dtype_name(KILN_DTYPE_U64), "u64");
  EXPECT_STREQ(kiln_dtype_name(static_cast<kiln_dtype_t>(99)), "invalid");
}

//===----------------------------------------------------------------------===//
// CUDA devices
//===----------------------------------------------------------------------===//

TEST(RuntimeCudaDevices, BadArgumentsRefused) {
  kiln_cuda_device_t device;
  EXPECT_ERROR(kiln_cuda_devices(&device, 1, nullptr), KILN_STATUS_INVALID_ARGUMENT,
               "count must not be NULL");
  int32_t count = 7;
  EXPECT_ERROR(kiln_cuda_devices(nullptr, 1, &count), KILN_STATUS_INVALID_ARGUMENT,
               "capacity");
  EXPECT_ERROR(kiln_cuda_devices(&device, -1, &count), KILN_STATUS_INVALID_ARGUMENT,
               "capacity");
}

// Whatever this machine has (test/tools/kiln-run/devices.test checks each
// case with a fake driver): devices, or none and why, never an error of
// another kind.
TEST(RuntimeCudaDevices, DevicesOrWhyNone) {
  int32_t count = -1;
  kiln_status_t status = kiln_cuda_devices(nullptr, 0, &count);
  if (!status) {
    EXPECT_GE(count, 0);
    return;
  }
  EXPECT_EQ(kiln_status_code(status), KILN_STATUS_FAILED_PRECONDITION);
  EXPECT_EQ(std::string(kiln_status_message(status)).rfind("no CUDA device: ", 0), 0u)
      << kiln_status_message(status);
  EXPECT_EQ(count, 0);
  kiln_status_free(status);
}

//===----------------------------------------------------------------------===//
// Instance
//===----------------------------------------------------------------------===//

TEST(RuntimeInstance, NegativeThreadsRefused) {
  kiln_instance_options_t options;
  kiln_instance_options_init(&options);
  EXPECT_EQ(options.num_threads, 0);
  options.num_threads = -3;
  kiln_instance_t *instance = reinterpret_cast<kiln_instance_t *>(0x1);
  EXPECT_ERROR(kiln_instance_create(&options, &instance), KILN_STATUS_INVALID_ARGUMENT,
               "num_threads is -3");
  EXPECT_EQ(instance, nullptr);
  EXPECT_ERROR(kiln_instance_create(&options, nullptr), KILN_STATUS_INVALID_ARGUMENT,
               "out_instance");
  try {
    kiln::Instance wrapped(-1);
    FAIL() << "kiln::Instance(-1) did not throw";
  } catch (const kiln::Error &error) {
    EXPECT_EQ(error.code(), KILN_STATUS_INVALID_ARGUMENT);
    EXPECT_NE(std::string(error.what()).find("num_threads is -1"), std::string::npos);
  }
}

TEST(RuntimeInstance, NumThreads) {
  for (int32_t threads : {1, 2, 5}) {
    kiln_instance_options_t options = {threads};
    kiln_instance_t *instance = nullptr;
    ASSERT_OK(kiln_instance_create(&options, &instance));
    EXPECT_EQ(kiln_instance_num_threads(instance), threads);
    kiln_instance_release(instance);
  }
  // 0 (and NULL options) mean one per core.
  int32_t cores = static_cast<int32_t>(std::max(1u, std::thread::hardware_concurrency()));
  kiln_instance_t *instance = nullptr;
  ASSERT_OK(kiln_instance_create(nullptr, &instance));
  EXPECT_EQ(kiln_instance_num_threads(instance), cores);
  std::string isa = kiln_instance_kernel_isa(instance);
  EXPECT_TRUE(isa == "avx512" || isa == "avx2" || isa == "generic") << isa;
  kiln_instance_release(instance);
  EXPECT_EQ(kiln_instance_num_threads(nullptr), 0);
  kiln::Instance wrapped(3);
  EXPECT_EQ(wrapped.numThreads(), 3);
  EXPECT_EQ(kiln::Instance().numThreads(), cores);
}

//===----------------------------------------------------------------------===//
// Loading
//===----------------------------------------------------------------------===//

TEST(RuntimeLoad, MissingFileIsNotFound) {
  kiln::Instance instance(1);
  kiln_model_t *model = reinterpret_cast<kiln_model_t *>(0x1);
  std::string path = ::testing::TempDir() + "kiln_runtime_api_absent.kiln";
  EXPECT_ERROR(kiln_model_load_file(instance.get(), path.c_str(), &model),
               KILN_STATUS_NOT_FOUND, path + ": cannot open");
  EXPECT_EQ(model, nullptr);
  try {
    kiln::Model wrapped(instance, path);
    FAIL() << "kiln::Model on a missing file did not throw";
  } catch (const kiln::Error &error) {
    EXPECT_EQ(error.code(), KILN_STATUS_NOT_FOUND);
  }
}

TEST(RuntimeLoad, NullArgumentsRefused) {
  kiln::Instance instance(1);
  kiln_model_t *model = nullptr;
  EXPECT_ERROR(kiln_model_load_file(nullptr, artifactPath(), &model),
               KILN_STATUS_INVALID_ARGUMENT, "must not be NULL");
  EXPECT_ERROR(kiln_model_load_file(instance.get(), nullptr, &model),
               KILN_STATUS_INVALID_ARGUMENT, "must not be NULL");
  EXPECT_ERROR(kiln_model_load_file(instance.get(), artifactPath(), nullptr),
               KILN_STATUS_INVALID_ARGUMENT, "must not be NULL");
}

// The lit test tools/kiln-run/artifact-errors.test covers the messages of
// every kind of damage; this checks the status code each maps to.
TEST(RuntimeLoad, DamagedArtifactCodes) {
  kiln::Instance instance(1);
  std::vector<char> good = readFile(artifactPath());
  ASSERT_GT(good.size(), 80u);
  ASSERT_EQ(artifactChecksum(good), readAt<uint32_t>(good, 72))
      << "the test's CRC-32 does not reproduce the artifact's checksum";
  auto expectCode = [&](const std::string &name, const std::vector<char> &bytes,
                        kiln_status_code_t code, const std::string &fragment) {
    std::string path = writeTemp(name, bytes);
    kiln_model_t *model = nullptr;
    Status status(kiln_model_load_file(instance.get(), path.c_str(), &model));
    EXPECT_EQ(status.code(), code) << name << ": " << status.message();
    // The message starts with the file's name and says what is wrong.
    EXPECT_EQ(status.message().rfind(path + ": ", 0), 0u) << status.message();
    EXPECT_NE(status.message().find(fragment), std::string::npos)
        << "message: " << status.message() << "\nexpected to contain: " << fragment;
    EXPECT_EQ(model, nullptr);
    kiln_model_release(model);
    std::remove(path.c_str());
  };

  std::vector<char> bytes = good;
  bytes[0] = 'X';
  expectCode("magic.kiln", bytes, KILN_STATUS_INVALID_ARGUMENT, "not a Kiln artifact");
  bytes = good;
  // Version 5 artifacts fill a kiln_linear_params_t of 20 slots, without
  // zero points.
  writeAt<uint32_t>(bytes, 8, 5);
  expectCode("version.kiln", bytes, KILN_STATUS_UNIMPLEMENTED,
             "format version 5");
  expectCode("short-header.kiln", std::vector<char>(good.begin(), good.begin() + 79),
             KILN_STATUS_DATA_LOSS, "truncated: 79 bytes");
  expectCode("truncated.kiln", std::vector<char>(good.begin(), good.end() - 1),
             KILN_STATUS_DATA_LOSS, "truncated: the header");
  bytes = good;
  bytes[bytes.size() - 1] ^= 1;
  expectCode("flipped.kiln", bytes, KILN_STATUS_DATA_LOSS, "checksum mismatch");
  bytes = good;
  writeAt<uint64_t>(bytes, 48, readAt<uint64_t>(good, 16)); // codeSize = fileSize
  fixChecksum(bytes);
  expectCode("bounds.kiln", bytes, KILN_STATUS_DATA_LOSS, "the code section");

  // A CPU feature no CPU has: the manifest rewritten with it, in place (the
  // padding after the manifest has room), checksum recomputed.
  uint64_t manifestOffset = readAt<uint64_t>(good, 24);
  uint64_t manifestSize = readAt<uint64_t>(good, 32);
  uint64_t codeOffset = readAt<uint64_t>(good, 40);
  std::string manifest(good.data() + manifestOffset, manifestSize);
  size_t features = manifest.find("\"features\": [");
  ASSERT_NE(features, std::string::npos) << manifest;
  manifest.insert(features + std::strlen("\"features\": ["), "\"kiln-test-feature\", ");
  ASSERT_LE(manifestOffset + manifest.size(), codeOffset);
  bytes = good;
  std::memcpy(bytes.data() + manifestOffset, manifest.data(), manifest.size());
  writeAt<uint64_t>(bytes, 32, manifest.size());
  fixChecksum(bytes);
  expectCode("feature.kiln", bytes, KILN_STATUS_FAILED_PRECONDITION,
             "whose features this CPU lacks: kiln-test-feature");
}

//===----------------------------------------------------------------------===//
// Model queries
//===----------------------------------------------------------------------===//

TEST_F(RuntimeApiTest, ModelInfo) {
  ASSERT_EQ(kiln_model_input_count(model), 3);
  ASSERT_EQ(kiln_model_output_count(model), 3);
  EXPECT_EQ(kiln_model_input_count(nullptr), 0);
  EXPECT_EQ(kiln_model_output_count(nullptr), 0);
  // The outputs are on the heap; a temporary of the matmul is in the arena,
  // which the runs below reuse across batch sizes and sessions.
  EXPECT_GT(kiln_model_arena_bytes(model), 0u);
  EXPECT_EQ(kiln_model_arena_bytes(nullptr), 0u);

  kiln_io_info_t info;
  ASSERT_OK(kiln_model_input_info(model, 0, &info));
  EXPECT_STREQ(info.name, "x");
  EXPECT_EQ(info.dtype, KILN_DTYPE_F32);
  ASSERT_EQ(info.rank, 2);
  EXPECT_EQ(info.dims[0].size, -1);
  EXPECT_STREQ(info.dims[0].name, "batch");
  EXPECT_EQ(info.dims[0].min, 1);
  EXPECT_EQ(info.dims[0].max, kMaxBatch);
  EXPECT_EQ(info.dims[1].size, kFeatures);
  EXPECT_STREQ(info.dims[1].name, "");
  EXPECT_EQ(info.dims[1].min, kFeatures);
  EXPECT_EQ(info.dims[1].max, kFeatures);

  ASSERT_OK(kiln_model_input_info(model, 1, &info));
  EXPECT_STREQ(info.name, "b");
  EXPECT_EQ(info.dtype, KILN_DTYPE_F32);
  ASSERT_EQ(info.rank, 1);
  EXPECT_EQ(info.dims[0].size, kFeatures);

  ASSERT_OK(kiln_model_input_info(model, 2, &info));
  EXPECT_STREQ(info.name, "ids");
  EXPECT_EQ(info.dtype, KILN_DTYPE_I64);
  ASSERT_EQ(info.rank, 1);
  EXPECT_STREQ(info.dims[0].name, "batch");

  const char *outputs[] = {"y", "m", "k"};
  const kiln_dtype_t dtypes[] = {KILN_DTYPE_F32, KILN_DTYPE_F32, KILN_DTYPE_I64};
  const int32_t ranks[] = {2, 1, 1};
  for (int32_t i = 0; i < 3; ++i) {
    ASSERT_OK(kiln_model_output_info(model, i, &info));
    EXPECT_STREQ(info.name, outputs[i]);
    EXPECT_EQ(info.dtype, dtypes[i]);
    ASSERT_EQ(info.rank, ranks[i]);
    EXPECT_EQ(info.dims[0].size, -1);
    EXPECT_STREQ(info.dims[0].name, "batch");
    EXPECT_EQ(info.dims[0].min, 1);
    EXPECT_EQ(info.dims[0].max, kMaxBatch);
  }

  EXPECT_ERROR(kiln_model_input_info(model, 3, &info), KILN_STATUS_INVALID_ARGUMENT,
               "input index 3 is out of range; the model has 3");
  EXPECT_ERROR(kiln_model_input_info(model, -1, &info), KILN_STATUS_INVALID_ARGUMENT,
               "input index -1");
  EXPECT_ERROR(kiln_model_output_info(model, 3, &info), KILN_STATUS_INVALID_ARGUMENT,
               "output index 3");
  EXPECT_ERROR(kiln_model_input_info(model, 0, nullptr), KILN_STATUS_INVALID_ARGUMENT,
               "out_info");
  EXPECT_ERROR(kiln_model_input_info(nullptr, 0, &info), KILN_STATUS_INVALID_ARGUMENT,
               "model is NULL");
}

TEST_F(RuntimeApiTest, FindInputAndOutput) {
  EXPECT_EQ(kiln_model_find_input(model, "x"), 0);
  EXPECT_EQ(kiln_model_find_input(model, "b"), 1);
  EXPECT_EQ(kiln_model_find_input(model, "ids"), 2);
  EXPECT_EQ(kiln_model_find_input(model, "y"), -1); // an output, not an input
  EXPECT_EQ(kiln_model_find_input(model, "nope"), -1);
  EXPECT_EQ(kiln_model_find_input(model, ""), -1);
  EXPECT_EQ(kiln_model_find_input(model, nullptr), -1);
  EXPECT_EQ(kiln_model_find_input(nullptr, "x"), -1);
  EXPECT_EQ(kiln_model_find_output(model, "y"), 0);
  EXPECT_EQ(kiln_model_find_output(model, "m"), 1);
  EXPECT_EQ(kiln_model_find_output(model, "k"), 2);
  EXPECT_EQ(kiln_model_find_output(model, "x"), -1);
  EXPECT_EQ(kiln_model_find_output(model, nullptr), -1);
}

//===----------------------------------------------------------------------===//
// Binding
//===----------------------------------------------------------------------===//

TEST_F(RuntimeApiTest, SessionCreateRefusesNull) {
  kiln_session_t *other = nullptr;
  EXPECT_ERROR(kiln_session_create(nullptr, &other), KILN_STATUS_INVALID_ARGUMENT,
               "must not be NULL");
  EXPECT_ERROR(kiln_session_create(model, nullptr), KILN_STATUS_INVALID_ARGUMENT,
               "must not be NULL");
  kiln_session_release(nullptr); // a no-op
}

TEST_F(RuntimeApiTest, BindBadIndex) {
  Case c(2);
  kiln_tensor_t x = c.xTensor();
  EXPECT_ERROR(kiln_session_bind_input(session, -1, &x), KILN_STATUS_INVALID_ARGUMENT,
               "input index -1 is out of range; the model has 3 inputs");
  EXPECT_ERROR(kiln_session_bind_input(session, 3, &x), KILN_STATUS_INVALID_ARGUMENT,
               "input index 3 is out of range");
  std::vector<float> buffer(64);
  kiln_tensor_t out = {KILN_DTYPE_INVALID, 0, nullptr, buffer.data(), buffer.size() * 4};
  EXPECT_ERROR(kiln_session_bind_output(session, 3, &out), KILN_STATUS_INVALID_ARGUMENT,
               "output index 3 is out of range; the model has 3 outputs");
  EXPECT_ERROR(kiln_session_bind_output(session, -1, &out), KILN_STATUS_INVALID_ARGUMENT,
               "output index -1");
  EXPECT_ERROR(kiln_session_bind_input(nullptr, 0, &x), KILN_STATUS_INVALID_ARGUMENT,
               "must not be NULL");
  EXPECT_ERROR(kiln_session_bind_input(session, 0, nullptr), KILN_STATUS_INVALID_ARGUMENT,
               "must not be NULL");
  EXPECT_ERROR(kiln_session_bind_output(session, 0, nullptr), KILN_STATUS_INVALID_ARGUMENT,
               "must not be NULL");
}

TEST_F(RuntimeApiTest, BindNullData) {
  Case c(2);
  kiln_tensor_t x = c.xTensor();
  x.data = nullptr;
  EXPECT_ERROR(kiln_session_bind_input(session, 0, &x), KILN_STATUS_INVALID_ARGUMENT,
               "input 'x': data is NULL");
  kiln_tensor_t b = c.bTensor();
  b.shape = nullptr;
  EXPECT_ERROR(kiln_session_bind_input(session, 1, &b), KILN_STATUS_INVALID_ARGUMENT,
               "input 'b': a rank of 1 needs a shape");
  b = c.bTensor();
  b.rank = -1;
  EXPECT_ERROR(kiln_session_bind_input(session, 1, &b), KILN_STATUS_INVALID_ARGUMENT,
               "input 'b': a rank of -1 needs a shape");
}

TEST_F(RuntimeApiTest, BindWrongByteSize) {
  Case c(2);
  kiln_tensor_t x = c.xTensor();
  x.byte_size -= 4;
  EXPECT_ERROR(kiln_session_bind_input(session, 0, &x), KILN_STATUS_INVALID_ARGUMENT,
               "input 'x': 124 bytes given, shape [2, 16] of f32 needs 128");
  x.byte_size += 8;
  EXPECT_ERROR(kiln_session_bind_input(session, 0, &x), KILN_STATUS_INVALID_ARGUMENT,
               "132 bytes given");
}

TEST_F(RuntimeApiTest, BindWrongDtypeRankOrShape) {
  Case c(2);
  kiln_tensor_t x = c.xTensor();
  x.dtype = KILN_DTYPE_F16;
  EXPECT_ERROR(kiln_session_bind_input(session, 0, &x), KILN_STATUS_INVALID_ARGUMENT,
               "input 'x': dtype f16, the model expects f32");
  kiln_tensor_t ids = c.idsTensor();
  ids.dtype = KILN_DTYPE_I32;
  EXPECT_ERROR(kiln_session_bind_input(session, 2, &ids), KILN_STATUS_INVALID_ARGUMENT,
               "input 'ids': dtype i32, the model expects i64");
  x = c.xTensor();
  x.rank = 1;
  EXPECT_ERROR(kiln_session_bind_input(session, 0, &x), KILN_STATUS_INVALID_ARGUMENT,
               "input 'x': rank 1 (shape [2]), the model expects rank 2");
  std::vector<int64_t> shape = {2, 8};
  x = c.xTensor();
  x.shape = shape.data();
  x.byte_size = 2 * 8 * 4;
  EXPECT_ERROR(kiln_session_bind_input(session, 0, &x), KILN_STATUS_INVALID_ARGUMENT,
               "input 'x': dim 1 is 8, the model expects 16");
  shape = {kMaxBatch + 1, kFeatures};
  std::vector<float> big((kMaxBatch + 1) * kFeatures);
  x = {KILN_DTYPE_F32, 2, shape.data(), big.data(), big.size() * 4};
  EXPECT_ERROR(kiln_session_bind_input(session, 0, &x), KILN_STATUS_INVALID_ARGUMENT,
               "input 'x': dim 0 ('batch') is 5, outside its bounds [1, 4]");
  shape = {-2, kFeatures};
  x = {KILN_DTYPE_F32, 2, shape.data(), big.data(), 0};
  EXPECT_ERROR(kiln_session_bind_input(session, 0, &x), KILN_STATUS_INVALID_ARGUMENT,
               "input 'x': dim 0 is negative");

  // The C++ wrapper throws the same errors.
  kiln::Instance cppInstance(1);
  kiln::Model cppModel(cppInstance, artifactPath());
  kiln::Session cppSession(cppModel);
  try {
    cppSession.bindInput(0, KILN_DTYPE_F64, c.xShape, c.x.data(), c.x.size() * 4);
    FAIL() << "bindInput with the wrong dtype did not throw";
  } catch (const kiln::Error &error) {
    EXPECT_EQ(error.code(), KILN_STATUS_INVALID_ARGUMENT);
    EXPECT_NE(std::string(error.what()).find("dtype f64"), std::string::npos) << error.what();
  }
}

//===----------------------------------------------------------------------===//
// Running
//===----------------------------------------------------------------------===//

TEST_F(RuntimeApiTest, OutputBeforeRunIsFailedPrecondition) {
  kiln_tensor_t out;
  EXPECT_ERROR(kiln_session_output(session, 0, &out), KILN_STATUS_FAILED_PRECONDITION,
               "run it first");
  EXPECT_ERROR(kiln_session_output(session, 0, nullptr), KILN_STATUS_INVALID_ARGUMENT,
               "must not be NULL");
  EXPECT_ERROR(kiln_session_run(nullptr), KILN_STATUS_INVALID_ARGUMENT, "session is NULL");
}

TEST_F(RuntimeApiTest, RunWithUnboundInput) {
  Case c(2);
  kiln_tensor_t x = c.xTensor(), b = c.bTensor();
  ASSERT_OK(kiln_session_bind_input(session, 0, &x));
  ASSERT_OK(kiln_session_bind_input(session, 1, &b));
  EXPECT_ERROR(kiln_session_run(session), KILN_STATUS_INVALID_ARGUMENT,
               "input 'ids' is not bound");
  kiln_tensor_t out;
  EXPECT_ERROR(kiln_session_output(session, 0, &out), KILN_STATUS_FAILED_PRECONDITION,
               "run it first");
}

TEST_F(RuntimeApiTest, RunWithDisagreeingDims) {
  Case two(2), three(3);
  kiln_tensor_t x = two.xTensor(), b = two.bTensor(), ids = three.idsTensor();
  ASSERT_OK(kiln_session_bind_input(session, 0, &x));
  ASSERT_OK(kiln_session_bind_input(session, 1, &b));
  ASSERT_OK(kiln_session_bind_input(session, 2, &ids));
  EXPECT_ERROR(kiln_session_run(session), KILN_STATUS_INVALID_ARGUMENT,
               "input 'ids': dim 0 ('batch') is 3, but another input gives 'batch' size 2");
}

TEST_F(RuntimeApiTest, RuntimeOwnedOutputs) {
  Case c(3);
  bindAll(session, c);
  ASSERT_OK(kiln_session_run(session));
  expectOutputs(session, c);
  kiln_tensor_t out;
  EXPECT_ERROR(kiln_session_output(session, 3, &out), KILN_STATUS_INVALID_ARGUMENT,
               "output index 3 is out of range");
  EXPECT_ERROR(kiln_session_output(session, -1, &out), KILN_STATUS_INVALID_ARGUMENT,
               "output index -1 is out of range");
  // Outputs are not the inputs' memory.
  ASSERT_OK(kiln_session_output(session, 2, &out));
  EXPECT_NE(out.data, c.ids.data());
}

TEST_F(RuntimeApiTest, InputShapeIsCopiedAtBind) {
  Case c(2);
  bindAll(session, c);
  c.xShape[0] = 1000; // after binding; the session keeps its own copy
  c.idsShape[0] = -5;
  ASSERT_OK(kiln_session_run(session));
  Case expected(2);
  expectOutputs(session, expected);
}

TEST_F(RuntimeApiTest, CallerBoundOutputTooSmall) {
  Case c(4);
  bindAll(session, c);
  std::vector<float> small(c.y.size() - 1, -7.0f);
  kiln_tensor_t out = {KILN_DTYPE_INVALID, 0, nullptr, small.data(), small.size() * 4};
  ASSERT_OK(kiln_session_bind_output(session, 0, &out));
  EXPECT_ERROR(kiln_session_run(session), KILN_STATUS_INVALID_ARGUMENT,
               "output 'y' of shape [4, 16] needs 256 bytes, its bound buffer holds 252");
  for (float v : small)
    ASSERT_EQ(v, -7.0f) << "a refused output wrote into the buffer";
  kiln_tensor_t result;
  EXPECT_ERROR(kiln_session_output(session, 1, &result), KILN_STATUS_FAILED_PRECONDITION,
               "run it first");
  // The session is still usable: with a big enough buffer the run succeeds.
  std::vector<float> big(c.y.size() + 8, -7.0f);
  out = {KILN_DTYPE_INVALID, 0, nullptr, big.data(), big.size() * 4};
  ASSERT_OK(kiln_session_bind_output(session, 0, &out));
  ASSERT_OK(kiln_session_run(session));
  expectOutputs(session, c);
}

TEST_F(RuntimeApiTest, CallerBoundOutputWrittenInPlace) {
  Case c(3);
  bindAll(session, c);
  std::vector<float> y(kMaxBatch * kFeatures, -7.0f); // room for the largest batch
  std::vector<int64_t> k(c.k.size(), -7);             // exactly the size needed
  kiln_tensor_t yOut = {KILN_DTYPE_INVALID, 0, nullptr, y.data(), y.size() * 4};
  kiln_tensor_t kOut = {KILN_DTYPE_INVALID, 0, nullptr, k.data(), k.size() * 8};
  ASSERT_OK(kiln_session_bind_output(session, 0, &yOut));
  ASSERT_OK(kiln_session_bind_output(session, 2, &kOut));
  ASSERT_OK(kiln_session_run(session));
  expectOutputs(session, c);
  kiln_tensor_t result;
  ASSERT_OK(kiln_session_output(session, 0, &result));
  EXPECT_EQ(result.data, y.data());
  EXPECT_EQ(result.byte_size, c.y.size() * 4); // the output's size, not the capacity
  for (size_t i = 0; i < c.y.size(); ++i)
    EXPECT_NEAR(y[i], c.y[i], 1e-4f) << "y[" << i << "]";
  for (size_t i = c.y.size(); i < y.size(); ++i)
    EXPECT_EQ(y[i], -7.0f) << "written past the output at " << i;
  ASSERT_OK(kiln_session_output(session, 2, &result));
  EXPECT_EQ(result.data, k.data());
  EXPECT_EQ(k, c.k);
  // Output 1 stays in runtime memory.
  ASSERT_OK(kiln_session_output(session, 1, &result));
  EXPECT_NE(result.data, nullptr);
  EXPECT_NE(result.data, y.data());

  // Unbinding (NULL data) returns the output to runtime memory.
  kiln_tensor_t unbind = {KILN_DTYPE_INVALID, 0, nullptr, nullptr, 0};
  ASSERT_OK(kiln_session_bind_output(session, 0, &unbind));
  std::fill(y.begin(), y.end(), -7.0f);
  ASSERT_OK(kiln_session_run(session));
  expectOutputs(session, c);
  ASSERT_OK(kiln_session_output(session, 0, &result));
  EXPECT_NE(result.data, y.data());
  EXPECT_EQ(y[0], -7.0f);
}

TEST_F(RuntimeApiTest, TwoRunsInARow) {
  // The same inputs twice: the same outputs.
  Case c(2);
  bindAll(session, c);
  ASSERT_OK(kiln_session_run(session));
  expectOutputs(session, c);
  kiln_tensor_t first;
  ASSERT_OK(kiln_session_output(session, 0, &first));
  std::vector<float> firstY(static_cast<const float *>(first.data),
                            static_cast<const float *>(first.data) + c.y.size());
  ASSERT_OK(kiln_session_run(session));
  expectOutputs(session, c);
  kiln_tensor_t second;
  ASSERT_OK(kiln_session_output(session, 0, &second));
  EXPECT_EQ(std::memcmp(second.data, firstY.data(), firstY.size() * 4), 0);

  // Then rebound to another batch size and other values.
  Case d(kMaxBatch, 1);
  bindAll(session, d);
  ASSERT_OK(kiln_session_run(session));
  expectOutputs(session, d);
  Case e(1, 2);
  bindAll(session, e);
  ASSERT_OK(kiln_session_run(session));
  expectOutputs(session, e);
}

TEST_F(RuntimeApiTest, CppWrapperRuns) {
  kiln::Instance cppInstance(2);
  kiln::Model cppModel(cppInstance, artifactPath());
  EXPECT_EQ(cppModel.inputCount(), 3);
  EXPECT_EQ(cppModel.outputCount(), 3);
  EXPECT_STREQ(cppModel.input(2).name, "ids");
  EXPECT_STREQ(cppModel.output(1).name, "m");
  EXPECT_EQ(cppModel.inputIndex("b"), 1);
  try {
    cppModel.inputIndex("nope");
    FAIL() << "inputIndex of an unknown name did not throw";
  } catch (const kiln::Error &error) {
    EXPECT_EQ(error.code(), KILN_STATUS_NOT_FOUND);
    EXPECT_NE(std::string(error.what()).find("no input 'nope'"), std::string::npos);
  }
  try {
    cppModel.output(7);
    FAIL() << "output(7) did not throw";
  } catch (const kiln::Error &error) {
    EXPECT_EQ(error.code(), KILN_STATUS_INVALID_ARGUMENT);
  }
  kiln::Session cppSession(cppModel);
  EXPECT_THROW(cppSession.output(0), kiln::Error);
  Case c(4, 3);
  cppSession.bindInput(0, KILN_DTYPE_F32, c.xShape, c.x.data(), c.x.size() * 4);
  cppSession.bindInput(1, KILN_DTYPE_F32, c.bShape, c.b.data(), c.b.size() * 4);
  cppSession.bindInput(2, KILN_DTYPE_I64, c.idsShape, c.ids.data(), c.ids.size() * 8);
  std::vector<float> m(c.m.size());
  cppSession.bindOutput(1, m.data(), m.size() * 4);
  cppSession.run();
  expectOutputs(cppSession.get(), c);
  EXPECT_EQ(cppSession.output(1).data, m.data());
  std::vector<float> tiny(1);
  cppSession.bindOutput(1, tiny.data(), tiny.size() * 4);
  try {
    cppSession.run();
    FAIL() << "run with a too small output buffer did not throw";
  } catch (const kiln::Error &error) {
    EXPECT_EQ(error.code(), KILN_STATUS_INVALID_ARGUMENT);
    EXPECT_NE(std::string(error.what()).find("output 'm'"), std::string::npos);
  }
}

TEST_F(RuntimeApiTest, TwoSessionsOnTwoThreads) {
  // Two sessions of one model, on one 2-thread instance, run at the same time
  // from two threads on the same inputs: identical outputs, every time, equal
  // to a run on this thread.
  constexpr int kRuns = 2000;
  Case c(kMaxBatch, 5);
  bindAll(session, c);
  ASSERT_OK(kiln_session_run(session));
  expectOutputs(session, c);
  kiln_tensor_t reference;
  ASSERT_OK(kiln_session_output(session, 0, &reference));
  std::vector<float> expectedY(static_cast<const float *>(reference.data),
                               static_cast<const float *>(reference.data) + c.y.size());

  struct Worker {
    kiln_session_t *session = nullptr;
    std::vector<float> lastY;
    int mismatches = 0;
    std::string error;
  };
  Worker workers[2];
  for (Worker &worker : workers) {
    ASSERT_OK(kiln_session_create(model, &worker.session));
    bindAll(worker.session, c);
  }
  auto work = [&](Worker &worker) {
    for (int i = 0; i < kRuns && worker.error.empty(); ++i) {
      Status run(kiln_session_run(worker.session));
      kiln_tensor_t y;
      Status output(run.ok() ? kiln_session_output(worker.session, 0, &y) : nullptr);
      if (!run.ok() || !output.ok()) {
        worker.error = run.ok() ? output.message() : run.message();
        break;
      }
      const float *data = static_cast<const float *>(y.data);
      if (y.byte_size != expectedY.size() * 4 ||
          std::memcmp(data, expectedY.data(), y.byte_size) != 0)
        ++worker.mismatches;
      worker.lastY.assign(data, data + y.byte_size / 4);
    }
  };
  std::thread first(work, std::ref(workers[0]));
  std::thread second(work, std::ref(workers[1]));
  first.join();
  second.join();
  for (Worker &worker : workers) {
    EXPECT_EQ(worker.error, "");
    EXPECT_EQ(worker.mismatches, 0);
    EXPECT_EQ(worker.lastY, expectedY);
    expectOutputs(worker.session, c);
    kiln_session_release(worker.session);
  }
}

//===----------------------------------------------------------------------===//
// Several models in one process
//===----------------------------------------------------------------------===//

/// Runs `model` on batch-2 inputs and checks the outputs of runtime_model
/// (or, with `modelB`, runtime_model_b).
void expectModelRuns(const kiln::Model &model, bool modelB) {
  kiln::Session session(model);
  Case c(2, 0, modelB);
  bindAll(session.get(), c);
  ASSERT_OK(kiln_session_run(session.get()));
  expectOutputs(session.get(), c);
}

TEST(RuntimeModels, OneArtifactLoadedTwice) {
  kiln::Instance instance(1);
  kiln::Model first(instance, artifactPath());
  kiln::Model second(instance, artifactPath());
  expectModelRuns(first, false);
  expectModelRuns(second, false);
}

TEST(RuntimeModels, TwoArtifactsOneAfterTheOther) {
  ASSERT_NE(artifactPathB(), "") << "KILN_TEST_ARTIFACT is not set";
  kiln::Instance instance(1);
  {
    kiln::Model a(instance, artifactPath());
    expectModelRuns(a, false);
  }
  kiln::Model b(instance, artifactPathB());
  expectModelRuns(b, true);
}

// Two different artifacts loaded at once each run their own code. (Each
// library is dlopen()ed through its own memfd path, which stays open while the
// library is loaded, so dlopen never mistakes one for the other.)
TEST(RuntimeModels, TwoDifferentArtifactsLoadedAtOnce) {
  ASSERT_NE(artifactPathB(), "") << "KILN_TEST_ARTIFACT is not set";
  kiln::Instance instance(1);
  kiln::Model a(instance, artifactPath());
  kiln::Model b(instance, artifactPathB());
  expectModelRuns(a, false);
  expectModelRuns(b, true);
}

//===----------------------------------------------------------------------===//
// Linear observer (kilnc --calibration's view of the products)
//===----------------------------------------------------------------------===//

namespace {

/// observed_model.kiln's weight and bias (Inputs/observed_model.onnxtxt).
float observedWeight(int64_t i, int64_t j) {
  return static_cast<float>((3 * i + 5 * j) % 7 - 3) / 4.0f;
}
float observedBias(int64_t j) { return static_cast<float>(j % 5 - 2) / 8.0f; }

/// What an observer saw of each call, and the product it computed itself
/// (without the epilogue) inside the call before each product.
struct ObservedCall {
  int32_t weightIndex, after;
  int64_t m, n, k;
  std::vector<float> a, out, ownProduct;
};

void recordCall(void *userData, const kiln_linear_params_s *params, int32_t weightIndex,
                int32_t after) {
  auto &calls = *static_cast<std::vector<ObservedCall> *>(userData);
  ObservedCall call{weightIndex, after, params->m, params->n, params->k, {}, {}, {}};
  for (int64_t i = 0; i < params->m; ++i) {
    call.a.insert(call.a.end(), params->a + i * params->lda,
                  params->a + i * params->lda + params->k);
    if (after)
      call.out.insert(call.out.end(), params->out + i * params->ldc,
                      params->out + i * params->ldc + params->n);
  }
  if (!after) {
    // The observer may run the kernel itself; that call is not observed.
    call.ownProduct.resize(params->m * params->n);
    kiln_linear_params_t product = *params;
    product.bias = nullptr;
    product.activation = 0;
    product.out = call.ownProduct.data();
    product.ldc = params->n;
    kiln_ukernel_linear(&product);
  }
  calls.push_back(std::move(call));
}

} // namespace

TEST(RuntimeLinearObserver, SeesEachProductBeforeAndAfter) {
  const std::string path = siblingArtifact("observed_model.kiln");
  ASSERT_NE(path, "") << "KILN_TEST_ARTIFACT is not set";
  kiln::Instance instance(2);
  kiln::Model model(instance, path);
  kiln::Session session(model);
  const int64_t batch = 3, k = 8, n = 64;
  std::vector<float> x(batch * k);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<float>(static_cast<int64_t>(i * 13) % 11 - 5) / 4.0f;
  session.bindInput(0, KILN_DTYPE_F32, {batch, k}, x.data(), x.size() * sizeof(float));
  std::vector<ObservedCall> calls;
  kiln::check(kiln_session_set_linear_observer(session.get(), &recordCall, &calls));
  session.run();

  ASSERT_EQ(calls.size(), 2u) << "one product, seen before and after, and not "
                                 "the observer's own call of the kernel";
  EXPECT_EQ(calls[0].after, 0);
  EXPECT_EQ(calls[1].after, 1);
  for (const ObservedCall &call : calls) {
    EXPECT_GE(call.weightIndex, 0);
    EXPECT_EQ(call.weightIndex, calls[0].weightIndex);
    EXPECT_EQ(call.m, batch);
    EXPECT_EQ(call.k, k);
    EXPECT_EQ(call.n, n);
    EXPECT_EQ(call.a, x);
  }
  const kiln_tensor_t y = session.output(0);
  const auto *yValues = static_cast<const float *>(y.data);
  for (int64_t r = 0; r < batch; ++r)
    for (int64_t j = 0; j < n; ++j) {
      float product = 0;
      for (int64_t i = 0; i < k; ++i)
        product += x[r * k + i] * observedWeight(i, j);
      const float expected = std::max(product + observedBias(j), 0.0f);
      EXPECT_NEAR(calls[0].ownProduct[r * n + j], product, 1e-5f) << r << "," << j;
      EXPECT_NEAR(calls[1].out[r * n + j], expected, 1e-5f) << r << "," << j;
      EXPECT_EQ(calls[1].out[r * n + j], yValues[r * n + j]);
    }

  // Turned off, it sees nothing.
  kiln::check(kiln_session_set_linear_observer(session.get(), nullptr, nullptr));
  session.run();
  EXPECT_EQ(calls.size(), 2u);
  EXPECT_ERROR(kiln_session_set_linear_observer(nullptr, &recordCall, &calls),
               KILN_STATUS_INVALID_ARGUMENT, "session is NULL");
}
