//===- KilnOps.h - Operations of the kiln dialect ---------------*- C++ -*-===//
#ifndef KILN_DIALECT_KILN_IR_KILNOPS_H
#define KILN_DIALECT_KILN_IR_KILNOPS_H

#include "dialects/Kiln/IR/KilnDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Dialect/Traits.h"

#include "dialects/Kiln/IR/KilnEnums.h.inc"

#define GET_OP_CLASSES
#include "dialects/Kiln/IR/KilnOps.h.inc"

namespace kiln {

/// The terms of kiln.einsum's explicit equation "ab,bc->ac": one string of
/// letters per input, and the output's.
struct EinsumTerms {
  llvm::SmallVector<std::string> inputs;
  std::string output;
};

/// Splits an explicit equation; an error message (in `error`) when it is
/// not of that form: no arrow, no ellipsis, a character that is not a
/// letter, or an output letter repeated or found in no input.
mlir::FailureOr<EinsumTerms> parseEinsumEquation(llvm::StringRef equation,
                                                 std::string &error);

} // namespace kiln

#endif // KILN_DIALECT_KILN_IR_KILNOPS_H
