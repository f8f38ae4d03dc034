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
#include "passes/WeightQuantizer.h"

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
StringRef modeName(const quantizer::Format &format) {
  return format.bits == 8 ? "int8-weight" : "int4-weight";
}
StringRef blobSuffix(const quantizer::Format &format) {
  return format.bits == 8 ? "_int8" : "_int4";
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
    const quantizer::Format format{bits};
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
      std::vector<char> splat;
      std::optional<ArrayRef<float>> weights = floatValues(constant.getValue(), splat);
      if (!weights)
        continue;
      const int64_t panels = type.getDimSize(0), k = type.getDimSize(1);
      const int64_t groups = llvm::divideCeil(k, groupSize);
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
      double error = 0;
      ElementsAttr values = replacementWeight(
          constant.getValue(), valuesType, blobSuffix(format),
          [&](MutableArrayRef<char> bytes) {
            error = quantizer::quantizePanels(
                weights->data(), panels, k, groupSize, format,
                {reinterpret_cast<uint8_t *>(bytes.data()), scaleValues.data(),
                 zeroPointValues.data()});
          });
      auto copyOf = [&](RankedTensorType blobType, StringRef suffix, const void *data) {
        return replacementWeight(constant.getValue(), blobType, suffix,
                                 [&](MutableArrayRef<char> bytes) {
                                   std::memcpy(bytes.data(), data, bytes.size());
                                 });
      };
      ElementsAttr scales = copyOf(scalesType, "_scales", scaleValues.data());
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
            copyOf(zeroPointsType, "_zero_points", zeroPointValues.data()));
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
            builder.getNamedAttr("mode", builder.getStringAttr(modeName(format))),
            builder.getNamedAttr("group_size", builder.getI64IntegerAttr(groupSize)),
            builder.getNamedAttr("lm_head", builder.getBoolAttr(quantizeLmHead)),
            builder.getNamedAttr("weights", builder.getArrayAttr(report)),
        }));
  }
};

} // namespace
} // namespace kiln
