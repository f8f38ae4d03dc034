//===- Passes.h - Kiln passes -----------------------------------*- C++ -*-===//
#ifndef KILN_PASSES_PASSES_H
#define KILN_PASSES_PASSES_H

#include "dialects/Kiln/IR/KilnDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <memory>
#include <string>

namespace kiln {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

/// The module attribute in which kiln-quantize-weights records what it did
/// for `kilnc --report`: the mode, group size, whether the LM head was
/// included, and each quantized weight's name, rows, columns, products and
/// the relative RMS of its quantization error.
constexpr llvm::StringLiteral kQuantizationAttrName = "kiln.quantization";

/// The module attribute by which kilnc hands kiln-quantize-weights the
/// calibrated input range of each weight's products (static W8A8): a
/// dictionary from the weight's name (weightName) to [lo, hi] (f32 array).
constexpr llvm::StringLiteral kCalibratedInputRangesAttrName =
    "kiln.calibrated_input_ranges";

/// Which graph optimizations run. Everything is on by default; `kilnc
/// --disable=...` turns optimizations off by name to measure their effect.
struct OptimizationOptions {
  /// A QDQ model's quantized products as int8 kiln.linear
  /// (kiln-fold-quantized-products), first.
  bool foldQuantizedProducts = true;
  bool foldConstants = true;
  /// Two-input einsums that contract one letter as kiln.matmul
  /// (kiln-einsum-to-matmul), before the fusions look for products.
  bool einsumToMatMul = true;
  bool fuseAttention = true;
  bool fuseNormalizations = true;
  bool fuseActivations = true;
  bool fuseRotary = true;
  bool fuseGemmEpilogues = true;
  /// linalg's elementwise fusion after the lowering (chains of elementwise
  /// ops into one loop); it belongs to the tensor lowering pipeline.
  bool fuseElementwise = true;
  /// Cheap elementwise producers copied into each of their consumers before
  /// that fusion (kiln-duplicate-elementwise-producers), so that they fuse
  /// into norms and reductions too.
  bool duplicateProducers = true;
  /// Constant weights laid out for the CPU GEMM microkernels
  /// (kiln-pack-weights), after the fusions.
  bool packWeights = true;
  /// Weight-only quantization of the packed weights (kiln-quantize-weights),
  /// after the packing, to `quantizeBits` (8 or 4) with a scale per column
  /// and group of `quantizeGroupSize` rows; the product making the results
  /// too with `quantizeLmHead`. With `quantizeInputs` (W8A8, 8 bits), one
  /// scale per column and the linears' inputs quantized at run time.
  bool quantizeWeights = false;
  int64_t quantizeBits = 8;
  int64_t quantizeGroupSize = 128;
  bool quantizeLmHead = false;
  bool quantizeInputs = false;
  /// 0: the decoder keeps its past and present tensors. N > 0: it gets the
  /// generation engine's paged KV-cache interface with blocks of N tokens
  /// (kiln-page-kv-cache, last), which needs the fused attentions.
  int64_t pagedKvBlockSize = 0;
  /// The paged pool's element type: "f32", "f16" or "bf16".
  std::string pagedKvDtype = "f32";
  /// Static memory planning after bufferization (kiln-plan-memory); it
  /// belongs to each target's lowering pipeline.
  bool planMemory = true;

  /// Turns off the comma-separated `names`: "constant-fold",
  /// "einsum-to-matmul", "fusion" (every
  /// fusion), "fuse-attention", "fuse-normalizations", "fuse-activations",
  /// "fuse-rotary", "fuse-gemm-epilogues", "fuse-elementwise",
  /// "duplicate-producers", "pack-weights" or "memory-plan". False, with
  /// `error` naming it, on an unknown name.
  bool disable(llvm::StringRef names, std::string &error);
};

/// The kiln-to-kiln passes that `options` enables, between two
/// canonicalizations: constant folding, einsums as products, then the
/// fusions in the order
/// attention, normalizations, activations, rotary embeddings, GEMM
/// epilogues (which absorb the activations), then weight packing, then
/// (when asked for) weight quantization and the paged KV-cache interface.
/// `kilnc --emit=optimized` prints
/// its result, which is what the lowering starts from.
void buildGraphOptimizationPipeline(mlir::OpPassManager &pm,
                                    const OptimizationOptions &options = {});

/// Registers buildGraphOptimizationPipeline with every optimization on as the
/// kiln-opt pipeline `kiln-optimize-graph`.
void registerKilnGraphPipeline();

} // namespace kiln

#endif // KILN_PASSES_PASSES_H
