//===- ElementwiseOps.cpp - Elementwise ONNX ops --------------------------===//
//
// Unary math, broadcasting arithmetic, comparisons, logic, Where, Clip and
// the casts.
//
//===----------------------------------------------------------------------===//
#include "compiler/Importer/ImportContext.h"
#include "dialects/Kiln/IR/KilnOps.h"

#include <cmath>

using namespace mlir;

namespace kiln {
namespace {

template <typename OpTy>
LogicalResult importUnary(ImportContext &ctx, const onnx::NodeProto &node) {
  auto x = ctx.requiredInput(node, 0);
  if (failed(x))
    return failure();
  ctx.setOutput(node, 0, ctx.builder().create<OpTy>(ctx.loc(node), *x));
  return success();
}

/// Builds a broadcasting binary op whose result has `resultElement` (the
/// operands' element type when null).
template <typename OpTy>
FailureOr<Value> buildBinary(ImportContext &ctx, const onnx::NodeProto &node,
                             Value lhs, Value rhs, Type resultElement = {}) {
  if (!resultElement)
    resultElement = getElementTypeOrSelf(lhs);
  auto type = ctx.broadcastType(node, 0, resultElement, {lhs, rhs});
  if (failed(type))
    return failure();
  return ctx.builder().create<OpTy>(ctx.loc(node), *type, lhs, rhs).getResult();
}

template <typename OpTy>
LogicalResult importBinary(ImportContext &ctx, const onnx::NodeProto &node) {
  auto operands = ctx.requiredInputs(node, 2);
  if (failed(operands))
    return failure();
  auto result = buildBinary<OpTy>(ctx, node, (*operands)[0], (*operands)[1]);
  if (failed(result))
    return failure();
  ctx.setOutput(node, 0, *result);
  return success();
}

/// Max and Min take any number of inputs; they chain left to right.
template <typename OpTy>
LogicalResult importVariadic(ImportContext &ctx, const onnx::NodeProto &node) {
  auto acc = ctx.requiredInput(node, 0);
  if (failed(acc))
    return failure();
  Value result = *acc;
  for (int i = 1; i < node.input_size(); ++i) {
    auto next = ctx.requiredInput(node, i);
    if (failed(next))
      return failure();
    auto combined = buildBinary<OpTy>(ctx, node, result, *next);
    if (failed(combined))
      return failure();
    result = *combined;
  }
  ctx.setOutput(node, 0, result);
  return success();
}

/// ONNX Pow allows an exponent of another numeric type; kiln.pow does not.
LogicalResult importPow(ImportContext &ctx, const onnx::NodeProto &node) {
  auto operands = ctx.requiredInputs(node, 2);
  if (failed(operands))
    return failure();
  Value base = (*operands)[0], exp = (*operands)[1];
  Type element = getElementTypeOrSelf(base);
  if (getElementTypeOrSelf(exp) != element) {
    auto expType = cast<RankedTensorType>(exp.getType()).clone(element);
    exp = ctx.builder().create<CastOp>(ctx.loc(node), expType, exp);
  }
  auto result = buildBinary<PowOp>(ctx, node, base, exp);
  if (failed(result))
    return failure();
  ctx.setOutput(node, 0, *result);
  return success();
}

template <ComparePredicate predicate>
LogicalResult importCompare(ImportContext &ctx, const onnx::NodeProto &node) {
  auto operands = ctx.requiredInputs(node, 2);
  if (failed(operands))
    return failure();
  auto type = ctx.broadcastType(node, 0, ctx.builder().getI1Type(), *operands);
  if (failed(type))
    return failure();
  ctx.setOutput(node, 0,
                ctx.builder().create<CompareOp>(ctx.loc(node), *type, predicate,
                                                (*operands)[0], (*operands)[1]));
  return success();
}

LogicalResult importWhere(ImportContext &ctx, const onnx::NodeProto &node) {
  auto operands = ctx.requiredInputs(node, 3);
  if (failed(operands))
    return failure();
  auto type = ctx.broadcastType(node, 0, getElementTypeOrSelf((*operands)[1]),
                                *operands);
  if (failed(type))
    return failure();
  ctx.setOutput(node, 0,
                ctx.builder().create<WhereOp>(ctx.loc(node), *type, *operands));
  return success();
}

LogicalResult importClip(ImportContext &ctx, const onnx::NodeProto &node) {
  auto x = ctx.requiredInput(node, 0);
  if (failed(x))
    return failure();
  ctx.setOutput(node, 0,
                ctx.builder().create<ClampOp>(ctx.loc(node), x->getType(), *x,
                                              ctx.input(node, 1),
                                              ctx.input(node, 2)));
  return success();
}

Value buildCast(ImportContext &ctx, const onnx::NodeProto &node, Value x,
                Type element) {
  auto type = cast<RankedTensorType>(x.getType()).clone(element);
  if (type == x.getType())
    return x;
  return ctx.builder().create<CastOp>(ctx.loc(node), type, x);
}

LogicalResult importCast(ImportContext &ctx, const onnx::NodeProto &node) {
  auto x = ctx.requiredInput(node, 0);
  const auto *to = ctx.findAttr(node, "to");
  if (failed(x))
    return failure();
  if (!to || to->type() != onnx::AttributeProto::INT)
    return ctx.error(node) << "needs the INT attribute 'to'";
  Type element = convertElementType(ctx.context(), to->i());
  if (!element)
    return ctx.error(node) << "cannot cast to unsupported type "
                           << onnxTypeName(to->i());
  ctx.setOutput(node, 0, buildCast(ctx, node, *x, element));
  return success();
}

LogicalResult importCastLike(ImportContext &ctx, const onnx::NodeProto &node) {
  auto operands = ctx.requiredInputs(node, 2);
  if (failed(operands))
    return failure();
  ctx.setOutput(node, 0, buildCast(ctx, node, (*operands)[0],
                                   getElementTypeOrSelf((*operands)[1])));
  return success();
}

/// IsNaN(x) = x != x: only NaN compares unequal to itself.
LogicalResult importIsNaN(ImportContext &ctx, const onnx::NodeProto &node) {
  auto x = ctx.requiredInput(node, 0);
  if (failed(x))
    return failure();
  auto type = cast<RankedTensorType>(x->getType()).clone(ctx.builder().getI1Type());
  ctx.setOutput(node, 0,
                ctx.builder().create<CompareOp>(ctx.loc(node), type,
                                                ComparePredicate::ne, *x, *x));
  return success();
}

/// IsInf(x) = (x == +inf and detect_positive) or (x == -inf and
/// detect_negative).
LogicalResult importIsInf(ImportContext &ctx, const onnx::NodeProto &node) {
  auto x = ctx.requiredInput(node, 0);
  auto positive = ctx.intAttr(node, "detect_positive", 1);
  auto negative = ctx.intAttr(node, "detect_negative", 1);
  if (failed(x) || failed(positive) || failed(negative))
    return failure();
  Location loc = ctx.loc(node);
  OpBuilder &b = ctx.builder();
  auto type = cast<RankedTensorType>(x->getType());
  auto boolType = type.clone(b.getI1Type());
  Type element = type.getElementType();
  if (!isa<FloatType>(element))
    return ctx.error(node) << "input must be a float tensor, got " << type;
  Value result;
  for (auto [detect, sign] : {std::pair{*positive, 1.0}, std::pair{*negative, -1.0}}) {
    if (!detect)
      continue;
    Value infinity = ctx.scalar(loc, element, sign * HUGE_VAL);
    Value equal = b.create<CompareOp>(loc, boolType, ComparePredicate::eq, *x, infinity);
    result = result ? b.create<OrOp>(loc, boolType, result, equal).getResult() : equal;
  }
  if (!result) {
    // Neither sign detected: all false.
    Value falseScalar = b.create<ConstantOp>(
        loc, cast<ElementsAttr>(DenseElementsAttr::get(
                 RankedTensorType::get({}, b.getI1Type()), false)));
    result = b.create<AndOp>(loc, boolType,
                             b.create<CompareOp>(loc, boolType, ComparePredicate::eq,
                                                 *x, *x),
                             falseScalar);
  }
  ctx.setOutput(node, 0, result);
  return success();
}

/// Gelu (opset 20): approximate = "none" (erf) or "tanh".
LogicalResult importGelu(ImportContext &ctx, const onnx::NodeProto &node) {
  auto x = ctx.requiredInput(node, 0);
  auto approximate = ctx.stringAttr(node, "approximate", "none");
  if (failed(x) || failed(approximate))
    return failure();
  if (*approximate != "none" && *approximate != "tanh")
    return ctx.error(node) << "attribute 'approximate' must be \"none\" or \"tanh\", got \""
                           << *approximate << "\"";
  ctx.setOutput(node, 0,
                ctx.builder().create<GeluOp>(ctx.loc(node), *x, *approximate == "tanh"));
  return success();
}

} // namespace

void registerElementwiseImporters(OpImporterRegistry &registry) {
  registry.add("Sqrt", importUnary<SqrtOp>);
  registry.add("Reciprocal", importUnary<ReciprocalOp>);
  registry.add("Neg", importUnary<NegOp>);
  registry.add("Exp", importUnary<ExpOp>);
  registry.add("Log", importUnary<LogOp>);
  registry.add("Erf", importUnary<ErfOp>);
  registry.add("Tanh", importUnary<TanhOp>);
  registry.add("Sigmoid", importUnary<SigmoidOp>);
  registry.add("Relu", importUnary<ReluOp>);
  registry.add("Abs", importUnary<AbsOp>);
  registry.add("Cos", importUnary<CosOp>);
  registry.add("Sin", importUnary<SinOp>);
  registry.add("Not", importUnary<NotOp>);
  registry.add("Add", importBinary<AddOp>);
  registry.add("Sub", importBinary<SubOp>);
  registry.add("Mul", importBinary<MulOp>);
  registry.add("Div", importBinary<DivOp>);
  registry.add("Pow", importPow);
  registry.add("And", importBinary<AndOp>);
  registry.add("Or", importBinary<OrOp>);
  registry.add("Xor", importBinary<XorOp>);
  registry.add("Max", importVariadic<MaxOp>);
  registry.add("Min", importVariadic<MinOp>);
  registry.add("Equal", importCompare<ComparePredicate::eq>);
  registry.add("Less", importCompare<ComparePredicate::lt>);
  registry.add("LessOrEqual", importCompare<ComparePredicate::le>);
  registry.add("Greater", importCompare<ComparePredicate::gt>);
  registry.add("GreaterOrEqual", importCompare<ComparePredicate::ge>);
  registry.add("Where", importWhere);
  registry.add("Clip", importClip);
  registry.add("IsNaN", importIsNaN);
  registry.add("IsInf", importIsInf);
  registry.add("Gelu", importGelu);
  registry.add("Cast", importCast);
  registry.add("CastLike", importCastLike);
}

} // namespace kiln
