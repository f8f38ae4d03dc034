//===- PatternUtils.cpp - Matchers shared by the graph passes -------------===//
#include "passes/PatternUtils.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/DenseMap.h"

#include <algorithm>
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

static int64_t rankOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getRank();
}

bool keepsOperandShape(Operation *op) {
  return isa<LayerNormOp, RmsNormOp, ClampOp>(op) ||
         op->hasTrait<OpTrait::SameOperandsAndResultType>() ||
         op->hasTrait<OpTrait::SameOperandsAndResultShape>();
}

bool ShapeElement::isDimOf(Value value, int64_t dim) const {
  if (tensor)
    return factor == 1 && tensor == value && index == dim;
  int64_t size = cast<RankedTensorType>(value.getType()).getDimSize(dim);
  return !ShapedType::isDynamic(size) && constant == size;
}

bool keepsInputDim(ReshapeOp reshape, const ShapeElement &entry, int64_t dim) {
  return entry.isDimOf(reshape.getInput(), dim) ||
         (entry.isConstant(0) && !reshape.getAllowZero());
}

std::optional<DimSource> DimSource::times(int64_t multiple) const {
  DimSource product = *this;
  if (size ? llvm::MulOverflow(*size, multiple, *product.size)
           : llvm::MulOverflow(factor, multiple, product.factor))
    return std::nullopt;
  return product;
}

/// A 0-d i64 value as a shape entry.
static std::optional<ShapeElement> scalarElement(Value scalar) {
  if (auto dim = scalar.getDefiningOp<DimOp>())
    return ShapeElement{std::nullopt, dim.getInput(),
                        static_cast<int64_t>(dim.getIndex())};
  // A dim times a positive constant (torch's batch_size * num_heads).
  if (auto mul = scalar.getDefiningOp<MulOp>()) {
    std::optional<ShapeElement> x = scalarElement(mul.getLhs()),
                                y = scalarElement(mul.getRhs());
    if (!x || !y)
      return std::nullopt;
    if (x->constant && y->constant) {
      int64_t product;
      if (llvm::MulOverflow(*x->constant, *y->constant, product))
        return std::nullopt;
      return ShapeElement{product, nullptr, 0};
    }
    if (x->constant)
      std::swap(x, y);
    if (!x->tensor || !y->constant || *y->constant <= 0 ||
        llvm::MulOverflow(x->factor, *y->constant, x->factor))
      return std::nullopt;
    return x;
  }
  // The one entry of a list squeezed to a scalar (torch's x.size(-1) as
  // the TorchScript exporter writes it: a slice of shape_of, squeezed).
  if (auto squeeze = scalar.getDefiningOp<SqueezeOp>()) {
    std::optional<SmallVector<ShapeElement>> entries = shapeElements(squeeze.getInput());
    if (!entries || entries->size() != 1)
      return std::nullopt;
    return entries->front();
  }
  // The element count of a static shape (the rank, for a shape_of).
  if (auto size = scalar.getDefiningOp<SizeOp>()) {
    auto type = cast<RankedTensorType>(size.getInput().getType());
    if (!type.hasStaticShape())
      return std::nullopt;
    return ShapeElement{type.getNumElements(), nullptr, 0};
  }
  auto constant = scalar.getDefiningOp<ConstantOp>();
  auto dense = constant ? dyn_cast<DenseIntElementsAttr>(constant.getValue())
                        : nullptr;
  if (!dense || dense.getNumElements() != 1)
    return std::nullopt;
  return ShapeElement{(*dense.begin()).getSExtValue(), nullptr, 0};
}

Value buildShape(OpBuilder &builder, Location loc, ArrayRef<ShapeElement> elements) {
  auto scalarType = RankedTensorType::get({}, builder.getI64Type());
  auto entryType = RankedTensorType::get({1}, builder.getI64Type());
  SmallVector<Value> entries;
  for (const ShapeElement &element : elements) {
    if (element.constant) {
      entries.push_back(builder.create<ConstantOp>(
          loc, DenseElementsAttr::get(entryType, ArrayRef<int64_t>{*element.constant})));
      continue;
    }
    Value scalar = builder.create<DimOp>(loc, scalarType, element.tensor,
                                         builder.getI64IntegerAttr(element.index));
    if (element.factor != 1)
      scalar = builder.create<MulOp>(
          loc, scalarType, scalar,
          builder.create<ConstantOp>(
              loc, DenseElementsAttr::get(scalarType, ArrayRef<int64_t>{element.factor})));
    entries.push_back(
        builder.create<UnsqueezeOp>(loc, entryType, scalar, builder.getDenseI64ArrayAttr({0})));
  }
  if (entries.size() == 1)
    return entries.front();
  auto type = RankedTensorType::get({static_cast<int64_t>(entries.size())}, builder.getI64Type());
  return builder.create<ConcatOp>(loc, type, entries, builder.getI64IntegerAttr(0));
}

/// Whether entries `a` and `b` are equal (true/false), or unknown.
static std::optional<bool> equal(const ShapeElement &a, const ShapeElement &b) {
  if (a.constant && b.constant)
    return *a.constant == *b.constant;
  if (a.tensor && b.tensor && a.tensor == b.tensor && a.index == b.index &&
      a.factor == b.factor)
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
    if (rankOf(unsqueeze.getInput()) != 0)
      return std::nullopt;
    // A computed scalar (a product of dims, say) is an unknown entry.
    return SmallVector<ShapeElement>{
        scalarElement(unsqueeze.getInput()).value_or(ShapeElement{})};
  }
  if (auto reshape = dyn_cast<ReshapeOp>(op))
    return shapeElements(reshape.getInput());
  if (auto shapeOf = dyn_cast<ShapeOfOp>(op)) {
    SmallVector<ShapeElement> elements;
    for (auto [dim, size] : llvm::enumerate(
             cast<RankedTensorType>(shapeOf.getInput().getType()).getShape()))
      elements.push_back(ShapeElement{ShapedType::isDynamic(size)
                                          ? std::nullopt
                                          : std::optional<int64_t>(size),
                                      shapeOf.getInput(), static_cast<int64_t>(dim)});
    return elements;
  }
  // A unit-step slice of a shape vector (the dynamo exporter's
  // shape[1:3]), with ONNX's clamping of the bounds.
  if (auto slice = dyn_cast<SliceOp>(op)) {
    std::optional<SmallVector<ShapeElement>> input = shapeElements(slice.getInput());
    std::optional<double> start = scalarConstantValue(slice.getStarts()),
                          end = scalarConstantValue(slice.getEnds()),
                          step = scalarConstantValue(slice.getSteps());
    if (!input || !start || !end || step != 1.0)
      return std::nullopt;
    auto size = static_cast<int64_t>(input->size());
    auto clampIndex = [&](double index) {
      auto i = static_cast<int64_t>(std::clamp<double>(index, -1e18, 1e18));
      return std::clamp<int64_t>(i < 0 ? i + size : i, 0, size);
    };
    int64_t begin = clampIndex(*start), stop = clampIndex(*end);
    return SmallVector<ShapeElement>(input->begin() + begin,
                                     input->begin() + std::max(begin, stop));
  }
  // Entry-wise arithmetic on constant entries (the expanded
  // LayerNormalization's rank - axis, or -axis); other entries become
  // unknown.
  if (auto neg = dyn_cast<NegOp>(op)) {
    std::optional<SmallVector<ShapeElement>> x = shapeElements(neg.getInput());
    if (!x)
      return std::nullopt;
    for (ShapeElement &element : *x)
      element = element.constant ? ShapeElement{-*element.constant, nullptr, 0}
                                 : ShapeElement{};
    return x;
  }
  if (isa<AddOp, SubOp, MulOp>(op) && !type.isDynamicDim(0)) {
    auto entries = [](Value operand) -> std::optional<SmallVector<ShapeElement>> {
      if (rankOf(operand) == 0) {
        if (std::optional<ShapeElement> scalar = scalarElement(operand))
          return SmallVector<ShapeElement>{*scalar};
        return SmallVector<ShapeElement>{ShapeElement{}};
      }
      return shapeElements(operand);
    };
    std::optional<SmallVector<ShapeElement>> x = entries(op->getOperand(0)),
                                             y = entries(op->getOperand(1));
    int64_t length = type.getDimSize(0);
    if (!x || !y || (x->size() != 1 && static_cast<int64_t>(x->size()) != length) ||
        (y->size() != 1 && static_cast<int64_t>(y->size()) != length))
      return std::nullopt;
    SmallVector<ShapeElement> elements;
    for (int64_t i = 0; i < length; ++i) {
      const ShapeElement &a = (*x)[x->size() == 1 ? 0 : i];
      const ShapeElement &b = (*y)[y->size() == 1 ? 0 : i];
      if (!a.constant || !b.constant) {
        elements.push_back(ShapeElement{});
        continue;
      }
      int64_t value = isa<AddOp>(op)   ? *a.constant + *b.constant
                      : isa<SubOp>(op) ? *a.constant - *b.constant
                                       : *a.constant * *b.constant;
      elements.push_back(ShapeElement{value, nullptr, 0});
    }
    return elements;
  }
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
    // An undecided comparison leaves its entry unknown, not the whole
    // shape: torch's expand(-1, ...) compares computed lengths (past +
    // sequence) with -1 next to the -1 it replaces with 1.
    std::optional<bool> same = equal(at(*x, i), at(*y, i));
    elements.push_back(same ? (*same ? at(*a, i) : at(*b, i)) : ShapeElement{});
  }
  return elements;
}

namespace {

/// Traces dims back with a memo of the (value, dim) pairs already traced:
/// where paths meet again (an add of x and f(x)), the shared part is traced
/// once, so a query costs at most one step per (value, dim) of the graph.
class DimTracer {
public:
  DimSource trace(Value value, int64_t dim, int depth = 0) {
    auto key = std::make_pair(value, dim);
    auto found = memo_.find(key);
    if (found != memo_.end())
      return found->second;
    DimSource source = traceOnce(value, dim, depth);
    memo_[key] = source;
    return source;
  }

private:
  /// The first function argument dim with the symbolic name (kiln.dims) of
  /// dim `dim` of `argument`: the runtime gives every dim of that name one
  /// size across the inputs, so they trace to one source.
  static std::optional<DimSource> firstNamedAlike(BlockArgument argument,
                                                  int64_t dim) {
    auto func = dyn_cast<func::FuncOp>(argument.getOwner()->getParentOp());
    if (!func || argument.getOwner() != &func.getBody().front())
      return std::nullopt;
    SmallVector<std::string> names =
        getArgumentDimNames(func, argument.getArgNumber());
    if (static_cast<int64_t>(names.size()) <= dim || names[dim].empty())
      return std::nullopt;
    for (BlockArgument other : func.getArguments()) {
      SmallVector<std::string> otherNames =
          getArgumentDimNames(func, other.getArgNumber());
      for (auto [otherDim, name] : llvm::enumerate(otherNames))
        if (name == names[dim])
          return DimSource{std::nullopt, other, static_cast<int64_t>(otherDim)};
    }
    return std::nullopt;
  }

  /// The trace recurses once per op, at most this deep.
  static constexpr int kMaxDepth = 64;

  DimSource traceOnce(Value value, int64_t dim, int depth) {
    auto type = cast<RankedTensorType>(value.getType());
    if (!type.isDynamicDim(dim))
      return {type.getDimSize(dim), nullptr, 0};
    DimSource here{std::nullopt, value, dim};
    if (auto argument = dyn_cast<BlockArgument>(value))
      return firstNamedAlike(argument, dim).value_or(here);
    Operation *op = value.getDefiningOp();
    if (depth >= kMaxDepth)
      return here;
    auto next = [&](Value operand, int64_t operandDim) {
      return trace(operand, operandDim, depth + 1);
    };
    int64_t rank = type.getRank();
    if (isa<tensor::CastOp>(op) || keepsOperandShape(op))
      return next(op->getOperand(0), dim);
    if (auto transpose = dyn_cast<TransposeOp>(op))
      return next(transpose.getInput(), transpose.getPermutation()[dim]);
    if (auto reshape = dyn_cast<ReshapeOp>(op)) {
      std::optional<SmallVector<ShapeElement>> elements =
          shapeElements(reshape.getShape());
      if (!elements || elements->size() != static_cast<size_t>(rank))
        return here;
      const ShapeElement &element = (*elements)[dim];
      if (element.tensor)
        return next(element.tensor, element.index).times(element.factor).value_or(here);
      if (element.constant && *element.constant > 0)
        return {*element.constant, nullptr, 0};
      // 0 copies the input's dim (unless allow_zero makes it an empty
      // one); -1 is inferred from the element count.
      if (element.constant == 0 && !reshape.getAllowZero() &&
          dim < rankOf(reshape.getInput()))
        return next(reshape.getInput(), dim);
      return here;
    }
    // A product's rows are its input's, whatever the weight's layout.
    if (auto linear = dyn_cast<LinearOp>(op))
      return dim == rank - 1 ? here : next(linear.getInput(), dim);
    // A matmul's rows are its lhs's and its columns its rhs's; its batch
    // dims broadcast as an elementwise op's do (below).
    if (auto matmul = dyn_cast<MatMulOp>(op)) {
      Value lhs = matmul.getLhs(), rhs = matmul.getRhs();
      int64_t rhsRank = rankOf(rhs);
      if (dim == rank - 2)
        return next(lhs, rankOf(lhs) - 2);
      if (dim == rank - 1)
        return next(rhs, matmul.getTransposeB() ? rhsRank - 2 : rhsRank - 1);
      return broadcastSource({lhs, rhs}, dim, rank, here, depth);
    }
    if (auto attention = dyn_cast<AttentionOp>(op)) {
      if (value == attention.getResult())
        return dim < 3 ? next(attention.getQuery(), dim) : here;
      // A present is its past and the new rows, concatenated along dim 2.
      Value rows = value == attention.getPresents()[0] ? attention.getKey()
                                                       : attention.getValue();
      return dim == 2 ? here : next(rows, dim);
    }
    if (auto split = dyn_cast<SplitOp>(op))
      return dim == static_cast<int64_t>(split.getAxis())
                 ? here
                 : next(split.getInput(), dim);
    // A gather's result is data.shape[:axis] + indices.shape +
    // data.shape[axis + 1:] (an embedding's rows are its ids' dims).
    if (auto gather = dyn_cast<GatherOp>(op)) {
      int64_t axis = gather.getAxis(), indicesRank = rankOf(gather.getIndices());
      if (dim < axis)
        return next(gather.getData(), dim);
      if (dim < axis + indicesRank)
        return next(gather.getIndices(), dim - axis);
      return next(gather.getData(), dim - indicesRank + 1);
    }
    // A slice keeps the dims it does not slice (Phi-3's fused QKV, sliced
    // apart).
    if (auto slice = dyn_cast<SliceOp>(op))
      return llvm::is_contained(slice.getAxes(), dim) ? here : next(slice.getInput(), dim);
    if (auto concat = dyn_cast<ConcatOp>(op))
      return dim == static_cast<int64_t>(concat.getAxis())
                 ? here
                 : next(concat.getInputs()[0], dim);
    if (op->hasTrait<OpTrait::ResultsBroadcastableShape>())
      return broadcastSource(op->getOperands(), dim, rank, here, depth);
    return here;
  }

  /// The source of broadcast dim `dim` of a rank-`rank` result: the
  /// operands' where they agree (`here` where they do not); an operand of
  /// static size 1, or without the dim, broadcasts and does not count.
  DimSource broadcastSource(ValueRange operands, int64_t dim, int64_t rank,
                            DimSource here, int depth) {
    std::optional<DimSource> agreed;
    for (Value operand : operands) {
      int64_t operandDim = dim - (rank - rankOf(operand));
      if (operandDim < 0 ||
          cast<RankedTensorType>(operand.getType()).getDimSize(operandDim) == 1)
        continue;
      DimSource source = trace(operand, operandDim, depth + 1);
      if (agreed && !(*agreed == source))
        return here;
      agreed = source;
    }
    return agreed ? *agreed : here;
  }

  llvm::DenseMap<std::pair<Value, int64_t>, DimSource> memo_;
};

} // namespace

DimSource traceDim(Value value, int64_t dim) {
  return DimTracer().trace(value, dim);
}

std::optional<DimSource> traceElement(const ShapeElement &element) {
  if (!element.tensor)
    return std::nullopt;
  return traceDim(element.tensor, element.index).times(element.factor);
}

bool provablySameShape(Value a, Value b) {
  int64_t rank = rankOf(a);
  if (rank != rankOf(b))
    return false;
  DimTracer tracer;
  for (int64_t dim = 0; dim < rank; ++dim)
    if (!(tracer.trace(a, dim) == tracer.trace(b, dim)))
      return false;
  return true;
}

} // namespace kiln
