//===- GpuRuntimeCalls.cpp - MLIR's GPU runtime ABI over the driver -------===//
//
// The host code of a CUDA artifact reaches the GPU through the calls MLIR's
// gpu-to-llvm conversion and gpu.binary translation emit (mgpuModuleLoadJIT,
// mgpuLaunchKernel, mgpuMemAlloc, ...; MLIR's own CudaRuntimeWrappers.cpp
// implements them for its test runner). Kiln implements them over the driver
// it loads (CudaDriver.h), for the run current on the thread (DeviceRun):
//
// - Every stream the host code creates is the session's one stream, so its
//   launches, copies and allocations run in order, and it needs no waits:
//   destroying and synchronizing such a stream does nothing, and the run
//   waits for the stream once, at its end. The host code reads device
//   memory only through mgpuMemcpy (kiln-verify-device-code), which waits for
//   its copy before returning.
// - The module and its kernels, which the host code asks for at every launch
//   (MLIR 19 loads and unloads the module around each one), are the model's,
//   loaded and looked up once.
// - Device buffers come from the driver's stream-ordered allocator, and the
//   run frees those the host code did not (its results, once mirrored).
// - A call the driver refuses ends the run (Trap.h) with the driver's error.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/Trap.h"
#include "runtime/src/cuda/DeviceModel.h"

#include <algorithm>
#include <cstdint>

using kiln::rt::cuda::DeviceRun;
using kiln::rt::cuda::Driver;

namespace {

/// The run in progress; a call outside one (which generated code never
/// makes) ends whatever runs.
DeviceRun &currentRun() {
  DeviceRun *run = DeviceRun::current();
  if (!run)
    kiln::rt::trap(KILN_STATUS_INTERNAL, "a GPU runtime call outside a run on a GPU");
  return *run;
}

/// Ends the run with `what` and the driver's error; run.failure holds the
/// message through the jump, and no object with a destructor is left on
/// the stack.
[[noreturn]] void fail(DeviceRun &run, const char *what, const char *call,
                       Driver::Result result) {
  run.failure = std::string("the run on ") + run.model.deviceName() + " failed: " + what +
                ": " + run.model.driver().describe(call, result);
  kiln::rt::trap(kiln::rt::cuda::statusCode(result), run.failure.c_str());
}

[[noreturn]] void failWithMessage(DeviceRun &run) {
  kiln::rt::trap(KILN_STATUS_INTERNAL, run.failure.c_str());
}

} // namespace

extern "C" {

KILN_API void *mgpuModuleLoadJIT(void *ptx, int /*optLevel: the driver's default*/) {
  DeviceRun &run = currentRun();
  Driver::Module module = run.model.module(ptx, run.failure);
  if (!module)
    failWithMessage(run);
  return module;
}

KILN_API void mgpuModuleUnload(void * /*module: the model keeps it*/) {}

KILN_API void *mgpuModuleGetFunction(void *module, const char *name) {
  DeviceRun &run = currentRun();
  Driver::Function function =
      run.model.function(static_cast<Driver::Module>(module), name, run.failure);
  if (!function)
    failWithMessage(run);
  return function;
}

KILN_API void *mgpuStreamCreate() { return currentRun().stream; }

KILN_API void mgpuStreamDestroy(void * /*stream: the session's*/) {}

KILN_API void mgpuStreamSynchronize(void * /*stream: waited for at the run's end*/) {}

KILN_API void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY, intptr_t gridZ,
                               intptr_t blockX, intptr_t blockY, intptr_t blockZ,
                               int32_t sharedMemoryBytes, void * /*stream*/, void **parameters,
                               void **extra, size_t /*parameterCount*/) {
  DeviceRun &run = currentRun();
  // A kernel over an empty tensor (a decoder's past at its first step) has
  // no block to run, and the driver refuses a grid of none.
  if (gridX == 0 || gridY == 0 || gridZ == 0)
    return;
  auto *kernel = static_cast<Driver::Function>(function);
  if (Driver::Result result = run.model.driver().launchKernel(
          kernel, gridX, gridY, gridZ, blockX, blockY, blockZ, sharedMemoryBytes, run.stream,
          parameters, extra))
    fail(run, run.model.kernelName(kernel), "cuLaunchKernel", result);
}

KILN_API void *mgpuMemAlloc(uint64_t bytes, void * /*stream*/, bool /*hostShared: never*/) {
  DeviceRun &run = currentRun();
  if (bytes == 0)
    return nullptr; // a buffer of no elements, which no kernel reads
  Driver::DevicePointer buffer = 0;
  if (Driver::Result result = run.model.driver().memAllocAsync(&buffer, bytes, run.stream))
    fail(run, "allocating a buffer", "cuMemAllocAsync", result);
  run.allocations.push_back(buffer);
  return reinterpret_cast<void *>(buffer);
}

KILN_API void mgpuMemFree(void *pointer, void * /*stream*/) {
  DeviceRun &run = currentRun();
  auto buffer = reinterpret_cast<Driver::DevicePointer>(pointer);
  auto found = std::find(run.allocations.begin(), run.allocations.end(), buffer);
  if (!pointer || found == run.allocations.end())
    return; // not the run's: its own bookkeeping has it
  *found = run.allocations.back();
  run.allocations.pop_back();
  if (Driver::Result result = run.model.driver().memFreeAsync(buffer, run.stream))
    fail(run, "freeing a buffer", "cuMemFreeAsync", result);
}

KILN_API void mgpuMemcpy(void *destination, void *source, size_t bytes, void * /*stream*/) {
  DeviceRun &run = currentRun();
  if (bytes == 0)
    return;
  const Driver &driver = run.model.driver();
  Driver::Result result =
      driver.memcpyAsync(reinterpret_cast<Driver::DevicePointer>(destination),
                         reinterpret_cast<Driver::DevicePointer>(source), bytes, run.stream);
  const char *call = "cuMemcpyAsync";
  // The host reads what it copied right after the call.
  if (!result && (result = driver.streamSynchronize(run.stream)))
    call = "cuStreamSynchronize";
  if (result)
    fail(run, "copying a value for the host", call, result);
}

} // extern "C"
