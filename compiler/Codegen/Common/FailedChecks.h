//===- FailedChecks.h - A run-time check as a branch ------------*- C++ -*-===//
//
// Each target turns a failed run-time check (cf.assert) into its own way of
// failing a run: a call of the runtime's trap on the CPU
// (kiln-asserts-to-traps), a flag and a return in a GPU kernel
// (kiln-kernel-checks-to-flag). The branch around it is the same.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_COMPILER_CODEGEN_COMMON_FAILEDCHECKS_H
#define KILN_COMPILER_CODEGEN_COMMON_FAILEDCHECKS_H

#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLFunctionalExtras.h"

namespace kiln {

/// Replaces `check` by a branch on its condition: on to the ops after it,
/// or to a new block that `buildFailure` fills (at the check's location)
/// and ends with a terminator.
void branchOnFailedCheck(mlir::cf::AssertOp check, mlir::OpBuilder &builder,
                         llvm::function_ref<void(mlir::OpBuilder &, mlir::Location)> buildFailure);

} // namespace kiln

#endif // KILN_COMPILER_CODEGEN_COMMON_FAILEDCHECKS_H
