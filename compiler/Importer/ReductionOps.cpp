//===- ReductionOps.cpp - Reductions and CumSum ---------------------------===//
//
// ReduceSum takes its axes as an input from opset 13, the other reductions
// from opset 18 (an attribute before); both normalize to kiln's sorted axes
// attribute.
//
//===----------------------------------------------------------------------===//
#include "compiler/Importer/ImportContext.h"
#include "dialects/Kiln/IR/KilnOps.h"
#include "llvm/ADT/Sequence.h"

using namespace mlir;

namespace kiln {
namespace {

/// `axesInputSince`: the first opset in which the op's axes are its second
/// input rather than an attribute.
template <typename OpTy, int64_t axesInputSince>
LogicalResult importReduce(ImportContext &ctx, const onnx::NodeProto &node) {
  auto x = ctx.requiredInput(node, 0);
  auto keepDims = ctx.intAttr(node, "keepdims", 1);
  auto noopWithEmptyAxes = ctx.intAttr(node, "noop_with_empty_axes", 0);
  if (failed(x) || failed(keepDims) || failed(noopWithEmptyAxes))
    return failure();
  auto inputType = cast<RankedTensorType>(x->getType());
  int64_t rank = inputType.getRank();

  auto listed = ctx.intsAttrOrConstantInput(node, 1, "axes", axesInputSince,
                                            "they decide the result's rank");
  if (failed(listed))
    return failure();
  SmallVector<int64_t> axes = listed->value_or(SmallVector<int64_t>());
  if (axes.empty()) {
    if (*noopWithEmptyAxes) {
      ctx.setOutput(node, 0, *x);
      return success();
    }
    axes = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  }
  auto normalized = ctx.normalizeAxes(node, axes, rank);
  if (failed(normalized))
    return failure();

  SmallVector<int64_t> shape;
  for (int64_t i = 0; i < rank; ++i) {
    if (!llvm::is_contained(*normalized, i))
      shape.push_back(inputType.getDimSize(i));
    else if (*keepDims)
      shape.push_back(1);
  }
  OpBuilder &b = ctx.builder();
  ctx.setOutput(node, 0,
                b.create<OpTy>(ctx.loc(node), inputType.clone(shape), *x,
                               b.getDenseI64ArrayAttr(*normalized),
                               b.getBoolAttr(*keepDims != 0)));
  return success();
}

/// The axis must be known at compile time: it decides which dimension the
/// generated loop scans.
LogicalResult importCumSum(ImportContext &ctx, const onnx::NodeProto &node) {
  auto x = ctx.requiredInput(node, 0);
  auto exclusive = ctx.intAttr(node, "exclusive", 0);
  auto reverse = ctx.intAttr(node, "reverse", 0);
  if (failed(x) || failed(exclusive) || failed(reverse))
    return failure();
  auto axisValues = ctx.constantInts(node, 1, "axis",
                                     "it decides which dimension the scan runs along");
  if (failed(axisValues))
    return failure();
  if (axisValues->size() != 1)
    return ctx.error(node) << "axis must hold one value, got " << axisValues->size();
  auto type = cast<RankedTensorType>(x->getType());
  auto axis = ctx.normalizeAxis(node, axisValues->front(), type.getRank());
  if (failed(axis))
    return failure();
  OpBuilder &b = ctx.builder();
  auto op = b.create<CumSumOp>(ctx.loc(node), type, *x, b.getI64IntegerAttr(*axis),
                               *exclusive ? b.getUnitAttr() : UnitAttr(),
                               *reverse ? b.getUnitAttr() : UnitAttr());
  ctx.setOutput(node, 0, op);
  return success();
}

} // namespace

void registerReductionImporters(OpImporterRegistry &registry) {
  registry.add("ReduceSum", importReduce<ReduceSumOp, 13>, 1);
  registry.add("ReduceMean", importReduce<ReduceMeanOp, 18>, 1);
  registry.add("ReduceMax", importReduce<ReduceMaxOp, 18>, 1);
  registry.add("CumSum", importCumSum, 11);
}

} // namespace kiln
