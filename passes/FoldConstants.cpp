//===- FoldConstants.cpp - The kiln-fold-constants pass -------------------===//
//
// Evaluates at compile time every kiln op whose operands are all constants,
// when its result has at most `max-elements` elements, and replaces it with a
// kiln.constant. Ops run in program order, so whole constant subgraphs (the
// shape arithmetic exporters emit) fold in one sweep. The shape queries that
// start those subgraphs fold too: an element of shape_of(x) is the dim of x,
// a constant when that dim is static. Each op's result types are refined
// from its operands first (ShapeInference.h), so dims that ONNX shape
// inference lost become static and fold as well.
//
// Folding computes exactly what the lowered op computes at run time, except
// that exp, tanh, erf and the like use libm here (correctly rounded or
// nearly) where generated code uses a polynomial accurate to a few ulp. Ops
// whose run-time checks would fail (an index out of range, an integer
// division by zero, a size that does not match the declared type) are left
// alone, so that the error still names them when the model runs.
//
//===----------------------------------------------------------------------===//
#include "passes/PatternUtils.h"
#include "passes/Passes.h"
#include "passes/ShapeInference.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

namespace kiln {
#define GEN_PASS_DEF_KILNFOLDCONSTANTS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// A constant tensor with its elements widened: doubles for float element
/// types, int64 for integers (sign-extended) and i1 (0 or 1).
struct Constant {
  SmallVector<int64_t> shape;
  Type elementType;
  std::vector<double> floats;
  std::vector<int64_t> ints;

  bool isFloat() const { return isa<FloatType>(elementType); }
  int64_t size() const { return isFloat() ? floats.size() : ints.size(); }
  double asDouble(int64_t i) const {
    return isFloat() ? floats[i] : static_cast<double>(ints[i]);
  }
};

Constant empty(ArrayRef<int64_t> shape, Type elementType) {
  Constant result{SmallVector<int64_t>(shape), elementType, {}, {}};
  int64_t count = ShapedType::getNumElements(shape);
  if (result.isFloat())
    result.floats.resize(count);
  else
    result.ints.resize(count);
  return result;
}

/// Copies element `from` of `source` to element `to` of `target` (same type).
void copyElement(const Constant &source, int64_t from, Constant &target,
                 int64_t to) {
  if (source.isFloat())
    target.floats[to] = source.floats[from];
  else
    target.ints[to] = source.ints[from];
}

/// `value` rounded to the float type `type`.
APFloat toFloatType(double value, Type type) {
  APFloat result(value);
  bool losesInfo;
  result.convert(cast<FloatType>(type).getFloatSemantics(),
                 APFloat::rmNearestTiesToEven, &losesInfo);
  return result;
}

double toDouble(APFloat value) {
  bool losesInfo;
  value.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven,
                &losesInfo);
  return value.convertToDouble();
}

/// The constant `value` holds, looking through a tensor.cast of it (which
/// folding leaves where a result type is less static than the value).
std::optional<Constant> readConstant(Value value) {
  if (auto cast = value.getDefiningOp<tensor::CastOp>())
    value = cast.getSource();
  auto op = value.getDefiningOp<ConstantOp>();
  auto dense = op ? dyn_cast<DenseElementsAttr>(op.getValue()) : nullptr;
  if (!dense)
    return std::nullopt;
  auto type = cast<RankedTensorType>(dense.getType());
  Constant result{SmallVector<int64_t>(type.getShape()),
                  type.getElementType(), {}, {}};
  if (result.isFloat()) {
    for (APFloat element : dense.getValues<APFloat>())
      result.floats.push_back(toDouble(element));
  } else if (result.elementType.isInteger(1)) {
    for (bool element : dense.getValues<bool>())
      result.ints.push_back(element);
  } else {
    for (const APInt &element : dense.getValues<APInt>())
      result.ints.push_back(element.getSExtValue());
  }
  return result;
}

DenseElementsAttr toAttribute(const Constant &constant) {
  auto type = RankedTensorType::get(constant.shape, constant.elementType);
  if (constant.isFloat()) {
    SmallVector<APFloat> values;
    for (double value : constant.floats)
      values.push_back(toFloatType(value, constant.elementType));
    return DenseElementsAttr::get(type, values);
  }
  unsigned width = constant.elementType.getIntOrFloatBitWidth();
  if (width == 1)
    return DenseElementsAttr::get(
        type, llvm::to_vector(llvm::map_range(
                  constant.ints, [](int64_t value) { return value != 0; })));
  SmallVector<APInt> values;
  for (int64_t value : constant.ints)
    values.push_back(APInt(width, value, /*isSigned=*/true));
  return DenseElementsAttr::get(type, values);
}

//===----------------------------------------------------------------------===//
// Elementwise ops
//===----------------------------------------------------------------------===//

/// Row-major strides of `shape` as read from a broadcast to `resultRank`
/// dims: 0 for missing and size-1 dims.
SmallVector<int64_t> broadcastStrides(ArrayRef<int64_t> shape,
                                      int64_t resultRank) {
  SmallVector<int64_t> strides(resultRank, 0);
  int64_t stride = 1;
  for (int64_t i = shape.size() - 1; i >= 0; --i) {
    if (shape[i] != 1)
      strides[resultRank - shape.size() + i] = stride;
    stride *= shape[i];
  }
  return strides;
}

/// The NumPy broadcast of the operands' shapes, or nullopt.
std::optional<SmallVector<int64_t>>
broadcastShape(ArrayRef<const Constant *> operands) {
  SmallVector<int64_t> shape;
  for (const Constant *operand : operands) {
    SmallVector<int64_t> next;
    if (!OpTrait::util::getBroadcastedShape(shape, operand->shape, next))
      return std::nullopt;
    shape = std::move(next);
  }
  return shape;
}

/// Calls fn(flat index, offsets) for every element of `shape` in row-major
/// order, where offsets[k] is starts[k] + Σ index[d]·strides[k][d]: the
/// element each of several strided views reads there.
void forEachElement(ArrayRef<int64_t> shape, ArrayRef<int64_t> starts,
                    ArrayRef<SmallVector<int64_t>> strides,
                    llvm::function_ref<void(int64_t, ArrayRef<int64_t>)> fn) {
  int64_t rank = shape.size();
  SmallVector<int64_t> index(rank, 0), offsets(starts);
  int64_t count = ShapedType::getNumElements(shape);
  for (int64_t flat = 0; flat < count; ++flat) {
    fn(flat, offsets);
    // Advance the multi-index, keeping each view's offset in step.
    for (int64_t dim = rank - 1; dim >= 0; --dim) {
      for (auto [offset, viewStrides] : llvm::zip(offsets, strides))
        offset += viewStrides[dim];
      if (++index[dim] < shape[dim])
        break;
      for (auto [offset, viewStrides] : llvm::zip(offsets, strides))
        offset -= viewStrides[dim] * shape[dim];
      index[dim] = 0;
    }
  }
}

/// Calls fn(result index, operand indices) for every element of `shape`,
/// the broadcast of the operands' shapes.
void forEachBroadcast(ArrayRef<int64_t> shape,
                      ArrayRef<const Constant *> operands,
                      llvm::function_ref<void(int64_t, ArrayRef<int64_t>)> fn) {
  SmallVector<SmallVector<int64_t>> strides;
  for (const Constant *operand : operands)
    strides.push_back(broadcastStrides(operand->shape, shape.size()));
  SmallVector<int64_t> starts(operands.size(), 0);
  forEachElement(shape, starts, strides, fn);
}

using FloatFn = std::function<std::optional<double>(ArrayRef<double>)>;
using IntFn = std::function<std::optional<int64_t>(ArrayRef<int64_t>)>;

/// Applies `floatFn` (float operands) or `intFn` (integer and i1 operands)
/// elementwise with broadcasting; the result has `resultElementType`. Either
/// may be null (no fold for that kind), and either may refuse an element (no
/// fold at all), as does a result of more than `maxElements`.
std::optional<Constant> elementwise(ArrayRef<Constant> operands,
                                    Type resultElementType, FloatFn floatFn,
                                    IntFn intFn, int64_t maxElements) {
  SmallVector<const Constant *> pointers;
  for (const Constant &operand : operands)
    pointers.push_back(&operand);
  std::optional<SmallVector<int64_t>> shape = broadcastShape(pointers);
  bool floats = operands.front().isFloat();
  if (!shape || ShapedType::getNumElements(*shape) > maxElements ||
      (floats ? !floatFn : !intFn))
    return std::nullopt;
  Constant result = empty(*shape, resultElementType);
  bool refused = false;
  forEachBroadcast(*shape, pointers, [&](int64_t i, ArrayRef<int64_t> at) {
    if (refused)
      return;
    if (floats) {
      SmallVector<double> args;
      for (auto [operand, offset] : llvm::zip(operands, at))
        args.push_back(operand.asDouble(offset));
      std::optional<double> value = floatFn(args);
      refused = !value;
      if (!value)
        return;
      if (result.isFloat())
        result.floats[i] = *value;
      else
        result.ints[i] = static_cast<int64_t>(*value);
    } else {
      SmallVector<int64_t> args;
      for (auto [operand, offset] : llvm::zip(operands, at))
        args.push_back(operand.ints[offset]);
      std::optional<int64_t> value = intFn(args);
      refused = !value;
      if (!value)
        return;
      if (result.isFloat())
        result.floats[i] = static_cast<double>(*value);
      else
        result.ints[i] = *value;
    }
  });
  if (refused)
    return std::nullopt;
  return result;
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

double geluOf(double x, bool tanhApproximation) {
  if (tanhApproximation)
    return 0.5 * x *
           (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
  return 0.5 * x * (1.0 + std::erf(x * M_SQRT1_2));
}

/// Integer division (and remainder) by zero is a run-time error, and the
/// most negative value of a width over -1 overflows (the machine traps):
/// both are left to run time, never folded.
bool divisionIsDefined(int64_t dividend, int64_t divisor) {
  bool mostNegative = llvm::is_contained(
      std::initializer_list<int64_t>{INT8_MIN, INT16_MIN, INT32_MIN, INT64_MIN},
      dividend);
  return divisor != 0 && !(divisor == -1 && mostNegative);
}

/// The float and integer functions of a unary or binary op; null members
/// where the op has no such form.
struct ScalarFns {
  FloatFn onFloats;
  IntFn onInts;
};

template <typename F> FloatFn unaryFloat(F f) {
  return [f](ArrayRef<double> x) -> std::optional<double> { return f(x[0]); };
}
template <typename F> IntFn unaryInt(F f) {
  return [f](ArrayRef<int64_t> x) -> std::optional<int64_t> { return f(x[0]); };
}
template <typename F> FloatFn binaryFloat(F f) {
  return [f](ArrayRef<double> x) -> std::optional<double> {
    return f(x[0], x[1]);
  };
}
template <typename F> IntFn binaryInt(F f) {
  return [f](ArrayRef<int64_t> x) -> std::optional<int64_t> {
    return f(x[0], x[1]);
  };
}

std::optional<ScalarFns> scalarFunctions(Operation *op) {
  using R = std::optional<ScalarFns>;
  return llvm::TypeSwitch<Operation *, R>(op)
      .Case([](NegOp) {
        return ScalarFns{unaryFloat([](double x) { return -x; }),
                         unaryInt([](int64_t x) { return -x; })};
      })
      .Case([](AbsOp) {
        return ScalarFns{unaryFloat([](double x) { return std::fabs(x); }),
                         unaryInt([](int64_t x) { return x < 0 ? -x : x; })};
      })
      .Case([](ReluOp) {
        // max(x, 0) keeps NaN, as arith.maximumf does.
        return ScalarFns{unaryFloat([](double x) { return std::isnan(x) || x > 0 ? x : 0.0; }),
                         unaryInt([](int64_t x) { return x > 0 ? x : 0; })};
      })
      .Case([](ExpOp) { return ScalarFns{unaryFloat([](double x) { return std::exp(x); }), nullptr}; })
      .Case([](LogOp) { return ScalarFns{unaryFloat([](double x) { return std::log(x); }), nullptr}; })
      .Case([](SqrtOp) { return ScalarFns{unaryFloat([](double x) { return std::sqrt(x); }), nullptr}; })
      .Case([](RsqrtOp) { return ScalarFns{unaryFloat([](double x) { return 1.0 / std::sqrt(x); }), nullptr}; })
      .Case([](ReciprocalOp) { return ScalarFns{unaryFloat([](double x) { return 1.0 / x; }), nullptr}; })
      .Case([](ErfOp) { return ScalarFns{unaryFloat([](double x) { return std::erf(x); }), nullptr}; })
      .Case([](TanhOp) { return ScalarFns{unaryFloat([](double x) { return std::tanh(x); }), nullptr}; })
      .Case([](SigmoidOp) { return ScalarFns{unaryFloat(sigmoid), nullptr}; })
      .Case([](SiluOp) { return ScalarFns{unaryFloat([](double x) { return x * sigmoid(x); }), nullptr}; })
      .Case([](CosOp) { return ScalarFns{unaryFloat([](double x) { return std::cos(x); }), nullptr}; })
      .Case([](SinOp) { return ScalarFns{unaryFloat([](double x) { return std::sin(x); }), nullptr}; })
      .Case([](TanOp) { return ScalarFns{unaryFloat([](double x) { return std::tan(x); }), nullptr}; })
      .Case([](AsinOp) { return ScalarFns{unaryFloat([](double x) { return std::asin(x); }), nullptr}; })
      .Case([](AcosOp) { return ScalarFns{unaryFloat([](double x) { return std::acos(x); }), nullptr}; })
      .Case([](AtanOp) { return ScalarFns{unaryFloat([](double x) { return std::atan(x); }), nullptr}; })
      .Case([](SinhOp) { return ScalarFns{unaryFloat([](double x) { return std::sinh(x); }), nullptr}; })
      .Case([](CoshOp) { return ScalarFns{unaryFloat([](double x) { return std::cosh(x); }), nullptr}; })
      .Case([](AsinhOp) { return ScalarFns{unaryFloat([](double x) { return std::asinh(x); }), nullptr}; })
      .Case([](AcoshOp) { return ScalarFns{unaryFloat([](double x) { return std::acosh(x); }), nullptr}; })
      .Case([](AtanhOp) { return ScalarFns{unaryFloat([](double x) { return std::atanh(x); }), nullptr}; })
      .Case([](GeluOp gelu) {
        bool approximate = gelu.getTanhApproximation();
        return ScalarFns{unaryFloat([approximate](double x) { return geluOf(x, approximate); }), nullptr};
      })
      .Case([](FloorOp) { return ScalarFns{unaryFloat([](double x) { return std::floor(x); }), nullptr}; })
      .Case([](CeilOp) { return ScalarFns{unaryFloat([](double x) { return std::ceil(x); }), nullptr}; })
      // nearbyint rounds halves to even in the default rounding mode.
      .Case([](RoundOp) { return ScalarFns{unaryFloat([](double x) { return std::nearbyint(x); }), nullptr}; })
      .Case([](SignOp) {
        return ScalarFns{unaryFloat([](double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : x; }),
                         unaryInt([](int64_t x) -> int64_t { return (x > 0) - (x < 0); })};
      })
      .Case([](NotOp) { return ScalarFns{nullptr, unaryInt([](int64_t x) -> int64_t { return !x; })}; })
      .Case([](AddOp) {
        return ScalarFns{binaryFloat([](double x, double y) { return x + y; }),
                         binaryInt([](int64_t x, int64_t y) { return x + y; })};
      })
      .Case([](SubOp) {
        return ScalarFns{binaryFloat([](double x, double y) { return x - y; }),
                         binaryInt([](int64_t x, int64_t y) { return x - y; })};
      })
      .Case([](MulOp) {
        return ScalarFns{binaryFloat([](double x, double y) { return x * y; }),
                         binaryInt([](int64_t x, int64_t y) { return x * y; })};
      })
      .Case([](DivOp) {
        // Integer division truncates.
        return ScalarFns{binaryFloat([](double x, double y) { return x / y; }),
                         [](ArrayRef<int64_t> x) -> std::optional<int64_t> {
                           if (!divisionIsDefined(x[0], x[1]))
                             return std::nullopt;
                           return x[0] / x[1];
                         }};
      })
      .Case([](RemOp) {
        return ScalarFns{binaryFloat([](double x, double y) { return std::fmod(x, y); }),
                         [](ArrayRef<int64_t> x) -> std::optional<int64_t> {
                           if (!divisionIsDefined(x[0], x[1]))
                             return std::nullopt;
                           return x[0] % x[1];
                         }};
      })
      .Case([](ModOp) {
        return ScalarFns{binaryFloat([](double x, double y) {
                           double rem = std::fmod(x, y);
                           return rem != 0 && (rem < 0) != (y < 0) ? rem + y : rem;
                         }),
                         [](ArrayRef<int64_t> x) -> std::optional<int64_t> {
                           if (!divisionIsDefined(x[0], x[1]))
                             return std::nullopt;
                           int64_t rem = x[0] % x[1];
                           return rem != 0 && (rem < 0) != (x[1] < 0) ? rem + x[1] : rem;
                         }};
      })
      .Case([](PowOp) {
        return ScalarFns{binaryFloat([](double x, double y) { return std::pow(x, y); }),
                         [](ArrayRef<int64_t> x) -> std::optional<int64_t> {
                           if (x[1] < 0)
                             return std::nullopt;
                           // By squaring, wrapping as the run-time product does.
                           uint64_t result = 1, base = x[0];
                           for (uint64_t e = x[1]; e; e >>= 1, base *= base)
                             if (e & 1)
                               result *= base;
                           return static_cast<int64_t>(result);
                         }};
      })
      .Case([](MaxOp) {
        return ScalarFns{binaryFloat([](double x, double y) { return std::isnan(x) || x > y ? x : y; }),
                         binaryInt([](int64_t x, int64_t y) { return std::max(x, y); })};
      })
      .Case([](MinOp) {
        return ScalarFns{binaryFloat([](double x, double y) { return std::isnan(x) || x < y ? x : y; }),
                         binaryInt([](int64_t x, int64_t y) { return std::min(x, y); })};
      })
      .Case([](AndOp) { return ScalarFns{nullptr, binaryInt([](int64_t x, int64_t y) -> int64_t { return x && y; })}; })
      .Case([](OrOp) { return ScalarFns{nullptr, binaryInt([](int64_t x, int64_t y) -> int64_t { return x || y; })}; })
      .Case([](XorOp) { return ScalarFns{nullptr, binaryInt([](int64_t x, int64_t y) -> int64_t { return (x != 0) != (y != 0); })}; })
      .Case([](CompareOp compare) {
        auto test = [predicate = compare.getPredicate()](auto x, auto y) -> bool {
          switch (predicate) {
          case ComparePredicate::eq: return x == y;
          case ComparePredicate::ne: return x != y;
          case ComparePredicate::lt: return x < y;
          case ComparePredicate::le: return x <= y;
          case ComparePredicate::gt: return x > y;
          case ComparePredicate::ge: return x >= y;
          }
          return false;
        };
        return ScalarFns{binaryFloat([test](double x, double y) -> double { return test(x, y); }),
                         binaryInt([test](int64_t x, int64_t y) -> int64_t { return test(x, y); })};
      })
      .Default([](Operation *) { return std::nullopt; });
}

/// where(c, x, y): evaluated on the value operands' kind.
std::optional<Constant> evaluateWhere(ArrayRef<Constant> operands,
                                      Type elementType, int64_t maxElements) {
  // The condition is i1 (ints); pass it through the values' function as a
  // widened number, as a select on the first argument.
  SmallVector<Constant> widened(operands);
  if (operands[1].isFloat()) {
    widened[0].floats.assign(operands[0].ints.begin(), operands[0].ints.end());
    widened[0].ints.clear();
    widened[0].elementType = operands[1].elementType;
  }
  auto select = [](auto x) { return x[0] != 0 ? x[1] : x[2]; };
  return elementwise(
      widened, elementType,
      [select](ArrayRef<double> x) -> std::optional<double> { return select(x); },
      [select](ArrayRef<int64_t> x) -> std::optional<int64_t> { return select(x); },
      maxElements);
}

std::optional<Constant> evaluateCast(const Constant &input, Type to) {
  Constant result = empty(input.shape, to);
  for (int64_t i = 0; i < input.size(); ++i) {
    if (to.isInteger(1)) {
      result.ints[i] = input.asDouble(i) != 0;
    } else if (result.isFloat()) {
      // Through a double, an integer beyond 2^53 would be rounded twice.
      if (!input.isFloat() && std::abs(input.ints[i]) > (int64_t(1) << 53))
        return std::nullopt;
      result.floats[i] = input.asDouble(i);
    } else if (input.isFloat()) {
      // Truncation toward zero; out of the target's range (or NaN) the
      // conversion's result is undefined, so it is left to run time.
      double value = std::trunc(input.floats[i]);
      double limit = std::ldexp(1.0, to.getIntOrFloatBitWidth() - 1);
      if (!(value >= -limit && value < limit))
        return std::nullopt;
      result.ints[i] = static_cast<int64_t>(value);
    } else {
      result.ints[i] = input.ints[i];
    }
  }
  return result;
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

Constant withShape(Constant value, ArrayRef<int64_t> shape) {
  value.shape.assign(shape.begin(), shape.end());
  return value;
}

/// Product of dims [begin, end) of `shape`.
int64_t product(ArrayRef<int64_t> shape, size_t begin, size_t end) {
  int64_t result = 1;
  for (size_t i = begin; i < end; ++i)
    result *= shape[i];
  return result;
}

Constant evaluateTranspose(const Constant &input, ArrayRef<int64_t> perm) {
  SmallVector<int64_t> shape;
  for (int64_t axis : perm)
    shape.push_back(input.shape[axis]);
  Constant result = empty(shape, input.elementType);
  // broadcastStrides gives size-1 dims stride 0, which is as good as their
  // real stride: their only index is 0.
  SmallVector<int64_t> inputStrides = broadcastStrides(input.shape, perm.size());
  SmallVector<int64_t> strides;
  for (int64_t axis : perm)
    strides.push_back(inputStrides[axis]);
  forEachElement(shape, {0}, {strides}, [&](int64_t i, ArrayRef<int64_t> at) {
    copyElement(input, at[0], result, i);
  });
  return result;
}

Constant evaluateConcat(ArrayRef<Constant> inputs, int64_t axis) {
  SmallVector<int64_t> shape = inputs.front().shape;
  shape[axis] = 0;
  for (const Constant &input : inputs)
    shape[axis] += input.shape[axis];
  Constant result = empty(shape, inputs.front().elementType);
  int64_t outer = product(shape, 0, axis);
  int64_t to = 0;
  for (int64_t o = 0; o < outer; ++o)
    for (const Constant &input : inputs) {
      int64_t chunk = product(input.shape, axis, input.shape.size());
      for (int64_t i = 0; i < chunk; ++i)
        copyElement(input, o * chunk + i, result, to++);
    }
  return result;
}

std::optional<Constant> evaluateGather(const Constant &data,
                                       const Constant &indices, int64_t axis,
                                       int64_t maxElements) {
  int64_t extent = data.shape[axis];
  SmallVector<int64_t> shape(data.shape.begin(), data.shape.begin() + axis);
  llvm::append_range(shape, indices.shape);
  shape.append(data.shape.begin() + axis + 1, data.shape.end());
  if (ShapedType::getNumElements(shape) > maxElements)
    return std::nullopt;
  Constant result = empty(shape, data.elementType);
  int64_t outer = product(data.shape, 0, axis);
  int64_t inner = product(data.shape, axis + 1, data.shape.size());
  int64_t to = 0;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t index : indices.ints) {
      if (index < -extent || index >= extent)
        return std::nullopt; // the run-time check reports it
      if (index < 0)
        index += extent;
      for (int64_t i = 0; i < inner; ++i)
        copyElement(data, (o * extent + index) * inner + i, result, to++);
    }
  return result;
}

std::optional<Constant> evaluateSlice(const Constant &input,
                                      const Constant &starts,
                                      const Constant &ends,
                                      const Constant &steps,
                                      ArrayRef<int64_t> axes) {
  int64_t rank = input.shape.size();
  SmallVector<int64_t> first(rank, 0), step(rank, 1), shape(input.shape);
  for (auto [i, axis] : llvm::enumerate(axes)) {
    int64_t size = input.shape[axis];
    int64_t s = steps.ints[i];
    if (s == 0)
      return std::nullopt;
    SliceRange range = sliceRange(size, starts.ints[i], ends.ints[i], s);
    first[axis] = range.first;
    step[axis] = s;
    shape[axis] = range.count;
  }
  Constant result = empty(shape, input.elementType);
  // The slice is a strided view of the input: element `first` on, each dim
  // stepping `step` of the input's rows of that dim.
  SmallVector<int64_t> strides(rank), rowSizes(rank, 1);
  int64_t start = 0;
  for (int64_t dim = rank - 1; dim >= 0; --dim) {
    if (dim + 1 < rank)
      rowSizes[dim] = rowSizes[dim + 1] * input.shape[dim + 1];
    strides[dim] = step[dim] * rowSizes[dim];
    start += first[dim] * rowSizes[dim];
  }
  forEachElement(shape, {start}, {strides},
                 [&](int64_t i, ArrayRef<int64_t> at) {
                   copyElement(input, at[0], result, i);
                 });
  return result;
}

std::optional<Constant> evaluateExpand(const Constant &input,
                                       const Constant &requested,
                                       int64_t maxElements) {
  // Expand is a broadcast of the input against the requested shape.
  SmallVector<int64_t> shape;
  if (llvm::any_of(requested.ints, [](int64_t s) { return s < 0; }) ||
      !OpTrait::util::getBroadcastedShape(input.shape, requested.ints, shape) ||
      ShapedType::getNumElements(shape) > maxElements)
    return std::nullopt;
  Constant result = empty(shape, input.elementType);
  forEachBroadcast(shape, {&input}, [&](int64_t i, ArrayRef<int64_t> at) {
    copyElement(input, at[0], result, i);
  });
  return result;
}

/// range(start, limit, delta) as the lowering computes it: for floats the
/// count is ceil((limit - start) / delta) and each element start + i·delta,
/// every step rounded to the element type; for integers, exact.
std::optional<Constant> evaluateRange(ArrayRef<Constant> operands,
                                      Type elementType, int64_t maxElements) {
  constexpr auto nearest = APFloat::rmNearestTiesToEven;
  if (!isa<FloatType>(elementType)) {
    int64_t start = operands[0].ints[0], limit = operands[1].ints[0],
            delta = operands[2].ints[0];
    if (delta == 0) // a run-time error
      return std::nullopt;
    int64_t count = std::max<int64_t>(
        llvm::divideCeilSigned(limit - start, delta), 0);
    if (count > maxElements)
      return std::nullopt;
    Constant result = empty({count}, elementType);
    for (int64_t i = 0; i < count; ++i)
      result.ints[i] = start + i * delta;
    return result;
  }
  APFloat start = toFloatType(operands[0].floats[0], elementType);
  APFloat delta = toFloatType(operands[2].floats[0], elementType);
  APFloat steps = toFloatType(operands[1].floats[0], elementType);
  steps.subtract(start, nearest);
  steps.divide(delta, nearest);
  steps.roundToIntegral(APFloat::rmTowardPositive);
  double length = toDouble(steps);
  if (!(length <= static_cast<double>(maxElements)))
    return std::nullopt;
  int64_t count = std::max<int64_t>(static_cast<int64_t>(length), 0);
  Constant result = empty({count}, elementType);
  for (int64_t i = 0; i < count; ++i) {
    APFloat element = toFloatType(static_cast<double>(i), elementType);
    element.multiply(delta, nearest);
    element.add(start, nearest);
    result.floats[i] = toDouble(element);
  }
  return result;
}

/// The value of `op` computed from its constant `operands`, or nullopt when
/// the op is not one this pass evaluates or its run-time check would fail.
/// Ops whose result can be far larger than their operands (broadcasts,
/// expand, gather, range) give up above `maxElements` before allocating it.
std::optional<Constant> evaluate(Operation *op, ArrayRef<Constant> operands,
                                 int64_t maxElements) {
  auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
  Type elementType = resultType.getElementType();
  // Integers are held as int64 and computed on as signed: arithmetic on
  // unsigned values (rare, and never shape math) is left to run time. Data
  // movement keeps the bits, so it folds them.
  bool computesOnUnsigned =
      elementType.isUnsignedInteger() ||
      llvm::any_of(operands, [](const Constant &operand) {
        return operand.elementType.isUnsignedInteger();
      });
  if (std::optional<ScalarFns> fns = scalarFunctions(op)) {
    if (computesOnUnsigned)
      return std::nullopt;
    return elementwise(operands, elementType, fns->onFloats, fns->onInts,
                       maxElements);
  }
  using R = std::optional<Constant>;
  return llvm::TypeSwitch<Operation *, R>(op)
      .Case([&](WhereOp) {
        return evaluateWhere(operands, elementType, maxElements);
      })
      .Case([&](CastOp) -> R {
        if (computesOnUnsigned)
          return std::nullopt;
        return evaluateCast(operands[0], elementType);
      })
      .Case([&](ReshapeOp reshape) -> R {
        SmallVector<int64_t> shape = reshapeShape(operands[0].shape, operands[1].ints,
                                                  reshape.getAllowZero());
        if (llvm::any_of(shape, ShapedType::isDynamic) ||
            ShapedType::getNumElements(shape) !=
                ShapedType::getNumElements(operands[0].shape))
          return std::nullopt;
        return withShape(operands[0], shape);
      })
      .Case<SqueezeOp, UnsqueezeOp>([&](Operation *) -> R {
        // The elements stay in order; the static result type says where the
        // size-1 dims are (a squeezed dim of a constant is static).
        if (!resultType.hasStaticShape())
          return std::nullopt;
        return withShape(operands[0], resultType.getShape());
      })
      .Case([&](TransposeOp transpose) {
        return R(evaluateTranspose(operands[0], transpose.getPermutation()));
      })
      .Case([&](ConcatOp concat) {
        return R(evaluateConcat(operands, concat.getAxis()));
      })
      .Case([&](GatherOp gather) {
        return evaluateGather(operands[0], operands[1], gather.getAxis(),
                              maxElements);
      })
      .Case([&](SliceOp slice) {
        return evaluateSlice(operands[0], operands[1], operands[2], operands[3],
                             slice.getAxes());
      })
      .Case([&](ExpandOp) {
        return evaluateExpand(operands[0], operands[1], maxElements);
      })
      .Case([&](RangeOp) {
        return evaluateRange(operands, elementType, maxElements);
      })
      .Default([](Operation *) { return std::nullopt; });
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

struct FoldConstantsPass
    : public impl::KilnFoldConstantsBase<FoldConstantsPass> {
  using KilnFoldConstantsBase::KilnFoldConstantsBase;

  void runOnOperation() override {
    SmallVector<Operation *> ops;
    getOperation().walk([&](Operation *op) {
      if (isa<KilnDialect>(op->getDialect()) && !isa<ConstantOp>(op))
        ops.push_back(op);
    });
    // Each op first gets the result types its operands prove, so that the
    // dims read from it fold, and the shapes computed from those dims refine
    // the ops after it. Folding only replaces the op it folds, which comes
    // later in the list than everything it reads.
    for (Operation *op : ops) {
      if (auto reshape = dyn_cast<ReshapeOp>(op))
        canonicalizeReshapeShape(reshape);
      refineResultTypes(op);
      if (auto split = dyn_cast<SplitOp>(op))
        foldConstantSplit(split);
      else if (op->getNumResults() == 1 && !foldShapeQuery(op) && !foldShapeSlice(op) &&
               !foldIdentityReshape(op))
        foldConstantOperands(op);
    }
    // The kiln ops that folding left without users (the shape_of feeding a
    // folded gather, operands of folded ops) go too, last user first. kiln
    // ops have no regions, so the function's blocks hold them all.
    for (Block &block : getOperation().getBody())
      for (Operation &op : llvm::make_early_inc_range(llvm::reverse(block)))
        if (isa<KilnDialect>(op.getDialect()) && isOpTriviallyDead(&op))
          op.erase();
  }

  /// gather(shape_of(x), i) for a constant scalar i becomes dim(x, i), which
  /// is a constant when that dim of x is static; for a constant [i] (torch's
  /// split of a computed size) it becomes that dim unsqueezed.
  bool foldShapeQuery(Operation *op) {
    auto gather = dyn_cast<GatherOp>(op);
    auto shape = gather ? gather.getData().getDefiningOp<ShapeOfOp>() : nullptr;
    std::optional<Constant> index =
        shape ? readConstant(gather.getIndices()) : std::nullopt;
    if (!index || index->shape.size() > 1 ||
        (index->shape.size() == 1 && index->shape[0] != 1))
      return false;
    Value input = shape.getInput();
    int64_t rank = cast<RankedTensorType>(input.getType()).getRank();
    int64_t dim = index->ints[0] < 0 ? index->ints[0] + rank : index->ints[0];
    if (dim < 0 || dim >= rank)
      return false;
    OpBuilder builder(op);
    auto scalarType = RankedTensorType::get({}, builder.getI64Type());
    auto dimOp = builder.create<DimOp>(op->getLoc(), scalarType, input,
                                       builder.getI64IntegerAttr(dim));
    Operation *unsqueeze =
        index->shape.empty()
            ? nullptr
            : builder.create<UnsqueezeOp>(op->getLoc(), gather.getType(), dimOp,
                                          builder.getDenseI64ArrayAttr({0}));
    op->getResult(0).replaceAllUsesWith(unsqueeze ? Value(unsqueeze->getResult(0))
                                                  : dimOp.getResult());
    op->erase();
    foldConstantOperands(dimOp);
    if (unsqueeze)
      foldConstantOperands(unsqueeze);
    return true;
  }

  /// Rewrites a reshape's shape operand, when each entry is known (a
  /// constant or a dim of some tensor, or a multiple of one), as the list of
  /// those entries (buildShape), which the lowering reads
  /// entry by entry: the dynamo exporter's slices of shape_of would be read
  /// from memory at run time, leaving the sizes after them unbounded for the
  /// memory plan. Its -1 becomes what it stands for where inferredSize can
  /// say: [B, T, 64] to [B, -1, 4, 16] asks for T, and to [B, T, -1, 16]
  /// for 4 (which a dim read from another tensor equal to B hides from
  /// shape inference). Left as -1, T is known only as (B · T · 64) /
  /// (B · 64), whose bound the memory plan takes as max(B · T) / min(B):
  /// the batch's bound times too large, and so every buffer after it.
  void canonicalizeReshapeShape(ReshapeOp reshape) {
    std::optional<SmallVector<ShapeElement>> elements = shapeElements(reshape.getShape());
    if (!elements || !allKnown(*elements))
      return;
    std::optional<std::pair<size_t, ShapeElement>> inferred =
        inferredSize(reshape, *elements);
    if (!inferred && isEntryList(reshape.getShape()))
      return;
    if (inferred)
      (*elements)[inferred->first] = inferred->second;
    OpBuilder builder(reshape);
    reshape.getShapeMutable().assign(buildShape(builder, reshape.getLoc(), *elements));
  }

  /// Multiplies `product` by the static part of `source` (its size, or its
  /// factor) and leaves its dynamic part in `source` (factor 1); false on
  /// overflow.
  static bool takeStaticPart(DimSource &source, int64_t &product) {
    int64_t multiple = source.size ? *source.size : source.factor;
    source.factor = 1;
    return !llvm::MulOverflow(product, multiple, product);
  }

  /// The index of a reshape's one -1 entry and the size it stands for, when
  /// the other entries are constants and dims (or multiples of dims, B·H)
  /// whose sources (traceDim) account for all but at most one of the
  /// input's dynamic dim sources: that one, an input dim, times what the
  /// static sizes and factors left over leave, where it is a whole number.
  /// [B·H, -1, D] of [B, H, T, D] is T; [B, H, T, -1] of [B·H, T, S] is S.
  /// With several dynamic dims left there is none: the lowering's element
  /// count divided by the constants bounds their product exactly, where a
  /// product of dims, each bounded apart, would not be.
  static std::optional<std::pair<size_t, ShapeElement>>
  inferredSize(ReshapeOp reshape, ArrayRef<ShapeElement> elements) {
    Value input = reshape.getInput();
    auto inputType = cast<RankedTensorType>(input.getType());
    // The input's size: static sizes and factors times dynamic sources,
    // each with the input dim it came from.
    SmallVector<std::pair<DimSource, int64_t>> inputSources;
    int64_t inputStatic = 1;
    for (int64_t dim = 0; dim < inputType.getRank(); ++dim) {
      DimSource source = traceDim(input, dim);
      if (!takeStaticPart(source, inputStatic))
        return std::nullopt;
      if (!source.size)
        inputSources.push_back({source, dim});
    }
    // The entries' size, likewise, each dynamic source struck off the
    // input's.
    std::optional<size_t> inferredAt;
    int64_t entriesStatic = 1;
    for (auto [at, element] : llvm::enumerate(elements)) {
      if (element.isConstant(-1)) {
        if (inferredAt)
          return std::nullopt;
        inferredAt = at;
        continue;
      }
      std::optional<DimSource> source;
      if (element.isConstant(0) && !reshape.getAllowZero()) {
        if (static_cast<int64_t>(at) >= inputType.getRank())
          return std::nullopt;
        source = traceDim(input, at);
      } else if (element.tensor) {
        source = traceElement(element);
      } else if (element.constant && *element.constant > 0) {
        source = DimSource{element.constant, nullptr, 0};
      }
      if (!source || !takeStaticPart(*source, entriesStatic))
        return std::nullopt;
      if (source->size)
        continue;
      auto match = llvm::find_if(inputSources, [&](const auto &entry) {
        return entry.first == *source;
      });
      if (match == inputSources.end())
        return std::nullopt;
      inputSources.erase(match);
    }
    if (!inferredAt || inputStatic % entriesStatic != 0 || inputSources.size() > 1)
      return std::nullopt;
    int64_t factor = inputStatic / entriesStatic;
    if (inputSources.empty())
      return std::make_pair(*inferredAt, ShapeElement{factor, nullptr, 0});
    return std::make_pair(*inferredAt,
                          ShapeElement{std::nullopt, input, inputSources.front().second, factor});
  }

  static bool allKnown(ArrayRef<ShapeElement> elements) {
    return llvm::all_of(elements, [](const ShapeElement &element) {
      return element.constant || element.tensor;
    });
  }

  /// Whether `shape` is already a constant or a concat of one-entry
  /// constants and unsqueezed kiln.dim values (or multiples of them).
  static bool isEntryList(Value shape) {
    if (shape.getDefiningOp<ConstantOp>())
      return true;
    auto concat = shape.getDefiningOp<ConcatOp>();
    return concat && llvm::all_of(concat.getInputs(), [](Value entry) {
             auto unsqueeze = entry.getDefiningOp<UnsqueezeOp>();
             if (entry.getDefiningOp<ConstantOp>())
               return true;
             Value scalar = unsqueeze ? unsqueeze.getInput() : Value();
             if (auto mul = scalar ? scalar.getDefiningOp<MulOp>() : nullptr)
               scalar = mul.getRhs().getDefiningOp<ConstantOp>() ? mul.getLhs() : Value();
             return scalar && scalar.getDefiningOp<DimOp>();
           });
  }

  /// A slice of shape_of(x) with constant bounds (the dynamo exporter's
  /// x.shape[1:3]) becomes the list of x's dims it picks, which the
  /// lowerings of reshape, expand and range read entry by entry instead of
  /// loading from memory at run time, where the memory plan cannot bound
  /// the sizes they give.
  bool foldShapeSlice(Operation *op) {
    auto slice = dyn_cast<SliceOp>(op);
    if (!slice || !slice.getInput().getDefiningOp<ShapeOfOp>() ||
        !slice.getType().hasStaticShape())
      return false;
    std::optional<SmallVector<ShapeElement>> elements = shapeElements(slice.getResult());
    if (!elements || !allKnown(*elements) ||
        static_cast<int64_t>(elements->size()) != slice.getType().getNumElements())
      return false;
    OpBuilder builder(slice);
    Value list = buildShape(builder, slice.getLoc(), *elements);
    slice.getResult().replaceAllUsesWith(list);
    slice.erase();
    return true;
  }

  /// A reshape of x to a shape that spells x's own dims in order (each entry
  /// x's dim there, a dim provably equal to it, or 0 copying it) but for at
  /// most one -1, which is then the dim left over, is x: Hugging Face's
  /// input_ids.view(-1, T). Left in place, its -1 is known only as
  /// (B · T) / T, whose bound the memory plan takes as max(B · T) / min(T):
  /// 128 times the batch at T = 128, and so every activation buffer after
  /// it.
  bool foldIdentityReshape(Operation *op) {
    auto reshape = dyn_cast<ReshapeOp>(op);
    if (!reshape || reshape.getInput().getType() != reshape.getType())
      return false;
    std::optional<SmallVector<ShapeElement>> elements = shapeElements(reshape.getShape());
    Value input = reshape.getInput();
    if (!elements ||
        static_cast<int64_t>(elements->size()) != reshape.getType().getRank())
      return false;
    auto spellsDim = [&](const ShapeElement &element, int64_t dim) {
      if (keepsInputDim(reshape, element, dim))
        return true;
      DimSource source = traceDim(input, dim);
      return !source.size && traceElement(element) == source;
    };
    int inferred = 0;
    for (auto [dim, element] : llvm::enumerate(*elements)) {
      if (element.isConstant(-1))
        ++inferred;
      else if (!spellsDim(element, dim))
        return false;
    }
    if (inferred > 1)
      return false;
    reshape.getResult().replaceAllUsesWith(input);
    reshape.erase();
    return true;
  }

  void foldConstantOperands(Operation *op) {
    auto resultType = dyn_cast<RankedTensorType>(op->getResult(0).getType());
    if (!resultType)
      return;
    OpBuilder builder(op);
    // Shape queries of static shapes need no constant operands.
    SmallVector<OpFoldResult> folded;
    if (isa<ShapeOfOp, DimOp, SizeOp>(op) &&
        succeeded(op->fold(folded)) && folded.size() == 1)
      if (auto value = dyn_cast_if_present<DenseElementsAttr>(
              dyn_cast_if_present<Attribute>(folded.front()))) {
        replace(op, builder, value);
        return;
      }
    SmallVector<Constant> operands;
    for (Value operand : op->getOperands()) {
      std::optional<Constant> constant = readConstant(operand);
      if (!constant)
        return;
      operands.push_back(std::move(*constant));
    }
    if (operands.empty())
      return;
    std::optional<Constant> result = evaluate(op, operands, maxElements);
    if (!result || result->size() > maxElements ||
        failed(verifyCompatibleShape(result->shape, resultType.getShape())))
      return;
    replace(op, builder, toAttribute(*result));
  }

  /// A split of a constant by static sizes as one constant per piece: torch's
  /// repeat_interleave splits its constant repeats into one per element,
  /// and the shapes it expands to are computed from them.
  void foldConstantSplit(SplitOp split) {
    std::optional<Constant> input = readConstant(split.getInput());
    if (!input || split.getSplitSizes() ||
        llvm::any_of(split.getSizes(), [](int64_t size) { return size < 0; }))
      return;
    const int64_t axis = split.getAxis();
    SmallVector<Constant> pieces;
    int64_t begin = 0;
    auto bound = [&](int64_t value) {
      Constant bound = empty({1}, IntegerType::get(split.getContext(), 64));
      bound.ints[0] = value;
      return bound;
    };
    for (int64_t size : split.getSizes()) {
      Constant start = bound(begin), end = bound(begin + size), step = bound(1);
      std::optional<Constant> piece = evaluateSlice(*input, start, end, step, {axis});
      if (!piece)
        return;
      pieces.push_back(std::move(*piece));
      begin += size;
    }
    OpBuilder builder(split);
    for (auto [result, piece] : llvm::zip(split.getResults(), pieces))
      result.replaceAllUsesWith(constantFor(builder, split.getLoc(), result, toAttribute(piece)));
    split.erase();
  }

  /// Replaces `op` with a constant `value` (see constantFor).
  void replace(Operation *op, OpBuilder &builder, DenseElementsAttr value) {
    op->getResult(0).replaceAllUsesWith(
        constantFor(builder, op->getLoc(), op->getResult(0), value));
    op->erase();
  }

  /// A constant `value` to stand for `result`, cast to its type when that
  /// is less static.
  static Value constantFor(OpBuilder &builder, Location loc, Value result,
                           DenseElementsAttr value) {
    Value constant = builder.create<ConstantOp>(loc, value.getType(), value);
    if (constant.getType() != result.getType())
      constant = builder.create<tensor::CastOp>(loc, result.getType(), constant);
    return constant;
  }
};

} // namespace
} // namespace kiln
