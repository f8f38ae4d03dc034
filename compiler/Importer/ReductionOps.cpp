//===- ReductionOps.cpp - ReduceSum, ReduceMean, ReduceMax ----------------===//
//
// Opsets 13-17 give ReduceSum its axes as an input and the others as an
// attribute; both normalize to kiln's sorted axes attribute.
//
//===----------------------------------------------------------------------===//
#include "compiler/Importer/ImportContext.h"
#include "dialects/Kiln/IR/KilnOps.h"
#include "llvm/ADT/Sequence.h"

using namespace mlir;

namespace kiln {
namespace {

enum class AxesFrom { Attribute, Input };

template <typename OpTy, AxesFrom axesFrom>
LogicalResult importReduce(ImportContext &ctx, const onnx::NodeProto &node) {
  auto x = ctx.requiredInput(node, 0);
  auto keepDims = ctx.intAttr(node, "keepdims", 1);
  auto noopWithEmptyAxes = ctx.intAttr(node, "noop_with_empty_axes", 0);
  if (failed(x) || failed(keepDims) || failed(noopWithEmptyAxes))
    return failure();
  auto inputType = cast<RankedTensorType>(x->getType());
  int64_t rank = inputType.getRank();

  SmallVector<int64_t> axes;
  if (axesFrom == AxesFrom::Attribute) {
    auto attr = ctx.intsAttr(node, "axes");
    if (failed(attr))
      return failure();
    if (*attr)
      axes = **attr;
  } else if (ctx.input(node, 1)) {
    auto values = ctx.constantInts(node, 1, "axes");
    if (failed(values))
      return failure();
    axes = *values;
  }
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

} // namespace

void registerReductionImporters(OpImporterRegistry &registry) {
  registry.add("ReduceSum", importReduce<ReduceSumOp, AxesFrom::Input>);
  registry.add("ReduceMean", importReduce<ReduceMeanOp, AxesFrom::Attribute>);
  registry.add("ReduceMax", importReduce<ReduceMaxOp, AxesFrom::Attribute>);
}

} // namespace kiln
