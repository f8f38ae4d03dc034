//===- KilnFolds.cpp - Folders of the kiln dialect ops --------------------===//
//
// Only the trivial folds live here: ops that do nothing and shape queries on
// static shapes. Constant folding of real computation is a pass of its own.
//
//===----------------------------------------------------------------------===//
#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;
using namespace kiln;

/// `input` when the op leaves it unchanged, i.e. has exactly its type.
static OpFoldResult foldNoOp(Value input, Value result) {
  if (input.getType() == result.getType())
    return input;
  return {};
}

static Attribute i64Elements(Type type, ArrayRef<int64_t> values) {
  return DenseIntElementsAttr::get(cast<ShapedType>(type), values);
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

OpFoldResult CastOp::fold(FoldAdaptor) { return foldNoOp(getInput(), getResult()); }

OpFoldResult TransposeOp::fold(FoldAdaptor) {
  if (!llvm::equal(getPermutation(), llvm::seq<int64_t>(0, getPermutation().size())))
    return {};
  return foldNoOp(getInput(), getResult());
}

OpFoldResult ReshapeOp::fold(FoldAdaptor) {
  // A reshape between equal static shapes moves nothing.
  if (!cast<RankedTensorType>(getInput().getType()).hasStaticShape())
    return {};
  return foldNoOp(getInput(), getResult());
}

OpFoldResult ExpandOp::fold(FoldAdaptor) {
  if (!cast<RankedTensorType>(getInput().getType()).hasStaticShape())
    return {};
  return foldNoOp(getInput(), getResult());
}

OpFoldResult SqueezeOp::fold(FoldAdaptor) {
  return getAxes().empty() ? foldNoOp(getInput(), getResult()) : OpFoldResult();
}

OpFoldResult UnsqueezeOp::fold(FoldAdaptor) {
  return getAxes().empty() ? foldNoOp(getInput(), getResult()) : OpFoldResult();
}

OpFoldResult ConcatOp::fold(FoldAdaptor) {
  // Inputs statically empty along the axis add nothing: a rotary embedding
  // over the whole head concatenates an empty pass-through part.
  SmallVector<Value> kept;
  for (Value input : getInputs())
    if (cast<RankedTensorType>(input.getType()).getDimSize(getAxis()) != 0)
      kept.push_back(input);
  if (kept.size() == 1)
    return foldNoOp(kept.front(), getResult());
  if (kept.empty() || kept.size() == getInputs().size())
    return {};
  getInputsMutable().assign(kept);
  return getResult();
}

template <typename ReduceOp>
static OpFoldResult foldReduce(ReduceOp op) {
  return op.getAxes().empty() ? foldNoOp(op.getInput(), op.getResult())
                              : OpFoldResult();
}
OpFoldResult ReduceSumOp::fold(FoldAdaptor) { return foldReduce(*this); }
OpFoldResult ReduceMeanOp::fold(FoldAdaptor) { return foldReduce(*this); }
OpFoldResult ReduceMaxOp::fold(FoldAdaptor) { return foldReduce(*this); }
OpFoldResult ReduceMinOp::fold(FoldAdaptor) { return foldReduce(*this); }
OpFoldResult ReduceProdOp::fold(FoldAdaptor) { return foldReduce(*this); }

OpFoldResult ShapeOfOp::fold(FoldAdaptor) {
  auto input = cast<RankedTensorType>(getInput().getType());
  if (!input.hasStaticShape() || !getType().hasStaticShape())
    return {};
  return i64Elements(getType(), input.getShape());
}

OpFoldResult DimOp::fold(FoldAdaptor) {
  int64_t dim = cast<RankedTensorType>(getInput().getType()).getDimSize(getIndex());
  if (ShapedType::isDynamic(dim))
    return {};
  return i64Elements(getType(), {dim});
}

OpFoldResult SizeOp::fold(FoldAdaptor) {
  auto input = cast<RankedTensorType>(getInput().getType());
  if (!input.hasStaticShape())
    return {};
  return i64Elements(getType(), {input.getNumElements()});
}
