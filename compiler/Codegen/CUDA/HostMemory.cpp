//===- HostMemory.cpp - Which buffers the GPU target's host code owns -----===//
#include "compiler/Codegen/CUDA/HostMemory.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

using namespace mlir;

namespace kiln {

bool inHostMemory(Value memref) {
  while (Operation *def = memref.getDefiningOp()) {
    if (isa<memref::AllocaOp, memref::GetGlobalOp>(def))
      return true;
    auto view = dyn_cast<ViewLikeOpInterface>(def);
    if (!view)
      return false;
    memref = view.getViewSource();
  }
  return false;
}

OpOperand *bufferReadByHost(Operation *op) {
  if (auto load = dyn_cast<memref::LoadOp>(op))
    return &load.getMemrefMutable();
  if (auto reshape = dyn_cast<memref::ReshapeOp>(op))
    return &reshape.getShapeMutable();
  return nullptr;
}

} // namespace kiln
