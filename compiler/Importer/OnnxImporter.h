//===- OnnxImporter.h - ONNX to kiln dialect importer -----------*- C++ -*-===//
//
// Reads an ONNX model (binary protobuf or ONNX's textual syntax), checks it,
// runs ONNX shape inference and builds a module with one `func.func` of kiln
// ops. Failures return null and describe every problem in `errorMessage`.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_COMPILER_IMPORTER_ONNXIMPORTER_H
#define KILN_COMPILER_IMPORTER_ONNXIMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>

namespace mlir {
class MLIRContext;
} // namespace mlir

namespace kiln {

enum class OnnxInputFormat {
  /// Text when the file name ends in `.onnxtxt`, binary protobuf otherwise.
  Auto,
  Binary,
  Text,
};

struct ImportOptions {
  OnnxInputFormat format = OnnxInputFormat::Auto;
  /// Name of the function that holds the graph.
  std::string functionName = "main";
  /// Constants with at most this many elements become `dense` literals that
  /// folders can read; larger ones become `dense_resource` blobs.
  int64_t inlineConstantLimit = 16;
  /// Run onnx::checker on the model before importing it. Without it ONNX
  /// shape inference does not run either: it crashes on unchecked graphs.
  bool runChecker = true;
};

/// Registers the dialects the importer produces into `context`.
void registerImporterDialects(mlir::MLIRContext &context);

/// Imports the model at `path` ("-" reads standard input). Weights stored in
/// ONNX external-data files are memory-mapped and referenced, not copied.
mlir::OwningOpRef<mlir::ModuleOp>
importOnnxFile(mlir::MLIRContext &context, llvm::StringRef path,
               const ImportOptions &options, std::string &errorMessage);

/// Imports a model held in memory. `sourceName` names it in diagnostics and
/// `baseDir` is where external-data paths are resolved.
mlir::OwningOpRef<mlir::ModuleOp>
importOnnxBuffer(mlir::MLIRContext &context, llvm::StringRef contents,
                 llvm::StringRef sourceName, llvm::StringRef baseDir,
                 const ImportOptions &options, std::string &errorMessage);

} // namespace kiln

#endif // KILN_COMPILER_IMPORTER_ONNXIMPORTER_H
