//===- ElementwiseOps.cpp - Elementwise ONNX ops --------------------------===//
//
// Unary math, broadcasting arithmetic (variadic Max, Min, Sum and Mean
// too), comparisons, logic, Where, Clip, the casts, and the activations
// ONNX defines piecewise, built from those.
//
//===----------------------------------------------------------------------===//
#include "compiler/Importer/ImportContext.h"
#include "dialects/Kiln/IR/KilnOps.h"

#include <array>
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

/// Max, Min, Sum and Mean take any number of inputs; they chain left to
/// right.
template <typename OpTy>
FailureOr<Value> buildVariadic(ImportContext &ctx, const onnx::NodeProto &node) {
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
  return result;
}

template <typename OpTy>
LogicalResult importVariadic(ImportContext &ctx, const onnx::NodeProto &node) {
  auto result = buildVariadic<OpTy>(ctx, node);
  if (failed(result))
    return failure();
  ctx.setOutput(node, 0, *result);
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

/// Elementwise ops on values shaped like one float input, with scalars of
/// its element type broadcast: the activations ONNX defines piecewise are
/// built from kiln's elementwise ops, which fuse into one loop.
class ShapedBuilder {
public:
  ShapedBuilder(ImportContext &ctx, const onnx::NodeProto &node, Value like)
      : b_(ctx.builder()), ctx_(ctx), loc_(ctx.loc(node)),
        type_(cast<RankedTensorType>(like.getType())) {}

  Value scalar(double value) { return ctx_.scalar(loc_, type_.getElementType(), value); }
  template <typename OpTy> Value unary(Value x) { return b_.create<OpTy>(loc_, type_, x); }
  template <typename OpTy> Value binary(Value lhs, Value rhs) {
    return b_.create<OpTy>(loc_, type_, lhs, rhs);
  }
  Value compare(ComparePredicate predicate, Value lhs, Value rhs) {
    return b_.create<CompareOp>(loc_, type_.clone(b_.getI1Type()), predicate, lhs, rhs);
  }
  Value select(Value condition, Value onTrue, Value onFalse) {
    return b_.create<WhereOp>(loc_, type_, condition, onTrue, onFalse);
  }

private:
  OpBuilder &b_;
  ImportContext &ctx_;
  Location loc_;
  RankedTensorType type_;
};

/// An activation of one float input and float attributes (name, default),
/// built by `build` from the input and the attributes' values.
template <size_t N>
using ActivationBody = Value (*)(ShapedBuilder &, Value, const std::array<float, N> &);

template <size_t N>
LogicalResult importActivation(ImportContext &ctx, const onnx::NodeProto &node,
                               const std::array<std::pair<const char *, float>, N> &attrs,
                               ActivationBody<N> build) {
  auto x = ctx.requiredInput(node, 0);
  if (failed(x))
    return failure();
  if (!isa<FloatType>(getElementTypeOrSelf(*x)))
    return ctx.error(node) << "input must be a float tensor, got " << x->getType();
  std::array<float, N> values;
  for (size_t i = 0; i < N; ++i) {
    auto value = ctx.floatAttr(node, attrs[i].first, attrs[i].second);
    if (failed(value))
      return failure();
    values[i] = *value;
  }
  ShapedBuilder b(ctx, node, *x);
  ctx.setOutput(node, 0, build(b, *x, values));
  return success();
}

// Each activation as ONNX defines it, with its attributes' defaults. Ops
// are built one statement each, so that the IR's order does not depend on
// the order in which a compiler evaluates arguments.
LogicalResult importLeakyRelu(ImportContext &ctx, const onnx::NodeProto &node) {
  return importActivation<1>(ctx, node, {{{"alpha", 0.01f}}}, [](ShapedBuilder &b, Value x, const auto &a) {
    Value negative = b.compare(ComparePredicate::lt, x, b.scalar(0));
    Value scaled = b.binary<MulOp>(x, b.scalar(a[0]));
    return b.select(negative, scaled, x);
  });
}

LogicalResult importElu(ImportContext &ctx, const onnx::NodeProto &node) {
  return importActivation<1>(ctx, node, {{{"alpha", 1.0f}}}, [](ShapedBuilder &b, Value x, const auto &a) {
    Value negative = b.compare(ComparePredicate::lt, x, b.scalar(0));
    Value exponential = b.binary<SubOp>(b.unary<ExpOp>(x), b.scalar(1));
    Value scaled = b.binary<MulOp>(exponential, b.scalar(a[0]));
    return b.select(negative, scaled, x);
  });
}

/// Celu(x) = max(0, x) + min(0, alpha · (exp(x / alpha) − 1)).
LogicalResult importCelu(ImportContext &ctx, const onnx::NodeProto &node) {
  return importActivation<1>(ctx, node, {{{"alpha", 1.0f}}}, [](ShapedBuilder &b, Value x, const auto &a) {
    Value alpha = b.scalar(a[0]);
    Value positive = b.binary<MaxOp>(x, b.scalar(0));
    Value exponential = b.binary<SubOp>(b.unary<ExpOp>(b.binary<DivOp>(x, alpha)), b.scalar(1));
    Value negative = b.binary<MinOp>(b.binary<MulOp>(exponential, alpha), b.scalar(0));
    return b.binary<AddOp>(positive, negative);
  });
}

LogicalResult importSelu(ImportContext &ctx, const onnx::NodeProto &node) {
  return importActivation<2>(
      ctx, node, {{{"alpha", 1.67326319217681884765625f}, {"gamma", 1.05070102214813232421875f}}},
      [](ShapedBuilder &b, Value x, const auto &a) {
        Value alpha = b.scalar(a[0]);
        Value nonPositive = b.compare(ComparePredicate::le, x, b.scalar(0));
        Value negative = b.binary<SubOp>(b.binary<MulOp>(b.unary<ExpOp>(x), alpha), alpha);
        Value piecewise = b.select(nonPositive, negative, x);
        return b.binary<MulOp>(piecewise, b.scalar(a[1]));
      });
}

LogicalResult importThresholdedRelu(ImportContext &ctx, const onnx::NodeProto &node) {
  return importActivation<1>(ctx, node, {{{"alpha", 1.0f}}}, [](ShapedBuilder &b, Value x, const auto &a) {
    Value above = b.compare(ComparePredicate::gt, x, b.scalar(a[0]));
    return b.select(above, x, b.scalar(0));
  });
}

/// max(0, min(1, alpha · x + beta)).
Value hardSigmoid(ShapedBuilder &b, Value x, float alpha, float beta) {
  Value scaled = b.binary<MulOp>(x, b.scalar(alpha));
  Value linear = b.binary<AddOp>(scaled, b.scalar(beta));
  Value belowOne = b.binary<MinOp>(linear, b.scalar(1));
  return b.binary<MaxOp>(belowOne, b.scalar(0));
}

LogicalResult importHardSigmoid(ImportContext &ctx, const onnx::NodeProto &node) {
  return importActivation<2>(ctx, node, {{{"alpha", 0.2f}, {"beta", 0.5f}}},
                             [](ShapedBuilder &b, Value x, const auto &a) {
                               return hardSigmoid(b, x, a[0], a[1]);
                             });
}

LogicalResult importHardSwish(ImportContext &ctx, const onnx::NodeProto &node) {
  return importActivation<0>(ctx, node, {}, [](ShapedBuilder &b, Value x, const auto &) {
    return b.binary<MulOp>(x, hardSigmoid(b, x, 1.0f / 6, 0.5f));
  });
}

/// ln(exp(x) + 1), as max(x, 0) + ln(exp(−|x|) + 1), which is the same
/// where the first is finite and does not overflow past x = 88.
LogicalResult importSoftplus(ImportContext &ctx, const onnx::NodeProto &node) {
  return importActivation<0>(ctx, node, {}, [](ShapedBuilder &b, Value x, const auto &) {
    Value positive = b.binary<MaxOp>(x, b.scalar(0));
    Value decay = b.unary<ExpOp>(b.unary<NegOp>(b.unary<AbsOp>(x)));
    Value tail = b.unary<LogOp>(b.binary<AddOp>(decay, b.scalar(1)));
    return b.binary<AddOp>(positive, tail);
  });
}

LogicalResult importSoftsign(ImportContext &ctx, const onnx::NodeProto &node) {
  return importActivation<0>(ctx, node, {}, [](ShapedBuilder &b, Value x, const auto &) {
    Value denominator = b.binary<AddOp>(b.unary<AbsOp>(x), b.scalar(1));
    return b.binary<DivOp>(x, denominator);
  });
}

/// x + bias below −lambd, x − bias above lambd, 0 between.
LogicalResult importShrink(ImportContext &ctx, const onnx::NodeProto &node) {
  return importActivation<2>(ctx, node, {{{"bias", 0.0f}, {"lambd", 0.5f}}},
                             [](ShapedBuilder &b, Value x, const auto &a) {
                               Value bias = b.scalar(a[0]);
                               Value above = b.compare(ComparePredicate::gt, x, b.scalar(a[1]));
                               Value lowered = b.binary<SubOp>(x, bias);
                               Value upper = b.select(above, lowered, b.scalar(0));
                               Value below = b.compare(ComparePredicate::lt, x, b.scalar(-a[1]));
                               Value raised = b.binary<AddOp>(x, bias);
                               return b.select(below, raised, upper);
                             });
}

/// PRelu: x where x ≥ 0, slope · x below, the slope broadcast to x.
LogicalResult importPRelu(ImportContext &ctx, const onnx::NodeProto &node) {
  auto operands = ctx.requiredInputs(node, 2);
  if (failed(operands))
    return failure();
  Value x = (*operands)[0];
  auto scaled = buildBinary<MulOp>(ctx, node, x, (*operands)[1]);
  if (failed(scaled))
    return failure();
  ShapedBuilder b(ctx, node, x);
  Value negative = b.compare(ComparePredicate::lt, x, b.scalar(0));
  auto type = ctx.broadcastType(node, 0, getElementTypeOrSelf(x), {negative, *scaled, x});
  if (failed(type))
    return failure();
  ctx.setOutput(node, 0,
                ctx.builder().create<WhereOp>(ctx.loc(node), *type, negative, *scaled, x));
  return success();
}

/// Mean: the inputs' broadcast sum divided by their count.
LogicalResult importMean(ImportContext &ctx, const onnx::NodeProto &node) {
  auto sum = buildVariadic<AddOp>(ctx, node);
  if (failed(sum))
    return failure();
  if (!isa<FloatType>(getElementTypeOrSelf(*sum)))
    return ctx.error(node) << "inputs must be float tensors, got " << sum->getType();
  ShapedBuilder b(ctx, node, *sum);
  ctx.setOutput(node, 0, b.binary<DivOp>(*sum, b.scalar(node.input_size())));
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
  registry.add("Tan", importUnary<TanOp>, 7);
  registry.add("Asin", importUnary<AsinOp>, 7);
  registry.add("Acos", importUnary<AcosOp>, 7);
  registry.add("Atan", importUnary<AtanOp>, 7);
  registry.add("Sinh", importUnary<SinhOp>, 9);
  registry.add("Cosh", importUnary<CoshOp>, 9);
  registry.add("Asinh", importUnary<AsinhOp>, 9);
  registry.add("Acosh", importUnary<AcoshOp>, 9);
  registry.add("Atanh", importUnary<AtanhOp>, 9);
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
  registry.add("LeakyRelu", importLeakyRelu, 6);
  registry.add("PRelu", importPRelu, 9);
  registry.add("Elu", importElu, 6);
  registry.add("Celu", importCelu, 12);
  registry.add("Selu", importSelu, 6);
  registry.add("ThresholdedRelu", importThresholdedRelu, 10);
  registry.add("HardSigmoid", importHardSigmoid, 6);
  registry.add("HardSwish", importHardSwish, 14);
  registry.add("Softplus", importSoftplus, 1);
  registry.add("Softsign", importSoftsign, 1);
  registry.add("Shrink", importShrink, 9);
  registry.add("Sum", importVariadic<AddOp>, 8);
  registry.add("Mean", importMean, 8);
}

} // namespace kiln
