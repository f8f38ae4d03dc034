//===- ShapeInference.h - Result shapes of kiln ops from their operands -*- C++ -*-===//
//
// ONNX shape inference leaves a dim unknown as soon as a shape is computed
// (a Reshape whose shape operand is a Concat of dims), and every op after it
// inherits the unknown dims. Once kiln-fold-constants has folded such shape
// subgraphs, the result types can be made static again, which lets the dims
// read from them fold in turn and the fusions see static sizes.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_PASSES_SHAPEINFERENCE_H
#define KILN_PASSES_SHAPEINFERENCE_H

#include "dialects/Kiln/IR/KilnOps.h"

namespace kiln {

/// The elements an ONNX Slice keeps along one axis of `size` elements:
/// negative indices count from the end, starts clamp to [0, size] ([0, size
/// - 1] going backwards) and ends to [-1, size]. `step` is not 0.
struct SliceRange {
  int64_t first;
  int64_t count;
};
SliceRange sliceRange(int64_t size, int64_t start, int64_t end, int64_t step);

/// The result shape of ONNX Reshape of an `input` shape by the requested
/// `entries`, ShapedType::kDynamic where the input or an entry is unknown
/// (kDynamic) or the entries are invalid: a 0 copies the input's size at its
/// index (is an empty dim with `allowZero`), one -1 is what keeps the
/// element count.
llvm::SmallVector<int64_t> reshapeShape(llvm::ArrayRef<int64_t> input,
                                        llvm::ArrayRef<int64_t> entries,
                                        bool allowZero);

/// Makes the result types of the kiln op `op` as static as its operands'
/// types and constant operands prove them, and makes it read the sources of
/// tensor.casts that only erased sizes. Nothing changes where that would
/// break a constraint of `op` or of a kiln op using it, or where a static
/// size already in a type disagrees: the run-time checks report those. Uses
/// by ops of other dialects (func.return, say) keep the old type through a
/// tensor.cast.
void refineResultTypes(mlir::Operation *op);

} // namespace kiln

#endif // KILN_PASSES_SHAPEINFERENCE_H
