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
#include "mlir/IR/AttrTypeSubElements.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/Transforms/DialectConversion.h"

namespace kiln {
#define GEN_PASS_DEF_CONVERTKILNTOLINALG
#include "compiler/Conversion/Passes.h.inc"

namespace {

/// arith, and everything below it, computes on signless integers only. The
/// patterns chose the unsigned ops (divui, cmpi ult, uitofp...) where an
/// operand was `uiN`; after them every `uiN` in the module's ops becomes
/// `iN`: the types of values, of functions, and of constants alike. The
/// module's own attributes keep theirs: the weights' there are what the
/// manifest describes, as the signature does the entry's, in ONNX's types.
void stripSignedness(mlir::ModuleOp module) {
  auto signless = [](mlir::Type type) -> mlir::Type {
    auto integer = mlir::dyn_cast<mlir::IntegerType>(type);
    if (!integer || !integer.isUnsigned())
      return {};
    return mlir::IntegerType::get(type.getContext(), integer.getWidth());
  };
  mlir::AttrTypeReplacer replacer;
  replacer.addReplacement([&](mlir::IntegerType type) -> std::optional<mlir::Type> {
    if (mlir::Type replaced = signless(type))
      return replaced;
    return std::nullopt;
  });
  // Constants hold their type inside the attribute, which the type rule
  // above does not reach: they are rebuilt on the same bits.
  replacer.addReplacement([&](mlir::IntegerAttr attr) -> std::optional<mlir::Attribute> {
    if (mlir::Type replaced = signless(attr.getType()))
      return mlir::IntegerAttr::get(replaced, attr.getValue());
    return std::nullopt;
  });
  replacer.addReplacement([&](mlir::DenseElementsAttr attr) -> std::optional<mlir::Attribute> {
    if (mlir::Type replaced = signless(attr.getElementType()))
      return attr.bitcast(replaced);
    return std::nullopt;
  });
  replacer.addReplacement(
      [&](mlir::DenseResourceElementsAttr attr) -> std::optional<mlir::Attribute> {
        if (mlir::Type replaced = signless(attr.getElementType()))
          return mlir::DenseResourceElementsAttr::get(attr.getType().clone(replaced),
                                                      attr.getRawHandle());
        return std::nullopt;
      });
  for (mlir::Operation &op : module.getBody()->getOperations())
    replacer.recursivelyReplaceElementsIn(&op, /*replaceAttrs=*/true,
                                          /*replaceLocs=*/false,
                                          /*replaceTypes=*/true);
}

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

    // The ops a target runs as its own kernels are lowered by that target's
    // pass before this one (kiln-lower-to-cpu-kernels on the CPU).
    mlir::WalkResult leftForTarget = getOperation().walk([](mlir::Operation *op) {
      if (!mlir::isa<LinearOp, AttentionOp, PagedAttentionOp>(op))
        return mlir::WalkResult::advance();
      op->emitOpError("runs as a target's kernel: lower it with the target's "
                      "kernel-call pass (kiln-lower-to-cpu-kernels) first");
      return mlir::WalkResult::interrupt();
    });
    if (leftForTarget.wasInterrupted())
      return signalPassFailure();

    mlir::RewritePatternSet patterns(ctx);
    populateElementwiseLoweringPatterns(patterns);
    populateMatMulLoweringPatterns(patterns);
    populateReductionLoweringPatterns(patterns);
    populateDataMovementLoweringPatterns(patterns);
    populateLoopNestLoweringPatterns(patterns);
    if (mlir::failed(mlir::applyFullConversion(getOperation(), target,
                                               std::move(patterns))))
      return signalPassFailure();
    stripSignedness(getOperation());
  }
};

} // namespace
} // namespace kiln
