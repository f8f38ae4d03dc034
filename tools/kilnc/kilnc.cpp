//===- kilnc.cpp - The Kiln compiler driver -------------------------------===//
//
// kilnc MODEL.onnx -o MODEL.kiln [--cpu=native] [--dim batch=1:8 ...]
// kilnc MODEL.onnx --emit=kiln|optimized|linalg|llvm|summary -o OUT
// [--disable=fusion,...] [--quantize=int8-weight|int4-weight|int8-dynamic] [--report=FILE.json]
//
// Each stage that fails says so: reading, parsing, checking, importing, or
// writing the output. The exit code is non-zero on any failure.
//
//===----------------------------------------------------------------------===//
#include "compiler/Codegen/Compiler.h"
#include "compiler/Codegen/PassReport.h"
#include "compiler/Codegen/Pipelines.h"
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

enum class EmitKind {
  Auto,
  Kiln,
  Optimized,
  Summary,
  Linalg,
  LLVM,
  LLVMIR,
  Artifact
};

cl::OptionCategory kilncCategory("kilnc options");

cl::opt<std::string> inputPath(cl::Positional, cl::Required,
                               cl::desc("<model.onnx | model.onnxtxt | ->"),
                               cl::cat(kilncCategory));

cl::opt<std::string> outputPath("o", cl::desc("Output file ('-' for standard output)"),
                                cl::value_desc("file"), cl::init("-"),
                                cl::cat(kilncCategory));

cl::opt<EmitKind> emitKind(
    "emit",
    cl::desc("What to produce (default: an artifact when -o ends in .kiln, "
             "else kiln IR)"),
    cl::init(EmitKind::Auto),
    cl::values(
        clEnumValN(EmitKind::Artifact, "artifact",
                   "A deployable .kiln artifact for the CPU runtime"),
        clEnumValN(EmitKind::Kiln, "kiln",
                   "The imported kiln-dialect IR as MLIR text"),
        clEnumValN(EmitKind::Optimized, "optimized",
                   "The kiln IR after the graph optimizations"),
        clEnumValN(EmitKind::Linalg, "linalg",
                   "The IR after lowering to linalg on tensors"),
        clEnumValN(EmitKind::LLVM, "llvm",
                   "The IR after lowering to the LLVM dialect"),
        clEnumValN(EmitKind::LLVMIR, "llvm-ir",
                   "The optimized LLVM IR that the artifact's code is "
                   "compiled from (alias scopes, vectorized loops)"),
        clEnumValN(EmitKind::Summary, "summary",
                   "Inputs and outputs with dimension names, and op counts")),
    cl::cat(kilncCategory));

cl::opt<std::string> cpu(
    "cpu",
    cl::desc("The CPU to generate code for: native (this machine), x86-64-v3, "
             "x86-64-v4, or another LLVM x86 CPU name"),
    cl::init("native"), cl::cat(kilncCategory));

cl::list<std::string> dimBounds(
    "dim",
    cl::desc("Bounds of a symbolic dimension, NAME=MIN:MAX (repeatable); the "
             "runtime refuses inputs outside them"),
    cl::value_desc("name=min:max"), cl::cat(kilncCategory));

cl::list<std::string> disabledOptimizations(
    "disable",
    cl::desc("Turn off optimizations, to measure their effect: "
             "fold-quantized-products, constant-fold, fusion (every "
             "fusion), fuse-attention, "
             "fuse-normalizations, fuse-activations, fuse-rotary, "
             "fuse-gemm-epilogues, fuse-elementwise, duplicate-producers, "
             "pack-weights, memory-plan"),
    cl::value_desc("name,..."), cl::CommaSeparated, cl::cat(kilncCategory));

enum class KvCacheKind { Dense, Paged };
cl::opt<KvCacheKind> kvCache(
    "kv-cache", cl::desc("A decoder's KV-cache interface"),
    cl::init(KvCacheKind::Dense),
    cl::values(clEnumValN(KvCacheKind::Dense, "dense",
                          "past_key_values inputs and present outputs, as exported"),
               clEnumValN(KvCacheKind::Paged, "paged",
                          "the generation engine's block pool, tables and lengths "
                          "as inputs, the new rows as outputs")),
    cl::cat(kilncCategory));

cl::opt<int64_t> kvBlockSize("kv-block-size",
                             cl::desc("Tokens per block of a paged KV cache"),
                             cl::init(16), cl::cat(kilncCategory));

enum class Quantization { None, Int8Weight, Int4Weight, Int8Dynamic };
cl::opt<Quantization> quantize(
    "quantize", cl::desc("Quantize the weights"), cl::init(Quantization::None),
    cl::values(clEnumValN(Quantization::None, "none", "f32 weights, as exported"),
               clEnumValN(Quantization::Int8Weight, "int8-weight",
                          "weight-only int8: the packed weights of the products "
                          "as int8 with a scale per column and group of rows; "
                          "activations stay f32"),
               clEnumValN(Quantization::Int4Weight, "int4-weight",
                          "weight-only 4-bit: as int8-weight, but 4-bit values "
                          "with a zero point per column and group"),
               clEnumValN(Quantization::Int8Dynamic, "int8-dynamic",
                          "W8A8: int8 weights with a scale per column, and "
                          "each product's input quantized to uint8 per row at "
                          "run time, so that the products run in integers")),
    cl::cat(kilncCategory));

cl::opt<int64_t> quantGroupSize(
    "quant-group-size",
    cl::desc("Rows of a weight's column that share one scale under --quantize"),
    cl::init(128), cl::cat(kilncCategory));

cl::opt<bool> quantizeLmHead(
    "quantize-lm-head",
    cl::desc("Under --quantize, quantize the product that makes the model's "
             "results (its LM head) too; it stays f32 by default"),
    cl::init(false), cl::cat(kilncCategory));

cl::opt<std::string> reportPath(
    "report",
    cl::desc("Write what each compiler pass did (op counts, ops created and "
             "removed, fusions by kind) to this JSON file"),
    cl::value_desc("file.json"), cl::cat(kilncCategory));

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
                          cl::desc("Do not run onnx::checker on the model (nor ONNX "
                                   "shape inference, which needs a checked model)"),
                          cl::init(false), cl::cat(kilncCategory));

int failStage(llvm::StringRef stage, llvm::StringRef message) {
  llvm::WithColor::error(llvm::errs(), "kilnc") << stage << " failed: " << message
                                                << "\n";
  return 1;
}

/// Parses the --dim list into `bounds`.
bool parseDimBounds(std::map<std::string, kiln::DimBound> &bounds,
                    std::string &error) {
  for (const std::string &text : dimBounds) {
    llvm::StringRef spec(text);
    auto [name, range] = spec.split('=');
    auto [minText, maxText] = range.split(':');
    kiln::DimBound bound;
    if (name.empty() || minText.getAsInteger(10, bound.min) ||
        maxText.getAsInteger(10, bound.max) || bound.min < 0 ||
        bound.max < bound.min) {
      error = "--dim " + text +
              ": expected NAME=MIN:MAX with 0 <= MIN <= MAX, e.g. batch=1:8";
      return false;
    }
    if (!bounds.emplace(name.str(), bound).second) {
      error = "--dim " + text + ": '" + name.str() + "' is bounded twice";
      return false;
    }
  }
  return true;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  cl::HideUnrelatedOptions(kilncCategory);
  cl::ParseCommandLineOptions(
      argc, argv,
      "kilnc: compiles ONNX transformer models.\n\n"
      "Imports an ONNX model (opsets 13-21, binary or textual) into the kiln\n"
      "dialect and compiles it into one .kiln artifact for the Kiln runtime:\n"
      "x86-64 code, a manifest of inputs and outputs, and the weights. Weights\n"
      "in ONNX external-data files are memory-mapped.\n");

  if (emitKind == EmitKind::Auto)
    emitKind = llvm::StringRef(outputPath).ends_with(".kiln") ? EmitKind::Artifact
                                                             : EmitKind::Kiln;
  kiln::CompileOptions compileOptions;
  compileOptions.cpu = cpu;
  compileOptions.compilerVersion = "kilnc " KILN_VERSION;
  std::string optionsError;
  if (!parseDimBounds(compileOptions.dimBounds, optionsError))
    return failStage("reading the options", optionsError);
  for (const std::string &name : disabledOptimizations)
    if (!compileOptions.optimizations.disable(name, optionsError))
      return failStage("reading the options", "--disable: " + optionsError);
  if (kvBlockSize < 1 || kvBlockSize > 4096)
    return failStage("reading the options", "--kv-block-size must be in [1, 4096]");
  if (kvCache == KvCacheKind::Paged)
    compileOptions.optimizations.pagedKvBlockSize = kvBlockSize;
  if (quantize != Quantization::None) {
    const bool dynamic = quantize == Quantization::Int8Dynamic;
    const std::string mode = dynamic                                   ? "int8-dynamic"
                             : quantize == Quantization::Int8Weight ? "int8-weight"
                                                                    : "int4-weight";
    if (!compileOptions.optimizations.packWeights)
      return failStage("reading the options",
                       "--quantize=" + mode + " quantizes packed weights, which "
                       "--disable=pack-weights turns off");
    if (quantGroupSize < 1)
      return failStage("reading the options", "--quant-group-size must be positive");
    if (dynamic && quantGroupSize.getNumOccurrences())
      return failStage("reading the options",
                       "--quantize=int8-dynamic scales whole columns; "
                       "--quant-group-size does not apply");
    compileOptions.optimizations.quantizeWeights = true;
    compileOptions.optimizations.quantizeInputs = dynamic;
    compileOptions.optimizations.quantizeBits = quantize == Quantization::Int4Weight ? 4 : 8;
    compileOptions.optimizations.quantizeGroupSize = quantGroupSize;
    compileOptions.optimizations.quantizeLmHead = quantizeLmHead;
  } else if (quantizeLmHead || quantGroupSize.getNumOccurrences()) {
    return failStage("reading the options",
                     "--quant-group-size and --quantize-lm-head need --quantize");
  }
  kiln::PassReport report;
  if (!reportPath.empty()) {
    if (emitKind == EmitKind::Kiln || emitKind == EmitKind::Summary)
      return failStage("reading the options",
                       "--report records the compiler's passes, which "
                       "--emit=kiln and --emit=summary do not run");
    compileOptions.report = &report;
  }
  if (emitKind == EmitKind::Artifact && outputPath == "-")
    return failStage("reading the options",
                     "an artifact needs an output file: -o MODEL.kiln");

  mlir::DialectRegistry registry;
  kiln::registerCodegenDialects(registry);
  mlir::MLIRContext context(registry);
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

  std::string optimizedIR;
  if (emitKind != EmitKind::Kiln) {
    auto stage = emitKind == EmitKind::Optimized ? kiln::CompileStage::Optimized
                 : emitKind == EmitKind::Linalg  ? kiln::CompileStage::Linalg
                 : emitKind == EmitKind::LLVM    ? kiln::CompileStage::LLVM
                                                 : kiln::CompileStage::Artifact;
    kiln::ArtifactContents artifact;
    if (emitKind == EmitKind::LLVMIR)
      compileOptions.optimizedIR = &optimizedIR;
    if (!kiln::compile(*module, compileOptions, stage, artifact, error))
      return failStage("compilation", error);
    if (!reportPath.empty() && !report.write(reportPath, error))
      return failStage("writing the report", error);
    if (emitKind == EmitKind::Artifact) {
      if (!kiln::writeArtifact(outputPath, artifact, error))
        return failStage("writing the artifact", error);
      return 0;
    }
  }

  std::string openError;
  auto output = mlir::openOutputFile(outputPath, &openError);
  if (!output)
    return failStage("writing the output", openError);
  if (emitKind == EmitKind::LLVMIR) {
    output->os() << optimizedIR;
  } else {
    mlir::OpPrintingFlags flags;
    if (elideWeights)
      flags.elideLargeResourceString();
    module->print(output->os(), flags);
    output->os() << "\n";
  }
  output->keep();
  return 0;
}
