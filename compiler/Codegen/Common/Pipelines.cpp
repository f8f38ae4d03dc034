//===- Pipelines.cpp - The lowering every target shares ------------------===//
#include "compiler/Codegen/Common/Pipelines.h"
#include "compiler/Codegen/Common/Passes.h"
#include "compiler/Conversion/Passes.h"
#include "passes/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotAnalysis.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

namespace kiln {

void buildTensorLoweringPipeline(OpPassManager &pm, const KernelLowering &lowerKernels,
                                 const OptimizationOptions &options) {
  buildGraphOptimizationPipeline(pm, options);
  buildLinalgLoweringPipeline(pm, lowerKernels, options);
}

void buildLinalgLoweringPipeline(OpPassManager &pm, const KernelLowering &lowerKernels,
                                 const OptimizationOptions &options) {
  pm.addPass(createPrepareEntryPoint());
  lowerKernels(pm);
  pm.addPass(createConvertKilnToLinalg());
  pm.addPass(createCanonicalizerPass());
  if (options.fuseElementwise) {
    if (options.duplicateProducers)
      pm.addNestedPass<func::FuncOp>(createDuplicateElementwiseProducers());
    pm.addNestedPass<func::FuncOp>(createLinalgElementwiseOpFusionPass());
  }
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void addBufferization(OpPassManager &pm) {
  pm.addPass(bufferization::createEmptyTensorEliminationPass());
  pm.addPass(bufferization::createEmptyTensorToAllocTensorPass());
  bufferization::OneShotBufferizationOptions bufferization;
  bufferization.bufferizeFunctionBoundaries = true;
  bufferization.setFunctionBoundaryTypeConversion(
      bufferization::LayoutMapOption::IdentityLayoutMap);
  bufferization.memCpyFn = [](OpBuilder &b, Location loc, Value from, Value to) {
    b.create<linalg::CopyOp>(loc, from, to);
    return success();
  };
  pm.addPass(bufferization::createOneShotBufferizePass(bufferization));
}

void addBufferPlanning(OpPassManager &pm, const OptimizationOptions &options) {
  if (options.planMemory)
    pm.addPass(createPlanMemory());
  bufferization::buildBufferDeallocationPipeline(
      pm, bufferization::BufferDeallocationPipelineOptions());
  pm.addPass(createBufferizationToMemRefPass());
}

} // namespace kiln
