//===- UkernelCalls.h - Calls from generated code into the runtime -*- C++ -*-===//
//
// The CPU target's kernel calling convention: runtime microkernels
// (runtime/src/cpu/Gemm.h, Attention.h) take each buffer as the address of
// its first element plus sizes and strides in elements, all i64. Both the
// kiln-lower-to-cpu-kernels pass (kiln.linear, kiln.attention) and the
// kiln-linalg-to-ukernels pass (GEMMs) build such calls.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_COMPILER_CODEGEN_LLVMCPU_UKERNELCALLS_H
#define KILN_COMPILER_CODEGEN_LLVMCPU_UKERNELCALLS_H

#include "compiler/Codegen/Common/BufferViews.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace kiln {

/// The runtime's GEMM, GEMM-with-epilogue and attention microkernels.
constexpr llvm::StringLiteral kSgemmUkernel = "kiln_ukernel_sgemm";
constexpr llvm::StringLiteral kLinearUkernel = "kiln_ukernel_linear";
constexpr llvm::StringLiteral kAttentionUkernel = "kiln_ukernel_attention";
constexpr llvm::StringLiteral kPagedAttentionUkernel = "kiln_ukernel_paged_attention";

/// How kiln_ukernel_linear's weight is laid out (kiln_linear_params_t's
/// `weight_layout`): [K, N] or [N, K] rows, or kiln.linear's packed
/// panels. The runtime's kiln::rt::GemmLayout: keep the two in step.
enum class WeightLayout : int64_t { RowMajor = 0, Transposed = 1, Panels = 2 };

/// A memref as a microkernel receives it.
struct UkernelBuffer {
  mlir::Value pointer; // !llvm.ptr to the first element (offset applied)
  llvm::SmallVector<mlir::Value> sizes, strides; // i64, in elements
};

/// Describes `buffer` (a memref of any layout); i1 elements are one byte.
UkernelBuffer describeBuffer(mlir::OpBuilder &b, mlir::Location loc,
                             mlir::Value buffer);

/// The attribute naming, on a microkernel's bufferization.to_memref, the op
/// whose call reads it (its location), so that CSE keeps one read per call.
constexpr llvm::StringLiteral kReadByAttrName = "kiln.read_by";

/// `tensor`'s buffer as a microkernel reads it (bufferization.to_memref,
/// read-only, tagged with kReadByAttrName). With `unitInnerStride` the
/// buffer's last dim is contiguous: bufferization casts a buffer that
/// provably is, and copies any other.
UkernelBuffer readBuffer(mlir::OpBuilder &b, mlir::Location loc, mlir::Value tensor,
                         bool unitInnerStride = false);

/// The null !llvm.ptr, for an absent microkernel operand.
mlir::Value nullPointer(mlir::OpBuilder &b, mlir::Location loc);

/// Calls microkernel `name` with a pointer to a parameter struct
/// (kiln/abi/kernel_abi.h) holding `slots` in order: i64 values, or pointers
/// (stored as integers). Fails, naming both counts, unless there are
/// `expectedSlots` of them, the struct's size in the header.
mlir::LogicalResult callWithParameterStruct(mlir::OpBuilder &b, mlir::Location loc,
                                            mlir::Operation *op, llvm::StringRef name,
                                            llvm::ArrayRef<mlir::Value> slots,
                                            int64_t expectedSlots);

/// The private declaration of microkernel `name` in `module`, created with
/// `arguments`' types on first use.
mlir::func::FuncOp getOrDeclareUkernel(mlir::ModuleOp module,
                                       llvm::StringRef name,
                                       mlir::ValueRange arguments);

} // namespace kiln

#endif // KILN_COMPILER_CODEGEN_LLVMCPU_UKERNELCALLS_H
