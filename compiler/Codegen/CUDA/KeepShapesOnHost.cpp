//===- KeepShapesOnHost.cpp - The kiln-keep-shapes-on-host pass -----------===//
#include "compiler/Codegen/CUDA/Passes.h"

#include "mlir/IR/PatternMatch.h"

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_KEEPSHAPESONHOST
#include "compiler/Codegen/CUDA/Passes.h.inc"

namespace {

/// Whether `alloc` holds only a reshape's target shape: written by stores,
/// read only as the shape operand of memref.reshape.
bool holdsOnlyAShape(memref::AllocOp alloc) {
  MemRefType type = alloc.getType();
  if (!type.getElementType().isIndex() || !type.hasStaticShape())
    return false;
  for (OpOperand &use : alloc->getUses()) {
    Operation *user = use.getOwner();
    if (auto store = dyn_cast<memref::StoreOp>(user)) {
      if (store.getMemRef() != alloc.getResult())
        return false;
    } else if (auto reshape = dyn_cast<memref::ReshapeOp>(user)) {
      if (reshape.getShape() != alloc.getResult())
        return false;
    } else if (!isa<memref::DeallocOp>(user)) {
      return false;
    }
  }
  return true;
}

struct KeepShapesOnHostPass : public impl::KeepShapesOnHostBase<KeepShapesOnHostPass> {
  void runOnOperation() override {
    SmallVector<memref::AllocOp> shapes;
    getOperation().walk([&](memref::AllocOp alloc) {
      if (holdsOnlyAShape(alloc))
        shapes.push_back(alloc);
    });
    IRRewriter rewriter(&getContext());
    for (memref::AllocOp alloc : shapes) {
      for (Operation *user : llvm::make_early_inc_range(alloc->getUsers()))
        if (isa<memref::DeallocOp>(user))
          rewriter.eraseOp(user);
      rewriter.setInsertionPoint(alloc);
      rewriter.replaceOpWithNewOp<memref::AllocaOp>(alloc, alloc.getType(),
                                                    alloc.getAlignmentAttr());
    }
  }
};

} // namespace
} // namespace kiln
