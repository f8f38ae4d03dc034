//===- FailedChecks.cpp - A run-time check as a branch --------------------===//
#include "compiler/Codegen/Common/FailedChecks.h"

using namespace mlir;

namespace kiln {

void branchOnFailedCheck(cf::AssertOp check, OpBuilder &builder,
                         llvm::function_ref<void(OpBuilder &, Location)> buildFailure) {
  Location loc = check.getLoc();
  Block *after = check->getBlock()->splitBlock(check->getNextNode());
  Block *failed = new Block();
  failed->insertBefore(after);
  builder.setInsertionPointToEnd(failed);
  buildFailure(builder, loc);
  builder.setInsertionPoint(check);
  builder.create<cf::CondBranchOp>(loc, check.getArg(), after, failed);
  check.erase();
}

} // namespace kiln
