//===- LowerToKernelCalls.cpp - The kiln-lower-to-cpu-kernels pass --------===//
#include "compiler/Codegen/LLVMCPU/KernelCalls.h"
#include "compiler/Codegen/LLVMCPU/Passes.h"
#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/Transforms/DialectConversion.h"

namespace kiln {
#define GEN_PASS_DEF_LOWERTOKERNELCALLS
#include "compiler/Codegen/LLVMCPU/Passes.h.inc"

namespace {

struct LowerToKernelCallsPass : public impl::LowerToKernelCallsBase<LowerToKernelCallsPass> {
  void runOnOperation() override {
    mlir::ConversionTarget target(getContext());
    target.markUnknownOpDynamicallyLegal([](mlir::Operation *) { return true; });
    target.addIllegalOp<LinearOp, AttentionOp, PagedAttentionOp>();
    mlir::RewritePatternSet patterns(&getContext());
    populateLinearCallPatterns(patterns);
    populateAttentionCallPatterns(patterns);
    if (mlir::failed(mlir::applyPartialConversion(getOperation(), target,
                                                  std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
} // namespace kiln
