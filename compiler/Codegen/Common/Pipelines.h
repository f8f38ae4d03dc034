//===- Pipelines.h - Kiln code generation pipelines -------------*- C++ -*-===//
//
// The lowering splits at bufferization. Above the split everything is shared
// by every backend; below it each target has its own stages:
//
//   kiln --(graph optimizations, kiln-prepare-entry-point,
//           kiln-convert-to-linalg, elementwise fusion)-->
//   linalg/tensor/arith/math                     [buildTensorLoweringPipeline]
//   ---------------------------- target split ----------------------------
//   CPU: one-shot bufferization, memory planning, deallocation, GEMM microkernel calls,
//        loops, LLVM dialect, kiln_entry        [buildLLVMCPULoweringPipeline,
//                                                LLVMCPU/Pipelines.h]
//        then LLVM IR -> x86-64 object -> shared object (LLVMCPU/ObjectEmitter.h)
//   CUDA: bufferization, memory planning, loops on GPU blocks and threads,
//         one GPU module, NVVM -> PTX              [buildCudaLoweringPipeline,
//                                                    CUDA/Pipelines.h]
//
// This header declares the shared half; compiler/Codegen/Registration.h
// registers both halves and the dialects with kiln-opt and kilnc.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_COMPILER_CODEGEN_COMMON_PIPELINES_H
#define KILN_COMPILER_CODEGEN_COMMON_PIPELINES_H

#include "passes/Passes.h"

#include "mlir/Pass/PassManager.h"

#include <functional>

namespace kiln {

/// Adds the passes that lower the ops a target runs as its own kernels
/// (kiln.linear, kiln.attention) to those kernels' calls; the shared
/// lowering to linalg takes every other op.
using KernelLowering = std::function<void(mlir::OpPassManager &)>;

/// kiln IR (entry function `main`) to fused linalg on tensors, through the
/// graph optimizations that `options` enables (passes/Passes.h), with the
/// target's kernels lowered by `lowerKernels`.
void buildTensorLoweringPipeline(mlir::OpPassManager &pm, const KernelLowering &lowerKernels,
                                 const OptimizationOptions &options = {});
/// Its second half: optimized kiln IR to fused linalg on tensors. compile()
/// runs the halves apart, since the graph passes may change the signature
/// (kiln-page-kv-cache) that the artifact's manifest describes.
void buildLinalgLoweringPipeline(mlir::OpPassManager &pm, const KernelLowering &lowerKernels,
                                 const OptimizationOptions &options = {});

/// One-shot bufferization as every target runs it, after the tensor
/// lowering: empty tensors eliminated, function boundaries bufferized with
/// identity layouts, and copies as linalg.copy (loops like any other op,
/// rather than calls of MLIR's runner library, which no runtime ships).
void addBufferization(mlir::OpPassManager &pm);

/// After bufferization: memory planning (when `options` asks for it),
/// deallocation of what is left on the heap, and bufferization's ops
/// lowered to memref.
void addBufferPlanning(mlir::OpPassManager &pm, const OptimizationOptions &options);

} // namespace kiln

#endif // KILN_COMPILER_CODEGEN_COMMON_PIPELINES_H
