//===- FoldQuantizedProducts.cpp - The kiln-fold-quantized-products pass --===//
//
// A QDQ model (ONNX Runtime's quantize_static) says "this product runs in
// int8" by wrapping its operands: the activation quantized and dequantized
// with one scale and zero point, the weight stored as int8 values and
// dequantized. Executed as written, that is two elementwise passes and an
// f32 product. Folded, it is one int8 kiln.linear: the input quantized with
// the model's own scale and zero point inside the GEMM, the weight's values
// laid out for the CPU's dot products of 4 bytes, the scales applied to the
// int32 sums. The integers are those the QDQ model computes.
//
// A weight's dequantize that no product folds is computed here, at compile
// time, so that the weight is packed (and streamed) as any f32 weight.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/Kiln/IR/KilnOps.h"
#include "passes/WeightBlobs.h"
#include "passes/WeightQuantizer.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/SetVector.h"

#include <cmath>
#include <cstring>

namespace kiln {
#define GEN_PASS_DEF_KILNFOLDQUANTIZEDPRODUCTS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

constexpr int64_t kPanelWidth = LinearOp::kPanelWidth;
static_assert(kPanelWidth == quantizer::kPanelWidth,
              "the row quads are the linear's panels");
/// The runtime quantizes inputs to uint8; kiln holds int8 (QuantizeOp).
constexpr int32_t kUint8Offset = 128;

/// The constant behind `value`, through the reshapes that make a per-axis
/// scale broadcast (they keep the elements' order).
ConstantOp constantBehind(Value value) {
  while (auto reshape = value.getDefiningOp<ReshapeOp>())
    value = reshape.getInput();
  return value.getDefiningOp<ConstantOp>();
}

/// The elements of a constant of `T` (f32 or i8) behind `value`.
template <typename T>
std::optional<std::vector<T>> constantValues(Value value) {
  ConstantOp constant = constantBehind(value);
  if (!constant)
    return std::nullopt;
  std::vector<char> storage;
  std::optional<ArrayRef<char>> bytes = elementBytes(constant.getValue(), storage);
  if (!bytes || bytes->size() % sizeof(T) != 0)
    return std::nullopt;
  std::vector<T> values(bytes->size() / sizeof(T));
  std::memcpy(values.data(), bytes->data(), bytes->size());
  return values;
}

/// How an int8 kiln.linear quantizes its input: with one static scale and
/// zero point (the runtime's uint8 one), or by the whole input's range at
/// run time.
struct InputQuantization {
  Value x;
  FloatAttr scale;
  IntegerAttr zeroPoint;
  bool tensorRange = false;
};

/// `x` of an activation quantized and dequantized again with one scale and
/// zero point, constants: what the int8 kiln.linear quantizes itself.
std::optional<InputQuantization> staticActivation(OpBuilder &builder, Value value) {
  auto dequantize = value.getDefiningOp<DequantizeOp>();
  auto quantize = dequantize ? dequantize.getInput().getDefiningOp<QuantizeOp>() : QuantizeOp();
  if (!quantize)
    return std::nullopt;
  auto scales = constantValues<float>(quantize.getScale());
  auto zeroPoints = constantValues<int8_t>(quantize.getZeroPoint());
  auto dequantizeScales = constantValues<float>(dequantize.getScale());
  auto dequantizeZeroPoints = constantValues<int8_t>(dequantize.getZeroPoint());
  if (!scales || !zeroPoints || !dequantizeScales || !dequantizeZeroPoints ||
      scales->size() != 1 || *scales != *dequantizeScales ||
      *zeroPoints != *dequantizeZeroPoints)
    return std::nullopt;
  const float scale = scales->front();
  if (!(scale > 0.0f) || !std::isfinite(scale))
    return std::nullopt;
  return InputQuantization{quantize.getInput(), builder.getF32FloatAttr(scale),
                           builder.getI64IntegerAttr(zeroPoints->front() + kUint8Offset)};
}

/// A product's [K, N] weight as int8 values and one scale per column.
struct QuantizedWeight {
  ConstantOp values; // [K, N], or [N, K] when transposed
  bool transposed = false;
  std::vector<float> columnScales;
};

/// The scale of each of the `n` columns of a weight when `scale` is a
/// constant per tensor or per column (shape [n] or [1, n]; [n, 1] when the
/// weight is transposed, [N, K]).
std::optional<std::vector<float>> columnScales(Value scale, int64_t n, bool transposed) {
  auto scales = constantValues<float>(scale);
  if (!scales)
    return std::nullopt;
  // The scale's shape, right-aligned to the weight's [rows, columns].
  SmallVector<int64_t> shape(cast<RankedTensorType>(scale.getType()).getShape());
  while (shape.size() < 2)
    shape.insert(shape.begin(), 1);
  const bool perTensor = scales->size() == 1;
  const bool perColumn = transposed ? shape == SmallVector<int64_t>{n, 1}
                                    : shape == SmallVector<int64_t>{1, n};
  if (!perTensor && !perColumn)
    return std::nullopt;
  std::vector<float> columns(n);
  for (int64_t j = 0; j < n; ++j)
    columns[j] = (*scales)[perTensor ? 0 : j];
  if (llvm::any_of(columns, [](float s) { return !std::isfinite(s); }))
    return std::nullopt;
  return columns;
}

/// Whether `zeroPoint` is a constant of zeros: an int8 weight's, which
/// the int8 products take without one.
bool isZeroConstant(Value zeroPoint) {
  auto values = constantValues<int8_t>(zeroPoint);
  return values && llvm::all_of(*values, [](int8_t z) { return z == 0; });
}

/// The weight of a QDQ product: the dequantize of a 2-D constant with
/// zero points 0 and a scale per tensor or per column.
std::optional<QuantizedWeight> dequantizedWeight(Value value, bool transposed) {
  auto dequantize = value.getDefiningOp<DequantizeOp>();
  auto constant = dequantize ? dequantize.getInput().getDefiningOp<ConstantOp>() : ConstantOp();
  if (!constant || !isZeroConstant(dequantize.getZeroPoint()))
    return std::nullopt;
  auto type = cast<RankedTensorType>(constant.getType());
  if (type.getRank() != 2 || !type.hasStaticShape())
    return std::nullopt;
  auto scales = columnScales(dequantize.getScale(), type.getDimSize(transposed ? 0 : 1),
                             transposed);
  if (!scales)
    return std::nullopt;
  return QuantizedWeight{constant, transposed, std::move(*scales)};
}

/// The int8 kiln.linear of `input` by `weight`, of `type` (the product's),
/// replacing `product`; false, leaving it, where int8 products cannot
/// take the weight (K not in whole quads, or over kMaxInt8Depth).
bool replaceWithInt8Linear(OpBuilder &builder, Operation *product, RankedTensorType type,
                           const InputQuantization &input, const QuantizedWeight &weight) {
  if (cast<RankedTensorType>(input.x.getType()).getRank() < 2)
    return false;
  ConstantOp values = weight.values;
  auto valuesType = cast<RankedTensorType>(values.getType());
  const bool transposed = weight.transposed;
  const int64_t k = valuesType.getDimSize(transposed ? 1 : 0);
  const int64_t n = valuesType.getDimSize(transposed ? 0 : 1);
  if (k % LinearOp::kRowQuad != 0 || k > LinearOp::kMaxInt8Depth || n == 0)
    return false;
  std::vector<char> storage;
  std::optional<ArrayRef<char>> bytes = elementBytes(values.getValue(), storage);
  if (!bytes)
    return false;

  const int64_t panels = LinearOp::panelCount(n);
  // The values as int8 panels [panels, K, W] (zeros past N), then in the
  // row quads the int8 products read, with each column's sum.
  std::vector<uint8_t> rows(panels * k * kPanelWidth, 0);
  for (int64_t p = 0; p < k; ++p)
    for (int64_t j = 0; j < n; ++j)
      rows[(j / kPanelWidth * k + p) * kPanelWidth + j % kPanelWidth] =
          static_cast<uint8_t>((*bytes)[transposed ? j * k + p : p * n + j]);
  std::vector<int32_t> columnSums(panels * kPanelWidth);
  std::vector<float> scales(panels * kPanelWidth, 0.0f);
  std::copy(weight.columnScales.begin(), weight.columnScales.end(),
            scales.begin()); // [panels, 1, W] is [panels · W]
  ElementsAttr original = values.getValue();
  auto quadsType = RankedTensorType::get({panels, k, kPanelWidth}, builder.getI8Type());
  auto scalesType = RankedTensorType::get({panels, 1, kPanelWidth}, builder.getF32Type());
  auto sumsType = RankedTensorType::get({panels, kPanelWidth}, builder.getI32Type());
  ElementsAttr quads = replacementWeight(original, quadsType, "_row_quads",
                                         [&](MutableArrayRef<char> out) {
                                           quantizer::toRowQuads(
                                               rows.data(), panels, k,
                                               reinterpret_cast<uint8_t *>(out.data()),
                                               columnSums.data());
                                         });
  auto copyOf = [&](RankedTensorType blobType, StringRef suffix, const void *data) {
    return replacementWeight(original, blobType, suffix, [&](MutableArrayRef<char> out) {
      std::memcpy(out.data(), data, out.size());
    });
  };
  ElementsAttr scaleValues = copyOf(scalesType, "_scales", scales.data());
  ElementsAttr sumValues = copyOf(sumsType, "_column_sums", columnSums.data());

  builder.setInsertionPoint(product);
  Location loc = product->getLoc();
  // A packed weight carries no N of its own: the result's last dim says.
  SmallVector<int64_t> shape(type.getShape());
  shape.back() = n;
  auto linearType = type.clone(shape);
  Value quadsWeight = builder.create<ConstantOp>(loc, quadsType, quads);
  Value scalesWeight = builder.create<ConstantOp>(loc, scalesType, scaleValues);
  Value sumsWeight = builder.create<ConstantOp>(loc, sumsType, sumValues);
  Value result = builder.create<LinearOp>(
      loc, linearType, input.x, quadsWeight, scalesWeight, /*zero_points=*/Value(),
      sumsWeight, /*bias=*/Value(), ActivationAttr(), /*gate=*/Value(), /*residual=*/Value(),
      /*transpose_b=*/false, /*packed=*/true, builder.getI64IntegerAttr(k),
      /*quantize_input=*/true, input.scale, input.zeroPoint, input.tensorRange);
  if (linearType != type)
    result = builder.create<tensor::CastOp>(loc, type, result);
  product->getResult(0).replaceAllUsesWith(result);
  product->erase();
  return true;
}

/// A QDQ product: `matmul` of a statically quantized activation by a
/// dequantized int8 weight.
void foldQdqProduct(OpBuilder &builder, MatMulOp matmul) {
  std::optional<InputQuantization> input = staticActivation(builder, matmul.getLhs());
  std::optional<QuantizedWeight> weight =
      input ? dequantizedWeight(matmul.getRhs(), matmul.getTransposeB()) : std::nullopt;
  if (weight)
    replaceWithInt8Linear(builder, matmul, matmul.getType(), *input, *weight);
}

/// ONNX Runtime's dynamic product (quantize_dynamic): `mul` of
/// cast<f32>(matmul_integer(q, W, z, 0)) by s · scale_W, where q, s and z
/// are one kiln.dynamic_quantize's results, W is a constant int8 weight
/// and scale_W a constant per tensor or per column.
void foldDynamicProduct(OpBuilder &builder, MulOp mul) {
  for (auto [productSide, scaleSide] : {std::pair{mul.getLhs(), mul.getRhs()},
                                        std::pair{mul.getRhs(), mul.getLhs()}}) {
    auto toFloat = productSide.getDefiningOp<CastOp>();
    auto product =
        toFloat ? toFloat.getInput().getDefiningOp<MatMulIntegerOp>() : MatMulIntegerOp();
    auto quantize = product ? product.getLhs().getDefiningOp<DynamicQuantizeOp>()
                            : DynamicQuantizeOp();
    auto scales = scaleSide.getDefiningOp<MulOp>();
    auto values = product ? product.getRhs().getDefiningOp<ConstantOp>() : ConstantOp();
    if (!quantize || !scales || !values || !toFloat.getType().getElementType().isF32() ||
        product.getLhsZeroPoint() != quantize.getZeroPoint() ||
        !isZeroConstant(product.getRhsZeroPoint()) ||
        cast<RankedTensorType>(values.getType()).getRank() != 2 ||
        !cast<RankedTensorType>(values.getType()).hasStaticShape())
      continue;
    // s · scale_W, either way round.
    Value weightScale = scales.getLhs() == quantize.getScale()   ? scales.getRhs()
                        : scales.getRhs() == quantize.getScale() ? scales.getLhs()
                                                                 : Value();
    const int64_t n = cast<RankedTensorType>(values.getType()).getDimSize(1);
    std::optional<std::vector<float>> columns =
        weightScale ? columnScales(weightScale, n, /*transposed=*/false) : std::nullopt;
    // The product is [..., M, N]; a scale that broadcasts it wider is not
    // this pattern.
    if (!columns || mul.getType() != toFloat.getType())
      continue;
    replaceWithInt8Linear(builder, mul, mul.getType(),
                          {quantize.getInput(), FloatAttr(), IntegerAttr(), /*tensorRange=*/true},
                          {values, /*transposed=*/false, std::move(*columns)});
    return;
  }
}

/// The f32 constant that `dequantize` of constants computes, made as its
/// input's kind of attribute; null when an operand's data is not at hand
/// or a shape is dynamic.
ElementsAttr dequantizedConstant(DequantizeOp dequantize) {
  auto constant = dequantize.getInput().getDefiningOp<ConstantOp>();
  auto scales = constantValues<float>(dequantize.getScale());
  auto zeroPoints = constantValues<int8_t>(dequantize.getZeroPoint());
  auto type = cast<RankedTensorType>(dequantize.getType());
  if (!constant || !scales || !zeroPoints || !type.hasStaticShape())
    return {};
  std::vector<char> storage;
  std::optional<ArrayRef<char>> bytes = elementBytes(constant.getValue(), storage);
  if (!bytes)
    return {};
  // Each element's scale: the parameters' shape right-aligned to the
  // input's, its dims of 1 broadcast (stride 0).
  ArrayRef<int64_t> shape = type.getShape();
  ArrayRef<int64_t> parameterShape =
      cast<RankedTensorType>(dequantize.getScale().getType()).getShape();
  const size_t rank = shape.size(), offset = rank - parameterShape.size();
  SmallVector<int64_t> strides(rank, 0);
  for (int64_t dim = rank - 1, stride = 1; dim >= static_cast<int64_t>(offset); --dim) {
    const int64_t size = parameterShape[dim - offset];
    strides[dim] = size == 1 ? 0 : stride;
    stride *= size;
  }
  return replacementWeight(
      constant.getValue(), type, "_dequantized", [&](MutableArrayRef<char> out) {
        auto *values = reinterpret_cast<float *>(out.data());
        SmallVector<int64_t> index(rank, 0);
        for (size_t i = 0; i < bytes->size(); ++i) {
          int64_t parameter = 0;
          for (size_t dim = 0; dim < rank; ++dim)
            parameter += index[dim] * strides[dim];
          const float difference = static_cast<float>(static_cast<int8_t>((*bytes)[i])) -
                                   static_cast<float>((*zeroPoints)[parameter]);
          values[i] = difference * (*scales)[parameter];
          for (int64_t dim = rank - 1; dim >= 0 && ++index[dim] == shape[dim]; --dim)
            index[dim] = 0;
        }
      });
}

struct FoldQuantizedProductsPass
    : public impl::KilnFoldQuantizedProductsBase<FoldQuantizedProductsPass> {
  using KilnFoldQuantizedProductsBase::KilnFoldQuantizedProductsBase;

  void runOnOperation() override {
    OpBuilder builder(&getContext());
    BlobReaders readers(getOperation());
    SmallVector<Operation *> products;
    getOperation().walk([&](Operation *op) {
      if (isa<MatMulOp, MulOp>(op))
        products.push_back(op);
    });
    for (Operation *op : products) {
      if (auto matmul = dyn_cast<MatMulOp>(op))
        foldQdqProduct(builder, matmul);
      else
        foldDynamicProduct(builder, cast<MulOp>(op));
    }

    // What the folds left unread goes now, so that a folded weight is not
    // dequantized below, and its blob is given back. Consumers first: a
    // dequantize before the quantize it reads.
    SmallVector<Operation *> dead;
    getOperation().walk([&](Operation *op) {
      if (isa<DequantizeOp, QuantizeOp, DynamicQuantizeOp, MatMulIntegerOp, CastOp, MulOp>(op))
        dead.push_back(op);
    });
    for (Operation *op : llvm::reverse(dead))
      eraseIfUnread(op, readers);

    SmallVector<DequantizeOp> dequantizes;
    getOperation().walk([&](DequantizeOp op) { dequantizes.push_back(op); });
    for (DequantizeOp dequantize : dequantizes) {
      ElementsAttr values = dequantizedConstant(dequantize);
      if (!values)
        continue;
      builder.setInsertionPoint(dequantize);
      Value constant = builder.create<ConstantOp>(dequantize.getLoc(), dequantize.getType(), values);
      dequantize.getResult().replaceAllUsesWith(constant);
      eraseIfUnread(dequantize, readers);
    }
  }

  /// Erases `op` when nothing reads its results, then the constants (and
  /// reshapes of them) that this leaves unread, emptying the blobs no one
  /// names any more.
  static void eraseIfUnread(Operation *op, BlobReaders &readers) {
    if (!op->use_empty())
      return;
    llvm::SetVector<Operation *> producers;
    for (Value operand : op->getOperands())
      if (Operation *producer = operand.getDefiningOp();
          producer && isa<ConstantOp, ReshapeOp>(producer))
        producers.insert(producer);
    readers.erase(op);
    for (Operation *producer : producers)
      eraseIfUnread(producer, readers);
  }
};

} // namespace
} // namespace kiln
