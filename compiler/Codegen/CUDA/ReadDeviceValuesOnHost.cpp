//===- ReadDeviceValuesOnHost.cpp - The kiln-read-device-values-on-host pass ===//
#include "compiler/Codegen/CUDA/HostMemory.h"
#include "compiler/Codegen/CUDA/Passes.h"

#include "mlir/IR/PatternMatch.h"

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_READDEVICEVALUESONHOST
#include "compiler/Codegen/CUDA/Passes.h.inc"

namespace {

/// The operand of `op` that the host reads, when it is device memory that
/// a copy can bring over whole (a contiguous buffer).
OpOperand *deviceOperandReadByHost(Operation *op) {
  if (op->getParentOfType<scf::ParallelOp>() || op->getParentOfType<gpu::LaunchOp>())
    return nullptr; // a kernel's read
  OpOperand *read = bufferReadByHost(op);
  if (!read || inHostMemory(read->get()))
    return nullptr;
  auto type = cast<MemRefType>(read->get().getType());
  return type.getLayout().isIdentity() ? read : nullptr;
}

struct ReadDeviceValuesOnHostPass
    : public impl::ReadDeviceValuesOnHostBase<ReadDeviceValuesOnHostPass> {
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    // One copy per buffer and block, made before the block's first read
    // (a walk visits a block's ops in order, so it dominates the others).
    llvm::DenseMap<std::pair<Value, Block *>, Value> copies;
    getOperation().walk([&](Operation *op) {
      OpOperand *read = deviceOperandReadByHost(op);
      if (!read)
        return;
      Value &copy = copies[{read->get(), op->getBlock()}];
      if (!copy) {
        Location loc = op->getLoc();
        auto type = cast<MemRefType>(read->get().getType());
        rewriter.setInsertionPoint(op);
        SmallVector<Value> dynamicSizes;
        for (int64_t dim = 0; dim < type.getRank(); ++dim)
          if (type.isDynamicDim(dim))
            dynamicSizes.push_back(rewriter.create<memref::DimOp>(loc, read->get(), dim));
        copy = rewriter.create<memref::AllocaOp>(loc, type, dynamicSizes);
        rewriter.create<gpu::MemcpyOp>(loc, /*asyncToken=*/Type(), ValueRange{}, copy,
                                       read->get());
      }
      rewriter.modifyOpInPlace(op, [&] { read->set(copy); });
    });
  }
};

} // namespace
} // namespace kiln
