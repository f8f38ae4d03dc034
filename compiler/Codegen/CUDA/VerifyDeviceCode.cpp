//===- VerifyDeviceCode.cpp - The kiln-verify-device-code pass ------------===//
#include "compiler/Codegen/CUDA/HostMemory.h"
#include "compiler/Codegen/CUDA/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_VERIFYDEVICECODE
#include "compiler/Codegen/CUDA/Passes.h.inc"

namespace {

/// The host code may touch only its own memory; every other buffer is in
/// device memory, which is all that the kernels may be given.
LogicalResult verifyHostCode(Operation *host) {
  WalkResult result = host->walk([](Operation *op) {
    if (isa<gpu::GPUModuleOp>(op))
      return WalkResult::skip();
    if (auto launch = dyn_cast<gpu::LaunchFuncOp>(op))
      for (Value operand : launch.getKernelOperands())
        if (isa<MemRefType>(operand.getType()) && inHostMemory(operand)) {
          launch.emitOpError("gives a kernel a buffer in host memory");
          return WalkResult::interrupt();
        }
    Value touched;
    if (OpOperand *read = bufferReadByHost(op))
      touched = read->get();
    else if (auto store = dyn_cast<memref::StoreOp>(op))
      touched = store.getMemRef();
    if (touched && !inHostMemory(touched)) {
      op->emitOpError("touches device memory from the host: the GPU target "
                      "cannot yet read a tensor's values on the host (a shape, "
                      "a bound or an index computed at run time), nor run a "
                      "scatter's, cumsum's or top-k's loop");
      return WalkResult::interrupt();
    }
    if (isa<linalg::LinalgOp, scf::ParallelOp, memref::CopyOp>(op)) {
      op->emitOpError("was left on the host: the GPU target runs it in no kernel");
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

/// A kernel may call only functions its module defines: kiln links no
/// device library (CUDA's libdevice). And all of it must be lowered, to
/// the LLVM and NVVM dialects that serialization translates.
LogicalResult verifyKernels(gpu::GPUModuleOp kernels) {
  for (auto function : kernels.getOps<LLVM::LLVMFuncOp>())
    if (function.isExternal())
      return function.emitOpError("is called by a kernel but defined in no "
                                  "kernel module: it comes from CUDA's libdevice, "
                                  "which kiln does not link");
  WalkResult unlowered = kernels.getBody()->walk([](Operation *op) {
    if (isa<gpu::ModuleEndOp>(op) ||
        isa<LLVM::LLVMDialect, NVVM::NVVMDialect>(op->getDialect()))
      return WalkResult::advance();
    op->emitOpError("has no lowering in a kernel of the GPU target");
    return WalkResult::interrupt();
  });
  return failure(unlowered.wasInterrupted());
}

struct VerifyDeviceCodePass : public impl::VerifyDeviceCodeBase<VerifyDeviceCodePass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (failed(verifyHostCode(module)))
      return signalPassFailure();
    for (auto kernels : module.getOps<gpu::GPUModuleOp>())
      if (failed(verifyKernels(kernels)))
        return signalPassFailure();
  }
};

} // namespace
} // namespace kiln
