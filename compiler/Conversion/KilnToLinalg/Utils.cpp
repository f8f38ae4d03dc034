//===- Utils.cpp - Helpers shared by the kiln to linalg patterns ----------===//
#include "compiler/Conversion/KilnToLinalg/Patterns.h"
#include "dialects/Kiln/IR/KilnDialect.h"
#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <limits>

using namespace mlir;

namespace kiln::lowering {

SmallVector<OpFoldResult> sizesOf(OpBuilder &b, Location loc, Value tensor) {
  return tensor::getMixedSizes(b, loc, tensor);
}

/// The entries of `sizes` at `type`'s dynamic dims, as index values.
static SmallVector<Value> dynamicSizes(OpBuilder &b, Location loc,
                                       RankedTensorType type,
                                       ArrayRef<OpFoldResult> sizes) {
  SmallVector<Value> dynamic;
  for (auto [dim, size] : llvm::enumerate(sizes))
    if (type.isDynamicDim(dim))
      dynamic.push_back(getValueOrCreateConstantIndexOp(b, loc, size));
  return dynamic;
}

Value emptyTensor(OpBuilder &b, Location loc, RankedTensorType type,
                  ArrayRef<OpFoldResult> sizes) {
  return b.create<tensor::EmptyOp>(loc, type.getShape(), type.getElementType(),
                                   dynamicSizes(b, loc, type, sizes));
}

Value allocateBuffer(OpBuilder &b, Location loc, RankedTensorType type,
                     ArrayRef<OpFoldResult> sizes) {
  return b.create<memref::AllocOp>(
      loc, MemRefType::get(type.getShape(), type.getElementType()),
      dynamicSizes(b, loc, type, sizes));
}

OpFoldResult broadcastDim(OpBuilder &b, Location loc,
                          ArrayRef<OpFoldResult> sizes) {
  Value largest;
  for (OpFoldResult size : sizes) {
    if (std::optional<int64_t> constant = getConstantIntValue(size)) {
      if (*constant != 1)
        return size;
      continue;
    }
    Value value = cast<Value>(size);
    largest = largest ? b.create<arith::MaxUIOp>(loc, largest, value).getResult()
                      : value;
  }
  return largest ? OpFoldResult(largest) : b.getIndexAttr(1);
}

SmallVector<OpFoldResult> broadcastSizes(OpBuilder &b, Location loc,
                                         RankedTensorType resultType,
                                         ValueRange operands) {
  int64_t rank = resultType.getRank();
  SmallVector<OpFoldResult> sizes;
  for (int64_t dim = 0; dim < rank; ++dim) {
    if (!resultType.isDynamicDim(dim)) {
      sizes.push_back(b.getIndexAttr(resultType.getDimSize(dim)));
      continue;
    }
    SmallVector<OpFoldResult> operandSizes;
    for (Value operand : operands) {
      auto type = cast<RankedTensorType>(operand.getType());
      int64_t operandDim = dim - (rank - type.getRank());
      if (operandDim >= 0)
        operandSizes.push_back(tensor::getMixedSize(b, loc, operand, operandDim));
    }
    sizes.push_back(broadcastDim(b, loc, operandSizes));
  }
  return sizes;
}

AffineMap broadcastMap(RankedTensorType operandType,
                       RankedTensorType resultType) {
  MLIRContext *ctx = resultType.getContext();
  int64_t rank = resultType.getRank();
  int64_t offset = rank - operandType.getRank();
  SmallVector<AffineExpr> exprs;
  for (int64_t dim = 0; dim < operandType.getRank(); ++dim) {
    bool stretches = operandType.getDimSize(dim) == 1 &&
                     resultType.getDimSize(dim + offset) != 1;
    exprs.push_back(stretches ? getAffineConstantExpr(0, ctx)
                              : getAffineDimExpr(dim + offset, ctx));
  }
  return AffineMap::get(rank, 0, exprs, ctx);
}

void checkBroadcast(OpBuilder &b, Location loc, Operation *op,
                    ValueRange operands, RankedTensorType resultType,
                    ArrayRef<OpFoldResult> sizes, unsigned firstOperandNumber) {
  int64_t rank = resultType.getRank();
  for (auto [position, operand] : llvm::enumerate(operands)) {
    unsigned index = firstOperandNumber + position;
    auto type = cast<RankedTensorType>(operand.getType());
    int64_t offset = rank - type.getRank();
    for (int64_t dim = 0; dim < type.getRank(); ++dim)
      // A static 1 stretches; any other size must be the result's. Two
      // static sizes are the op verifier's to compare (kiln.rotary's cos
      // may be narrower than its result, by design).
      if (type.getDimSize(dim) != 1 &&
          (type.isDynamicDim(dim) || resultType.isDynamicDim(dim + offset)))
        checkSameSize(b, loc, op, tensor::getMixedSize(b, loc, operand, dim),
                      sizes[dim + offset],
                      "operand " + Twine(index) + " dim " + Twine(dim) +
                          " does not match the result's size (dynamic sizes "
                          "do not broadcast)");
  }
}

void checkResultSizes(OpBuilder &b, Location loc, Operation *op,
                      RankedTensorType resultType, ArrayRef<OpFoldResult> sizes,
                      const Twine &result) {
  for (auto [dim, size] : llvm::enumerate(sizes))
    if (!resultType.isDynamicDim(dim))
      checkSameSize(b, loc, op, size, b.getIndexAttr(resultType.getDimSize(dim)),
                    result + " dim " + Twine(dim) + " is not the declared " +
                        Twine(resultType.getDimSize(dim)));
}

Value broadcastTo(OpBuilder &b, Location loc, Operation *op,
                  unsigned operandNumber, Value input,
                  RankedTensorType resultType, ArrayRef<OpFoldResult> sizes) {
  auto inputType = cast<RankedTensorType>(input.getType());
  checkBroadcast(b, loc, op, input, resultType, sizes, operandNumber);
  if (inputType == resultType)
    return input;
  int64_t rank = resultType.getRank();
  SmallVector<AffineMap> maps = {
      broadcastMap(inputType, resultType),
      AffineMap::getMultiDimIdentityMap(rank, b.getContext())};
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  return b
      .create<linalg::GenericOp>(
          loc, resultType, input, emptyTensor(b, loc, resultType, sizes), maps,
          iterators,
          [](OpBuilder &nested, Location nestedLoc, ValueRange args) {
            nested.create<linalg::YieldOp>(nestedLoc, args[0]);
          })
      .getResult(0);
}

/// Entry `i` (row-major) of the small integer kiln value `value`, computed
/// from the scalars that built it: constants, kiln.dim, and elementwise
/// arithmetic on them, through unsqueeze, reshape and concat. Null where a
/// producer is something else.
static Value tracedEntry(ConversionPatternRewriter &rewriter, Location loc,
                         Value value, int64_t i, unsigned depth) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  Operation *op = value.getDefiningOp();
  // Shape computations are a handful of small ops; anything bigger is data.
  constexpr int64_t kMaxElements = 16;
  if (!op || depth > 32 || !type || !type.hasStaticShape() ||
      type.getNumElements() > kMaxElements || !type.getElementType().isSignlessInteger())
    return nullptr;
  if (auto constant = dyn_cast<ConstantOp>(op)) {
    auto dense = dyn_cast<DenseIntElementsAttr>(constant.getValue());
    if (!dense)
      return nullptr;
    return rewriter.create<arith::ConstantOp>(
        loc, rewriter.getIntegerAttr(type.getElementType(),
                                     dense.getValues<APInt>()[dense.isSplat() ? 0 : i]));
  }
  if (auto dim = dyn_cast<DimOp>(op)) {
    Value size = rewriter.create<tensor::DimOp>(
        loc, rewriter.getRemappedValue(dim.getInput()), dim.getIndex());
    return rewriter.create<arith::IndexCastOp>(loc, rewriter.getI64Type(), size);
  }
  // These keep the row-major order of the elements.
  if (isa<UnsqueezeOp, SqueezeOp, ReshapeOp>(op))
    return tracedEntry(rewriter, loc, op->getOperand(0), i, depth + 1);
  if (auto concat = dyn_cast<ConcatOp>(op)) {
    if (type.getRank() != 1)
      return nullptr;
    for (Value input : concat.getInputs()) {
      // An input of unknown length leaves the later entries' positions open.
      int64_t size = cast<RankedTensorType>(input.getType()).getDimSize(0);
      if (ShapedType::isDynamic(size))
        return nullptr;
      if (i < size)
        return tracedEntry(rewriter, loc, input, i, depth + 1);
      i -= size;
    }
    return nullptr;
  }
  if (!isElementwiseOp(op))
    return nullptr;
  // The operands' entries at i's position, with ONNX broadcasting.
  SmallVector<int64_t> position(type.getRank());
  for (int64_t d = type.getRank(), rest = i; d-- > 0;) {
    position[d] = rest % type.getDimSize(d);
    rest /= type.getDimSize(d);
  }
  SmallVector<Value> args;
  for (Value operand : op->getOperands()) {
    auto operandType = dyn_cast<RankedTensorType>(operand.getType());
    if (!operandType || !operandType.hasStaticShape())
      return nullptr;
    int64_t index = 0, offset = type.getRank() - operandType.getRank();
    for (int64_t d = 0; d < operandType.getRank(); ++d)
      index = index * operandType.getDimSize(d) +
              (operandType.getDimSize(d) == 1 ? 0 : position[offset + d]);
    Value arg = tracedEntry(rewriter, loc, operand, index, depth + 1);
    if (!arg)
      return nullptr;
    args.push_back(arg);
  }
  return emitScalar(op, rewriter, loc, args, type.getElementType());
}

Value entryValue(ConversionPatternRewriter &rewriter, Location loc, Value tensor,
                 int64_t i) {
  // Exporters compute shapes from the sizes of other tensors (kiln.dim, then
  // arithmetic, unsqueeze and concat). Computing those entries from the
  // sizes directly, rather than reading them from the shape tensor's buffer,
  // keeps them expressions of the inputs' dims: foldable, and boundable by
  // the memory planner.
  if (Value traced = tracedEntry(rewriter, loc, tensor, i, 0))
    return traced;
  Value index = rewriter.create<arith::ConstantIndexOp>(loc, i);
  return rewriter.create<tensor::ExtractOp>(
      loc, rewriter.getRemappedValue(tensor),
      cast<RankedTensorType>(tensor.getType()).getRank() ? ValueRange{index}
                                                          : ValueRange{});
}

Value shapeEntry(ConversionPatternRewriter &rewriter, Location loc, Value shape,
                 int64_t i) {
  return rewriter.create<arith::IndexCastOp>(loc, rewriter.getIndexType(),
                                             entryValue(rewriter, loc, shape, i));
}

Value reshapeTo(OpBuilder &b, Location loc, Value input,
                RankedTensorType resultType, ArrayRef<OpFoldResult> sizes) {
  if (input.getType() == resultType && resultType.hasStaticShape())
    return input;
  SmallVector<Value> shape;
  for (OpFoldResult size : sizes)
    shape.push_back(getValueOrCreateConstantIndexOp(b, loc, size));
  auto shapeType =
      RankedTensorType::get({(int64_t)shape.size()}, b.getIndexType());
  Value shapeTensor = b.create<tensor::FromElementsOp>(loc, shapeType, shape);
  return b.create<tensor::ReshapeOp>(loc, resultType, input, shapeTensor);
}

Value scalarConstant(OpBuilder &b, Location loc, Type type, double value) {
  if (auto floatType = dyn_cast<FloatType>(type))
    return b.create<arith::ConstantOp>(loc, b.getFloatAttr(floatType, value));
  return b.create<arith::ConstantOp>(
      loc, b.getIntegerAttr(type, static_cast<int64_t>(value)));
}

Value lowestValue(OpBuilder &b, Location loc, Type type) {
  if (auto floatType = dyn_cast<FloatType>(type))
    return b.create<arith::ConstantOp>(
        loc, b.getFloatAttr(floatType, -std::numeric_limits<double>::infinity()));
  unsigned width = type.getIntOrFloatBitWidth();
  return b.create<arith::ConstantOp>(
      loc, b.getIntegerAttr(type, type.isUnsignedInteger()
                                      ? APInt::getZero(width)
                                      : APInt::getSignedMinValue(width)));
}

Value highestValue(OpBuilder &b, Location loc, Type type) {
  if (auto floatType = dyn_cast<FloatType>(type))
    return b.create<arith::ConstantOp>(
        loc, b.getFloatAttr(floatType, std::numeric_limits<double>::infinity()));
  unsigned width = type.getIntOrFloatBitWidth();
  return b.create<arith::ConstantOp>(
      loc, b.getIntegerAttr(type, type.isUnsignedInteger()
                                      ? APInt::getMaxValue(width)
                                      : APInt::getSignedMaxValue(width)));
}

Value maxOf(OpBuilder &b, Location loc, Value x, Value y) {
  if (isa<FloatType>(x.getType()))
    return b.create<arith::MaximumFOp>(loc, x, y);
  if (x.getType().isUnsignedInteger())
    return b.create<arith::MaxUIOp>(loc, x, y);
  return b.create<arith::MaxSIOp>(loc, x, y);
}

Value minOf(OpBuilder &b, Location loc, Value x, Value y) {
  if (isa<FloatType>(x.getType()))
    return b.create<arith::MinimumFOp>(loc, x, y);
  if (x.getType().isUnsignedInteger())
    return b.create<arith::MinUIOp>(loc, x, y);
  return b.create<arith::MinSIOp>(loc, x, y);
}

Value reduce(OpBuilder &b, Location loc, Value input, ArrayRef<int64_t> axes,
             Value init, RankedTensorType resultType, ReduceFn combine) {
  auto inputType = cast<RankedTensorType>(input.getType());
  int64_t rank = inputType.getRank();
  SmallVector<OpFoldResult> inputSizes = sizesOf(b, loc, input);
  SmallVector<OpFoldResult> reducedSizes;
  SmallVector<int64_t> reducedShape;
  SmallVector<AffineExpr> outputExprs;
  SmallVector<utils::IteratorType> iterators;
  for (int64_t dim = 0; dim < rank; ++dim) {
    if (llvm::is_contained(axes, dim)) {
      iterators.push_back(utils::IteratorType::reduction);
      continue;
    }
    iterators.push_back(utils::IteratorType::parallel);
    outputExprs.push_back(b.getAffineDimExpr(dim));
    reducedSizes.push_back(inputSizes[dim]);
    reducedShape.push_back(inputType.getDimSize(dim));
  }
  auto reducedType =
      RankedTensorType::get(reducedShape, inputType.getElementType());
  Value accumulator = b.create<linalg::FillOp>(
                           loc, init, emptyTensor(b, loc, reducedType, reducedSizes))
                          .getResult(0);
  SmallVector<AffineMap> maps = {
      AffineMap::getMultiDimIdentityMap(rank, b.getContext()),
      AffineMap::get(rank, 0, outputExprs, b.getContext())};
  Value reduced =
      b.create<linalg::GenericOp>(
           loc, reducedType, input, accumulator, maps, iterators,
           [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
             nested.create<linalg::YieldOp>(
                 nestedLoc, combine(nested, nestedLoc, args[1], args[0]));
           })
          .getResult(0);
  if (resultType.getRank() == reducedType.getRank())
    return castTo(b, loc, reduced, resultType);
  // keep_dims: the reduced axes come back as size-1 dimensions.
  SmallVector<OpFoldResult> keptSizes;
  for (int64_t dim = 0; dim < rank; ++dim)
    keptSizes.push_back(llvm::is_contained(axes, dim) ? b.getIndexAttr(1)
                                                      : inputSizes[dim]);
  return reshapeTo(b, loc, reduced, resultType, keptSizes);
}

Value checkedIndex(OpBuilder &b, Location loc, Operation *op, Value index,
                   Value size, int64_t dim) {
  IndexMath n{b, loc};
  index = n.wrapNegative(b.create<arith::IndexCastOp>(loc, b.getIndexType(), index),
                         size);
  Value inRange = b.create<arith::AndIOp>(
      loc, b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::sge, index, n.c(0)),
      n.lt(index, size));
  check(b, loc, op, inRange, "an index is out of range for data dim " + Twine(dim));
  return index;
}

std::pair<Value, Value> compareForSelection(OpBuilder &b, Location loc,
                                            Value x, Value y, bool larger,
                                            bool nanWins) {
  if (!isa<FloatType>(x.getType())) {
    bool isUnsigned = x.getType().isUnsignedInteger();
    arith::CmpIPredicate beats =
        larger ? (isUnsigned ? arith::CmpIPredicate::ugt : arith::CmpIPredicate::sgt)
               : (isUnsigned ? arith::CmpIPredicate::ult : arith::CmpIPredicate::slt);
    return {b.create<arith::CmpIOp>(loc, beats, x, y),
            b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, x, y)};
  }
  Value xNaN = b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::UNO, x, x);
  Value yNaN = b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::UNO, y, y);
  Value isTrue = b.create<arith::ConstantOp>(loc, b.getBoolAttr(true));
  // Ordered predicates are false with a NaN on either side.
  Value better = b.create<arith::CmpFOp>(
      loc, larger ? arith::CmpFPredicate::OGT : arith::CmpFPredicate::OLT, x, y);
  Value nanBeats = nanWins
                       ? b.create<arith::AndIOp>(
                             loc, xNaN, b.create<arith::XOrIOp>(loc, yNaN, isTrue))
                       : b.create<arith::AndIOp>(
                             loc, yNaN, b.create<arith::XOrIOp>(loc, xNaN, isTrue));
  Value beats = b.create<arith::OrIOp>(loc, better, nanBeats);
  Value ties = b.create<arith::OrIOp>(
      loc, b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::OEQ, x, y),
      b.create<arith::AndIOp>(loc, xNaN, yNaN));
  return {beats, ties};
}

Value indexToScalar(OpBuilder &b, Location loc, Value value, Type type) {
  Value asInt = b.create<arith::IndexCastOp>(loc, b.getI64Type(), value);
  if (isa<FloatType>(type))
    return b.create<arith::SIToFPOp>(loc, type, asInt);
  if (type.getIntOrFloatBitWidth() < 64)
    return b.create<arith::TruncIOp>(loc, type, asInt);
  return asInt;
}

/// "node 'NAME' (kiln.add)", from the ONNX node name the importer put in the
/// op's location.
static std::string describe(Operation *op) {
  std::string name = onnxNodeName(op->getLoc());
  std::string kind = op->getName().getStringRef().str();
  return name.empty() ? kind : "node '" + name + "' (" + kind + ")";
}

void check(OpBuilder &b, Location loc, Operation *op, Value ok,
           const Twine &what) {
  b.create<cf::AssertOp>(loc, ok, describe(op) + ": " + what.str());
}

void checkSameSize(OpBuilder &b, Location loc, Operation *op,
                   OpFoldResult actual, OpFoldResult expected,
                   const Twine &what) {
  if (actual == expected)
    return;
  auto actualDim = dyn_cast_if_present<Value>(actual) ? cast<Value>(actual).getDefiningOp<tensor::DimOp>() : nullptr;
  auto expectedDim = dyn_cast_if_present<Value>(expected) ? cast<Value>(expected).getDefiningOp<tensor::DimOp>() : nullptr;
  if (actualDim && expectedDim && actualDim.getSource() == expectedDim.getSource() &&
      actualDim.getConstantIndex() && actualDim.getConstantIndex() == expectedDim.getConstantIndex())
    return;
  std::optional<int64_t> actualConstant = getConstantIntValue(actual);
  std::optional<int64_t> expectedConstant = getConstantIntValue(expected);
  if (actualConstant && expectedConstant && *actualConstant == *expectedConstant)
    return;
  Value equal = b.create<arith::CmpIOp>(
      loc, arith::CmpIPredicate::eq, getValueOrCreateConstantIndexOp(b, loc, actual),
      getValueOrCreateConstantIndexOp(b, loc, expected));
  check(b, loc, op, equal, what);
}

Value i64Constant(OpBuilder &b, Location loc, int64_t value) {
  return b.create<arith::ConstantIntOp>(loc, value, 64);
}

Value castTo(OpBuilder &b, Location loc, Value value, RankedTensorType type) {
  if (value.getType() == type)
    return value;
  return b.create<tensor::CastOp>(loc, type, value);
}

} // namespace kiln::lowering
