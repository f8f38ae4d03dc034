//===- LoopNests.cpp - Scatters and top_k as scf.for nests ----------------===//
//
// linalg.generic computes each element of its result from a fixed place in
// its operands. The scatters write to places their indices compute, and
// top_k's j-th pick depends on its (j-1)-th, so both become scf.for nests
// over tensors, carried as iteration arguments, which one-shot
// bufferization updates in place. The loops are scalar; these ops sit on
// indices, masks and cache updates, not on the model's hot path.
//
//===----------------------------------------------------------------------===//
#include "compiler/Conversion/KilnToLinalg/Patterns.h"
#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;

namespace kiln {
namespace {

using namespace lowering;

SmallVector<Value> indexValues(OpBuilder &b, Location loc,
                               ArrayRef<OpFoldResult> sizes) {
  SmallVector<Value> values;
  for (OpFoldResult size : sizes)
    values.push_back(getValueOrCreateConstantIndexOp(b, loc, size));
  return values;
}

/// A loop nest over `upperBounds` (from 0, step 1) that threads `iterArgs`.
scf::LoopNest loopNest(
    OpBuilder &b, Location loc, ValueRange upperBounds, ValueRange iterArgs,
    function_ref<scf::ValueVector(OpBuilder &, Location, ValueRange, ValueRange)>
        body) {
  IndexMath m{b, loc};
  SmallVector<Value> zeros(upperBounds.size(), m.c(0)), ones(upperBounds.size(), m.c(1));
  return scf::buildLoopNest(b, loc, zeros, upperBounds, ones, iterArgs, body);
}

/// What `update` makes of the element `current` it lands on.
Value combine(OpBuilder &b, Location loc, ScatterReduction reduction,
              Value current, Value update) {
  bool isFloat = isa<FloatType>(update.getType());
  switch (reduction) {
  case ScatterReduction::none:
    return update;
  case ScatterReduction::add:
    return isFloat ? b.create<arith::AddFOp>(loc, current, update).getResult()
                   : b.create<arith::AddIOp>(loc, current, update).getResult();
  case ScatterReduction::mul:
    return isFloat ? b.create<arith::MulFOp>(loc, current, update).getResult()
                   : b.create<arith::MulIOp>(loc, current, update).getResult();
  case ScatterReduction::max:
    return maxOf(b, loc, current, update);
  case ScatterReduction::min:
    return minOf(b, loc, current, update);
  }
  llvm_unreachable("unknown scatter reduction");
}

/// Writes `update` at `at` in `dest`, combined with what is there.
Value scatterOne(OpBuilder &b, Location loc, ScatterReduction reduction,
                 Value dest, ValueRange at, Value update) {
  if (reduction != ScatterReduction::none)
    update = combine(b, loc, reduction,
                     b.create<tensor::ExtractOp>(loc, dest, at), update);
  return b.create<tensor::InsertOp>(loc, update, dest, at);
}

/// One loop over the updates; each lands at its own coordinate with the
/// axis coordinate replaced by its index.
struct ScatterElementsLowering : public OpConversionPattern<ScatterElementsOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(ScatterElementsOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    IndexMath m{rewriter, loc};
    Value data = adaptor.getData(), indices = adaptor.getIndices(),
          updates = adaptor.getUpdates();
    int64_t axis = op.getAxis();
    SmallVector<OpFoldResult> dataSizes = sizesOf(rewriter, loc, data);
    SmallVector<OpFoldResult> sizes = sizesOf(rewriter, loc, updates);
    SmallVector<OpFoldResult> indexSizes = sizesOf(rewriter, loc, indices);
    for (auto [dim, size] : llvm::enumerate(sizes)) {
      checkSameSize(rewriter, loc, op, indexSizes[dim], size,
                    "dim " + Twine(dim) + " of the indices and the updates");
      if (static_cast<int64_t>(dim) != axis)
        check(rewriter, loc, op,
              m.le(getValueOrCreateConstantIndexOp(rewriter, loc, size),
                   getValueOrCreateConstantIndexOp(rewriter, loc, dataSizes[dim])),
              "updates dim " + Twine(dim) + " exceeds the data's");
    }
    Value axisSize = getValueOrCreateConstantIndexOp(rewriter, loc, dataSizes[axis]);
    ScatterReduction reduction = op.getReduction();
    scf::LoopNest nest = loopNest(
        rewriter, loc, indexValues(rewriter, loc, sizes), ValueRange{data},
        [&](OpBuilder &b, Location nested, ValueRange ivs, ValueRange iter) {
          Value raw = b.create<tensor::ExtractOp>(nested, indices, ivs);
          SmallVector<Value> at(ivs);
          at[axis] = checkedIndex(b, nested, op, raw, axisSize, axis);
          Value update = b.create<tensor::ExtractOp>(nested, updates, ivs);
          return scf::ValueVector{scatterOne(b, nested, reduction, iter[0], at, update)};
        });
    rewriter.replaceOp(op, nest.results);
    return success();
  }
};

/// One loop over the updates' elements: the leading loops pick the index
/// tuple, the trailing ones walk the slice it names.
struct ScatterNdLowering : public OpConversionPattern<ScatterNdOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(ScatterNdOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value data = adaptor.getData(), indices = adaptor.getIndices(),
          updates = adaptor.getUpdates();
    auto indicesType = cast<RankedTensorType>(indices.getType());
    int64_t tuple = indicesType.getShape().back();
    int64_t outer = indicesType.getRank() - 1;
    SmallVector<OpFoldResult> dataSizes = sizesOf(rewriter, loc, data);
    SmallVector<OpFoldResult> indexSizes = sizesOf(rewriter, loc, indices);
    SmallVector<OpFoldResult> sizes = sizesOf(rewriter, loc, updates);
    for (int64_t dim = 0; dim < static_cast<int64_t>(sizes.size()); ++dim)
      checkSameSize(rewriter, loc, op, sizes[dim],
                    dim < outer ? indexSizes[dim] : dataSizes[tuple + dim - outer],
                    "updates dim " + Twine(dim));
    SmallVector<Value> tupleSizes;
    for (int64_t i = 0; i < tuple; ++i)
      tupleSizes.push_back(getValueOrCreateConstantIndexOp(rewriter, loc, dataSizes[i]));
    ScatterReduction reduction = op.getReduction();
    scf::LoopNest nest = loopNest(
        rewriter, loc, indexValues(rewriter, loc, sizes), ValueRange{data},
        [&](OpBuilder &b, Location nested, ValueRange ivs, ValueRange iter) {
          IndexMath n{b, nested};
          SmallVector<Value> indexAt(ivs.take_front(outer));
          indexAt.push_back(Value());
          SmallVector<Value> at;
          for (int64_t i = 0; i < tuple; ++i) {
            indexAt.back() = n.c(i);
            Value raw = b.create<tensor::ExtractOp>(nested, indices, indexAt);
            at.push_back(checkedIndex(b, nested, op, raw, tupleSizes[i], i));
          }
          at.append(ivs.begin() + outer, ivs.end());
          Value update = b.create<tensor::ExtractOp>(nested, updates, ivs);
          return scf::ValueVector{scatterOne(b, nested, reduction, iter[0], at, update)};
        });
    rewriter.replaceOp(op, nest.results);
    return success();
  }
};

/// For each row along the axis, k scans: the j-th pick is the best element
/// that ranks after the (j-1)-th in the order (value best first, then lower
/// index first), which needs no record of what was picked. O(k * n) per
/// row, with no sort and no scratch memory.
struct TopKLowering : public OpConversionPattern<TopKOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(TopKOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    IndexMath m{rewriter, loc};
    Value input = adaptor.getInput();
    auto valuesType = cast<RankedTensorType>(op.getValues().getType());
    auto indicesType = cast<RankedTensorType>(op.getIndices().getType());
    Type element = valuesType.getElementType();
    int64_t axis = op.getAxis();
    bool largest = op.getLargest();
    SmallVector<OpFoldResult> inputSizes = sizesOf(rewriter, loc, input);
    Value length = getValueOrCreateConstantIndexOp(rewriter, loc, inputSizes[axis]);
    Value k = shapeEntry(rewriter, loc, op.getK(), 0);
    check(rewriter, loc, op,
          rewriter.create<arith::AndIOp>(loc, m.le(m.c(0), k), m.le(k, length)),
          "k is negative or exceeds the axis size");
    SmallVector<OpFoldResult> sizes(inputSizes);
    sizes[axis] = k;
    checkResultSizes(rewriter, loc, op, valuesType, sizes, "the values");
    Value values = emptyTensor(rewriter, loc, valuesType, sizes);
    Value indices = emptyTensor(rewriter, loc, indicesType, sizes);

    // The loops over every dim but the axis.
    SmallVector<OpFoldResult> rowSizes(inputSizes);
    rowSizes[axis] = rewriter.getIndexAttr(1);
    scf::LoopNest rows = loopNest(
        rewriter, loc, indexValues(rewriter, loc, rowSizes), ValueRange{values, indices},
        [&](OpBuilder &b, Location nested, ValueRange row, ValueRange results) {
          IndexMath n{b, nested};
          SmallVector<Value> at(row);
          auto readAt = [&](OpBuilder &inner, Location l, Value position) {
            at[axis] = position;
            return inner.create<tensor::ExtractOp>(l, input, at).getResult();
          };
          Value zeroValue = scalarConstant(b, nested, element, 0);
          // Picks: carry the results and the previous pick (value, index).
          auto picks = b.create<scf::ForOp>(
              nested, n.c(0), k, n.c(1),
              ValueRange{results[0], results[1], zeroValue, n.c(-1)},
              [&](OpBuilder &pb, Location pl, Value j, ValueRange picked) {
                IndexMath p{pb, pl};
                Value previous = picked[2], previousIndex = picked[3];
                Value first = p.eq(j, p.c(0));
                // The scan: carry the best candidate so far (value, index).
                auto scan = pb.create<scf::ForOp>(
                    pl, p.c(0), length, p.c(1), ValueRange{zeroValue, p.c(-1)},
                    [&](OpBuilder &sb, Location sl, Value position, ValueRange best) {
                      IndexMath s{sb, sl};
                      Value x = readAt(sb, sl, position);
                      // Whether x ranks after the previous pick.
                      auto [previousBeats, previousTies] =
                          compareForSelection(sb, sl, previous, x, largest, largest);
                      Value after = sb.create<arith::OrIOp>(
                          sl, first,
                          sb.create<arith::OrIOp>(
                              sl, previousBeats,
                              sb.create<arith::AndIOp>(sl, previousTies,
                                                       s.lt(previousIndex, position))));
                      // Whether x ranks before the best candidate so far.
                      auto [beats, ties] =
                          compareForSelection(sb, sl, x, best[0], largest, largest);
                      Value none = s.lt(best[1], s.c(0));
                      Value better = sb.create<arith::OrIOp>(
                          sl, none,
                          sb.create<arith::OrIOp>(
                              sl, beats,
                              sb.create<arith::AndIOp>(sl, ties, s.lt(position, best[1]))));
                      Value take = sb.create<arith::AndIOp>(sl, after, better);
                      sb.create<scf::YieldOp>(
                          sl, ValueRange{s.select(take, x, best[0]),
                                         s.select(take, position, best[1])});
                    });
                Value value = scan.getResult(0), index = scan.getResult(1);
                SmallVector<Value> outAt(row);
                outAt[axis] = j;
                Value index64 = pb.create<arith::IndexCastOp>(pl, pb.getI64Type(), index);
                Value newValues = pb.create<tensor::InsertOp>(pl, value, picked[0], outAt);
                Value newIndices = pb.create<tensor::InsertOp>(pl, index64, picked[1], outAt);
                pb.create<scf::YieldOp>(pl, ValueRange{newValues, newIndices, value, index});
              });
          return scf::ValueVector{picks.getResult(0), picks.getResult(1)};
        });
    rewriter.replaceOp(op, rows.results);
    return success();
  }
};

} // namespace

void populateLoopNestLoweringPatterns(RewritePatternSet &patterns) {
  patterns.add<ScatterElementsLowering, ScatterNdLowering, TopKLowering>(
      patterns.getContext());
}

} // namespace kiln
