//===- EmitEntryPoint.cpp - The kiln-emit-entry-point pass ----------------===//
#include "compiler/Codegen/LLVMCPU/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_EMITENTRYPOINT
#include "compiler/Codegen/LLVMCPU/Passes.h.inc"

namespace {

struct EmitEntryPointPass : public impl::EmitEntryPointBase<EmitEntryPointPass> {
  using EmitEntryPointBase::EmitEntryPointBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto function = module.lookupSymbol<LLVM::LLVMFuncOp>(functionName);
    auto wrapper =
        module.lookupSymbol<LLVM::LLVMFuncOp>("_mlir_ciface_" + functionName);
    if (!function || !wrapper) {
      module.emitError() << "no C interface for entry function '"
                         << functionName << "'";
      return signalPassFailure();
    }
    // With results, the C interface returns them through its first argument;
    // one that returns by value has a non-memref result.
    if (!isa<LLVM::LLVMVoidType>(wrapper.getFunctionType().getReturnType())) {
      wrapper.emitError() << "returns its result by value; kiln_entry supports "
                             "memref results only";
      return signalPassFailure();
    }
    for (Type param : wrapper.getFunctionType().getParams())
      if (!isa<LLVM::LLVMPointerType>(param)) {
        wrapper.emitError() << "takes a " << param
                            << " by value; kiln_entry passes memref arguments only";
        return signalPassFailure();
      }
    bool hasResults =
        !isa<LLVM::LLVMVoidType>(function.getFunctionType().getReturnType());
    // The arguments are read-only buffers (bufferization.writable = false).
    for (auto [index, type] :
         llvm::enumerate(function.getFunctionType().getParams()))
      if (isa<LLVM::LLVMPointerType>(type))
        function.setArgAttr(index, LLVM::LLVMDialect::getNoAliasAttrName(),
                            UnitAttr::get(&getContext()));
    unsigned numDescriptors =
        wrapper.getFunctionType().getNumParams() - (hasResults ? 1 : 0);

    // A buffer from the runtime's allocator aliases no other.
    for (StringRef allocator :
         {"_mlir_memref_to_llvm_alloc", "_mlir_memref_to_llvm_aligned_alloc"})
      if (auto declaration = module.lookupSymbol<LLVM::LLVMFuncOp>(allocator))
        declaration.setResultAttr(0, LLVM::LLVMDialect::getNoAliasAttrName(),
                                  UnitAttr::get(&getContext()));

    MLIRContext *ctx = &getContext();
    Location loc = function.getLoc();
    auto pointerType = LLVM::LLVMPointerType::get(ctx);
    OpBuilder builder = OpBuilder::atBlockEnd(module.getBody());
    auto entry = builder.create<LLVM::LLVMFuncOp>(
        loc, kEntrySymbol,
        LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx),
                                    {pointerType, pointerType}));
    Block *body = entry.addEntryBlock(builder);
    builder.setInsertionPointToStart(body);
    SmallVector<Value> operands;
    if (hasResults)
      operands.push_back(body->getArgument(1));
    for (unsigned i = 0; i < numDescriptors; ++i) {
      Value slot = builder.create<LLVM::GEPOp>(
          loc, pointerType, pointerType, body->getArgument(0),
          ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(i)});
      operands.push_back(builder.create<LLVM::LoadOp>(loc, pointerType, slot));
    }
    builder.create<LLVM::CallOp>(loc, wrapper, operands);
    builder.create<LLVM::ReturnOp>(loc, ValueRange{});
  }
};

} // namespace
} // namespace kiln
