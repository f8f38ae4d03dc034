//===- QuantizedOps.cpp - Products by weights that arrive quantized --------===//
//
// ONNX Runtime's com.microsoft MatMulNBits, the 4-bit weight-only format its
// quantization tool writes: the weight's values, scales and zero points are
// laid out again, at import, as kiln.linear's packed 4-bit form (the one
// kiln-quantize-weights makes), so the product runs on the same kernels and
// is never dequantized.
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
      b.getI64IntegerAttr(*blockSize), /*quantize_input=*/false);
  ctx.setOutput(node, 0, result);
  return success();
}

} // namespace

void registerQuantizedImporters(OpImporterRegistry &registry) {
  registry.add("com.microsoft.MatMulNBits", importMatMulNBits, 1);
}

} // namespace kiln
