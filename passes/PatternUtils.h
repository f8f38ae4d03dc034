//===- PatternUtils.h - Matchers shared by the graph passes -----*- C++ -*-===//
#ifndef KILN_PASSES_PATTERNUTILS_H
#define KILN_PASSES_PATTERNUTILS_H

#include "dialects/Kiln/IR/KilnOps.h"

#include <optional>

namespace kiln {

/// The value of `value` when it is a kiln.constant splat with one element per
/// broadcast position: a 0-d tensor or a tensor of all-1 dimensions. Null
/// values have none.
std::optional<double> scalarConstantValue(mlir::Value value);

/// Whether `value` is a scalar constant (as above) equal to `expected` within
/// a relative `tolerance`: exporters print constants such as sqrt(2/pi) in
/// float, not in double.
bool isScalarConstant(mlir::Value value, double expected,
                      double tolerance = 1e-6);

/// The operand of the binary op `op` other than `operand`, or null when
/// `operand` is not one of its two operands.
mlir::Value otherOperand(mlir::Operation *op, mlir::Value operand);

/// The op of type OpTy that defines `value`, when `value` is its only use;
/// fusing through an op with other users would have to recompute it.
template <typename OpTy> OpTy singleUseProducer(mlir::Value value) {
  auto op = value.getDefiningOp<OpTy>();
  return op && op->getResult(0).hasOneUse() ? op : OpTy();
}

/// singleUseProducer, except that users that read only the shape
/// (kiln.dim) do not count: kiln-fold-constants writes a reshape's -1 out as
/// a dim of the reshape's input, which a fusion of the chain leaves dead.
template <typename OpTy> OpTy elementReadOnceProducer(mlir::Value value) {
  auto op = value.getDefiningOp<OpTy>();
  if (!op)
    return OpTy();
  int64_t readers = llvm::count_if(value.getUsers(), [](mlir::Operation *user) {
    return !mlir::isa<DimOp>(user);
  });
  return readers == 1 ? op : OpTy();
}

/// Whether the kiln op `op`'s result has the shape of its first operand, as
/// its verifier requires: elementwise ops of one operand, casts, softmax,
/// the normalizations and clamp.
bool keepsOperandShape(mlir::Operation *op);

/// Whether `value` has the same type as `like`: fusing through an op whose
/// result is broadcast bigger than its input would drop that broadcast.
inline bool sameType(mlir::Value value, mlir::Value like) {
  return value.getType() == like.getType();
}

/// One entry of a 1-D shape tensor as known at compile time: a constant, or
/// dim `index` of `tensor` (a size, so never negative) times `factor` (B·H:
/// heads folded into the batch), or neither when it is computed otherwise.
struct ShapeElement {
  std::optional<int64_t> constant;
  mlir::Value tensor;
  int64_t index = 0;
  int64_t factor = 1;

  /// Whether the entry is dim `dim` of `value`: that very dim, or a constant
  /// equal to its static size.
  bool isDimOf(mlir::Value value, int64_t dim) const;
  bool isConstant(int64_t value) const { return constant == value; }
};

/// The entries of the 1-D i64 tensor `shape` when its structure is known:
/// shape subgraphs as exporters write them after kiln-fold-constants (concat
/// of unsqueezed kiln.dim values, constants and other scalars, which are
/// unknown entries, and ONNX Expand's where(shape == -1, 1, shape), whose
/// undecided comparisons give unknown entries).
std::optional<llvm::SmallVector<ShapeElement>> shapeElements(mlir::Value shape);

/// The shape list `elements` (each a constant or a multiple of a dim) as
/// kiln ops, which the lowerings read entry by entry: one-entry constants
/// and unsqueezed kiln.dim values (times their factors), concatenated.
mlir::Value buildShape(mlir::OpBuilder &builder, mlir::Location loc,
                       llvm::ArrayRef<ShapeElement> elements);

/// Whether `entry`, at index `dim` of `reshape`'s shape, keeps its input's
/// dim there: it is that dim, or a 0 that copies it (allowzero = 0).
bool keepsInputDim(ReshapeOp reshape, const ShapeElement &entry, int64_t dim);

/// Where the size of a tensor's dim comes from, traced back through the ops
/// that keep it: a static size, or dim `index` of `tensor` beyond which the
/// trace stops. Two dims that trace to the same source are equal at run time
/// (the ops in between check what they assume and fail otherwise). The one
/// exception needs an empty tensor: a reshape entry that is a dim of size 0
/// copies the input's dim instead (ONNX's allowzero = 0).
struct DimSource {
  std::optional<int64_t> size;
  mlir::Value tensor;
  int64_t index = 0;
  /// With `tensor`: the size is that dim times this (a reshape's B·H entry).
  int64_t factor = 1;

  bool operator==(const DimSource &other) const {
    return size ? size == other.size
                : !other.size && tensor == other.tensor && index == other.index &&
                      factor == other.factor;
  }
  /// This size times `multiple`, or nothing on overflow.
  std::optional<DimSource> times(int64_t multiple) const;
};

/// The source of dim `dim` of `value`: through shape-preserving ops
/// (elementwise, casts, normalizations, softmax, tensor.cast), transposes,
/// reshapes whose target entry is a known dim or constant (or a multiple of
/// one), a broadcasting op's operands when they agree, a product's rows,
/// columns and (broadcast) batch dims,
/// split, concat and slice off their axes, a gather's indices and data,
/// and attention's query dims.
DimSource traceDim(mlir::Value value, int64_t dim);

/// The source of the size a shape entry names: its dim's source times its
/// factor. Nothing for an entry that names no dim.
std::optional<DimSource> traceElement(const ShapeElement &element);

/// Whether `a` and `b` provably have the same shape at run time.
bool provablySameShape(mlir::Value a, mlir::Value b);

} // namespace kiln

#endif // KILN_PASSES_PATTERNUTILS_H
