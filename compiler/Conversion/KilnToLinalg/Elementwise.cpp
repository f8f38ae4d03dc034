//===- Elementwise.cpp - Elementwise kiln ops to linalg.generic -----------===//
//
// Every elementwise op becomes one linalg.generic over the result's shape.
// Broadcasting lives in the operands' indexing maps; the op itself is the
// scalar body that emitScalar builds. kiln.rotary is one such loop too, with
// a second read of its input at each element's partner.
//
//===----------------------------------------------------------------------===//
#include "compiler/Conversion/KilnToLinalg/Patterns.h"
#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;

namespace kiln {
namespace {

using lowering::maxOf;
using lowering::minOf;
using lowering::scalarConstant;

Value emitCast(OpBuilder &b, Location loc, Value x, Type to) {
  Type from = x.getType();
  if (from == to)
    return x;
  bool fromFloat = isa<FloatType>(from), toFloat = isa<FloatType>(to);
  if (to.isInteger(1)) {
    Value zero = scalarConstant(b, loc, from, 0);
    if (fromFloat)
      return b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::UNE, x, zero);
    return b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ne, x, zero);
  }
  if (fromFloat && toFloat) {
    if (from.getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth())
      return b.create<arith::ExtFOp>(loc, to, x);
    if (from.getIntOrFloatBitWidth() > to.getIntOrFloatBitWidth())
      return b.create<arith::TruncFOp>(loc, to, x);
    // f16 <-> bf16: through f32.
    Value wide = b.create<arith::ExtFOp>(loc, b.getF32Type(), x);
    return b.create<arith::TruncFOp>(loc, to, wide);
  }
  if (fromFloat)
    return to.isUnsignedInteger() ? b.create<arith::FPToUIOp>(loc, to, x).getResult()
                                  : b.create<arith::FPToSIOp>(loc, to, x).getResult();
  // From here the source is an integer; i1 is unsigned (true is 1).
  bool fromUnsigned = from.isInteger(1) || from.isUnsignedInteger();
  if (toFloat)
    return fromUnsigned ? b.create<arith::UIToFPOp>(loc, to, x).getResult()
                        : b.create<arith::SIToFPOp>(loc, to, x).getResult();
  unsigned fromWidth = from.getIntOrFloatBitWidth(), toWidth = to.getIntOrFloatBitWidth();
  if (fromWidth > toWidth)
    return b.create<arith::TruncIOp>(loc, to, x);
  // Same width, other signedness: the bits stay; the stripping of
  // signedness after the lowering removes the cast.
  if (fromWidth == toWidth)
    return b.create<arith::BitcastOp>(loc, to, x);
  return fromUnsigned ? b.create<arith::ExtUIOp>(loc, to, x).getResult()
                      : b.create<arith::ExtSIOp>(loc, to, x).getResult();
}

Value emitSigmoid(OpBuilder &b, Location loc, Value x) {
  Value one = scalarConstant(b, loc, x.getType(), 1.0);
  Value negated = b.create<arith::NegFOp>(loc, x);
  Value denominator =
      b.create<arith::AddFOp>(loc, one, b.create<math::ExpOp>(loc, negated));
  return b.create<arith::DivFOp>(loc, one, denominator);
}

Value emitGelu(OpBuilder &b, Location loc, Value x, bool tanhApproximation) {
  Type type = x.getType();
  Value half = scalarConstant(b, loc, type, 0.5);
  Value one = scalarConstant(b, loc, type, 1.0);
  Value inner;
  if (tanhApproximation) {
    Value cube = b.create<arith::MulFOp>(loc, x, b.create<arith::MulFOp>(loc, x, x));
    Value cubic = b.create<arith::AddFOp>(
        loc, x,
        b.create<arith::MulFOp>(loc, scalarConstant(b, loc, type, 0.044715), cube));
    Value scaled = b.create<arith::MulFOp>(
        loc, scalarConstant(b, loc, type, std::sqrt(2.0 / M_PI)), cubic);
    inner = b.create<math::TanhOp>(loc, scaled);
  } else {
    Value scaled =
        b.create<arith::MulFOp>(loc, x, scalarConstant(b, loc, type, M_SQRT1_2));
    inner = b.create<math::ErfOp>(loc, scaled);
  }
  Value halfX = b.create<arith::MulFOp>(loc, half, x);
  return b.create<arith::MulFOp>(loc, halfX,
                                 b.create<arith::AddFOp>(loc, one, inner));
}

Value emitCompare(OpBuilder &b, Location loc, ComparePredicate predicate,
                  Value lhs, Value rhs) {
  if (isa<FloatType>(lhs.getType())) {
    arith::CmpFPredicate p;
    switch (predicate) {
    case ComparePredicate::eq: p = arith::CmpFPredicate::OEQ; break;
    case ComparePredicate::ne: p = arith::CmpFPredicate::UNE; break;
    case ComparePredicate::lt: p = arith::CmpFPredicate::OLT; break;
    case ComparePredicate::le: p = arith::CmpFPredicate::OLE; break;
    case ComparePredicate::gt: p = arith::CmpFPredicate::OGT; break;
    case ComparePredicate::ge: p = arith::CmpFPredicate::OGE; break;
    }
    return b.create<arith::CmpFOp>(loc, p, lhs, rhs);
  }
  // i1 compares as unsigned (false < true), as do ONNX's unsigned types;
  // the other integers are signed.
  bool isUnsigned = lhs.getType().isInteger(1) || lhs.getType().isUnsignedInteger();
  arith::CmpIPredicate p;
  switch (predicate) {
  case ComparePredicate::eq: p = arith::CmpIPredicate::eq; break;
  case ComparePredicate::ne: p = arith::CmpIPredicate::ne; break;
  case ComparePredicate::lt: p = isUnsigned ? arith::CmpIPredicate::ult : arith::CmpIPredicate::slt; break;
  case ComparePredicate::le: p = isUnsigned ? arith::CmpIPredicate::ule : arith::CmpIPredicate::sle; break;
  case ComparePredicate::gt: p = isUnsigned ? arith::CmpIPredicate::ugt : arith::CmpIPredicate::sgt; break;
  case ComparePredicate::ge: p = isUnsigned ? arith::CmpIPredicate::uge : arith::CmpIPredicate::sge; break;
  }
  return b.create<arith::CmpIOp>(loc, p, lhs, rhs);
}

/// x > 0 ? 1 : x < 0 ? -1 : x, which keeps NaN and a zero's sign.
Value emitSign(OpBuilder &b, Location loc, Value x) {
  Type type = x.getType();
  Value zero = scalarConstant(b, loc, type, 0);
  Value positive = emitCompare(b, loc, ComparePredicate::gt, x, zero);
  Value negative = emitCompare(b, loc, ComparePredicate::lt, x, zero);
  Value signOrX = b.create<arith::SelectOp>(
      loc, negative, scalarConstant(b, loc, type, -1), x);
  return b.create<arith::SelectOp>(loc, positive,
                                   scalarConstant(b, loc, type, 1), signOrX);
}

/// Integer division and remainder by zero, and of the most negative value
/// by -1, would kill the process (SIGFPE): both become run-time errors.
void checkIntegerDivisor(OpBuilder &b, Location loc, Operation *op,
                         Value dividend, Value divisor) {
  Type type = dividend.getType();
  Value nonZero = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ne,
                                          divisor, scalarConstant(b, loc, type, 0));
  lowering::check(b, loc, op, nonZero, "integer division by zero");
  if (type.isUnsignedInteger())
    return;
  unsigned width = type.getIntOrFloatBitWidth();
  Value mostNegative = b.create<arith::ConstantOp>(
      loc, b.getIntegerAttr(type, APInt::getSignedMinValue(width)));
  Value overflows = b.create<arith::AndIOp>(
      loc,
      b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, dividend,
                              mostNegative),
      b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, divisor,
                              scalarConstant(b, loc, type, -1)));
  Value fits = b.create<arith::XOrIOp>(
      loc, overflows, b.create<arith::ConstantOp>(loc, b.getBoolAttr(true)));
  lowering::check(b, loc, op, fits,
                  "integer division overflows (the most negative value "
                  "divided by -1)");
}

/// The remainder with the divisor's sign: the truncated remainder, plus the
/// divisor where the two signs differ and the remainder is not zero.
Value emitMod(OpBuilder &b, Location loc, Operation *op, Value x, Value y) {
  Type type = x.getType();
  Value rem;
  if (isa<FloatType>(type)) {
    rem = b.create<arith::RemFOp>(loc, x, y);
  } else {
    checkIntegerDivisor(b, loc, op, x, y);
    if (type.isUnsignedInteger())
      return b.create<arith::RemUIOp>(loc, x, y);
    rem = b.create<arith::RemSIOp>(loc, x, y);
  }
  Value zero = scalarConstant(b, loc, type, 0);
  Value remNegative = emitCompare(b, loc, ComparePredicate::lt, rem, zero);
  Value divisorNegative = emitCompare(b, loc, ComparePredicate::lt, y, zero);
  Value signsDiffer = b.create<arith::XOrIOp>(loc, remNegative, divisorNegative);
  Value adjust = b.create<arith::AndIOp>(
      loc, signsDiffer, emitCompare(b, loc, ComparePredicate::ne, rem, zero));
  Value shifted = isa<FloatType>(type)
                      ? b.create<arith::AddFOp>(loc, rem, y).getResult()
                      : b.create<arith::AddIOp>(loc, rem, y).getResult();
  return b.create<arith::SelectOp>(loc, adjust, shifted, rem);
}

/// Builds `T` for float operands and `I` for integer ones.
template <typename F, typename I>
Value floatOrInt(OpBuilder &b, Location loc, ValueRange args) {
  if (isa<FloatType>(args[0].getType()))
    return b.create<F>(loc, args);
  return b.create<I>(loc, args);
}

} // namespace

/// sqrt((1 − x)(1 + x)): the cosine of asin(x), NaN outside [−1, 1].
static Value emitCosineOf(OpBuilder &b, Location loc, Value x) {
  Value one = scalarConstant(b, loc, x.getType(), 1.0);
  Value below = b.create<arith::SubFOp>(loc, one, x);
  Value above = b.create<arith::AddFOp>(loc, one, x);
  return b.create<math::SqrtOp>(loc, b.create<arith::MulFOp>(loc, below, above));
}

namespace lowering {
Value emitScalar(Operation *op, OpBuilder &b, Location loc, ValueRange args,
                 Type resultType) {
  Value x = args[0];
  Type type = x.getType();
  return llvm::TypeSwitch<Operation *, Value>(op)
      .Case([&](NegOp) -> Value {
        if (isa<FloatType>(type))
          return b.create<arith::NegFOp>(loc, x);
        return b.create<arith::SubIOp>(loc, scalarConstant(b, loc, type, 0), x);
      })
      .Case([&](AbsOp) -> Value {
        if (type.isUnsignedInteger())
          return x;
        return floatOrInt<math::AbsFOp, math::AbsIOp>(b, loc, x);
      })
      .Case([&](ReluOp) { return maxOf(b, loc, x, scalarConstant(b, loc, type, 0)); })
      .Case([&](ExpOp) { return b.create<math::ExpOp>(loc, x); })
      .Case([&](LogOp) { return b.create<math::LogOp>(loc, x); })
      .Case([&](SqrtOp) { return b.create<math::SqrtOp>(loc, x); })
      .Case([&](RsqrtOp) { return b.create<math::RsqrtOp>(loc, x); })
      .Case([&](ReciprocalOp) {
        return b.create<arith::DivFOp>(loc, scalarConstant(b, loc, type, 1.0), x);
      })
      .Case([&](ErfOp) { return b.create<math::ErfOp>(loc, x); })
      .Case([&](TanhOp) { return b.create<math::TanhOp>(loc, x); })
      .Case([&](SigmoidOp) { return emitSigmoid(b, loc, x); })
      .Case([&](SiluOp) {
        return b.create<arith::MulFOp>(loc, x, emitSigmoid(b, loc, x));
      })
      .Case([&](CosOp) { return b.create<math::CosOp>(loc, x); })
      .Case([&](SinOp) { return b.create<math::SinOp>(loc, x); })
      .Case([&](TanOp) { return b.create<math::TanOp>(loc, x); })
      // MLIR's polynomial approximations of asin and acos (which
      // kiln-approximate-math applies) are off by 2.5% near ±1; atan2's is
      // accurate, and sqrt((1 − x)(1 + x)) keeps its digits there.
      .Case([&](AsinOp) { return b.create<math::Atan2Op>(loc, x, emitCosineOf(b, loc, x)); })
      .Case([&](AcosOp) { return b.create<math::Atan2Op>(loc, emitCosineOf(b, loc, x), x); })
      .Case([&](AtanOp) { return b.create<math::AtanOp>(loc, x); })
      .Case([&](SinhOp) { return b.create<math::SinhOp>(loc, x); })
      .Case([&](CoshOp) { return b.create<math::CoshOp>(loc, x); })
      .Case([&](AsinhOp) { return b.create<math::AsinhOp>(loc, x); })
      .Case([&](AcoshOp) { return b.create<math::AcoshOp>(loc, x); })
      .Case([&](AtanhOp) { return b.create<math::AtanhOp>(loc, x); })
      .Case([&](FloorOp) { return b.create<math::FloorOp>(loc, x); })
      .Case([&](CeilOp) { return b.create<math::CeilOp>(loc, x); })
      .Case([&](RoundOp) { return b.create<math::RoundEvenOp>(loc, x); })
      .Case([&](SignOp) { return emitSign(b, loc, x); })
      .Case([&](NotOp) {
        return b.create<arith::XOrIOp>(loc, x, b.create<arith::ConstantOp>(
                                                   loc, b.getBoolAttr(true)));
      })
      .Case([&](GeluOp gelu) {
        return emitGelu(b, loc, x, gelu.getTanhApproximation());
      })
      .Case([&](AddOp) { return floatOrInt<arith::AddFOp, arith::AddIOp>(b, loc, args); })
      .Case([&](SubOp) { return floatOrInt<arith::SubFOp, arith::SubIOp>(b, loc, args); })
      .Case([&](MulOp) { return floatOrInt<arith::MulFOp, arith::MulIOp>(b, loc, args); })
      .Case([&](DivOp div) -> Value {
        if (isa<FloatType>(type))
          return b.create<arith::DivFOp>(loc, args);
        checkIntegerDivisor(b, loc, div, args[0], args[1]);
        if (type.isUnsignedInteger())
          return b.create<arith::DivUIOp>(loc, args);
        return b.create<arith::DivSIOp>(loc, args);
      })
      .Case([&](RemOp rem) -> Value {
        if (isa<FloatType>(type))
          return b.create<arith::RemFOp>(loc, args);
        checkIntegerDivisor(b, loc, rem, args[0], args[1]);
        if (type.isUnsignedInteger())
          return b.create<arith::RemUIOp>(loc, args);
        return b.create<arith::RemSIOp>(loc, args);
      })
      .Case([&](ModOp mod) { return emitMod(b, loc, mod, args[0], args[1]); })
      .Case([&](PowOp) { return floatOrInt<math::PowFOp, math::IPowIOp>(b, loc, args); })
      .Case([&](MaxOp) { return maxOf(b, loc, args[0], args[1]); })
      .Case([&](MinOp) { return minOf(b, loc, args[0], args[1]); })
      .Case([&](AndOp) { return b.create<arith::AndIOp>(loc, args); })
      .Case([&](OrOp) { return b.create<arith::OrIOp>(loc, args); })
      .Case([&](XorOp) { return b.create<arith::XOrIOp>(loc, args); })
      .Case([&](CompareOp compare) {
        return emitCompare(b, loc, compare.getPredicate(), args[0], args[1]);
      })
      .Case([&](WhereOp) {
        return b.create<arith::SelectOp>(loc, args[0], args[1], args[2]);
      })
      .Case([&](ClampOp clamp) {
        Value result = x;
        unsigned next = 1;
        if (clamp.getMin())
          result = maxOf(b, loc, result, args[next++]);
        if (clamp.getMax())
          result = minOf(b, loc, result, args[next]);
        return result;
      })
      .Case([&](CastOp) { return emitCast(b, loc, x, resultType); })
      .Case([&](QuantizeOp) -> Value {
        // round(x / scale) + zero point, clamped to int8: maxnum and minnum
        // take the bound where the value is NaN, which lands on -128.
        Type f32 = b.getF32Type();
        Value rounded = b.create<math::RoundEvenOp>(
            loc, b.create<arith::DivFOp>(loc, x, args[1]));
        Value shifted = b.create<arith::AddFOp>(loc, rounded, emitCast(b, loc, args[2], f32));
        Value low = b.create<arith::MaxNumFOp>(loc, shifted, scalarConstant(b, loc, f32, -128));
        Value clamped = b.create<arith::MinNumFOp>(loc, low, scalarConstant(b, loc, f32, 127));
        return emitCast(b, loc, clamped, resultType);
      })
      .Case([&](DequantizeOp) -> Value {
        // Both integers are exact in f32, so is their difference.
        Value difference = b.create<arith::SubFOp>(loc, emitCast(b, loc, x, resultType),
                                                   emitCast(b, loc, args[2], resultType));
        return b.create<arith::MulFOp>(loc, difference, args[1]);
      });
}

/// The ops emitScalar knows.
static ArrayRef<StringRef> elementwiseOpNames() {
  static const StringRef names[] = {
      NegOp::getOperationName(),     AbsOp::getOperationName(),
      ReluOp::getOperationName(),    ExpOp::getOperationName(),
      LogOp::getOperationName(),     SqrtOp::getOperationName(),
      RsqrtOp::getOperationName(),   ReciprocalOp::getOperationName(),
      ErfOp::getOperationName(),     TanhOp::getOperationName(),
      SigmoidOp::getOperationName(), SiluOp::getOperationName(),
      CosOp::getOperationName(),     SinOp::getOperationName(),
      TanOp::getOperationName(),     AsinOp::getOperationName(),
      AcosOp::getOperationName(),    AtanOp::getOperationName(),
      SinhOp::getOperationName(),    CoshOp::getOperationName(),
      AsinhOp::getOperationName(),   AcoshOp::getOperationName(),
      AtanhOp::getOperationName(),
      NotOp::getOperationName(),     GeluOp::getOperationName(),
      FloorOp::getOperationName(),   CeilOp::getOperationName(),
      RoundOp::getOperationName(),   SignOp::getOperationName(),
      ModOp::getOperationName(),     RemOp::getOperationName(),
      AddOp::getOperationName(),     SubOp::getOperationName(),
      MulOp::getOperationName(),     DivOp::getOperationName(),
      PowOp::getOperationName(),     MaxOp::getOperationName(),
      MinOp::getOperationName(),     AndOp::getOperationName(),
      OrOp::getOperationName(),      XorOp::getOperationName(),
      CompareOp::getOperationName(), WhereOp::getOperationName(),
      ClampOp::getOperationName(),   CastOp::getOperationName(),
      QuantizeOp::getOperationName(), DequantizeOp::getOperationName()};
  return names;
}

bool isElementwiseOp(Operation *op) {
  return llvm::is_contained(elementwiseOpNames(), op->getName().getStringRef());
}
} // namespace lowering

namespace {

/// One linalg.generic over `op`'s result that reads `operands` broadcast to
/// it (their sizes checked), then `extraInputs` with their own maps, and
/// yields `body` of their elements. `readOperand`, when given, rewrites each
/// operand's broadcastMap (by operand number).
Value broadcastingGeneric(
    ConversionPatternRewriter &rewriter, Operation *op, ValueRange operands,
    ArrayRef<std::pair<Value, AffineMap>> extraInputs,
    function_ref<Value(OpBuilder &, Location, ValueRange)> body,
    function_ref<AffineMap(unsigned, AffineMap)> readOperand = nullptr) {
  Location loc = op->getLoc();
  auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
  int64_t rank = resultType.getRank();
  SmallVector<Value> inputs(operands);
  SmallVector<AffineMap> maps;
  for (auto [number, operand] : llvm::enumerate(operands)) {
    AffineMap map = lowering::broadcastMap(
        cast<RankedTensorType>(operand.getType()), resultType);
    maps.push_back(readOperand ? readOperand(number, map) : map);
  }
  for (auto [input, map] : extraInputs) {
    inputs.push_back(input);
    maps.push_back(map);
  }
  maps.push_back(AffineMap::getMultiDimIdentityMap(rank, op->getContext()));
  SmallVector<OpFoldResult> sizes =
      lowering::broadcastSizes(rewriter, loc, resultType, operands);
  lowering::checkBroadcast(rewriter, loc, op, operands, resultType, sizes);
  Value init = lowering::emptyTensor(rewriter, loc, resultType, sizes);
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  return rewriter
      .create<linalg::GenericOp>(
          loc, resultType, inputs, init, maps, iterators,
          [&](OpBuilder &b, Location nestedLoc, ValueRange args) {
            b.create<linalg::YieldOp>(nestedLoc,
                                      body(b, nestedLoc, args.drop_back()));
          })
      .getResult(0);
}

/// Lowers any op that emitScalar knows into one broadcasting linalg.generic.
struct ElementwiseLowering : public ConversionPattern {
  ElementwiseLowering(StringRef opName, MLIRContext *ctx)
      : ConversionPattern(opName, /*benefit=*/1, ctx) {}

  LogicalResult
  matchAndRewrite(Operation *op, ArrayRef<Value> operands,
                  ConversionPatternRewriter &rewriter) const override {
    Type elementType =
        cast<RankedTensorType>(op->getResult(0).getType()).getElementType();
    rewriter.replaceOp(
        op, broadcastingGeneric(rewriter, op, operands, {},
                                [&](OpBuilder &b, Location loc, ValueRange args) {
                                  return lowering::emitScalar(op, b, loc, args,
                                                              elementType);
                                }));
    return success();
  }
};

/// kiln.rotary as one broadcasting loop that reads the input twice: at the
/// element j, and, for j < R, at its partner: in the other half of the
/// rotated part, index (j + R/2) mod R, negated in the first half; or, when
/// interleaved, its neighbour j xor 1, negated at even j. Past R (partial
/// rotary) the element passes through; cos, sin and the partner are then
/// read at j mod R, in bounds, and not used.
struct RotaryLowering : public OpConversionPattern<RotaryOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(RotaryOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value input = adaptor.getInput();
    auto inputType = cast<RankedTensorType>(input.getType());
    auto resultType = cast<RankedTensorType>(op.getType());
    int64_t width = inputType.getShape().back();
    int64_t rotated = op.getRotaryWidth(), half = rotated / 2;
    bool partial = rotated < width;
    // The verifier made the input's last dim the result's, so its last map
    // result is the loop over the result's last dim; cos and sin read that
    // loop's index too, wrapped into their R.
    auto wrapLast = [&](AffineMap map, bool partner) {
      SmallVector<AffineExpr> exprs(map.getResults());
      AffineExpr &last = exprs.back();
      if (partner && op.getInterleaved()) {
        if (partial)
          last = last % rotated;
        last = last + 1 - (last % 2) * 2;
      } else if (partner || partial) {
        last = (last + (partner ? half : 0)) % rotated;
      }
      return AffineMap::get(map.getNumDims(), 0, exprs, op.getContext());
    };
    AffineMap partnerMap =
        wrapLast(lowering::broadcastMap(inputType, resultType), /*partner=*/true);
    int64_t lastDim = resultType.getRank() - 1;
    Value result = broadcastingGeneric(
        rewriter, op, {input, adaptor.getCos(), adaptor.getSin()},
        {{input, partnerMap}},
        [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
          Value x = args[0], cos = args[1], sin = args[2], other = args[3];
          Value index = b.create<linalg::IndexOp>(loc, lastDim);
          auto below = [&](int64_t bound) {
            return b.create<arith::CmpIOp>(
                loc, arith::CmpIPredicate::ult, index,
                b.create<arith::ConstantIndexOp>(loc, bound));
          };
          Value negated;
          if (op.getInterleaved()) {
            Value one = b.create<arith::ConstantIndexOp>(loc, 1);
            Value zero = b.create<arith::ConstantIndexOp>(loc, 0);
            negated = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq,
                                              b.create<arith::AndIOp>(loc, index, one), zero);
          } else {
            negated = below(half);
          }
          Value rotatedX = b.create<arith::SelectOp>(
              loc, negated, b.create<arith::NegFOp>(loc, other), other);
          Value rotatedSin = b.create<arith::MulFOp>(loc, rotatedX, sin);
          Value xCos = b.create<arith::MulFOp>(loc, x, cos);
          Value value = b.create<arith::AddFOp>(loc, xCos, rotatedSin);
          if (!partial)
            return value;
          Value inRotated = below(rotated);
          return b.create<arith::SelectOp>(loc, inRotated, value, x);
        },
        [&](unsigned number, AffineMap map) {
          return number == 0 ? map : wrapLast(map, /*partner=*/false);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// kiln.dynamic_quantize as the kiln ops that compute it, which lower in
/// turn: the range's ends as full reductions (the minimum as the negated
/// maximum of -x), its scale and zero point as 0-d arithmetic, and the
/// values as a kiln.quantize by them.
struct DynamicQuantizeLowering : public OpConversionPattern<DynamicQuantizeOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(DynamicQuantizeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getInput();
    auto type = cast<RankedTensorType>(x.getType());
    auto scalarType = RankedTensorType::get({}, rewriter.getF32Type());
    auto scalar = [&](float value) -> Value {
      return rewriter.create<ConstantOp>(loc, scalarType,
                                         DenseElementsAttr::get(scalarType, value));
    };
    auto allAxes = rewriter.getDenseI64ArrayAttr(
        llvm::to_vector(llvm::seq<int64_t>(0, type.getRank())));
    auto maximum = [&](Value value) -> Value {
      return rewriter.create<ReduceMaxOp>(loc, scalarType, value, allAxes, false);
    };
    Value zero = scalar(0.0f);
    Value high = rewriter.create<MaxOp>(loc, scalarType, maximum(x), zero);
    Value low = rewriter.create<MinOp>(
        loc, scalarType,
        rewriter.create<NegOp>(loc, scalarType,
                               maximum(rewriter.create<NegOp>(loc, type, x))),
        zero);
    Value step = rewriter.create<DivOp>(
        loc, scalarType, rewriter.create<SubOp>(loc, scalarType, high, low), scalar(255.0f));
    // A range of zeros is exact with any scale: 1, as the runtime's.
    auto boolType = RankedTensorType::get({}, rewriter.getI1Type());
    Value scale = rewriter.create<WhereOp>(
        loc, scalarType,
        rewriter.create<CompareOp>(loc, boolType, ComparePredicate::gt, step, zero), step,
        scalar(1.0f));
    Value zeroPoint = rewriter.create<ClampOp>(
        loc, scalarType,
        rewriter.create<RoundOp>(
            loc, scalarType,
            rewriter.create<DivOp>(loc, scalarType,
                                   rewriter.create<NegOp>(loc, scalarType, low), scale)),
        zero, scalar(255.0f));
    auto zeroPointType = cast<RankedTensorType>(op.getZeroPoint().getType());
    // Held lowered by 128; the difference is an integer, which the cast
    // keeps exactly.
    Value lowered = rewriter.create<CastOp>(
        loc, zeroPointType,
        rewriter.create<SubOp>(loc, scalarType, zeroPoint, scalar(128.0f)));
    Value values = rewriter.create<QuantizeOp>(loc, op.getResult().getType(), x, scale, lowered);
    rewriter.replaceOp(op, {values, scale, lowered});
    return success();
  }
};

} // namespace

void populateElementwiseLoweringPatterns(RewritePatternSet &patterns) {
  MLIRContext *ctx = patterns.getContext();
  for (StringRef name : lowering::elementwiseOpNames())
    patterns.add<ElementwiseLowering>(name, ctx);
  patterns.add<RotaryLowering, DynamicQuantizeLowering>(ctx);
}

} // namespace kiln
