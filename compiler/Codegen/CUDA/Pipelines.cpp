//===- Pipelines.cpp - The CUDA target's lowering -------------------------===//
#include "compiler/Codegen/CUDA/Pipelines.h"
#include "compiler/Codegen/CUDA/Passes.h"
#include "compiler/Codegen/Common/Pipelines.h"
#include "compiler/Codegen/LLVMCPU/Pipelines.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/SCFToGPU/SCFToGPUPass.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;

namespace kiln {

namespace {
constexpr llvm::StringLiteral kGpuArchs[] = {"sm_75", "sm_80", "sm_86", "sm_87",
                                             "sm_89", "sm_90", "sm_90a"};
} // namespace

bool isSupportedGpuArch(llvm::StringRef arch) {
  return llvm::is_contained(kGpuArchs, arch);
}

std::string supportedGpuArchs() {
  return llvm::join(std::begin(kGpuArchs), std::end(kGpuArchs), ", ");
}

bool cudaOptimizations(OptimizationOptions &options, std::string &error) {
  if (options.quantizeWeights) {
    error = "--quantize: the CUDA target has no quantized kernels yet";
    return false;
  }
  if (options.pagedKvBlockSize > 0) {
    error = "--kv-cache=paged: the CUDA target has no paged attention yet";
    return false;
  }
  // These make kiln.linear and kiln.attention, or lay weights out for them,
  // which the CPU runs as its own kernels; on the GPU their decomposed
  // forms (products, softmax, elementwise epilogues) are lowered like any
  // other op. A QDQ model's products then stay dequantize and matmul.
  options.foldQuantizedProducts = false;
  options.fuseAttention = false;
  options.fuseGemmEpilogues = false;
  options.packWeights = false;
  return true;
}

void addCudaKernelMapping(OpPassManager &pm, const OptimizationOptions &options) {
  ApproximateMathOptions math;
  math.libraryFree = true;
  pm.addPass(createApproximateMath(math));
  pm.addNestedPass<func::FuncOp>(createFillTensorsOnDevice());
  addBufferization(pm);
  pm.addPass(createCanonicalizerPass());
  pm.addNestedPass<func::FuncOp>(createKeepShapesOnHost());
  // The arena that memory planning makes is, on this target, one buffer of
  // device memory.
  addBufferPlanning(pm, options);
  pm.addNestedPass<func::FuncOp>(createMapLoopsToGpu());
}

void buildCudaLoweringPipeline(OpPassManager &pm, llvm::StringRef arch,
                               const OptimizationOptions &options) {
  addCudaKernelMapping(pm, options);
  pm.addNestedPass<func::FuncOp>(createReadDeviceValuesOnHost());
  pm.addPass(createParallelLoopToGpuPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createGpuKernelOutliningPass());
  pm.addPass(createMergeGpuModules());

  GpuNVVMAttachTargetOptions target;
  target.chip = arch.str();
  target.optLevel = 3;
  pm.addPass(createGpuNVVMAttachTarget(target));
  OpPassManager &kernelLoops = pm.nest<gpu::GPUModuleOp>();
  kernelLoops.addPass(createLowerAffinePass());
  kernelLoops.addPass(createConvertSCFToCFPass());
  pm.addPass(createKernelChecksToFlag());
  OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
  kernels.addPass(createConvertGpuOpsToNVVMOps());
  kernels.addPass(createLibdeviceToIntrinsics());
  // The math that convert-gpu-to-nvvm leaves (it has no libdevice call for
  // math.fma, which kiln-approximate-math's polynomials are made of).
  kernels.addPass(createConvertMathToLLVMPass());
  kernels.addPass(createCanonicalizerPass());
  kernels.addPass(createCSEPass());
  kernels.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createVerifyDeviceCode());

  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = "isa";
  pm.addPass(createGpuModuleToBinaryPass(binary));
}

void addCudaHostLowering(OpPassManager &pm) {
  pm.addNestedPass<func::FuncOp>(createAllocateOnDevice());
  // The runtime gives every launch, copy and allocation of a run the same
  // stream, in order, and so needs none of the waits this pass adds between
  // them: the host reads device memory only through a copy, which waits
  // for itself (runtime/src/cuda/GpuRuntimeCalls.cpp).
  pm.addNestedPass<func::FuncOp>(createGpuAsyncRegionPass());
  addLLVMCPULoopLowering(pm, [](OpPassManager &memrefs) {
    memrefs.addPass(createGpuToLLVMConversionPass());
  });
}

std::string kernelAssembly(ModuleOp module) {
  auto binary = module.lookupSymbol<gpu::BinaryOp>(kKernelModuleName);
  if (!binary || binary.getObjects().empty())
    return "";
  auto object = cast<gpu::ObjectAttr>(binary.getObjects()[0]);
  // The PTX is kept with the NUL that the driver's cuModuleLoadData reads
  // up to.
  return object.getObject().getValue().rtrim('\0').str();
}

} // namespace kiln
