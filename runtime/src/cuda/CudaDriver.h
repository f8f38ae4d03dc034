//===- CudaDriver.h - The CUDA driver API, loaded at run time ---*- C++ -*-===//
//
// The runtime reaches NVIDIA GPUs through the CUDA driver API, which it
// loads with dlopen the first time it is asked, so that it builds, loads
// and runs where CUDA is absent. The library is libcuda.so.1 (what the
// NVIDIA driver installs), or the one $KILN_CUDA_DRIVER names. Only the
// calls the runtime makes are declared here, with the driver API's types
// and values: cuda.h is not needed to build.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_SRC_CUDA_CUDADRIVER_H
#define KILN_RUNTIME_SRC_CUDA_CUDADRIVER_H

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::rt::cuda {

/// What the runtime knows of one GPU.
struct DeviceInfo {
  std::string name;
  int computeCapabilityMajor = 0, computeCapabilityMinor = 0;
  uint64_t memoryBytes = 0;
};

class Driver {
public:
  /// The driver, loaded and started (cuInit) once per process. Null when it
  /// cannot be, with `error` saying why: no library, a library without the
  /// driver API, or cuInit's own error (no device, a stub library).
  static const Driver *get(std::string &error);

  /// The devices the driver shows; false with `error` on a driver error.
  bool devices(std::vector<DeviceInfo> &out, std::string &error) const;

  /// The library the driver is loaded from: $KILN_CUDA_DRIVER or
  /// libcuda.so.1.
  static std::string libraryName();

private:
  using Result = int; // CUresult; 0 is CUDA_SUCCESS
  using Device = int; // CUdevice

  Driver() = default;
  /// Resolves every entry point from `library`; false with `error` naming
  /// the first missing one.
  bool resolve(void *library, std::string &error);
  /// "cuInit: CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)".
  std::string describe(const char *call, Result result) const;

  Result (*init)(unsigned) = nullptr;
  Result (*deviceGetCount)(int *) = nullptr;
  Result (*deviceGet)(Device *, int) = nullptr;
  Result (*deviceGetName)(char *, int, Device) = nullptr;
  Result (*deviceGetAttribute)(int *, int, Device) = nullptr;
  Result (*deviceTotalMem)(size_t *, Device) = nullptr;
  Result (*getErrorName)(Result, const char **) = nullptr;
  Result (*getErrorString)(Result, const char **) = nullptr;
};

} // namespace kiln::rt::cuda

#endif // KILN_RUNTIME_SRC_CUDA_CUDADRIVER_H
