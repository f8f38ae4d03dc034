//===- QuantizedOps.cpp - Models that arrive quantized ---------------------===//
//
// ONNX Runtime's com.microsoft MatMulNBits, the 4-bit weight-only format its
// quantization tool writes: the weight's values, scales and zero points are
// laid out again, at import, as kiln.linear's packed 4-bit form (the one
// kiln-quantize-weights makes), so the product runs on the same kernels and
// is never dequantized.
//
// QuantizeLinear and DequantizeLinear (QDQ, what ORT's quantize_static
// writes) become kiln.quantize and kiln.dequantize, 8-bit only;
// DynamicQuantizeLinear and MatMulInteger (what its quantize_dynamic
// writes) kiln.dynamic_quantize and kiln.matmul_integer. The int8 products
// take int8 operands, so a uint8 quantization is held as int8 with values
// and zero point lowered by 128, which dequantizes to the same numbers and
// leaves every difference from the zero point as it was. DequantizeLinear,
// MatMulInteger and QLinearMatMul read such a value as it is held; any
// other reader gets the uint8 value back (ImportContext::bindUint8View).
// QLinearMatMul (quantize_static's QOperator format) becomes the quantize
// of the product of the dequantized operands, which folds as QDQ does.
// kiln-fold-quantized-products then folds each product of a quantized
// activation by a quantized weight into an int8 kiln.linear.
//
//===----------------------------------------------------------------------===//
#include "compiler/Importer/ImportContext.h"
#include "dialects/Kiln/IR/KilnOps.h"
#include "passes/WeightBlobs.h"
#include "passes/WeightQuantizer.h"

#include <cstring>

using namespace mlir;

namespace kiln {
namespace {

constexpr int64_t kPanelWidth = LinearOp::kPanelWidth;
static_assert(kPanelWidth == quantizer::kPanelWidth,
              "the quantizer's 4-bit layout is the linear's");
/// MatMulNBits' zero point when none is given: the middle of [0, 15].
constexpr uint8_t kDefaultZeroPoint = 8;

/// The bytes of constant input `index` (a splat expanded into `storage`),
/// or nothing when the input is not a constant whose data is at hand.
std::optional<ArrayRef<char>> constantBytes(ImportContext &ctx,
                                            const onnx::NodeProto &node,
                                            int index,
                                            std::vector<char> &storage) {
  Value value = ctx.input(node, index);
  auto constant = value ? value.getDefiningOp<ConstantOp>() : ConstantOp();
  if (!constant)
    return std::nullopt;
  return elementBytes(constant.getValue(), storage);
}

/// 4-bit value `index` of packed `bytes`, two to a byte, the low 4 bits
/// first.
uint8_t nibble(ArrayRef<char> bytes, int64_t index) {
  return (static_cast<uint8_t>(bytes[index / 2]) >> (index % 2 * 4)) & 0xF;
}

/// com.microsoft MatMulNBits with bits = 4: Y = A · Bᵀ (+ bias) for A
/// [..., K] and B [N, K] stored as [N, blocks, block_size / 2] bytes of
/// 4-bit values (the low 4 bits first along K), where element [n][k] is
/// (value − zero point) · scale of its block of block_size values along K:
/// scales [N · blocks] (or [N, blocks]) and zero points [N · ceil(blocks /
/// 2)] packed like the values (8 when absent). B, the scales and the zero
/// points must be initializers.
LogicalResult importMatMulNBits(ImportContext &ctx, const onnx::NodeProto &node) {
  for (StringRef required : {"K", "N", "block_size"})
    if (!ctx.findAttr(node, required))
      return ctx.error(node) << "needs the attribute " << required;
  auto k = ctx.intAttr(node, "K", 0);
  auto n = ctx.intAttr(node, "N", 0);
  auto blockSize = ctx.intAttr(node, "block_size", 0);
  auto bits = ctx.intAttr(node, "bits", 4);
  if (failed(k) || failed(n) || failed(blockSize) || failed(bits))
    return failure();
  if (*bits != 4)
    return ctx.error(node) << "kiln reads 4-bit weights only, got bits = " << *bits;
  // Bounds that keep the block count's arithmetic far from overflow; B's
  // shape, which its data bounds, must then match them.
  constexpr int64_t kMaxSize = int64_t(1) << 31, kMaxBlockSize = int64_t(1) << 16;
  if (*k < 1 || *n < 1 || *k >= kMaxSize || *n >= kMaxSize)
    return ctx.error(node) << "K and N must be in [1, 2^31), got " << *k << " and " << *n;
  if (*blockSize < 16 || *blockSize > kMaxBlockSize || (*blockSize & (*blockSize - 1)) != 0)
    return ctx.error(node) << "block_size must be a power of 2 in [16, 65536], got "
                           << *blockSize;
  auto operands = ctx.requiredInputs(node, 3);
  if (failed(operands))
    return failure();
  Value a = (*operands)[0];
  auto aType = cast<RankedTensorType>(a.getType());
  if (!aType.getElementType().isF32() || aType.getRank() < 2 ||
      (!aType.isDynamicDim(aType.getRank() - 1) && aType.getShape().back() != *k))
    return ctx.error(node) << "A must be f32 of rank 2 or more with K = " << *k
                           << " columns, got " << a.getType();
  if (ctx.input(node, 4))
    return ctx.error(node) << "g_idx (a permutation of K) is not supported";

  const int64_t blocks = (*k + *blockSize - 1) / *blockSize;
  const int64_t blockBytes = *blockSize / 2;
  const int64_t zeroPointBytes = (blocks + 1) / 2;
  auto hasShape = [&](int index, ArrayRef<ArrayRef<int64_t>> shapes, bool uint8) {
    auto type = cast<RankedTensorType>(ctx.input(node, index).getType());
    bool elementOk = uint8 ? type.getElementType().isUnsignedInteger(8)
                           : type.getElementType().isF32();
    return elementOk && llvm::is_contained(shapes, type.getShape());
  };
  std::vector<char> valueStorage, scaleStorage, zeroPointStorage;
  std::optional<ArrayRef<char>> values =
      constantBytes(ctx, node, 1, valueStorage);
  if (!values || !hasShape(1, {{*n, blocks, blockBytes}}, /*uint8=*/true))
    return ctx.error(node) << "B must be a uint8 initializer [N, blocks, block_size / 2] = ["
                           << *n << ", " << blocks << ", " << blockBytes << "], got "
                           << ctx.input(node, 1).getType();
  std::optional<ArrayRef<char>> scales = constantBytes(ctx, node, 2, scaleStorage);
  if (!scales || !hasShape(2, {{*n * blocks}, {*n, blocks}}, /*uint8=*/false))
    return ctx.error(node) << "scales must be an f32 initializer of N · blocks = "
                           << *n * blocks << " values, got " << ctx.input(node, 2).getType();
  std::optional<ArrayRef<char>> zeroPoints;
  if (ctx.input(node, 3)) {
    zeroPoints = constantBytes(ctx, node, 3, zeroPointStorage);
    if (!zeroPoints ||
        !hasShape(3, {{*n * zeroPointBytes}, {*n, zeroPointBytes}}, /*uint8=*/true))
      return ctx.error(node) << "zero_points must be a uint8 initializer of N · ceil(blocks / 2) = "
                             << *n * zeroPointBytes << " bytes of 4-bit values, got "
                             << ctx.input(node, 3).getType();
  }
  Value bias = ctx.input(node, 5);
  if (bias) {
    auto biasType = cast<RankedTensorType>(bias.getType());
    if (!biasType.getElementType().isF32() || biasType.getRank() != 1 ||
        (!biasType.isDynamicDim(0) && biasType.getDimSize(0) != *n))
      return ctx.error(node) << "bias must be f32 [N] = [" << *n << "], got "
                             << bias.getType();
  }

  // kiln.linear's 4-bit form (laid out as kiln-quantize-weights lays its
  // own, quantizer::Format::store): panels of 64 columns, each row 32
  // bytes, and the scales and zero points as panels of one row per block.
  OpBuilder &b = ctx.builder();
  Location loc = ctx.loc(node);
  const int64_t panels = LinearOp::panelCount(*n);
  auto ui8 = IntegerType::get(ctx.context(), 8, IntegerType::Unsigned);
  auto valuesType = RankedTensorType::get({panels, *k, kPanelWidth / 2}, ui8);
  auto scalesType = RankedTensorType::get({panels, blocks, kPanelWidth}, b.getF32Type());
  auto zeroPointsType = scalesType.clone(ui8);
  // Made as B's own kind of attribute: a blob named after B's, or a dense
  // literal for a small B.
  ElementsAttr original = ctx.input(node, 1).getDefiningOp<ConstantOp>().getValue();
  auto constant = [&](RankedTensorType type, StringRef suffix,
                      function_ref<void(MutableArrayRef<char>)> fill) -> Value {
    return b.create<ConstantOp>(loc, type, replacementWeight(original, type, suffix, fill));
  };
  // Element [row][lane] of column `column`'s panel of `rows` rows of
  // `rowLength` elements.
  auto panelIndex = [&](int64_t column, int64_t row, int64_t rows, int64_t rowLength) {
    return (column / kPanelWidth * rows + row) * rowLength;
  };
  const quantizer::Format uint4{4};
  Value weight = constant(valuesType, "_panels", [&](MutableArrayRef<char> out) {
    for (int64_t column = 0; column < *n; ++column)
      for (int64_t row = 0; row < *k; ++row)
        uint4.store(reinterpret_cast<uint8_t *>(&out[panelIndex(column, row, *k,
                                                                uint4.rowBytes())]),
                    column % kPanelWidth,
                    nibble(*values, column * blocks * *blockSize + row));
  });
  Value scaleWeight = constant(scalesType, "_scales", [&](MutableArrayRef<char> out) {
    for (int64_t column = 0; column < *n; ++column)
      for (int64_t block = 0; block < blocks; ++block)
        std::memcpy(&out[(panelIndex(column, block, blocks, kPanelWidth) +
                          column % kPanelWidth) * sizeof(float)],
                    scales->data() + (column * blocks + block) * sizeof(float),
                    sizeof(float));
  });
  Value zeroPointWeight =
      constant(zeroPointsType, "_zero_points", [&](MutableArrayRef<char> out) {
        for (int64_t column = 0; column < *n; ++column)
          for (int64_t block = 0; block < blocks; ++block)
            out[panelIndex(column, block, blocks, kPanelWidth) + column % kPanelWidth] =
                static_cast<char>(zeroPoints ? nibble(*zeroPoints,
                                                      column * zeroPointBytes * 2 + block)
                                             : kDefaultZeroPoint);
      });
  SmallVector<int64_t> shape(aType.getShape());
  shape.back() = *n;
  Value result = b.create<LinearOp>(
      loc, RankedTensorType::get(shape, b.getF32Type()), a, weight, scaleWeight,
      zeroPointWeight, /*column_sums=*/Value(), bias, ActivationAttr(), /*gate=*/Value(),
      /*residual=*/Value(), /*transpose_b=*/false, /*packed=*/true,
      b.getI64IntegerAttr(*blockSize), /*quantize_input=*/false,
      /*input_scale=*/FloatAttr(), /*input_zero_point=*/IntegerAttr(),
        /*input_tensor_range=*/false);
  ctx.setOutput(node, 0, result);
  return success();
}

/// The difference between a uint8 value and the int8 that holds it.
constexpr int64_t kUint8Offset = 128;

/// Whether input `index` of `node` holds uint8 values: a ui8 constant, or
/// a result that kiln holds lowered by 128.
bool isUint8Input(ImportContext &ctx, const onnx::NodeProto &node, int index) {
  Value value = ctx.input(node, index);
  return value && (cast<RankedTensorType>(value.getType()).getElementType().isUnsignedInteger() ||
                   ctx.isLoweredUint8(node.input(index)));
}

/// Input `index` of `node`, 8-bit, as kiln holds it: a ui8 constant lowered
/// by 128 into an i8 one (a weight's blob stays a blob), a ui8 computed at
/// run time lowered there, an i8 as it is; `what` names it in the error
/// when it is not 8-bit.
FailureOr<Value> int8Input(ImportContext &ctx, const onnx::NodeProto &node, int index,
                           StringRef what) {
  auto value = ctx.requiredInput(node, index);
  if (failed(value))
    return failure();
  auto type = cast<RankedTensorType>(value->getType());
  if (!type.getElementType().isInteger(8))
    return ctx.error(node) << "kiln reads 8-bit quantization only: " << what << " is "
                           << type;
  if (!type.getElementType().isUnsignedInteger())
    return *value;
  std::vector<char> storage;
  std::optional<ArrayRef<char>> bytes = constantBytes(ctx, node, index, storage);
  // A uint8 computed at run time (a graph input, say) is lowered there.
  if (!bytes)
    return ctx.flipUint8Offset(ctx.loc(node), *value, ctx.builder().getIntegerType(8));
  auto loweredType = type.clone(ctx.builder().getIntegerType(8));
  ElementsAttr original = value->getDefiningOp<ConstantOp>().getValue();
  return ctx.builder()
      .create<ConstantOp>(
          ctx.loc(node), loweredType,
          replacementWeight(original, loweredType, "_int8",
                            [&](MutableArrayRef<char> out) {
                              for (size_t i = 0; i < out.size(); ++i)
                                out[i] = static_cast<char>(static_cast<uint8_t>((*bytes)[i]) -
                                                           kUint8Offset);
                            }))
      .getResult();
}

/// Input `index` of `node`, an optional zero point of values of type
/// uint8 (`uint8`) or int8, as int8 `type` (a uint8 one lowered by 128):
/// 0 of that type when absent. Its type must be the values'.
FailureOr<Value> zeroPointInput(ImportContext &ctx, const onnx::NodeProto &node, int index,
                                bool uint8, RankedTensorType type) {
  if (!ctx.input(node, index))
    return ctx.builder()
        .create<ConstantOp>(ctx.loc(node), type,
                            DenseElementsAttr::get(
                                type, static_cast<int8_t>(uint8 ? -kUint8Offset : 0)))
        .getResult();
  if (isUint8Input(ctx, node, index) != uint8)
    return ctx.error(node) << "input " << index << " (a zero point) and the values it "
                           << "belongs to differ in type";
  return int8Input(ctx, node, index, "the zero point");
}

/// kiln.quantize's and kiln.dequantize's scale and zero point operands,
/// and whether the quantized type is uint8.
struct QuantizationParameters {
  Value scale, zeroPoint;
  bool uint8 = false;
};

/// A scale and zero point (inputs `scaleIndex` and `scaleIndex` + 1 of
/// `node`: a QuantizeLinear's or DequantizeLinear's 1 and 2) as kiln's
/// operands for values of rank `rank`: an f32 scale and an i8 zero point (a
/// uint8 one lowered by 128), a per-axis pair reshaped to [d, 1, ..., 1] so
/// that it broadcasts along the node's `axis` (1 when absent). The
/// quantized type is the zero point's, else uint8 when `uint8Default`.
FailureOr<QuantizationParameters>
quantizationParameters(ImportContext &ctx, const onnx::NodeProto &node, int scaleIndex,
                       int64_t rank, bool uint8Default) {
  const int zeroPointIndex = scaleIndex + 1;
  auto blockSize = ctx.intAttr(node, "block_size", 0);
  if (failed(blockSize))
    return failure();
  if (*blockSize != 0)
    return ctx.error(node) << "blocked quantization (block_size " << *blockSize
                           << ") is not supported";
  auto scale = ctx.requiredInput(node, scaleIndex);
  if (failed(scale))
    return failure();
  auto scaleType = cast<RankedTensorType>(scale->getType());
  if (!scaleType.getElementType().isF32() || scaleType.getRank() > 1)
    return ctx.error(node) << "the scale must be an f32 scalar or 1-D tensor, got "
                           << scaleType;
  OpBuilder &b = ctx.builder();
  Location loc = ctx.loc(node);
  auto i8 = b.getIntegerType(8);
  const bool uint8 =
      ctx.input(node, zeroPointIndex) ? isUint8Input(ctx, node, zeroPointIndex) : uint8Default;
  if (Value given = ctx.input(node, zeroPointIndex);
      given && cast<RankedTensorType>(given.getType()).getShape() != scaleType.getShape())
    return ctx.error(node) << "the zero point " << given.getType()
                           << " must have the scale's shape " << scaleType;
  auto zeroPointValue = zeroPointInput(ctx, node, zeroPointIndex, uint8, scaleType.clone(i8));
  if (failed(zeroPointValue))
    return failure();
  Value zeroPoint = *zeroPointValue;
  Value scaleValue = *scale;
  if (scaleType.getRank() == 1 && rank > 0) {
    auto axis = ctx.intAttr(node, "axis", 1);
    if (failed(axis))
      return failure();
    auto normalized = ctx.normalizeAxis(node, *axis, rank);
    if (failed(normalized))
      return failure();
    SmallVector<int64_t> shape(rank - *normalized, 1);
    shape[0] = scaleType.getShape()[0];
    SmallVector<int64_t> list(shape);
    if (ShapedType::isDynamic(list[0]))
      list[0] = -1;
    auto reshape = [&](Value value) -> Value {
      auto type = cast<RankedTensorType>(value.getType()).clone(shape);
      return b.create<ReshapeOp>(loc, type, value, ctx.i64List(loc, list), false);
    };
    if (shape.size() != 1) {
      scaleValue = reshape(scaleValue);
      zeroPoint = reshape(zeroPoint);
    }
  }
  return QuantizationParameters{scaleValue, zeroPoint, uint8};
}

/// quantizationParameters of the 8-bit values at input `valuesIndex` of
/// `node` (`valuesName` in errors), whose type the zero point must share.
FailureOr<QuantizationParameters>
valuesQuantizationParameters(ImportContext &ctx, const onnx::NodeProto &node,
                             int valuesIndex, StringRef valuesName, int scaleIndex,
                             int64_t rank) {
  const bool uint8 = isUint8Input(ctx, node, valuesIndex);
  if (ctx.input(node, scaleIndex + 1) && isUint8Input(ctx, node, scaleIndex + 1) != uint8)
    return ctx.error(node) << valuesName << " and its zero point differ in type";
  return quantizationParameters(ctx, node, scaleIndex, rank, uint8);
}

/// QuantizeLinear into 8 bits: clamp(round(x / scale) + zero point), as
/// kiln.quantize; a uint8 result is held lowered by 128 (see the file's
/// comment).
LogicalResult importQuantizeLinear(ImportContext &ctx, const onnx::NodeProto &node) {
  auto x = ctx.requiredInput(node, 0);
  if (failed(x))
    return failure();
  auto xType = cast<RankedTensorType>(x->getType());
  if (!xType.getElementType().isF32())
    return ctx.error(node) << "kiln quantizes f32 only, got " << xType;
  // Without a zero point, the output type is output_dtype's (opset 21),
  // uint8 by default.
  auto outputType = ctx.intAttr(node, "output_dtype", 0);
  if (failed(outputType))
    return failure();
  if (*outputType != 0 && *outputType != onnx::TensorProto::UINT8 &&
      *outputType != onnx::TensorProto::INT8)
    return ctx.error(node) << "kiln reads 8-bit quantization only: output_dtype is "
                           << onnxTypeName(*outputType);
  auto parameters = quantizationParameters(ctx, node, 1, xType.getRank(),
                                           *outputType != onnx::TensorProto::INT8);
  if (failed(parameters))
    return failure();
  auto type = ctx.resultType(node, 0, ctx.builder().getIntegerType(8), xType.getShape());
  ctx.setOutput(node, 0,
                ctx.builder().create<QuantizeOp>(ctx.loc(node), type, *x,
                                                 parameters->scale, parameters->zeroPoint));
  if (parameters->uint8 && ctx.hasOutput(node, 0))
    ctx.markLoweredUint8(node.output(0));
  return success();
}

/// DequantizeLinear from 8 bits: (x − zero point) · scale, as
/// kiln.dequantize. A uint8 x is a QuantizeLinear's (held lowered by 128)
/// or a constant, lowered here.
LogicalResult importDequantizeLinear(ImportContext &ctx, const onnx::NodeProto &node) {
  auto x = ctx.requiredInput(node, 0);
  if (failed(x))
    return failure();
  auto xType = cast<RankedTensorType>(x->getType());
  OpBuilder &b = ctx.builder();
  Location loc = ctx.loc(node);
  auto input = int8Input(ctx, node, 0, "x");
  if (failed(input))
    return failure();
  auto parameters = valuesQuantizationParameters(ctx, node, 0, "x", 1, xType.getRank());
  if (failed(parameters))
    return failure();
  auto type = ctx.resultType(node, 0, b.getF32Type(), xType.getShape());
  ctx.setOutput(node, 0,
                b.create<DequantizeOp>(loc, type, *input, parameters->scale,
                                       parameters->zeroPoint));
  return success();
}

/// DynamicQuantizeLinear: x quantized to uint8 by its own range, as
/// kiln.dynamic_quantize; the values and the zero point are held lowered by
/// 128.
LogicalResult importDynamicQuantizeLinear(ImportContext &ctx, const onnx::NodeProto &node) {
  auto x = ctx.requiredInput(node, 0);
  if (failed(x))
    return failure();
  auto xType = cast<RankedTensorType>(x->getType());
  if (!xType.getElementType().isF32())
    return ctx.error(node) << "kiln quantizes f32 only, got " << xType;
  OpBuilder &b = ctx.builder();
  auto quantize = b.create<DynamicQuantizeOp>(
      ctx.loc(node), ctx.resultType(node, 0, b.getI8Type(), xType.getShape()),
      RankedTensorType::get({}, b.getF32Type()), RankedTensorType::get({}, b.getI8Type()), *x);
  for (int index = 0; index < 3; ++index)
    ctx.setOutput(node, index, quantize->getResult(index));
  for (int index : {0, 2})
    if (ctx.hasOutput(node, index))
      ctx.markLoweredUint8(node.output(index));
  return success();
}

/// An integer product's operands, A (input `aIndex`) and B (input
/// `bIndex`), as int8Input gives them, both of rank 2 or more. `aName` and
/// `bName` name them in errors.
struct IntegerProductOperands {
  Value a, b;
};

FailureOr<IntegerProductOperands> integerProductOperands(ImportContext &ctx,
                                                         const onnx::NodeProto &node,
                                                         int aIndex, int bIndex,
                                                         StringRef aName, StringRef bName) {
  auto a = int8Input(ctx, node, aIndex, aName);
  if (failed(a))
    return failure();
  auto b = int8Input(ctx, node, bIndex, bName);
  if (failed(b))
    return failure();
  for (auto [value, name] : {std::pair{*a, aName}, std::pair{*b, bName}})
    if (cast<RankedTensorType>(value.getType()).getRank() < 2)
      return ctx.error(node) << "kiln reads " << name << " of rank 2 or more, got "
                             << value.getType();
  return IntegerProductOperands{*a, *b};
}

/// MatMulInteger by a 2-D B: (A − a_zero_point) · (B − b_zero_point) in
/// int32, as kiln.matmul_integer; uint8 operands lowered by 128 with their
/// zero points. One a_zero_point (per tensor), and one b_zero_point or one
/// per column.
LogicalResult importMatMulInteger(ImportContext &ctx, const onnx::NodeProto &node) {
  auto operands = integerProductOperands(ctx, node, 0, 1, "A", "B");
  if (failed(operands))
    return failure();
  auto bType = cast<RankedTensorType>(operands->b.getType());
  if (bType.getRank() != 2)
    return ctx.error(node) << "kiln reads A by a 2-D B, got "
                           << operands->a.getType() << " and " << bType;
  SmallVector<int64_t> shape(cast<RankedTensorType>(operands->a.getType()).getShape());
  shape.back() = bType.getShape()[1];
  OpBuilder &builder = ctx.builder();
  auto i8 = builder.getI8Type();
  auto scalarType = RankedTensorType::get({}, i8);
  // One zero point in a 1-D tensor is one for the whole operand.
  auto oneZeroPoint = [&](FailureOr<Value> zeroPoint) -> FailureOr<Value> {
    if (failed(zeroPoint))
      return failure();
    auto type = cast<RankedTensorType>(zeroPoint->getType());
    if (type.getRank() != 1 || type.getShape()[0] != 1)
      return zeroPoint;
    return builder
        .create<SqueezeOp>(ctx.loc(node), scalarType, *zeroPoint,
                           builder.getDenseI64ArrayAttr({0}))
        .getResult();
  };
  auto aZeroPoint =
      oneZeroPoint(zeroPointInput(ctx, node, 2, isUint8Input(ctx, node, 0), scalarType));
  if (failed(aZeroPoint))
    return failure();
  if (cast<RankedTensorType>(aZeroPoint->getType()).getRank() != 0)
    return ctx.error(node) << "kiln reads one a_zero_point for all of A, got "
                           << aZeroPoint->getType();
  auto bZeroPoint =
      oneZeroPoint(zeroPointInput(ctx, node, 3, isUint8Input(ctx, node, 1), scalarType));
  if (failed(bZeroPoint))
    return failure();
  auto bZeroPointType = cast<RankedTensorType>(bZeroPoint->getType());
  if (bZeroPointType.getRank() > 1 ||
      (bZeroPointType.getRank() == 1 && bZeroPointType.getShape()[0] != bType.getShape()[1]))
    return ctx.error(node) << "kiln reads one b_zero_point, or one per column of B ("
                           << bType.getShape()[1] << "), got " << bZeroPointType;
  ctx.setOutput(node, 0,
                builder.create<MatMulIntegerOp>(
                    ctx.loc(node), ctx.resultType(node, 0, builder.getI32Type(), shape),
                    operands->a, operands->b, *aZeroPoint, *bZeroPoint));
  return success();
}

/// QLinearMatMul (ORT's quantize_static in its QOperator format): the
/// product of the dequantized operands (NumPy's matmul: batch dims
/// broadcast), quantized with Y's scale and zero point;
/// kiln-fold-quantized-products folds the product of a QuantizeLinear's
/// result by a constant 2-D B into an int8 kiln.linear, as in a QDQ model.
/// A's and Y's parameters are per tensor, B's per tensor or per column.
LogicalResult importQLinearMatMul(ImportContext &ctx, const onnx::NodeProto &node) {
  auto operands = integerProductOperands(ctx, node, 0, 3, "a", "b");
  if (failed(operands))
    return failure();
  // A's and Y's parameters are one scale and zero point.
  auto perTensor = [&](FailureOr<QuantizationParameters> parameters,
                       StringRef name) -> FailureOr<QuantizationParameters> {
    if (succeeded(parameters) &&
        cast<RankedTensorType>(parameters->scale.getType()).getNumElements() != 1)
      return ctx.error(node) << "kiln reads one scale for " << name << ", got "
                             << parameters->scale.getType();
    return parameters;
  };
  auto aParameters = perTensor(
      valuesQuantizationParameters(ctx, node, 0, "input 0", 1,
                                   cast<RankedTensorType>(operands->a.getType()).getRank()),
      "input 0");
  if (failed(aParameters))
    return failure();
  // B's per-column parameters, [N] as for a 2-D B, broadcast along the last
  // axis of any B.
  auto bParameters = valuesQuantizationParameters(ctx, node, 3, "input 3", 4, 2);
  if (failed(bParameters))
    return failure();
  OpBuilder &builder = ctx.builder();
  Location loc = ctx.loc(node);
  auto dequantized = [&](Value values, const QuantizationParameters &p) -> Value {
    auto type = cast<RankedTensorType>(values.getType()).clone(builder.getF32Type());
    return builder.create<DequantizeOp>(loc, type, values, p.scale, p.zeroPoint);
  };
  Value lhs = dequantized(operands->a, *aParameters);
  Value rhs = dequantized(operands->b, *bParameters);
  auto product = ctx.matMul(node, lhs, rhs);
  if (failed(product))
    return failure();
  ArrayRef<int64_t> shape = cast<RankedTensorType>(product->getType()).getShape();
  // Y's type is its zero point's (a required input).
  auto yParameters = perTensor(
      quantizationParameters(ctx, node, 6, shape.size(), /*uint8Default=*/true), "input 6");
  if (failed(yParameters))
    return failure();
  ctx.setOutput(node, 0,
                builder.create<QuantizeOp>(loc,
                                           ctx.resultType(node, 0, builder.getI8Type(), shape),
                                           *product, yParameters->scale,
                                           yParameters->zeroPoint));
  if (yParameters->uint8 && ctx.hasOutput(node, 0))
    ctx.markLoweredUint8(node.output(0));
  return success();
}

} // namespace

void registerQuantizedImporters(OpImporterRegistry &registry) {
  registry.add("com.microsoft.MatMulNBits", importMatMulNBits, 1);
  // Opset 10's scales are per tensor, and 13 added per-axis ones (a
  // scalar scale reads the same in both); 19 and 21 added float8, 4- and
  // 16-bit types and blocks, which are refused by name.
  registry.add("QuantizeLinear", importQuantizeLinear, 10);
  registry.add("DequantizeLinear", importDequantizeLinear, 10);
  registry.add("DynamicQuantizeLinear", importDynamicQuantizeLinear, 11);
  registry.add("MatMulInteger", importMatMulInteger, 10);
  registry.add("QLinearMatMul", importQLinearMatMul, 10);
}

} // namespace kiln
