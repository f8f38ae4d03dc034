//===- Artifact.h - Loading and validating .kiln artifacts ------*- C++ -*-===//
#ifndef KILN_RUNTIME_SRC_ARTIFACT_H
#define KILN_RUNTIME_SRC_ARTIFACT_H

#include "kiln/runtime.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kiln::rt {

class ThreadPool;

struct TensorInfo {
  std::string name;
  kiln_dtype_t dtype = KILN_DTYPE_INVALID;
  std::vector<std::string> dimNames;
  std::vector<kiln_dim_t> dims; // names point into dimNames
};

struct WeightInfo {
  kiln_dtype_t dtype = KILN_DTYPE_INVALID;
  std::vector<int64_t> shape;
  const void *data = nullptr; // inside the read-only file mapping

  size_t bytes() const {
    size_t bytes = kiln_dtype_size(dtype);
    for (int64_t size : shape)
      bytes *= static_cast<size_t>(size);
    return bytes;
  }
};

/// `arguments[i]` points at the memref descriptor of input i, then of each
/// weight, then of the arena; `results` receives the result descriptors, one
/// after another.
using EntryFunction = void (*)(void **arguments, void *results);

/// The pointer MLIR puts in the allocated field of a descriptor of a global
/// (a constant the code returns); it is not an allocation.
inline void *const kGlobalAllocatedMarker = reinterpret_cast<void *>(0xdeadbeef);

/// Below this many bytes, checksumOnPool checksums on the calling thread.
inline constexpr uint64_t kParallelChecksumBytes = uint64_t(64) << 20;

/// artifact::computeChecksum of a whole file, split over `pool` (may be
/// null) when it is big: each thread pages in and checksums one contiguous
/// part, and zlib combines the parts in order. Loading a model of gigabytes
/// is then bound by paging it in, not by one core's CRC.
uint32_t checksumOnPool(const uint8_t *bytes, uint64_t size, ThreadPool *pool);

/// One device's code in an artifact: its entry point, the weights it takes
/// after the inputs, and the arena it plans its intermediate buffers in.
struct Code {
  EntryFunction entry = nullptr;
  std::vector<WeightInfo> weights;
  std::vector<uint64_t> weightOffsets; // in the weights section
  /// 0 when the code plans none; every session has one.
  size_t arenaBytes = 0;
};

/// A validated artifact: its file is mapped read-only and its code loaded.
class Artifact {
public:
  /// Maps and validates `path` (see docs/artifact-format.md), checksumming
  /// it on `pool`'s threads (may be null); on failure returns a status
  /// naming the file and the culprit.
  static kiln_status_t load(const std::string &path, ThreadPool *pool,
                            std::unique_ptr<Artifact> &artifact);
  ~Artifact();

  const std::string &path() const { return path_; }
  const std::vector<TensorInfo> &inputs() const { return inputs_; }
  const std::vector<TensorInfo> &outputs() const { return outputs_; }
  /// The CPU code, and the CUDA target's (the host side of its kernels):
  /// null when the artifact has none for that device.
  const Code *cpuCode() const { return cpu_ ? &*cpu_ : nullptr; }
  const Code *gpuCode() const { return gpu_ ? &*gpu_ : nullptr; }
  /// The GPU architecture of the GPU code's PTX (the manifest's "gpu").
  const std::string &gpuArch() const { return gpuArch_; }
  /// The messages of the checks its kernels flag by number, from 1.
  const std::vector<std::string> &kernelChecks() const { return kernelChecks_; }
  /// Whether `pointer` lies inside the file mapping (weights, for example).
  bool contains(const void *pointer) const;
  /// The index of the CPU code's weight that `pointer` points into, or -1.
  int32_t weightIndex(const void *pointer) const;

private:
  Artifact() = default;
  kiln_status_t parseManifest(const char *text, size_t size, uint64_t weightsSize);
  kiln_status_t loadCode(const void *code, size_t size);
  /// Finds `code`'s entry point and checks the manifest against its
  /// signature and arena size (the symbols with `suffix`).
  kiln_status_t bindCode(Code &code, const std::string &suffix);
  kiln_status_t checkSignature(const int64_t *signature, const Code &code,
                               const std::string &symbol) const;

  std::string path_;
  void *mapping_ = nullptr;
  size_t mappingSize_ = 0;
  void *library_ = nullptr;
  int codeFd_ = -1;
  std::vector<TensorInfo> inputs_, outputs_;
  std::optional<Code> cpu_, gpu_;
  std::string gpuArch_;
  std::vector<std::string> kernelChecks_;
};

} // namespace kiln::rt

#endif // KILN_RUNTIME_SRC_ARTIFACT_H
