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

LogicalResult importLayerNorm(ImportContext &ctx, const onnx::NodeProto &node) {
  auto x = ctx.requiredInput(node, 0);
  auto scale = ctx.requiredInput(node, 1);
  auto axisAttr = ctx.intAttr(node, "axis", -1);
  auto epsilon = ctx.floatAttr(node, "epsilon", 1e-5f);
  if (failed(x) || failed(scale) || failed(axisAttr) || failed(epsilon))
    return failure();
  // Exporters name the statistics outputs; only reading them is refused.
  if (ctx.isOutputUsed(node, 1) || ctx.isOutputUsed(node, 2))
    return ctx.error(node)
           << "the Mean and InvStdDev outputs are training outputs; kiln "
              "imports inference graphs only";
  auto axis = ctx.normalizeAxis(node, *axisAttr,
                                cast<RankedTensorType>(x->getType()).getRank());
  if (failed(axis))
    return failure();
  OpBuilder &b = ctx.builder();
  ctx.setOutput(node, 0,
                b.create<LayerNormOp>(ctx.loc(node), x->getType(), *x, *scale,
                                      ctx.input(node, 2),
                                      b.getI64IntegerAttr(*axis),
                                      b.getF32FloatAttr(*epsilon)));
  return success();
}

} // namespace

void registerNormalizationImporters(OpImporterRegistry &registry) {
  registry.add("Softmax", importSoftmax<SoftmaxOp>, 13);
  registry.add("LogSoftmax", importSoftmax<LogSoftmaxOp>, 13);
  registry.add("LayerNormalization", importLayerNorm, 17);
}

} // namespace kiln
