//===- TensorOps.cpp - Constants, shape queries and generators ------------===//
//
// Constant, ConstantOfShape, Range, Trilu, Shape, Size, the one-hot
// generators OneHot and EyeLike, NonZero, and the ops that only forward a
// value at inference time: Identity and Dropout.
//
//===----------------------------------------------------------------------===//
#include "compiler/Importer/ComputedAxes.h"
#include "compiler/Importer/ImportContext.h"
#include "dialects/Kiln/IR/KilnOps.h"

using namespace mlir;

namespace kiln {
namespace {

/// The TensorProto a Constant node's value attribute describes: the node's
/// own tensor for `value`, which weights may point into without a copy, or
/// one built into `tensor` for the scalar and list forms.
FailureOr<const onnx::TensorProto *> constantTensor(ImportContext &ctx,
                                                    const onnx::NodeProto &node,
                                                    onnx::TensorProto &tensor) {
  if (node.attribute_size() != 1)
    return ctx.error(node) << "needs exactly one value attribute, got "
                           << node.attribute_size();
  const onnx::AttributeProto &attr = node.attribute(0);
  if (attr.name() == "value" && attr.type() == onnx::AttributeProto::TENSOR) {
    return &attr.t();
  } else if (attr.name() == "value_float" && attr.type() == onnx::AttributeProto::FLOAT) {
    tensor.set_data_type(onnx::TensorProto::FLOAT);
    tensor.add_float_data(attr.f());
  } else if (attr.name() == "value_floats" && attr.type() == onnx::AttributeProto::FLOATS) {
    tensor.set_data_type(onnx::TensorProto::FLOAT);
    tensor.add_dims(attr.floats_size());
    *tensor.mutable_float_data() = attr.floats();
  } else if (attr.name() == "value_int" && attr.type() == onnx::AttributeProto::INT) {
    tensor.set_data_type(onnx::TensorProto::INT64);
    tensor.add_int64_data(attr.i());
  } else if (attr.name() == "value_ints" && attr.type() == onnx::AttributeProto::INTS) {
    tensor.set_data_type(onnx::TensorProto::INT64);
    tensor.add_dims(attr.ints_size());
    *tensor.mutable_int64_data() = attr.ints();
  } else {
    return ctx.error(node) << "unsupported value attribute '" << attr.name()
                           << "' of type "
                           << onnx::AttributeProto::AttributeType_Name(attr.type());
  }
  tensor.set_name(node.output(0));
  return &tensor;
}

FailureOr<ElementsAttr> loadTensor(ImportContext &ctx, const onnx::NodeProto &node,
                                   const onnx::TensorProto &tensor) {
  std::string message;
  auto attr = ctx.weights().load(tensor, ctx.context(), message, node.output(0));
  if (failed(attr))
    return ctx.error(node) << message;
  return attr;
}

LogicalResult importConstant(ImportContext &ctx, const onnx::NodeProto &node) {
  onnx::TensorProto built;
  auto tensor = constantTensor(ctx, node, built);
  if (failed(tensor))
    return failure();
  auto attr = loadTensor(ctx, node, **tensor);
  if (failed(attr))
    return failure();
  ctx.setOutput(node, 0, ctx.builder().create<ConstantOp>(ctx.loc(node), *attr));
  return success();
}

LogicalResult importIdentity(ImportContext &ctx, const onnx::NodeProto &node) {
  auto x = ctx.requiredInput(node, 0);
  if (failed(x))
    return failure();
  ctx.setOutput(node, 0, *x);
  return success();
}

/// At inference Dropout is the identity and its mask is all true.
LogicalResult importDropout(ImportContext &ctx, const onnx::NodeProto &node) {
  auto x = ctx.requiredInput(node, 0);
  if (failed(x))
    return failure();
  if (Value training = ctx.input(node, 2)) {
    auto mode = ctx.constantInts(node, 2, "training_mode",
                                     "kiln compiles inference graphs only");
    if (failed(mode))
      return failure();
    if (!mode->empty() && mode->front() != 0)
      return ctx.error(node) << "training_mode = true; kiln imports inference graphs only";
  }
  ctx.setOutput(node, 0, *x);
  if (ctx.hasOutput(node, 1)) {
    Location loc = ctx.loc(node);
    OpBuilder &b = ctx.builder();
    auto type = cast<RankedTensorType>(x->getType());
    auto shapeType = RankedTensorType::get({type.getRank()}, b.getI64Type());
    Value shape = b.create<ShapeOfOp>(loc, shapeType, *x);
    Value ones = ctx.scalar(loc, b.getI1Type(), 1);
    ctx.setOutput(node, 1,
                  b.create<ExpandOp>(loc, type.clone(b.getI1Type()), ones, shape));
  }
  return success();
}

/// A splat constant when the shape is known; otherwise the scalar value
/// expanded to the run-time shape.
LogicalResult importConstantOfShape(ImportContext &ctx, const onnx::NodeProto &node) {
  auto shape = ctx.requiredInput(node, 0);
  if (failed(shape))
    return failure();
  onnx::TensorProto value;
  if (const auto *attr = ctx.findAttr(node, "value")) {
    if (attr->type() != onnx::AttributeProto::TENSOR)
      return ctx.error(node) << "attribute 'value' must be TENSOR";
    value = attr->t();
  } else {
    value.set_data_type(onnx::TensorProto::FLOAT);
    value.add_float_data(0.0f);
  }
  value.clear_dims();
  value.set_name(node.output(0) + ".value");
  auto scalarAttr = loadTensor(ctx, node, value);
  if (failed(scalarAttr))
    return failure();
  auto dense = dyn_cast<DenseElementsAttr>(*scalarAttr);
  if (!dense || dense.getNumElements() != 1)
    return ctx.error(node) << "attribute 'value' must hold one element";
  Location loc = ctx.loc(node);
  Type element = dense.getElementType();
  if (ctx.isConstantInput(node, 0)) {
    auto dims = ctx.constantInts(node, 0, "shape", "read only when constant");
    if (failed(dims))
      return failure();
    if (llvm::any_of(*dims, [](int64_t d) { return d < 0; }))
      return ctx.error(node) << "shape has a negative dimension";
    auto type = RankedTensorType::get(*dims, element);
    ctx.setOutput(node, 0,
                  ctx.builder().create<ConstantOp>(
                      loc, type, DenseElementsAttr::get(type, dense.getValues<Attribute>()[0])));
    return success();
  }
  auto rank = ctx.staticLength(node, *shape, "shape");
  if (failed(rank))
    return failure();
  Value scalar = ctx.builder().create<ConstantOp>(loc, cast<ElementsAttr>(dense));
  auto type = ctx.resultType(node, 0, element,
                             SmallVector<int64_t>(*rank, ShapedType::kDynamic));
  ctx.setOutput(node, 0, ctx.builder().create<ExpandOp>(loc, type, scalar, *shape));
  return success();
}

LogicalResult importRange(ImportContext &ctx, const onnx::NodeProto &node) {
  auto operands = ctx.requiredInputs(node, 3);
  if (failed(operands))
    return failure();
  auto type = ctx.resultType(node, 0, getElementTypeOrSelf((*operands)[0]),
                             {ShapedType::kDynamic});
  ctx.setOutput(node, 0,
                ctx.builder().create<RangeOp>(ctx.loc(node), type, *operands));
  return success();
}

LogicalResult importTrilu(ImportContext &ctx, const onnx::NodeProto &node) {
  auto x = ctx.requiredInput(node, 0);
  auto upper = ctx.intAttr(node, "upper", 1);
  if (failed(x) || failed(upper))
    return failure();
  // A constant k becomes the attribute; a computed one stays an operand.
  int64_t k = 0;
  Value diagonal;
  if (ctx.isConstantInput(node, 1)) {
    auto values = ctx.constantInts(node, 1, "k", "read only when constant");
    if (failed(values))
      return failure();
    if (values->size() != 1)
      return ctx.error(node) << "k must hold one value, got " << values->size();
    k = values->front();
  } else if ((diagonal = ctx.input(node, 1))) {
    auto type = cast<RankedTensorType>(diagonal.getType());
    if (!type.getElementType().isInteger(64) || !type.hasStaticShape() ||
        type.getNumElements() != 1 || type.getRank() > 1)
      return ctx.error(node) << "k must be one int64, got " << type;
  }
  auto op = ctx.builder().create<TriluOp>(
      ctx.loc(node), x->getType(), *x, diagonal, ctx.builder().getI64IntegerAttr(k),
      *upper ? ctx.builder().getUnitAttr() : UnitAttr());
  ctx.setOutput(node, 0, op);
  return success();
}

/// Shape, with opset 15's start/end window taken by a static slice.
LogicalResult importShape(ImportContext &ctx, const onnx::NodeProto &node) {
  auto x = ctx.requiredInput(node, 0);
  auto startAttr = ctx.intAttr(node, "start", 0);
  if (failed(x) || failed(startAttr))
    return failure();
  int64_t rank = cast<RankedTensorType>(x->getType()).getRank();
  auto endAttr = ctx.intAttr(node, "end", rank);
  if (failed(endAttr))
    return failure();
  auto clampIndex = [rank](int64_t i) {
    return std::clamp<int64_t>(i < 0 ? i + rank : i, 0, rank);
  };
  int64_t start = clampIndex(*startAttr), end = clampIndex(*endAttr);
  Location loc = ctx.loc(node);
  OpBuilder &b = ctx.builder();
  Value shape = b.create<ShapeOfOp>(
      loc, RankedTensorType::get({rank}, b.getI64Type()), *x);
  if (start != 0 || end != rank) {
    int64_t length = std::max<int64_t>(end - start, 0);
    shape = b.create<SliceOp>(loc, RankedTensorType::get({length}, b.getI64Type()),
                              shape, ctx.i64List(loc, {start}),
                              ctx.i64List(loc, {end}), ctx.i64List(loc, {1}),
                              b.getDenseI64ArrayAttr({0}));
  }
  ctx.setOutput(node, 0, shape);
  return success();
}

LogicalResult importSize(ImportContext &ctx, const onnx::NodeProto &node) {
  auto x = ctx.requiredInput(node, 0);
  if (failed(x))
    return failure();
  OpBuilder &b = ctx.builder();
  ctx.setOutput(node, 0,
                b.create<SizeOp>(ctx.loc(node),
                                 RankedTensorType::get({}, b.getI64Type()), *x));
  return success();
}

/// OneHot (opset 11): `values` [off, on] everywhere, on where the position
/// along `axis` (inserted into the indices' shape, `depth` long) equals the
/// index there; a negative index counts from `depth`, and one out of range
/// marks no position.
LogicalResult importOneHot(ImportContext &ctx, const onnx::NodeProto &node) {
  auto operands = ctx.requiredInputs(node, 3);
  auto axisAttr = ctx.intAttr(node, "axis", -1);
  if (failed(operands) || failed(axisAttr))
    return failure();
  Value indices = (*operands)[0], depth = (*operands)[1], values = (*operands)[2];
  auto indicesType = cast<RankedTensorType>(indices.getType());
  auto depthType = cast<RankedTensorType>(depth.getType());
  auto valuesType = cast<RankedTensorType>(values.getType());
  if (depthType.getNumElements() != 1 || depthType.getRank() > 1)
    return ctx.error(node) << "depth must be a scalar or a one-element list, got " << depthType;
  if (valuesType.getRank() != 1 || valuesType.getDimSize(0) != 2)
    return ctx.error(node) << "values must be [off value, on value], got " << valuesType;
  int64_t rank = indicesType.getRank() + 1;
  auto axis = ctx.normalizeAxis(node, *axisAttr, rank);
  if (failed(axis))
    return failure();
  Location loc = ctx.loc(node);
  OpBuilder &b = ctx.builder();
  Type i64 = b.getI64Type();
  auto asInt64 = [&](Value value) -> Value {
    auto type = cast<RankedTensorType>(value.getType());
    return type.getElementType() == i64 ? value
                                        : b.create<CastOp>(loc, type.clone(i64), value);
  };
  std::optional<int64_t> staticDepth;
  if (ctx.isConstantInput(node, 1) && depthType.getElementType().isInteger(64)) {
    auto constant = ctx.constantInts(node, 1, "depth", "read only when constant");
    if (failed(constant))
      return failure();
    staticDepth = constant->front();
  }
  if (staticDepth && *staticDepth < 1)
    return ctx.error(node) << "depth must be positive, got " << *staticDepth;
  Value length = asInt64(depthType.getRank() == 0
                             ? depth
                             : b.create<ReshapeOp>(loc, depthType.clone(ArrayRef<int64_t>{}),
                                                   depth, ctx.i64List(loc, {})));
  Value index = asInt64(indices);
  auto indexType = cast<RankedTensorType>(index.getType());
  Value wrapped = b.create<AddOp>(loc, indexType, index, length);
  Value negative = b.create<CompareOp>(loc, indexType.clone(b.getI1Type()),
                                       ComparePredicate::lt, index, ctx.scalar(loc, i64, 0));
  index = b.create<WhereOp>(loc, indexType, negative, wrapped, index);
  SmallVector<int64_t> shape(indexType.getShape());
  shape.insert(shape.begin() + *axis, 1);
  Value expanded = b.create<UnsqueezeOp>(loc, indexType.clone(shape), index,
                                         b.getDenseI64ArrayAttr({*axis}));
  Value positions = ctx.positionsAlong(loc, length, staticDepth, *axis, rank);
  auto hotType = ctx.broadcastType(node, 0, b.getI1Type(), {expanded, positions});
  if (failed(hotType))
    return failure();
  Value hot = b.create<CompareOp>(loc, *hotType, ComparePredicate::eq, expanded, positions);
  auto pick = [&](int64_t which) -> Value {
    return b.create<GatherOp>(loc, valuesType.clone(ArrayRef<int64_t>{}), values,
                              ctx.scalar(loc, i64, which), b.getI64IntegerAttr(0));
  };
  Value on = pick(1);
  Value off = pick(0);
  ctx.setOutput(node, 0,
                b.create<WhereOp>(loc, hotType->clone(valuesType.getElementType()), hot, on, off));
  return success();
}

/// NonZero: the [rank, count] coordinates of the input's nonzero elements
/// in row-major order, count known only at run time. Built from kiln ops:
/// each element's column in the result is the exclusive running count of
/// nonzeros before it; every element scatters its coordinates there, the
/// zeros into one extra column past the count, which is sliced off.
LogicalResult importNonZero(ImportContext &ctx, const onnx::NodeProto &node) {
  auto x = ctx.requiredInput(node, 0);
  if (failed(x))
    return failure();
  auto type = cast<RankedTensorType>(x->getType());
  int64_t rank = type.getRank();
  if (rank == 0)
    return ctx.error(node) << "input must have at least one dim, got " << type;
  Location loc = ctx.loc(node);
  OpBuilder &b = ctx.builder();
  Type i64 = b.getI64Type();
  auto scalarType = RankedTensorType::get({}, i64);
  auto flatType = [&](Type element) {
    return RankedTensorType::get({ShapedType::kDynamic}, element);
  };
  ShapeMath m{ctx, loc};
  Value flat = b.create<ReshapeOp>(loc, flatType(type.getElementType()), *x,
                                   ctx.i64List(loc, {-1}), false);
  Value nonzero = m.compare(ComparePredicate::ne, flat, ctx.scalar(loc, type.getElementType(), 0),
                            {ShapedType::kDynamic});
  Value column = m.countBefore(nonzero);
  Value count = m.sum(m.count(nonzero), 0);
  Value target = b.create<WhereOp>(loc, flatType(i64), nonzero, column, count);

  // The coordinates of element e along dim d: (e / stride_d) mod dim_d.
  Value elements = b.create<RangeOp>(loc, flatType(i64), ctx.scalar(loc, i64, 0),
                                     b.create<SizeOp>(loc, scalarType, *x), ctx.scalar(loc, i64, 1));
  auto rowType = RankedTensorType::get({1, ShapedType::kDynamic}, i64);
  SmallVector<Value> rows(rank);
  Value stride = ctx.scalar(loc, i64, 1);
  for (int64_t d = rank - 1; d >= 0; --d) {
    Value dim = b.create<DimOp>(loc, scalarType, *x, b.getI64IntegerAttr(d));
    Value quotient = b.create<DivOp>(loc, flatType(i64), elements, stride);
    Value coordinate = b.create<ModOp>(loc, flatType(i64), quotient, dim);
    rows[d] = b.create<UnsqueezeOp>(loc, rowType, coordinate, b.getDenseI64ArrayAttr({0}));
    stride = b.create<MulOp>(loc, scalarType, stride, dim);
  }
  auto matrixType = RankedTensorType::get({rank, ShapedType::kDynamic}, i64);
  Value coordinates = b.create<ConcatOp>(loc, matrixType, rows, b.getI64IntegerAttr(0));
  Value targets = b.create<ExpandOp>(
      loc, matrixType, b.create<UnsqueezeOp>(loc, rowType, target, b.getDenseI64ArrayAttr({0})),
      b.create<ShapeOfOp>(loc, RankedTensorType::get({2}, i64), coordinates));
  auto listType = RankedTensorType::get({1}, i64);
  Value columns = b.create<AddOp>(loc, scalarType, count, ctx.scalar(loc, i64, 1));
  Value shape = b.create<ConcatOp>(
      loc, RankedTensorType::get({2}, i64),
      ValueRange{ctx.i64List(loc, {rank}),
                 b.create<ReshapeOp>(loc, listType, columns, ctx.i64List(loc, {1}), false)},
      b.getI64IntegerAttr(0));
  Value zeros = b.create<ExpandOp>(loc, matrixType, ctx.scalar(loc, i64, 0), shape);
  Value scattered = b.create<ScatterElementsOp>(loc, matrixType, zeros, targets, coordinates,
                                                /*axis=*/1, ScatterReduction::none);
  Value end = b.create<ReshapeOp>(loc, listType, count, ctx.i64List(loc, {1}), false);
  ctx.setOutput(node, 0,
                b.create<SliceOp>(loc, matrixType, scattered, ctx.i64List(loc, {0}), end,
                                  ctx.i64List(loc, {1}), b.getDenseI64ArrayAttr({1})));
  return success();
}

/// EyeLike: ones on the k-th diagonal of a 2-D tensor shaped like the
/// input, of the input's type or `dtype`.
LogicalResult importEyeLike(ImportContext &ctx, const onnx::NodeProto &node) {
  auto x = ctx.requiredInput(node, 0);
  auto k = ctx.intAttr(node, "k", 0);
  if (failed(x) || failed(k))
    return failure();
  auto type = cast<RankedTensorType>(x->getType());
  if (type.getRank() != 2)
    return ctx.error(node) << "input must be 2-D, got " << type;
  Type element = type.getElementType();
  if (const auto *dtype = ctx.findAttr(node, "dtype")) {
    if (dtype->type() == onnx::AttributeProto::INT)
      element = convertElementType(ctx.context(), dtype->i());
    if (dtype->type() != onnx::AttributeProto::INT || !element)
      return ctx.error(node) << "attribute 'dtype' must name a supported type";
  }
  Location loc = ctx.loc(node);
  OpBuilder &b = ctx.builder();
  Type i64 = b.getI64Type();
  Value rows = ctx.positionsOfDim(loc, *x, 0, 0, 2);
  Value columns = ctx.positionsOfDim(loc, *x, 1, 1, 2);
  auto i64Type = type.clone(i64);
  Value diagonal = b.create<SubOp>(loc, i64Type, columns, rows);
  Value onDiagonal = b.create<CompareOp>(loc, type.clone(b.getI1Type()), ComparePredicate::eq,
                                         diagonal, ctx.scalar(loc, i64, *k));
  ctx.setOutput(node, 0, b.create<CastOp>(loc, type.clone(element), onDiagonal));
  return success();
}

} // namespace

void registerTensorImporters(OpImporterRegistry &registry) {
  registry.add("Constant", importConstant, 1);
  registry.add("Identity", importIdentity, 1);
  registry.add("Dropout", importDropout, 10);
  registry.add("ConstantOfShape", importConstantOfShape, 9);
  registry.add("Range", importRange, 11);
  registry.add("Trilu", importTrilu, 14);
  registry.add("Shape", importShape, 1);
  registry.add("Size", importSize, 1);
  registry.add("OneHot", importOneHot, 11);
  registry.add("EyeLike", importEyeLike, 9);
  registry.add("NonZero", importNonZero, 9);
}

} // namespace kiln
