//===- Reductions.cpp - Reductions, softmax and normalizations ------------===//
//
// reduce_sum/mean/max become reducing linalg.generics. Softmax, log_softmax,
// layer_norm and rms_norm are decomposed into kiln reductions and elementwise
// ops, which the conversion then lowers in turn; the elementwise fusion that
// follows the lowering merges the pieces back into few loops.
//
//===----------------------------------------------------------------------===//
#include "compiler/Conversion/KilnToLinalg/Patterns.h"
#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;

namespace kiln {
namespace {

using namespace lowering;

// Float reductions may be reassociated, which lets them vectorize; the order
// of a sum is no more exact one way than another.
Value emitAdd(OpBuilder &b, Location loc, Value acc, Value x) {
  if (isa<FloatType>(x.getType()))
    return b.create<arith::AddFOp>(loc, acc, x, arith::FastMathFlags::reassoc);
  return b.create<arith::AddIOp>(loc, acc, x);
}

Value emitMax(OpBuilder &b, Location loc, Value acc, Value x) {
  if (isa<FloatType>(x.getType()))
    return b.create<arith::MaximumFOp>(loc, acc, x, arith::FastMathFlags::reassoc);
  return maxOf(b, loc, acc, x);
}

Value emitMin(OpBuilder &b, Location loc, Value acc, Value x) {
  if (isa<FloatType>(x.getType()))
    return b.create<arith::MinimumFOp>(loc, acc, x, arith::FastMathFlags::reassoc);
  return minOf(b, loc, acc, x);
}

Value emitMul(OpBuilder &b, Location loc, Value acc, Value x) {
  if (isa<FloatType>(x.getType()))
    return b.create<arith::MulFOp>(loc, acc, x, arith::FastMathFlags::reassoc);
  return b.create<arith::MulIOp>(loc, acc, x);
}

template <typename ReduceOpTy>
struct ReduceLowering : public OpConversionPattern<ReduceOpTy> {
  using OpConversionPattern<ReduceOpTy>::OpConversionPattern;
  using OpAdaptor = typename ReduceOpTy::Adaptor;

  LogicalResult
  matchAndRewrite(ReduceOpTy op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value input = adaptor.getInput();
    auto resultType = cast<RankedTensorType>(op.getType());
    Type elementType = resultType.getElementType();
    ArrayRef<int64_t> axes = op.getAxes();
    // Each reduction from its identity: the lowest value for a maximum,
    // the highest for a minimum, 1 for a product, 0 for a sum.
    Value init;
    ReduceFn combine;
    if constexpr (std::is_same_v<ReduceOpTy, ReduceMaxOp>) {
      init = lowestValue(rewriter, loc, elementType);
      combine = emitMax;
    } else if constexpr (std::is_same_v<ReduceOpTy, ReduceMinOp>) {
      init = highestValue(rewriter, loc, elementType);
      combine = emitMin;
    } else if constexpr (std::is_same_v<ReduceOpTy, ReduceProdOp>) {
      init = scalarConstant(rewriter, loc, elementType, 1);
      combine = emitMul;
    } else {
      init = scalarConstant(rewriter, loc, elementType, 0);
      combine = emitAdd;
    }
    Value result = reduce(rewriter, loc, input, axes, init, resultType, combine);
    if constexpr (std::is_same_v<ReduceOpTy, ReduceMeanOp>)
      result = divideByCount(rewriter, loc, input, axes, result);
    rewriter.replaceOp(op, result);
    return success();
  }

  /// Divides every element of `sum` by the number of elements reduced.
  static Value divideByCount(OpBuilder &b, Location loc, Value input,
                             ArrayRef<int64_t> axes, Value sum) {
    Value count = b.create<arith::ConstantIndexOp>(loc, 1);
    for (int64_t axis : axes)
      count = b.create<arith::MulIOp>(loc, count,
                                      b.create<tensor::DimOp>(loc, input, axis));
    auto type = cast<RankedTensorType>(sum.getType());
    Value divisor = indexToScalar(b, loc, count, type.getElementType());
    int64_t rank = type.getRank();
    AffineMap identity = AffineMap::getMultiDimIdentityMap(rank, b.getContext());
    SmallVector<utils::IteratorType> iterators(rank,
                                               utils::IteratorType::parallel);
    // The quotient goes to a new tensor: a generic that updated its own init
    // in place would be re-run per element once fused into a broadcast.
    Value init = emptyTensor(b, loc, type, sizesOf(b, loc, sum));
    return b
        .create<linalg::GenericOp>(
            loc, type, sum, init, SmallVector<AffineMap>{identity, identity},
            iterators,
            [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
              Type element = divisor.getType();
              Value quotient =
                  isa<FloatType>(element)
                      ? nested.create<arith::DivFOp>(nestedLoc, args[0], divisor)
                            .getResult()
                  : element.isUnsignedInteger()
                      ? nested.create<arith::DivUIOp>(nestedLoc, args[0], divisor)
                            .getResult()
                      : nested.create<arith::DivSIOp>(nestedLoc, args[0], divisor)
                            .getResult();
              nested.create<linalg::YieldOp>(nestedLoc, quotient);
            })
        .getResult(0);
  }
};

/// argmax/argmin as one reducing linalg.generic with two accumulators, the
/// best value and its index (-1 before any). The choice depends on the
/// (value, index) pairs only, not on the order the loop visits them, so the
/// reduction may be split or vectorized: a NaN beats every number (NumPy's
/// rule), and of equal values the lower index wins, or the higher one with
/// select_last_index.
template <typename ArgReduceOpTy>
struct ArgReduceLowering : public OpConversionPattern<ArgReduceOpTy> {
  using OpConversionPattern<ArgReduceOpTy>::OpConversionPattern;
  using OpAdaptor = typename ArgReduceOpTy::Adaptor;
  static constexpr bool isMax = std::is_same_v<ArgReduceOpTy, ArgMaxOp>;

  LogicalResult
  matchAndRewrite(ArgReduceOpTy op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value input = adaptor.getInput();
    auto inputType = cast<RankedTensorType>(input.getType());
    auto resultType = cast<RankedTensorType>(op.getType());
    int64_t rank = inputType.getRank(), axis = op.getAxis();
    bool selectLast = op.getSelectLastIndex();
    SmallVector<OpFoldResult> inputSizes = sizesOf(rewriter, loc, input);
    SmallVector<OpFoldResult> reducedSizes(inputSizes);
    reducedSizes.erase(reducedSizes.begin() + axis);
    SmallVector<int64_t> reducedShape(inputType.getShape());
    reducedShape.erase(reducedShape.begin() + axis);
    auto valueType = RankedTensorType::get(reducedShape, inputType.getElementType());
    auto indexType = RankedTensorType::get(reducedShape, rewriter.getI64Type());
    Value values = rewriter
                       .create<linalg::FillOp>(
                           loc, scalarConstant(rewriter, loc, valueType.getElementType(), 0),
                           emptyTensor(rewriter, loc, valueType, reducedSizes))
                       .getResult(0);
    Value indices = rewriter
                        .create<linalg::FillOp>(
                            loc, scalarConstant(rewriter, loc, rewriter.getI64Type(), -1),
                            emptyTensor(rewriter, loc, indexType, reducedSizes))
                        .getResult(0);
    SmallVector<AffineExpr> kept;
    SmallVector<utils::IteratorType> iterators;
    for (int64_t dim = 0; dim < rank; ++dim) {
      iterators.push_back(dim == axis ? utils::IteratorType::reduction
                                      : utils::IteratorType::parallel);
      if (dim != axis)
        kept.push_back(rewriter.getAffineDimExpr(dim));
    }
    AffineMap keptMap = AffineMap::get(rank, 0, kept, rewriter.getContext());
    SmallVector<AffineMap> maps = {AffineMap::getMultiDimIdentityMap(rank, rewriter.getContext()),
                                   keptMap, keptMap};
    auto generic = rewriter.create<linalg::GenericOp>(
        loc, TypeRange{valueType, indexType}, input, ValueRange{values, indices},
        maps, iterators, [&](OpBuilder &b, Location nested, ValueRange args) {
          Value x = args[0], best = args[1], bestIndex = args[2];
          Value index = b.create<arith::IndexCastOp>(
              nested, b.getI64Type(), b.create<linalg::IndexOp>(nested, axis));
          auto [beats, ties] =
              compareForSelection(b, nested, x, best, isMax, /*nanWins=*/true);
          Value none = b.create<arith::CmpIOp>(
              nested, arith::CmpIPredicate::slt, bestIndex,
              scalarConstant(b, nested, b.getI64Type(), 0));
          Value tieWins = b.create<arith::CmpIOp>(
              nested, selectLast ? arith::CmpIPredicate::sgt : arith::CmpIPredicate::slt,
              index, bestIndex);
          Value take = b.create<arith::OrIOp>(
              nested, b.create<arith::OrIOp>(nested, none, beats),
              b.create<arith::AndIOp>(nested, ties, tieWins));
          b.create<linalg::YieldOp>(
              nested, ValueRange{b.create<arith::SelectOp>(nested, take, x, best),
                                 b.create<arith::SelectOp>(nested, take, index, bestIndex)});
        });
    Value result = generic.getResult(1);
    if (resultType.getRank() == indexType.getRank()) {
      rewriter.replaceOp(op, castTo(rewriter, loc, result, resultType));
      return success();
    }
    // keep_dims: the axis comes back as a size-1 dimension.
    SmallVector<OpFoldResult> keptSizes(inputSizes);
    keptSizes[axis] = rewriter.getIndexAttr(1);
    rewriter.replaceOp(op, reshapeTo(rewriter, loc, result, resultType, keptSizes));
    return success();
  }
};

/// Builds kiln ops that stand for a normalization or softmax.
class KilnBuilder {
public:
  KilnBuilder(OpBuilder &b, Location loc, Value input, ArrayRef<int64_t> axes)
      : b(b), loc(loc), axes(axes) {
    type = cast<RankedTensorType>(input.getType());
    SmallVector<int64_t> keptShape(type.getShape());
    for (int64_t axis : axes)
      keptShape[axis] = 1;
    keptType = RankedTensorType::get(keptShape, type.getElementType());
  }

  /// A reduction over the axes, keeping them as size-1 dimensions.
  template <typename ReduceOpTy> Value reduce(Value x) {
    return b.create<ReduceOpTy>(loc, keptType, x, b.getDenseI64ArrayAttr(axes),
                                b.getBoolAttr(true));
  }
  /// An elementwise binary op whose result has the input's type.
  template <typename OpTy> Value binary(Value lhs, Value rhs) {
    return b.create<OpTy>(loc, broadcastType(lhs, rhs), lhs, rhs);
  }
  template <typename OpTy> Value unary(Value x) {
    return b.create<OpTy>(loc, x.getType(), x);
  }
  Value scalar(double value) {
    auto scalarType = RankedTensorType::get({}, type.getElementType());
    auto attr = DenseElementsAttr::get(
        scalarType, b.getFloatAttr(type.getElementType(), value));
    return b.create<ConstantOp>(loc, scalarType, attr);
  }

private:
  Type broadcastType(Value lhs, Value rhs) {
    // Every broadcast here is of a kept-dims or scale tensor against the
    // input's own shape, except the kept-dims epsilon adds.
    auto lhsType = cast<RankedTensorType>(lhs.getType());
    auto rhsType = cast<RankedTensorType>(rhs.getType());
    if (lhsType == type || rhsType == type)
      return type;
    return lhsType.getRank() >= rhsType.getRank() ? lhsType : rhsType;
  }

  OpBuilder &b;
  Location loc;
  ArrayRef<int64_t> axes;
  RankedTensorType type, keptType;
};

SmallVector<int64_t> trailingAxes(Value input, int64_t axis) {
  int64_t rank = cast<RankedTensorType>(input.getType()).getRank();
  return llvm::to_vector(llvm::seq<int64_t>(axis, rank));
}

template <typename SoftmaxOpTy>
struct SoftmaxDecomposition : public OpConversionPattern<SoftmaxOpTy> {
  using OpConversionPattern<SoftmaxOpTy>::OpConversionPattern;
  using OpAdaptor = typename SoftmaxOpTy::Adaptor;

  LogicalResult
  matchAndRewrite(SoftmaxOpTy op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value x = adaptor.getInput();
    SmallVector<int64_t> axes = {static_cast<int64_t>(op.getAxis())};
    KilnBuilder k(rewriter, op.getLoc(), x, axes);
    // Subtracting the maximum keeps exp from overflowing.
    Value shifted = k.binary<SubOp>(x, k.reduce<ReduceMaxOp>(x));
    Value exp = k.unary<ExpOp>(shifted);
    Value sum = k.reduce<ReduceSumOp>(exp);
    if constexpr (std::is_same_v<SoftmaxOpTy, SoftmaxOp>)
      rewriter.replaceOp(op, k.binary<DivOp>(exp, sum));
    else
      rewriter.replaceOp(op, k.binary<SubOp>(shifted, k.unary<LogOp>(sum)));
    return success();
  }
};

struct LayerNormDecomposition : public OpConversionPattern<LayerNormOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(LayerNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value x = adaptor.getInput();
    SmallVector<int64_t> axes = trailingAxes(x, op.getAxis());
    KilnBuilder k(rewriter, op.getLoc(), x, axes);
    Value centered = k.binary<SubOp>(x, k.reduce<ReduceMeanOp>(x));
    Value variance = k.reduce<ReduceMeanOp>(k.binary<MulOp>(centered, centered));
    Value epsilon = k.scalar(op.getEpsilon().convertToDouble());
    Value inverse = k.unary<RsqrtOp>(k.binary<AddOp>(variance, epsilon));
    Value y = k.binary<MulOp>(k.binary<MulOp>(centered, inverse), adaptor.getScale());
    if (Value bias = adaptor.getBias())
      y = k.binary<AddOp>(y, bias);
    rewriter.replaceOp(op, y);
    return success();
  }
};

struct RmsNormDecomposition : public OpConversionPattern<RmsNormOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(RmsNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value x = adaptor.getInput();
    SmallVector<int64_t> axes = trailingAxes(x, op.getAxis());
    KilnBuilder k(rewriter, op.getLoc(), x, axes);
    Value meanSquare = k.reduce<ReduceMeanOp>(k.binary<MulOp>(x, x));
    Value epsilon = k.scalar(op.getEpsilon().convertToDouble());
    Value inverse = k.unary<RsqrtOp>(k.binary<AddOp>(meanSquare, epsilon));
    rewriter.replaceOp(
        op, k.binary<MulOp>(k.binary<MulOp>(x, inverse), adaptor.getScale()));
    return success();
  }
};

} // namespace

void populateReductionLoweringPatterns(RewritePatternSet &patterns) {
  patterns.add<ReduceLowering<ReduceSumOp>, ReduceLowering<ReduceMeanOp>,
               ReduceLowering<ReduceMaxOp>, ReduceLowering<ReduceMinOp>,
               ReduceLowering<ReduceProdOp>, SoftmaxDecomposition<SoftmaxOp>,
               SoftmaxDecomposition<LogSoftmaxOp>, LayerNormDecomposition,
               RmsNormDecomposition, ArgReduceLowering<ArgMaxOp>,
               ArgReduceLowering<ArgMinOp>>(patterns.getContext());
}

} // namespace kiln
