//===- PatternUtils.cpp - Matchers shared by the graph passes -------------===//
#include "passes/PatternUtils.h"

#include <cmath>

using namespace mlir;

namespace kiln {

std::optional<double> scalarConstantValue(Value value) {
  auto constant = value ? value.getDefiningOp<ConstantOp>() : ConstantOp();
  if (!constant)
    return std::nullopt;
  auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
  if (!dense || !dense.isSplat() ||
      !llvm::all_of(dense.getType().getShape(),
                    [](int64_t dim) { return dim == 1; }))
    return std::nullopt;
  Type elementType = dense.getElementType();
  if (isa<FloatType>(elementType))
    return dense.getSplatValue<APFloat>().convertToDouble();
  if (elementType.isInteger(1))
    return std::nullopt;
  return static_cast<double>(dense.getSplatValue<APInt>().getSExtValue());
}

bool isScalarConstant(Value value, double expected, double tolerance) {
  std::optional<double> actual = scalarConstantValue(value);
  return actual &&
         std::fabs(*actual - expected) <= tolerance * std::fabs(expected);
}

Value otherOperand(Operation *op, Value operand) {
  if (op->getNumOperands() != 2)
    return nullptr;
  if (op->getOperand(0) == operand)
    return op->getOperand(1);
  if (op->getOperand(1) == operand)
    return op->getOperand(0);
  return nullptr;
}

bool ShapeElement::isDimOf(Value value, int64_t dim) const {
  if (tensor)
    return tensor == value && index == dim;
  int64_t size = cast<RankedTensorType>(value.getType()).getDimSize(dim);
  return !ShapedType::isDynamic(size) && constant == size;
}

/// A 0-d i64 value as a shape entry.
static std::optional<ShapeElement> scalarElement(Value scalar) {
  if (auto dim = scalar.getDefiningOp<DimOp>())
    return ShapeElement{std::nullopt, dim.getInput(),
                        static_cast<int64_t>(dim.getIndex())};
  auto constant = scalar.getDefiningOp<ConstantOp>();
  auto dense = constant ? dyn_cast<DenseIntElementsAttr>(constant.getValue())
                        : nullptr;
  if (!dense || dense.getNumElements() != 1)
    return std::nullopt;
  return ShapeElement{(*dense.begin()).getSExtValue(), nullptr, 0};
}

/// Whether entries `a` and `b` are equal (true/false), or unknown.
static std::optional<bool> equal(const ShapeElement &a, const ShapeElement &b) {
  if (a.constant && b.constant)
    return *a.constant == *b.constant;
  if (a.tensor && b.tensor && a.tensor == b.tensor && a.index == b.index)
    return true;
  // A size is never negative.
  if ((a.tensor && b.constant && *b.constant < 0) ||
      (b.tensor && a.constant && *a.constant < 0))
    return false;
  return std::nullopt;
}

std::optional<SmallVector<ShapeElement>> shapeElements(Value shape) {
  auto type = cast<RankedTensorType>(shape.getType());
  if (type.getRank() != 1 || !type.getElementType().isInteger(64))
    return std::nullopt;
  Operation *op = shape.getDefiningOp();
  if (!op)
    return std::nullopt;
  if (auto constant = dyn_cast<ConstantOp>(op)) {
    auto dense = dyn_cast<DenseIntElementsAttr>(constant.getValue());
    if (!dense)
      return std::nullopt;
    SmallVector<ShapeElement> elements;
    for (const APInt &value : dense)
      elements.push_back({value.getSExtValue(), nullptr, 0});
    return elements;
  }
  if (auto unsqueeze = dyn_cast<UnsqueezeOp>(op)) {
    std::optional<ShapeElement> element = scalarElement(unsqueeze.getInput());
    if (!element)
      return std::nullopt;
    return SmallVector<ShapeElement>{*element};
  }
  if (auto reshape = dyn_cast<ReshapeOp>(op))
    return shapeElements(reshape.getInput());
  if (auto concat = dyn_cast<ConcatOp>(op)) {
    SmallVector<ShapeElement> elements;
    for (Value input : concat.getInputs()) {
      std::optional<SmallVector<ShapeElement>> part = shapeElements(input);
      if (!part)
        return std::nullopt;
      llvm::append_range(elements, *part);
    }
    return elements;
  }
  // where(x == y, a, b), entry by entry, where each comparison is decided.
  auto where = dyn_cast<WhereOp>(op);
  auto compare =
      where ? where.getCondition().getDefiningOp<CompareOp>() : nullptr;
  if (!compare || compare.getPredicate() != ComparePredicate::eq ||
      type.isDynamicDim(0))
    return std::nullopt;
  std::optional<SmallVector<ShapeElement>> x = shapeElements(compare.getLhs()),
                                           y = shapeElements(compare.getRhs()),
                                           a = shapeElements(where.getOnTrue()),
                                           b = shapeElements(where.getOnFalse());
  if (!x || !y || !a || !b)
    return std::nullopt;
  size_t length = type.getDimSize(0);
  // Length-1 operands broadcast.
  auto at = [](const SmallVector<ShapeElement> &v, size_t i) {
    return v.size() == 1 ? v[0] : v[i];
  };
  for (auto *v : {&*x, &*y, &*a, &*b})
    if (v->size() != 1 && v->size() != length)
      return std::nullopt;
  SmallVector<ShapeElement> elements;
  for (size_t i = 0; i < length; ++i) {
    std::optional<bool> same = equal(at(*x, i), at(*y, i));
    if (!same)
      return std::nullopt;
    elements.push_back(*same ? at(*a, i) : at(*b, i));
  }
  return elements;
}

} // namespace kiln
