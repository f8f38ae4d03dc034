//===- AssertsToTraps.cpp - The kiln-asserts-to-traps pass ----------------===//
#include "compiler/Codegen/Common/FailedChecks.h"
#include "compiler/Codegen/LLVMCPU/Passes.h"

#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_ASSERTSTOTRAPS
#include "compiler/Codegen/LLVMCPU/Passes.h.inc"

namespace {

struct AssertsToTrapsPass : public impl::AssertsToTrapsBase<AssertsToTrapsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<cf::AssertOp> asserts;
    module.walk([&](cf::AssertOp op) { asserts.push_back(op); });
    if (asserts.empty())
      return;
    MLIRContext *ctx = &getContext();
    auto pointerType = LLVM::LLVMPointerType::get(ctx);
    OpBuilder builder = OpBuilder::atBlockEnd(module.getBody());
    auto trap = module.lookupSymbol<LLVM::LLVMFuncOp>(kTrapFunction);
    if (!trap)
      trap = builder.create<LLVM::LLVMFuncOp>(
          module.getLoc(), kTrapFunction,
          LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), {pointerType}));

    // One string constant per distinct message; the symbol table renames a
    // global whose name is taken.
    SymbolTable symbols(module);
    llvm::StringMap<LLVM::GlobalOp> messages;
    for (cf::AssertOp op : asserts) {
      std::string text = op.getMsg().str();
      LLVM::GlobalOp &global = messages[text];
      if (!global) {
        builder.setInsertionPointToEnd(module.getBody());
        std::string bytes = text + '\0';
        global = builder.create<LLVM::GlobalOp>(
            op.getLoc(),
            LLVM::LLVMArrayType::get(builder.getI8Type(), bytes.size()),
            /*isConstant=*/true, LLVM::Linkage::Private, "kiln_check_message",
            builder.getStringAttr(bytes));
        symbols.insert(global);
      }
      branchOnFailedCheck(op, builder, [&](OpBuilder &failure, Location loc) {
        Value message = failure.create<LLVM::AddressOfOp>(loc, global);
        failure.create<LLVM::CallOp>(loc, trap, ValueRange{message});
        failure.create<LLVM::UnreachableOp>(loc);
      });
    }
  }
};

} // namespace
} // namespace kiln
