//===- DataMovement.cpp - Shape and data movement ops to tensor/linalg ----===//
//
// Views (reshape, squeeze, unsqueeze, split, unit-stride slices) become tensor
// ops that bufferization turns into views; copies with index arithmetic
// (gather, pad, tile, strided slices, trilu, range) become linalg.generics whose
// bodies compute source indices with linalg.index and read with tensor.extract.
//
//===----------------------------------------------------------------------===//
#include "compiler/Conversion/KilnToLinalg/Patterns.h"
#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;

namespace kiln {
namespace {

using namespace lowering;

Value indexValue(OpBuilder &b, Location loc, OpFoldResult size) {
  return getValueOrCreateConstantIndexOp(b, loc, size);
}

/// A linalg.generic over `resultType` (sizes `sizes`) whose body computes each
/// element from the result indices.
Value generate(OpBuilder &b, Location loc, RankedTensorType resultType,
               ArrayRef<OpFoldResult> sizes,
               function_ref<Value(OpBuilder &, Location, ArrayRef<Value>)> body) {
  int64_t rank = resultType.getRank();
  SmallVector<AffineMap> maps = {
      AffineMap::getMultiDimIdentityMap(rank, b.getContext())};
  SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::parallel);
  return b
      .create<linalg::GenericOp>(
          loc, resultType, ValueRange{}, emptyTensor(b, loc, resultType, sizes),
          maps, iterators,
          [&](OpBuilder &nested, Location nestedLoc, ValueRange) {
            SmallVector<Value> indices;
            for (int64_t dim = 0; dim < rank; ++dim)
              indices.push_back(nested.create<linalg::IndexOp>(nestedLoc, dim));
            nested.create<linalg::YieldOp>(nestedLoc,
                                           body(nested, nestedLoc, indices));
          })
      .getResult(0);
}

Value extractSlice(OpBuilder &b, Location loc, Value source,
                   ArrayRef<OpFoldResult> offsets, ArrayRef<OpFoldResult> sizes,
                   ArrayRef<OpFoldResult> strides, RankedTensorType resultType) {
  Value slice =
      b.create<tensor::ExtractSliceOp>(loc, source, offsets, sizes, strides);
  return castTo(b, loc, slice, resultType);
}

struct ReshapeLowering : public OpConversionPattern<ReshapeOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(ReshapeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    IndexMath m{rewriter, loc};
    Value input = adaptor.getInput();
    auto resultType = cast<RankedTensorType>(op.getType());
    SmallVector<OpFoldResult> inputSizes = sizesOf(rewriter, loc, input);
    int64_t rank = resultType.getRank();
    // ONNX rules: 0 copies the input's size at that index (an empty dim
    // with allow_zero), -1 is inferred.
    SmallVector<Value> requested(rank), resolved(rank);
    Value known = m.c(1);
    for (int64_t dim = 0; dim < rank; ++dim) {
      if (!resultType.isDynamicDim(dim)) {
        resolved[dim] = m.c(resultType.getDimSize(dim));
        known = m.mul(known, resolved[dim]);
        continue;
      }
      requested[dim] = shapeEntry(rewriter, loc, op.getShape(), dim);
      Value copied = dim < (int64_t)inputSizes.size()
                         ? indexValue(rewriter, loc, inputSizes[dim])
                         : requested[dim];
      resolved[dim] = op.getAllowZero()
                          ? requested[dim]
                          : m.select(m.eq(requested[dim], m.c(0)), copied, requested[dim]);
      known = m.mul(known, m.select(m.eq(requested[dim], m.c(-1)), m.c(1),
                                    resolved[dim]));
    }
    Value total = m.c(1);
    for (OpFoldResult size : inputSizes)
      total = m.mul(total, indexValue(rewriter, loc, size));
    Value inferred = rewriter.create<arith::DivSIOp>(loc, total, m.nonZero(known));
    if (!resultType.hasStaticShape() || !cast<RankedTensorType>(input.getType()).hasStaticShape()) {
      // The requested shape must keep the element count.
      Value count = m.c(1);
      for (int64_t dim = 0; dim < rank; ++dim)
        count = m.mul(count, resultType.isDynamicDim(dim)
                                 ? m.select(m.eq(requested[dim], m.c(-1)), inferred,
                                            resolved[dim])
                                 : resolved[dim]);
      check(rewriter, loc, op, m.eq(count, total),
            "the requested shape does not hold the input's element count");
      for (int64_t dim = 0; dim < rank; ++dim)
        if (resultType.isDynamicDim(dim))
          check(rewriter, loc, op, m.lt(m.c(-2), requested[dim]),
                "requested size " + Twine(dim) + " is negative (only -1 may be)");
    }
    SmallVector<OpFoldResult> sizes;
    for (int64_t dim = 0; dim < rank; ++dim) {
      if (!resultType.isDynamicDim(dim))
        sizes.push_back(rewriter.getIndexAttr(resultType.getDimSize(dim)));
      else
        sizes.push_back(m.select(m.eq(requested[dim], m.c(-1)), inferred,
                                 resolved[dim]));
    }
    rewriter.replaceOp(op, reshapeTo(rewriter, loc, input, resultType, sizes));
    return success();
  }
};

struct SqueezeLowering : public OpConversionPattern<SqueezeOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(SqueezeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    SmallVector<OpFoldResult> sizes;
    for (auto [dim, size] :
         llvm::enumerate(sizesOf(rewriter, op.getLoc(), adaptor.getInput()))) {
      if (!llvm::is_contained(op.getAxes(), (int64_t)dim))
        sizes.push_back(size);
      else
        checkSameSize(rewriter, op.getLoc(), op, size, rewriter.getIndexAttr(1),
                      "squeezed dim " + Twine(dim) + " is not 1");
    }
    rewriter.replaceOp(op, reshapeTo(rewriter, op.getLoc(), adaptor.getInput(),
                                     op.getType(), sizes));
    return success();
  }
};

struct UnsqueezeLowering : public OpConversionPattern<UnsqueezeOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(UnsqueezeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    SmallVector<OpFoldResult> inputSizes =
        sizesOf(rewriter, op.getLoc(), adaptor.getInput());
    SmallVector<OpFoldResult> sizes;
    auto next = inputSizes.begin();
    for (int64_t dim = 0; dim < op.getType().getRank(); ++dim)
      sizes.push_back(llvm::is_contained(op.getAxes(), dim)
                          ? rewriter.getIndexAttr(1)
                          : *next++);
    rewriter.replaceOp(op, reshapeTo(rewriter, op.getLoc(), adaptor.getInput(),
                                     op.getType(), sizes));
    return success();
  }
};

struct TransposeLowering : public OpConversionPattern<TransposeOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(TransposeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    SmallVector<OpFoldResult> inputSizes = sizesOf(rewriter, loc, adaptor.getInput());
    SmallVector<OpFoldResult> sizes;
    SmallVector<int64_t> shape;
    auto inputType = cast<RankedTensorType>(adaptor.getInput().getType());
    for (int64_t source : op.getPermutation()) {
      sizes.push_back(inputSizes[source]);
      shape.push_back(inputType.getDimSize(source));
    }
    checkResultSizes(rewriter, loc, op, op.getType(), sizes);
    auto permutedType = RankedTensorType::get(shape, inputType.getElementType());
    Value init = emptyTensor(rewriter, loc, permutedType, sizes);
    Value transposed = rewriter
                           .create<linalg::TransposeOp>(loc, adaptor.getInput(),
                                                        init, op.getPermutation())
                           .getResult()[0];
    rewriter.replaceOp(op, castTo(rewriter, loc, transposed, op.getType()));
    return success();
  }
};

struct ConcatLowering : public OpConversionPattern<ConcatOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(ConcatOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    IndexMath m{rewriter, loc};
    int64_t axis = op.getAxis();
    ValueRange inputs = adaptor.getInputs();
    SmallVector<OpFoldResult> sizes = sizesOf(rewriter, loc, inputs.front());
    SmallVector<Value> offsets = {m.c(0)};
    for (Value input : inputs)
      offsets.push_back(m.add(
          offsets.back(), rewriter.create<tensor::DimOp>(loc, input, axis)));
    sizes[axis] = offsets.back();
    checkResultSizes(rewriter, loc, op, op.getType(), sizes);
    // One input is the result. Inserting it into a fresh tensor of its own
    // sizes would let CSE merge that tensor with the input's own init, which
    // empty-tensor elimination then turns into a slice of itself.
    if (inputs.size() == 1) {
      rewriter.replaceOp(op, castTo(rewriter, loc, inputs.front(), op.getType()));
      return success();
    }
    Value result = emptyTensor(rewriter, loc, op.getType(), sizes);
    for (auto [index, input] : llvm::enumerate(inputs)) {
      SmallVector<OpFoldResult> inputSizes = sizesOf(rewriter, loc, input);
      for (int64_t dim = 0; dim < (int64_t)sizes.size(); ++dim)
        if (dim != axis)
          checkSameSize(rewriter, loc, op, inputSizes[dim], sizes[dim],
                        "input " + Twine(index) + " dim " + Twine(dim) +
                            " does not match input 0");
      SmallVector<OpFoldResult> at(sizes.size(), rewriter.getIndexAttr(0));
      at[axis] = offsets[index];
      SmallVector<OpFoldResult> strides(sizes.size(), rewriter.getIndexAttr(1));
      result = rewriter.create<tensor::InsertSliceOp>(loc, input, result, at,
                                                      inputSizes, strides);
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// kiln.split as one extract_slice per result. Computed sizes are read from
/// their operand, each checked non-negative and against what the result
/// type says, and their sum against the axis.
struct SplitLowering : public OpConversionPattern<SplitOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(SplitOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    IndexMath m{rewriter, loc};
    int64_t axis = op.getAxis();
    SmallVector<OpFoldResult> sizes = sizesOf(rewriter, loc, adaptor.getInput());
    SmallVector<OpFoldResult> offsets(sizes.size(), rewriter.getIndexAttr(0));
    SmallVector<OpFoldResult> strides(sizes.size(), rewriter.getIndexAttr(1));
    SmallVector<OpFoldResult> parts;
    for (auto [i, size] : llvm::enumerate(op.getSizes())) {
      if (!op.getSplitSizes()) {
        parts.push_back(rewriter.getIndexAttr(size));
        continue;
      }
      Value part = shapeEntry(rewriter, loc, op.getSplitSizes(), i);
      check(rewriter, loc, op, m.le(m.c(0), part),
            "split size " + Twine(i) + " is negative");
      parts.push_back(part);
    }
    OpFoldResult total = rewriter.getIndexAttr(0);
    for (OpFoldResult part : parts)
      total = m.foldedAdd(total, part);
    checkSameSize(rewriter, loc, op, sizes[axis], total,
                  "the split sizes do not add up to dim " + Twine(axis));
    SmallVector<Value> results;
    for (auto [i, result] : llvm::enumerate(op.getResults())) {
      if (i > 0)
        offsets[axis] = m.foldedAdd(offsets[axis], parts[i - 1]);
      sizes[axis] = parts[i];
      checkResultSizes(rewriter, loc, op, cast<RankedTensorType>(result.getType()),
                       sizes, "result " + Twine(results.size()));
      results.push_back(extractSlice(rewriter, loc, adaptor.getInput(), offsets,
                                     sizes, strides,
                                     cast<RankedTensorType>(result.getType())));
    }
    rewriter.replaceOp(op, results);
    return success();
  }
};

struct SliceLowering : public OpConversionPattern<SliceOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(SliceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    IndexMath m{rewriter, loc};
    Value input = adaptor.getInput();
    auto resultType = cast<RankedTensorType>(op.getType());
    SmallVector<OpFoldResult> sizes = sizesOf(rewriter, loc, input);
    int64_t rank = sizes.size();
    SmallVector<OpFoldResult> offsets(rank, rewriter.getIndexAttr(0));
    SmallVector<OpFoldResult> strides(rank, rewriter.getIndexAttr(1));
    DenseIntElementsAttr constantSteps;
    bool positiveSteps =
        matchPattern(adaptor.getSteps(), m_Constant(&constantSteps)) &&
        llvm::all_of(constantSteps.getValues<APInt>(),
                     [](const APInt &step) { return step.isStrictlyPositive(); });
    for (auto [i, axis] : llvm::enumerate(op.getAxes())) {
      Value size = indexValue(rewriter, loc, sizes[axis]);
      Value start = m.wrapNegative(shapeEntry(rewriter, loc, op.getStarts(), i), size);
      Value end = m.wrapNegative(shapeEntry(rewriter, loc, op.getEnds(), i), size);
      Value step = m.nonZero(shapeEntry(rewriter, loc, op.getSteps(), i));
      // Forward: clamp both into [0, size]. Backward: start into
      // [0, size - 1] and end into [-1, size - 1].
      Value forwardStart = m.clamp(start, m.c(0), size);
      Value forwardEnd = m.clamp(end, m.c(0), size);
      Value forwardCount =
          m.max(m.c(0), m.ceilDiv(m.sub(forwardEnd, forwardStart), step));
      if (positiveSteps) {
        offsets[axis] = forwardStart;
        sizes[axis] = forwardCount;
        strides[axis] = rewriter.getIndexAttr(
            constantSteps.getValues<APInt>()[i].getSExtValue());
        continue;
      }
      Value last = m.sub(size, m.c(1));
      Value backwardStart = m.clamp(start, m.c(0), last);
      Value backwardEnd = m.clamp(end, m.c(-1), last);
      Value backwardCount = m.max(
          m.c(0), m.ceilDiv(m.sub(backwardStart, backwardEnd), m.sub(m.c(0), step)));
      Value forward = m.lt(m.c(0), step);
      offsets[axis] = m.select(forward, forwardStart, backwardStart);
      sizes[axis] = m.select(forward, forwardCount, backwardCount);
      strides[axis] = step;
    }
    checkResultSizes(rewriter, loc, op, resultType, sizes);
    if (positiveSteps) {
      rewriter.replaceOp(op, extractSlice(rewriter, loc, input, offsets, sizes,
                                          strides, resultType));
      return success();
    }
    // Negative steps: read each element from offset + index * step.
    Value result = generate(
        rewriter, loc, resultType, sizes,
        [&](OpBuilder &b, Location nestedLoc, ArrayRef<Value> indices) -> Value {
          IndexMath n{b, nestedLoc};
          SmallVector<Value> source;
          for (int64_t dim = 0; dim < rank; ++dim)
            source.push_back(n.add(indexValue(b, nestedLoc, offsets[dim]),
                                   n.mul(indices[dim],
                                         indexValue(b, nestedLoc, strides[dim]))));
          return b.create<tensor::ExtractOp>(nestedLoc, input, source);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct GatherLowering : public OpConversionPattern<GatherOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(GatherOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value data = adaptor.getData(), indices = adaptor.getIndices();
    auto resultType = cast<RankedTensorType>(op.getType());
    int64_t axis = op.getAxis();
    int64_t indexRank = cast<RankedTensorType>(indices.getType()).getRank();
    int64_t rank = resultType.getRank();
    SmallVector<OpFoldResult> dataSizes = sizesOf(rewriter, loc, data);
    SmallVector<OpFoldResult> indexSizes = sizesOf(rewriter, loc, indices);
    SmallVector<OpFoldResult> sizes(dataSizes.begin(), dataSizes.begin() + axis);
    sizes.append(indexSizes);
    sizes.append(dataSizes.begin() + axis + 1, dataSizes.end());
    Value axisSize = indexValue(rewriter, loc, dataSizes[axis]);
    checkResultSizes(rewriter, loc, op, resultType, sizes);

    SmallVector<AffineExpr> indexExprs;
    for (int64_t dim = 0; dim < indexRank; ++dim)
      indexExprs.push_back(rewriter.getAffineDimExpr(axis + dim));
    SmallVector<AffineMap> maps = {
        AffineMap::get(rank, 0, indexExprs, getContext()),
        AffineMap::getMultiDimIdentityMap(rank, getContext())};
    SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::parallel);
    auto generic = rewriter.create<linalg::GenericOp>(
        loc, resultType, indices, emptyTensor(rewriter, loc, resultType, sizes),
        maps, iterators, [&](OpBuilder &b, Location nestedLoc, ValueRange args) {
          Value index = checkedIndex(b, nestedLoc, op, args[0], axisSize, axis);
          SmallVector<Value> source;
          for (int64_t dim = 0; dim < axis; ++dim)
            source.push_back(b.create<linalg::IndexOp>(nestedLoc, dim));
          source.push_back(index);
          for (int64_t dim = axis + indexRank; dim < rank; ++dim)
            source.push_back(b.create<linalg::IndexOp>(nestedLoc, dim));
          b.create<linalg::YieldOp>(
              nestedLoc, b.create<tensor::ExtractOp>(nestedLoc, data, source)
                             .getResult());
        });
    rewriter.replaceOp(op, generic.getResults());
    return success();
  }
};

struct GatherElementsLowering : public OpConversionPattern<GatherElementsOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(GatherElementsOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    IndexMath m{rewriter, loc};
    Value data = adaptor.getData(), indices = adaptor.getIndices();
    auto resultType = cast<RankedTensorType>(op.getType());
    int64_t axis = op.getAxis();
    int64_t rank = resultType.getRank();
    SmallVector<OpFoldResult> dataSizes = sizesOf(rewriter, loc, data);
    SmallVector<OpFoldResult> sizes = sizesOf(rewriter, loc, indices);
    checkResultSizes(rewriter, loc, op, resultType, sizes);
    // Off the axis, an element reads the data at its own coordinate.
    for (int64_t dim = 0; dim < rank; ++dim)
      if (dim != axis)
        check(rewriter, loc, op,
              m.le(indexValue(rewriter, loc, sizes[dim]),
                   indexValue(rewriter, loc, dataSizes[dim])),
              "indices dim " + Twine(dim) + " exceeds the data's");
    Value axisSize = indexValue(rewriter, loc, dataSizes[axis]);
    AffineMap identity = AffineMap::getMultiDimIdentityMap(rank, getContext());
    SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::parallel);
    auto generic = rewriter.create<linalg::GenericOp>(
        loc, resultType, indices, emptyTensor(rewriter, loc, resultType, sizes),
        SmallVector<AffineMap>{identity, identity}, iterators,
        [&](OpBuilder &b, Location nestedLoc, ValueRange args) {
          SmallVector<Value> source;
          for (int64_t dim = 0; dim < rank; ++dim)
            source.push_back(dim == axis ? checkedIndex(b, nestedLoc, op, args[0],
                                                        axisSize, axis)
                                         : b.create<linalg::IndexOp>(nestedLoc, dim));
          b.create<linalg::YieldOp>(
              nestedLoc, b.create<tensor::ExtractOp>(nestedLoc, data, source)
                             .getResult());
        });
    rewriter.replaceOp(op, generic.getResults());
    return success();
  }
};

struct GatherNdLowering : public OpConversionPattern<GatherNdOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(GatherNdOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value data = adaptor.getData(), indices = adaptor.getIndices();
    auto resultType = cast<RankedTensorType>(op.getType());
    auto indicesType = cast<RankedTensorType>(indices.getType());
    int64_t batchDims = op.getBatchDims();
    int64_t tuple = indicesType.getShape().back();
    int64_t outer = indicesType.getRank() - 1;
    SmallVector<OpFoldResult> dataSizes = sizesOf(rewriter, loc, data);
    SmallVector<OpFoldResult> indexSizes = sizesOf(rewriter, loc, indices);
    for (int64_t dim = 0; dim < batchDims; ++dim)
      checkSameSize(rewriter, loc, op, indexSizes[dim], dataSizes[dim],
                    "batch dim " + Twine(dim) + " of the indices and the data");
    SmallVector<OpFoldResult> sizes(indexSizes.begin(), indexSizes.end() - 1);
    sizes.append(dataSizes.begin() + batchDims + tuple, dataSizes.end());
    checkResultSizes(rewriter, loc, op, resultType, sizes);
    SmallVector<Value> tupleSizes;
    for (int64_t i = 0; i < tuple; ++i)
      tupleSizes.push_back(indexValue(rewriter, loc, dataSizes[batchDims + i]));
    Value result = generate(
        rewriter, loc, resultType, sizes,
        [&](OpBuilder &b, Location nestedLoc, ArrayRef<Value> at) -> Value {
          IndexMath n{b, nestedLoc};
          SmallVector<Value> source(at.begin(), at.begin() + batchDims);
          SmallVector<Value> indexAt(at.begin(), at.begin() + outer);
          indexAt.push_back(Value());
          for (int64_t i = 0; i < tuple; ++i) {
            indexAt.back() = n.c(i);
            Value raw = b.create<tensor::ExtractOp>(nestedLoc, indices, indexAt);
            source.push_back(checkedIndex(b, nestedLoc, op, raw, tupleSizes[i],
                                          batchDims + i));
          }
          source.append(at.begin() + outer, at.end());
          return b.create<tensor::ExtractOp>(nestedLoc, data, source);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// Each running sum as a reduction over the whole axis that adds only the
/// elements on the summed side of the position: O(n^2) along the axis, but
/// one linalg.generic that bufferizes and vectorizes like any reduction.
/// Exporters use CumSum on masks and positions, where the axis is the
/// sequence.
struct CumSumLowering : public OpConversionPattern<CumSumOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(CumSumOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value input = adaptor.getInput();
    auto type = cast<RankedTensorType>(op.getType());
    Type element = type.getElementType();
    int64_t rank = type.getRank(), axis = op.getAxis();
    bool exclusive = op.getExclusive(), reverse = op.getReverse();
    // Loop dims 0..rank-1 are the result's; dim `rank` runs over the axis.
    SmallVector<AffineExpr> inputExprs;
    for (int64_t dim = 0; dim < rank; ++dim)
      inputExprs.push_back(rewriter.getAffineDimExpr(dim == axis ? rank : dim));
    SmallVector<AffineMap> maps = {
        AffineMap::get(rank + 1, 0, inputExprs, getContext()),
        AffineMap::getMultiDimIdentityMap(rank + 1, getContext()).getMajorSubMap(rank)};
    SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::parallel);
    iterators.push_back(utils::IteratorType::reduction);
    Value zero = scalarConstant(rewriter, loc, element, 0);
    Value init = rewriter
                     .create<linalg::FillOp>(
                         loc, zero,
                         emptyTensor(rewriter, loc, type, sizesOf(rewriter, loc, input)))
                     .getResult(0);
    // forward: k <= j; exclusive: k < j; reverse: k >= j; both: k > j.
    arith::CmpIPredicate summed =
        reverse ? (exclusive ? arith::CmpIPredicate::sgt : arith::CmpIPredicate::sge)
                : (exclusive ? arith::CmpIPredicate::slt : arith::CmpIPredicate::sle);
    auto generic = rewriter.create<linalg::GenericOp>(
        loc, type, input, init, maps, iterators,
        [&](OpBuilder &b, Location nestedLoc, ValueRange args) {
          Value position = b.create<linalg::IndexOp>(nestedLoc, axis);
          Value k = b.create<linalg::IndexOp>(nestedLoc, rank);
          Value take = b.create<arith::CmpIOp>(nestedLoc, summed, k, position);
          Value term = b.create<arith::SelectOp>(nestedLoc, take, args[0], zero);
          Value sum = isa<FloatType>(element)
                          ? b.create<arith::AddFOp>(nestedLoc, args[1], term).getResult()
                          : b.create<arith::AddIOp>(nestedLoc, args[1], term).getResult();
          b.create<linalg::YieldOp>(nestedLoc, sum);
        });
    rewriter.replaceOp(op, generic.getResults());
    return success();
  }
};

struct ExpandLowering : public OpConversionPattern<ExpandOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(ExpandOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    IndexMath m{rewriter, loc};
    Value input = adaptor.getInput();
    auto resultType = cast<RankedTensorType>(op.getType());
    int64_t rank = resultType.getRank();
    int64_t shapeLength =
        cast<RankedTensorType>(adaptor.getShape().getType()).getDimSize(0);
    SmallVector<OpFoldResult> inputSizes = sizesOf(rewriter, loc, input);
    int64_t inputOffset = rank - inputSizes.size();
    SmallVector<OpFoldResult> sizes;
    for (int64_t dim = 0; dim < rank; ++dim) {
      if (!resultType.isDynamicDim(dim)) {
        sizes.push_back(rewriter.getIndexAttr(resultType.getDimSize(dim)));
        continue;
      }
      Value inputSize = dim >= inputOffset
                            ? indexValue(rewriter, loc, inputSizes[dim - inputOffset])
                            : m.c(1);
      int64_t shapeIndex = dim - (rank - shapeLength);
      if (shapeIndex < 0) {
        sizes.push_back(inputSize);
        continue;
      }
      // A 1 in the shape keeps the input's size.
      Value requested = shapeEntry(rewriter, loc, op.getShape(), shapeIndex);
      check(rewriter, loc, op, m.lt(m.c(-1), requested),
            "requested size " + Twine(shapeIndex) + " is negative");
      sizes.push_back(m.select(m.eq(requested, m.c(1)), inputSize, requested));
    }
    rewriter.replaceOp(op, broadcastTo(rewriter, loc, op, 0, input, resultType, sizes));
    return success();
  }
};

/// Each result element reads the input at its coordinate less the begin
/// pads, mapped back into range by the mode; in constant mode an element
/// outside reads nothing (the input may be empty) and takes the value.
struct PadLowering : public OpConversionPattern<PadOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(PadOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    IndexMath m{rewriter, loc};
    Value input = adaptor.getInput();
    auto resultType = cast<RankedTensorType>(op.getType());
    int64_t rank = resultType.getRank();
    PadMode mode = op.getMode();
    SmallVector<Value> begins, inputDims;
    SmallVector<OpFoldResult> sizes;
    for (auto [dim, size] : llvm::enumerate(sizesOf(rewriter, loc, input))) {
      Value begin = shapeEntry(rewriter, loc, op.getPads(), dim);
      Value end = shapeEntry(rewriter, loc, op.getPads(), rank + dim);
      Value inputDim = indexValue(rewriter, loc, size);
      Value padded = m.add(m.add(begin, inputDim), end);
      check(rewriter, loc, op, m.le(m.c(0), padded),
            "the pads of dim " + Twine(dim) + " crop more than it holds");
      if (mode == PadMode::reflect)
        check(rewriter, loc, op,
              rewriter.create<arith::AndIOp>(loc, m.lt(begin, inputDim),
                                             m.lt(end, inputDim)),
              "a reflected pad of dim " + Twine(dim) + " must be shorter than it");
      else if (mode != PadMode::constant)
        check(rewriter, loc, op,
              rewriter.create<arith::OrIOp>(loc, m.lt(m.c(0), inputDim),
                                            m.eq(padded, m.c(0))),
              "dim " + Twine(dim) + " is empty and has nothing to repeat");
      begins.push_back(begin);
      inputDims.push_back(inputDim);
      sizes.push_back(padded);
    }
    checkResultSizes(rewriter, loc, op, resultType, sizes);
    Value fill = adaptor.getValue()
                     ? rewriter.create<tensor::ExtractOp>(loc, adaptor.getValue(),
                                                          ValueRange{})
                           .getResult()
                     : scalarConstant(rewriter, loc, resultType.getElementType(), 0);
    Value result = generate(
        rewriter, loc, resultType, sizes,
        [&](OpBuilder &b, Location nested, ArrayRef<Value> at) -> Value {
          IndexMath n{b, nested};
          SmallVector<Value> source;
          Value inside;
          for (int64_t dim = 0; dim < rank; ++dim) {
            Value size = inputDims[dim];
            Value from = n.sub(at[dim], begins[dim]);
            switch (mode) {
            case PadMode::constant: {
              Value in = b.create<arith::AndIOp>(nested, n.le(n.c(0), from),
                                                 n.lt(from, size));
              inside = inside ? b.create<arith::AndIOp>(nested, inside, in) : in;
              break;
            }
            case PadMode::edge:
              from = n.clamp(from, n.c(0), n.sub(size, n.c(1)));
              break;
            case PadMode::reflect: {
              // Mirrored about the first and last elements, which are not
              // repeated: -1 reads 1, size reads size - 2.
              Value last = n.sub(size, n.c(1));
              from = n.select(n.lt(from, n.c(0)), n.sub(n.c(0), from), from);
              from = n.select(n.lt(last, from), n.sub(n.add(last, last), from), from);
              break;
            }
            case PadMode::wrap:
              from = n.floorMod(from, size);
              break;
            }
            source.push_back(from);
          }
          if (!inside)
            return b.create<tensor::ExtractOp>(nested, input, source);
          auto branch = b.create<scf::IfOp>(
              nested, inside,
              [&](OpBuilder &tb, Location tl) {
                tb.create<scf::YieldOp>(
                    tl, tb.create<tensor::ExtractOp>(tl, input, source).getResult());
              },
              [&](OpBuilder &eb, Location el) { eb.create<scf::YieldOp>(el, fill); });
          return branch.getResult(0);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct TileLowering : public OpConversionPattern<TileOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(TileOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    IndexMath m{rewriter, loc};
    Value input = adaptor.getInput();
    auto resultType = cast<RankedTensorType>(op.getType());
    SmallVector<OpFoldResult> inputSizes = sizesOf(rewriter, loc, input);
    SmallVector<Value> inputDims;
    SmallVector<OpFoldResult> sizes;
    for (auto [dim, size] : llvm::enumerate(inputSizes)) {
      inputDims.push_back(indexValue(rewriter, loc, size));
      Value repeats = shapeEntry(rewriter, loc, op.getRepeats(), dim);
      check(rewriter, loc, op, m.lt(m.c(-1), repeats),
            "repeats " + Twine(dim) + " is negative");
      sizes.push_back(m.mul(inputDims.back(), repeats));
    }
    checkResultSizes(rewriter, loc, op, resultType, sizes);
    Value result = generate(
        rewriter, loc, resultType, sizes,
        [&](OpBuilder &b, Location nestedLoc, ArrayRef<Value> indices) -> Value {
          SmallVector<Value> source;
          for (auto [index, size] : llvm::zip(indices, inputDims))
            source.push_back(b.create<arith::RemUIOp>(nestedLoc, index, size));
          return b.create<tensor::ExtractOp>(nestedLoc, input, source);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct TriluLowering : public OpConversionPattern<TriluOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(TriluOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value input = adaptor.getInput();
    auto type = cast<RankedTensorType>(op.getType());
    int64_t rank = type.getRank();
    Value k = op.getDiagonal() ? shapeEntry(rewriter, loc, op.getDiagonal(), 0)
                               : rewriter.create<arith::ConstantIndexOp>(loc, op.getK())
                                     .getResult();
    bool upper = op.getUpper();
    AffineMap identity = AffineMap::getMultiDimIdentityMap(rank, getContext());
    SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::parallel);
    auto generic = rewriter.create<linalg::GenericOp>(
        loc, type, input,
        emptyTensor(rewriter, loc, type, sizesOf(rewriter, loc, input)),
        SmallVector<AffineMap>{identity, identity}, iterators,
        [&](OpBuilder &b, Location nestedLoc, ValueRange args) {
          IndexMath n{b, nestedLoc};
          Value row = b.create<linalg::IndexOp>(nestedLoc, rank - 2);
          Value column = b.create<linalg::IndexOp>(nestedLoc, rank - 1);
          Value diagonal = n.sub(column, row);
          // Upper keeps column - row >= k; lower keeps column - row <= k.
          Value keep = upper ? b.create<arith::CmpIOp>(
                                   nestedLoc, arith::CmpIPredicate::sge, diagonal, k)
                             : b.create<arith::CmpIOp>(
                                   nestedLoc, arith::CmpIPredicate::sle, diagonal, k);
          Value zero = scalarConstant(b, nestedLoc, type.getElementType(), 0);
          b.create<linalg::YieldOp>(
              nestedLoc, b.create<arith::SelectOp>(nestedLoc, keep, args[0], zero)
                             .getResult());
        });
    rewriter.replaceOp(op, generic.getResults());
    return success();
  }
};

struct RangeLowering : public OpConversionPattern<RangeOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(RangeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    IndexMath m{rewriter, loc};
    auto resultType = cast<RankedTensorType>(op.getType());
    Type elementType = resultType.getElementType();
    Value start = entryValue(rewriter, loc, op.getStart(), 0);
    Value limit = entryValue(rewriter, loc, op.getLimit(), 0);
    Value delta = entryValue(rewriter, loc, op.getDelta(), 0);
    Value count;
    if (isa<FloatType>(elementType)) {
      Value steps = rewriter.create<math::CeilOp>(
          loc, rewriter.create<arith::DivFOp>(
                   loc, rewriter.create<arith::SubFOp>(loc, limit, start), delta));
      count = rewriter.create<arith::IndexCastOp>(
          loc, rewriter.getIndexType(),
          rewriter.create<arith::FPToSIOp>(loc, rewriter.getI64Type(), steps));
    } else {
      auto toIndex = [&](Value v) {
        return rewriter.create<arith::IndexCastOp>(loc, rewriter.getIndexType(), v);
      };
      count = m.ceilDiv(m.sub(toIndex(limit), toIndex(start)),
                        m.nonZero(toIndex(delta)));
    }
    count = m.max(count, m.c(0));
    if (!resultType.isDynamicDim(0))
      checkSameSize(rewriter, loc, op, count,
                    rewriter.getIndexAttr(resultType.getDimSize(0)),
                    "the result dim 0 is not the declared " +
                        Twine(resultType.getDimSize(0)));
    OpFoldResult size = resultType.isDynamicDim(0)
                            ? OpFoldResult(count)
                            : rewriter.getIndexAttr(resultType.getDimSize(0));
    Value result = generate(
        rewriter, loc, resultType, {size},
        [&](OpBuilder &b, Location nestedLoc, ArrayRef<Value> indices) -> Value {
          Value step = indexToScalar(b, nestedLoc, indices[0], elementType);
          if (isa<FloatType>(elementType))
            return b.create<arith::AddFOp>(
                nestedLoc, start, b.create<arith::MulFOp>(nestedLoc, step, delta));
          return b.create<arith::AddIOp>(
              nestedLoc, start, b.create<arith::MulIOp>(nestedLoc, step, delta));
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct ConstantLowering : public OpConversionPattern<ConstantOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(ConstantOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<arith::ConstantOp>(op, op.getType(),
                                                   cast<TypedAttr>(op.getValue()));
    return success();
  }
};

/// shape_of, dim and size: dimension sizes as i64 tensors.
Value sizeAsI64(OpBuilder &b, Location loc, OpFoldResult size) {
  return b.create<arith::IndexCastOp>(loc, b.getI64Type(),
                                      indexValue(b, loc, size));
}

/// kiln.assert as a cf.assert of its condition's one element, with the
/// node's name before the message.
struct AssertLowering : public OpConversionPattern<AssertOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(AssertOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value holds = rewriter.create<tensor::ExtractOp>(op.getLoc(), adaptor.getCondition(),
                                                     ValueRange{});
    check(rewriter, op.getLoc(), op, holds, op.getMessage());
    rewriter.eraseOp(op);
    return success();
  }
};

struct ShapeOfLowering : public OpConversionPattern<ShapeOfOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(ShapeOfOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    SmallVector<Value> elements;
    for (OpFoldResult size : sizesOf(rewriter, op.getLoc(), adaptor.getInput()))
      elements.push_back(sizeAsI64(rewriter, op.getLoc(), size));
    rewriter.replaceOpWithNewOp<tensor::FromElementsOp>(op, op.getType(), elements);
    return success();
  }
};

struct DimLowering : public OpConversionPattern<DimOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(DimOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    OpFoldResult size = sizesOf(rewriter, op.getLoc(), adaptor.getInput())[op.getIndex()];
    rewriter.replaceOpWithNewOp<tensor::FromElementsOp>(
        op, op.getType(), sizeAsI64(rewriter, op.getLoc(), size));
    return success();
  }
};

struct SizeLowering : public OpConversionPattern<SizeOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(SizeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    IndexMath m{rewriter, op.getLoc()};
    Value count = m.c(1);
    for (OpFoldResult size : sizesOf(rewriter, op.getLoc(), adaptor.getInput()))
      count = m.mul(count, indexValue(rewriter, op.getLoc(), size));
    rewriter.replaceOpWithNewOp<tensor::FromElementsOp>(
        op, op.getType(), sizeAsI64(rewriter, op.getLoc(), count));
    return success();
  }
};

} // namespace

void populateDataMovementLoweringPatterns(RewritePatternSet &patterns) {
  patterns.add<ReshapeLowering, SqueezeLowering, UnsqueezeLowering,
               TransposeLowering, ConcatLowering, SplitLowering, SliceLowering,
               GatherLowering, GatherElementsLowering, GatherNdLowering, CumSumLowering,
               ExpandLowering, TileLowering, TriluLowering,
               RangeLowering, ConstantLowering, AssertLowering, ShapeOfLowering,
               DimLowering, SizeLowering, PadLowering>(patterns.getContext());
}

} // namespace kiln
