//===- ArtifactWriter.h - Writes .kiln artifacts ----------------*- C++ -*-===//
#ifndef KILN_COMPILER_ARTIFACT_ARTIFACTWRITER_H
#define KILN_COMPILER_ARTIFACT_ARTIFACTWRITER_H

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace kiln {

/// One dimension of an input or output: a static size, or a named symbolic
/// one with the bounds the runtime enforces.
struct ArtifactDim {
  int64_t size = -1; // -1 when symbolic
  std::string name;  // "" when static
  int64_t min = 0, max = 0;
};

struct ArtifactTensor {
  std::string name;
  std::string dtype; // a runtime dtype name: f32, i64, bool, ...
  std::vector<ArtifactDim> dims;
};

struct ArtifactWeight {
  /// Not written: the weight's name (weightName) for kilnc's calibration.
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  llvm::ArrayRef<char> data; // dense row-major; owned by the caller
};

/// The CUDA target's code in an artifact: the host side of its kernels,
/// which the shared object exports as kiln_entry_cuda (and its signature
/// and arena size, suffixed alike), with weights and an arena of its own.
struct ArtifactGpuCode {
  std::string arch; // of its PTX: sm_80, ...
  /// The messages of the checks its kernels flag by number, from 1, in
  /// their module's kiln_kernel_check.
  std::vector<std::string> kernelChecks;
  std::vector<ArtifactWeight> weights;
  int64_t arenaBytes = 0;
};

struct ArtifactContents {
  std::string compilerVersion;
  std::string triple, cpu;
  std::vector<std::string> cpuFeatures;
  std::vector<ArtifactTensor> inputs, outputs;
  std::vector<ArtifactWeight> weights; // entry arguments after the inputs
  /// ELF shared object exporting kiln_entry (the CPU code, with `weights`
  /// and `arenaBytes`) when `cpuCode`, and kiln_entry_cuda with `gpu`.
  std::vector<char> code;
  bool cpuCode = true;
  std::optional<ArtifactGpuCode> gpu;
  /// The planned arena the code takes after the weights (0: none planned).
  int64_t arenaBytes = 0;
  /// Bytes of weights that had to be converted (unpacked i1), which
  /// `weights` point into.
  std::vector<std::vector<char>> convertedWeights;
  /// Called with each stretch of a weight's bytes that the writer is done
  /// reading (once for the checksum, once to write them), so that bytes
  /// held only for the artifact can leave memory as they are written; may
  /// be empty.
  std::function<void(llvm::ArrayRef<char>)> weightRead;
};

/// Writes `contents` to `path` in the format of docs/artifact-format.md.
bool writeArtifact(const std::string &path, const ArtifactContents &contents,
                   std::string &error);

} // namespace kiln

#endif // KILN_COMPILER_ARTIFACT_ARTIFACTWRITER_H
