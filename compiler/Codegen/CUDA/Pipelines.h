//===- Pipelines.h - The CUDA target's lowering -----------------*- C++ -*-===//
//
// linalg on tensors (Common/Pipelines.h's result) to PTX: bufferization and
// memory planning as on the CPU, then each linalg op as one kernel over GPU
// blocks of threads, every kernel in one GPU module lowered through the NVVM
// dialect and serialized by LLVM's NVPTX backend. The host side stays in the
// MLIR GPU dialect (gpu.launch_func on memrefs); every buffer but the
// host's shape bookkeeping is device memory (kiln-verify-device-code).
//
//===----------------------------------------------------------------------===//
#ifndef KILN_COMPILER_CODEGEN_CUDA_PIPELINES_H
#define KILN_COMPILER_CODEGEN_CUDA_PIPELINES_H

#include "passes/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

#include <string>

namespace kiln {

/// The GPU module that holds every kernel (kiln-merge-gpu-modules).
constexpr llvm::StringLiteral kKernelModuleName = "kiln_kernels";

/// The kernel module's global that a failed run-time check in a kernel
/// sets to the check's number (kiln-kernel-checks-to-flag), and the module
/// attribute listing the checks' messages by number, from 1.
constexpr llvm::StringLiteral kKernelCheckSymbol = "kiln_kernel_check";
constexpr llvm::StringLiteral kKernelChecksAttrName = "kiln.kernel_checks";

/// The GPU architectures kilnc generates PTX for: `sm_80` (the default,
/// which newer GPUs' drivers compile on load) and the later ones LLVM 19's
/// NVPTX backend and CUDA 13's ptxas both know.
bool isSupportedGpuArch(llvm::StringRef arch);
/// The supported architectures, comma separated, for error messages.
std::string supportedGpuArchs();

/// Graph optimizations for the CUDA target: what `options` asks for, less
/// what only the CPU runs (products and attention as the CPU's kernels,
/// weights in its panels). Fails, naming the option, for what the CUDA
/// target cannot do yet (quantized weights, the paged KV cache).
bool cudaOptimizations(OptimizationOptions &options, std::string &error);

/// The first half of buildCudaLoweringPipeline: linalg on tensors to host
/// code on memrefs whose every loop nest is a kernel's, an scf.parallel
/// mapped onto GPU blocks and threads. Lowered on by the CPU's loop
/// lowering instead of the GPU's (kilnc --gpu-kernels-on-cpu), the kernels
/// run on the CPU, one thread after another: the check of their results
/// that needs no GPU.
void addCudaKernelMapping(mlir::OpPassManager &pm, const OptimizationOptions &options);

/// linalg on tensors to a module of host code on memrefs and one
/// gpu.binary (kiln_kernels) of PTX for `arch`.
void buildCudaLoweringPipeline(mlir::OpPassManager &pm, llvm::StringRef arch,
                               const OptimizationOptions &options = {});

/// Its host side, lowered on to the LLVM dialect with the kiln_entry entry
/// point, as x86 code: the buffers it allocates are device memory
/// (kiln-allocate-on-device), its launches, copies and allocations are
/// asynchronous on one stream (gpu-async-region), and each becomes a call of
/// MLIR's GPU runtime ABI (mgpuLaunchKernel, mgpuMemAlloc, ...), which the
/// Kiln runtime implements over the CUDA driver (runtime/src/cuda/). The
/// kernels' gpu.binary stays in the module; its translation to LLVM IR
/// embeds the PTX.
void addCudaHostLowering(mlir::OpPassManager &pm);

/// The PTX text of the kernels that buildCudaLoweringPipeline serialized,
/// or "" when `module` has none.
std::string kernelAssembly(mlir::ModuleOp module);

} // namespace kiln

#endif // KILN_COMPILER_CODEGEN_CUDA_PIPELINES_H
