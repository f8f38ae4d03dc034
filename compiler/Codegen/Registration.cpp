//===- Registration.cpp - Code generation for kiln-opt and kilnc ----------===//
#include "compiler/Codegen/Registration.h"
#include "compiler/Codegen/CUDA/Passes.h"
#include "compiler/Codegen/CUDA/Pipelines.h"
#include "compiler/Codegen/Common/Passes.h"
#include "compiler/Codegen/Common/Pipelines.h"
#include "compiler/Codegen/LLVMCPU/Passes.h"
#include "compiler/Codegen/LLVMCPU/Pipelines.h"
#include "dialects/Kiln/IR/KilnDialect.h"

#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"

using namespace mlir;

namespace kiln {

void registerKilnCodegenPasses() {
  registerKilnCodegenCommonPasses();
  registerKilnCodegenLLVMCPUPasses();
  registerKilnCodegenCUDAPasses();
}

void registerKilnPipelines() {
  PassPipelineRegistration<>(
      "kiln-lower-to-tensors",
      "Lowers kiln IR to fused linalg on tensors (every backend; the CPU's kernels as calls)",
      [](OpPassManager &pm) { buildTensorLoweringPipeline(pm, addLLVMCPUKernelLowering); });
  PassPipelineRegistration<>(
      "kiln-lower-to-llvm-cpu",
      "Lowers linalg on tensors to the LLVM dialect for the CPU runtime",
      [](OpPassManager &pm) { buildLLVMCPULoweringPipeline(pm); });
  PassPipelineRegistration<>(
      "kiln-lower-to-cuda",
      "Lowers linalg on tensors to host code on memrefs and PTX kernels for sm_80",
      [](OpPassManager &pm) { buildCudaLoweringPipeline(pm, "sm_80"); });
}

void registerCodegenDialects(DialectRegistry &registry) {
  registry.insert<KilnDialect>();
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registerAllToLLVMIRTranslations(registry);
}

} // namespace kiln
