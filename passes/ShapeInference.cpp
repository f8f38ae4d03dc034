//===- ShapeInference.cpp - Result shapes of kiln ops from their operands -===//
#include "passes/ShapeInference.h"
#include "passes/PatternUtils.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Dialect/Traits.h"
#include "llvm/ADT/TypeSwitch.h"

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
  int64_t count = step > 0 ? (last - first + step - 1) / step
                           : (first - last - step - 1) / -step;
  return {first, std::max<int64_t>(count, 0)};
}

namespace {

using Shape = SmallVector<int64_t>;

constexpr int64_t kDynamic = ShapedType::kDynamic;

Shape shapeOf(Value value) {
  return Shape(cast<RankedTensorType>(value.getType()).getShape());
}

/// Makes `op` read the source of each tensor.cast that only erased static
/// sizes (folding casts constants back to the types of the ops they
/// replace); kiln ops take operands more static than their types require.
void bypassErasingCasts(Operation *op) {
  for (OpOperand &operand : op->getOpOperands()) {
    auto cast = operand.get().getDefiningOp<tensor::CastOp>();
    auto source =
        cast ? dyn_cast<RankedTensorType>(cast.getSource().getType()) : nullptr;
    if (source && source.getElementType() ==
                      cast.getType().getElementType() &&
        succeeded(verifyCompatibleShape(source, cast.getType())))
      operand.set(cast.getSource());
  }
}

/// The constant entries of the 1-D shape operand `shape`, kDynamic where an
/// entry is unknown; the static size of a dim it reads counts as constant.
std::optional<Shape> shapeEntries(Value shape) {
  std::optional<SmallVector<ShapeElement>> elements = shapeElements(shape);
  if (!elements)
    return std::nullopt;
  Shape entries;
  for (const ShapeElement &element : *elements) {
    if (element.constant)
      entries.push_back(*element.constant);
    else if (element.tensor)
      entries.push_back(shapeOf(element.tensor)[element.index]);
    else
      entries.push_back(kDynamic);
  }
  return entries;
}

/// ONNX Reshape's result (allowzero = 0) with some entries unknown.
Shape reshapeShape(const Shape &input, const Shape &entries) {
  Shape shape;
  std::optional<size_t> inferred;
  for (auto [i, entry] : llvm::enumerate(entries)) {
    if (entry == 0 && i < input.size()) {
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
        known = ShapedType::isDynamic(size) || known == 0 ? 0 : known * size;
    int64_t count = ShapedType::getNumElements(input);
    if (known > 0 && count % known == 0)
      shape[*inferred] = count / known;
  }
  return shape;
}

Shape broadcast(ArrayRef<Value> operands) {
  SmallVector<int64_t> result;
  for (Value operand : operands) {
    SmallVector<int64_t> next;
    if (!OpTrait::util::getBroadcastedShape(result, shapeOf(operand), next))
      return {};
    result = next;
  }
  return Shape(result);
}

/// The shapes of `op`'s results as its operands prove them, or nullopt for
/// ops it does not know.
std::optional<SmallVector<Shape>> inferShapes(Operation *op) {
  using R = std::optional<SmallVector<Shape>>;
  auto one = [](Shape shape) { return R(SmallVector<Shape>{std::move(shape)}); };
  if (isa<LayerNormOp, RmsNormOp>(op) ||
      op->hasTrait<OpTrait::SameOperandsAndResultType>() ||
      op->hasTrait<OpTrait::SameOperandsAndResultShape>())
    return one(shapeOf(op->getOperand(0)));
  if (op->hasTrait<OpTrait::ResultsBroadcastableShape>())
    return one(broadcast(llvm::to_vector(op->getOperands())));
  return llvm::TypeSwitch<Operation *, R>(op)
      .Case([&](ReshapeOp reshape) -> R {
        std::optional<Shape> entries = shapeEntries(reshape.getShape());
        if (!entries)
          return std::nullopt;
        return one(reshapeShape(shapeOf(reshape.getInput()), *entries));
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
        Shape shape = shapeOf(linear.getInput()),
              weight = shapeOf(linear.getWeight());
        shape.back() = weight[linear.getTransposeB() ? 0 : 1];
        return one(shape);
      })
      .Case([&](AttentionOp attention) {
        Shape query = shapeOf(attention.getQuery());
        query.back() = shapeOf(attention.getValue()).back();
        return one(query);
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
        int64_t axis = concat.getAxis();
        Shape shape = shapeOf(concat.getInputs()[0]);
        shape[axis] = 0;
        for (Value input : concat.getInputs()) {
          Shape part = shapeOf(input);
          for (auto [dim, size] : llvm::enumerate(part)) {
            if (static_cast<int64_t>(dim) == axis)
              shape[dim] = ShapedType::isDynamic(size) ||
                                   ShapedType::isDynamic(shape[dim])
                               ? kDynamic
                               : shape[dim] + size;
            else if (ShapedType::isDynamic(shape[dim]))
              shape[dim] = size;
          }
        }
        return one(shape);
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

bool refineResultTypes(Operation *op) {
  bypassErasingCasts(op);
  std::optional<SmallVector<Shape>> shapes = inferShapes(op);
  if (!shapes || shapes->size() != op->getNumResults())
    return false;
  bool changed = false;
  for (auto [result, inferred] : llvm::zip_equal(op->getResults(), *shapes)) {
    auto type = dyn_cast<RankedTensorType>(result.getType());
    if (!type || inferred.size() != static_cast<size_t>(type.getRank()))
      continue;
    // A type whose static sizes disagree with the inferred ones stays as it
    // is: the op's run-time checks report the mismatch.
    Shape shape(type.getShape());
    bool refined = false, conflict = false;
    for (auto [size, known] : llvm::zip_equal(shape, inferred)) {
      if (ShapedType::isDynamic(known) || known < 0)
        continue;
      if (!ShapedType::isDynamic(size)) {
        conflict |= size != known;
        continue;
      }
      size = known;
      refined = true;
    }
    if (!refined || conflict)
      continue;
    result.setType(RankedTensorType::get(shape, type.getElementType(),
                                         type.getEncoding()));
    // An op whose other constraints the new type breaks (a reshape of a
    // static input into a proven shape of another size, say) keeps its type:
    // it fails at run time with its own message instead.
    ScopedDiagnosticHandler silence(op->getContext(),
                                    [](Diagnostic &) { return success(); });
    if (failed(mlir::verify(op, /*verifyRecursively=*/false))) {
      result.setType(type);
      continue;
    }
    changed = true;
    // Other dialects' users (func.return) keep the type they had.
    OpBuilder builder(op->getContext());
    builder.setInsertionPointAfter(op);
    Value old;
    for (OpOperand &use : llvm::make_early_inc_range(result.getUses())) {
      if (isa<KilnDialect>(use.getOwner()->getDialect()))
        continue;
      if (!old)
        old = builder.create<tensor::CastOp>(op->getLoc(), type, result);
      if (use.getOwner() != old.getDefiningOp())
        use.set(old);
    }
  }
  return changed;
}

} // namespace kiln
