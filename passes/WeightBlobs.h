//===- WeightBlobs.h - Reading and replacing constant weights --*- C++ -*-===//
//
// The passes that rewrite constant weights (kiln-pack-weights,
// kiln-quantize-weights), and the importer where it lays out a weight that
// arrives quantized (MatMulNBits), read a weight where it lies, write its
// replacement as the same kind of attribute, and give a replaced
// `dense_resource` blob's bytes back as soon as nothing names it, so that a
// model's weights are held once while it compiles. The weights they write
// go to a scratch file rather than the heap, so that kilnc's memory holds
// a rewritten weight only while something writes or reads it.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_PASSES_WEIGHTBLOBS_H
#define KILN_PASSES_WEIGHTBLOBS_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <optional>
#include <string>
#include <vector>

namespace kiln {

/// The bytes of a constant in MLIR's dense layout, read where they are (a
/// splat is expanded into `storage`), or nothing when its data is not at
/// hand (or is i1, packed in bits).
std::optional<llvm::ArrayRef<char>> elementBytes(mlir::ElementsAttr value,
                                                 std::vector<char> &storage);

/// elementBytes as f32 values, for an f32 constant.
std::optional<llvm::ArrayRef<float>> floatValues(mlir::ElementsAttr value,
                                                 std::vector<char> &storage);

/// A constant of `type` whose bytes `fill` writes (zeroed first), made as
/// the same kind of attribute as `original`: a `dense_resource` blob named
/// after the original's with `suffix` for a weight that was one (written
/// straight into the blob), else a dense literal. A blob of 64 KiB or more
/// is kept in a scratch file in TMPDIR (on the heap when that would leave
/// TMPDIR less than 256 MiB free) and leaves the process's memory once
/// written (see dropScratchPages).
mlir::ElementsAttr
replacementWeight(mlir::ElementsAttr original, mlir::RankedTensorType type,
                  llvm::StringRef suffix,
                  llvm::function_ref<void(llvm::MutableArrayRef<char>)> fill);

/// Takes the pages that `bytes` touches out of this process's memory when
/// they hold a weight that replacementWeight kept in its scratch file; they
/// stay in the file (a later read maps them again). Other memory is left
/// alone, so a reader of any weight's bytes can call it once done with
/// them.
void dropScratchPages(llvm::ArrayRef<char> bytes);

/// A weight's name, for reports and for matching it across compiles: its
/// ONNX initializer's (or, for a weight that the compiler computed, the
/// node's), else its location printed.
std::string weightName(mlir::Location loc);

/// How many operations name each `dense_resource` blob of a module. Erasing
/// the last reader of a blob empties it, so that a replaced weight's
/// original is given back (see WeightLoader) before the next weight is
/// rewritten.
class BlobReaders {
public:
  explicit BlobReaders(mlir::ModuleOp module);

  /// Erases `op`, emptying the blobs that it was the last to name.
  void erase(mlir::Operation *op);

private:
  llvm::DenseMap<mlir::DialectResourceBlobManager::BlobEntry *, int64_t> count_;
};

} // namespace kiln

#endif // KILN_PASSES_WEIGHTBLOBS_H
