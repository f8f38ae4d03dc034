//===- Compiler.h - kiln IR to a .kiln artifact -----------------*- C++ -*-===//
#ifndef KILN_COMPILER_CODEGEN_COMPILER_H
#define KILN_COMPILER_CODEGEN_COMPILER_H

#include "compiler/Artifact/ArtifactWriter.h"
#include "passes/Passes.h"

#include "mlir/IR/BuiltinOps.h"

#include <map>
#include <string>
#include <vector>

namespace kiln {

class PassReport;

struct DimBound {
  int64_t min = 0, max = 0;
};

/// What the code runs on: the CPU (x86-64 code), NVIDIA GPUs (PTX kernels
/// and the x86-64 code that launches them), or either, the runtime choosing
/// when it loads the artifact (both codes in one artifact).
enum class Target { Cpu, Cuda, CpuAndCuda };

struct CompileOptions {
  Target target = Target::Cpu;
  std::string cpu = "native"; // see resolveCpuTarget
  /// The GPU architecture of Target::Cuda's PTX (CUDA/Pipelines.h).
  std::string gpuArch = "sm_80";
  /// With Target::Cpu: the artifact runs the CUDA target's kernels (its
  /// graph options and loop mapping) on the CPU, each kernel's blocks and
  /// threads one after another: a check of the GPU lowering that needs no
  /// GPU (kilnc --gpu-kernels-on-cpu).
  bool gpuKernelsOnCpu = false;
  /// Bounds of symbolic dims by name (`--dim batch=1:8`). Unlisted symbolic
  /// dims get [0, kDefaultDimMax].
  std::map<std::string, DimBound> dimBounds;
  std::string compilerVersion;
  OptimizationOptions optimizations;
  /// When set, records what every pass did (kilnc --report).
  PassReport *report = nullptr;
  /// When set, receives the optimized LLVM IR of the code, as text
  /// (CompileStage::Artifact only; kilnc --emit=llvm-ir).
  std::string *optimizedIR = nullptr;
};

inline constexpr int64_t kDefaultDimMax = (int64_t(1) << 31) - 1;

/// How far to compile; the module holds the IR of the last stage run.
/// Optimized is kiln IR after the graph optimizations. LLVM is the LLVM
/// dialect; for the CUDA target, with a gpu.binary of PTX (kernelAssembly in
/// CUDA/Pipelines.h reads it). With Target::CpuAndCuda the stages before
/// LLVM leave the CPU code's IR in `module`.
enum class CompileStage { Optimized, Linalg, LLVM, Artifact };

/// Compiles `module` (kiln IR with entry function @main) up to `stage`.
/// For CompileStage::Artifact, `artifact` receives everything writeArtifact
/// needs; the weights it lists point into attributes of `module`, which must
/// outlive it. Errors name the stage and, for IR errors, the op.
bool compile(mlir::ModuleOp module, const CompileOptions &options,
             CompileStage stage, ArtifactContents &artifact, std::string &error);

} // namespace kiln

#endif // KILN_COMPILER_CODEGEN_COMPILER_H
