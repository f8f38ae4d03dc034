//===- PlanMemory.cpp - The kiln-plan-memory pass -------------------------===//
//
// Static memory planning: the entry function's intermediate buffers get
// offsets in one arena, reusing memory between buffers whose lifetimes do not
// overlap. See Passes.td for the rules.
//
//===----------------------------------------------------------------------===//
#include "compiler/Codegen/Common/BufferViews.h"
#include "compiler/Codegen/Common/Passes.h"
#include "dialects/Kiln/IR/KilnDialect.h"
#include "kiln/abi/artifact_format.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/EquivalenceClasses.h"

#include <algorithm>
#include <map>
#include <tuple>

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_PLANMEMORY
#include "compiler/Codegen/Common/Passes.h.inc"

namespace {

//===----------------------------------------------------------------------===//
// Upper bounds of dynamic sizes
//===----------------------------------------------------------------------===//

/// The values an integer may take, [min, max]; every operation saturates to
/// "unknown" (nullopt) on overflow.
struct Range {
  int64_t min, max;
};
using MaybeRange = std::optional<Range>;

MaybeRange hull(std::initializer_list<std::optional<int64_t>> values) {
  Range range{INT64_MAX, INT64_MIN};
  for (std::optional<int64_t> value : values) {
    if (!value)
      return std::nullopt;
    range.min = std::min(range.min, *value);
    range.max = std::max(range.max, *value);
  }
  return range;
}

std::optional<int64_t> add(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_add_overflow(a, b, &r) ? std::nullopt : std::optional(r);
}
std::optional<int64_t> sub(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_sub_overflow(a, b, &r) ? std::nullopt : std::optional(r);
}
std::optional<int64_t> mul(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_mul_overflow(a, b, &r) ? std::nullopt : std::optional(r);
}

MaybeRange addRanges(Range a, Range b) {
  return hull({add(a.min, b.min), add(a.max, b.max)});
}
MaybeRange multiplyRanges(Range a, Range b) {
  return hull({mul(a.min, b.min), mul(a.min, b.max), mul(a.max, b.min),
               mul(a.max, b.max)});
}

enum class Rounding { TowardZero, Floor, Ceil };

/// a / b rounded as asked; b != 0 and not INT64_MIN / -1.
int64_t divide(int64_t a, int64_t b, Rounding rounding) {
  int64_t quotient = a / b;
  bool inexact = quotient * b != a;
  bool negative = (a < 0) != (b < 0);
  if (inexact && rounding == Rounding::Floor && negative)
    --quotient;
  if (inexact && rounding == Rounding::Ceil && !negative)
    ++quotient;
  return quotient;
}

/// Division is monotone in each operand while the divisor keeps its sign, so
/// the corners bound it.
MaybeRange divideRanges(Range a, Range b, Rounding rounding) {
  if ((b.min <= 0 && b.max >= 0) || (a.min == INT64_MIN && b.min <= -1 && b.max >= -1))
    return std::nullopt;
  return hull({divide(a.min, b.min, rounding), divide(a.min, b.max, rounding),
               divide(a.max, b.min, rounding), divide(a.max, b.max, rounding)});
}

/// Bounds of the index arithmetic that computes dynamic sizes, from the
/// entry arguments' declared dim bounds.
class SizeBounds {
public:
  explicit SizeBounds(func::FuncOp func) {
    for (BlockArgument argument : func.getArguments()) {
      if (auto maxima = func.getArgAttrOfType<DenseI64ArrayAttr>(
              argument.getArgNumber(), KilnDialect::kDimMaxAttrName))
        dimMax[argument] = maxima;
      if (auto minima = func.getArgAttrOfType<DenseI64ArrayAttr>(
              argument.getArgNumber(), KilnDialect::kDimMinAttrName))
        dimMin[argument] = minima;
    }
  }

  MaybeRange of(Value value) {
    if (assumption && assumption->value == value)
      return assumption->range;
    auto cached = currentCache().find(value);
    if (cached != currentCache().end()) {
      if (!cached->second && !unboundedLeaf)
        unboundedLeaf = leafOf.lookup(value);
      return cached->second;
    }
    // Sizes chain through every reshape of the model; far deeper chains are
    // not worth following.
    if (depth > 4096)
      return std::nullopt;
    ++depth;
    MaybeRange range = fitsType(compute(value), value.getType());
    --depth;
    if (!range) {
      if (!unboundedLeaf)
        unboundedLeaf = value;
      leafOf[value] = unboundedLeaf;
    }
    currentCache()[value] = range;
    return range;
  }

  /// Starts recording what the next unbounded size depends on.
  void forgetUnboundedLeaf() { unboundedLeaf = nullptr; }

  /// What the last unbounded size depends on, for the report: the innermost
  /// value without a bound, as an op name or an argument number.
  std::string takeUnboundedLeaf() {
    std::string leaf = "?";
    auto dim = unboundedLeaf ? unboundedLeaf.getDefiningOp<memref::DimOp>() : nullptr;
    auto argument = dim ? dyn_cast<BlockArgument>(dim.getSource()) : nullptr;
    if (argument && dim.getConstantIndex())
      leaf = "dim " + std::to_string(*dim.getConstantIndex()) + " of argument #" +
             std::to_string(argument.getArgNumber()) + ", which has no " +
             KilnDialect::kDimMaxAttrName.str();
    else if (auto blockArgument = dyn_cast_or_null<BlockArgument>(unboundedLeaf))
      leaf = "argument #" + std::to_string(blockArgument.getArgNumber());
    else if (unboundedLeaf)
      leaf = unboundedLeaf.getDefiningOp()->getName().getStringRef().str();
    unboundedLeaf = nullptr;
    return leaf;
  }

private:
  /// `range` when every value in it is representable in `type` (index is 64
  /// bits wide); else unknown, since the arithmetic evaluated in 64 bits
  /// would have wrapped in the narrower type.
  static MaybeRange fitsType(MaybeRange range, Type type) {
    auto integer = dyn_cast<IntegerType>(type);
    if (!range || !integer || integer.getWidth() >= 64)
      return range;
    int64_t width = integer.getWidth();
    int64_t lowest = -(int64_t(1) << (width - 1)), highest = (int64_t(1) << (width - 1)) - 1;
    if (range->min < lowest || range->max > highest)
      return std::nullopt;
    return range;
  }

  MaybeRange compute(Value value) {
    Operation *op = value.getDefiningOp();
    if (!op)
      return std::nullopt;
    IntegerAttr constant;
    if (matchPattern(value, m_Constant(&constant))) {
      if (constant.getValue().getBitWidth() > 64)
        return std::nullopt;
      return Range{constant.getValue().getSExtValue(),
                   constant.getValue().getSExtValue()};
    }
    if (auto dim = dyn_cast<memref::DimOp>(op))
      return dimRange(dim);
    if (auto apply = dyn_cast<affine::AffineApplyOp>(op))
      return affineRange(apply.getAffineMap().getResult(0), apply.getOperands(),
                         apply.getAffineMap().getNumDims());
    // Casts keep the value where it fits the result type (checked by
    // fitsType); the unsigned ones also need it non-negative.
    if (isa<arith::IndexCastOp, arith::ExtSIOp, arith::TruncIOp>(op))
      return of(op->getOperand(0));
    if (isa<arith::IndexCastUIOp, arith::ExtUIOp>(op)) {
      MaybeRange range = of(op->getOperand(0));
      return range && range->min >= 0 ? range : std::nullopt;
    }
    if (auto select = dyn_cast<arith::SelectOp>(op))
      return selectRange(select);
    if (!isa<arith::AddIOp, arith::SubIOp, arith::MulIOp, arith::MaxSIOp,
             arith::MinSIOp, arith::MaxUIOp, arith::MinUIOp, arith::DivSIOp,
             arith::DivUIOp, arith::FloorDivSIOp, arith::CeilDivSIOp,
             arith::CeilDivUIOp, arith::RemSIOp, arith::RemUIOp>(op))
      return std::nullopt;
    MaybeRange a = of(op->getOperand(0)), b = of(op->getOperand(1));
    if (!a || !b)
      return std::nullopt;
    return binaryRange(op, *a, *b);
  }

  /// The outcome of `condition` when the ranges of the compared values
  /// decide it.
  std::optional<bool> decide(Value condition) {
    auto compare = condition.getDefiningOp<arith::CmpIOp>();
    if (!compare)
      return std::nullopt;
    MaybeRange a = of(compare.getLhs()), b = of(compare.getRhs());
    if (!a || !b)
      return std::nullopt;
    bool disjoint = a->max < b->min || b->max < a->min;
    bool sameSingleValue = a->min == a->max && b->min == b->max && a->min == b->min;
    switch (compare.getPredicate()) {
    case arith::CmpIPredicate::eq:
    case arith::CmpIPredicate::ne: {
      bool equal = compare.getPredicate() == arith::CmpIPredicate::eq;
      if (disjoint)
        return !equal;
      if (sameSingleValue)
        return equal;
      return std::nullopt;
    }
    case arith::CmpIPredicate::slt:
      if (a->max < b->min) return true;
      if (a->min >= b->max) return false;
      return std::nullopt;
    case arith::CmpIPredicate::sle:
      if (a->max <= b->min) return true;
      if (a->min > b->max) return false;
      return std::nullopt;
    case arith::CmpIPredicate::sgt:
      if (a->min > b->max) return true;
      if (a->max <= b->min) return false;
      return std::nullopt;
    case arith::CmpIPredicate::sge:
      if (a->min >= b->max) return true;
      if (a->max < b->min) return false;
      return std::nullopt;
    default:
      return std::nullopt;
    }
  }

  /// The range of `value` where `condition` holds (`holds`). When the
  /// condition compares x for equality with a constant k, x is known there:
  /// k itself, or its range without k where k bounds it. That keeps the
  /// lowering's guards tight: select(x == 0, copied, x) for ONNX's "0 copies
  /// the input's size", where copied is 0 whenever x is.
  MaybeRange rangeWhere(Value value, Value condition, bool holds) {
    auto compare = condition.getDefiningOp<arith::CmpIOp>();
    IntegerAttr constant;
    if (!compare || !matchPattern(compare.getRhs(), m_Constant(&constant)) ||
        (compare.getPredicate() != arith::CmpIPredicate::eq &&
         compare.getPredicate() != arith::CmpIPredicate::ne))
      return of(value);
    Value compared = compare.getLhs();
    MaybeRange range = of(compared);
    if (!range)
      return of(value);
    bool equal = (compare.getPredicate() == arith::CmpIPredicate::eq) == holds;
    int64_t k = constant.getValue().getSExtValue();
    Range known = *range;
    if (equal) {
      known = {k, k};
    } else if (range->min < range->max && k == range->min) {
      ++known.min;
    } else if (range->min < range->max && k == range->max) {
      --known.max;
    }
    return ofAssuming(value, compared, known);
  }

  MaybeRange selectRange(arith::SelectOp select) {
    Value condition = select.getCondition();
    std::optional<bool> outcome = decide(condition);
    if (outcome)
      return of(*outcome ? select.getTrueValue() : select.getFalseValue());
    MaybeRange a = rangeWhere(select.getTrueValue(), condition, true);
    MaybeRange b = rangeWhere(select.getFalseValue(), condition, false);
    if (!a || !b)
      return std::nullopt;
    return Range{std::min(a->min, b->min), std::max(a->max, b->max)};
  }

  MaybeRange binaryRange(Operation *op, Range a, Range b) {
    if (isa<arith::AddIOp>(op))
      return addRanges(a, b);
    if (isa<arith::SubIOp>(op))
      return hull({sub(a.min, b.max), sub(a.max, b.min)});
    if (isa<arith::MulIOp>(op))
      return multiplyRanges(a, b);
    // Unsigned operations agree with signed ones on non-negative operands.
    bool nonNegative = a.min >= 0 && b.min >= 0;
    if (isa<arith::MaxSIOp>(op) || (isa<arith::MaxUIOp>(op) && nonNegative))
      return Range{std::max(a.min, b.min), std::max(a.max, b.max)};
    if (isa<arith::MinSIOp>(op) || (isa<arith::MinUIOp>(op) && nonNegative))
      return Range{std::min(a.min, b.min), std::min(a.max, b.max)};
    if (isa<arith::DivSIOp>(op) || (isa<arith::DivUIOp>(op) && nonNegative))
      return divideRanges(a, b, Rounding::TowardZero);
    if (isa<arith::FloorDivSIOp>(op))
      return divideRanges(a, b, Rounding::Floor);
    if (isa<arith::CeilDivSIOp>(op) || (isa<arith::CeilDivUIOp>(op) && nonNegative))
      return divideRanges(a, b, Rounding::Ceil);
    if (isa<arith::RemSIOp>(op) || (isa<arith::RemUIOp>(op) && nonNegative)) {
      if (b.min <= 0 && b.max >= 0)
        return std::nullopt;
      // |a % b| < |b|, with the sign of a.
      int64_t limit = std::max(b.max, b.min == INT64_MIN ? INT64_MAX : -b.min) - 1;
      return Range{a.min < 0 ? -limit : 0, a.max > 0 ? limit : 0};
    }
    return std::nullopt;
  }

  MaybeRange dimRange(memref::DimOp dim) {
    std::optional<int64_t> index = dim.getConstantIndex();
    auto type = dyn_cast<MemRefType>(dim.getSource().getType());
    if (!index || !type || *index < 0 || *index >= type.getRank())
      return std::nullopt;
    if (!type.isDynamicDim(*index))
      return Range{type.getDimSize(*index), type.getDimSize(*index)};
    Value source = dim.getSource();
    if (auto argument = dyn_cast<BlockArgument>(source)) {
      auto maxima = dimMax.find(argument);
      if (maxima == dimMax.end())
        return std::nullopt;
      auto minima = dimMin.find(argument);
      int64_t min = minima == dimMin.end() ? 0 : minima->second[*index];
      return Range{std::min(min, maxima->second[*index]), maxima->second[*index]};
    }
    if (auto alloc = source.getDefiningOp<memref::AllocOp>())
      return of(alloc.getDynamicSizes()[type.getDynamicDimIndex(*index)]);
    return std::nullopt;
  }

  MaybeRange affineRange(AffineExpr expr, ValueRange operands, unsigned numDims) {
    if (auto constant = dyn_cast<AffineConstantExpr>(expr))
      return Range{constant.getValue(), constant.getValue()};
    if (auto dim = dyn_cast<AffineDimExpr>(expr))
      return of(operands[dim.getPosition()]);
    if (auto symbol = dyn_cast<AffineSymbolExpr>(expr))
      return of(operands[numDims + symbol.getPosition()]);
    auto binary = cast<AffineBinaryOpExpr>(expr);
    MaybeRange a = affineRange(binary.getLHS(), operands, numDims);
    MaybeRange b = affineRange(binary.getRHS(), operands, numDims);
    if (!a || !b)
      return std::nullopt;
    switch (binary.getKind()) {
    case AffineExprKind::Add:
      return addRanges(*a, *b);
    case AffineExprKind::Mul:
      return multiplyRanges(*a, *b);
    case AffineExprKind::FloorDiv:
      return divideRanges(*a, *b, Rounding::Floor);
    case AffineExprKind::CeilDiv:
      return divideRanges(*a, *b, Rounding::Ceil);
    case AffineExprKind::Mod:
      // Affine mod is non-negative for a positive modulus.
      if (b->min <= 0)
        return std::nullopt;
      return Range{0, b->max - 1};
    default:
      return std::nullopt;
    }
  }

  /// A value's range taken as given while evaluating one side of a select.
  struct Assumption {
    Value value;
    Range range;
  };

  DenseMap<Value, MaybeRange> &currentCache() {
    if (!assumption)
      return cache;
    return assumedCaches[{assumption->value.getAsOpaquePointer(),
                          assumption->range.min, assumption->range.max}];
  }

  /// The range of `value` given that `assumed` lies in `range`. One level
  /// only, which keeps the work linear in the number of selects.
  MaybeRange ofAssuming(Value value, Value assumed, Range range) {
    if (assumption)
      return of(value);
    assumption = Assumption{assumed, range};
    MaybeRange result = of(value);
    assumption.reset();
    return result;
  }

  DenseMap<BlockArgument, DenseI64ArrayAttr> dimMax, dimMin;
  Value unboundedLeaf;
  DenseMap<Value, Value> leafOf;
  std::optional<Assumption> assumption;
  DenseMap<Value, MaybeRange> cache;
  std::map<std::tuple<void *, int64_t, int64_t>, DenseMap<Value, MaybeRange>>
      assumedCaches;
  int depth = 0;
};

//===----------------------------------------------------------------------===//
// Liveness
//===----------------------------------------------------------------------===//

/// An intermediate buffer of the entry block and its lifetime there.
struct Buffer {
  memref::AllocOp alloc;
  int64_t bytes = 0; // upper bound, a multiple of the arena alignment
  int64_t first = INT64_MAX, last = -1; // positions of first and last use
  /// The op at `last` when the buffer itself (no view of it) is one of its
  /// operands and nothing else uses the buffer there: the candidate for
  /// writing a result in place.
  OpOperand *lastUse = nullptr;
  /// Likewise for the op at `first`.
  OpOperand *firstUse = nullptr;
  /// The buffer whose bytes this one's first op overwrites in place.
  std::optional<unsigned> inPlaceOf;
};

/// Whether `name` is one of the runtime's microkernels, which use the
/// buffers they are given only during the call.
bool isUkernel(StringRef name) { return name.starts_with(kUkernelPrefix); }

/// The microkernel parameter struct that `user` stores `value` into, if it
/// is such a store.
memref::AllocaOp parameterStructStoredInto(Operation *user, Value value) {
  auto store = dyn_cast<memref::StoreOp>(user);
  if (!store || store.getValueToStore() != value)
    return nullptr;
  auto params = store.getMemRef().getDefiningOp<memref::AllocaOp>();
  return params && params->hasAttr(kUkernelParamsAttrName) ? params : nullptr;
}

/// Why a buffer stays on the heap, or "" when it can be planned.
using Verdict = std::string;

/// Fills in the lifetime of `buffer` from the uses of its memref and of
/// every value derived from it: views, and the pointers and descriptors that
/// calls take. Nested uses count at their ancestor in `block`.
Verdict traceUses(Buffer &buffer, Block &block,
                  const DenseMap<Operation *, int64_t> &position) {
  Value root = buffer.alloc.getResult();
  SmallVector<Value> worklist = {root};
  DenseSet<Value> derived = {root};
  DenseMap<int64_t, int> usesAt; // uses per position
  auto derive = [&](ValueRange values) {
    for (Value value : values)
      if (derived.insert(value).second)
        worklist.push_back(value);
  };
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    for (OpOperand &use : value.getUses()) {
      Operation *user = use.getOwner();
      if (isa<func::ReturnOp>(user))
        return "returned";
      if (isa<memref::DeallocOp, memref::ReallocOp>(user))
        return "freed or reallocated explicitly";
      if (auto call = dyn_cast<CallOpInterface>(user)) {
        auto callee = dyn_cast_if_present<SymbolRefAttr>(call.getCallableForCallee());
        if (!callee || !isUkernel(callee.getLeafReference()))
          return "passed to a call that may keep it";
      }
      // An address as a number may be copied anywhere: it is followed through
      // ops without memory effects and into microkernel parameter structs
      // (to the calls that read them), and anything else that takes it
      // keeps the buffer on the heap.
      bool isAddress = !isa<MemRefType>(value.getType());
      bool isTerminator = user->hasTrait<OpTrait::IsTerminator>();
      memref::AllocaOp params =
          isAddress ? parameterStructStoredInto(user, value) : nullptr;
      if (isAddress && !params && !isa<CallOpInterface>(user) &&
          (isTerminator ? !isa<RegionBranchOpInterface>(user->getParentOp())
                        : !isMemoryEffectFree(user)))
        return "its address reaches " + user->getName().getStringRef().str();
      Operation *anchor = block.findAncestorOpInBlock(*user);
      if (!anchor)
        return "used outside the entry block";
      int64_t at = position.lookup(anchor);
      if (at < buffer.first) {
        buffer.first = at;
        buffer.firstUse = nullptr;
      }
      if (at > buffer.last) {
        buffer.last = at;
        buffer.lastUse = nullptr;
      }
      if (++usesAt[at] == 1 && value == root && user == anchor) {
        if (at == buffer.first)
          buffer.firstUse = &use;
        if (at == buffer.last)
          buffer.lastUse = &use;
      }
      // Sizes and loaded elements are data, not the buffer's address.
      if (isa<memref::DimOp, memref::LoadOp>(user))
        continue;
      if (params) {
        derive(params.getResult());
        continue;
      }
      if (auto metadata = dyn_cast<memref::ExtractStridedMetadataOp>(user)) {
        derive(metadata.getBaseBuffer());
        continue;
      }
      derive(user->getResults());
      // A terminator in a nested region hands its operands to its parent.
      if (isTerminator && user != anchor)
        derive(user->getParentOp()->getResults());
    }
  }
  if (buffer.last < 0) // unused: it lives at its alloc only
    buffer.first = buffer.last = position.lookup(buffer.alloc);
  if (usesAt[buffer.first] > 1)
    buffer.firstUse = nullptr;
  if (usesAt[buffer.last] > 1)
    buffer.lastUse = nullptr;
  return "";
}

/// The bytes of one element in memory: index is 64-bit on the CPU targets;
/// i1 takes a byte. None for types the planner does not size.
std::optional<int64_t> elementBytes(Type type) {
  if (type.isIndex())
    return 8;
  if (!type.isIntOrFloat())
    return std::nullopt;
  // Other widths (i24, f80) are padded in memory in target-specific ways.
  switch (type.getIntOrFloatBitWidth()) {
  case 1:
  case 8:
    return 1;
  case 16:
    return 2;
  case 32:
    return 4;
  case 64:
    return 8;
  default:
    return std::nullopt;
  }
}

/// Whether `op` can write its result over `input`, the buffer it reads last:
/// an elementwise generic that reads each element of `input` only where it
/// writes the same element of `output`.
bool canWriteInPlace(Operation *op, OpOperand *input, OpOperand *output) {
  auto generic = dyn_cast<linalg::GenericOp>(op);
  if (!generic || generic.getNumDpsInits() != 1 ||
      generic.getNumParallelLoops() != generic.getNumLoops() ||
      !generic.isDpsInput(input) || !generic.isDpsInit(output))
    return false;
  auto inputType = cast<MemRefType>(input->get().getType());
  auto outputType = cast<MemRefType>(output->get().getType());
  return generic.getMatchingIndexingMap(input).isIdentity() &&
         generic.getMatchingIndexingMap(output).isIdentity() &&
         elementBytes(inputType.getElementType()) ==
             elementBytes(outputType.getElementType());
}

//===----------------------------------------------------------------------===//
// Placement
//===----------------------------------------------------------------------===//

/// Buffers that share memory (a chain of in-place writes), placed as one.
struct Group {
  SmallVector<unsigned> members;
  int64_t bytes = 0, first = INT64_MAX, last = -1;
  int64_t offset = 0;
};

/// Greedy by size, best fit: the largest groups first, each in the smallest
/// gap that holds it between the groups already placed that are live at the
/// same time, else after the last of them. Returns the arena size.
int64_t placeGroups(std::vector<Group> &groups) {
  std::vector<unsigned> order(groups.size());
  for (unsigned i = 0; i < order.size(); ++i)
    order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](unsigned a, unsigned b) {
    return groups[a].bytes != groups[b].bytes ? groups[a].bytes > groups[b].bytes
                                              : groups[a].first < groups[b].first;
  });
  std::vector<unsigned> placed;
  int64_t arenaBytes = 0;
  for (unsigned index : order) {
    Group &group = groups[index];
    std::vector<const Group *> live;
    for (unsigned other : placed)
      if (groups[other].first <= group.last && group.first <= groups[other].last)
        live.push_back(&groups[other]);
    std::sort(live.begin(), live.end(), [](const Group *a, const Group *b) {
      return a->offset < b->offset;
    });
    int64_t cursor = 0, bestGap = INT64_MAX;
    std::optional<int64_t> best;
    for (const Group *other : live) {
      int64_t gap = other->offset - cursor;
      if (gap >= group.bytes && gap < bestGap) {
        best = cursor;
        bestGap = gap;
      }
      cursor = std::max(cursor, other->offset + other->bytes);
    }
    group.offset = best.value_or(cursor);
    arenaBytes = std::max(arenaBytes, group.offset + group.bytes);
    placed.push_back(index);
  }
  return arenaBytes;
}

/// The ONNX node an op came from, else the op's own name.
std::string origin(Operation *op) {
  std::string name = onnxNodeName(op->getLoc());
  return name.empty() ? op->getName().getStringRef().str() : name;
}

struct PlanMemoryPass : public impl::PlanMemoryBase<PlanMemoryPass> {
  using PlanMemoryBase::PlanMemoryBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto func = module.lookupSymbol<func::FuncOp>(functionName);
    if (!func || func.isExternal() || !func.getBody().hasOneBlock()) {
      module.emitError() << "kiln-plan-memory: no single-block entry function '"
                         << functionName << "'";
      return signalPassFailure();
    }
    // Sums of buffer sizes stay far from overflowing 64 bits.
    constexpr int64_t kMaxBytes = int64_t(1) << 62;
    if (maxBufferBytes < 0 || maxBufferBytes > kMaxBytes) {
      module.emitError() << "kiln-plan-memory: max-buffer-bytes must lie in [0, 2^62]";
      return signalPassFailure();
    }
    Block &block = func.getBody().front();
    DenseMap<Operation *, int64_t> position;
    for (auto [index, op] : llvm::enumerate(block))
      position[&op] = index;

    SizeBounds bounds(func);
    std::vector<Buffer> buffers;
    Builder b(&getContext());
    SmallVector<Attribute> heapEntries;
    auto keepOnHeap = [&](memref::AllocOp alloc, const Twine &reason) {
      heapEntries.push_back(b.getDictionaryAttr(
          {b.getNamedAttr("op", b.getStringAttr(origin(alloc))),
           b.getNamedAttr("reason", b.getStringAttr(reason))}));
    };
    for (auto alloc : block.getOps<memref::AllocOp>()) {
      MemRefType type = alloc.getType();
      if (!type.getLayout().isIdentity() || type.getMemorySpace()) {
        keepOnHeap(alloc, "not an identity-layout buffer of the default memory space");
        continue;
      }
      if (alloc.getAlignment().value_or(1) > artifact::kArenaAlignment) {
        keepOnHeap(alloc, "asks for " + Twine(*alloc.getAlignment()) +
                              "-byte alignment, more than the arena's " +
                              Twine(artifact::kArenaAlignment));
        continue;
      }
      std::optional<int64_t> bytes = elementBytes(type.getElementType());
      if (!bytes) {
        keepOnHeap(alloc, "the planner does not size its element type");
        continue;
      }
      std::string unbounded;
      bounds.forgetUnboundedLeaf();
      for (int64_t dim = 0; dim < type.getRank() && unbounded.empty(); ++dim) {
        int64_t size = type.getDimSize(dim);
        if (type.isDynamicDim(dim)) {
          MaybeRange range =
              bounds.of(alloc.getDynamicSizes()[type.getDynamicDimIndex(dim)]);
          if (!range) {
            unbounded = "dim " + std::to_string(dim) +
                        " has no upper bound (it depends on " +
                        bounds.takeUnboundedLeaf() + ")";
            break;
          }
          size = std::max<int64_t>(range->max, 0);
        }
        bytes = mul(*bytes, size);
        if (!bytes)
          unbounded = "may need 2^63 bytes or more, over max-buffer-bytes";
      }
      if (!unbounded.empty()) {
        keepOnHeap(alloc, unbounded);
        continue;
      }
      if (*bytes > maxBufferBytes) {
        keepOnHeap(alloc, "may need " + Twine(*bytes) + " bytes, over max-buffer-bytes");
        continue;
      }
      Buffer buffer;
      buffer.alloc = alloc;
      buffer.bytes = artifact::alignTo(*bytes, artifact::kArenaAlignment);
      Verdict verdict = traceUses(buffer, block, position);
      if (!verdict.empty()) {
        keepOnHeap(alloc, verdict);
        continue;
      }
      buffers.push_back(buffer);
    }

    // The arena is never larger than the sum of the buffers.
    int64_t bufferBytes = 0;
    for (const Buffer &buffer : buffers) {
      bufferBytes += buffer.bytes;
      if (bufferBytes > kMaxBytes) {
        module.emitError() << "kiln-plan-memory: the planned buffers may need "
                              "more than 2^62 bytes; lower max-buffer-bytes";
        return signalPassFailure();
      }
    }
    std::vector<Group> groups = groupInPlaceWrites(buffers);
    int64_t arenaBytes = placeGroups(groups);

    // The arena: a new last argument, and every planned buffer a view of it.
    auto arenaType = MemRefType::get({arenaBytes}, b.getI8Type());
    func.insertArgument(func.getNumArguments(), arenaType, DictionaryAttr(),
                        func.getLoc());
    Value arena = func.getArguments().back();
    std::vector<int64_t> offsets(buffers.size());
    for (const Group &group : groups)
      for (unsigned member : group.members)
        offsets[member] = group.offset;
    SmallVector<Attribute> planned;
    for (auto [index, buffer] : llvm::enumerate(buffers)) {
      memref::AllocOp alloc = buffer.alloc;
      SmallVector<NamedAttribute> entry = {
          b.getNamedAttr("op", b.getStringAttr(origin(alloc))),
          b.getNamedAttr("bytes", b.getI64IntegerAttr(buffer.bytes)),
          b.getNamedAttr("offset", b.getI64IntegerAttr(offsets[index])),
          b.getNamedAttr("first", b.getI64IntegerAttr(buffer.first)),
          b.getNamedAttr("last", b.getI64IntegerAttr(buffer.last))};
      if (buffer.inPlaceOf)
        entry.push_back(
            b.getNamedAttr("in_place_of", b.getI64IntegerAttr(*buffer.inPlaceOf)));
      planned.push_back(b.getDictionaryAttr(entry));
      OpBuilder builder(alloc);
      Value offset =
          builder.create<arith::ConstantIndexOp>(alloc.getLoc(), offsets[index]);
      Value view = builder.create<memref::ViewOp>(alloc.getLoc(), alloc.getType(),
                                                  arena, offset,
                                                  alloc.getDynamicSizes());
      alloc.replaceAllUsesWith(view);
      alloc.erase();
    }
    // Pointers taken before planning (the attention kernel's) may now be
    // pointers into views of the arena.
    func.walk([](memref::ExtractAlignedPointerAsIndexOp extract) {
      SmallVector<Value> shifts;
      viewRoot(extract.getSource(), shifts);
      if (shifts.empty())
        return;
      OpBuilder builder(extract);
      extract.replaceAllUsesWith(
          alignedPointerOf(builder, extract.getLoc(), extract.getSource()));
      extract.erase();
    });
    for (unsigned i = 0; i < func.getNumArguments(); ++i) {
      func.removeArgAttr(i, KilnDialect::kDimMaxAttrName);
      func.removeArgAttr(i, KilnDialect::kDimMinAttrName);
    }

    OpBuilder builder = OpBuilder::atBlockEnd(module.getBody());
    builder.create<LLVM::GlobalOp>(module.getLoc(), builder.getI64Type(),
                                   /*isConstant=*/true, LLVM::Linkage::External,
                                   artifact::kArenaBytesSymbol,
                                   builder.getI64IntegerAttr(arenaBytes));
    module->setAttr(
        kMemoryPlanAttrName,
        b.getDictionaryAttr(
            {b.getNamedAttr("arena_bytes", b.getI64IntegerAttr(arenaBytes)),
             b.getNamedAttr("buffer_bytes", b.getI64IntegerAttr(bufferBytes)),
             b.getNamedAttr("buffers", b.getArrayAttr(planned)),
             b.getNamedAttr("heap", b.getArrayAttr(heapEntries))}));
  }

  /// One group per buffer, except that a buffer an elementwise op writes in
  /// place joins the group of the input it overwrites (its inPlaceOf).
  static std::vector<Group> groupInPlaceWrites(std::vector<Buffer> &buffers) {
    llvm::EquivalenceClasses<unsigned> classes;
    DenseMap<Value, unsigned> byValue;
    for (auto [index, buffer] : llvm::enumerate(buffers)) {
      classes.insert(index);
      byValue[buffer.alloc->getResult(0)] = index;
    }
    for (auto [index, output] : llvm::enumerate(buffers)) {
      if (!output.firstUse)
        continue;
      Operation *op = output.firstUse->getOwner();
      for (OpOperand &operand : op->getOpOperands()) {
        auto input = byValue.find(operand.get());
        if (input == byValue.end() || input->second == index)
          continue;
        const Buffer &candidate = buffers[input->second];
        if (candidate.lastUse == &operand && candidate.last == output.first &&
            canWriteInPlace(op, &operand, output.firstUse)) {
          classes.unionSets(input->second, index);
          buffers[index].inPlaceOf = input->second;
          break;
        }
      }
    }
    std::vector<Group> groups;
    for (auto it = classes.begin(); it != classes.end(); ++it) {
      if (!it->isLeader())
        continue;
      Group group;
      for (auto member = classes.member_begin(it); member != classes.member_end();
           ++member) {
        const Buffer &buffer = buffers[*member];
        group.members.push_back(*member);
        group.bytes = std::max(group.bytes, buffer.bytes);
        group.first = std::min(group.first, buffer.first);
        group.last = std::max(group.last, buffer.last);
      }
      groups.push_back(std::move(group));
    }
    return groups;
  }
};

} // namespace
} // namespace kiln
