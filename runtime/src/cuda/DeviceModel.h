//===- DeviceModel.h - A CUDA artifact on a GPU ----------------*- C++ -*-===//
//
// An artifact compiled with `kilnc --target=cuda` holds PTX kernels and x86
// host code that launches them through MLIR's GPU runtime ABI (mgpu*, which
// GpuRuntimeCalls.cpp implements over the driver). A DeviceModel is such an
// artifact on one GPU: the device's primary context, the weights uploaded
// once, and the kernel module, loaded once. A DeviceSession is a session's
// stream and arena on it; its run copies the inputs over, calls the host
// code, waits for the stream, checks the kernels' flag and brings the results
// back into host buffers.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_SRC_CUDA_DEVICEMODEL_H
#define KILN_RUNTIME_SRC_CUDA_DEVICEMODEL_H

#include "runtime/src/cuda/CudaDriver.h"

#include "kiln/runtime.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace kiln::rt {
class Artifact;
}

namespace kiln::rt::cuda {

class DeviceModel {
public:
  /// `artifact` on device 0: fails, saying why, where there is no driver or
  /// device, or where the weights do not fit.
  static kiln_status_t create(const Artifact &artifact, std::unique_ptr<DeviceModel> &out);
  ~DeviceModel();

  const Driver &driver() const { return driver_; }
  const Artifact &artifact() const { return artifact_; }
  Driver::Context context() const { return context_; }
  /// Where weight `index` is on the device.
  Driver::DevicePointer weight(size_t index) const { return weights_[index]; }
  /// The device's name, for messages.
  const std::string &deviceName() const { return deviceName_; }

  /// The module of the PTX at `image`, the host code's embedded copy (one
  /// per artifact, kiln_kernels), loaded on first use; null with `error`
  /// when the driver refuses it.
  Driver::Module module(const void *image, std::string &error);
  /// `name`'s kernel in `module`, looked up on first use; null with `error`.
  Driver::Function function(Driver::Module module, const char *name, std::string &error);
  /// The name that `function` was looked up by, for messages.
  const char *kernelName(Driver::Function function);

  /// The flag that a kernel's failed check sets (kiln_kernel_check) as 0
  /// when clear, else the check's number; -1 with `error` when it cannot be
  /// read. Reading a set flag clears it. The flag is the module's, so a
  /// check that fails in one session's run fails any other session's run
  /// that ends before the flag is read.
  int32_t takeKernelCheck(Driver::Stream stream, std::string &error);

private:
  DeviceModel(const Driver &driver, const Artifact &artifact)
      : driver_(driver), artifact_(artifact) {}

  const Driver &driver_;
  const Artifact &artifact_;
  Driver::Device device_ = 0;
  Driver::Context context_ = nullptr;
  std::string deviceName_;
  /// One allocation holds every weight, each at its offset in the
  /// artifact's weights section.
  Driver::DevicePointer weightBlock_ = 0;
  std::vector<Driver::DevicePointer> weights_;
  /// The host code asks for its module and kernels at every launch (MLIR's
  /// ABI): each is loaded or looked up once, then found here.
  std::mutex mutex_;
  std::vector<std::pair<const void *, Driver::Module>> modules_;
  /// By module and name; a name is the host code's constant, so its
  /// address is its identity, and a launch finds its kernel in one lookup.
  std::map<std::pair<Driver::Module, const char *>, Driver::Function> functions_;
};

/// A session's own part of a run on the GPU: its stream and its arena.
class DeviceSession {
public:
  static kiln_status_t create(DeviceModel &model, size_t arenaBytes,
                              std::unique_ptr<DeviceSession> &out);
  ~DeviceSession();

  Driver::DevicePointer arena() const { return arena_; }

  /// One input's bytes (dense, row-major) and the descriptor that the host
  /// code reads it through.
  struct Input {
    const void *data;
    size_t bytes;
    int64_t *descriptor;
  };
  /// One output's descriptor as the host code wrote it, its rank and
  /// element size.
  struct Output {
    int64_t *descriptor;
    size_t rank;
    size_t elementSize;
  };

  /// Runs the host code: copies each input to the device and points its
  /// descriptor there, calls `callEntry` with this session's stream current
  /// for the GPU runtime calls, waits for the stream, checks the kernels'
  /// flag, and mirrors each output on the host: its descriptor then points
  /// into a buffer from allocateBuffer (BufferPool.h), which the caller
  /// owns. Every device buffer of the run is freed, on failure too.
  kiln_status_t run(const std::vector<Input> &inputs, const std::vector<Output> &outputs,
                    const std::function<kiln_status_t()> &callEntry);

private:
  explicit DeviceSession(DeviceModel &model) : model_(model) {}
  kiln_status_t mirrorOutputs(const std::vector<Output> &outputs);

  DeviceModel &model_;
  Driver::Stream stream_ = nullptr;
  Driver::DevicePointer arena_ = 0;
};

/// What the GPU runtime calls of one run work with: the run's model and
/// stream, and the device buffers the host code allocated and has not
/// freed. Current on the running thread while the host code runs.
struct DeviceRun {
  DeviceModel &model;
  Driver::Stream stream;
  std::vector<Driver::DevicePointer> allocations;
  /// Why a GPU runtime call ended the run (Trap.h): it outlives the trap.
  std::string failure;

  static DeviceRun *current();
};

/// The status code of a driver error: out of memory, or internal.
kiln_status_code_t statusCode(Driver::Result result);

} // namespace kiln::rt::cuda

#endif // KILN_RUNTIME_SRC_CUDA_DEVICEMODEL_H
