//===- Patterns.h - kiln to linalg lowering patterns ------------*- C++ -*-===//
//
// The patterns of kiln-convert-to-linalg, one group per op category, and the
// helpers they share (sizes, broadcasting maps, reshapes, reductions).
//
//===----------------------------------------------------------------------===//
#ifndef KILN_COMPILER_CONVERSION_KILNTOLINALG_PATTERNS_H
#define KILN_COMPILER_CONVERSION_KILNTOLINALG_PATTERNS_H


#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/DialectConversion.h"

namespace kiln {

/// Unary, binary, compare, where, clamp, cast, gelu and rotary.
void populateElementwiseLoweringPatterns(mlir::RewritePatternSet &patterns);
/// matmul, einsum, and linear as a call of the runtime GEMM with an epilogue.
void populateMatMulLoweringPatterns(mlir::RewritePatternSet &patterns);
/// reduce_*, plus the decompositions of softmax, log_softmax and the norms
/// into kiln ops.
void populateReductionLoweringPatterns(mlir::RewritePatternSet &patterns);
/// Shape and data movement: reshape, transpose, squeeze, unsqueeze, concat,
/// split, slice, gathers, pad, expand, tile, trilu, range, constant,
/// shape_of, dim, size.
void populateDataMovementLoweringPatterns(mlir::RewritePatternSet &patterns);
/// The ops that write to computed positions (the scatters) or select
/// (top_k), as scf.for nests over tensors.
void populateLoopNestLoweringPatterns(mlir::RewritePatternSet &patterns);

namespace lowering {

using ReduceFn = llvm::function_ref<mlir::Value(
    mlir::OpBuilder &, mlir::Location, mlir::Value acc, mlir::Value x)>;

/// Signed index arithmetic with short names, for the ONNX index rules.
struct IndexMath {
  mlir::OpBuilder &b;
  mlir::Location loc;

  mlir::Value c(int64_t v) { return b.create<mlir::arith::ConstantIndexOp>(loc, v); }
  mlir::Value add(mlir::Value x, mlir::Value y) { return b.create<mlir::arith::AddIOp>(loc, x, y); }
  mlir::Value sub(mlir::Value x, mlir::Value y) { return b.create<mlir::arith::SubIOp>(loc, x, y); }
  mlir::Value mul(mlir::Value x, mlir::Value y) { return b.create<mlir::arith::MulIOp>(loc, x, y); }
  mlir::Value lt(mlir::Value x, mlir::Value y) {
    return b.create<mlir::arith::CmpIOp>(loc, mlir::arith::CmpIPredicate::slt, x, y);
  }
  mlir::Value le(mlir::Value x, mlir::Value y) {
    return b.create<mlir::arith::CmpIOp>(loc, mlir::arith::CmpIPredicate::sle, x, y);
  }
  mlir::Value eq(mlir::Value x, mlir::Value y) {
    return b.create<mlir::arith::CmpIOp>(loc, mlir::arith::CmpIPredicate::eq, x, y);
  }
  mlir::Value select(mlir::Value cond, mlir::Value x, mlir::Value y) {
    return b.create<mlir::arith::SelectOp>(loc, cond, x, y);
  }
  mlir::Value max(mlir::Value x, mlir::Value y) { return b.create<mlir::arith::MaxSIOp>(loc, x, y); }
  mlir::Value min(mlir::Value x, mlir::Value y) { return b.create<mlir::arith::MinSIOp>(loc, x, y); }
  mlir::Value clamp(mlir::Value x, mlir::Value lo, mlir::Value hi) { return min(max(x, lo), hi); }
  mlir::Value ceilDiv(mlir::Value x, mlir::Value y) {
    return b.create<mlir::arith::CeilDivSIOp>(loc, x, y);
  }
  /// The remainder of x / y with y's sign (y > 0 here: a wrapped index).
  mlir::Value floorMod(mlir::Value x, mlir::Value y) {
    return sub(x, mul(b.create<mlir::arith::FloorDivSIOp>(loc, x, y), y));
  }
  /// A negative index counts from the end.
  mlir::Value wrapNegative(mlir::Value index, mlir::Value size) {
    return select(lt(index, c(0)), add(index, size), index);
  }
  /// A divisor that is never zero: invalid zero steps read as 1 instead of
  /// trapping.
  mlir::Value nonZero(mlir::Value x) { return select(eq(x, c(0)), c(1), x); }
  /// x + y, a constant when both are, and no op when one is 0.
  mlir::OpFoldResult foldedAdd(mlir::OpFoldResult x, mlir::OpFoldResult y) {
    std::optional<int64_t> cx = mlir::getConstantIntValue(x);
    std::optional<int64_t> cy = mlir::getConstantIntValue(y);
    if (cx && cy)
      return b.getIndexAttr(*cx + *cy);
    if (cx == 0)
      return y;
    if (cy == 0)
      return x;
    return add(mlir::getValueOrCreateConstantIndexOp(b, loc, x),
               mlir::getValueOrCreateConstantIndexOp(b, loc, y));
  }
};

/// The element `index` of an integer index tensor as an index into a data
/// dim of size `size`: negative values count from the end, and a run-time
/// check names `op` and `dim` when it is out of range.
mlir::Value checkedIndex(mlir::OpBuilder &b, mlir::Location loc, mlir::Operation *op,
                         mlir::Value index, mlir::Value size, int64_t dim);

/// The sizes of every dimension of `tensor`: attributes for static ones,
/// tensor.dim values for dynamic ones.
llvm::SmallVector<mlir::OpFoldResult> sizesOf(mlir::OpBuilder &b,
                                              mlir::Location loc,
                                              mlir::Value tensor);
/// A memref.alloc of `type`'s shape (identity layout) whose dynamic sizes
/// come from `sizes` (one per dimension): the fresh buffer a microkernel
/// call writes.
mlir::Value allocateBuffer(mlir::OpBuilder &b, mlir::Location loc,
                           mlir::RankedTensorType type,
                           llvm::ArrayRef<mlir::OpFoldResult> sizes);
/// A tensor.empty of `type` whose dynamic sizes come from `sizes` (one per
/// dimension).
mlir::Value emptyTensor(mlir::OpBuilder &b, mlir::Location loc,
                        mlir::RankedTensorType type,
                        llvm::ArrayRef<mlir::OpFoldResult> sizes);
/// The size of one broadcast dimension from the operands' sizes there: a
/// static size other than 1 if there is one, else the largest dynamic size,
/// else 1.
mlir::OpFoldResult broadcastDim(mlir::OpBuilder &b, mlir::Location loc,
                                llvm::ArrayRef<mlir::OpFoldResult> sizes);
/// The sizes of `resultType` when it is the NumPy broadcast of `operands`;
/// each dynamic one is the broadcastDim of the operands' sizes.
llvm::SmallVector<mlir::OpFoldResult>
broadcastSizes(mlir::OpBuilder &b, mlir::Location loc,
               mlir::RankedTensorType resultType, mlir::ValueRange operands);
/// The indexing map that reads `operandType` broadcast to `resultRank`
/// dimensions: aligned on the right, a static size-1 dimension reads index 0
/// unless the result dimension is also static 1.
mlir::AffineMap broadcastMap(mlir::RankedTensorType operandType,
                             mlir::RankedTensorType resultType);
/// Copies `input`, operand `operandNumber` of `op`, broadcast to `resultType`
/// (sizes `sizes`), checking that each dynamic dim of `input` has the size
/// it is read at (they do not broadcast).
mlir::Value broadcastTo(mlir::OpBuilder &b, mlir::Location loc,
                        mlir::Operation *op, unsigned operandNumber,
                        mlir::Value input, mlir::RankedTensorType resultType,
                        llvm::ArrayRef<mlir::OpFoldResult> sizes);
/// Checks, for each operand, that every dynamic dim read through
/// broadcastMap equals the result's size there (static against static is
/// left to the op's verifier). Operands are numbered from
/// `firstOperandNumber` in messages.
void checkBroadcast(mlir::OpBuilder &b, mlir::Location loc, mlir::Operation *op,
                    mlir::ValueRange operands, mlir::RankedTensorType resultType,
                    llvm::ArrayRef<mlir::OpFoldResult> sizes,
                    unsigned firstOperandNumber = 0);
/// Checks that `sizes`, computed from the operands, agree with the static
/// sizes of `resultType` (which the ONNX graph may declare).
void checkResultSizes(mlir::OpBuilder &b, mlir::Location loc,
                      mlir::Operation *op, mlir::RankedTensorType resultType,
                      llvm::ArrayRef<mlir::OpFoldResult> sizes,
                      const llvm::Twine &result = "the result");
/// Entry `i` (row-major) of the kiln operand `tensor` (the op's own operand,
/// not the adaptor's), in its element type.
mlir::Value entryValue(mlir::ConversionPatternRewriter &rewriter,
                       mlir::Location loc, mlir::Value tensor, int64_t i);
/// entryValue of the i64 `shape` (a 1-D shape, or a 0-d scalar with i = 0)
/// as an index value.
mlir::Value shapeEntry(mlir::ConversionPatternRewriter &rewriter,
                       mlir::Location loc, mlir::Value shape, int64_t i);
/// The scalar computation of elementwise op `op` on one element of each
/// operand; `resultType` is the result's element type.
mlir::Value emitScalar(mlir::Operation *op, mlir::OpBuilder &b,
                       mlir::Location loc, mlir::ValueRange args,
                       mlir::Type resultType);
/// Whether emitScalar knows `op`.
bool isElementwiseOp(mlir::Operation *op);
/// The elements of `input` in row-major order with the shape `sizes`, typed
/// `resultType`. A view where bufferization can make one.
mlir::Value reshapeTo(mlir::OpBuilder &b, mlir::Location loc, mlir::Value input,
                      mlir::RankedTensorType resultType,
                      llvm::ArrayRef<mlir::OpFoldResult> sizes);
/// A scalar constant of `type` (float or integer) holding `value`.
mlir::Value scalarConstant(mlir::OpBuilder &b, mlir::Location loc,
                           mlir::Type type, double value);
/// The lowest value of `type`: -inf for floats, the minimum for integers.
mlir::Value lowestValue(mlir::OpBuilder &b, mlir::Location loc, mlir::Type type);
/// The highest value of `type`: +inf for floats, the maximum for integers.
mlir::Value highestValue(mlir::OpBuilder &b, mlir::Location loc, mlir::Type type);
/// The larger (smaller) of two scalars of one type: NaN-propagating for
/// floats, signed or unsigned as the integer type says.
mlir::Value maxOf(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x, mlir::Value y);
mlir::Value minOf(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x, mlir::Value y);
/// Reduces the `axes` of `input` (sorted) with `combine`, starting from
/// `init`; the reduced axes are dropped, or kept as size 1 when `resultType`
/// keeps them.
mlir::Value reduce(mlir::OpBuilder &b, mlir::Location loc, mlir::Value input,
                   llvm::ArrayRef<int64_t> axes, mlir::Value init,
                   mlir::RankedTensorType resultType, ReduceFn combine);
/// For picking the larger (or smaller) of two scalars: whether `x` beats `y`
/// outright, and whether they tie. A NaN beats every number when `nanWins`
/// and loses to every number otherwise; two NaNs tie.
std::pair<mlir::Value, mlir::Value>
compareForSelection(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x,
                    mlir::Value y, bool larger, bool nanWins);
/// `value` (an index) as a scalar of `type`.
mlir::Value indexToScalar(mlir::OpBuilder &b, mlir::Location loc,
                          mlir::Value value, mlir::Type type);
/// Emits a run-time check (cf.assert) that `ok` holds, whose message names
/// `op`'s ONNX node and says `what` is wrong. Backends turn failed checks into
/// errors of the run, not crashes.
void check(mlir::OpBuilder &b, mlir::Location loc, mlir::Operation *op,
           mlir::Value ok, const llvm::Twine &what);
/// Checks that sizes `actual` and `expected` are equal, unless they are the
/// same value, the same dim of the same tensor, or equal constants.
void checkSameSize(mlir::OpBuilder &b, mlir::Location loc, mlir::Operation *op,
                   mlir::OpFoldResult actual, mlir::OpFoldResult expected,
                   const llvm::Twine &what);
/// An i64 constant.
mlir::Value i64Constant(mlir::OpBuilder &b, mlir::Location loc, int64_t value);
/// The product of `sizes` as one size.
mlir::OpFoldResult multiplySizes(mlir::OpBuilder &b, mlir::Location loc,
                                 llvm::ArrayRef<mlir::OpFoldResult> sizes);
/// A tensor type of `sizes` (static where they are constants).
mlir::RankedTensorType tensorType(llvm::ArrayRef<mlir::OpFoldResult> sizes,
                                  mlir::Type elementType);
/// `value` with `type` and `sizes`: a reshape, or only a cast where the rank
/// stays, since flattening a rank-2 operand's rows (or restoring them)
/// changes nothing. A reshape would force a copy of a strided view.
mlir::Value reshapeRows(mlir::OpBuilder &b, mlir::Location loc, mlir::Value value,
                        mlir::RankedTensorType type,
                        llvm::ArrayRef<mlir::OpFoldResult> sizes);
/// A product by a 2-D weight as the kernels see it: the input's leading dims
/// flattened into the rows of [rows, K] · [K, N] = [rows, N].
struct RowsProduct {
  llvm::SmallVector<mlir::OpFoldResult> resultSizes; // [..., N]
  mlir::OpFoldResult rows;
  mlir::Value flatInput; // [rows, K]
};
/// `input` [..., K] as the rows of a product with N columns, checking the
/// result's sizes against `resultType`.
RowsProduct flattenRows(mlir::OpBuilder &b, mlir::Location loc, mlir::Operation *op,
                        mlir::Value input, llvm::ArrayRef<mlir::OpFoldResult> inputSizes,
                        mlir::OpFoldResult n, mlir::RankedTensorType resultType);
/// A (possibly dynamic) tensor cast of `value` to `type` when they differ.
mlir::Value castTo(mlir::OpBuilder &b, mlir::Location loc, mlir::Value value,
                   mlir::RankedTensorType type);

} // namespace lowering
} // namespace kiln

#endif // KILN_COMPILER_CONVERSION_KILNTOLINALG_PATTERNS_H
