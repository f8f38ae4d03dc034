//===- KilnToLinalg.cpp - The kiln-convert-to-linalg pass -----------------===//
#include "compiler/Conversion/KilnToLinalg/Patterns.h"
#include "compiler/Conversion/Passes.h"
#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

namespace kiln {
#define GEN_PASS_DEF_CONVERTKILNTOLINALG
#include "compiler/Conversion/Passes.h.inc"

namespace {

struct ConvertKilnToLinalgPass
    : public impl::ConvertKilnToLinalgBase<ConvertKilnToLinalgPass> {
  void runOnOperation() override {
    mlir::MLIRContext *ctx = &getContext();
    mlir::ConversionTarget target(*ctx);
    target.addLegalDialect<
        mlir::arith::ArithDialect, mlir::bufferization::BufferizationDialect,
        mlir::cf::ControlFlowDialect, mlir::func::FuncDialect,
        mlir::LLVM::LLVMDialect, mlir::linalg::LinalgDialect,
        mlir::math::MathDialect, mlir::memref::MemRefDialect,
        mlir::scf::SCFDialect, mlir::tensor::TensorDialect>();
    target.addLegalOp<mlir::ModuleOp>();
    target.addIllegalDialect<KilnDialect>();

    mlir::RewritePatternSet patterns(ctx);
    populateElementwiseLoweringPatterns(patterns);
    populateMatMulLoweringPatterns(patterns);
    populateAttentionLoweringPatterns(patterns);
    populateReductionLoweringPatterns(patterns);
    populateDataMovementLoweringPatterns(patterns);
    populateLoopNestLoweringPatterns(patterns);
    if (mlir::failed(mlir::applyFullConversion(getOperation(), target,
                                               std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
} // namespace kiln
