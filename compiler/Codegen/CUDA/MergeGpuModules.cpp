//===- MergeGpuModules.cpp - The kiln-merge-gpu-modules pass --------------===//
#include "compiler/Codegen/CUDA/Passes.h"
#include "compiler/Codegen/CUDA/Pipelines.h"

#include "mlir/IR/SymbolTable.h"

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_MERGEGPUMODULES
#include "compiler/Codegen/CUDA/Passes.h.inc"

namespace {

struct MergeGpuModulesPass : public impl::MergeGpuModulesBase<MergeGpuModulesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<gpu::GPUModuleOp> kernelModules(module.getOps<gpu::GPUModuleOp>());
    if (kernelModules.empty()) {
      // Everything was folded away: an empty module still makes valid PTX.
      auto builder = OpBuilder::atBlockEnd(module.getBody());
      builder.create<gpu::GPUModuleOp>(module.getLoc(), kKernelModuleName);
      module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(), builder.getUnitAttr());
      return;
    }
    gpu::GPUModuleOp merged = kernelModules.front();
    SymbolTable symbols(module);
    if (merged.getName() != kKernelModuleName &&
        failed(symbols.rename(merged, kKernelModuleName))) {
      merged.emitOpError("could not be renamed ") << kKernelModuleName;
      return signalPassFailure();
    }
    // Each launch's kernel, by its module and name, as it is named in the
    // merged module: SymbolTable::insert renames a kernel whose name is taken.
    llvm::DenseMap<std::pair<StringAttr, StringAttr>, StringAttr> movedKernels;
    SymbolTable kernels(merged);
    for (gpu::GPUModuleOp other : llvm::drop_begin(kernelModules)) {
      for (Operation &op : llvm::make_early_inc_range(other.getBody()->without_terminator())) {
        StringAttr name = SymbolTable::getSymbolName(&op);
        op.remove();
        movedKernels[{other.getNameAttr(), name}] = kernels.insert(&op);
      }
      other.erase();
    }
    module.walk([&](gpu::LaunchFuncOp launch) {
      StringAttr kernel = launch.getKernelName();
      auto moved = movedKernels.find({launch.getKernelModuleName(), kernel});
      if (moved != movedKernels.end())
        kernel = moved->second;
      launch.setKernelAttr(
          SymbolRefAttr::get(merged.getNameAttr(), {FlatSymbolRefAttr::get(kernel)}));
    });
  }
};

} // namespace
} // namespace kiln
