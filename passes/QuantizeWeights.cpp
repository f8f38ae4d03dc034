//===- QuantizeWeights.cpp - The kiln-quantize-weights pass ---------------===//
//
// Each packed constant weight of a kiln.linear becomes integers and an f32
// scale per column and group of rows, either int8, symmetric (scale = max
// |w| / 127 over the group, value = round(w / scale)), or 4-bit, asymmetric
// with a zero point per group. Weight-only, the activations stay f32 and
// the runtime multiplies the values back in registers, so a product that
// streams its weight (a decode step) reads a quarter (an eighth) of the
// bytes. With quantize-inputs (W8A8), int8 with one scale per column, laid
// out for the CPU's dot products of 4 bytes, and the linears quantize
// their inputs at run time: the products themselves run in integers.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/Kiln/IR/KilnOps.h"
#include "passes/WeightBlobs.h"
#include "passes/WeightQuantizer.h"

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
static_assert(kPanelWidth == quantizer::kPanelWidth,
              "the quantizer lays out the linear's panels");

/// The values' element type of `format`: i8, or ui8 pairs of 4-bit values.
Type valueType(const quantizer::Format &format, MLIRContext *context) {
  return format.bits == 8 ? IntegerType::get(context, 8)
                          : IntegerType::get(context, 8, IntegerType::Unsigned);
}

/// `--report`'s name of the mode, and the replaced blobs' suffix.
StringRef modeName(const quantizer::Format &format, bool quantizeInputs,
                   bool calibrated) {
  if (quantizeInputs)
    return calibrated ? "int8" : "int8-dynamic";
  return format.bits == 8 ? "int8-weight" : "int4-weight";
}
StringRef blobSuffix(const quantizer::Format &format) {
  return format.bits == 8 ? "_int8" : "_int4";
}

/// Why a weight of K rows cannot take quantized inputs, or "".
StringRef int8InputsRefusal(int64_t k) {
  if (k % LinearOp::kRowQuad != 0)
    return "K is not a multiple of 4";
  if (k > LinearOp::kMaxInt8Depth)
    return "K is over 65536";
  return "";
}

/// A product's fixed input quantization from the range its input took in
/// calibration: [lo, hi] widened to include 0, cut into 255 steps (scale 1
/// for an input that was always 0), and where 0 lands.
struct StaticInputQuantization {
  float scale;
  int64_t zeroPoint;
};
StaticInputQuantization staticInputQuantization(float lo, float hi) {
  lo = std::min(lo, 0.0f);
  hi = std::max(hi, 0.0f);
  const float scale = hi > lo ? (hi - lo) / 255.0f : 1.0f;
  const float zeroPoint = std::nearbyint(-lo / scale);
  return {scale, static_cast<int64_t>(std::clamp(zeroPoint, 0.0f, 255.0f))};
}

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
    if (quantizeInputs && bits != 8) {
      getOperation().emitError()
          << "kiln-quantize-weights: quantize-inputs needs bits=8, got "
          << bits.getValue();
      return signalPassFailure();
    }
    const quantizer::Format format{bits};
    auto calibratedRanges =
        getOperation()->getAttrOfType<DictionaryAttr>(kCalibratedInputRangesAttrName);
    if (calibratedRanges && !quantizeInputs) {
      getOperation().emitError() << "kiln-quantize-weights: calibrated input "
                                    "ranges need quantize-inputs";
      return signalPassFailure();
    }
    SmallVector<ConstantOp> constants;
    getOperation().walk([&](ConstantOp constant) { constants.push_back(constant); });
    OpBuilder builder(&getContext());
    BlobReaders readers(getOperation());
    SmallVector<Attribute> report, keptF32;
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
      const int64_t panels = type.getDimSize(0), k = type.getDimSize(1);
      const int64_t columns = products->front().getType().getShape().back();
      // The report's entry for the weight: its name and shape, and `more`.
      auto entry = [&](ArrayRef<NamedAttribute> more) {
        SmallVector<NamedAttribute> fields = {
            builder.getNamedAttr("name", builder.getStringAttr(weightName(constant.getLoc()))),
            builder.getNamedAttr("rows", builder.getI64IntegerAttr(k)),
            builder.getNamedAttr("columns", builder.getI64IntegerAttr(columns))};
        fields.append(more.begin(), more.end());
        return builder.getDictionaryAttr(fields);
      };
      if (StringRef refusal = int8InputsRefusal(k); quantizeInputs && !refusal.empty()) {
        // Left f32 rather than weight-only int8: the mode promised integer
        // products, and the report says which weights did not get them.
        keptF32.push_back(
            entry({builder.getNamedAttr("reason", builder.getStringAttr(refusal))}));
        continue;
      }
      std::optional<StaticInputQuantization> staticInput;
      if (calibratedRanges) {
        const std::string name = weightName(constant.getLoc());
        auto range = calibratedRanges.getAs<DenseF32ArrayAttr>(name);
        if (!range || range.size() != 2 || !std::isfinite(range[0]) ||
            !std::isfinite(range[1]) || range[0] > range[1]) {
          constant.emitError() << "kiln-quantize-weights: no calibrated input "
                                  "range [lo, hi] for the products of weight '"
                               << name << "'";
          return signalPassFailure();
        }
        staticInput = staticInputQuantization(range[0], range[1]);
      }
      std::vector<char> splat;
      std::optional<ArrayRef<float>> weights = floatValues(constant.getValue(), splat);
      if (!weights)
        continue;
      // Integer products need one scale per column: a group of all K rows.
      const int64_t rowsPerGroup = quantizeInputs ? k : groupSize.getValue();
      const int64_t groups = llvm::divideCeil(k, rowsPerGroup);
      auto valuesType = RankedTensorType::get({panels, k, format.rowBytes()},
                                              valueType(format, &getContext()));
      auto scalesType = RankedTensorType::get({panels, groups, kPanelWidth},
                                              builder.getF32Type());
      auto zeroPointsType = scalesType.clone(valueType(format, &getContext()));
      // The scales and zero points are computed with the values; they are
      // kept until their attributes are made.
      std::vector<float> scaleValues(scalesType.getNumElements());
      std::vector<uint8_t> zeroPointValues(
          format.hasZeroPoints() ? zeroPointsType.getNumElements() : 0);
      std::vector<int32_t> columnSums(quantizeInputs ? panels * kPanelWidth : 0);
      double error = 0;
      ElementsAttr values = replacementWeight(
          constant.getValue(), valuesType, blobSuffix(format),
          [&](MutableArrayRef<char> bytes) {
            auto *out = reinterpret_cast<uint8_t *>(bytes.data());
            std::vector<uint8_t> rows(quantizeInputs ? bytes.size() : 0);
            error = quantizer::quantizePanels(
                weights->data(), panels, k, rowsPerGroup, format,
                {quantizeInputs ? rows.data() : out, scaleValues.data(),
                 zeroPointValues.data()});
            if (quantizeInputs)
              quantizer::toRowQuads(rows.data(), panels, k, out, columnSums.data());
          });
      auto copyOf = [&](RankedTensorType blobType, StringRef suffix, const void *data) {
        return replacementWeight(constant.getValue(), blobType, suffix,
                                 [&](MutableArrayRef<char> bytes) {
                                   std::memcpy(bytes.data(), data, bytes.size());
                                 });
      };
      ElementsAttr scales = copyOf(scalesType, "_scales", scaleValues.data());
      SmallVector<NamedAttribute> facts = {
          builder.getNamedAttr("products", builder.getI64IntegerAttr(products->size())),
          builder.getNamedAttr("relative_rms_error", builder.getF64FloatAttr(error)),
      };
      FloatAttr inputScale;
      IntegerAttr inputZeroPoint;
      if (staticInput) {
        inputScale = builder.getF32FloatAttr(staticInput->scale);
        inputZeroPoint = builder.getI64IntegerAttr(staticInput->zeroPoint);
        facts.push_back(builder.getNamedAttr("input_scale", inputScale));
        facts.push_back(builder.getNamedAttr("input_zero_point", inputZeroPoint));
      }
      report.push_back(entry(facts));
      builder.setInsertionPoint(constant);
      Location loc = constant.getLoc();
      Value quantizedWeight = builder.create<ConstantOp>(loc, valuesType, values);
      Value scaleWeight = builder.create<ConstantOp>(loc, scalesType, scales);
      Value zeroPointWeight, columnSumWeight;
      if (format.hasZeroPoints())
        zeroPointWeight = builder.create<ConstantOp>(
            loc, zeroPointsType,
            copyOf(zeroPointsType, "_zero_points", zeroPointValues.data()));
      if (quantizeInputs) {
        auto sumsType = RankedTensorType::get({panels, kPanelWidth}, builder.getI32Type());
        columnSumWeight = builder.create<ConstantOp>(
            loc, sumsType, copyOf(sumsType, "_column_sums", columnSums.data()));
      }
      for (LinearOp linear : *products) {
        builder.setInsertionPoint(linear);
        Value result = builder.create<LinearOp>(
            linear.getLoc(), linear.getType(), linear.getInput(), quantizedWeight,
            scaleWeight, zeroPointWeight, columnSumWeight, linear.getBias(),
            linear.getActivationAttr(), linear.getGate(), linear.getResidual(),
            /*transpose_b=*/false, /*packed=*/true,
            builder.getI64IntegerAttr(rowsPerGroup), quantizeInputs, inputScale,
            inputZeroPoint, /*input_tensor_range=*/false);
        linear.getResult().replaceAllUsesWith(result);
        linear.erase();
      }
      readers.erase(constant);
    }
    SmallVector<NamedAttribute> summary = {
        builder.getNamedAttr("mode", builder.getStringAttr(modeName(
                                         format, quantizeInputs, bool(calibratedRanges)))),
        builder.getNamedAttr("lm_head", builder.getBoolAttr(quantizeLmHead)),
        builder.getNamedAttr("weights", builder.getArrayAttr(report)),
    };
    // W8A8 scales whole columns; its report lists the weights left f32.
    if (quantizeInputs)
      summary.push_back(builder.getNamedAttr("kept_f32", builder.getArrayAttr(keptF32)));
    else
      summary.push_back(builder.getNamedAttr("group_size", builder.getI64IntegerAttr(groupSize)));
    getOperation()->setAttr(kQuantizationAttrName, builder.getDictionaryAttr(summary));
    // The ranges are spent: they live on in the linears' input quantization.
    getOperation()->removeAttr(kCalibratedInputRangesAttrName);
  }
};

} // namespace
} // namespace kiln
