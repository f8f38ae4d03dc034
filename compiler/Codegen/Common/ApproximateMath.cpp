//===- ApproximateMath.cpp - The kiln-approximate-math pass ---------------===//
#include "compiler/Codegen/Common/Passes.h"

#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_APPROXIMATEMATH
#include "compiler/Codegen/Common/Passes.h.inc"

namespace {

struct ApproximateMathPass : public impl::ApproximateMathBase<ApproximateMathPass> {
  void runOnOperation() override {
    mlir::RewritePatternSet patterns(&getContext());
    mlir::populateMathAlgebraicSimplificationPatterns(patterns);
    mlir::populateMathPolynomialApproximationPatterns(patterns);
    if (mlir::failed(mlir::applyPatternsAndFoldGreedily(getOperation(),
                                                        std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
} // namespace kiln
