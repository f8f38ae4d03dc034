//===- ComputedAxes.cpp - Ops whose axes are computed at run time ---------===//
#include "compiler/Importer/ComputedAxes.h"

#include "llvm/ADT/Sequence.h"

using namespace mlir;

namespace kiln {

namespace {
RankedTensorType tensorType(Value value) { return cast<RankedTensorType>(value.getType()); }
} // namespace

Value ShapeMath::compare(ComparePredicate predicate, Value lhs, Value rhs,
                         ArrayRef<int64_t> shape) {
  return b().create<CompareOp>(loc, RankedTensorType::get(shape, b().getI1Type()), predicate,
                               lhs, rhs);
}

Value ShapeMath::count(Value flags) {
  return b().create<CastOp>(loc, tensorType(flags).clone(i64()), flags);
}

Value ShapeMath::countBefore(Value flags) {
  Value counts = count(flags);
  return b().create<CumSumOp>(loc, tensorType(counts), counts, b().getI64IntegerAttr(0),
                              b().getUnitAttr(), UnitAttr());
}

Value ShapeMath::sum(Value values, int64_t axis) {
  SmallVector<int64_t> shape(tensorType(values).getShape());
  shape.erase(shape.begin() + axis);
  return b().create<ReduceSumOp>(loc, RankedTensorType::get(shape, i64()), values,
                                 b().getDenseI64ArrayAttr({axis}), false);
}

Value ShapeMath::reshape(Value value, ArrayRef<int64_t> shape) {
  return b().create<ReshapeOp>(loc, tensorType(value).clone(shape), value,
                               ctx.i64List(loc, shape), false);
}

Value ShapeMath::iota(int64_t n) {
  return ctx.i64List(loc, llvm::to_vector(llvm::seq<int64_t>(0, n)));
}

Value ShapeMath::scalar(int64_t value) {
  auto type = RankedTensorType::get({}, i64());
  return b().create<ConstantOp>(loc, type, DenseIntElementsAttr::get(type, value));
}

Value axisNames(ShapeMath &m, Value axes, int64_t count, int64_t rank) {
  Value wrapped = m.b().create<AddOp>(m.loc, tensorType(axes), axes, m.scalar(rank));
  axes = m.b().create<WhereOp>(m.loc, tensorType(axes),
                               m.compare(ComparePredicate::lt, axes, m.scalar(0), {count}),
                               wrapped, axes);
  // [rank, 1] against [1, count].
  Value names = m.compare(ComparePredicate::eq, m.reshape(m.iota(rank), {rank, 1}),
                          m.reshape(axes, {1, count}), {rank, count});
  Value once = m.count(
      m.compare(ComparePredicate::eq, m.sum(m.count(names), 1), m.scalar(1), {rank}));
  Value distinct = m.compare(ComparePredicate::eq, m.sum(once, 0), m.scalar(count), {});
  m.b().create<AssertOp>(
      m.loc, distinct,
      m.b().getStringAttr("the axes must name distinct dims of rank " + Twine(rank)));
  return names;
}

Value namedDims(ShapeMath &m, Value names, int64_t rank) {
  return m.compare(ComparePredicate::gt, m.sum(m.count(names), 1), m.scalar(0), {rank});
}

FailureOr<int64_t> computedAxesCount(ImportContext &ctx, const onnx::NodeProto &node,
                                     int index) {
  Value axes = ctx.input(node, index);
  auto length = ctx.staticLength(node, axes, "axes");
  if (failed(length))
    return failure();
  if (!tensorType(axes).getElementType().isSignlessInteger(64))
    return ctx.error(node) << "axes must be int64, got " << axes.getType();
  return *length;
}

Value keptDims(ShapeMath &m, Value dims, Value dropped, int64_t rank, int64_t kept) {
  Value keptFlags = m.b().create<NotOp>(m.loc, tensorType(dropped), dropped);
  Value before = m.countBefore(keptFlags);
  // [kept, 1] against [1, rank]: result dim q takes input dim i where i is
  // kept and has q kept dims before it.
  Value at = m.compare(ComparePredicate::eq, m.reshape(m.iota(kept), {kept, 1}),
                       m.reshape(before, {1, rank}), {kept, rank});
  Value pick = m.b().create<AndOp>(
      m.loc, RankedTensorType::get({kept, rank}, m.b().getI1Type()), at,
      m.reshape(keptFlags, {1, rank}));
  Value picked = m.b().create<WhereOp>(m.loc, RankedTensorType::get({kept, rank}, m.i64()),
                                       pick, m.reshape(dims, {1, rank}), m.scalar(0));
  return m.sum(picked, 1);
}

} // namespace kiln
