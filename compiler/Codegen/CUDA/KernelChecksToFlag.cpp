//===- KernelChecksToFlag.cpp - The kiln-kernel-checks-to-flag pass -------===//
#include "compiler/Codegen/CUDA/Passes.h"
#include "compiler/Codegen/CUDA/Pipelines.h"
#include "compiler/Codegen/Common/FailedChecks.h"

#include "mlir/IR/PatternMatch.h"

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_KERNELCHECKSTOFLAG
#include "compiler/Codegen/CUDA/Passes.h.inc"

namespace {

struct KernelChecksToFlagPass : public impl::KernelChecksToFlagBase<KernelChecksToFlagPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    OpBuilder builder(ctx);
    auto flagType = MemRefType::get({}, builder.getI32Type());
    SmallVector<Attribute> messages;
    llvm::StringMap<int32_t> numbers;
    for (auto kernels : module.getOps<gpu::GPUModuleOp>()) {
      SmallVector<cf::AssertOp> checks;
      kernels.walk([&](cf::AssertOp check) { checks.push_back(check); });
      if (checks.empty())
        continue;
      if (!kernels.lookupSymbol(kKernelCheckSymbol)) {
        builder.setInsertionPointToStart(kernels.getBody());
        builder.create<memref::GlobalOp>(
            kernels.getLoc(), kKernelCheckSymbol, /*sym_visibility=*/StringAttr(),
            flagType, DenseElementsAttr::get(RankedTensorType::get({}, builder.getI32Type()),
                                             builder.getI32IntegerAttr(0).getValue()),
            /*constant=*/false, /*alignment=*/IntegerAttr());
      }
      for (cf::AssertOp check : checks) {
        auto [entry, added] = numbers.try_emplace(check.getMsg(), messages.size() + 1);
        if (added)
          messages.push_back(check.getMsgAttr());
        const int32_t checkNumber = entry->second;
        branchOnFailedCheck(check, builder, [&](OpBuilder &failure, Location loc) {
          Value number = failure.create<arith::ConstantIntOp>(loc, checkNumber, 32);
          Value flag = failure.create<memref::GetGlobalOp>(loc, flagType, kKernelCheckSymbol);
          failure.create<memref::StoreOp>(loc, number, flag, ValueRange{});
          failure.create<gpu::ReturnOp>(loc);
        });
      }
    }
    if (!messages.empty())
      module->setAttr(kKernelChecksAttrName, builder.getArrayAttr(messages));
  }
};

} // namespace
} // namespace kiln
