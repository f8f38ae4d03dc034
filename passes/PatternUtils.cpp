//===- PatternUtils.cpp - Matchers shared by the graph passes -------------===//
#include "passes/PatternUtils.h"

#include <cmath>

using namespace mlir;

namespace kiln {

std::optional<double> scalarConstantValue(Value value) {
  auto constant = value.getDefiningOp<ConstantOp>();
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

} // namespace kiln
