//===- MatMul.cpp - kiln.matmul to linalg.matmul / batch_matmul -----------===//
//
// A product with a 2-D right operand (a weight) folds the left operand's batch
// dimensions into M and becomes one linalg.matmul. Otherwise both operands are
// broadcast to the result's batch dimensions, the batch is flattened, and it
// becomes a linalg.batch_matmul. The CPU backend replaces both with calls to
// the runtime's GEMM microkernel after bufferization.
//
// kiln.einsum becomes one linalg.generic with a loop per letter: the
// output's letters parallel, the others reductions.
//
// kiln.linear, a product with a fused epilogue (and maybe an int8 weight),
// has no linalg form (an epilogue applied tile by tile): each target runs it
// as its own kernel (compiler/Codegen/LLVMCPU/LinearCalls.cpp). The row
// helpers below serve both.
//
//===----------------------------------------------------------------------===//
#include "compiler/Conversion/KilnToLinalg/Patterns.h"
#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;

namespace kiln {
namespace lowering {

/// The product of `sizes` as one size.
OpFoldResult multiplySizes(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> sizes) {
  int64_t staticProduct = 1;
  Value dynamicProduct;
  for (OpFoldResult size : sizes) {
    if (std::optional<int64_t> constant = getConstantIntValue(size)) {
      staticProduct *= *constant;
      continue;
    }
    Value value = cast<Value>(size);
    dynamicProduct = dynamicProduct
                         ? b.create<arith::MulIOp>(loc, dynamicProduct, value).getResult()
                         : value;
  }
  if (!dynamicProduct)
    return b.getIndexAttr(staticProduct);
  if (staticProduct == 1)
    return dynamicProduct;
  return b.create<arith::MulIOp>(
                 loc, dynamicProduct,
                 b.create<arith::ConstantIndexOp>(loc, staticProduct))
      .getResult();
}

/// A static size, or ShapedType::kDynamic.
int64_t staticSize(OpFoldResult size) {
  return getConstantIntValue(size).value_or(ShapedType::kDynamic);
}

RankedTensorType tensorType(ArrayRef<OpFoldResult> sizes, Type elementType) {
  return RankedTensorType::get(llvm::map_to_vector(sizes, staticSize),
                               elementType);
}

Value zeroFilled(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> sizes,
                 Type elementType) {
  Value zero = scalarConstant(b, loc, elementType, 0);
  Value empty = emptyTensor(b, loc, tensorType(sizes, elementType), sizes);
  return b.create<linalg::FillOp>(loc, zero, empty).getResult(0);
}

/// `value` with `type` and `sizes`: a reshape, or only a cast where the rank
/// stays, since flattening a rank-2 operand's rows (or restoring them)
/// changes nothing. A reshape would force a copy of a strided view.
Value reshapeRows(OpBuilder &b, Location loc, Value value, RankedTensorType type,
                  ArrayRef<OpFoldResult> sizes) {
  if (cast<RankedTensorType>(value.getType()).getRank() == type.getRank())
    return castTo(b, loc, value, type);
  return reshapeTo(b, loc, value, type, sizes);
}

RowsProduct flattenRows(OpBuilder &b, Location loc, Operation *op, Value input,
                        ArrayRef<OpFoldResult> inputSizes, OpFoldResult n,
                        RankedTensorType resultType) {
  RowsProduct flat;
  flat.resultSizes.assign(inputSizes.begin(), inputSizes.end() - 1);
  flat.resultSizes.push_back(n);
  checkResultSizes(b, loc, op, resultType, flat.resultSizes);
  flat.rows = multiplySizes(b, loc, ArrayRef(flat.resultSizes).drop_back());
  OpFoldResult k = inputSizes.back();
  flat.flatInput = reshapeRows(
      b, loc, input,
      tensorType({flat.rows, k}, cast<RankedTensorType>(input.getType()).getElementType()),
      {flat.rows, k});
  return flat;
}

} // namespace lowering

namespace {

using namespace lowering;

struct MatMulLowering : public OpConversionPattern<MatMulOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(MatMulOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value lhs = adaptor.getLhs(), rhs = adaptor.getRhs();
    auto lhsType = cast<RankedTensorType>(lhs.getType());
    auto rhsType = cast<RankedTensorType>(rhs.getType());
    auto resultType = cast<RankedTensorType>(op.getType());
    Type elementType = resultType.getElementType();
    bool transposeB = op.getTransposeB();
    int64_t rank = resultType.getRank();

    SmallVector<OpFoldResult> lhsSizes = sizesOf(rewriter, loc, lhs);
    SmallVector<OpFoldResult> rhsSizes = sizesOf(rewriter, loc, rhs);
    OpFoldResult m = lhsSizes[lhsType.getRank() - 2];
    OpFoldResult k = lhsSizes.back();
    OpFoldResult n = transposeB ? rhsSizes[rhsType.getRank() - 2] : rhsSizes.back();
    OpFoldResult rhsK = transposeB ? rhsSizes.back() : rhsSizes[rhsType.getRank() - 2];
    checkSameSize(rewriter, loc, op, rhsK, k,
                  "the operands' contraction sizes differ");

    if (rhsType.getRank() == 2) {
      RowsProduct flat =
          flattenRows(rewriter, loc, op, lhs, lhsSizes, n, resultType);
      Value init = zeroFilled(rewriter, loc, {flat.rows, n}, elementType);
      Type flatType = init.getType();
      SmallVector<Value> operands = {flat.flatInput, rhs};
      Value product =
          transposeB ? rewriter
                           .create<linalg::MatmulTransposeBOp>(loc, flatType,
                                                               operands, init)
                           .getResult(0)
                     : rewriter
                           .create<linalg::MatmulOp>(loc, flatType, operands,
                                                     init)
                           .getResult(0);
      rewriter.replaceOp(op, reshapeRows(rewriter, loc, product, resultType,
                                         flat.resultSizes));
      return success();
    }

    // The result's batch sizes, broadcast from the operands'.
    SmallVector<OpFoldResult> batch;
    for (int64_t dim = 0; dim < rank - 2; ++dim) {
      if (!resultType.isDynamicDim(dim)) {
        batch.push_back(rewriter.getIndexAttr(resultType.getDimSize(dim)));
        continue;
      }
      SmallVector<OpFoldResult> operandSizes;
      for (auto [type, sizes] : {std::make_pair(lhsType, &lhsSizes),
                                 std::make_pair(rhsType, &rhsSizes)}) {
        int64_t operandDim = dim - (rank - type.getRank());
        if (operandDim >= 0)
          operandSizes.push_back((*sizes)[operandDim]);
      }
      batch.push_back(broadcastDim(rewriter, loc, operandSizes));
    }
    auto flatten = [&](unsigned operandNumber, Value operand,
                       ArrayRef<OpFoldResult> operandSizes) {
      SmallVector<OpFoldResult> sizes = batch;
      sizes.append(operandSizes.end() - 2, operandSizes.end());
      Value broadcast = broadcastTo(rewriter, loc, op, operandNumber, operand,
                                    tensorType(sizes, elementType), sizes);
      OpFoldResult batchSize = multiplySizes(rewriter, loc, batch);
      SmallVector<OpFoldResult> flatSizes = {batchSize, sizes[rank - 2],
                                             sizes[rank - 1]};
      return reshapeTo(rewriter, loc, broadcast,
                       tensorType(flatSizes, elementType), flatSizes);
    };
    Value flatLhs = flatten(0, lhs, lhsSizes);
    Value flatRhs = flatten(1, rhs, rhsSizes);
    OpFoldResult batchSize = multiplySizes(rewriter, loc, batch);
    Value init = zeroFilled(rewriter, loc, {batchSize, m, n}, elementType);
    Type flatType = init.getType();
    Value product =
        transposeB ? rewriter
                         .create<linalg::BatchMatmulTransposeBOp>(
                             loc, flatType, ValueRange{flatLhs, flatRhs}, init)
                         .getResult(0)
                   : rewriter
                         .create<linalg::BatchMatmulOp>(
                             loc, flatType, ValueRange{flatLhs, flatRhs}, init)
                         .getResult(0);
    SmallVector<OpFoldResult> resultSizes = batch;
    resultSizes.push_back(m);
    resultSizes.push_back(n);
    checkResultSizes(rewriter, loc, op, resultType, resultSizes);
    rewriter.replaceOp(op,
                       reshapeTo(rewriter, loc, product, resultType, resultSizes));
    return success();
  }
};

struct EinsumLowering : public OpConversionPattern<EinsumOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(EinsumOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    std::string error;
    auto terms = parseEinsumEquation(op.getEquation(), error);
    if (failed(terms))
      return rewriter.notifyMatchFailure(op, error);
    auto resultType = cast<RankedTensorType>(op.getType());
    Type element = resultType.getElementType();
    // Loop dims: the output's letters, then the summed ones in the order
    // they first appear.
    std::string letters = terms->output;
    for (const std::string &term : terms->inputs)
      for (char c : term)
        if (letters.find(c) == std::string::npos)
          letters.push_back(c);
    // Each letter's size from the first input that has it; the others must
    // agree.
    llvm::DenseMap<char, OpFoldResult> sizeOf;
    SmallVector<AffineMap> maps;
    for (auto [i, term, input] :
         llvm::enumerate(terms->inputs, adaptor.getInputs())) {
      SmallVector<OpFoldResult> sizes = sizesOf(rewriter, loc, input);
      SmallVector<AffineExpr> exprs;
      for (auto [c, size] : llvm::zip(term, sizes)) {
        auto [it, inserted] = sizeOf.try_emplace(c, size);
        if (!inserted)
          checkSameSize(rewriter, loc, op, size, it->second,
                        "the dims of letter '" + Twine(c) + "' in input " + Twine(i));
        exprs.push_back(rewriter.getAffineDimExpr(letters.find(c)));
      }
      maps.push_back(AffineMap::get(letters.size(), 0, exprs, getContext()));
    }
    SmallVector<AffineExpr> outputExprs;
    for (size_t dim = 0; dim < terms->output.size(); ++dim)
      outputExprs.push_back(rewriter.getAffineDimExpr(dim));
    maps.push_back(AffineMap::get(letters.size(), 0, outputExprs, getContext()));
    SmallVector<OpFoldResult> outputSizes;
    for (char c : terms->output)
      outputSizes.push_back(sizeOf.lookup(c));
    checkResultSizes(rewriter, loc, op, resultType, outputSizes);
    Value init = rewriter
                     .create<linalg::FillOp>(
                         loc, scalarConstant(rewriter, loc, element, 0),
                         emptyTensor(rewriter, loc, resultType, outputSizes))
                     .getResult(0);
    SmallVector<utils::IteratorType> iterators(terms->output.size(),
                                               utils::IteratorType::parallel);
    iterators.resize(letters.size(), utils::IteratorType::reduction);
    bool isFloat = isa<FloatType>(element);
    auto generic = rewriter.create<linalg::GenericOp>(
        loc, resultType, adaptor.getInputs(), init, maps, iterators,
        [&](OpBuilder &b, Location nested, ValueRange args) {
          Value product = args[0];
          for (Value factor : args.drop_front().drop_back())
            product = isFloat ? b.create<arith::MulFOp>(nested, product, factor).getResult()
                              : b.create<arith::MulIOp>(nested, product, factor).getResult();
          Value sum = isFloat ? b.create<arith::AddFOp>(nested, args.back(), product).getResult()
                              : b.create<arith::AddIOp>(nested, args.back(), product).getResult();
          b.create<linalg::YieldOp>(nested, sum);
        });
    rewriter.replaceOp(op, generic.getResults());
    return success();
  }
};

/// kiln.matmul_integer as one linalg.generic over [rows, N, K]: each
/// operand's difference from its zero point, widened to i32, multiplied and
/// summed. This is the product as written; the ones that a model runs by
/// its weights are folded into int8 kiln.linear before
/// (kiln-fold-quantized-products).
struct MatMulIntegerLowering : public OpConversionPattern<MatMulIntegerOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(MatMulIntegerOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value lhs = adaptor.getLhs(), rhs = adaptor.getRhs();
    auto resultType = cast<RankedTensorType>(op.getType());
    Type i32 = rewriter.getI32Type();
    SmallVector<OpFoldResult> lhsSizes = sizesOf(rewriter, loc, lhs);
    SmallVector<OpFoldResult> rhsSizes = sizesOf(rewriter, loc, rhs);
    OpFoldResult k = lhsSizes.back(), n = rhsSizes[1];
    checkSameSize(rewriter, loc, op, rhsSizes[0], k, "the operands' contraction sizes differ");
    Value rhsZeroPoint = adaptor.getRhsZeroPoint();
    const bool perColumn = cast<RankedTensorType>(rhsZeroPoint.getType()).getRank() == 1;
    if (perColumn)
      checkSameSize(rewriter, loc, op, sizesOf(rewriter, loc, rhsZeroPoint)[0], n,
                    "rhs_zero_point does not have one value per column");
    RowsProduct flat = flattenRows(rewriter, loc, op, lhs, lhsSizes, n, resultType);
    Value init = zeroFilled(rewriter, loc, {flat.rows, n}, i32);

    MLIRContext *ctx = rewriter.getContext();
    AffineExpr row, column, depth;
    bindDims(ctx, row, column, depth);
    auto map = [&](ArrayRef<AffineExpr> results) {
      return AffineMap::get(3, 0, results, ctx);
    };
    SmallVector<AffineMap> maps = {map({row, depth}), map({depth, column}), map({}),
                                   perColumn ? map({column}) : map({}), map({row, column})};
    SmallVector<utils::IteratorType> iterators = {utils::IteratorType::parallel,
                                                  utils::IteratorType::parallel,
                                                  utils::IteratorType::reduction};
    Value product =
        rewriter
            .create<linalg::GenericOp>(
                loc, init.getType(),
                ValueRange{flat.flatInput, rhs, adaptor.getLhsZeroPoint(), rhsZeroPoint}, init,
                maps,
                iterators,
                [&](OpBuilder &b, Location nestedLoc, ValueRange args) {
                  auto difference = [&](Value value, Value zeroPoint) -> Value {
                    return b.create<arith::SubIOp>(
                        nestedLoc, b.create<arith::ExtSIOp>(nestedLoc, i32, value),
                        b.create<arith::ExtSIOp>(nestedLoc, i32, zeroPoint));
                  };
                  Value term = b.create<arith::MulIOp>(nestedLoc, difference(args[0], args[2]),
                                                       difference(args[1], args[3]));
                  b.create<linalg::YieldOp>(
                      nestedLoc, ValueRange{b.create<arith::AddIOp>(nestedLoc, args[4], term)});
                })
            .getResult(0);
    rewriter.replaceOp(op,
                       reshapeRows(rewriter, loc, product, resultType, flat.resultSizes));
    return success();
  }
};

} // namespace

void populateMatMulLoweringPatterns(RewritePatternSet &patterns) {
  patterns.add<MatMulLowering, EinsumLowering, MatMulIntegerLowering>(
      patterns.getContext());
}

} // namespace kiln
