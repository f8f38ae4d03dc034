//===- ShapeInference.cpp - Result shapes of kiln ops from their operands -===//
#include "passes/ShapeInference.h"
#include "passes/PatternUtils.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Dialect/Traits.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>

using namespace mlir;

namespace kiln {

SliceRange sliceRange(int64_t size, int64_t start, int64_t end, int64_t step) {
  auto normalize = [&](int64_t index, int64_t low, int64_t high) {
    if (index < 0)
      index += size;
    return std::clamp(index, low, high);
  };
  int64_t first = step > 0 ? normalize(start, 0, size)
                           : normalize(start, 0, size - 1);
  int64_t last = step > 0 ? normalize(end, 0, size) : normalize(end, -1, size - 1);
  // The distance and the step's magnitude in unsigned arithmetic, so that a
  // step near INT64_MAX or equal to INT64_MIN does not overflow.
  uint64_t distance = step > 0 ? last - first : first - last;
  uint64_t magnitude = step > 0 ? static_cast<uint64_t>(step)
                                : uint64_t(0) - static_cast<uint64_t>(step);
  bool empty = step > 0 ? last <= first : first <= last;
  return {first, empty ? 0 : static_cast<int64_t>((distance - 1) / magnitude + 1)};
}

namespace {

using Shape = SmallVector<int64_t>;

constexpr int64_t kDynamic = ShapedType::kDynamic;

Shape shapeOf(Value value) {
  return Shape(cast<RankedTensorType>(value.getType()).getShape());
}

/// Whether `value` is a tensor.cast that only erased static sizes (folding
/// casts constants back to the types of the ops they replace).
bool isErasingCast(Value value) {
  auto cast = value.getDefiningOp<tensor::CastOp>();
  return cast &&
         tensor::preservesStaticInformation(cast.getType(),
                                            cast.getSource().getType());
}

/// The constant entries of the 1-D shape operand `shape`, kDynamic where an
/// entry is unknown; the static size of a dim it reads counts as constant.
std::optional<Shape> shapeEntries(Value shape) {
  std::optional<SmallVector<ShapeElement>> elements = shapeElements(shape);
  if (!elements)
    return std::nullopt;
  Shape entries;
  for (const ShapeElement &element : *elements) {
    if (element.constant) {
      entries.push_back(*element.constant);
      continue;
    }
    int64_t size = element.tensor ? shapeOf(element.tensor)[element.index] : kDynamic;
    if (size != kDynamic && llvm::MulOverflow(size, element.factor, size))
      size = kDynamic;
    entries.push_back(size);
  }
  return entries;
}

} // namespace

SmallVector<int64_t> reshapeShape(ArrayRef<int64_t> input,
                                  ArrayRef<int64_t> entries, bool allowZero) {
  Shape shape;
  std::optional<size_t> inferred;
  for (auto [i, entry] : llvm::enumerate(entries)) {
    if (entry == 0 && !allowZero && i < input.size()) {
      shape.push_back(input[i]);
    } else if (entry == -1 && !inferred) {
      inferred = i;
      shape.push_back(kDynamic);
    } else {
      shape.push_back(entry >= 0 ? entry : kDynamic);
    }
  }
  // -1 is the element count over the other sizes, when all are known.
  if (inferred && llvm::none_of(input, ShapedType::isDynamic)) {
    int64_t known = 1;
    for (auto [i, size] : llvm::enumerate(shape))
      if (i != *inferred)
        if (ShapedType::isDynamic(size) || known == 0 || llvm::MulOverflow(known, size, known))
          known = 0;
    int64_t count = ShapedType::getNumElements(input);
    if (known > 0 && count % known == 0)
      shape[*inferred] = count / known;
  }
  return shape;
}

namespace {

std::optional<Shape> broadcast(ArrayRef<Shape> shapes) {
  SmallVector<int64_t> result;
  for (const Shape &shape : shapes) {
    SmallVector<int64_t> next;
    if (!OpTrait::util::getBroadcastedShape(result, shape, next))
      return std::nullopt;
    result = next;
  }
  return Shape(result);
}

/// The shape of `inputs` concatenated along `axis`: the sum of their sizes
/// there, elsewhere the first static size among them.
Shape concatShape(ValueRange inputs, int64_t axis) {
  Shape shape = shapeOf(inputs.front());
  shape[axis] = 0;
  for (Value input : inputs) {
    for (auto [dim, size] : llvm::enumerate(shapeOf(input))) {
      if (static_cast<int64_t>(dim) == axis)
        shape[dim] =
            ShapedType::isDynamic(size) || ShapedType::isDynamic(shape[dim])
                ? kDynamic
                : shape[dim] + size;
      else if (ShapedType::isDynamic(shape[dim]))
        shape[dim] = size;
    }
  }
  return shape;
}

/// The size a reshape's -1 entry stands for when the other entries are
/// constants or dims of its input, each input dim named at most once: the
/// named dims cancel, and what the input's static dims leave over is the
/// size ([B, T, 192] to [B, T, -1, 48] gives 4).
std::optional<int64_t> inferredEntry(ReshapeOp reshape) {
  std::optional<SmallVector<ShapeElement>> elements =
      shapeElements(reshape.getShape());
  if (!elements)
    return std::nullopt;
  Value input = reshape.getInput();
  Shape inputShape = shapeOf(input);
  SmallVector<bool> named(inputShape.size(), false);
  int64_t known = 1;
  int inferred = 0;
  for (auto [i, element] : llvm::enumerate(*elements)) {
    std::optional<int64_t> copied;
    if (element.constant == -1) {
      ++inferred;
      continue;
    }
    if (element.constant == 0 && !reshape.getAllowZero())
      copied = static_cast<int64_t>(i);
    else if (element.tensor == input && element.factor == 1)
      copied = element.index;
    if (copied) {
      if (*copied >= static_cast<int64_t>(named.size()) || named[*copied])
        return std::nullopt;
      named[*copied] = true;
      continue;
    }
    if (!element.constant || *element.constant <= 0 ||
        llvm::MulOverflow(known, *element.constant, known))
      return std::nullopt;
  }
  int64_t count = 1;
  for (auto [size, isNamed] : llvm::zip(inputShape, named)) {
    if (isNamed)
      continue;
    if (ShapedType::isDynamic(size) || llvm::MulOverflow(count, size, count))
      return std::nullopt;
  }
  if (inferred != 1 || known == 0 || count % known != 0)
    return std::nullopt;
  return count / known;
}

/// The shapes of `op`'s results as its operands prove them, or nullopt for
/// ops it does not know.
std::optional<SmallVector<Shape>> inferShapes(Operation *op) {
  using R = std::optional<SmallVector<Shape>>;
  auto one = [](Shape shape) { return R(SmallVector<Shape>{std::move(shape)}); };
  if (keepsOperandShape(op))
    return one(shapeOf(op->getOperand(0)));
  if (op->hasTrait<OpTrait::ResultsBroadcastableShape>()) {
    std::optional<Shape> shape =
        broadcast(llvm::map_to_vector(op->getOperands(), shapeOf));
    return shape ? one(*shape) : std::nullopt;
  }
  return llvm::TypeSwitch<Operation *, R>(op)
      .Case([&](ReshapeOp reshape) -> R {
        std::optional<Shape> entries = shapeEntries(reshape.getShape());
        if (!entries)
          return std::nullopt;
        Shape shape =
            reshapeShape(shapeOf(reshape.getInput()), *entries, reshape.getAllowZero());
        auto minusOne = llvm::find(*entries, -1);
        if (minusOne != entries->end())
          if (std::optional<int64_t> size = inferredEntry(reshape))
            shape[minusOne - entries->begin()] = *size;
        return one(shape);
      })
      .Case([&](ExpandOp expand) -> R {
        std::optional<Shape> entries = shapeEntries(expand.getShape());
        if (!entries)
          return std::nullopt;
        // A static 1 in the shape keeps the input's size; unknown entries
        // stay unknown.
        Shape requested = *entries;
        for (int64_t &size : requested)
          if (size < 0)
            size = kDynamic;
        std::optional<Shape> shape =
            broadcast({shapeOf(expand.getInput()), requested});
        return shape ? one(*shape) : std::nullopt;
      })
      .Case<ReduceSumOp, ReduceMeanOp, ReduceMaxOp, ReduceMinOp, ReduceProdOp>([&](auto reduce) {
        Shape input = shapeOf(reduce.getInput()), shape;
        for (auto [dim, size] : llvm::enumerate(input)) {
          if (!llvm::is_contained(reduce.getAxes(), static_cast<int64_t>(dim)))
            shape.push_back(size);
          else if (reduce.getKeepDims())
            shape.push_back(1);
        }
        return one(shape);
      })
      .Case([&](TransposeOp transpose) {
        Shape input = shapeOf(transpose.getInput()), shape;
        for (int64_t dim : transpose.getPermutation())
          shape.push_back(input[dim]);
        return one(shape);
      })
      .Case([&](MatMulOp matmul) -> R {
        Shape lhs = shapeOf(matmul.getLhs()), rhs = shapeOf(matmul.getRhs());
        SmallVector<int64_t> shape;
        if (!OpTrait::util::getBroadcastedShape(ArrayRef(lhs).drop_back(2),
                                                ArrayRef(rhs).drop_back(2),
                                                shape))
          return std::nullopt;
        shape.push_back(lhs[lhs.size() - 2]);
        shape.push_back(matmul.getTransposeB() ? rhs[rhs.size() - 2]
                                               : rhs.back());
        return one(Shape(shape));
      })
      .Case([&](LinearOp linear) {
        Shape shape = shapeOf(linear.getInput());
        shape.back() = linear.getWeightSizes().second;
        return one(shape);
      })
      .Case([&](AttentionOp attention) {
        Shape query = shapeOf(attention.getQuery());
        query.back() = shapeOf(attention.getValue()).back();
        SmallVector<Shape> shapes = {query};
        if (Value pastKey = attention.getPastKey()) {
          shapes.push_back(concatShape({pastKey, attention.getKey()}, 2));
          shapes.push_back(
              concatShape({attention.getPastValue(), attention.getValue()}, 2));
        }
        return R(shapes);
      })
      .Case([&](SliceOp slice) -> R {
        Shape shape = shapeOf(slice.getInput());
        std::optional<Shape> starts = shapeEntries(slice.getStarts()),
                             ends = shapeEntries(slice.getEnds()),
                             steps = shapeEntries(slice.getSteps());
        for (auto [i, axis] : llvm::enumerate(slice.getAxes())) {
          int64_t size = shape[axis];
          if (!starts || !ends || !steps || i >= starts->size() ||
              i >= ends->size() || i >= steps->size() ||
              ShapedType::isDynamic(size) || ShapedType::isDynamic((*starts)[i]) ||
              ShapedType::isDynamic((*ends)[i]) ||
              ShapedType::isDynamic((*steps)[i]) || (*steps)[i] == 0) {
            shape[axis] = kDynamic;
            continue;
          }
          shape[axis] =
              sliceRange(size, (*starts)[i], (*ends)[i], (*steps)[i]).count;
        }
        return one(shape);
      })
      .Case([&](ConcatOp concat) {
        return one(concatShape(concat.getInputs(), concat.getAxis()));
      })
      .Case([&](SplitOp split) {
        SmallVector<Shape> shapes;
        for (int64_t size : split.getSizes()) {
          Shape shape = shapeOf(split.getInput());
          shape[split.getAxis()] = size;
          shapes.push_back(shape);
        }
        return R(shapes);
      })
      .Case([&](UnsqueezeOp unsqueeze) {
        Shape input = shapeOf(unsqueeze.getInput()), shape;
        ArrayRef<int64_t> axes = unsqueeze.getAxes();
        int64_t rank = input.size() + axes.size();
        for (int64_t dim = 0, next = 0; dim < rank; ++dim)
          shape.push_back(llvm::is_contained(axes, dim) ? 1 : input[next++]);
        return one(shape);
      })
      .Case([&](SqueezeOp squeeze) {
        Shape input = shapeOf(squeeze.getInput()), shape;
        for (auto [dim, size] : llvm::enumerate(input))
          if (!llvm::is_contained(squeeze.getAxes(), static_cast<int64_t>(dim)))
            shape.push_back(size);
        return one(shape);
      })
      .Case([&](GatherOp gather) {
        Shape data = shapeOf(gather.getData());
        int64_t axis = gather.getAxis();
        Shape shape(data.begin(), data.begin() + axis);
        llvm::append_range(shape, shapeOf(gather.getIndices()));
        shape.append(data.begin() + axis + 1, data.end());
        return one(shape);
      })
      .Default([](Operation *) { return std::nullopt; });
}

} // namespace

namespace {

/// Whether `ops` verify, with the diagnostics of the check dropped: those
/// located at one of `ops`, so that another function's diagnostics, which
/// a parallel pass may emit meanwhile, still reach the user.
bool verifiesQuietly(ArrayRef<Operation *> ops) {
  SmallVector<Location> locations =
      llvm::map_to_vector(ops, [](Operation *op) { return op->getLoc(); });
  ScopedDiagnosticHandler quiet(ops.front()->getContext(), [&](Diagnostic &d) {
    return success(llvm::is_contained(locations, d.getLocation()));
  });
  return llvm::all_of(ops, [](Operation *op) {
    return succeeded(mlir::verify(op, /*verifyRecursively=*/false));
  });
}

} // namespace

void refineResultTypes(Operation *op) {
  // Operands first: the op reads the sources of casts that erased sizes.
  SmallVector<std::pair<OpOperand *, Value>> bypassed;
  for (OpOperand &operand : op->getOpOperands())
    if (isErasingCast(operand.get())) {
      bypassed.push_back({&operand, operand.get()});
      operand.set(operand.get().getDefiningOp<tensor::CastOp>().getSource());
    }
  SmallVector<std::pair<Value, Type>> refined;
  if (std::optional<SmallVector<Shape>> shapes = inferShapes(op);
      shapes && shapes->size() == op->getNumResults()) {
    for (auto [result, inferred] : llvm::zip_equal(op->getResults(), *shapes)) {
      auto type = dyn_cast<RankedTensorType>(result.getType());
      if (!type || inferred.size() != static_cast<size_t>(type.getRank()))
        continue;
      // A type whose static sizes disagree with the inferred ones stays as
      // it is, for the op's checks to report.
      Shape shape(type.getShape());
      bool changed = false, conflict = false;
      for (auto [size, known] : llvm::zip_equal(shape, inferred)) {
        if (ShapedType::isDynamic(known))
          continue;
        if (!ShapedType::isDynamic(size)) {
          conflict |= size != known;
          continue;
        }
        size = known;
        changed = true;
      }
      if (!changed || conflict)
        continue;
      refined.push_back({result, type});
      result.setType(RankedTensorType::get(shape, type.getElementType(),
                                           type.getEncoding()));
    }
  }
  if (bypassed.empty() && refined.empty())
    return;
  // Where the new types break a constraint of the op or of a kiln op using
  // it (a reshape of a static input into a proven shape of another size, a
  // product whose contraction sizes now differ), everything stays as it
  // was, for the run-time checks to report. A user that keeps its operand's
  // shape gets the same refinement on its turn, later in the sweep.
  SmallVector<Operation *> affected = {op};
  for (auto [result, type] : refined)
    for (OpOperand &use : result.getUses()) {
      Operation *user = use.getOwner();
      if (isa<KilnDialect>(user->getDialect()) &&
          !(keepsOperandShape(user) && use.getOperandNumber() == 0))
        affected.push_back(user);
    }
  if (!verifiesQuietly(affected)) {
    for (auto [operand, value] : bypassed)
      operand->set(value);
    for (auto [result, type] : refined)
      result.setType(type);
    return;
  }
  // Other dialects' users (func.return) keep the type they had.
  OpBuilder builder(op->getContext());
  builder.setInsertionPointAfter(op);
  for (auto [result, type] : refined) {
    Value old;
    for (OpOperand &use : llvm::make_early_inc_range(result.getUses())) {
      if (isa<KilnDialect>(use.getOwner()->getDialect()) ||
          (old && use.getOwner() == old.getDefiningOp()))
        continue;
      if (!old)
        old = builder.create<tensor::CastOp>(op->getLoc(), type, result);
      use.set(old);
    }
  }
}

} // namespace kiln
