//===- NormalizationOps.cpp - Softmax, LogSoftmax, the normalizations ----===//
#include "compiler/Importer/ImportContext.h"
#include "dialects/Kiln/IR/KilnOps.h"

using namespace mlir;

namespace kiln {
namespace {

template <typename OpTy>
LogicalResult importSoftmax(ImportContext &ctx, const onnx::NodeProto &node) {
  auto x = ctx.requiredInput(node, 0);
  auto axisAttr = ctx.intAttr(node, "axis", -1);
  if (failed(x) || failed(axisAttr))
    return failure();
  auto axis = ctx.normalizeAxis(node, *axisAttr,
                                cast<RankedTensorType>(x->getType()).getRank());
  if (failed(axis))
    return failure();
  ctx.setOutput(node, 0,
                ctx.builder().create<OpTy>(ctx.loc(node), x->getType(), *x,
                                           ctx.builder().getI64IntegerAttr(*axis)));
  return success();
}

/// LayerNormalization's optional Mean and InvStdDev outputs, computed apart
/// from the normalization (which kiln.layer_norm fuses) in the stash type,
/// the reduced axes kept as size 1.
void importLayerNormStatistics(ImportContext &ctx, const onnx::NodeProto &node,
                               Value x, int64_t axis, float epsilon,
                               Type stashType) {
  OpBuilder &b = ctx.builder();
  Location loc = ctx.loc(node);
  auto type = cast<RankedTensorType>(x.getType());
  if (type.getElementType() != stashType) {
    type = type.clone(stashType);
    x = b.create<CastOp>(loc, type, x);
  }
  SmallVector<int64_t> axes, keptShape(type.getShape());
  for (int64_t dim = axis; dim < type.getRank(); ++dim) {
    axes.push_back(dim);
    keptShape[dim] = 1;
  }
  auto keptType = ctx.resultType(node, 1, stashType, keptShape);
  auto reduceMean = [&](Value value) {
    return b.create<ReduceMeanOp>(loc, keptType, value, b.getDenseI64ArrayAttr(axes),
                                  b.getBoolAttr(true));
  };
  Value mean = reduceMean(x);
  Value centered = b.create<SubOp>(loc, type, x, mean);
  Value variance = reduceMean(b.create<MulOp>(loc, type, centered, centered));
  Value shifted = b.create<AddOp>(loc, keptType, variance, ctx.scalar(loc, stashType, epsilon));
  ctx.setOutput(node, 1, mean);
  if (ctx.hasOutput(node, 2))
    ctx.setOutput(node, 2, b.create<RsqrtOp>(loc, shifted));
}

LogicalResult importLayerNorm(ImportContext &ctx, const onnx::NodeProto &node) {
  auto x = ctx.requiredInput(node, 0);
  auto scale = ctx.requiredInput(node, 1);
  auto axisAttr = ctx.intAttr(node, "axis", -1);
  auto epsilon = ctx.floatAttr(node, "epsilon", 1e-5f);
  auto stashAttr = ctx.intAttr(node, "stash_type", onnx::TensorProto::FLOAT);
  if (failed(x) || failed(scale) || failed(axisAttr) || failed(epsilon) ||
      failed(stashAttr))
    return failure();
  auto axis = ctx.normalizeAxis(node, *axisAttr,
                                cast<RankedTensorType>(x->getType()).getRank());
  if (failed(axis))
    return failure();
  Type stashType = convertElementType(ctx.context(), *stashAttr);
  if (!stashType || !isa<FloatType>(stashType))
    return ctx.error(node) << "stash_type must be a float type, got "
                           << onnxTypeName(*stashAttr);
  OpBuilder &b = ctx.builder();
  ctx.setOutput(node, 0,
                b.create<LayerNormOp>(ctx.loc(node), x->getType(), *x, *scale,
                                      ctx.input(node, 2),
                                      b.getI64IntegerAttr(*axis),
                                      b.getF32FloatAttr(*epsilon)));
  if (ctx.isOutputUsed(node, 1) || ctx.isOutputUsed(node, 2))
    importLayerNormStatistics(ctx, node, *x, *axis, *epsilon, stashType);
  return success();
}

/// BatchNormalization at inference (opset 15; 14 and 9 read the same
/// without training outputs): (x − mean) / sqrt(var + epsilon) · scale + B,
/// each [C] broadcast along dim 1. The training mode, which updates the
/// running statistics, is refused by name.
LogicalResult importBatchNorm(ImportContext &ctx, const onnx::NodeProto &node) {
  auto operands = ctx.requiredInputs(node, 5);
  auto epsilon = ctx.floatAttr(node, "epsilon", 1e-5f);
  auto training = ctx.intAttr(node, "training_mode", 0);
  if (failed(operands) || failed(epsilon) || failed(training))
    return failure();
  if (*training || ctx.hasOutput(node, 1) || ctx.hasOutput(node, 2))
    return ctx.error(node) << "the training mode (training_mode = 1, or the running "
                              "mean and variance as outputs) is not supported";
  Value x = (*operands)[0];
  auto type = cast<RankedTensorType>(x.getType());
  if (type.getRank() < 2 || !isa<FloatType>(type.getElementType()))
    return ctx.error(node) << "input must be a float tensor [N, C, ...], got " << type;
  Location loc = ctx.loc(node);
  OpBuilder &b = ctx.builder();
  // Each [C] statistic as [C, 1, ..., 1], which broadcasts along dim 1.
  SmallVector<int64_t> trailing = llvm::to_vector(llvm::seq<int64_t>(1, type.getRank() - 1));
  auto perChannel = [&](Value value) -> FailureOr<Value> {
    auto valueType = cast<RankedTensorType>(value.getType());
    if (valueType.getRank() != 1)
      return ctx.error(node) << "scale, B, mean and var must be [C], got " << valueType;
    Value converted = value;
    if (valueType.getElementType() != type.getElementType())
      converted = b.create<CastOp>(loc, valueType.clone(type.getElementType()), value);
    SmallVector<int64_t> shape(type.getRank() - 1, 1);
    shape[0] = valueType.getDimSize(0);
    return b.create<UnsqueezeOp>(loc, RankedTensorType::get(shape, type.getElementType()),
                                 converted, b.getDenseI64ArrayAttr(trailing))
        .getResult();
  };
  SmallVector<Value> stats;
  for (int i = 1; i < 5; ++i) {
    auto stat = perChannel((*operands)[i]);
    if (failed(stat))
      return failure();
    stats.push_back(*stat);
  }
  auto statType = cast<RankedTensorType>(stats[0].getType());
  Value deviation = b.create<RsqrtOp>(
      loc, statType, b.create<AddOp>(loc, statType, stats[3],
                                     ctx.scalar(loc, type.getElementType(), *epsilon)));
  Value centered = b.create<SubOp>(loc, type, x, stats[2]);
  Value normalized = b.create<MulOp>(loc, type, centered,
                                     b.create<MulOp>(loc, statType, deviation, stats[0]));
  ctx.setOutput(node, 0, b.create<AddOp>(loc, type, normalized, stats[1]));
  return success();
}

} // namespace

void registerNormalizationImporters(OpImporterRegistry &registry) {
  registry.add("Softmax", importSoftmax<SoftmaxOp>, 13);
  registry.add("LogSoftmax", importSoftmax<LogSoftmaxOp>, 13);
  registry.add("LayerNormalization", importLayerNorm, 17);
  registry.add("BatchNormalization", importBatchNorm, 9);
}

} // namespace kiln
