//===- QuantizeWeights.cpp - The kiln-quantize-weights pass ---------------===//
//
// Weight-only int8: each packed constant weight of a kiln.linear becomes
// int8 values and an f32 scale per column and group of rows, symmetric
// (scale = max |w| / 127 over the group, value = round(w / scale)). The
// activations stay f32; the runtime multiplies the values back in
// registers, so a product that streams its weight (a decode step) reads a
// quarter of the bytes.
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
constexpr float kInt8Max = 127.0f;

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

/// Quantizes packed panels `values` ([panels, k, W]) into `quantized`
/// (same layout) and `scales` ([panels, groups, W]), group by group of
/// `groupSize` rows of each column. Returns the error's relative RMS,
/// |W - value · scale| / |W| over all elements (0 for a zero weight).
double quantizePanels(ArrayRef<float> values, int64_t panels, int64_t k,
                      int64_t groupSize, MutableArrayRef<int8_t> quantized,
                      MutableArrayRef<float> scales) {
  const int64_t groups = llvm::divideCeil(k, groupSize);
  double squaredError = 0, squaredWeight = 0;
  for (int64_t panel = 0; panel < panels; ++panel)
    for (int64_t group = 0; group < groups; ++group) {
      const int64_t begin = group * groupSize, end = std::min(k, begin + groupSize);
      for (int64_t lane = 0; lane < kPanelWidth; ++lane) {
        auto at = [&](int64_t p) { return (panel * k + p) * kPanelWidth + lane; };
        float largest = 0.0f;
        for (int64_t p = begin; p < end; ++p)
          largest = std::max(largest, std::fabs(values[at(p)]));
        const float scale = largest / kInt8Max;
        scales[(panel * groups + group) * kPanelWidth + lane] = scale;
        if (scale == 0.0f)
          continue; // the values stay zero, as the weights are
        for (int64_t p = begin; p < end; ++p) {
          const float value = std::clamp(std::nearbyint(values[at(p)] / scale),
                                         -kInt8Max, kInt8Max);
          quantized[at(p)] = static_cast<int8_t>(value);
          const double error = double(values[at(p)]) - double(value * scale);
          squaredError += error * error;
          squaredWeight += double(values[at(p)]) * values[at(p)];
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
          << groupSize;
      return signalPassFailure();
    }
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
      std::optional<ArrayRef<float>> values = floatValues(constant.getValue(), splat);
      if (!values)
        continue;
      const int64_t panels = type.getDimSize(0), k = type.getDimSize(1);
      const int64_t groups = llvm::divideCeil(k, groupSize);
      auto valuesType = type.clone(builder.getI8Type());
      auto scalesType = RankedTensorType::get({panels, groups, kPanelWidth},
                                              builder.getF32Type());
      // The scales are computed with the values; they are kept until the
      // scales' attribute is made.
      std::vector<float> scaleValues(scalesType.getNumElements());
      double error = 0;
      ElementsAttr quantized = replacementWeight(
          constant.getValue(), valuesType, "_int8", [&](MutableArrayRef<char> bytes) {
            error = quantizePanels(*values, panels, k, groupSize,
                           MutableArrayRef<int8_t>(
                               reinterpret_cast<int8_t *>(bytes.data()), bytes.size()),
                           scaleValues);
          });
      ElementsAttr scales = replacementWeight(
          constant.getValue(), scalesType, "_scales", [&](MutableArrayRef<char> bytes) {
            std::memcpy(bytes.data(), scaleValues.data(), bytes.size());
          });
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
      Value quantizedWeight = builder.create<ConstantOp>(loc, valuesType, quantized);
      Value scaleWeight = builder.create<ConstantOp>(loc, scalesType, scales);
      for (LinearOp linear : *products) {
        builder.setInsertionPoint(linear);
        Value result = builder.create<LinearOp>(
            linear.getLoc(), linear.getType(), linear.getInput(), quantizedWeight,
            scaleWeight, linear.getBias(), linear.getActivationAttr(),
            linear.getGate(), linear.getResidual(), /*transpose_b=*/false,
            /*packed=*/true, builder.getI64IntegerAttr(groupSize));
        linear.getResult().replaceAllUsesWith(result);
        linear.erase();
      }
      readers.erase(constant);
    }
    getOperation()->setAttr(
        kQuantizationAttrName,
        builder.getDictionaryAttr({
            builder.getNamedAttr("mode", builder.getStringAttr("int8-weight")),
            builder.getNamedAttr("group_size", builder.getI64IntegerAttr(groupSize)),
            builder.getNamedAttr("lm_head", builder.getBoolAttr(quantizeLmHead)),
            builder.getNamedAttr("weights", builder.getArrayAttr(report)),
        }));
  }
};

} // namespace
} // namespace kiln
