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
  // The driver API's types: handles are opaque pointers, device memory a
  // 64-bit address, and every call returns a CUresult (0 is CUDA_SUCCESS).
  using Result = int;
  using Device = int;
  using Context = struct ContextHandle *;
  using Stream = struct StreamHandle *;
  using Module = struct ModuleHandle *;
  using Function = struct FunctionHandle *;
  using DevicePointer = uint64_t;
  using MemoryPool = struct MemoryPoolHandle *;

  /// The driver, loaded and started (cuInit) once per process. Null when it
  /// cannot be, with `error` saying why: no library, a library without the
  /// driver API, or cuInit's own error (no device, a stub library).
  static const Driver *get(std::string &error);

  /// The devices the driver shows; false with `error` on a driver error.
  bool devices(std::vector<DeviceInfo> &out, std::string &error) const;
  /// The handle of the device with `ordinal`; false with `error`.
  bool device(int ordinal, Device &out, std::string &error) const;

  /// The library the driver is loaded from: $KILN_CUDA_DRIVER or
  /// libcuda.so.1.
  static std::string libraryName();

  /// "cuInit: CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)".
  std::string describe(const char *call, Result result) const;

  // What running a model takes (DeviceModel.h), with the driver API's
  // signatures; the versioned ones are the entry points cuda.h's macros
  // name.
  Result (*devicePrimaryCtxRetain)(Context *, Device) = nullptr;
  Result (*devicePrimaryCtxRelease)(Device) = nullptr; // _v2
  Result (*ctxSetCurrent)(Context) = nullptr;
  Result (*streamCreate)(Stream *, unsigned flags) = nullptr;
  Result (*streamDestroy)(Stream) = nullptr; // _v2
  Result (*streamSynchronize)(Stream) = nullptr;
  Result (*memAlloc)(DevicePointer *, size_t) = nullptr; // _v2
  Result (*memFree)(DevicePointer) = nullptr;            // _v2
  Result (*deviceGetDefaultMemPool)(MemoryPool *, Device) = nullptr;
  Result (*memPoolSetAttribute)(MemoryPool, int attribute, void *value) = nullptr;
  Result (*memAllocAsync)(DevicePointer *, size_t, Stream) = nullptr;
  Result (*memFreeAsync)(DevicePointer, Stream) = nullptr;
  /// Copies in any direction: with unified addressing the driver tells
  /// host pointers from device ones.
  Result (*memcpyAsync)(DevicePointer dst, DevicePointer src, size_t, Stream) = nullptr;
  Result (*memsetD32Async)(DevicePointer, unsigned value, size_t count, Stream) = nullptr;
  Result (*moduleLoadData)(Module *, const void *image) = nullptr;
  Result (*moduleUnload)(Module) = nullptr;
  Result (*moduleGetFunction)(Function *, Module, const char *name) = nullptr;
  Result (*moduleGetGlobal)(DevicePointer *, size_t *, Module, const char *name) = nullptr; // _v2
  Result (*launchKernel)(Function, unsigned gridX, unsigned gridY, unsigned gridZ,
                         unsigned blockX, unsigned blockY, unsigned blockZ,
                         unsigned sharedMemoryBytes, Stream, void **parameters,
                         void **extra) = nullptr;

private:
  Driver() = default;
  /// Resolves every entry point from `library`; false with `error` naming
  /// the first missing one.
  bool resolve(void *library, std::string &error);

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
