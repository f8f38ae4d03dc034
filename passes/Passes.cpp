//===- Passes.cpp - The graph optimization pipeline -----------------------===//
#include "passes/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;

namespace kiln {

bool OptimizationOptions::disable(llvm::StringRef names, std::string &error) {
  llvm::SmallVector<llvm::StringRef> list;
  names.split(list, ',', /*MaxSplit=*/-1, /*KeepEmpty=*/false);
  for (llvm::StringRef name : list) {
    name = name.trim();
    bool all = name == "fusion";
    bool known = all;
    for (auto [flag, option] :
         {std::pair<llvm::StringRef, bool *>{"fuse-attention", &fuseAttention},
          {"fuse-normalizations", &fuseNormalizations},
          {"fuse-activations", &fuseActivations},
          {"fuse-elementwise", &fuseElementwise}})
      if (all || name == flag) {
        *option = false;
        known = true;
      }
    if (name == "constant-fold") {
      foldConstants = false;
      known = true;
    }
    if (!known) {
      error = "unknown optimization '" + name.str() +
              "' (known: constant-fold, fusion, fuse-attention, "
              "fuse-normalizations, fuse-activations, fuse-elementwise)";
      return false;
    }
  }
  return true;
}

void buildGraphOptimizationPipeline(OpPassManager &pm,
                                    const OptimizationOptions &options) {
  OpPassManager &func = pm.nest<func::FuncOp>();
  if (options.foldConstants)
    func.addPass(createKilnFoldConstants());
  if (options.fuseAttention)
    func.addPass(createKilnFuseAttention());
  if (options.fuseNormalizations)
    func.addPass(createKilnFuseNormalizations());
  if (options.fuseActivations)
    func.addPass(createKilnFuseActivations());
  func.addPass(createCanonicalizerPass());
}

void registerKilnGraphPipeline() {
  PassPipelineRegistration<>(
      "kiln-optimize-graph",
      "Runs every kiln graph optimization (folding, fusions) on kiln IR",
      [](OpPassManager &pm) { buildGraphOptimizationPipeline(pm); });
}

} // namespace kiln
