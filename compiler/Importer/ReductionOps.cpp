//===- ReductionOps.cpp - Reductions, ArgMax/ArgMin, TopK and CumSum ------===//
//
// ReduceSum takes its axes as an input from opset 13, the other reductions
// from opset 18 (an attribute before); both normalize to kiln's sorted axes
// attribute. ReduceMin and ReduceProd are kiln ops of their own; the sum of
// squares, L1 and L2 norms, log-sum and log-sum-exp are built on a sum. The
// global pools are reductions over the spatial dims, and Hardmax marks an
// argmax.
//
//===----------------------------------------------------------------------===//
#include "compiler/Importer/ComputedAxes.h"
#include "compiler/Importer/ImportContext.h"
#include "dialects/Kiln/IR/KilnOps.h"
#include "llvm/ADT/Sequence.h"

#include <limits>

using namespace mlir;

namespace kiln {
namespace {

/// A reduction along axes computed at run time: each dim in turn is
/// reduced, kept as 1 and broadcast back where an axis names it (kiln.where
/// picks), so that after the last every named dim holds the reduction of all
/// of them (sums of sums, means of means, maxima of maxima, and so on for
/// minima and products); a slice then
/// keeps one of it, and without keepdims a reshape drops those dims.
/// Rank-many reductions of the whole input, for a form exporters do not
/// write.
template <typename OpTy>
Value computedAxesReduce(ImportContext &ctx, const onnx::NodeProto &node, Value x, Value axes,
                         int64_t count, bool keepDims) {
  ShapeMath m{ctx, ctx.loc(node)};
  auto type = cast<RankedTensorType>(x.getType());
  int64_t rank = type.getRank();
  Value named = namedDims(m, axisNames(m, axes, count, rank), rank);
  auto boolScalar = RankedTensorType::get({}, m.b().getI1Type());
  Value reduced = x;
  for (int64_t i = 0; i < rank; ++i) {
    SmallVector<int64_t> shape(type.getShape());
    shape[i] = 1;
    Value one = m.b().create<OpTy>(m.loc, type.clone(shape), reduced,
                                   m.b().getDenseI64ArrayAttr({i}), m.b().getBoolAttr(true));
    Value isNamed = m.b().create<GatherOp>(m.loc, boolScalar, named, m.scalar(i),
                                           m.b().getI64IntegerAttr(0));
    reduced = m.b().create<WhereOp>(m.loc, type, isNamed, one, reduced);
  }
  auto ones = ctx.i64List(m.loc, SmallVector<int64_t>(rank, 1));
  Value ends = m.b().create<WhereOp>(m.loc, RankedTensorType::get({rank}, m.i64()), named,
                                     m.scalar(1),
                                     m.scalar(std::numeric_limits<int64_t>::max()));
  SmallVector<int64_t> keptShape(rank, ShapedType::kDynamic);
  reduced = m.b().create<SliceOp>(
      m.loc, type.clone(keptShape), reduced, ctx.i64List(m.loc, SmallVector<int64_t>(rank, 0)),
      ends, ones, m.b().getDenseI64ArrayAttr(llvm::to_vector(llvm::seq<int64_t>(0, rank))));
  if (keepDims)
    return reduced;
  int64_t kept = rank - count;
  Value dims = m.b().create<ShapeOfOp>(m.loc, RankedTensorType::get({rank}, m.i64()), x);
  return m.b().create<ReshapeOp>(m.loc, type.clone(SmallVector<int64_t>(kept, ShapedType::kDynamic)),
                                 reduced, keptDims(m, dims, named, rank, kept), false);
}

/// `x` reduced by OpTy along `node`'s axes (its attribute, or its second
/// input from opset `axesInputSince` on), as `node` says: keepdims, and
/// noop_with_empty_axes (then `x` itself).
template <typename OpTy, int64_t axesInputSince>
FailureOr<Value> reduceAlong(ImportContext &ctx, const onnx::NodeProto &node, Value x,
                             bool keepDims) {
  auto noopWithEmptyAxes = ctx.intAttr(node, "noop_with_empty_axes", 0);
  if (failed(noopWithEmptyAxes))
    return failure();
  auto inputType = cast<RankedTensorType>(x.getType());
  int64_t rank = inputType.getRank();

  SmallVector<int64_t> axes;
  if (ctx.isComputedInput(node, 1, axesInputSince)) {
    // Axes computed at run time; an empty list is known to be empty.
    auto count = computedAxesCount(ctx, node, 1);
    if (failed(count))
      return failure();
    if (*count > rank)
      return ctx.error(node) << "cannot reduce " << *count << " axes of " << inputType;
    if (*count > 0)
      return computedAxesReduce<OpTy>(ctx, node, x, ctx.input(node, 1), *count, keepDims);
  } else {
    auto listed = ctx.intsAttrOrConstantInput(node, 1, "axes", axesInputSince,
                                              "read only when constant");
    if (failed(listed))
      return failure();
    axes = listed->value_or(SmallVector<int64_t>());
  }
  if (axes.empty()) {
    if (*noopWithEmptyAxes)
      return x;
    axes = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  }
  auto normalized = ctx.normalizeAxes(node, axes, rank);
  if (failed(normalized))
    return failure();

  SmallVector<int64_t> shape;
  for (int64_t i = 0; i < rank; ++i) {
    if (!llvm::is_contained(*normalized, i))
      shape.push_back(inputType.getDimSize(i));
    else if (keepDims)
      shape.push_back(1);
  }
  OpBuilder &b = ctx.builder();
  return b
      .create<OpTy>(ctx.loc(node), inputType.clone(shape), x,
                    b.getDenseI64ArrayAttr(*normalized), b.getBoolAttr(keepDims))
      .getResult();
}

template <typename OpTy, int64_t axesInputSince>
LogicalResult importReduce(ImportContext &ctx, const onnx::NodeProto &node) {
  auto x = ctx.requiredInput(node, 0);
  auto keepDims = ctx.intAttr(node, "keepdims", 1);
  if (failed(x) || failed(keepDims))
    return failure();
  auto reduced = reduceAlong<OpTy, axesInputSince>(ctx, node, *x, *keepDims != 0);
  if (failed(reduced))
    return failure();
  ctx.setOutput(node, 0, *reduced);
  return success();
}

/// The reductions ONNX spells on top of a sum: each element mapped first,
/// then the sums (ReduceL2 is the square root of the sum of squares).
/// ReduceLogSumExp subtracts each slice's maximum before the exponentials
/// and adds it back after the log, so that no exponential overflows. Over
/// no axes (noop_with_empty_axes) each is its maps of the element alone.
enum class SumReduction { SumSquare, L1, L2, LogSum, LogSumExp };

template <SumReduction Kind>
LogicalResult importSumReduction(ImportContext &ctx, const onnx::NodeProto &node) {
  auto x = ctx.requiredInput(node, 0);
  auto keepDims = ctx.intAttr(node, "keepdims", 1);
  if (failed(x) || failed(keepDims))
    return failure();
  auto type = cast<RankedTensorType>(x->getType());
  const bool needsFloat = Kind == SumReduction::L2 || Kind == SumReduction::LogSum ||
                          Kind == SumReduction::LogSumExp;
  if (needsFloat && !isa<FloatType>(type.getElementType()))
    return ctx.error(node) << "kiln computes it on floats only, got " << type;
  OpBuilder &b = ctx.builder();
  Location loc = ctx.loc(node);
  auto maximum = [&](bool keep) {
    return reduceAlong<ReduceMaxOp, 18>(ctx, node, *x, keep);
  };
  FailureOr<Value> shift = failure(); // log-sum-exp's, kept dims
  Value mapped = *x;
  if (Kind == SumReduction::SumSquare || Kind == SumReduction::L2) {
    mapped = b.create<MulOp>(loc, type, *x, *x);
  } else if (Kind == SumReduction::L1) {
    mapped = b.create<AbsOp>(loc, type, *x);
  } else if (Kind == SumReduction::LogSumExp) {
    shift = maximum(/*keep=*/true);
    if (failed(shift))
      return failure();
    mapped = b.create<ExpOp>(loc, type, b.create<SubOp>(loc, type, *x, *shift));
  }
  auto sum = reduceAlong<ReduceSumOp, 18>(ctx, node, mapped, *keepDims != 0);
  if (failed(sum))
    return failure();
  Value result = *sum;
  if (Kind == SumReduction::L2) {
    result = b.create<SqrtOp>(loc, result.getType(), result);
  } else if (Kind == SumReduction::LogSum) {
    result = b.create<LogOp>(loc, result.getType(), result);
  } else if (Kind == SumReduction::LogSumExp) {
    // The maximum again without the reduced dims, unless they are kept.
    if (!*keepDims)
      shift = maximum(/*keep=*/false);
    if (failed(shift))
      return failure();
    result = b.create<AddOp>(loc, result.getType(),
                             b.create<LogOp>(loc, result.getType(), result), *shift);
  }
  ctx.setOutput(node, 0, result);
  return success();
}

/// CumSum along an axis computed at run time: the scan along every axis,
/// the one the axis names picked by where, after a kiln.assert that it names
/// one. Rank-many scans where one is used, but a computed axis is rare (the
/// exporters write constants), and the op stays one kiln.cumsum otherwise.
Value computedAxisCumSum(ImportContext &ctx, const onnx::NodeProto &node, Value x,
                         Value axis, UnitAttr exclusive, UnitAttr reverse) {
  ShapeMath m{ctx, ctx.loc(node)};
  auto type = cast<RankedTensorType>(x.getType());
  int64_t rank = type.getRank();
  auto scalarType = RankedTensorType::get({}, m.i64());
  // A 0-d i64 axis, from int32 or int64, 0-d or of one element.
  auto axisType = cast<RankedTensorType>(axis.getType());
  if (axisType.getElementType() != m.i64())
    axis = m.b().create<CastOp>(m.loc, axisType.clone(m.i64()), axis);
  if (axisType.getRank() != 0)
    axis = m.reshape(axis, {});
  Value wrapped = m.b().create<AddOp>(m.loc, scalarType, axis, m.scalar(rank));
  axis = m.b().create<WhereOp>(m.loc, scalarType,
                               m.compare(ComparePredicate::lt, axis, m.scalar(0), {}), wrapped,
                               axis);
  Value inRange = m.b().create<AndOp>(m.loc, RankedTensorType::get({}, m.b().getI1Type()),
                                      m.compare(ComparePredicate::ge, axis, m.scalar(0), {}),
                                      m.compare(ComparePredicate::lt, axis, m.scalar(rank), {}));
  m.b().create<AssertOp>(m.loc, inRange,
                         m.b().getStringAttr("the axis is out of range for rank " + Twine(rank)));
  Value result;
  for (int64_t a = rank - 1; a >= 0; --a) {
    Value scan = m.b().create<CumSumOp>(m.loc, type, x, m.b().getI64IntegerAttr(a), exclusive,
                                        reverse);
    result = result ? m.b().create<WhereOp>(
                          m.loc, type, m.compare(ComparePredicate::eq, axis, m.scalar(a), {}),
                          scan, result)
                    : scan;
  }
  return result;
}

LogicalResult importCumSum(ImportContext &ctx, const onnx::NodeProto &node) {
  auto x = ctx.requiredInput(node, 0);
  auto axisInput = ctx.requiredInput(node, 1);
  auto exclusive = ctx.intAttr(node, "exclusive", 0);
  auto reverse = ctx.intAttr(node, "reverse", 0);
  if (failed(x) || failed(axisInput) || failed(exclusive) || failed(reverse))
    return failure();
  OpBuilder &b = ctx.builder();
  UnitAttr exclusiveAttr = *exclusive ? b.getUnitAttr() : UnitAttr();
  UnitAttr reverseAttr = *reverse ? b.getUnitAttr() : UnitAttr();
  auto type = cast<RankedTensorType>(x->getType());
  if (ctx.isComputedInput(node, 1)) {
    auto axisType = cast<RankedTensorType>(axisInput->getType());
    Type element = axisType.getElementType();
    if (!axisType.hasStaticShape() || axisType.getNumElements() != 1 ||
        axisType.getRank() > 1 || !(element.isInteger(32) || element.isInteger(64)) ||
        type.getRank() == 0)
      return ctx.error(node) << "axis must be one int32 or int64, got " << axisType;
    ctx.setOutput(node, 0,
                  computedAxisCumSum(ctx, node, *x, *axisInput, exclusiveAttr, reverseAttr));
    return success();
  }
  auto axisValues = ctx.constantInts(node, 1, "axis", "read only when constant");
  if (failed(axisValues))
    return failure();
  if (axisValues->size() != 1)
    return ctx.error(node) << "axis must hold one value, got " << axisValues->size();
  auto axis = ctx.normalizeAxis(node, axisValues->front(), type.getRank());
  if (failed(axis))
    return failure();
  auto op = b.create<CumSumOp>(ctx.loc(node), type, *x, b.getI64IntegerAttr(*axis),
                               exclusiveAttr, reverseAttr);
  ctx.setOutput(node, 0, op);
  return success();
}

/// ArgMax and ArgMin: one axis (negative from opset 11), keepdims, and from
/// opset 12 select_last_index.
template <typename OpTy>
LogicalResult importArgReduce(ImportContext &ctx, const onnx::NodeProto &node) {
  auto x = ctx.requiredInput(node, 0);
  auto axisAttr = ctx.intAttr(node, "axis", 0);
  auto keepDims = ctx.intAttr(node, "keepdims", 1);
  auto selectLast = ctx.intAttr(node, "select_last_index", 0);
  if (failed(x) || failed(axisAttr) || failed(keepDims) || failed(selectLast))
    return failure();
  auto type = cast<RankedTensorType>(x->getType());
  auto axis = ctx.normalizeAxis(node, *axisAttr, type.getRank());
  if (failed(axis))
    return failure();
  SmallVector<int64_t> shape(type.getShape());
  if (*keepDims)
    shape[*axis] = 1;
  else
    shape.erase(shape.begin() + *axis);
  OpBuilder &b = ctx.builder();
  auto resultType = ctx.resultType(node, 0, b.getI64Type(), shape);
  ctx.setOutput(node, 0,
                b.create<OpTy>(ctx.loc(node), resultType, *x,
                               b.getI64IntegerAttr(*axis), b.getBoolAttr(*keepDims),
                               *selectLast ? b.getUnitAttr() : UnitAttr()));
  return success();
}

/// GlobalAveragePool and GlobalMaxPool: the mean or max over every spatial
/// dim (all but N and C), kept as 1s.
template <typename OpTy>
LogicalResult importGlobalPool(ImportContext &ctx, const onnx::NodeProto &node) {
  auto x = ctx.requiredInput(node, 0);
  if (failed(x))
    return failure();
  auto type = cast<RankedTensorType>(x->getType());
  if (type.getRank() < 3)
    return ctx.error(node) << "input must be [N, C, spatial...], got " << type;
  SmallVector<int64_t> axes = llvm::to_vector(llvm::seq<int64_t>(2, type.getRank()));
  SmallVector<int64_t> shape(type.getShape());
  for (int64_t axis : axes)
    shape[axis] = 1;
  OpBuilder &b = ctx.builder();
  ctx.setOutput(node, 0, b.create<OpTy>(ctx.loc(node), type.clone(shape), *x,
                                        b.getDenseI64ArrayAttr(axes), b.getBoolAttr(true)));
  return success();
}

/// Hardmax (opset 13): 1 at the first largest value along `axis`, 0
/// elsewhere.
LogicalResult importHardmax(ImportContext &ctx, const onnx::NodeProto &node) {
  auto x = ctx.requiredInput(node, 0);
  auto axisAttr = ctx.intAttr(node, "axis", -1);
  if (failed(x) || failed(axisAttr))
    return failure();
  auto type = cast<RankedTensorType>(x->getType());
  if (!isa<FloatType>(type.getElementType()))
    return ctx.error(node) << "input must be a float tensor, got " << type;
  auto axis = ctx.normalizeAxis(node, *axisAttr, type.getRank());
  if (failed(axis))
    return failure();
  Location loc = ctx.loc(node);
  OpBuilder &b = ctx.builder();
  Type i64 = b.getI64Type();
  SmallVector<int64_t> shape(type.getShape());
  shape[*axis] = 1;
  Value largest = b.create<ArgMaxOp>(loc, RankedTensorType::get(shape, i64), *x,
                                     b.getI64IntegerAttr(*axis), b.getBoolAttr(true),
                                     UnitAttr());
  Value positions = ctx.positionsOfDim(loc, *x, *axis, *axis, type.getRank());
  Value hot = b.create<CompareOp>(loc, type.clone(b.getI1Type()), ComparePredicate::eq,
                                  largest, positions);
  ctx.setOutput(node, 0, b.create<CastOp>(loc, type, hot));
  return success();
}

/// TopK from opset 10, where k became an input; it may be computed, which
/// leaves the axis of the results dynamic.
LogicalResult importTopK(ImportContext &ctx, const onnx::NodeProto &node) {
  auto operands = ctx.requiredInputs(node, 2);
  auto axisAttr = ctx.intAttr(node, "axis", -1);
  auto largest = ctx.intAttr(node, "largest", 1);
  if (failed(operands) || failed(axisAttr) || failed(largest))
    return failure();
  Value x = (*operands)[0], k = (*operands)[1];
  auto type = cast<RankedTensorType>(x.getType());
  auto kType = cast<RankedTensorType>(k.getType());
  if (!kType.getElementType().isInteger(64) || !kType.hasStaticShape() ||
      kType.getNumElements() != 1)
    return ctx.error(node) << "k must be a one-element int64 tensor, got " << kType;
  auto axis = ctx.normalizeAxis(node, *axisAttr, type.getRank());
  if (failed(axis))
    return failure();
  SmallVector<int64_t> shape(type.getShape());
  shape[*axis] = ShapedType::kDynamic;
  if (ctx.isConstantInput(node, 1)) {
    auto values = ctx.constantInts(node, 1, "k", "read only when constant");
    if (failed(values))
      return failure();
    int64_t size = type.getDimSize(*axis);
    if (values->front() < 0 || (!ShapedType::isDynamic(size) && values->front() > size))
      return ctx.error(node) << "k = " << values->front()
                             << " is negative or exceeds the axis size " << size;
    shape[*axis] = values->front();
  }
  OpBuilder &b = ctx.builder();
  auto valuesType = ctx.resultType(node, 0, type.getElementType(), shape);
  auto indicesType = ctx.resultType(node, 1, b.getI64Type(), valuesType.getShape());
  auto topK = b.create<TopKOp>(ctx.loc(node), valuesType, indicesType, x, k,
                               b.getI64IntegerAttr(*axis),
                               *largest ? b.getUnitAttr() : UnitAttr());
  ctx.setOutput(node, 0, topK.getValues());
  ctx.setOutput(node, 1, topK.getIndices());
  return success();
}

} // namespace

void registerReductionImporters(OpImporterRegistry &registry) {
  registry.add("ReduceSum", importReduce<ReduceSumOp, 13>, 1);
  registry.add("ReduceMean", importReduce<ReduceMeanOp, 18>, 1);
  registry.add("ReduceMax", importReduce<ReduceMaxOp, 18>, 1);
  registry.add("ReduceMin", importReduce<ReduceMinOp, 18>, 1);
  registry.add("ReduceProd", importReduce<ReduceProdOp, 18>, 1);
  registry.add("ReduceSumSquare", importSumReduction<SumReduction::SumSquare>, 1);
  registry.add("ReduceL1", importSumReduction<SumReduction::L1>, 1);
  registry.add("ReduceL2", importSumReduction<SumReduction::L2>, 1);
  registry.add("ReduceLogSum", importSumReduction<SumReduction::LogSum>, 1);
  registry.add("ReduceLogSumExp", importSumReduction<SumReduction::LogSumExp>, 1);
  registry.add("CumSum", importCumSum, 11);
  registry.add("ArgMax", importArgReduce<ArgMaxOp>, 1);
  registry.add("ArgMin", importArgReduce<ArgMinOp>, 1);
  registry.add("TopK", importTopK, 10);
  registry.add("Hardmax", importHardmax, 13);
  registry.add("GlobalAveragePool", importGlobalPool<ReduceMeanOp>, 1);
  registry.add("GlobalMaxPool", importGlobalPool<ReduceMaxOp>, 1);
}

} // namespace kiln
