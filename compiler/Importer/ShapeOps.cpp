//===- ShapeOps.cpp - Data movement ONNX ops ------------------------------===//
//
// Reshape, Flatten, Transpose, Squeeze, Unsqueeze, Concat, Split, Slice,
// Gather, GatherElements, GatherND, ScatterElements (and Scatter), ScatterND,
// Pad, Expand and Tile.
//
//===----------------------------------------------------------------------===//
#include "compiler/Importer/ComputedAxes.h"
#include "compiler/Importer/ImportContext.h"
#include "dialects/Kiln/IR/KilnOps.h"
#include "llvm/Support/MathExtras.h"

#include <limits>

using namespace mlir;

namespace kiln {
namespace {

RankedTensorType tensorType(Value value) {
  return cast<RankedTensorType>(value.getType());
}

SmallVector<int64_t> dynamicShape(int64_t rank) {
  return SmallVector<int64_t>(rank, ShapedType::kDynamic);
}

/// Length of a 1-D shape operand; fails when it is not known statically.
LogicalResult importReshape(ImportContext &ctx, const onnx::NodeProto &node) {
  auto x = ctx.requiredInput(node, 0);
  auto shape = ctx.requiredInput(node, 1);
  auto allowZero = ctx.intAttr(node, "allowzero", 0);
  if (failed(x) || failed(shape) || failed(allowZero))
    return failure();
  auto rank = ctx.staticLength(node, *shape, "shape");
  if (failed(rank))
    return failure();
  // allowzero matters only where an entry may be 0: a constant shape
  // without one reshapes alike either way.
  bool emptyDims = *allowZero != 0;
  if (emptyDims && ctx.isConstantInput(node, 1)) {
    auto values = ctx.constantInts(node, 1, "shape", "read only when constant");
    if (failed(values))
      return failure();
    emptyDims = llvm::is_contained(*values, 0);
  }
  auto type = ctx.resultType(node, 0, getElementTypeOrSelf(*x), dynamicShape(*rank));
  ctx.setOutput(node, 0,
                ctx.builder().create<ReshapeOp>(ctx.loc(node), type, *x, *shape,
                                                emptyDims));
  return success();
}

/// Flatten to [prod(d[:axis]), prod(d[axis:])], with -1 for the side that
/// holds dynamic dimensions.
LogicalResult importFlatten(ImportContext &ctx, const onnx::NodeProto &node) {
  auto x = ctx.requiredInput(node, 0);
  auto axisAttr = ctx.intAttr(node, "axis", 1);
  if (failed(x) || failed(axisAttr))
    return failure();
  auto type = tensorType(*x);
  int64_t rank = type.getRank();
  int64_t axis = *axisAttr < 0 ? *axisAttr + rank : *axisAttr;
  if (axis < 0 || axis > rank)
    return ctx.error(node) << "axis " << *axisAttr << " is out of range for rank "
                           << rank;
  auto product = [&](int64_t begin, int64_t end) -> std::optional<int64_t> {
    int64_t result = 1;
    for (int64_t i = begin; i < end; ++i) {
      if (type.isDynamicDim(i))
        return std::nullopt;
      result *= type.getDimSize(i);
    }
    return result;
  };
  std::optional<int64_t> outer = product(0, axis), inner = product(axis, rank);
  if (!outer && !inner)
    return ctx.error(node) << "cannot flatten " << type << " at axis " << axis
                           << ": both sides have dynamic dimensions";
  SmallVector<int64_t> shape = {outer.value_or(ShapedType::kDynamic),
                                inner.value_or(ShapedType::kDynamic)};
  SmallVector<int64_t> target = {outer.value_or(-1), inner.value_or(-1)};
  Location loc = ctx.loc(node);
  auto resultType = ctx.resultType(node, 0, type.getElementType(), shape);
  ctx.setOutput(node, 0,
                ctx.builder().create<ReshapeOp>(loc, resultType, *x,
                                                ctx.i64List(loc, target)));
  return success();
}

LogicalResult importTranspose(ImportContext &ctx, const onnx::NodeProto &node) {
  auto x = ctx.requiredInput(node, 0);
  auto permAttr = ctx.intsAttr(node, "perm");
  if (failed(x) || failed(permAttr))
    return failure();
  auto type = tensorType(*x);
  SmallVector<int64_t> perm;
  if (*permAttr)
    perm = **permAttr;
  else
    for (int64_t i = type.getRank() - 1; i >= 0; --i)
      perm.push_back(i);
  if (static_cast<int64_t>(perm.size()) != type.getRank())
    return ctx.error(node) << "attribute 'perm' has " << perm.size()
                           << " entries but the input has rank " << type.getRank();
  SmallVector<int64_t> shape;
  for (int64_t axis : perm) {
    if (axis < 0 || axis >= type.getRank())
      return ctx.error(node) << "attribute 'perm' entry " << axis
                             << " is out of range for rank " << type.getRank();
    shape.push_back(type.getDimSize(axis));
  }
  auto resultType = ctx.resultType(node, 0, type.getElementType(), shape);
  ctx.setOutput(node, 0,
                ctx.builder().create<TransposeOp>(
                    ctx.loc(node), resultType, *x,
                    ctx.builder().getDenseI64ArrayAttr(perm)));
  return success();
}

/// Squeeze by axes computed at run time: a reshape to the input's dims that
/// the axes do not name, in order (each found by its rank among the kept
/// dims), after checking that the axes are distinct and name dims of 1.
Value computedAxesSqueeze(ImportContext &ctx, const onnx::NodeProto &node, Value x,
                          int64_t count) {
  ShapeMath m{ctx, ctx.loc(node)};
  auto type = tensorType(x);
  int64_t rank = type.getRank(), kept = rank - count;
  Value squeezed = namedDims(m, axisNames(m, ctx.input(node, 1), count, rank), rank);
  Value dims = m.b().create<ShapeOfOp>(m.loc, RankedTensorType::get({rank}, m.i64()), x);
  Value notOne = m.compare(ComparePredicate::ne, dims, m.scalar(1), {rank});
  Value bad = m.b().create<AndOp>(m.loc, tensorType(squeezed), squeezed, notOne);
  m.b().create<AssertOp>(m.loc,
                         m.compare(ComparePredicate::eq, m.sum(m.count(bad), 0), m.scalar(0), {}),
                         m.b().getStringAttr("a squeezed dim is not 1"));
  Value shape = keptDims(m, dims, squeezed, rank, kept);
  auto resultType = ctx.resultType(node, 0, type.getElementType(), dynamicShape(kept));
  return m.b().create<ReshapeOp>(m.loc, resultType, x, shape, false);
}

/// Unsqueeze by axes computed at run time: a reshape to rank + count dims,
/// 1 where an axis names the dim and else the next input dim (the one after
/// the input dims already placed), after checking the axes are distinct.
Value computedAxesUnsqueeze(ImportContext &ctx, const onnx::NodeProto &node, Value x,
                            int64_t count) {
  ShapeMath m{ctx, ctx.loc(node)};
  auto type = tensorType(x);
  int64_t inputRank = type.getRank(), rank = inputRank + count;
  Value added = namedDims(m, axisNames(m, ctx.input(node, 1), count, rank), rank);
  auto shapeType = RankedTensorType::get({rank}, m.i64());
  // Result dim p not added is input dim p - (dims added before p), clamped
  // into range for the added ones, whose value is not used. A 0-d input
  // has none: every dim is a new 1.
  Value inputDims = m.scalar(1);
  if (inputRank > 0) {
    Value source = m.b().create<SubOp>(m.loc, shapeType, m.iota(rank), m.countBefore(added));
    source = m.b().create<ClampOp>(m.loc, shapeType, source, m.scalar(0),
                                   m.scalar(inputRank - 1));
    Value dims = m.b().create<ShapeOfOp>(m.loc, RankedTensorType::get({inputRank}, m.i64()), x);
    inputDims = m.b().create<GatherOp>(m.loc, shapeType, dims, source, m.b().getI64IntegerAttr(0));
  }
  Value shape = m.b().create<WhereOp>(m.loc, shapeType, added, m.scalar(1), inputDims);
  auto resultType = ctx.resultType(node, 0, type.getElementType(), dynamicShape(rank));
  return m.b().create<ReshapeOp>(m.loc, resultType, x, shape, false);
}

LogicalResult importSqueeze(ImportContext &ctx, const onnx::NodeProto &node) {
  auto x = ctx.requiredInput(node, 0);
  if (failed(x))
    return failure();
  auto type = tensorType(*x);
  if (ctx.isComputedInput(node, 1, /*inputSince=*/13)) {
    auto count = computedAxesCount(ctx, node, 1);
    if (failed(count))
      return failure();
    if (*count > type.getRank())
      return ctx.error(node) << "cannot squeeze " << *count << " axes of " << type;
    ctx.setOutput(node, 0, computedAxesSqueeze(ctx, node, *x, *count));
    return success();
  }
  auto listed = ctx.intsAttrOrConstantInput(node, 1, "axes", /*inputSince=*/13,
                                            "read only when constant");
  if (failed(listed))
    return failure();
  SmallVector<int64_t> axes;
  if (*listed) {
    auto normalized = ctx.normalizeAxes(node, **listed, type.getRank());
    if (failed(normalized))
      return failure();
    axes = *normalized;
  } else {
    // Without axes every size-1 dimension goes, which must be knowable.
    for (int64_t i = 0; i < type.getRank(); ++i) {
      if (type.isDynamicDim(i))
        return ctx.error(node) << "squeezing without axes needs a static shape, got "
                               << type;
      if (type.getDimSize(i) == 1)
        axes.push_back(i);
    }
  }
  SmallVector<int64_t> shape;
  for (int64_t i = 0; i < type.getRank(); ++i) {
    if (!llvm::is_contained(axes, i))
      shape.push_back(type.getDimSize(i));
    else if (!type.isDynamicDim(i) && type.getDimSize(i) != 1)
      return ctx.error(node) << "cannot squeeze axis " << i << " of size "
                             << type.getDimSize(i);
  }
  auto resultType = ctx.resultType(node, 0, type.getElementType(), shape);
  ctx.setOutput(node, 0,
                ctx.builder().create<SqueezeOp>(ctx.loc(node), resultType, *x,
                                                ctx.builder().getDenseI64ArrayAttr(axes)));
  return success();
}

LogicalResult importUnsqueeze(ImportContext &ctx, const onnx::NodeProto &node) {
  auto x = ctx.requiredInput(node, 0);
  if (failed(x))
    return failure();
  if (ctx.isComputedInput(node, 1, /*inputSince=*/13)) {
    auto count = computedAxesCount(ctx, node, 1);
    if (failed(count))
      return failure();
    ctx.setOutput(node, 0, computedAxesUnsqueeze(ctx, node, *x, *count));
    return success();
  }
  auto listed = ctx.intsAttrOrConstantInput(node, 1, "axes", /*inputSince=*/13,
                                            "read only when constant");
  if (failed(listed))
    return failure();
  if (!*listed)
    return ctx.error(node) << "needs its axes";
  auto type = tensorType(*x);
  int64_t rank = type.getRank() + (*listed)->size();
  auto axes = ctx.normalizeAxes(node, **listed, rank);
  if (failed(axes))
    return failure();
  SmallVector<int64_t> shape;
  auto next = type.getShape().begin();
  for (int64_t i = 0; i < rank; ++i)
    shape.push_back(llvm::is_contained(*axes, i) ? 1 : *next++);
  auto resultType = ctx.resultType(node, 0, type.getElementType(), shape);
  ctx.setOutput(node, 0,
                ctx.builder().create<UnsqueezeOp>(ctx.loc(node), resultType, *x,
                                                  ctx.builder().getDenseI64ArrayAttr(*axes)));
  return success();
}

LogicalResult importConcat(ImportContext &ctx, const onnx::NodeProto &node) {
  auto axisAttr = ctx.intAttr(node, "axis", 0);
  if (failed(axisAttr))
    return failure();
  SmallVector<Value> inputs;
  for (int i = 0; i < node.input_size(); ++i) {
    auto input = ctx.requiredInput(node, i);
    if (failed(input))
      return failure();
    inputs.push_back(*input);
  }
  if (inputs.empty())
    return ctx.error(node) << "needs at least one input";
  auto first = tensorType(inputs.front());
  auto axis = ctx.normalizeAxis(node, *axisAttr, first.getRank());
  if (failed(axis))
    return failure();
  SmallVector<int64_t> shape(first.getShape());
  for (Value input : llvm::drop_begin(inputs)) {
    auto type = tensorType(input);
    if (type.getRank() != first.getRank())
      return ctx.error(node) << "inputs have different ranks: " << first << " and "
                             << type;
    int64_t dim = type.getDimSize(*axis);
    shape[*axis] = ShapedType::isDynamic(dim) || ShapedType::isDynamic(shape[*axis])
                       ? ShapedType::kDynamic
                       : shape[*axis] + dim;
    for (int64_t i = 0; i < first.getRank(); ++i)
      if (i != *axis && ShapedType::isDynamic(shape[i]))
        shape[i] = type.getDimSize(i);
  }
  auto resultType = ctx.resultType(node, 0, first.getElementType(), shape);
  ctx.setOutput(node, 0,
                ctx.builder().create<ConcatOp>(ctx.loc(node), resultType, inputs,
                                               ctx.builder().getI64IntegerAttr(*axis)));
  return success();
}

/// The sizes of Split's parts: listed (an attribute, or a constant input
/// since opset 13), or opset 18's num_outputs parts of ceil(dim / n), the
/// last smaller, or else an even split.
FailureOr<SmallVector<int64_t>> splitSizes(ImportContext &ctx, const onnx::NodeProto &node,
                                           RankedTensorType type, int64_t axis) {
  int64_t parts = node.output_size();
  auto listed = ctx.intsAttrOrConstantInput(node, 1, "split", /*inputSince=*/13,
                                            "kiln.split takes its sizes at compile time");
  if (failed(listed))
    return failure();
  if (*listed) {
    if (static_cast<int64_t>((*listed)->size()) != parts)
      return ctx.error(node) << "'split' has " << (*listed)->size()
                             << " sizes but the node has " << parts << " outputs";
    return **listed;
  }
  auto numOutputs = ctx.intAttr(node, "num_outputs", 0);
  if (failed(numOutputs))
    return failure();
  if (*numOutputs && *numOutputs != parts)
    return ctx.error(node) << "num_outputs is " << *numOutputs << " but the node has "
                           << parts << " outputs";
  int64_t dim = type.getDimSize(axis);
  if (ShapedType::isDynamic(dim))
    return ctx.error(node) << "a split without sizes needs a static axis size, got "
                           << type;
  int64_t part = *numOutputs ? (dim + parts - 1) / parts : dim / parts;
  if (!*numOutputs && dim % parts != 0)
    return ctx.error(node) << "axis of size " << dim << " does not split evenly into "
                           << parts << " outputs";
  if (part * (parts - 1) >= dim && parts > 1)
    return ctx.error(node) << "axis of size " << dim << " cannot split into "
                           << parts << " non-empty parts of " << part;
  SmallVector<int64_t> sizes(parts, part);
  sizes.back() = dim - part * (parts - 1);
  return sizes;
}

LogicalResult importSplit(ImportContext &ctx, const onnx::NodeProto &node) {
  auto x = ctx.requiredInput(node, 0);
  auto axisAttr = ctx.intAttr(node, "axis", 0);
  if (failed(x) || failed(axisAttr))
    return failure();
  auto type = tensorType(*x);
  auto axis = ctx.normalizeAxis(node, *axisAttr, type.getRank());
  if (failed(axis))
    return failure();
  int64_t parts = node.output_size();
  if (parts == 0)
    return ctx.error(node) << "needs at least one output";
  // Sizes computed at run time (an input since opset 13): kiln.split reads
  // them from its operand and checks them, and each part's size along the
  // axis is dynamic.
  Value computed;
  SmallVector<int64_t> sizes;
  if (ctx.isComputedInput(node, 1, /*inputSince=*/13)) {
    computed = ctx.input(node, 1);
    auto length = ctx.staticLength(node, computed, "split");
    if (failed(length))
      return failure();
    if (!tensorType(computed).getElementType().isInteger(64))
      return ctx.error(node) << "'split' must be int64, got " << computed.getType();
    if (*length != parts)
      return ctx.error(node) << "'split' has " << *length << " sizes but the node has "
                             << parts << " outputs";
    sizes.assign(parts, ShapedType::kDynamic);
  } else {
    auto known = splitSizes(ctx, node, type, *axis);
    if (failed(known))
      return failure();
    sizes = std::move(*known);
  }
  SmallVector<Type> resultTypes;
  for (auto [i, size] : llvm::enumerate(sizes)) {
    SmallVector<int64_t> shape(type.getShape());
    shape[*axis] = size;
    resultTypes.push_back(ctx.resultType(node, i, type.getElementType(), shape));
  }
  auto split = ctx.builder().create<SplitOp>(
      ctx.loc(node), resultTypes, *x, computed, ctx.builder().getI64IntegerAttr(*axis),
      ctx.builder().getDenseI64ArrayAttr(sizes));
  for (auto [i, result] : llvm::enumerate(split.getResults()))
    ctx.setOutput(node, i, result);
  return success();
}

/// Slice along axes computed at run time: a slice of every dim, whose
/// start, end and step are the ones given for the axis that names it, or
/// the whole dim (0, INT64_MAX, 1) where none does.
Value computedAxesSlice(ImportContext &ctx, const onnx::NodeProto &node, Value x,
                        Value axes, Value starts, Value ends, Value steps, int64_t count) {
  ShapeMath m{ctx, ctx.loc(node)};
  auto type = tensorType(x);
  int64_t rank = type.getRank();
  Value names = axisNames(m, axes, count, rank);
  Value named = namedDims(m, names, rank);
  auto perDim = [&](Value given, int64_t unnamed) -> Value {
    Value picked = m.b().create<WhereOp>(m.loc, RankedTensorType::get({rank, count}, m.i64()),
                                         names, m.reshape(given, {1, count}), m.scalar(0));
    return m.b().create<WhereOp>(m.loc, RankedTensorType::get({rank}, m.i64()), named,
                                 m.sum(picked, 1), m.scalar(unnamed));
  };
  auto resultType = ctx.resultType(node, 0, type.getElementType(), dynamicShape(rank));
  return m.b().create<SliceOp>(
      m.loc, resultType, x, perDim(starts, 0),
      perDim(ends, std::numeric_limits<int64_t>::max()), perDim(steps, 1),
      m.b().getDenseI64ArrayAttr(llvm::to_vector(llvm::seq<int64_t>(0, rank))));
}

LogicalResult importSlice(ImportContext &ctx, const onnx::NodeProto &node) {
  auto x = ctx.requiredInput(node, 0);
  auto starts = ctx.requiredInput(node, 1);
  auto ends = ctx.requiredInput(node, 2);
  if (failed(x) || failed(starts) || failed(ends))
    return failure();
  auto type = tensorType(*x);
  auto count = ctx.staticLength(node, *starts, "starts");
  if (failed(count))
    return failure();
  Location loc = ctx.loc(node);
  Value steps = ctx.input(node, 4);
  if (!steps)
    steps = ctx.i64List(loc, SmallVector<int64_t>(*count, 1));
  // Index operands of other integer types are widened to kiln's i64.
  auto toI64 = [&](Value v) -> Value {
    auto t = tensorType(v);
    if (t.getElementType().isInteger(64))
      return v;
    return ctx.builder().create<CastOp>(loc, t.clone(ctx.builder().getI64Type()), v);
  };
  SmallVector<int64_t> axes;
  if (ctx.isComputedInput(node, 3)) {
    Value computed = ctx.input(node, 3);
    auto length = ctx.staticLength(node, computed, "axes");
    if (failed(length))
      return failure();
    if (*length != *count)
      return ctx.error(node) << "'axes' has " << *length << " entries but 'starts' has "
                             << *count;
    ctx.setOutput(node, 0,
                  computedAxesSlice(ctx, node, *x, toI64(computed), toI64(*starts),
                                    toI64(*ends), toI64(steps), *count));
    return success();
  }
  if (ctx.input(node, 3)) {
    auto values = ctx.constantInts(node, 3, "axes", "read only when constant");
    if (failed(values))
      return failure();
    axes = *values;
  } else {
    axes = llvm::to_vector(llvm::seq<int64_t>(0, *count));
  }
  if (static_cast<int64_t>(axes.size()) != *count)
    return ctx.error(node) << "'axes' has " << axes.size() << " entries but 'starts' has "
                           << *count;
  for (int64_t &axis : axes) {
    auto normalized = ctx.normalizeAxis(node, axis, type.getRank());
    if (failed(normalized))
      return failure();
    axis = *normalized;
  }
  SmallVector<int64_t> shape(type.getShape());
  for (int64_t axis : axes)
    shape[axis] = ShapedType::kDynamic;
  auto resultType = ctx.resultType(node, 0, type.getElementType(), shape);
  ctx.setOutput(node, 0,
                ctx.builder().create<SliceOp>(loc, resultType, *x, toI64(*starts),
                                              toI64(*ends), toI64(steps),
                                              ctx.builder().getDenseI64ArrayAttr(axes)));
  return success();
}

/// Gather's and GatherElements' operands: data, indices, and the axis
/// normalized against the data's rank.
struct GatherOperands {
  Value data, indices;
  int64_t axis;
};

FailureOr<GatherOperands> gatherOperands(ImportContext &ctx, const onnx::NodeProto &node) {
  auto data = ctx.requiredInput(node, 0);
  auto indices = ctx.requiredInput(node, 1);
  auto axisAttr = ctx.intAttr(node, "axis", 0);
  if (failed(data) || failed(indices) || failed(axisAttr))
    return failure();
  auto axis = ctx.normalizeAxis(node, *axisAttr, tensorType(*data).getRank());
  if (failed(axis))
    return failure();
  return GatherOperands{*data, *indices, *axis};
}

LogicalResult importGather(ImportContext &ctx, const onnx::NodeProto &node) {
  auto operands = gatherOperands(ctx, node);
  if (failed(operands))
    return failure();
  auto [data, indices, axis] = *operands;
  auto type = tensorType(data);
  SmallVector<int64_t> shape(type.getShape().take_front(axis));
  llvm::append_range(shape, tensorType(indices).getShape());
  llvm::append_range(shape, type.getShape().drop_front(axis + 1));
  auto resultType = ctx.resultType(node, 0, type.getElementType(), shape);
  ctx.setOutput(node, 0,
                ctx.builder().create<GatherOp>(ctx.loc(node), resultType, data, indices,
                                               ctx.builder().getI64IntegerAttr(axis)));
  return success();
}

LogicalResult importGatherElements(ImportContext &ctx, const onnx::NodeProto &node) {
  auto operands = gatherOperands(ctx, node);
  if (failed(operands))
    return failure();
  auto [data, indices, axis] = *operands;
  auto type = tensorType(data), indicesType = tensorType(indices);
  if (indicesType.getRank() != type.getRank())
    return ctx.error(node) << "indices of rank " << indicesType.getRank()
                           << " for data of rank " << type.getRank()
                           << " (they must be equal)";
  auto resultType = ctx.resultType(node, 0, type.getElementType(), indicesType.getShape());
  ctx.setOutput(node, 0,
                ctx.builder().create<GatherElementsOp>(
                    ctx.loc(node), resultType, data, indices,
                    ctx.builder().getI64IntegerAttr(axis)));
  return success();
}

LogicalResult importGatherND(ImportContext &ctx, const onnx::NodeProto &node) {
  auto data = ctx.requiredInput(node, 0);
  auto indices = ctx.requiredInput(node, 1);
  auto batchDims = ctx.intAttr(node, "batch_dims", 0);
  if (failed(data) || failed(indices) || failed(batchDims))
    return failure();
  auto dataType = tensorType(*data), indicesType = tensorType(*indices);
  if (indicesType.getRank() < 1 || indicesType.isDynamicDim(indicesType.getRank() - 1))
    return ctx.error(node) << "the last dimension of the indices (the length of "
                              "each index tuple) must be static: it decides the "
                              "result's rank, got "
                           << indicesType;
  int64_t tuple = indicesType.getShape().back();
  if (*batchDims < 0 || *batchDims >= indicesType.getRank() ||
      *batchDims + tuple > dataType.getRank())
    return ctx.error(node) << "batch_dims " << *batchDims << " with index tuples of "
                           << tuple << " do not fit data " << dataType
                           << " and indices " << indicesType;
  SmallVector<int64_t> shape(indicesType.getShape().drop_back());
  for (int64_t i = 0; i < *batchDims; ++i)
    if (ShapedType::isDynamic(shape[i]))
      shape[i] = dataType.getDimSize(i);
  llvm::append_range(shape, dataType.getShape().drop_front(*batchDims + tuple));
  auto resultType = ctx.resultType(node, 0, dataType.getElementType(), shape);
  ctx.setOutput(node, 0,
                ctx.builder().create<GatherNdOp>(
                    ctx.loc(node), resultType, *data, *indices,
                    ctx.builder().getI64IntegerAttr(*batchDims)));
  return success();
}

/// Expand and Tile: the result rank follows from the input and the length
/// of the 1-D shape operand; the sizes come from shape inference.
template <typename OpTy>
LogicalResult importShapeDriven(ImportContext &ctx, const onnx::NodeProto &node) {
  auto operands = ctx.requiredInputs(node, 2);
  if (failed(operands))
    return failure();
  auto length = ctx.staticLength(node, (*operands)[1], "the shape input");
  if (failed(length))
    return failure();
  auto type = tensorType((*operands)[0]);
  int64_t rank = std::is_same_v<OpTy, ExpandOp> ? std::max(type.getRank(), *length)
                                                : type.getRank();
  auto resultType = ctx.resultType(node, 0, type.getElementType(), dynamicShape(rank));
  ctx.setOutput(node, 0,
                ctx.builder().create<OpTy>(ctx.loc(node), resultType, *operands));
  return success();
}

/// Scatter's `reduction` (opset 16; max and min from 18).
FailureOr<ScatterReduction> scatterReduction(ImportContext &ctx,
                                             const onnx::NodeProto &node) {
  auto name = ctx.stringAttr(node, "reduction", "none");
  if (failed(name))
    return failure();
  if (auto reduction = symbolizeScatterReduction(*name))
    return *reduction;
  return ctx.error(node) << "unknown reduction \"" << *name
                         << "\" (none, add, mul, max or min)";
}

/// ScatterElements, and Scatter (opsets 9-10), which is ScatterElements
/// without a reduction.
LogicalResult importScatterElements(ImportContext &ctx, const onnx::NodeProto &node) {
  auto operands = gatherOperands(ctx, node);
  auto updates = ctx.requiredInput(node, 2);
  auto reduction = scatterReduction(ctx, node);
  if (failed(operands) || failed(updates) || failed(reduction))
    return failure();
  auto [data, indices, axis] = *operands;
  auto type = tensorType(data);
  if (tensorType(indices).getRank() != type.getRank())
    return ctx.error(node) << "indices of rank " << tensorType(indices).getRank()
                           << " for data of rank " << type.getRank()
                           << " (they must be equal)";
  OpBuilder &b = ctx.builder();
  auto resultType = ctx.resultType(node, 0, type.getElementType(), type.getShape());
  ctx.setOutput(node, 0,
                b.create<ScatterElementsOp>(ctx.loc(node), resultType, data, indices,
                                            *updates, axis, *reduction));
  return success();
}

LogicalResult importScatterND(ImportContext &ctx, const onnx::NodeProto &node) {
  auto operands = ctx.requiredInputs(node, 3);
  auto reduction = scatterReduction(ctx, node);
  if (failed(operands) || failed(reduction))
    return failure();
  Value data = (*operands)[0];
  auto indicesType = tensorType((*operands)[1]);
  if (indicesType.getRank() < 1 || indicesType.isDynamicDim(indicesType.getRank() - 1))
    return ctx.error(node) << "the last dimension of the indices (the length of "
                              "each index tuple) must be static: it decides the "
                              "updates' rank, got "
                           << indicesType;
  auto type = tensorType(data);
  auto resultType = ctx.resultType(node, 0, type.getElementType(), type.getShape());
  ctx.setOutput(node, 0,
                ctx.builder().create<ScatterNdOp>(ctx.loc(node), resultType, data,
                                                  (*operands)[1], (*operands)[2],
                                                  *reduction));
  return success();
}

/// Pad. Before opset 11 the pads and the value are attributes; from 11 they
/// are inputs, and the pads may be computed. From opset 18 an axes input
/// names the padded axes, which must be constant: kiln.pad takes pads for
/// every axis, gathered from the given ones and a zero.
LogicalResult importPad(ImportContext &ctx, const onnx::NodeProto &node) {
  auto x = ctx.requiredInput(node, 0);
  auto modeName = ctx.stringAttr(node, "mode", "constant");
  if (failed(x) || failed(modeName))
    return failure();
  auto mode = symbolizePadMode(*modeName);
  if (!mode)
    return ctx.error(node) << "unknown mode \"" << *modeName
                           << "\" (constant, reflect, edge or wrap)";
  auto type = tensorType(*x);
  int64_t rank = type.getRank();
  Location loc = ctx.loc(node);
  OpBuilder &b = ctx.builder();
  Value pads, value;
  std::optional<SmallVector<int64_t>> constantPads;
  if (ctx.opset() < 11) {
    auto attr = ctx.intsAttr(node, "pads");
    auto fill = ctx.floatAttr(node, "value", 0.0f);
    if (failed(attr) || failed(fill))
      return failure();
    if (!*attr)
      return ctx.error(node) << "needs the attribute 'pads'";
    constantPads = **attr;
    pads = ctx.i64List(loc, *constantPads);
    if (*fill != 0.0f)
      value = ctx.scalar(loc, type.getElementType(), *fill);
  } else {
    auto padsInput = ctx.requiredInput(node, 1);
    if (failed(padsInput))
      return failure();
    pads = *padsInput;
    if (ctx.isConstantInput(node, 1)) {
      auto values = ctx.constantInts(node, 1, "pads", "read only when constant");
      if (failed(values))
        return failure();
      constantPads = *values;
    }
    if ((value = ctx.input(node, 2))) {
      auto valueType = tensorType(value);
      if (valueType.getNumElements() != 1 || valueType.getRank() > 1)
        return ctx.error(node) << "constant_value must be a scalar or one element, got "
                               << valueType;
      if (valueType.getRank() == 1)
        value = b.create<SqueezeOp>(loc, valueType.clone(ArrayRef<int64_t>{}), value,
                                    b.getDenseI64ArrayAttr({0}));
    }
  }
  auto length = ctx.staticLength(node, pads, "pads");
  if (failed(length))
    return failure();
  if (ctx.input(node, 3)) {
    // Constant axes, or nullopt for axes computed at run time.
    std::optional<SmallVector<int64_t>> axes;
    FailureOr<int64_t> count = failure();
    if (ctx.isComputedInput(node, 3)) {
      count = computedAxesCount(ctx, node, 3);
    } else {
      auto values = ctx.constantInts(node, 3, "axes", "they decide which dims are padded");
      if (failed(values))
        return failure();
      axes = *values;
      count = static_cast<int64_t>(axes->size());
    }
    if (failed(count))
      return failure();
    if (*length != 2 * *count)
      return ctx.error(node) << "pads has " << *length << " entries for " << *count
                             << " axes (it needs two per axis)";
    if (!axes) {
      // Which dims the pads go to is known at run time only: each dim
      // takes the pads of the axis that names it, or 0. [2, 1, count]
      // (begins, ends) against [1, rank, count], summed over the axes.
      ShapeMath m{ctx, loc};
      Value names = m.count(axisNames(m, ctx.input(node, 3), *count, rank));
      auto productType = RankedTensorType::get({2, rank, *count}, m.i64());
      Value perAxis = b.create<MulOp>(loc, productType, m.reshape(pads, {2, 1, *count}),
                                      m.reshape(names, {1, rank, *count}));
      pads = m.reshape(m.sum(perAxis, 2), {2 * rank});
      constantPads.reset();
    } else {
      // Entry `count * 2` of pads ++ [0] is the zero an unlisted axis takes.
      SmallVector<int64_t> source(2 * rank, 2 * *count);
      for (auto [j, axis] : llvm::enumerate(*axes)) {
        auto normalized = ctx.normalizeAxis(node, axis, rank);
        if (failed(normalized))
          return failure();
        source[*normalized] = j;
        source[rank + *normalized] = *count + j;
      }
      auto withZeroType = RankedTensorType::get({2 * *count + 1}, b.getI64Type());
      Value withZero = b.create<ConcatOp>(loc, withZeroType,
                                          ValueRange{pads, ctx.i64List(loc, {0})},
                                          b.getI64IntegerAttr(0));
      auto fullType = RankedTensorType::get({2 * rank}, b.getI64Type());
      pads = b.create<GatherOp>(loc, fullType, withZero, ctx.i64List(loc, source),
                                b.getI64IntegerAttr(0));
      if (constantPads) {
        SmallVector<int64_t> full;
        constantPads->push_back(0);
        for (int64_t i : source)
          full.push_back((*constantPads)[i]);
        constantPads = full;
      }
    }
  } else if (*length != 2 * rank) {
    return ctx.error(node) << "pads has " << *length << " entries for rank " << rank
                           << " (it needs two per axis)";
  }
  if (value && *mode != PadMode::constant)
    value = Value();
  SmallVector<int64_t> shape(rank, ShapedType::kDynamic);
  if (constantPads)
    for (int64_t d = 0; d < rank; ++d) {
      int64_t size = type.getDimSize(d);
      if (type.isDynamicDim(d))
        continue;
      if (llvm::AddOverflow(size, (*constantPads)[d], size) ||
          llvm::AddOverflow(size, (*constantPads)[rank + d], size) || size < 0)
        return ctx.error(node) << "pads " << (*constantPads)[d] << " and "
                               << (*constantPads)[rank + d] << " do not fit dim " << d
                               << " of size " << type.getDimSize(d);
      shape[d] = size;
    }
  auto resultType = ctx.resultType(node, 0, type.getElementType(), shape);
  ctx.setOutput(node, 0, b.create<PadOp>(loc, resultType, *x, pads, value, *mode));
  return success();
}

} // namespace

void registerShapeImporters(OpImporterRegistry &registry) {
  registry.add("Reshape", importReshape, 5);
  registry.add("Flatten", importFlatten, 1);
  registry.add("Transpose", importTranspose, 1);
  registry.add("Squeeze", importSqueeze, 1);
  registry.add("Unsqueeze", importUnsqueeze, 1);
  registry.add("Concat", importConcat, 4);
  registry.add("Split", importSplit, 2);
  registry.add("Slice", importSlice, 10);
  registry.add("Gather", importGather, 1);
  registry.add("GatherElements", importGatherElements, 11);
  registry.add("GatherND", importGatherND, 11);
  registry.add("ScatterElements", importScatterElements, 11);
  registry.add("Scatter", importScatterElements, 9);
  registry.add("ScatterND", importScatterND, 11);
  registry.add("Pad", importPad, 2);
  registry.add("Expand", importShapeDriven<ExpandOp>, 8);
  registry.add("Tile", importShapeDriven<TileOp>, 6);
}

} // namespace kiln
