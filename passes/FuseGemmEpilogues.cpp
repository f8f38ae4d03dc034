//===- FuseGemmEpilogues.cpp - The kiln-fuse-gemm-epilogues pass ----------===//
//
// Folds the elementwise ops that consume a product by a 2-D weight into one
// kiln.linear, in the order they apply:
//
//   add(P, bias)             bias [N], added to every row
//   act(P) or act(reshape(P))  relu, gelu (exact or tanh), silu
//   mul(P, g) or mul(reshape(P), g)  the gate g, of the same shape
//   add(P, r) or add(reshape(P), r)  the residual r, of the same shape
//
// A SwiGLU MLP, silu(x·Wg) * (x·Wu), becomes two linears: the SiLU in the
// first one's epilogue, the product with it in the second's.
//
// where P is a single-use kiln.matmul by a 2-D weight or a kiln.linear that
// has none of the later stages yet. Exporters often flatten the rows before
// the product and restore them after (GPT-2's Conv1D), so an activation or
// residual may sit behind that reshape: an elementwise op commutes with it,
// and the residual is reshaped to the product's shape instead.
//
//===----------------------------------------------------------------------===//
#include "passes/PatternUtils.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_KILNFUSEGEMMEPILOGUES
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// The epilogue stages in the order they apply.
enum class Stage { None, Bias, Activation, Gate, Residual };

/// A fusable product: a kiln.matmul by a 2-D weight or a kiln.linear, of f32,
/// with its epilogue so far.
struct Product {
  Operation *op = nullptr;
  Value input, weight, bias, gate, residual;
  std::optional<Activation> activation;
  bool transposeB = false;
  // A packed (and perhaps quantized) weight's form, kept as it is: an
  // importer may make one (ONNX Runtime's MatMulNBits).
  bool packed = false;
  Value scales, zeroPoints, columnSums;
  IntegerAttr groupSize;
  bool quantizeInput = false;
  FloatAttr inputScale;
  IntegerAttr inputZeroPoint;
  bool inputTensorRange = false;

  Stage lastStage() const {
    if (residual)
      return Stage::Residual;
    if (gate)
      return Stage::Gate;
    if (activation)
      return Stage::Activation;
    return bias ? Stage::Bias : Stage::None;
  }

  /// A kiln.linear of type `type` like this one with `fill` setting the
  /// next stage.
  template <typename Fill>
  Value rebuild(PatternRewriter &rewriter, Location loc, Type type,
                Fill fill) const {
    Product next = *this;
    fill(next);
    return rewriter.create<LinearOp>(
        loc, type, next.input, next.weight, next.scales, next.zeroPoints,
        next.columnSums, next.bias,
        next.activation
            ? ActivationAttr::get(rewriter.getContext(), *next.activation)
            : ActivationAttr(),
        next.gate, next.residual, next.transposeB, next.packed, next.groupSize,
        next.quantizeInput, next.inputScale, next.inputZeroPoint, next.inputTensorRange);
  }
};

/// `value` as a product whose epilogue ends before `stage`, when `value` is
/// its only use.
std::optional<Product> productBefore(Value value, Stage stage) {
  Operation *op = value.getDefiningOp();
  if (!op || !value.hasOneUse() ||
      !cast<RankedTensorType>(value.getType()).getElementType().isF32())
    return std::nullopt;
  Product product;
  product.op = op;
  if (auto matmul = dyn_cast<MatMulOp>(op)) {
    if (cast<RankedTensorType>(matmul.getRhs().getType()).getRank() != 2)
      return std::nullopt;
    product.input = matmul.getLhs();
    product.weight = matmul.getRhs();
    product.transposeB = matmul.getTransposeB();
  } else if (auto linear = dyn_cast<LinearOp>(op)) {
    product.input = linear.getInput();
    product.weight = linear.getWeight();
    product.bias = linear.getBias();
    product.activation = linear.getActivation();
    product.gate = linear.getGate();
    product.residual = linear.getResidual();
    product.transposeB = linear.getTransposeB();
    product.packed = linear.getPacked();
    product.scales = linear.getScales();
    product.zeroPoints = linear.getZeroPoints();
    product.columnSums = linear.getColumnSums();
    product.groupSize = linear.getGroupSizeAttr();
    product.quantizeInput = linear.getQuantizeInput();
    product.inputScale = linear.getInputScaleAttr();
    product.inputZeroPoint = linear.getInputZeroPointAttr();
    product.inputTensorRange = linear.getInputTensorRange();
  } else {
    return std::nullopt;
  }
  if (product.lastStage() >= stage)
    return std::nullopt;
  return product;
}

/// A product behind `value`, directly or through a single-use reshape.
struct ReshapedProduct {
  Product product;
  ReshapeOp reshape; // null when `value` is the product itself
};

std::optional<ReshapedProduct> reshapedProductBefore(Value value, Stage stage) {
  if (std::optional<Product> product = productBefore(value, stage))
    return ReshapedProduct{*product, nullptr};
  auto reshape = singleUseProducer<ReshapeOp>(value);
  if (!reshape)
    return std::nullopt;
  if (std::optional<Product> product = productBefore(reshape.getInput(), stage))
    return ReshapedProduct{*product, reshape};
  return std::nullopt;
}

/// Replaces `root` with the product's kiln.linear, `fill` setting the next
/// stage, reshaped as `behind.reshape` was, and erases the ops it absorbed.
/// The op that replaces `root` takes its type, which may be more static than
/// the product's, so that its lowering checks the sizes root's would have.
template <typename Fill>
void fuseInto(PatternRewriter &rewriter, Operation *root,
              ReshapedProduct behind, Fill fill) {
  Location loc = root->getLoc();
  Type rootType = root->getResult(0).getType();
  Type productType = behind.product.op->getResult(0).getType();
  // A packed weight carries no N of its own: its linear keeps the static N
  // of its type, and is cast to the root's when that is less static.
  bool keepProductType =
      behind.reshape ||
      (behind.product.packed &&
       cast<RankedTensorType>(rootType).isDynamicDim(
           cast<RankedTensorType>(rootType).getRank() - 1));
  Value result = behind.product.rebuild(
      rewriter, loc, keepProductType ? productType : rootType, fill);
  if (behind.reshape)
    result = rewriter.create<ReshapeOp>(loc, rootType, result,
                                        behind.reshape.getShape());
  else if (result.getType() != rootType)
    result = rewriter.create<tensor::CastOp>(loc, rootType, result);
  rewriter.replaceOp(root, result);
  if (behind.reshape)
    rewriter.eraseOp(behind.reshape);
  rewriter.eraseOp(behind.product.op);
}

/// Whether an elementwise op of `a` and `b` (the gate's mul, the residual's
/// add) may broadcast one of them: their ranks differ, or a dim is static 1
/// on one side only. Otherwise their sizes are equal whenever the op runs,
/// since kiln's broadcasting ops fail at run time when a dynamic size would
/// broadcast.
bool mayBroadcast(Value a, Value b) {
  auto aType = cast<RankedTensorType>(a.getType());
  auto bType = cast<RankedTensorType>(b.getType());
  if (aType.getRank() != bType.getRank())
    return true;
  for (auto [x, y] : llvm::zip_equal(aType.getShape(), bType.getShape()))
    if ((x == 1) != (y == 1) ||
        (!ShapedType::isDynamic(x) && !ShapedType::isDynamic(y) && x != y))
      return true;
  return false;
}

/// The number of columns of the product, when static.
std::optional<int64_t> staticColumns(const Product &product) {
  int64_t n = cast<RankedTensorType>(product.op->getResult(0).getType())
                  .getShape()
                  .back();
  if (ShapedType::isDynamic(n))
    return std::nullopt;
  return n;
}

struct FuseBias : public OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AddOp add,
                                PatternRewriter &rewriter) const override {
    for (Value side : {add.getLhs(), add.getRhs()}) {
      std::optional<Product> product = productBefore(side, Stage::Bias);
      Value bias = otherOperand(add, side);
      if (!product || !sameType(side, add))
        continue;
      // One value per column: [N] broadcast over the rows, nothing bigger.
      auto biasType = cast<RankedTensorType>(bias.getType());
      std::optional<int64_t> n = staticColumns(*product);
      if (biasType.getRank() != 1 || !n || biasType.getDimSize(0) != *n)
        continue;
      fuseInto(rewriter, add, {*product, nullptr},
               [&](Product &p) { p.bias = bias; });
      return success();
    }
    return rewriter.notifyMatchFailure(add, "not a product plus a [N] bias");
  }
};

template <typename OpTy>
struct FuseActivation : public OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;

  static Activation activationOf(OpTy op) {
    if constexpr (std::is_same_v<OpTy, GeluOp>)
      return op.getTanhApproximation() ? Activation::gelu_tanh
                                       : Activation::gelu;
    if constexpr (std::is_same_v<OpTy, SiluOp>)
      return Activation::silu;
    return Activation::relu;
  }

  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    std::optional<ReshapedProduct> behind =
        reshapedProductBefore(op.getInput(), Stage::Activation);
    if (!behind)
      return rewriter.notifyMatchFailure(op, "not applied to a product");
    fuseInto(rewriter, op, *behind,
             [&](Product &p) { p.activation = activationOf(op); });
    return success();
  }
};

/// A product times (the gate) or plus (the residual) a tensor of its shape,
/// `OpTy` being kiln.mul or kiln.add.
template <typename OpTy, Stage kStage>
struct FuseElementwiseOperand : public OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;

  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    for (Value side : {op.getLhs(), op.getRhs()}) {
      std::optional<ReshapedProduct> behind = reshapedProductBefore(side, kStage);
      if (!behind)
        continue;
      Value operand = otherOperand(op, side);
      auto productType =
          cast<RankedTensorType>(behind->product.op->getResult(0).getType());
      if (!behind->reshape) {
        // The kernel reads the operand in the product's shape; the lowering
        // checks its sizes, and fails where the elementwise op would.
        if (mayBroadcast(operand, side))
          continue;
      } else {
        // The operand is reshaped to the product's shape by its element
        // count, so it must provably have the reshape's shape. The target is
        // the product's static sizes with -1 for its one dynamic size (a 0
        // would copy a dim instead).
        if (productType.getNumDynamicDims() > 1 ||
            llvm::is_contained(productType.getShape(), 0) ||
            !provablySameShape(operand, side))
          continue;
        SmallVector<int64_t> shape = llvm::to_vector(productType.getShape());
        for (int64_t &size : shape)
          if (ShapedType::isDynamic(size))
            size = -1;
        auto shapeType = RankedTensorType::get({productType.getRank()},
                                               rewriter.getI64Type());
        Value shapeValue = rewriter.create<ConstantOp>(
            op.getLoc(), shapeType,
            DenseIntElementsAttr::get(shapeType, ArrayRef<int64_t>(shape)));
        operand = rewriter.create<ReshapeOp>(op.getLoc(), productType, operand,
                                             shapeValue);
      }
      fuseInto(rewriter, op, *behind, [&](Product &p) {
        (kStage == Stage::Gate ? p.gate : p.residual) = operand;
      });
      return success();
    }
    return rewriter.notifyMatchFailure(
        op, "not a product and a tensor of its shape");
  }
};

struct FuseGemmEpiloguesPass
    : public impl::KilnFuseGemmEpiloguesBase<FuseGemmEpiloguesPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseBias, FuseElementwiseOperand<MulOp, Stage::Gate>,
                 FuseElementwiseOperand<AddOp, Stage::Residual>,
                 FuseActivation<GeluOp>,
                 FuseActivation<SiluOp>, FuseActivation<ReluOp>>(&getContext());
    if (failed(applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
} // namespace kiln
