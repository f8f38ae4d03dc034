//===- FuseNormalizations.cpp - The kiln-fuse-normalizations pass ---------===//
//
// Recognizes LayerNorm and RMSNorm in the decomposed form that exports before
// opset 17 (and every RMSNorm export) use, and replaces each with one
// kiln.layer_norm or kiln.rms_norm:
//
//   LayerNorm: d = x - mean(x); (d / sqrt(mean(d^2) + eps)) * gamma [+ beta]
//   RMSNorm:   (x * 1/sqrt(mean(x^2) + eps)) * gamma
//
// with the usual spellings of each step: d^2 as pow(d, 2) or d * d, and the
// division by the deviation as div, or as a multiplication by rsqrt,
// reciprocal(sqrt) or 1 / sqrt.
//
//===----------------------------------------------------------------------===//
#include "passes/PatternUtils.h"
#include "passes/Passes.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_KILNFUSENORMALIZATIONS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// x / sqrt(mean(v) + eps), in one of its spellings, as (x, mean(v), eps).
struct Normalized {
  Value input;
  ReduceMeanOp meanOfSquares;
  double epsilon;
  Operation *normalize; // the op that divides or multiplies x
};

/// `mean(v) + eps` → (mean, eps).
std::optional<std::pair<ReduceMeanOp, double>> matchVariancePlusEpsilon(Value value) {
  auto add = singleUseProducer<AddOp>(value);
  if (!add)
    return std::nullopt;
  for (Value candidate : {add.getLhs(), add.getRhs()}) {
    std::optional<double> epsilon =
        scalarConstantValue(otherOperand(add, candidate));
    auto mean = singleUseProducer<ReduceMeanOp>(candidate);
    if (epsilon && mean && mean.getKeepDims() && sameType(candidate, add))
      return std::make_pair(mean, *epsilon);
  }
  return std::nullopt;
}

/// `sqrt(mean(v) + eps)`.
std::optional<std::pair<ReduceMeanOp, double>> matchDeviation(Value value) {
  auto sqrt = singleUseProducer<SqrtOp>(value);
  return sqrt ? matchVariancePlusEpsilon(sqrt.getInput()) : std::nullopt;
}

/// `1 / sqrt(mean(v) + eps)` as rsqrt, reciprocal(sqrt) or 1 / sqrt.
std::optional<std::pair<ReduceMeanOp, double>>
matchInverseDeviation(Value value) {
  if (auto rsqrt = singleUseProducer<RsqrtOp>(value))
    return matchVariancePlusEpsilon(rsqrt.getInput());
  if (auto reciprocal = singleUseProducer<ReciprocalOp>(value))
    return matchDeviation(reciprocal.getInput());
  if (auto div = singleUseProducer<DivOp>(value))
    if (isScalarConstant(div.getLhs(), 1.0) && sameType(div.getRhs(), div))
      return matchDeviation(div.getRhs());
  return std::nullopt;
}

/// `x / deviation` or `x * inverse deviation`, with `x` of the result's type.
std::optional<Normalized> matchNormalized(Value value) {
  Operation *op = value.getDefiningOp();
  if (!op || !value.hasOneUse())
    return std::nullopt;
  std::optional<std::pair<ReduceMeanOp, double>> variance;
  Value input;
  if (auto div = dyn_cast<DivOp>(op)) {
    input = div.getLhs();
    variance = matchDeviation(div.getRhs());
  } else if (auto mul = dyn_cast<MulOp>(op)) {
    for (Value candidate : {mul.getLhs(), mul.getRhs()}) {
      input = candidate;
      variance = matchInverseDeviation(otherOperand(mul, candidate));
      if (variance)
        break;
    }
  }
  if (!variance || !sameType(input, value))
    return std::nullopt;
  return Normalized{input, variance->first, variance->second, op};
}

/// Whether `square` is `x^2` as pow(x, 2) or x * x, used only by `user`.
bool isSquareOf(Value square, Value x, Operation *user) {
  if (!square.hasOneUse() || *square.getUsers().begin() != user)
    return false;
  if (auto pow = square.getDefiningOp<PowOp>())
    return pow.getLhs() == x && isScalarConstant(pow.getRhs(), 2.0) &&
           sameType(x, square);
  if (auto mul = square.getDefiningOp<MulOp>())
    return mul.getLhs() == x && mul.getRhs() == x;
  return false;
}

/// The first normalized axis when `axes` are the trailing axes of `value`.
std::optional<int64_t> trailingAxis(ArrayRef<int64_t> axes, Value value) {
  int64_t rank = cast<RankedTensorType>(value.getType()).getRank();
  if (axes.empty() || axes.back() != rank - 1 ||
      !llvm::equal(axes, llvm::seq<int64_t>(axes.front(), rank)))
    return std::nullopt;
  return axes.front();
}

/// Whether `param` (gamma or beta) broadcasts over the normalized axes only.
bool isTrailingParameter(Value param, Value normalized, int64_t axis) {
  auto type = cast<RankedTensorType>(param.getType());
  int64_t rank = cast<RankedTensorType>(normalized.getType()).getRank();
  return type.getRank() <= rank - axis;
}

/// `normalized * gamma` (either order): returns gamma.
Value matchScale(MulOp mul, Value normalized, int64_t axis) {
  Value gamma = otherOperand(mul, normalized);
  if (!gamma || !sameType(normalized, mul) ||
      !isTrailingParameter(gamma, normalized, axis))
    return nullptr;
  return gamma;
}

/// LayerNorm rooted at the scale multiplication: the bias add, if any, is
/// folded in by FoldLayerNormBias.
struct FuseLayerNorm : public OpRewritePattern<MulOp> {
  FuseLayerNorm(MLIRContext *ctx) : OpRewritePattern(ctx, /*benefit=*/2) {}

  LogicalResult matchAndRewrite(MulOp mul,
                                PatternRewriter &rewriter) const override {
    for (Value candidate : {mul.getLhs(), mul.getRhs()}) {
      std::optional<Normalized> norm = matchNormalized(candidate);
      if (!norm)
        continue;
      // d = x - mean(x): used only by the square and the normalization.
      auto centered = norm->input.getDefiningOp<SubOp>();
      if (!centered)
        continue;
      Value x = centered.getLhs();
      auto mean = singleUseProducer<ReduceMeanOp>(centered.getRhs());
      if (!mean || mean.getInput() != x || !mean.getKeepDims() ||
          !sameType(x, centered) ||
          mean.getAxes() != norm->meanOfSquares.getAxes())
        continue;
      Value square = norm->meanOfSquares.getInput();
      if (!isSquareOf(square, centered, norm->meanOfSquares) ||
          !llvm::all_of(centered->getUsers(), [&](Operation *user) {
            return user == square.getDefiningOp() || user == norm->normalize;
          }))
        continue;
      std::optional<int64_t> axis = trailingAxis(mean.getAxes(), x);
      if (!axis)
        continue;
      Value gamma = matchScale(mul, candidate, *axis);
      if (!gamma)
        continue;
      rewriter.replaceOpWithNewOp<LayerNormOp>(
          mul, mul.getType(), x, gamma, /*bias=*/Value(),
          rewriter.getI64IntegerAttr(*axis),
          rewriter.getF32FloatAttr(norm->epsilon));
      return success();
    }
    return rewriter.notifyMatchFailure(mul, "not a decomposed LayerNorm");
  }
};

/// layer_norm(x, gamma) + beta → layer_norm(x, gamma, beta).
struct FoldLayerNormBias : public OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AddOp add,
                                PatternRewriter &rewriter) const override {
    for (Value candidate : {add.getLhs(), add.getRhs()}) {
      auto norm = singleUseProducer<LayerNormOp>(candidate);
      Value beta = otherOperand(add, candidate);
      if (!norm || norm.getBias() || !sameType(candidate, add) ||
          !isTrailingParameter(beta, candidate, norm.getAxis()))
        continue;
      rewriter.replaceOpWithNewOp<LayerNormOp>(
          add, add.getType(), norm.getInput(), norm.getScale(), beta,
          norm.getAxisAttr(), norm.getEpsilonAttr());
      return success();
    }
    return rewriter.notifyMatchFailure(add, "not layer_norm + bias");
  }
};

struct FuseRmsNorm : public OpRewritePattern<MulOp> {
  FuseRmsNorm(MLIRContext *ctx) : OpRewritePattern(ctx, /*benefit=*/1) {}

  LogicalResult matchAndRewrite(MulOp mul,
                                PatternRewriter &rewriter) const override {
    for (Value candidate : {mul.getLhs(), mul.getRhs()}) {
      std::optional<Normalized> norm = matchNormalized(candidate);
      if (!norm)
        continue;
      Value x = norm->input;
      std::optional<int64_t> axis =
          trailingAxis(norm->meanOfSquares.getAxes(), x);
      if (!axis ||
          !isSquareOf(norm->meanOfSquares.getInput(), x, norm->meanOfSquares))
        continue;
      Value gamma = matchScale(mul, candidate, *axis);
      if (!gamma)
        continue;
      rewriter.replaceOpWithNewOp<RmsNormOp>(
          mul, mul.getType(), x, gamma, rewriter.getI64IntegerAttr(*axis),
          rewriter.getF32FloatAttr(norm->epsilon));
      return success();
    }
    return rewriter.notifyMatchFailure(mul, "not a decomposed RMSNorm");
  }
};

struct FuseNormalizationsPass
    : public impl::KilnFuseNormalizationsBase<FuseNormalizationsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseLayerNorm, FoldLayerNormBias, FuseRmsNorm>(&getContext());
    if (failed(applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
} // namespace kiln
