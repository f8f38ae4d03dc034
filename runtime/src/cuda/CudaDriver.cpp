//===- CudaDriver.cpp - The CUDA driver API, loaded at run time -----------===//
#include "runtime/src/cuda/CudaDriver.h"

#include <cstdlib>
#include <dlfcn.h>

namespace kiln::rt::cuda {

namespace {

// CUdevice_attribute values of the driver API (cuda.h).
constexpr int kComputeCapabilityMajor = 75;
constexpr int kComputeCapabilityMinor = 76;

template <typename Function>
bool lookUp(void *library, const char *symbol, Function &function, std::string &error) {
  function = reinterpret_cast<Function>(dlsym(library, symbol));
  if (!function)
    error = Driver::libraryName() + " is not the CUDA driver: it does not export " + symbol;
  return function != nullptr;
}

} // namespace

std::string Driver::libraryName() {
  const char *named = std::getenv("KILN_CUDA_DRIVER");
  return named && *named ? named : "libcuda.so.1";
}

bool Driver::resolve(void *library, std::string &error) {
  // cuDeviceTotalMem is the _v2 entry point since CUDA 3.2, as cuda.h's
  // macros name it.
  return lookUp(library, "cuInit", init, error) &&
         lookUp(library, "cuDeviceGetCount", deviceGetCount, error) &&
         lookUp(library, "cuDeviceGet", deviceGet, error) &&
         lookUp(library, "cuDeviceGetName", deviceGetName, error) &&
         lookUp(library, "cuDeviceGetAttribute", deviceGetAttribute, error) &&
         lookUp(library, "cuDeviceTotalMem_v2", deviceTotalMem, error) &&
         lookUp(library, "cuGetErrorName", getErrorName, error) &&
         lookUp(library, "cuGetErrorString", getErrorString, error) &&
         lookUp(library, "cuDevicePrimaryCtxRetain", devicePrimaryCtxRetain, error) &&
         lookUp(library, "cuDevicePrimaryCtxRelease_v2", devicePrimaryCtxRelease, error) &&
         lookUp(library, "cuCtxSetCurrent", ctxSetCurrent, error) &&
         lookUp(library, "cuStreamCreate", streamCreate, error) &&
         lookUp(library, "cuStreamDestroy_v2", streamDestroy, error) &&
         lookUp(library, "cuStreamSynchronize", streamSynchronize, error) &&
         lookUp(library, "cuMemAlloc_v2", memAlloc, error) &&
         lookUp(library, "cuMemFree_v2", memFree, error) &&
         lookUp(library, "cuDeviceGetDefaultMemPool", deviceGetDefaultMemPool, error) &&
         lookUp(library, "cuMemPoolSetAttribute", memPoolSetAttribute, error) &&
         lookUp(library, "cuMemAllocAsync", memAllocAsync, error) &&
         lookUp(library, "cuMemFreeAsync", memFreeAsync, error) &&
         lookUp(library, "cuMemcpyAsync", memcpyAsync, error) &&
         lookUp(library, "cuMemsetD32Async", memsetD32Async, error) &&
         lookUp(library, "cuModuleLoadData", moduleLoadData, error) &&
         lookUp(library, "cuModuleUnload", moduleUnload, error) &&
         lookUp(library, "cuModuleGetFunction", moduleGetFunction, error) &&
         lookUp(library, "cuModuleGetGlobal_v2", moduleGetGlobal, error) &&
         lookUp(library, "cuLaunchKernel", launchKernel, error);
}

namespace {

/// The name and meaning of the errors a driver that cannot start gives,
/// for the one that cannot describe them itself: CUDA's stub library,
/// whose every call, cuGetErrorName's included, fails.
const char *startErrorName(int result, const char *&text) {
  switch (result) {
  case 3:
    text = "the driver was not initialized";
    return "CUDA_ERROR_NOT_INITIALIZED";
  case 34:
    text = "this is CUDA's stub library, not an installed NVIDIA driver";
    return "CUDA_ERROR_STUB_LIBRARY";
  case 35:
    text = "the NVIDIA driver is older than the CUDA runtime";
    return "CUDA_ERROR_INSUFFICIENT_DRIVER";
  case 100:
    text = "no CUDA-capable device is detected";
    return "CUDA_ERROR_NO_DEVICE";
  default:
    return nullptr;
  }
}

} // namespace

std::string Driver::describe(const char *call, Result result) const {
  const char *name = nullptr, *text = nullptr;
  if (getErrorName(result, &name) != 0 || !name)
    name = startErrorName(result, text);
  else if (getErrorString(result, &text) != 0)
    text = nullptr;
  return std::string(call) + ": " + (name ? name : "CUDA error " + std::to_string(result)) +
         (text ? std::string(" (") + text + ")" : "");
}

const Driver *Driver::get(std::string &error) {
  // Loaded once; the library stays loaded for the process's life, as the
  // driver expects.
  static const struct Loaded {
    Driver driver;
    bool ok = false;
    std::string error;
    Loaded() {
      const std::string name = libraryName();
      void *library = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!library) {
        const char *reason = dlerror();
        error = "cannot load the CUDA driver " + name + ": " + (reason ? reason : "dlopen failed");
        return;
      }
      if (!driver.resolve(library, error))
        return;
      if (Result result = driver.init(0)) {
        error = driver.describe("cuInit", result);
        return;
      }
      ok = true;
    }
  } loaded;
  if (!loaded.ok) {
    error = loaded.error;
    return nullptr;
  }
  return &loaded.driver;
}

bool Driver::device(int ordinal, Device &out, std::string &error) const {
  if (Result result = deviceGet(&out, ordinal)) {
    error = "device " + std::to_string(ordinal) + ": " + describe("cuDeviceGet", result);
    return false;
  }
  return true;
}

bool Driver::devices(std::vector<DeviceInfo> &out, std::string &error) const {
  out.clear();
  int count = 0;
  if (Result result = deviceGetCount(&count)) {
    error = describe("cuDeviceGetCount", result);
    return false;
  }
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    Device device = 0;
    char name[256] = {};
    size_t memory = 0;
    DeviceInfo info;
    Result result = deviceGet(&device, ordinal);
    const char *call = "cuDeviceGet";
    if (!result && (result = deviceGetName(name, sizeof(name) - 1, device)))
      call = "cuDeviceGetName";
    if (!result && (result = deviceGetAttribute(&info.computeCapabilityMajor,
                                                kComputeCapabilityMajor, device)))
      call = "cuDeviceGetAttribute";
    if (!result && (result = deviceGetAttribute(&info.computeCapabilityMinor,
                                                kComputeCapabilityMinor, device)))
      call = "cuDeviceGetAttribute";
    if (!result && (result = deviceTotalMem(&memory, device)))
      call = "cuDeviceTotalMem";
    if (result) {
      error = "device " + std::to_string(ordinal) + ": " + describe(call, result);
      return false;
    }
    info.name = name;
    info.memoryBytes = memory;
    out.push_back(std::move(info));
  }
  return true;
}

} // namespace kiln::rt::cuda
