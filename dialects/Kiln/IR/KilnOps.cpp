//===- KilnOps.cpp - Verifiers of the kiln dialect ops --------------------===//
//
// Verifiers check what the types can express: ranks, axes, and every static
// dimension a result must have. Dynamic dimensions are compatible with any
// size, so the checks never reject an op for what is only known at run time.
//
//===----------------------------------------------------------------------===//
#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/SmallSet.h"

#include <cmath>

using namespace mlir;
using namespace kiln;

#include "dialects/Kiln/IR/KilnEnums.cpp.inc"
#define GET_OP_CLASSES
#include "dialects/Kiln/IR/KilnOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Shared checks
//===----------------------------------------------------------------------===//

static std::string formatShape(ArrayRef<int64_t> shape) {
  std::string text = "[";
  for (auto [i, dim] : llvm::enumerate(shape)) {
    if (i)
      text += ", ";
    text += ShapedType::isDynamic(dim) ? "?" : std::to_string(dim);
  }
  return text + "]";
}

static int64_t rankOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getRank();
}

static ArrayRef<int64_t> shapeOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getShape();
}

/// The result must have `expected`'s rank and agree with every static size;
/// `name` says which result.
static LogicalResult verifyResultShape(Operation *op,
                                       ArrayRef<int64_t> expected, Value result,
                                       StringRef name = "result") {
  if (failed(verifyCompatibleShape(expected, shapeOf(result))))
    return op->emitOpError()
           << name << " type " << result.getType()
           << " does not match the expected shape " << formatShape(expected);
  return success();
}

static LogicalResult verifyAxis(Operation *op, int64_t axis, int64_t rank,
                                StringRef name = "axis") {
  if (axis < 0 || axis >= rank)
    return op->emitOpError() << name << " " << axis
                             << " is out of range for rank " << rank
                             << " (axes are normalized: 0 <= axis < rank)";
  return success();
}

/// `axes` must be sorted, unique and in [0, rank).
static LogicalResult verifyAxisList(Operation *op, ArrayRef<int64_t> axes,
                                    int64_t rank) {
  for (auto [i, axis] : llvm::enumerate(axes)) {
    if (failed(verifyAxis(op, axis, rank)))
      return failure();
    if (i > 0 && axes[i - 1] >= axis)
      return op->emitOpError() << "axes " << formatShape(axes)
                               << " must be sorted and unique";
  }
  return success();
}

/// The length of a 1-D shape/index operand must be `expected` when static.
static LogicalResult verifyListLength(Operation *op, Value list, int64_t expected,
                                      StringRef name, StringRef against) {
  int64_t length = shapeOf(list)[0];
  if (!ShapedType::isDynamic(length) && length != expected)
    return op->emitOpError() << name << " has " << length << " entries but "
                             << against << " is " << expected;
  return success();
}

/// `value` must have the element type of `input`; `name` says which operand.
static LogicalResult verifyInputElementType(Operation *op, Value value,
                                            Value input, StringRef name) {
  if (getElementTypeOrSelf(value) != getElementTypeOrSelf(input))
    return op->emitOpError() << name << " element type "
                             << getElementTypeOrSelf(value)
                             << " differs from the input's "
                             << getElementTypeOrSelf(input);
  return success();
}

/// `tensor` must broadcast against the trailing dimensions of `input` from
/// `axis` on, as a norm's scale and bias do.
static LogicalResult verifyTrailingOperand(Operation *op, Value tensor,
                                           Value input, int64_t axis,
                                           StringRef name) {
  ArrayRef<int64_t> trailing = shapeOf(input).drop_front(axis);
  ArrayRef<int64_t> shape = shapeOf(tensor);
  if (shape.size() > trailing.size())
    return op->emitOpError() << name << " has rank " << shape.size()
                             << " but only " << trailing.size()
                             << " axes are normalized";
  SmallVector<int64_t> broadcast;
  if (!OpTrait::util::getBroadcastedShape(trailing, shape, broadcast) ||
      failed(verifyCompatibleShape(broadcast, trailing)))
    return op->emitOpError() << name << " shape " << formatShape(shape)
                             << " does not broadcast to the normalized shape "
                             << formatShape(trailing);
  return success();
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

/// kiln.quantize's and kiln.dequantize's shapes: the result has the
/// input's, and the scale and zero point share one that broadcasts into it
/// (each dim 1 or the input's, aligned to its last).
static LogicalResult verifyQuantizationShapes(Operation *op, Value input,
                                              Value scale, Value zeroPoint,
                                              Value result) {
  ArrayRef<int64_t> inputShape = shapeOf(input), parameters = shapeOf(scale);
  if (failed(verifyResultShape(op, inputShape, result)))
    return failure();
  if (shapeOf(zeroPoint) != parameters)
    return op->emitOpError() << "the zero point " << zeroPoint.getType()
                             << " must have the scale's shape " << formatShape(parameters);
  bool broadcasts = parameters.size() <= inputShape.size();
  for (size_t i = 0; broadcasts && i < parameters.size(); ++i) {
    int64_t dim = parameters[parameters.size() - 1 - i];
    int64_t inputDim = inputShape[inputShape.size() - 1 - i];
    broadcasts = dim == 1 || ShapedType::isDynamic(dim) || ShapedType::isDynamic(inputDim) ||
                 dim == inputDim;
  }
  if (!broadcasts)
    return op->emitOpError() << "the scale's shape " << formatShape(parameters)
                             << " does not broadcast into the input's "
                             << formatShape(inputShape);
  return success();
}

LogicalResult QuantizeOp::verify() {
  return verifyQuantizationShapes(*this, getInput(), getScale(), getZeroPoint(), getResult());
}

LogicalResult DequantizeOp::verify() {
  return verifyQuantizationShapes(*this, getInput(), getScale(), getZeroPoint(), getResult());
}

LogicalResult DynamicQuantizeOp::verify() {
  return verifyResultShape(*this, shapeOf(getInput()), getResult());
}

LogicalResult MatMulIntegerOp::verify() {
  ArrayRef<int64_t> lhs = shapeOf(getLhs()), rhs = shapeOf(getRhs());
  if (lhs.size() < 2 || rhs.size() != 2)
    return emitOpError() << "needs an lhs of rank 2 or more and a 2-D rhs, got "
                         << getLhs().getType() << " and " << getRhs().getType();
  if (failed(verifyCompatibleShape(ArrayRef<int64_t>{lhs.back()},
                                   ArrayRef<int64_t>{rhs[0]})))
    return emitOpError() << "contraction sizes differ: lhs has K = " << lhs.back()
                         << ", rhs has K = " << rhs[0];
  ArrayRef<int64_t> rhsZeroPoint = shapeOf(getRhsZeroPoint());
  if (rhsZeroPoint.size() > 1 ||
      (rhsZeroPoint.size() == 1 &&
       failed(verifyCompatibleShape(rhsZeroPoint, ArrayRef<int64_t>{rhs[1]}))))
    return emitOpError() << "rhs_zero_point must be one value or one per column ["
                         << rhs[1] << "], got " << getRhsZeroPoint().getType();
  SmallVector<int64_t> expected(lhs.drop_back());
  expected.push_back(rhs[1]);
  return verifyResultShape(*this, expected, getResult());
}

LogicalResult ClampOp::verify() {
  for (Value bound : {getMin(), getMax()}) {
    if (!bound)
      continue;
    if (rankOf(bound) != 0)
      return emitOpError() << "bounds must be 0-d tensors, got " << bound.getType();
    if (failed(verifyInputElementType(*this, bound, getInput(), "bound")))
      return failure();
  }
  return verifyResultShape(*this, shapeOf(getInput()), getResult());
}

//===----------------------------------------------------------------------===//
// Contractions, normalizations and reductions
//===----------------------------------------------------------------------===//

LogicalResult MatMulOp::verify() {
  ArrayRef<int64_t> lhs = shapeOf(getLhs()), rhs = shapeOf(getRhs());
  if (lhs.size() < 2 || rhs.size() < 2)
    return emitOpError() << "operands must have rank 2 or more, got "
                         << getLhs().getType() << " and " << getRhs().getType();
  int64_t m = lhs[lhs.size() - 2], lhsK = lhs.back();
  int64_t rhsK = getTransposeB() ? rhs.back() : rhs[rhs.size() - 2];
  int64_t n = getTransposeB() ? rhs[rhs.size() - 2] : rhs.back();
  if (failed(verifyCompatibleShape(ArrayRef<int64_t>{lhsK}, ArrayRef<int64_t>{rhsK})))
    return emitOpError() << "contraction sizes differ: lhs has K = " << lhsK
                         << ", rhs has K = " << rhsK;
  SmallVector<int64_t> expected;
  if (!OpTrait::util::getBroadcastedShape(lhs.drop_back(2), rhs.drop_back(2),
                                          expected))
    return emitOpError() << "batch dimensions " << formatShape(lhs.drop_back(2))
                         << " and " << formatShape(rhs.drop_back(2))
                         << " do not broadcast";
  expected.append({m, n});
  return verifyResultShape(*this, expected, getResult());
}

std::pair<int64_t, int64_t> LinearOp::getWeightSizes() {
  ArrayRef<int64_t> weight = shapeOf(getWeight()),
                    result = shapeOf(getResult());
  if (getPacked())
    return {weight[1], result.empty() ? ShapedType::kDynamic : result.back()};
  if (getTransposeB())
    return {weight[1], weight[0]};
  return {weight[0], weight[1]};
}

LogicalResult LinearOp::verifyQuantizedInput(int64_t weightK) {
  if (!getQuantizeInput()) {
    if (getColumnSums())
      return emitOpError() << "column_sums needs quantize_input";
    return success();
  }
  if (isUint4() || !getColumnSums())
    return emitOpError() << "quantize_input needs int8 values without zero "
                            "points, and column_sums";
  if (ShapedType::isDynamic(weightK) || weightK % kRowQuad != 0 ||
      weightK > kMaxInt8Depth || static_cast<int64_t>(*getGroupSize()) < weightK)
    return emitOpError() << "quantize_input needs a static K that is a multiple of "
                         << kRowQuad << " and at most " << kMaxInt8Depth
                         << ", and one scale per column (group_size >= K), got K = "
                         << weightK << " and group_size " << *getGroupSize();
  SmallVector<int64_t> expectedSums = {shapeOf(getWeight())[0], kPanelWidth};
  if (failed(verifyCompatibleShape(shapeOf(getColumnSums()), expectedSums)))
    return emitOpError() << "column_sums must be " << formatShape(expectedSums)
                         << ", got " << getColumnSums().getType();
  return success();
}

LogicalResult LinearOp::verify() {
  ArrayRef<int64_t> input = shapeOf(getInput()), weight = shapeOf(getWeight());
  if (input.size() < 2 || weight.size() != (getPacked() ? 3 : 2))
    return emitOpError() << "needs an input of rank 2 or more and a "
                         << (getPacked() ? "3-D packed" : "2-D")
                         << " weight, got " << getInput().getType() << " and "
                         << getWeight().getType();
  if (getPacked()) {
    if (getTransposeB())
      return emitOpError() << "a packed weight cannot also be transposed";
    int64_t n = getWeightSizes().second;
    if (ShapedType::isDynamic(n) || weight[2] != panelRowElements() ||
        weight[0] != panelCount(n))
      return emitOpError() << "a packed weight for N columns must be [ceil(N/"
                           << kPanelWidth << "), K, " << panelRowElements()
                           << "] with N the result's static last dim, got "
                           << getWeight().getType() << " for "
                           << getResult().getType();
  }
  if (getInputTensorRange() && (!getQuantizeInput() || getInputScaleAttr()))
    return emitOpError() << "input_tensor_range needs quantize_input, and no static "
                            "input_scale";
  if (FloatAttr inputScale = getInputScaleAttr(); inputScale || getInputZeroPointAttr()) {
    if (!inputScale || !getInputZeroPointAttr() || !getQuantizeInput())
      return emitOpError() << "input_scale and input_zero_point come together, "
                              "with quantize_input";
    const float scale = inputScale.getValue().convertToFloat();
    const int64_t zeroPoint = getInputZeroPointAttr().getInt();
    if (!(scale > 0.0f) || !std::isfinite(scale) || zeroPoint < 0 || zeroPoint > 255)
      return emitOpError() << "a static input quantization needs a finite positive "
                              "input_scale and an input_zero_point in [0, 255], got "
                           << scale << " and " << zeroPoint;
  }
  auto [weightK, n] = getWeightSizes();
  if (failed(verifyCompatibleShape(ArrayRef<int64_t>{input.back()},
                                   ArrayRef<int64_t>{weightK})))
    return emitOpError() << "contraction sizes differ: input has K = "
                         << input.back() << ", weight has K = " << weightK;
  SmallVector<int64_t> expected(input.drop_back());
  expected.push_back(n);
  if (failed(verifyResultShape(*this, expected, getResult())))
    return failure();
  Type elementType = getType().getElementType();
  Type weightElement = cast<ShapedType>(getWeight().getType()).getElementType();
  if (Value scales = getScales()) {
    const bool uint4 = isUint4();
    if (!weightElement.isInteger(8) || weightElement.isUnsignedInteger() != uint4 ||
        !getPacked() || !getGroupSize() || *getGroupSize() <= 0)
      return emitOpError() << "a weight with scales must be packed "
                           << (uint4 ? "ui8 pairs of 4-bit values (it has zero points)"
                                     : "i8 values")
                           << " with a positive group_size, got "
                           << getWeight().getType();
    ArrayRef<int64_t> scalesShape = shapeOf(scales);
    int64_t groups = ShapedType::isDynamic(weightK)
                         ? ShapedType::kDynamic
                         : llvm::divideCeil(weightK, *getGroupSize());
    SmallVector<int64_t> expectedScales = {weight[0], groups, kPanelWidth};
    if (cast<ShapedType>(scales.getType()).getElementType() != elementType ||
        failed(verifyCompatibleShape(scalesShape, expectedScales)))
      return emitOpError() << "scales for groups of " << *getGroupSize()
                           << " rows must be " << formatShape(expectedScales)
                           << " of " << elementType << ", got "
                           << scales.getType();
    if (Value zeroPoints = getZeroPoints();
        zeroPoints && failed(verifyCompatibleShape(shapeOf(zeroPoints), scalesShape)))
      return emitOpError() << "zero points " << zeroPoints.getType()
                           << " must have the scales' shape " << formatShape(scalesShape);
    if (failed(verifyQuantizedInput(weightK)))
      return failure();
  } else if (getZeroPoints()) {
    return emitOpError() << "zero_points needs scales";
  } else if (getColumnSums() || getQuantizeInput()) {
    return emitOpError() << "quantize_input and column_sums need scales";
  } else if (getGroupSize()) {
    return emitOpError() << "group_size needs scales";
  } else if (weightElement != elementType) {
    return emitOpError() << "the weight's element type " << weightElement
                         << " is not the result's " << elementType
                         << " (a quantized weight needs scales)";
  }
  for (Value operand : {getBias(), getGate(), getResidual()})
    if (operand &&
        cast<RankedTensorType>(operand.getType()).getElementType() != elementType)
      return emitOpError() << "bias, gate and residual must have the result's "
                           << "element type " << elementType << ", got "
                           << operand.getType();
  if (Value bias = getBias())
    if (rankOf(bias) != 1 ||
        failed(verifyCompatibleShape(shapeOf(bias), ArrayRef<int64_t>{n})))
      return emitOpError() << "bias must have shape "
                           << formatShape(ArrayRef<int64_t>{n}) << ", got "
                           << bias.getType();
  for (auto [name, operand] : {std::pair<StringRef, Value>{"gate", getGate()},
                               {"residual", getResidual()}})
    if (operand &&
        (failed(verifyCompatibleShape(shapeOf(operand), expected)) ||
         failed(verifyCompatibleShape(operand.getType(), getType()))))
      return emitOpError() << name << " " << operand.getType()
                           << " does not have the result's shape "
                           << formatShape(expected) << " (" << getType()
                           << ")";
  return success();
}

int64_t RotaryOp::getRotaryWidth() { return shapeOf(getCos()).back(); }

LogicalResult RotaryOp::verify() {
  ArrayRef<int64_t> input = shapeOf(getInput());
  if (input.empty() || ShapedType::isDynamic(input.back()) ||
      input.back() <= 0)
    return emitOpError() << "needs a static, positive last dim, got "
                         << getInput().getType();
  int64_t width = input.back();
  for (Value operand : {getCos(), getSin()}) {
    ArrayRef<int64_t> shape = shapeOf(operand);
    if (shape.empty() || ShapedType::isDynamic(shape.back()) ||
        shape.back() <= 0 || shape.back() % 2 != 0 || shape.back() > width)
      return emitOpError() << "cos and sin need a static, even, positive last "
                           << "dim of at most the input's " << width
                           << ", got " << operand.getType();
  }
  if (shapeOf(getSin()).back() != getRotaryWidth())
    return emitOpError() << "cos and sin must rotate as many elements, got "
                         << getCos().getType() << " and " << getSin().getType();
  ArrayRef<int64_t> result = shapeOf(getResult());
  if (result.empty() || result.back() != width)
    return emitOpError() << "the result must have the input's last dim "
                         << width << ", got " << getResult().getType();
  // The other dims broadcast as in NumPy (the last is the input's).
  SmallVector<int64_t> leading(input.drop_back());
  for (Value operand : {getCos(), getSin()}) {
    SmallVector<int64_t> broadcast;
    if (!OpTrait::util::getBroadcastedShape(leading, shapeOf(operand).drop_back(),
                                            broadcast))
      return emitOpError() << "operands " << getInput().getType() << ", "
                           << getCos().getType() << " and " << getSin().getType()
                           << " do not broadcast";
    leading = std::move(broadcast);
  }
  if (leading.size() + 1 != result.size() ||
      failed(verifyCompatibleShape(leading, result.drop_back())))
    return emitOpError() << "the result " << getResult().getType()
                         << " is not the operands' broadcast shape "
                         << formatShape(leading) << " and last dim " << width;
  return success();
}

/// Whether two sizes can be equal; else an error naming `what`.
static LogicalResult agreeSizes(Operation *op, int64_t a, int64_t b, StringRef what) {
  if (failed(verifyCompatibleShape(ArrayRef<int64_t>{a}, ArrayRef<int64_t>{b})))
    return op->emitOpError() << what << " differ: " << a << " and " << b;
  return success();
}

/// What both attention ops demand of their rank-4 query, key, value and
/// result: one batch, keys and values alike, query and key heads as wide,
/// and a whole number of query heads per key/value head.
static LogicalResult verifyAttentionOperands(Operation *op, Value query, Value key,
                                             Value value, Value result) {
  for (Value operand : {query, key, value, result})
    if (rankOf(operand) != 4)
      return op->emitOpError() << "query, key, value and result must have rank 4, "
                               << "got " << operand.getType();
  ArrayRef<int64_t> q = shapeOf(query), k = shapeOf(key), v = shapeOf(value);
  if (failed(agreeSizes(op, q[0], k[0], "query and key batch sizes")) ||
      failed(agreeSizes(op, k[0], v[0], "key and value batch sizes")) ||
      failed(agreeSizes(op, k[1], v[1], "key and value head counts")) ||
      failed(agreeSizes(op, k[2], v[2], "key and value lengths")) ||
      failed(agreeSizes(op, q[3], k[3], "query and key head sizes")))
    return failure();
  if (!ShapedType::isDynamic(q[1]) && !ShapedType::isDynamic(k[1]) &&
      (k[1] == 0 || q[1] % k[1] != 0))
    return op->emitOpError() << "the " << q[1]
                             << " query heads are not a multiple of the " << k[1]
                             << " key/value heads";
  return success();
}

LogicalResult PagedAttentionOp::verify() {
  if (failed(verifyAttentionOperands(*this, getQuery(), getKey(), getValue(),
                                     getResult())))
    return failure();
  if (rankOf(getCache()) != 6)
    return emitOpError() << "the cache must have rank 6 [blocks, layers, 2, "
                         << "kv_heads, block_size, head_dim], got "
                         << getCache().getType();
  Type element = cast<ShapedType>(getQuery().getType()).getElementType();
  Type cacheElement = cast<ShapedType>(getCache().getType()).getElementType();
  if (cacheElement != element &&
      !(element.isF32() && (cacheElement.isF16() || cacheElement.isBF16())))
    return emitOpError() << "the cache holds the query's element type, or f16 or "
                         << "bf16 for an f32 query; got " << cacheElement
                         << " for " << element;
  if (rankOf(getBlockTables()) != 2)
    return emitOpError() << "the block tables must have rank 2 [batch, "
                         << "blocks], got " << getBlockTables().getType();
  ArrayRef<int64_t> query = shapeOf(getQuery()), key = shapeOf(getKey()),
                    value = shapeOf(getValue()), cache = shapeOf(getCache());
  for (int64_t dim : {1, 2, 3, 4, 5})
    if (ShapedType::isDynamic(cache[dim]))
      return emitOpError() << "the cache's dims other than the block count "
                           << "must be static, got " << getCache().getType();
  Operation *op = *this;
  if (failed(agreeSizes(op, value[3], key[3], "key and value head sizes")) ||
      failed(agreeSizes(op, cache[2], 2, "the cache's key/value dim and 2")) ||
      failed(agreeSizes(op, cache[3], key[1], "the cache's and the key's head counts")) ||
      failed(agreeSizes(op, cache[5], key[3], "the cache's and the key's head sizes")) ||
      failed(agreeSizes(op, shapeOf(getBlockTables())[0], query[0],
                        "block table and query batch sizes")) ||
      failed(agreeSizes(op, shapeOf(getPastLengths())[0], query[0],
                        "past length and query batch sizes")))
    return failure();
  // The attribute's getter reads it unsigned; a negative layer is signed.
  const int64_t layer = static_cast<int64_t>(getLayer());
  if (layer < 0 || layer >= cache[1])
    return emitOpError() << "layer " << layer << " is not one of the cache's " << cache[1]
                         << " layers";
  return verifyResultShape(*this, {query[0], query[1], query[2], value[3]},
                           getResult(), "result");
}

LogicalResult AttentionOp::verify() {
  if (failed(verifyAttentionOperands(*this, getQuery(), getKey(), getValue(),
                                     getResult())))
    return failure();
  ArrayRef<int64_t> query = shapeOf(getQuery()), key = shapeOf(getKey()),
                    value = shapeOf(getValue());
  auto agree = [&](int64_t a, int64_t b, StringRef what) {
    return agreeSizes(*this, a, b, what);
  };
  int64_t keyLength = key[2];
  if (!getPast().empty()) {
    if (getPast().size() != 2 || getPresents().size() != 2)
      return emitOpError() << "past takes a key and a value and gives two "
                           << "presents, got " << getPast().size()
                           << " past operands and " << getPresents().size()
                           << " presents";
    SmallVector<Value> cache(getPast());
    llvm::append_range(cache, getPresents());
    for (Value operand : cache) {
      if (rankOf(operand) != 4)
        return emitOpError() << "the past and presents must have rank 4, got "
                             << operand.getType();
      if (failed(verifyInputElementType(*this, operand, getQuery(),
                                        "a past or present")))
        return failure();
    }
    ArrayRef<int64_t> pastKey = shapeOf(getPastKey()),
                      pastValue = shapeOf(getPastValue());
    if (failed(agree(pastKey[0], key[0], "past key and key batch sizes")) ||
        failed(agree(pastKey[1], key[1], "past key and key head counts")) ||
        failed(agree(pastKey[3], key[3], "past key and key head sizes")) ||
        failed(agree(pastValue[0], value[0],
                     "past value and value batch sizes")) ||
        failed(agree(pastValue[1], value[1],
                     "past value and value head counts")) ||
        failed(
            agree(pastValue[3], value[3], "past value and value head sizes")) ||
        failed(agree(pastKey[2], pastValue[2], "past key and value lengths")))
      return failure();
    keyLength =
        ShapedType::isDynamic(key[2]) || ShapedType::isDynamic(pastKey[2])
            ? ShapedType::kDynamic
            : pastKey[2] + key[2];
    if (failed(verifyResultShape(*this, {key[0], key[1], keyLength, key[3]},
                                 getPresents()[0], "present key")) ||
        failed(verifyResultShape(*this,
                                 {value[0], value[1], keyLength, value[3]},
                                 getPresents()[1], "present value")))
      return failure();
  } else if (!getPresents().empty()) {
    return emitOpError() << "has " << getPresents().size()
                         << " presents but no past";
  }
  SmallVector<int64_t> scores = {query[0], query[1], query[2], keyLength};
  for (auto [name, mask] :
       {std::pair<StringRef, Value>{"position_bias", getPositionBias()},
        {"keep", getKeep()},
        {"bias", getBias()}}) {
    if (!mask)
      continue;
    SmallVector<int64_t> broadcast;
    if (rankOf(mask) > 4 ||
        !OpTrait::util::getBroadcastedShape(scores, shapeOf(mask), broadcast) ||
        failed(verifyCompatibleShape(broadcast, scores)))
      return emitOpError() << name << " shape " << formatShape(shapeOf(mask))
                           << " does not broadcast to the scores' shape "
                           << formatShape(scores);
  }
  for (auto [name, bias] :
       {std::pair<StringRef, Value>{"position_bias", getPositionBias()},
        {"bias", getBias()}})
    if (bias && failed(verifyInputElementType(*this, bias, getQuery(), name)))
      return failure();
  return verifyResultShape(*this, {query[0], query[1], query[2], value[3]},
                           getResult());
}

template <typename AxisOp>
static LogicalResult verifyAxisOp(AxisOp op) {
  return verifyAxis(op, op.getAxis(), rankOf(op.getInput()));
}
LogicalResult SoftmaxOp::verify() { return verifyAxisOp(*this); }
LogicalResult LogSoftmaxOp::verify() { return verifyAxisOp(*this); }

LogicalResult LayerNormOp::verify() {
  if (failed(verifyAxis(*this, getAxis(), rankOf(getInput()))) ||
      failed(verifyTrailingOperand(*this, getScale(), getInput(), getAxis(), "scale")))
    return failure();
  if (!getBias())
    return success();
  if (failed(verifyInputElementType(*this, getBias(), getInput(), "bias")))
    return failure();
  return verifyTrailingOperand(*this, getBias(), getInput(), getAxis(), "bias");
}

LogicalResult RmsNormOp::verify() {
  if (failed(verifyAxis(*this, getAxis(), rankOf(getInput()))))
    return failure();
  return verifyTrailingOperand(*this, getScale(), getInput(), getAxis(), "scale");
}

/// The shape a reduction over `axes` leaves.
static SmallVector<int64_t> reducedShape(ArrayRef<int64_t> shape,
                                         ArrayRef<int64_t> axes, bool keepDims) {
  SmallVector<int64_t> result;
  for (auto [i, dim] : llvm::enumerate(shape)) {
    if (!llvm::is_contained(axes, static_cast<int64_t>(i)))
      result.push_back(dim);
    else if (keepDims)
      result.push_back(1);
  }
  return result;
}

template <typename ReduceOp>
static LogicalResult verifyReduceOp(ReduceOp op) {
  if (failed(verifyAxisList(op, op.getAxes(), rankOf(op.getInput()))))
    return failure();
  return verifyResultShape(
      op, reducedShape(shapeOf(op.getInput()), op.getAxes(), op.getKeepDims()),
      op.getResult());
}
LogicalResult ReduceSumOp::verify() { return verifyReduceOp(*this); }
LogicalResult ReduceMeanOp::verify() { return verifyReduceOp(*this); }
LogicalResult ReduceMaxOp::verify() { return verifyReduceOp(*this); }
LogicalResult ReduceMinOp::verify() { return verifyReduceOp(*this); }
LogicalResult ReduceProdOp::verify() { return verifyReduceOp(*this); }

//===----------------------------------------------------------------------===//
// Data movement and shape ops
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::verify() {
  if (failed(verifyListLength(*this, getShape(), rankOf(getResult()), "shape",
                              "the result rank")))
    return failure();
  auto input = cast<RankedTensorType>(getInput().getType());
  auto result = cast<RankedTensorType>(getResult().getType());
  if (input.hasStaticShape() && result.hasStaticShape() &&
      input.getNumElements() != result.getNumElements())
    return emitOpError() << "cannot reshape " << input.getNumElements()
                         << " elements into " << result << " ("
                         << result.getNumElements() << " elements)";
  return success();
}

LogicalResult TransposeOp::verify() {
  ArrayRef<int64_t> perm = getPermutation();
  ArrayRef<int64_t> input = shapeOf(getInput());
  if (perm.size() != input.size())
    return emitOpError() << "permutation " << formatShape(perm) << " has "
                         << perm.size() << " entries but the input has rank "
                         << input.size();
  SmallVector<int64_t> expected;
  llvm::SmallSet<int64_t, 8> seen;
  for (int64_t axis : perm) {
    if (axis < 0 || axis >= static_cast<int64_t>(input.size()) ||
        !seen.insert(axis).second)
      return emitOpError() << formatShape(perm) << " is not a permutation of 0.."
                           << input.size() - 1;
    expected.push_back(input[axis]);
  }
  return verifyResultShape(*this, expected, getResult());
}

LogicalResult SqueezeOp::verify() {
  ArrayRef<int64_t> input = shapeOf(getInput());
  if (failed(verifyAxisList(*this, getAxes(), input.size())))
    return failure();
  for (int64_t axis : getAxes())
    if (!ShapedType::isDynamic(input[axis]) && input[axis] != 1)
      return emitOpError() << "cannot squeeze axis " << axis << " of size "
                           << input[axis];
  return verifyResultShape(*this, reducedShape(input, getAxes(), false),
                           getResult());
}

LogicalResult UnsqueezeOp::verify() {
  ArrayRef<int64_t> input = shapeOf(getInput());
  int64_t rank = input.size() + getAxes().size();
  if (failed(verifyAxisList(*this, getAxes(), rank)))
    return failure();
  SmallVector<int64_t> expected;
  const int64_t *next = input.begin();
  for (int64_t i = 0; i < rank; ++i)
    expected.push_back(llvm::is_contained(getAxes(), i) ? 1 : *next++);
  return verifyResultShape(*this, expected, getResult());
}

LogicalResult ConcatOp::verify() {
  if (getInputs().empty())
    return emitOpError() << "needs at least one input";
  SmallVector<int64_t> expected(shapeOf(getInputs().front()));
  if (failed(verifyAxis(*this, getAxis(), expected.size())))
    return failure();
  int64_t axis = getAxis();
  expected[axis] = 0;
  for (Value input : getInputs()) {
    ArrayRef<int64_t> shape = shapeOf(input);
    if (shape.size() != expected.size())
      return emitOpError() << "inputs have different ranks: " << expected.size()
                           << " and " << shape.size();
    for (auto [i, dim] : llvm::enumerate(shape)) {
      if (static_cast<int64_t>(i) == axis) {
        expected[i] = ShapedType::isDynamic(dim) || ShapedType::isDynamic(expected[i])
                          ? ShapedType::kDynamic
                          : expected[i] + dim;
      } else if (ShapedType::isDynamic(expected[i])) {
        expected[i] = dim;
      } else if (!ShapedType::isDynamic(dim) && dim != expected[i]) {
        return emitOpError() << "inputs differ in dimension " << i << " ("
                             << expected[i] << " vs " << dim
                             << "), which is not the concatenation axis";
      }
    }
  }
  return verifyResultShape(*this, expected, getResult());
}

LogicalResult SplitOp::verify() {
  ArrayRef<int64_t> input = shapeOf(getInput());
  if (failed(verifyAxis(*this, getAxis(), input.size())))
    return failure();
  ArrayRef<int64_t> sizes = getSizes();
  if (sizes.size() != getNumResults())
    return emitOpError() << "has " << sizes.size() << " sizes but "
                         << getNumResults() << " results";
  if (Value computed = getSplitSizes()) {
    int64_t length = shapeOf(computed)[0];
    if (!ShapedType::isDynamic(length) &&
        length != static_cast<int64_t>(getNumResults()))
      return emitOpError() << "has " << length << " computed sizes but "
                           << getNumResults() << " results";
  }
  Type elementType = getElementTypeOrSelf(getInput());
  for (Value result : getResults())
    if (getElementTypeOrSelf(result) != elementType)
      return emitOpError() << "results must have the input's element type "
                           << elementType << ", got " << result.getType();
  int64_t total = 0;
  bool allStatic = true;
  for (auto [size, result] : llvm::zip(sizes, getResults())) {
    if (ShapedType::isDynamic(size) && !getSplitSizes())
      return emitOpError() << "has a size known only at run time but no "
                           << "computed sizes";
    if (!ShapedType::isDynamic(size) && size < 0)
      return emitOpError() << "split sizes must be non-negative, got " << size;
    allStatic &= !ShapedType::isDynamic(size);
    total += ShapedType::isDynamic(size) ? 0 : size;
    SmallVector<int64_t> expected(input);
    expected[getAxis()] = size;
    if (failed(verifyResultShape(*this, expected, result)))
      return failure();
  }
  int64_t dim = input[getAxis()];
  if (allStatic && !ShapedType::isDynamic(dim) && dim != total)
    return emitOpError() << "split sizes add up to " << total
                         << " but the axis has size " << dim;
  return success();
}

LogicalResult SliceOp::verify() {
  ArrayRef<int64_t> input = shapeOf(getInput());
  ArrayRef<int64_t> axes = getAxes();
  llvm::SmallSet<int64_t, 8> seen;
  for (int64_t axis : axes) {
    if (failed(verifyAxis(*this, axis, input.size())))
      return failure();
    if (!seen.insert(axis).second)
      return emitOpError() << "axes " << formatShape(axes) << " must be unique";
  }
  for (auto [value, name] : {std::pair{getStarts(), "starts"},
                             std::pair{getEnds(), "ends"},
                             std::pair{getSteps(), "steps"}})
    if (failed(verifyListLength(*this, value, axes.size(), name,
                                "the number of axes")))
      return failure();
  SmallVector<int64_t> expected(input);
  for (int64_t axis : axes)
    expected[axis] = ShapedType::kDynamic;
  if (failed(verifyResultShape(*this, expected, getResult())))
    return failure();
  // A slice never grows a dimension.
  for (int64_t axis : axes) {
    int64_t in = input[axis], out = shapeOf(getResult())[axis];
    if (!ShapedType::isDynamic(in) && !ShapedType::isDynamic(out) && out > in)
      return emitOpError() << "result dimension " << axis << " of size " << out
                           << " exceeds the input's " << in;
  }
  return success();
}

LogicalResult GatherOp::verify() {
  ArrayRef<int64_t> data = shapeOf(getData());
  if (failed(verifyAxis(*this, getAxis(), data.size())))
    return failure();
  SmallVector<int64_t> expected(data.take_front(getAxis()));
  llvm::append_range(expected, shapeOf(getIndices()));
  llvm::append_range(expected, data.drop_front(getAxis() + 1));
  return verifyResultShape(*this, expected, getResult());
}

/// gather_elements' and scatter_elements' indices: the data's rank, a
/// valid axis, and off the axis no static dim past the data's.
static LogicalResult verifyElementIndices(Operation *op, ArrayRef<int64_t> data,
                                          ArrayRef<int64_t> indices, int64_t axis) {
  if (data.size() != indices.size())
    return op->emitOpError() << "indices rank " << indices.size()
                             << " differs from data rank " << data.size();
  if (failed(verifyAxis(op, axis, data.size())))
    return failure();
  for (auto [i, sizes] : llvm::enumerate(llvm::zip(data, indices))) {
    auto [in, index] = sizes;
    if (static_cast<int64_t>(i) != axis && !ShapedType::isDynamic(in) &&
        !ShapedType::isDynamic(index) && index > in)
      return op->emitOpError() << "indices dimension " << i << " of size " << index
                               << " exceeds the data's " << in;
  }
  return success();
}

LogicalResult GatherElementsOp::verify() {
  ArrayRef<int64_t> indices = shapeOf(getIndices());
  if (failed(verifyElementIndices(*this, shapeOf(getData()), indices, getAxis())))
    return failure();
  return verifyResultShape(*this, indices, getResult());
}

template <typename ArgReduceOp>
static LogicalResult verifyArgReduceOp(ArgReduceOp op) {
  int64_t axis = op.getAxis();
  if (failed(verifyAxis(op, axis, rankOf(op.getInput()))))
    return failure();
  return verifyResultShape(
      op, reducedShape(shapeOf(op.getInput()), {axis}, op.getKeepDims()),
      op.getResult());
}
LogicalResult ArgMaxOp::verify() { return verifyArgReduceOp(*this); }
LogicalResult ArgMinOp::verify() { return verifyArgReduceOp(*this); }

LogicalResult TopKOp::verify() {
  ArrayRef<int64_t> input = shapeOf(getInput());
  if (failed(verifyAxis(*this, getAxis(), input.size())))
    return failure();
  auto kType = cast<RankedTensorType>(getK().getType());
  if (kType.getRank() > 1 || (kType.getRank() == 1 && kType.getDimSize(0) != 1))
    return emitOpError() << "k must be a 0-d or one-element tensor, got " << kType;
  SmallVector<int64_t> expected(input);
  expected[getAxis()] = shapeOf(getValues())[getAxis()];
  if (failed(verifyResultShape(*this, expected, getValues(), "values")))
    return failure();
  if (!ShapedType::isDynamic(input[getAxis()]) &&
      !ShapedType::isDynamic(expected[getAxis()]) &&
      expected[getAxis()] > input[getAxis()])
    return emitOpError() << "k = " << expected[getAxis()]
                         << " exceeds the axis size " << input[getAxis()];
  return verifyResultShape(*this, shapeOf(getValues()), getIndices(), "indices");
}

LogicalResult PadOp::verify() {
  int64_t rank = rankOf(getInput());
  if (failed(verifyListLength(*this, getPads(), 2 * rank, "pads", "twice the rank")))
    return failure();
  if (Value value = getValue()) {
    if (rankOf(value) != 0)
      return emitOpError() << "value must be a 0-d tensor, got " << value.getType();
    if (failed(verifyInputElementType(*this, value, getInput(), "value")))
      return failure();
    if (getMode() != PadMode::constant)
      return emitOpError() << "only constant mode takes a value";
  }
  if (rankOf(getResult()) != rank)
    return emitOpError() << "result rank " << rankOf(getResult())
                         << " differs from the input's " << rank;
  return success();
}

LogicalResult ScatterElementsOp::verify() {
  ArrayRef<int64_t> data = shapeOf(getData()), indices = shapeOf(getIndices());
  if (failed(verifyCompatibleShape(indices, shapeOf(getUpdates()))))
    return emitOpError() << "updates " << getUpdates().getType()
                         << " and indices " << getIndices().getType()
                         << " must have one shape";
  if (failed(verifyElementIndices(*this, data, indices, getAxis())))
    return failure();
  return verifyResultShape(*this, data, getResult());
}

LogicalResult ScatterNdOp::verify() {
  ArrayRef<int64_t> data = shapeOf(getData()), indices = shapeOf(getIndices());
  if (indices.empty())
    return emitOpError() << "indices must have rank 1 or more";
  int64_t tuple = indices.back();
  if (ShapedType::isDynamic(tuple))
    return emitOpError() << "the last dimension of the indices (the index tuple "
                            "length) must be static, got "
                         << getIndices().getType();
  if (tuple > static_cast<int64_t>(data.size()))
    return emitOpError() << "index tuples of " << tuple
                         << " do not fit data of rank " << data.size();
  SmallVector<int64_t> updates(indices.drop_back());
  updates.append(data.begin() + tuple, data.end());
  if (failed(verifyResultShape(*this, updates, getUpdates(), "updates")))
    return failure();
  return verifyResultShape(*this, data, getResult());
}

FailureOr<EinsumTerms> kiln::parseEinsumEquation(StringRef equation,
                                                 std::string &error) {
  auto [lhs, output] = equation.split("->");
  if (lhs.size() == equation.size()) {
    error = "equation \"" + equation.str() + "\" has no '->'";
    return failure();
  }
  EinsumTerms terms;
  SmallVector<StringRef> inputs;
  lhs.split(inputs, ',');
  for (StringRef term : inputs)
    terms.inputs.push_back(term.str());
  terms.output = output.str();
  inputs.push_back(output);
  for (StringRef term : inputs)
    for (char c : term)
      if (!llvm::isAlpha(c)) {
        error = "equation \"" + equation.str() + "\" has '" + std::string(1, c) +
                "'; kiln.einsum takes letters only";
        return failure();
      }
  inputs.pop_back();
  for (auto [i, c] : llvm::enumerate(output)) {
    if (output.find(c, i + 1) != StringRef::npos) {
      error = "output letter '" + std::string(1, c) + "' is repeated";
      return failure();
    }
    if (llvm::none_of(inputs, [c = c](StringRef term) { return term.contains(c); })) {
      error = "output letter '" + std::string(1, c) + "' is in no input";
      return failure();
    }
  }
  return terms;
}

LogicalResult EinsumOp::verify() {
  std::string error;
  auto terms = parseEinsumEquation(getEquation(), error);
  if (failed(terms))
    return emitOpError() << error;
  if (terms->inputs.size() != getInputs().size())
    return emitOpError() << "equation \"" << getEquation() << "\" has "
                         << terms->inputs.size() << " inputs but the op has "
                         << getInputs().size();
  // Each letter's size: the first static one seen, which every other static
  // one must equal.
  llvm::DenseMap<char, int64_t> sizes;
  for (auto [term, input] : llvm::zip(terms->inputs, getInputs())) {
    ArrayRef<int64_t> shape = shapeOf(input);
    if (term.size() != shape.size())
      return emitOpError() << "term \"" << term << "\" has " << term.size()
                           << " letters but its input has rank " << shape.size();
    for (auto [c, dim] : llvm::zip(term, shape)) {
      auto [it, inserted] = sizes.try_emplace(c, dim);
      if (ShapedType::isDynamic(it->second))
        it->second = dim;
      else if (!ShapedType::isDynamic(dim) && dim != it->second)
        return emitOpError() << "letter '" << c << "' has sizes " << it->second
                             << " and " << dim;
    }
  }
  SmallVector<int64_t> expected;
  for (char c : terms->output)
    expected.push_back(sizes.lookup(c));
  return verifyResultShape(*this, expected, getResult());
}

LogicalResult GatherNdOp::verify() {
  ArrayRef<int64_t> data = shapeOf(getData()), indices = shapeOf(getIndices());
  int64_t batchDims = getBatchDims();
  if (indices.empty())
    return emitOpError() << "indices must have rank 1 or more";
  int64_t tuple = indices.back();
  if (ShapedType::isDynamic(tuple))
    return emitOpError() << "the last dimension of the indices (the index tuple "
                            "length) must be static, got "
                         << getIndices().getType();
  if (batchDims < 0 || batchDims >= static_cast<int64_t>(indices.size()) ||
      batchDims + tuple > static_cast<int64_t>(data.size()))
    return emitOpError() << "batch_dims " << batchDims << " and index tuples of "
                         << tuple << " do not fit data of rank " << data.size()
                         << " and indices of rank " << indices.size();
  for (int64_t i = 0; i < batchDims; ++i)
    if (!ShapedType::isDynamic(data[i]) && !ShapedType::isDynamic(indices[i]) &&
        data[i] != indices[i])
      return emitOpError() << "batch dimension " << i << " differs: data "
                           << data[i] << ", indices " << indices[i];
  SmallVector<int64_t> expected(indices.drop_back());
  llvm::append_range(expected, data.drop_front(batchDims + tuple));
  return verifyResultShape(*this, expected, getResult());
}

LogicalResult CumSumOp::verify() {
  return verifyAxis(*this, getAxis(), rankOf(getInput()));
}

LogicalResult ExpandOp::verify() {
  int64_t length = shapeOf(getShape())[0];
  int64_t inputRank = rankOf(getInput()), resultRank = rankOf(getResult());
  if (!ShapedType::isDynamic(length) && resultRank != std::max(inputRank, length))
    return emitOpError() << "result rank " << resultRank << " is not max(input rank "
                         << inputRank << ", shape length " << length << ")";
  if (resultRank < inputRank)
    return emitOpError() << "result rank " << resultRank
                         << " is below the input rank " << inputRank;
  // Every static input dimension other than 1 must survive the broadcast.
  ArrayRef<int64_t> input = shapeOf(getInput()), result = shapeOf(getResult());
  for (int64_t i = 0; i < inputRank; ++i) {
    int64_t in = input[inputRank - 1 - i], out = result[resultRank - 1 - i];
    if (!ShapedType::isDynamic(in) && in != 1 && !ShapedType::isDynamic(out) &&
        in != out)
      return emitOpError() << "input dimension of size " << in
                           << " cannot expand to " << out;
  }
  return success();
}

LogicalResult TileOp::verify() {
  if (rankOf(getInput()) != rankOf(getResult()))
    return emitOpError() << "result rank " << rankOf(getResult())
                         << " differs from input rank " << rankOf(getInput());
  if (failed(verifyListLength(*this, getRepeats(), rankOf(getInput()), "repeats",
                              "the input rank")))
    return failure();
  for (auto [i, dims] : llvm::enumerate(llvm::zip(shapeOf(getInput()), shapeOf(getResult())))) {
    auto [in, out] = dims;
    if (!ShapedType::isDynamic(in) && !ShapedType::isDynamic(out) && in > 0 &&
        out % in != 0)
      return emitOpError() << "result dimension " << i << " of size " << out
                           << " is not a multiple of the input's " << in;
  }
  return success();
}

LogicalResult TriluOp::verify() {
  if (rankOf(getInput()) < 2)
    return emitOpError() << "input must have rank 2 or more, got "
                         << getInput().getType();
  if (Value diagonal = getDiagonal()) {
    if (getK() != 0)
      return emitOpError() << "takes k from the attribute or the diagonal "
                              "operand, not both";
    ArrayRef<int64_t> shape = shapeOf(diagonal);
    if (shape.size() > 1 || (shape.size() == 1 && shape[0] != 1))
      return emitOpError() << "diagonal must hold one value (0-d or [1]), got "
                           << diagonal.getType();
  }
  return success();
}

LogicalResult RangeOp::verify() {
  for (Value operand : getOperands())
    if (rankOf(operand) != 0)
      return emitOpError() << "start, limit and delta must be 0-d tensors, got "
                           << operand.getType();
  return success();
}

LogicalResult ShapeOfOp::verify() {
  return verifyListLength(*this, getResult(), rankOf(getInput()), "result",
                          "the input rank");
}

LogicalResult DimOp::verify() {
  return verifyAxis(*this, getIndex(), rankOf(getInput()), "index");
}
