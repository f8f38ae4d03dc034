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

/// Mod: fmod = 0 takes the divisor's sign (integers only, as in ONNX), and
/// fmod = 1 the dividend's, as C's fmod.
LogicalResult importMod(ImportContext &ctx, const onnx::NodeProto &node) {
  auto operands = ctx.requiredInputs(node, 2);
  auto fmod = ctx.intAttr(node, "fmod", 0);
  if (failed(operands) || failed(fmod))
    return failure();
  if (*fmod != 0 && *fmod != 1)
    return ctx.error(node) << "attribute 'fmod' must be 0 or 1, got " << *fmod;
  Value lhs = (*operands)[0], rhs = (*operands)[1];
  if (!*fmod && isa<FloatType>(getElementTypeOrSelf(lhs)))
    return ctx.error(node)
           << "a float Mod needs fmod = 1 (ONNX defines fmod = 0 for integers only)";
  auto result = *fmod ? buildBinary<RemOp>(ctx, node, lhs, rhs)
                      : buildBinary<ModOp>(ctx, node, lhs, rhs);
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
  registry.add("Sqrt", importUnary<SqrtOp>, 6);
  registry.add("Reciprocal", importUnary<ReciprocalOp>, 6);
  registry.add("Neg", importUnary<NegOp>, 6);
  registry.add("Exp", importUnary<ExpOp>, 6);
  registry.add("Log", importUnary<LogOp>, 6);
  registry.add("Erf", importUnary<ErfOp>, 9);
  registry.add("Tanh", importUnary<TanhOp>, 6);
  registry.add("Sigmoid", importUnary<SigmoidOp>, 6);
  registry.add("Relu", importUnary<ReluOp>, 6);
  registry.add("Abs", importUnary<AbsOp>, 6);
  registry.add("Cos", importUnary<CosOp>, 7);
  registry.add("Sin", importUnary<SinOp>, 7);
  registry.add("Not", importUnary<NotOp>, 1);
  registry.add("Floor", importUnary<FloorOp>, 6);
  registry.add("Ceil", importUnary<CeilOp>, 6);
  registry.add("Round", importUnary<RoundOp>, 11);
  registry.add("Sign", importUnary<SignOp>, 9);
  registry.add("Mod", importMod, 10);
  registry.add("Add", importBinary<AddOp>, 7);
  registry.add("Sub", importBinary<SubOp>, 7);
  registry.add("Mul", importBinary<MulOp>, 7);
  registry.add("Div", importBinary<DivOp>, 7);
  registry.add("Pow", importPow, 7);
  registry.add("And", importBinary<AndOp>, 7);
  registry.add("Or", importBinary<OrOp>, 7);
  registry.add("Xor", importBinary<XorOp>, 7);
  registry.add("Max", importVariadic<MaxOp>, 8);
  registry.add("Min", importVariadic<MinOp>, 8);
  registry.add("Equal", importCompare<ComparePredicate::eq>, 7);
  registry.add("Less", importCompare<ComparePredicate::lt>, 7);
  registry.add("LessOrEqual", importCompare<ComparePredicate::le>, 12);
  registry.add("Greater", importCompare<ComparePredicate::gt>, 7);
  registry.add("GreaterOrEqual", importCompare<ComparePredicate::ge>, 12);
  registry.add("Where", importWhere, 9);
  registry.add("Clip", importClip, 11);
  registry.add("IsNaN", importIsNaN, 9);
  registry.add("IsInf", importIsInf, 10);
  registry.add("Gelu", importGelu, 20);
  registry.add("Cast", importCast, 6);
  registry.add("CastLike", importCastLike, 15);
}

} // namespace kiln
