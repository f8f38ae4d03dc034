//===- FuseRotaryEmbeddings.cpp - The kiln-fuse-rotary-embeddings pass ----===//
//
// Recognizes the rotary position embedding as Llama and GPT-NeoX write it,
//
//   x * cos + rotate_half(x) * sin,
//   rotate_half(x) = concat(-x[..., D/2:], x[..., :D/2], axis = -1)
//
// or as GPT-J does, rotating neighbours (kiln.rotary's `interleaved`),
//
//   rotate_every_two(x) = stack(-x[..., 1::2], x[..., ::2], axis = -1)
//                         flattened back to x's shape,
//
// with either operand order in the products and the sum, and replaces it
// with one kiln.rotary: the halves, the negation and the concat are never
// materialized. Partial rotary (GPT-NeoX's rotary_pct), which rotates the
// first R of D elements and keeps the rest,
//
//   concat(rotary(x[..., :R], cos, sin), x[..., R:], axis = -1),
//
// becomes one kiln.rotary of x whose cos and sin are R wide: neither slice
// nor the concat is materialized either.
//
//===----------------------------------------------------------------------===//
#include "passes/PatternUtils.h"
#include "passes/Passes.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_KILNFUSEROTARYEMBEDDINGS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// The single constant entry of the 1-D i64 `value`.
std::optional<int64_t> singleConstant(Value value) {
  std::optional<SmallVector<ShapeElement>> elements = shapeElements(value);
  if (!elements || elements->size() != 1)
    return std::nullopt;
  return (*elements)[0].constant;
}

/// Whether `value` is a single-use slice of `x` that keeps [begin, end) of
/// its last axis of static size `width`, every `stride`-th element, by
/// ONNX's rules for negative and out-of-range indices.
bool isSliceOfLastAxis(Value value, Value x, int64_t width, int64_t begin,
                       int64_t end, int64_t stride = 1) {
  auto slice = singleUseProducer<SliceOp>(value);
  int64_t lastAxis = cast<RankedTensorType>(x.getType()).getRank() - 1;
  if (!slice || slice.getInput() != x ||
      slice.getAxes() != ArrayRef<int64_t>{lastAxis})
    return false;
  std::optional<int64_t> start = singleConstant(slice.getStarts());
  std::optional<int64_t> stop = singleConstant(slice.getEnds());
  std::optional<int64_t> step = singleConstant(slice.getSteps());
  if (!start || !stop || step != stride)
    return false;
  auto clampIndex = [&](int64_t index) {
    if (index < 0)
      index = std::max<int64_t>(index, -width) + width;
    return std::min(index, width);
  };
  return clampIndex(*start) == begin && clampIndex(*stop) == end;
}

/// Whether `value` is rotate_half(x) and used only here: concat(-x[..., D/2:],
/// x[..., :D/2]) on the last axis.
bool isRotateHalf(Value value, Value x, int64_t width) {
  auto concat = singleUseProducer<ConcatOp>(value);
  int64_t lastAxis = cast<RankedTensorType>(x.getType()).getRank() - 1;
  if (!concat || static_cast<int64_t>(concat.getAxis()) != lastAxis ||
      concat.getInputs().size() != 2)
    return false;
  auto negated = singleUseProducer<NegOp>(concat.getInputs()[0]);
  return negated &&
         isSliceOfLastAxis(negated.getInput(), x, width, width / 2, width) &&
         isSliceOfLastAxis(concat.getInputs()[1], x, width, 0, width / 2);
}

/// The static last dim of `value`, or ShapedType::kDynamic.
int64_t lastDim(Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  return type.getRank() == 0 ? ShapedType::kDynamic : type.getShape().back();
}

/// `value` without a single-use unsqueeze that appends a last axis of 1.
Value withoutTrailingUnitAxis(Value value) {
  auto unsqueeze = singleUseProducer<UnsqueezeOp>(value);
  if (!unsqueeze ||
      unsqueeze.getAxes() != ArrayRef<int64_t>{cast<RankedTensorType>(unsqueeze.getType()).getRank() - 1})
    return nullptr;
  return unsqueeze.getInput();
}

/// Whether `flatten` merges the last two dims of its input and keeps the
/// others: each of its shape's other entries is that dim of the input (or
/// 0, which copies it), and the last is the merged size (or -1).
bool flattensLastTwoDims(ReshapeOp flatten) {
  auto input = cast<RankedTensorType>(flatten.getInput().getType());
  auto result = cast<RankedTensorType>(flatten.getType());
  std::optional<SmallVector<ShapeElement>> entries = shapeElements(flatten.getShape());
  int64_t rank = result.getRank();
  if (!entries || input.getRank() != rank + 1 || static_cast<int64_t>(entries->size()) != rank ||
      input.isDynamicDim(rank - 1) || input.isDynamicDim(rank))
    return false;
  for (int64_t dim = 0; dim + 1 < rank; ++dim)
    if (!keepsInputDim(flatten, (*entries)[dim], dim))
      return false;
  const ShapeElement &last = entries->back();
  return last.isConstant(-1) || last.isConstant(input.getDimSize(rank - 1) * input.getDimSize(rank));
}

/// Whether `value` is GPT-J's rotate_every_two(x) and used only here: the
/// odd elements negated, paired with the even ones along a new last axis
/// and flattened back, reshape(concat(-x[..., 1::2][..., None],
/// x[..., ::2][..., None], axis = -1), x.shape), torch.stack's export.
bool isRotateEveryTwo(Value value, Value x, int64_t width) {
  auto flatten = singleUseProducer<ReshapeOp>(value);
  // The pairs may also be read for their dims, by the flatten's shape.
  auto pairs = flatten ? flatten.getInput().getDefiningOp<ConcatOp>() : ConcatOp();
  if (!pairs || llvm::any_of(pairs->getUsers(), [&](Operation *user) {
        return user != flatten && !isa<DimOp>(user);
      }))
    return false;
  if (pairs.getInputs().size() != 2 ||
      static_cast<int64_t>(pairs.getAxis()) != cast<RankedTensorType>(pairs.getType()).getRank() - 1 ||
      lastDim(pairs) != 2 || !flattensLastTwoDims(flatten))
    return false;
  // The negation may come before or after the new axis.
  bool negated = false;
  auto withoutNeg = [&](Value value) -> Value {
    auto neg = negated ? NegOp() : singleUseProducer<NegOp>(value);
    negated = negated || neg;
    return neg ? neg.getInput() : value;
  };
  Value first = withoutTrailingUnitAxis(withoutNeg(pairs.getInputs()[0]));
  if (first)
    first = withoutNeg(first);
  Value second = withoutTrailingUnitAxis(pairs.getInputs()[1]);
  return negated && first && second &&
         isSliceOfLastAxis(first, x, width, 1, width, /*stride=*/2) &&
         isSliceOfLastAxis(second, x, width, 0, width, /*stride=*/2);
}

struct FuseRotary : public OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AddOp add,
                                PatternRewriter &rewriter) const override {
    // kiln.rotary is a float op whose result has the rotated last dim.
    auto type = cast<RankedTensorType>(add.getType());
    if (!isa<FloatType>(type.getElementType()))
      return rewriter.notifyMatchFailure(add, "not a float sum");
    for (Value cosTerm : {add.getLhs(), add.getRhs()}) {
      auto cosProduct = singleUseProducer<MulOp>(cosTerm);
      auto sinProduct = singleUseProducer<MulOp>(otherOperand(add, cosTerm));
      if (!cosProduct || !sinProduct)
        continue;
      for (Value x : {cosProduct.getLhs(), cosProduct.getRhs()}) {
        int64_t width = lastDim(x);
        Value cos = otherOperand(cosProduct, x);
        if (ShapedType::isDynamic(width) || width == 0 || width % 2 != 0 ||
            lastDim(cos) != width || lastDim(add) != width)
          continue;
        for (Value rotated : {sinProduct.getLhs(), sinProduct.getRhs()}) {
          Value sin = otherOperand(sinProduct, rotated);
          if (lastDim(sin) != width)
            continue;
          bool interleaved = isRotateEveryTwo(rotated, x, width);
          if (!interleaved && !isRotateHalf(rotated, x, width))
            continue;
          rewriter.replaceOpWithNewOp<RotaryOp>(add, add.getType(), x, cos, sin, interleaved);
          return success();
        }
      }
    }
    return rewriter.notifyMatchFailure(
        add, "not x * cos + rotate_half(x) * sin, nor with rotate_every_two");
  }
};

/// concat(kiln.rotary(x[..., :R], cos, sin), x[..., R:]) on the last axis,
/// each part used only there, as kiln.rotary(x, cos, sin).
struct FusePartialRotary : public OpRewritePattern<ConcatOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ConcatOp concat,
                                PatternRewriter &rewriter) const override {
    int64_t lastAxis = cast<RankedTensorType>(concat.getType()).getRank() - 1;
    if (concat.getInputs().size() != 2 ||
        static_cast<int64_t>(concat.getAxis()) != lastAxis)
      return rewriter.notifyMatchFailure(concat,
                                         "not two parts of the last axis");
    auto rotary = singleUseProducer<RotaryOp>(concat.getInputs()[0]);
    auto rotatedSlice =
        rotary ? singleUseProducer<SliceOp>(rotary.getInput()) : SliceOp();
    if (!rotatedSlice)
      return rewriter.notifyMatchFailure(concat, "no rotary of a slice first");
    Value x = rotatedSlice.getInput();
    int64_t width = lastDim(x), rotated = rotary.getRotaryWidth();
    if (ShapedType::isDynamic(width) || lastDim(concat) != width ||
        lastDim(rotary) != rotated ||
        !isSliceOfLastAxis(rotary.getInput(), x, width, 0, rotated) ||
        !isSliceOfLastAxis(concat.getInputs()[1], x, width, rotated, width))
      return rewriter.notifyMatchFailure(
          concat, "not rotary(x[..., :R]) then x[..., R:]");
    rewriter.replaceOpWithNewOp<RotaryOp>(concat, concat.getType(), x, rotary.getCos(),
                                          rotary.getSin(), rotary.getInterleaved());
    return success();
  }
};

struct FuseRotaryEmbeddingsPass
    : public impl::KilnFuseRotaryEmbeddingsBase<FuseRotaryEmbeddingsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseRotary, FusePartialRotary>(&getContext());
    if (failed(applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
} // namespace kiln
