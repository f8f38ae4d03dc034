//===- KilnDialect.h - The kiln dialect -------------------------*- C++ -*-===//
#ifndef KILN_DIALECT_KILN_IR_KILNDIALECT_H
#define KILN_DIALECT_KILN_IR_KILNDIALECT_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Dialect.h"

#include "dialects/Kiln/IR/KilnDialect.h.inc"

namespace kiln {

/// The ONNX names of the dimensions of argument `index` of `func` ("" for a
/// static or unnamed dimension); empty when the argument carries none.
llvm::SmallVector<std::string> getArgumentDimNames(mlir::func::FuncOp func,
                                                   unsigned index);
/// Likewise for result `index`.
llvm::SmallVector<std::string> getResultDimNames(mlir::func::FuncOp func,
                                                 unsigned index);

/// The ONNX node name that the importer records in an op's location (a
/// NameLoc, possibly inside a fused location), or "" when there is none.
std::string onnxNodeName(mlir::Location loc);

} // namespace kiln

#endif // KILN_DIALECT_KILN_IR_KILNDIALECT_H
