//===- Pipelines.h - The CPU target's lowering ------------------*- C++ -*-===//
#ifndef KILN_COMPILER_CODEGEN_LLVMCPU_PIPELINES_H
#define KILN_COMPILER_CODEGEN_LLVMCPU_PIPELINES_H

#include "passes/Passes.h"

#include "mlir/Pass/PassManager.h"

#include <functional>

namespace kiln {

/// The CPU's kernels: kiln.linear and kiln.attention as the runtime's
/// microkernel calls (kiln-lower-to-cpu-kernels), Common/Pipelines.h's
/// KernelLowering for this target.
void addLLVMCPUKernelLowering(mlir::OpPassManager &pm);

/// linalg on tensors (Common/Pipelines.h's result) to the LLVM dialect with
/// the kiln_entry entry point, planning memory when `options` asks for it.
void buildLLVMCPULoweringPipeline(mlir::OpPassManager &pm,
                                  const OptimizationOptions &options = {});

/// Its second half, from memrefs to the LLVM dialect: products as
/// microkernel calls, every other op and loop as loops, failed checks as
/// traps, and the kiln_entry entry point. It also lowers the CUDA target's
/// kernels run on the CPU (CUDA/Pipelines.h, addCudaKernelMapping), and that
/// target's host code, which passes `addRuntimeCallLowering` to lower its
/// launches, device allocations and copies to runtime calls while they are
/// still on memrefs.
void addLLVMCPULoopLowering(
    mlir::OpPassManager &pm,
    const std::function<void(mlir::OpPassManager &)> &addRuntimeCallLowering = nullptr);

} // namespace kiln

#endif // KILN_COMPILER_CODEGEN_LLVMCPU_PIPELINES_H
