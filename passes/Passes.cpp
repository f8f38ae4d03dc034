//===- Passes.cpp - The graph optimization pipeline -----------------------===//
#include "passes/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

namespace kiln {

bool OptimizationOptions::disable(llvm::StringRef names, std::string &error) {
  struct Switch {
    llvm::StringRef name;
    bool *enabled;
    bool isFusion; // turned off by "fusion" too
  };
  const Switch switches[] = {
      {"fold-quantized-products", &foldQuantizedProducts, false},
      {"constant-fold", &foldConstants, false},
      {"einsum-to-matmul", &einsumToMatMul, false},
      {"fuse-attention", &fuseAttention, true},
      {"fuse-normalizations", &fuseNormalizations, true},
      {"fuse-activations", &fuseActivations, true},
      {"fuse-rotary", &fuseRotary, true},
      {"fuse-gemm-epilogues", &fuseGemmEpilogues, true},
      {"fuse-elementwise", &fuseElementwise, true},
      {"duplicate-producers", &duplicateProducers, true},
      {"pack-weights", &packWeights, false},
      {"memory-plan", &planMemory, false},
  };
  llvm::SmallVector<llvm::StringRef> list;
  names.split(list, ',', /*MaxSplit=*/-1, /*KeepEmpty=*/false);
  for (llvm::StringRef name : list) {
    name = name.trim();
    bool known = false;
    for (const Switch &option : switches)
      if (name == option.name || (name == "fusion" && option.isFusion)) {
        *option.enabled = false;
        known = true;
      }
    if (!known) {
      // Listed in table order, "fusion" before the fusions it stands for.
      error = "unknown optimization '" + name.str() + "' (known: ";
      bool fusionListed = false;
      for (const Switch &option : switches) {
        if (option.isFusion && !fusionListed) {
          error += "fusion, ";
          fusionListed = true;
        }
        error += option.name.str() + (&option == std::end(switches) - 1 ? ")" : ", ");
      }
      return false;
    }
  }
  return true;
}

void buildGraphOptimizationPipeline(OpPassManager &pm,
                                    const OptimizationOptions &options) {
  pm.addNestedPass<func::FuncOp>(createCanonicalizerPass());
  // A module pass: it frees the blobs of the weights it replaced.
  if (options.foldQuantizedProducts)
    pm.addPass(createKilnFoldQuantizedProducts());
  OpPassManager &func = pm.nest<func::FuncOp>();
  if (options.foldConstants)
    func.addPass(createKilnFoldConstants());
  if (options.einsumToMatMul)
    func.addPass(createKilnEinsumToMatMul());
  if (options.fuseAttention)
    func.addPass(createKilnFuseAttention());
  if (options.fuseNormalizations)
    func.addPass(createKilnFuseNormalizations());
  if (options.fuseActivations)
    func.addPass(createKilnFuseActivations());
  if (options.fuseRotary)
    func.addPass(createKilnFuseRotaryEmbeddings());
  if (options.fuseGemmEpilogues)
    func.addPass(createKilnFuseGemmEpilogues());
  // A module pass: it frees the blobs of the weights it replaced, which
  // only the whole module can tell are unread.
  if (options.packWeights)
    pm.addPass(createKilnPackWeights());
  if (options.quantizeWeights)
    pm.addPass(createKilnQuantizeWeights(
        {options.quantizeBits, options.quantizeGroupSize, options.quantizeLmHead,
         options.quantizeInputs}));
  if (options.pagedKvBlockSize > 0)
    pm.addPass(createKilnPageKvCache({options.pagedKvBlockSize, options.pagedKvDtype}));
  pm.addNestedPass<func::FuncOp>(createCanonicalizerPass());
}

void registerKilnGraphPipeline() {
  PassPipelineRegistration<>(
      "kiln-optimize-graph",
      "Runs every kiln graph optimization (folding, fusions, weight packing) "
      "on kiln IR",
      [](OpPassManager &pm) { buildGraphOptimizationPipeline(pm); });
}

} // namespace kiln
