//===- BufferViews.h - Where a view's bytes start --------------*- C++ -*-===//
//
// Memory planning makes every planned buffer a memref.view of the arena, and
// a kernel call passes a buffer by the address of its first element: both
// must see through views to the buffer they view, keeping memref.view's byte
// shifts, which MLIR 19's expand-strided-metadata drops.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_COMPILER_CODEGEN_COMMON_BUFFERVIEWS_H
#define KILN_COMPILER_CODEGEN_COMMON_BUFFERVIEWS_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace kiln {

/// The buffer that `buffer` is a view of, through every view-like op, with
/// the byte shifts of the memref.view ops on the way in `shifts` (the only
/// view-like ops that move the aligned pointer).
inline mlir::Value viewRoot(mlir::Value buffer, llvm::SmallVectorImpl<mlir::Value> &shifts) {
  mlir::Value root = buffer;
  while (auto viewLike = root.getDefiningOp<mlir::ViewLikeOpInterface>()) {
    if (auto view = llvm::dyn_cast<mlir::memref::ViewOp>(viewLike.getOperation()))
      shifts.push_back(view.getByteShift());
    root = viewLike.getViewSource();
  }
  return root;
}

/// The aligned pointer of `buffer` as an index, read from the buffer that
/// `buffer` is a view of, plus the byte shifts of the memref.view ops in
/// between. MLIR 19's expand-strided-metadata folds
/// extract_aligned_pointer_as_index through every view-like op as if each
/// kept its source's pointer, which drops a memref.view's shift.
inline mlir::Value alignedPointerOf(mlir::OpBuilder &b, mlir::Location loc, mlir::Value buffer) {
  llvm::SmallVector<mlir::Value> shifts;
  mlir::Value root = viewRoot(buffer, shifts);
  mlir::Value pointer = b.create<mlir::memref::ExtractAlignedPointerAsIndexOp>(loc, root);
  for (mlir::Value shift : shifts)
    pointer = b.create<mlir::arith::AddIOp>(loc, pointer, shift);
  return pointer;
}

} // namespace kiln

#endif // KILN_COMPILER_CODEGEN_COMMON_BUFFERVIEWS_H
