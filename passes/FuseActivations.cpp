//===- FuseActivations.cpp - The kiln-fuse-activations pass ---------------===//
//
// Recognizes GELU (exact and tanh-approximated) and SiLU written out in
// elementwise ops, and replaces each with one kiln.gelu or kiln.silu:
//
//   GELU exact:  0.5 * x * (1 + erf(x / sqrt(2)))
//   GELU tanh:   0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))
//   SiLU:        x * sigmoid(x)
//
// The three GELU factors may be multiplied in any grouping and order, which
// is how exporters differ (GPT-2's gelu_new vs torch's erf GELU).
//
//===----------------------------------------------------------------------===//
#include "passes/PatternUtils.h"
#include "passes/Passes.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>

namespace kiln {
#define GEN_PASS_DEF_KILNFUSEACTIVATIONS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// Whether `value` is `x * c` or `c * x` (or `x / (1/c)`) for the scalar
/// constant `c`, with `x` of the result's type and used only here.
bool isScaled(Value value, Value x, double c) {
  if (!value.hasOneUse() || !sameType(x, value))
    return false;
  if (auto mul = value.getDefiningOp<MulOp>())
    return isScalarConstant(otherOperand(mul, x), c);
  if (auto div = value.getDefiningOp<DivOp>())
    return div.getLhs() == x && isScalarConstant(div.getRhs(), 1.0 / c);
  return false;
}

/// The tanh approximation's inner polynomial: x + 0.044715 * x^3.
bool isGeluCubic(Value value, Value x) {
  auto add = singleUseProducer<AddOp>(value);
  if (!add || !sameType(x, add))
    return false;
  Value scaledCube = otherOperand(add, x);
  auto mul = scaledCube ? singleUseProducer<MulOp>(scaledCube) : MulOp();
  if (!mul)
    return false;
  for (Value cube : {mul.getLhs(), mul.getRhs()}) {
    if (!isScalarConstant(otherOperand(mul, cube), 0.044715))
      continue;
    if (auto pow = singleUseProducer<PowOp>(cube))
      return pow.getLhs() == x && isScalarConstant(pow.getRhs(), 3.0);
  }
  return false;
}

/// `erf(x / sqrt(2))` (exact) or `tanh(sqrt(2/pi) * (x + 0.044715 x^3))`.
std::optional<bool> matchGeluInner(Value value, Value x) {
  if (auto erf = singleUseProducer<ErfOp>(value))
    if (isScaled(erf.getInput(), x, M_SQRT1_2))
      return false;
  if (auto tanh = singleUseProducer<TanhOp>(value)) {
    auto mul = singleUseProducer<MulOp>(tanh.getInput());
    if (!mul)
      return std::nullopt;
    for (Value cubic : {mul.getLhs(), mul.getRhs()})
      if (isScalarConstant(otherOperand(mul, cubic), std::sqrt(2.0 / M_PI)) &&
          isGeluCubic(cubic, x))
        return true;
  }
  return std::nullopt;
}

/// Collects the leaves of a tree of single-use multiplications of `root`'s
/// type under `value`, at most `limit` of them.
void collectFactors(Value value, Value root, bool isRoot,
                    SmallVectorImpl<Value> &factors, size_t limit) {
  auto mul = value.getDefiningOp<MulOp>();
  if (mul && (isRoot || (value.hasOneUse() && sameType(value, root))) &&
      factors.size() + 2 <= limit) {
    collectFactors(mul.getLhs(), root, false, factors, limit);
    collectFactors(mul.getRhs(), root, false, factors, limit);
    return;
  }
  factors.push_back(value);
}

struct FuseGelu : public OpRewritePattern<MulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MulOp mul,
                                PatternRewriter &rewriter) const override {
    SmallVector<Value, 3> factors;
    collectFactors(mul, mul, /*isRoot=*/true, factors, /*limit=*/3);
    if (factors.size() != 3)
      return rewriter.notifyMatchFailure(mul, "not a product of three factors");
    // One factor is 0.5, one is 1 + inner(x), and the third is x.
    for (unsigned half = 0; half < 3; ++half) {
      if (!isScalarConstant(factors[half], 0.5))
        continue;
      for (unsigned onePlus = 0; onePlus < 3; ++onePlus) {
        if (onePlus == half)
          continue;
        Value x = factors[3 - half - onePlus];
        auto add = singleUseProducer<AddOp>(factors[onePlus]);
        if (!add || !sameType(x, mul) || !sameType(add, mul))
          continue;
        for (Value inner : {add.getLhs(), add.getRhs()}) {
          if (!isScalarConstant(otherOperand(add, inner), 1.0))
            continue;
          if (std::optional<bool> tanh = matchGeluInner(inner, x)) {
            rewriter.replaceOpWithNewOp<GeluOp>(mul, mul.getType(), x, *tanh);
            return success();
          }
        }
      }
    }
    return rewriter.notifyMatchFailure(mul, "not a decomposed GELU");
  }
};

struct FuseSilu : public OpRewritePattern<MulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MulOp mul,
                                PatternRewriter &rewriter) const override {
    for (Value x : {mul.getLhs(), mul.getRhs()}) {
      auto sigmoid = singleUseProducer<SigmoidOp>(otherOperand(mul, x));
      if (sigmoid && sigmoid.getInput() == x && sameType(x, mul)) {
        rewriter.replaceOpWithNewOp<SiluOp>(mul, mul.getType(), x);
        return success();
      }
    }
    return rewriter.notifyMatchFailure(mul, "not x * sigmoid(x)");
  }
};

struct FuseActivationsPass
    : public impl::KilnFuseActivationsBase<FuseActivationsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseGelu, FuseSilu>(&getContext());
    if (failed(applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
} // namespace kiln
