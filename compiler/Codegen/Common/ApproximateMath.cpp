//===- ApproximateMath.cpp - The kiln-approximate-math pass ---------------===//
#include "compiler/Codegen/Common/Passes.h"

#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_APPROXIMATEMATH
#include "compiler/Codegen/Common/Passes.h.inc"

namespace {

struct ApproximateMathPass : public impl::ApproximateMathBase<ApproximateMathPass> {
  using Base::Base;

  void runOnOperation() override {
    mlir::RewritePatternSet patterns(&getContext());
    if (libraryFree) {
      mlir::populateExpandSinhPattern(patterns);
      mlir::populateExpandCoshPattern(patterns);
      mlir::populateExpandTanPattern(patterns);
      mlir::populateExpandAsinhPattern(patterns);
      mlir::populateExpandAcoshPattern(patterns);
      mlir::populateExpandAtanhPattern(patterns);
      mlir::populateExpandPowFPattern(patterns);
      mlir::populateExpandFPowIPattern(patterns);
    }
    mlir::populateMathAlgebraicSimplificationPatterns(patterns);
    mlir::populateMathPolynomialApproximationPatterns(patterns);
    if (mlir::failed(mlir::applyPatternsAndFoldGreedily(getOperation(),
                                                        std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
} // namespace kiln
