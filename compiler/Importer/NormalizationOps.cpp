//===- NormalizationOps.cpp - Softmax, LogSoftmax, LayerNormalization -----===//
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

} // namespace

void registerNormalizationImporters(OpImporterRegistry &registry) {
  registry.add("Softmax", importSoftmax<SoftmaxOp>, 13);
  registry.add("LogSoftmax", importSoftmax<LogSoftmaxOp>, 13);
  registry.add("LayerNormalization", importLayerNorm, 17);
}

} // namespace kiln
