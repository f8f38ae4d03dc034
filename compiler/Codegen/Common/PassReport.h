//===- PassReport.h - What each compiler pass did, as JSON ------*- C++ -*-===//
//
// `kilnc --report=FILE.json`: for every pass of the compile pipelines, the
// number of ops it found and left, and the ops it created and removed by
// kind, so that each optimization's effect can be read off one file.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_COMPILER_CODEGEN_PASSREPORT_H
#define KILN_COMPILER_CODEGEN_PASSREPORT_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Pass/PassInstrumentation.h"
#include "llvm/Support/JSON.h"

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace kiln {

class PassReport {
public:
  /// Ops by name inside an op (the op itself excluded).
  using OpCounts = std::map<std::string, int64_t>;

  /// An instrumentation that records into this report; add it to each pass
  /// manager whose passes should appear. The report must outlive it.
  std::unique_ptr<mlir::PassInstrumentation> instrumentation();

  /// The report: `passes` in the order they ran; `fusions`, the kiln ops
  /// that the kiln-fuse-* passes created, by kind (not the reshapes and
  /// constants they add around them); `folded_ops`, how many
  /// ops kiln-fold-constants replaced by constants (or removed as their dead
  /// inputs), constants not counted; `memory_plan`, when memory was
  /// planned: the arena's bytes, the sum of the planned buffers' bytes, each
  /// buffer's offset and lifetime (positions of its first and last use in
  /// the entry block), and the buffers left on the heap with the reason;
  /// `quantization`, when weights were quantized: each one's name, shape,
  /// products and the relative RMS of its error; and `calibration`.
  llvm::json::Object toJson() const;

  /// Records kiln-plan-memory's `kiln.memory_plan` attribute, which toJson()
  /// gives as `memory_plan`.
  void setMemoryPlan(mlir::DictionaryAttr plan);

  /// Records kiln-quantize-weights' `kiln.quantization` attribute, which
  /// toJson() gives as `quantization`.
  void setQuantization(mlir::DictionaryAttr quantization);

  /// Records what kilnc's calibration did and measured (its runs of the
  /// model: calibration sets, the accuracy of a quantized build against
  /// f32), which toJson() gives as `calibration`.
  void setCalibration(llvm::json::Value calibration);

  /// Writes toJson() to `path`; false with `error` on failure.
  bool write(llvm::StringRef path, std::string &error) const;

  static OpCounts countOps(mlir::Operation *root);

private:
  struct PassRun {
    std::string pass;
    std::string target; // "builtin.module" or "func.func @name"
    OpCounts before, after;
  };
  friend class PassReportInstrumentation;

  mutable std::mutex mutex_;
  std::vector<PassRun> runs_;
  llvm::json::Value memoryPlan_ = nullptr;
  llvm::json::Value quantization_ = nullptr;
  llvm::json::Value calibration_ = nullptr;
};

} // namespace kiln

#endif // KILN_COMPILER_CODEGEN_PASSREPORT_H
