//===- AllocateOnDevice.cpp - The kiln-allocate-on-device pass ------------===//
#include "compiler/Codegen/CUDA/Passes.h"

#include "mlir/IR/PatternMatch.h"

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_ALLOCATEONDEVICE
#include "compiler/Codegen/CUDA/Passes.h.inc"

namespace {

struct AllocateOnDevicePass : public impl::AllocateOnDeviceBase<AllocateOnDevicePass> {
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    // The kernels are gpu.funcs of their own module by now, so every alloc
    // left in a func.func is the host's.
    getOperation().walk([&](Operation *op) {
      rewriter.setInsertionPoint(op);
      if (auto alloc = dyn_cast<memref::AllocOp>(op))
        rewriter.replaceOpWithNewOp<gpu::AllocOp>(
            alloc, alloc.getType(), /*asyncToken=*/Type(), /*asyncDependencies=*/ValueRange{},
            alloc.getDynamicSizes(), alloc.getSymbolOperands(), /*hostShared=*/false);
      else if (auto dealloc = dyn_cast<memref::DeallocOp>(op))
        rewriter.replaceOpWithNewOp<gpu::DeallocOp>(dealloc, /*asyncToken=*/Type(),
                                                    ValueRange{}, dealloc.getMemref());
    });
  }
};

} // namespace
} // namespace kiln
