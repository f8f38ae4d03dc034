//===- QuantizeWeights.cpp - The kiln-quantize-weights pass ---------------===//
//
// Weight-only quantization: each packed constant weight of a kiln.linear
// becomes integers and an f32 scale per column and group of rows, either
// int8, symmetric (scale = max |w| / 127 over the group, value =
// round(w / scale)), or 4-bit, asymmetric with a zero point per group. The
// activations stay f32; the runtime multiplies the values back in
// registers, so a product that streams its weight (a decode step) reads a
// quarter (an eighth) of the bytes.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/Kiln/IR/KilnOps.h"
#include "passes/WeightBlobs.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace kiln {
#define GEN_PASS_DEF_KILNQUANTIZEWEIGHTS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

constexpr int64_t kPanelWidth = LinearOp::kPanelWidth;

/// How a group of a column's values maps to integers: w ≈ (value −
/// zeroPoint) · scale, value in [lowest, highest].
struct GroupQuantizer {
  float scale;
  float zeroPoint;
  float lowest, highest;

  /// Int8: symmetric about 0, so that no zero point is stored.
  static GroupQuantizer int8(float low, float high) {
    constexpr float kInt8Max = 127.0f;
    return {std::max(high, -low) / kInt8Max, 0.0f, -kInt8Max, kInt8Max};
  }
  /// 4-bit: the group's range, widened to include 0 so that a zero weight
  /// stays exact, cut into 15 steps; the zero point is where 0 lands.
  static GroupQuantizer uint4(float low, float high) {
    constexpr float kUint4Max = 15.0f;
    low = std::min(low, 0.0f);
    high = std::max(high, 0.0f);
    const float scale = (high - low) / kUint4Max;
    const float zeroPoint =
        scale > 0 ? std::clamp(std::nearbyint(-low / scale), 0.0f, kUint4Max) : 0.0f;
    return {scale, zeroPoint, 0.0f, kUint4Max};
  }

  /// The stored integer for `weight` (round to nearest, ties to even).
  float quantize(float weight) const {
    return std::clamp(std::nearbyint(weight / scale) + zeroPoint, lowest, highest);
  }
  float dequantize(float value) const { return (value - zeroPoint) * scale; }
};

/// What one quantization format stores per panel row, and how.
struct Format {
  int64_t bits; // 8: int8; 4: pairs of 4-bit values with zero points

  bool hasZeroPoints() const { return bits == 4; }
  /// Elements of the values' tensor per panel row.
  int64_t rowElements() const { return bits == 8 ? kPanelWidth : kPanelWidth / 2; }
  Type valueType(MLIRContext *context) const {
    return bits == 8 ? IntegerType::get(context, 8)
                     : IntegerType::get(context, 8, IntegerType::Unsigned);
  }
  GroupQuantizer quantizer(float low, float high) const {
    return bits == 8 ? GroupQuantizer::int8(low, high) : GroupQuantizer::uint4(low, high);
  }
  /// Writes integer `value` of column `lane` to a panel row.
  void store(uint8_t *row, int64_t lane, float value) const {
    if (bits == 8) {
      row[lane] = static_cast<uint8_t>(static_cast<int8_t>(value));
      return;
    }
    // Column c in the low 4 bits of byte c, column c + 32 in its high 4
    // bits: the runtime unpacks a vector of bytes into two of columns.
    const int64_t half = kPanelWidth / 2;
    row[lane % half] |= static_cast<uint8_t>(value) << (lane / half * 4);
  }
  StringRef mode() const { return bits == 8 ? "int8-weight" : "int4-weight"; }
};

/// The quantized form of a weight's panels: values laid out as `format`
/// says, and the scales (and zero points) of each group, as panels
/// [panels, groups, W].
struct QuantizedPanels {
  MutableArrayRef<uint8_t> values;
  std::vector<float> scales;
  std::vector<uint8_t> zeroPoints;
};

/// Whether `value` reaches the function's results through nothing but
/// reshapes and casts: the product that makes a model's logits (its LM
/// head), which errors are not averaged away behind.
bool feedsResultDirectly(Value value) {
  for (Operation *user : value.getUsers()) {
    if (isa<func::ReturnOp>(user))
      return true;
    if (isa<ReshapeOp, tensor::CastOp>(user) &&
        feedsResultDirectly(user->getResult(0)))
      return true;
  }
  return false;
}

/// The products reading `weight`, when each is a packed, unquantized
/// kiln.linear with it as the weight.
std::optional<SmallVector<LinearOp>> packedProducts(Value weight) {
  SmallVector<LinearOp> products;
  for (OpOperand &use : weight.getUses()) {
    auto linear = dyn_cast<LinearOp>(use.getOwner());
    if (!linear || use.get() != linear.getWeight() || !linear.getPacked() ||
        linear.isQuantized())
      return std::nullopt;
    products.push_back(linear);
  }
  if (products.empty())
    return std::nullopt;
  return products;
}

/// Quantizes packed panels `weights` ([panels, k, W]) into `out`, group by
/// group of `groupSize` rows of each column. Returns the error's relative
/// RMS, |W - dequantized| / |W| over all elements (0 for a zero weight).
double quantizePanels(ArrayRef<float> weights, int64_t panels, int64_t k,
                      int64_t groupSize, const Format &format, QuantizedPanels &out) {
  const int64_t groups = llvm::divideCeil(k, groupSize);
  double squaredError = 0, squaredWeight = 0;
  for (int64_t panel = 0; panel < panels; ++panel)
    for (int64_t group = 0; group < groups; ++group) {
      const int64_t begin = group * groupSize, end = std::min(k, begin + groupSize);
      for (int64_t lane = 0; lane < kPanelWidth; ++lane) {
        auto weight = [&](int64_t p) { return weights[(panel * k + p) * kPanelWidth + lane]; };
        float low = 0.0f, high = 0.0f;
        for (int64_t p = begin; p < end; ++p) {
          low = std::min(low, weight(p));
          high = std::max(high, weight(p));
        }
        const GroupQuantizer quantizer = format.quantizer(low, high);
        const int64_t at = (panel * groups + group) * kPanelWidth + lane;
        out.scales[at] = quantizer.scale;
        if (format.hasZeroPoints())
          out.zeroPoints[at] = static_cast<uint8_t>(quantizer.zeroPoint);
        if (quantizer.scale == 0.0f)
          continue; // the values stay zero, as the weights are
        for (int64_t p = begin; p < end; ++p) {
          const float value = quantizer.quantize(weight(p));
          format.store(&out.values[(panel * k + p) * format.rowElements()], lane, value);
          const double error = double(weight(p)) - double(quantizer.dequantize(value));
          squaredError += error * error;
          squaredWeight += double(weight(p)) * weight(p);
        }
      }
    }
  return squaredWeight > 0 ? std::sqrt(squaredError / squaredWeight) : 0.0;
}

/// The weight's name for the report: its ONNX initializer's (or, for a
/// weight that the compiler computed, the node's), else its location.
std::string weightName(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().str();
  std::string text;
  llvm::raw_string_ostream os(text);
  loc.print(os);
  return os.str();
}

struct QuantizeWeightsPass
    : public impl::KilnQuantizeWeightsBase<QuantizeWeightsPass> {
  using KilnQuantizeWeightsBase::KilnQuantizeWeightsBase;

  void runOnOperation() override {
    if (groupSize < 1) {
      getOperation().emitError()
          << "kiln-quantize-weights: group-size must be positive, got "
          << groupSize.getValue();
      return signalPassFailure();
    }
    if (bits != 8 && bits != 4) {
      getOperation().emitError()
          << "kiln-quantize-weights: bits must be 8 or 4, got " << bits.getValue();
      return signalPassFailure();
    }
    const Format format{bits};
    SmallVector<ConstantOp> constants;
    getOperation().walk([&](ConstantOp constant) { constants.push_back(constant); });
    OpBuilder builder(&getContext());
    BlobReaders readers(getOperation());
    SmallVector<Attribute> report;
    for (ConstantOp constant : constants) {
      auto type = dyn_cast<RankedTensorType>(constant.getType());
      if (!type || type.getRank() != 3 || !type.hasStaticShape() ||
          !type.getElementType().isF32() || type.getDimSize(2) != kPanelWidth)
        continue;
      std::optional<SmallVector<LinearOp>> products = packedProducts(constant);
      if (!products ||
          (!quantizeLmHead && llvm::any_of(*products, [](LinearOp linear) {
             return feedsResultDirectly(linear.getResult());
           })))
        continue;
      std::vector<float> splat;
      std::optional<ArrayRef<float>> weights = floatValues(constant.getValue(), splat);
      if (!weights)
        continue;
      const int64_t panels = type.getDimSize(0), k = type.getDimSize(1);
      const int64_t groups = llvm::divideCeil(k, groupSize);
      auto valuesType = RankedTensorType::get({panels, k, format.rowElements()},
                                              format.valueType(&getContext()));
      auto scalesType = RankedTensorType::get({panels, groups, kPanelWidth},
                                              builder.getF32Type());
      auto zeroPointsType = scalesType.clone(format.valueType(&getContext()));
      // The scales and zero points are computed with the values; they are
      // kept until their attributes are made.
      QuantizedPanels quantized{{},
                                std::vector<float>(scalesType.getNumElements()),
                                std::vector<uint8_t>(format.hasZeroPoints()
                                                         ? zeroPointsType.getNumElements()
                                                         : 0)};
      double error = 0;
      ElementsAttr values = replacementWeight(
          constant.getValue(), valuesType, "_" + format.mode().take_front(4).str(),
          [&](MutableArrayRef<char> bytes) {
            quantized.values = MutableArrayRef<uint8_t>(
                reinterpret_cast<uint8_t *>(bytes.data()), bytes.size());
            error = quantizePanels(*weights, panels, k, groupSize, format, quantized);
          });
      auto copyOf = [&](RankedTensorType blobType, StringRef suffix, const void *data) {
        return replacementWeight(constant.getValue(), blobType, suffix,
                                 [&](MutableArrayRef<char> bytes) {
                                   std::memcpy(bytes.data(), data, bytes.size());
                                 });
      };
      ElementsAttr scales = copyOf(scalesType, "_scales", quantized.scales.data());
      const int64_t columns = products->front().getType().getShape().back();
      report.push_back(builder.getDictionaryAttr({
          builder.getNamedAttr("name", builder.getStringAttr(weightName(constant.getLoc()))),
          builder.getNamedAttr("rows", builder.getI64IntegerAttr(k)),
          builder.getNamedAttr("columns", builder.getI64IntegerAttr(columns)),
          builder.getNamedAttr("products", builder.getI64IntegerAttr(products->size())),
          builder.getNamedAttr("relative_rms_error", builder.getF64FloatAttr(error)),
      }));
      builder.setInsertionPoint(constant);
      Location loc = constant.getLoc();
      Value quantizedWeight = builder.create<ConstantOp>(loc, valuesType, values);
      Value scaleWeight = builder.create<ConstantOp>(loc, scalesType, scales);
      Value zeroPointWeight;
      if (format.hasZeroPoints())
        zeroPointWeight = builder.create<ConstantOp>(
            loc, zeroPointsType,
            copyOf(zeroPointsType, "_zero_points", quantized.zeroPoints.data()));
      for (LinearOp linear : *products) {
        builder.setInsertionPoint(linear);
        Value result = builder.create<LinearOp>(
            linear.getLoc(), linear.getType(), linear.getInput(), quantizedWeight,
            scaleWeight, zeroPointWeight, linear.getBias(),
            linear.getActivationAttr(), linear.getGate(), linear.getResidual(),
            /*transpose_b=*/false, /*packed=*/true,
            builder.getI64IntegerAttr(groupSize));
        linear.getResult().replaceAllUsesWith(result);
        linear.erase();
      }
      readers.erase(constant);
    }
    getOperation()->setAttr(
        kQuantizationAttrName,
        builder.getDictionaryAttr({
            builder.getNamedAttr("mode", builder.getStringAttr(format.mode())),
            builder.getNamedAttr("group_size", builder.getI64IntegerAttr(groupSize)),
            builder.getNamedAttr("lm_head", builder.getBoolAttr(quantizeLmHead)),
            builder.getNamedAttr("weights", builder.getArrayAttr(report)),
        }));
  }
};

} // namespace
} // namespace kiln
