//===- ComputedAxes.h - Ops whose axes are computed at run time -*- C++ -*-===//
//
// ONNX lets a model compute the axes of Squeeze, Unsqueeze, Slice, Pad and
// the reductions, and CumSum's axis, at run time. Kiln's ops take axes as
// attributes, so the importer builds those ops out of others: small i64
// tensors (shapes, axis lists) worked on with kiln ops, and kiln.assert
// for what the op itself would have checked. Exporters write constant axes;
// these forms serve the models that do not, at the price of more work.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_COMPILER_IMPORTER_COMPUTEDAXES_H
#define KILN_COMPILER_IMPORTER_COMPUTEDAXES_H

#include "compiler/Importer/ImportContext.h"
#include "dialects/Kiln/IR/KilnOps.h"

namespace kiln {

/// Arithmetic on small i64 tensors in kiln ops, at one location.
struct ShapeMath {
  ImportContext &ctx;
  mlir::Location loc;

  mlir::OpBuilder &b() { return ctx.builder(); }
  mlir::Type i64() { return b().getI64Type(); }
  /// lhs `predicate` rhs, broadcast to `shape`.
  mlir::Value compare(ComparePredicate predicate, mlir::Value lhs, mlir::Value rhs,
                      llvm::ArrayRef<int64_t> shape);
  /// 1 where `flags` holds, else 0, as i64.
  mlir::Value count(mlir::Value flags);
  /// For each entry of the 1-D `flags`, how many before it hold, as i64.
  mlir::Value countBefore(mlir::Value flags);
  /// The sum of i64 `values` along `axis`, which is dropped.
  mlir::Value sum(mlir::Value values, int64_t axis);
  /// `value` reshaped to the static `shape`.
  mlir::Value reshape(mlir::Value value, llvm::ArrayRef<int64_t> shape);
  /// 0..n-1 as a [n] constant.
  mlir::Value iota(int64_t n);
  /// A 0-d i64 constant, exact (ImportContext::scalar goes through a double).
  mlir::Value scalar(int64_t value);
};

/// Axes computed at run time (i64 [count]) that must name distinct dims of
/// a rank-`rank` tensor, wrapped when negative: which axis names which dim,
/// an i1 [rank, count], after a kiln.assert that each dim is named at most
/// once and every axis names one.
mlir::Value axisNames(ShapeMath &m, mlir::Value axes, int64_t count, int64_t rank);

/// Whether each dim is named by one of the axes, an i1 [rank], from
/// axisNames's [rank, count].
mlir::Value namedDims(ShapeMath &m, mlir::Value names, int64_t rank);

/// The number of entries of input `index`, the int64 axes of `node`,
/// computed at run time: static (it may fix a rank), or an error.
mlir::FailureOr<int64_t> computedAxesCount(ImportContext &ctx, const onnx::NodeProto &node,
                                           int index);

/// The i64 [kept] shape of `dims` ([rank]) without the dims that `dropped`
/// ([rank] i1) marks, in order: result dim q is the input dim with q kept
/// dims before it. `kept` is how many are not dropped, known statically.
mlir::Value keptDims(ShapeMath &m, mlir::Value dims, mlir::Value dropped, int64_t rank,
                     int64_t kept);

} // namespace kiln

#endif // KILN_COMPILER_IMPORTER_COMPUTEDAXES_H
