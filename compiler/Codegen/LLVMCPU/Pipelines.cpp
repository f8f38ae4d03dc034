//===- Pipelines.cpp - The CPU target's lowering --------------------------===//
#include "compiler/Codegen/LLVMCPU/Pipelines.h"
#include "compiler/Codegen/Common/Pipelines.h"
#include "compiler/Codegen/LLVMCPU/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

namespace kiln {

void addLLVMCPUKernelLowering(OpPassManager &pm) { pm.addPass(createLowerToKernelCalls()); }

void buildLLVMCPULoweringPipeline(OpPassManager &pm,
                                  const OptimizationOptions &options) {
  pm.addPass(createApproximateMath());
  addBufferization(pm);
  pm.addPass(createCanonicalizerPass());
  // From here on no pass may move or merge ops across the plan's positions:
  // the arena's alias scopes (ArenaAliasScopes.h) take each loop nest for
  // one op whose buffers are all live at once.
  addBufferPlanning(pm, options);
  addLLVMCPULoopLowering(pm);
}

void addLLVMCPULoopLowering(
    OpPassManager &pm, const std::function<void(OpPassManager &)> &addRuntimeCallLowering) {
  pm.addPass(createLinalgToUkernels());
  pm.addPass(createConvertLinalgToLoopsPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createConvertSCFToCFPass());
  pm.addPass(createAssertsToTraps());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(arith::createArithExpandOpsPass());
  pm.addPass(createConvertMathToFuncs());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(createArithToLLVMConversionPass());
  if (addRuntimeCallLowering)
    addRuntimeCallLowering(pm);
  // Buffers come from the runtime's pool (MLIR's generic allocation
  // functions), aligned by the allocator rather than by pointer arithmetic:
  // with kiln-emit-entry-point marking the allocator's result noalias, LLVM
  // knows each buffer aliases no other, which loop vectorization and register
  // promotion of accumulators depend on.
  FinalizeMemRefToLLVMConversionPassOptions memrefToLLVM;
  memrefToLLVM.useAlignedAlloc = true;
  memrefToLLVM.useGenericFunctions = true;
  pm.addPass(createFinalizeMemRefToLLVMConversionPass(memrefToLLVM));
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createEmitEntryPoint());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

} // namespace kiln
