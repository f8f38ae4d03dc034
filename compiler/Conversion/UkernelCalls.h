//===- UkernelCalls.h - Calls from generated code into the runtime -*- C++ -*-===//
//
// Runtime microkernels (runtime/src/cpu/Gemm.h, Attention.h) take each buffer as
// the address of its first element plus sizes and strides in elements, all
// i64. Both the kiln-to-linalg lowering (kiln.attention) and the
// kiln-linalg-to-ukernels pass (GEMMs) build such calls.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_COMPILER_CONVERSION_UKERNELCALLS_H
#define KILN_COMPILER_CONVERSION_UKERNELCALLS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace kiln {

/// The runtime's GEMM, GEMM-with-epilogue and attention microkernels.
constexpr llvm::StringLiteral kSgemmUkernel = "kiln_ukernel_sgemm";
constexpr llvm::StringLiteral kLinearUkernel = "kiln_ukernel_linear";
constexpr llvm::StringLiteral kAttentionUkernel = "kiln_ukernel_attention";
constexpr llvm::StringLiteral kPagedAttentionUkernel = "kiln_ukernel_paged_attention";

/// Marks the memref.alloca that holds a microkernel's parameter struct
/// (kiln/abi/kernel_abi.h): the buffers' addresses stored into it are the
/// call's operands, used only during the call, so memory planning follows
/// them through it to the call.
constexpr llvm::StringLiteral kUkernelParamsAttrName = "kiln.ukernel_params";

/// How kiln_ukernel_linear's weight is laid out (kiln_linear_params_t's
/// `weight_layout`): [K, N] or [N, K] rows, or kiln.linear's packed
/// panels. The runtime's kiln::rt::GemmLayout: keep the two in step.
enum class WeightLayout : int64_t { RowMajor = 0, Transposed = 1, Panels = 2 };

/// A memref as a microkernel receives it.
struct UkernelBuffer {
  mlir::Value pointer; // !llvm.ptr to the first element (offset applied)
  llvm::SmallVector<mlir::Value> sizes, strides; // i64, in elements
};

/// The buffer that `buffer` is a view of, through every view-like op, with
/// the byte shifts of the memref.view ops on the way in `shifts` (the only
/// view-like ops that move the aligned pointer).
mlir::Value viewRoot(mlir::Value buffer,
                     llvm::SmallVectorImpl<mlir::Value> &shifts);

/// The aligned pointer of `buffer` as an index, read from the buffer that
/// `buffer` is a view of, plus the byte shifts of the memref.view ops in
/// between. MLIR 19's expand-strided-metadata folds
/// extract_aligned_pointer_as_index through every view-like op as if each
/// kept its source's pointer, which drops a memref.view's shift; memory
/// planning makes every planned buffer such a view.
mlir::Value alignedPointerOf(mlir::OpBuilder &b, mlir::Location loc,
                             mlir::Value buffer);

/// Describes `buffer` (a memref of any layout); i1 elements are one byte.
UkernelBuffer describeBuffer(mlir::OpBuilder &b, mlir::Location loc,
                             mlir::Value buffer);

/// The private declaration of microkernel `name` in `module`, created with
/// `arguments`' types on first use.
mlir::func::FuncOp getOrDeclareUkernel(mlir::ModuleOp module,
                                       llvm::StringRef name,
                                       mlir::ValueRange arguments);

} // namespace kiln

#endif // KILN_COMPILER_CONVERSION_UKERNELCALLS_H
