//===- KernelCalls.h - kiln ops as the CPU kernels' calls ------*- C++ -*-===//
//
// The ops the CPU target runs as the runtime's microkernels, lowered to
// their calls by kiln-lower-to-cpu-kernels before the shared lowering to
// linalg takes the rest.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_COMPILER_CODEGEN_LLVMCPU_KERNELCALLS_H
#define KILN_COMPILER_CODEGEN_LLVMCPU_KERNELCALLS_H

#include "mlir/IR/PatternMatch.h"

namespace kiln {

/// kiln.linear as a call of kiln_ukernel_linear.
void populateLinearCallPatterns(mlir::RewritePatternSet &patterns);
/// kiln.attention and kiln.paged_attention as calls of
/// kiln_ukernel_attention and kiln_ukernel_paged_attention.
void populateAttentionCallPatterns(mlir::RewritePatternSet &patterns);

} // namespace kiln

#endif // KILN_COMPILER_CODEGEN_LLVMCPU_KERNELCALLS_H
