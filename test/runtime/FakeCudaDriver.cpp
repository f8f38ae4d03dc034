//===- FakeCudaDriver.cpp - A CUDA driver without a GPU, for tests --------===//
//
// The driver API calls the runtime resolves (runtime/src/cuda/CudaDriver.h),
// answering as a driver with GPUs would, so that the tests can check the
// runtime's loading and device listing where there is no GPU: run with
// KILN_CUDA_DRIVER pointing at this library. KILN_FAKE_CUDA_DEVICES sets
// how many devices it shows (2 by default); KILN_FAKE_CUDA_NO_DEVICE makes
// cuInit fail as a driver without a GPU does (CUDA_ERROR_NO_DEVICE).
//
//===----------------------------------------------------------------------===//
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {
constexpr int kSuccess = 0, kInvalidValue = 1, kNoDevice = 100, kInvalidDevice = 101;

int deviceCount() {
  const char *count = std::getenv("KILN_FAKE_CUDA_DEVICES");
  return count ? std::atoi(count) : 2;
}
} // namespace

extern "C" {

int cuInit(unsigned flags) {
  return flags != 0 ? kInvalidValue : std::getenv("KILN_FAKE_CUDA_NO_DEVICE") ? kNoDevice : kSuccess;
}

int cuDeviceGetCount(int *count) {
  *count = deviceCount();
  return kSuccess;
}

int cuDeviceGet(int *device, int ordinal) {
  if (ordinal < 0 || ordinal >= deviceCount())
    return kInvalidDevice;
  *device = ordinal;
  return kSuccess;
}

int cuDeviceGetName(char *name, int length, int device) {
  std::snprintf(name, length, "Fake GPU %d", device);
  return kSuccess;
}

// Device 0 is an sm_90 (an H100's), the others sm_80.
int cuDeviceGetAttribute(int *value, int attribute, int device) {
  if (attribute == 75) // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
    *value = device == 0 ? 9 : 8;
  else if (attribute == 76) // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR
    *value = 0;
  else
    return kInvalidValue;
  return kSuccess;
}

int cuDeviceTotalMem_v2(size_t *bytes, int device) {
  *bytes = size_t(80) << 30;
  return kSuccess;
}

int cuGetErrorName(int error, const char **name) {
  *name = error == kNoDevice ? "CUDA_ERROR_NO_DEVICE" : "CUDA_ERROR_UNKNOWN";
  return kSuccess;
}

int cuGetErrorString(int error, const char **text) {
  *text = error == kNoDevice ? "no CUDA-capable device is detected" : "unknown error";
  return kSuccess;
}

} // extern "C"
