//===- kilnc.cpp - The Kiln compiler driver -------------------------------===//
//
// kilnc MODEL.onnx --emit=kiln -o OUT.mlir
//
// Each stage that fails says so: reading, parsing, checking, importing, or
// writing the output. The exit code is non-zero on any failure.
//
//===----------------------------------------------------------------------===//
#include "compiler/Importer/OnnxImporter.h"
#include "passes/Passes.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

namespace cl = llvm::cl;

namespace {

enum class EmitKind { Kiln, Summary };

cl::OptionCategory kilncCategory("kilnc options");

cl::opt<std::string> inputPath(cl::Positional, cl::Required,
                               cl::desc("<model.onnx | model.onnxtxt | ->"),
                               cl::cat(kilncCategory));

cl::opt<std::string> outputPath("o", cl::desc("Output file ('-' for standard output)"),
                                cl::value_desc("file"), cl::init("-"),
                                cl::cat(kilncCategory));

cl::opt<EmitKind> emitKind(
    "emit", cl::desc("What to produce"), cl::init(EmitKind::Kiln),
    cl::values(clEnumValN(EmitKind::Kiln, "kiln",
                          "The imported kiln-dialect IR as MLIR text"),
               clEnumValN(EmitKind::Summary, "summary",
                          "Inputs and outputs with dimension names, and op counts")),
    cl::cat(kilncCategory));

cl::opt<kiln::OnnxInputFormat> inputFormat(
    "input-format", cl::desc("How to read the input"),
    cl::init(kiln::OnnxInputFormat::Auto),
    cl::values(clEnumValN(kiln::OnnxInputFormat::Auto, "auto",
                          "ONNX text if the name ends in .onnxtxt, else binary"),
               clEnumValN(kiln::OnnxInputFormat::Binary, "onnx",
                          "Binary ONNX protobuf (ModelProto)"),
               clEnumValN(kiln::OnnxInputFormat::Text, "onnx-text",
                          "ONNX textual syntax (onnx::OnnxParser)")),
    cl::cat(kilncCategory));

cl::opt<int64_t> inlineConstantLimit(
    "inline-constant-limit",
    cl::desc("Constants with at most this many elements are printed inline as "
             "dense literals; larger ones become dense_resource blobs"),
    cl::init(16), cl::cat(kilncCategory));

cl::opt<bool> elideWeights(
    "elide-weights",
    cl::desc("Print weight blobs as placeholders (readable, but not parseable "
             "back)"),
    cl::init(false), cl::cat(kilncCategory));

cl::opt<bool> skipChecker("skip-onnx-checker",
                          cl::desc("Do not run onnx::checker on the model"),
                          cl::init(false), cl::cat(kilncCategory));

int failStage(llvm::StringRef stage, llvm::StringRef message) {
  llvm::WithColor::error(llvm::errs(), "kilnc") << stage << " failed: " << message
                                                << "\n";
  return 1;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  cl::HideUnrelatedOptions(kilncCategory);
  cl::ParseCommandLineOptions(
      argc, argv,
      "kilnc: compiles ONNX transformer models.\n\n"
      "Imports an ONNX model (opsets 13-17, binary or textual) into the kiln\n"
      "dialect. Weights in ONNX external-data files are memory-mapped.\n");

  mlir::MLIRContext context;
  kiln::ImportOptions options;
  options.format = inputFormat;
  options.inlineConstantLimit = inlineConstantLimit;
  options.runChecker = !skipChecker;
  std::string error;
  auto module = kiln::importOnnxFile(context, inputPath, options, error);
  if (!module)
    return failStage("import", error);

  if (emitKind == EmitKind::Summary) {
    mlir::PassManager pm(&context);
    kiln::KilnPrintSummaryOptions summaryOptions;
    summaryOptions.outputFile = outputPath;
    pm.addPass(kiln::createKilnPrintSummary(summaryOptions));
    if (mlir::failed(pm.run(*module)))
      return failStage("summary", "the kiln-print-summary pass failed");
    return 0;
  }

  std::string openError;
  auto output = mlir::openOutputFile(outputPath, &openError);
  if (!output)
    return failStage("writing the output", openError);
  mlir::OpPrintingFlags flags;
  if (elideWeights)
    flags.elideLargeResourceString();
  module->print(output->os(), flags);
  output->os() << "\n";
  output->keep();
  return 0;
}
