//===- kilnc.cpp - The Kiln compiler driver -------------------------------===//
//
// kilnc MODEL.onnx -o MODEL.kiln [--cpu=native] [--dim batch=1:8 ...]
// kilnc MODEL.onnx --emit=kiln|optimized|linalg|llvm|summary -o OUT
// kilnc MODEL.onnx --target=cuda|x86,cuda [--gpu=sm_90] -o MODEL.kiln (or --emit=ptx)
// [--disable=fusion,...] [--report=FILE.json]
// [--quantize=int8|int8-dynamic|int8-weight|int4-weight] [--calibration DIR]
// [--calibration-method=minmax|percentile] [--accuracy-budget=top1>=0.99,...]
//
// Each stage that fails says so: reading, parsing, checking, importing, or
// writing the output. The exit code is non-zero on any failure.
//
//===----------------------------------------------------------------------===//
#include "compiler/Codegen/CUDA/Pipelines.h"
#include "compiler/Codegen/Compiler.h"
#include "compiler/Codegen/Common/PassReport.h"
#include "compiler/Codegen/Registration.h"
#include "compiler/Importer/OnnxImporter.h"
#include "passes/Passes.h"
#include "tools/kilnc/Calibration.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif

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
  Ptx,
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
                   "A deployable .kiln artifact: x86 code, or with "
                   "--target=cuda PTX kernels and the x86 code that launches them"),
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
        clEnumValN(EmitKind::Ptx, "ptx",
                   "With --target=cuda: the PTX of the model's GPU kernels"),
        clEnumValN(EmitKind::Summary, "summary",
                   "Inputs and outputs with dimension names, and op counts")),
    cl::cat(kilncCategory));

cl::opt<kiln::Target> target(
    "target", cl::desc("What the code runs on"), cl::init(kiln::Target::Cpu),
    cl::values(clEnumValN(kiln::Target::Cpu, "x86", "x86-64 CPUs (--cpu picks which)"),
               clEnumValN(kiln::Target::Cuda, "cuda",
                          "NVIDIA GPUs: PTX kernels (--gpu picks the architecture), "
                          "launched through the CUDA driver"),
               clEnumValN(kiln::Target::CpuAndCuda, "x86,cuda",
                          "Both in one artifact: the runtime runs the GPU code where "
                          "there is a GPU, else the CPU code")),
    cl::cat(kilncCategory));

cl::opt<std::string> gpuArch(
    "gpu",
    cl::desc("With --target=cuda, the GPU architecture of the PTX: sm_80 (the "
             "default, which newer GPUs' drivers compile on load), sm_90 for "
             "Hopper, ..."),
    cl::init("sm_80"), cl::cat(kilncCategory));

cl::opt<std::string> cpu(
    "cpu",
    cl::desc("The CPU to generate code for: native (this machine), x86-64-v3, "
             "x86-64-v4, or another LLVM x86 CPU name"),
    cl::init("native"), cl::cat(kilncCategory));

cl::opt<bool> gpuKernelsOnCpu(
    "gpu-kernels-on-cpu",
    cl::desc("With --target=x86, for testing: the artifact runs the CUDA "
             "target's kernels (its graph options and loop mapping) on the "
             "CPU, each kernel's blocks and threads one after another, so "
             "that the GPU lowering's results can be checked without a GPU"),
    cl::Hidden, cl::cat(kilncCategory));

cl::list<std::string> dimBounds(
    "dim",
    cl::desc("Bounds of a symbolic dimension, NAME=MIN:MAX (repeatable); the "
             "runtime refuses inputs outside them"),
    cl::value_desc("name=min:max"), cl::cat(kilncCategory));

cl::list<std::string> disabledOptimizations(
    "disable",
    cl::desc("Turn off optimizations, to measure their effect: "
             "fold-quantized-products, constant-fold, einsum-to-matmul, fusion (every "
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

cl::opt<std::string> kvDtype(
    "kv-dtype",
    cl::desc("The element type a paged KV cache stores: f32, or f16 or bf16 "
             "(half the memory per token; attention widens them to f32)"),
    cl::init("f32"), cl::cat(kilncCategory));

enum class Quantization { None, Int8, Int8Weight, Int4Weight, Int8Dynamic };
cl::opt<Quantization> quantize(
    "quantize", cl::desc("Quantize the weights"), cl::init(Quantization::None),
    cl::values(clEnumValN(Quantization::None, "none", "f32 weights, as exported"),
               clEnumValN(Quantization::Int8, "int8",
                          "static W8A8: int8 weights with a scale per column, "
                          "and each product's input quantized to uint8 with "
                          "one scale and zero point from --calibration"),
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

cl::opt<std::string> calibrationDir(
    "calibration",
    cl::desc("Input sets to run the model on: one subdirectory per set, with "
             "NAME.npy (or .pb) for each model input. --quantize=int8 takes "
             "its input ranges from them; any --quantize mode is measured on "
             "them against f32 (--report's `calibration`)"),
    cl::value_desc("dir"), cl::cat(kilncCategory));

enum class CalibrationMethod { MinMax, Percentile };
cl::opt<CalibrationMethod> calibrationMethod(
    "calibration-method", cl::desc("How --quantize=int8 picks an input's range"),
    cl::init(CalibrationMethod::MinMax),
    cl::values(clEnumValN(CalibrationMethod::MinMax, "minmax",
                          "everything calibration saw"),
               clEnumValN(CalibrationMethod::Percentile, "percentile",
                          "the central --calibration-percentile % of it, so "
                          "that rare outliers do not coarsen every step")),
    cl::cat(kilncCategory));

cl::opt<double> calibrationPercentile(
    "calibration-percentile",
    cl::desc("The share of values that --calibration-method=percentile keeps"),
    cl::init(99.99), cl::cat(kilncCategory));

cl::opt<std::string> accuracyBudget(
    "accuracy-budget",
    cl::desc("Fail when the quantized build is further from f32 on the "
             "--calibration sets: top1>=X (agreement of the first output's "
             "argmax), max-rel<=X, mean-rel<=X (every f32 output), comma "
             "separated"),
    cl::value_desc("bounds"), cl::cat(kilncCategory));

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

/// Returns the heap that a finished compile freed to the system, so that
/// the next phase of a calibrated compile (another compile, or runs that map
/// both artifacts) does not stack on top of it.
void giveFreedMemoryBack() {
#ifdef __GLIBC__
  malloc_trim(0);
#endif
}

/// The names of `artifact`'s weights, in manifest order.
std::vector<std::string> weightNames(const kiln::ArtifactContents &artifact) {
  std::vector<std::string> names;
  for (const kiln::ArtifactWeight &weight : artifact.weights)
    names.push_back(weight.name);
  return names;
}

/// Compiles the f32 build that calibration runs into `reference.path`: the
/// model imported into a context of its own, with every option of this
/// compile but the quantization. On failure `stage` names what failed.
bool compileReference(mlir::DialectRegistry &registry, const kiln::ImportOptions &importOptions,
                      kiln::CompileOptions options,
                      kiln::calibration::CompiledArtifact &reference, std::string &stage,
                      std::string &error) {
  mlir::MLIRContext context(registry);
  stage = "import";
  auto module = kiln::importOnnxFile(context, inputPath, importOptions, error);
  if (!module)
    return false;
  stage = "calibration";
  options.optimizations.quantizeWeights = false;
  options.optimizations.quantizeInputs = false;
  options.report = nullptr;
  options.optimizedIR = nullptr;
  kiln::ArtifactContents artifact;
  if (!kiln::compile(*module, options, kiln::CompileStage::Artifact, artifact, error)) {
    error = "compiling the f32 build: " + error;
    return false;
  }
  reference.weightNames = weightNames(artifact);
  return kiln::writeArtifact(reference.path, artifact, error);
}

/// Hands kiln-quantize-weights the calibrated ranges (see
/// kCalibratedInputRangesAttrName).
void setCalibratedInputRanges(mlir::ModuleOp module,
                              const kiln::calibration::InputRanges &ranges) {
  mlir::Builder builder(module.getContext());
  llvm::SmallVector<mlir::NamedAttribute> entries;
  for (const auto &[name, range] : ranges)
    entries.push_back(builder.getNamedAttr(
        name, builder.getDenseF32ArrayAttr({range.first, range.second})));
  module->setAttr(kiln::kCalibratedInputRangesAttrName,
                  builder.getDictionaryAttr(entries));
}

/// --report's `calibration`: the sets, the method and ranges (static
/// W8A8), and the accuracy against f32.
llvm::json::Value calibrationJson(size_t sets, const kiln::calibration::InputRanges &ranges,
                                  const kiln::calibration::AccuracyReport &accuracy) {
  llvm::json::Object calibration{{"sets", static_cast<int64_t>(sets)},
                                 {"accuracy", accuracy.toJson()}};
  if (quantize == Quantization::Int8) {
    calibration["method"] =
        calibrationMethod == CalibrationMethod::Percentile ? "percentile" : "minmax";
    if (calibrationMethod == CalibrationMethod::Percentile)
      calibration["percentile"] = calibrationPercentile.getValue();
    llvm::json::Object inputRanges;
    for (const auto &[name, range] : ranges)
      inputRanges[name] = llvm::json::Array{range.first, range.second};
    calibration["input_ranges"] = std::move(inputRanges);
  }
  return calibration;
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
      "in ONNX external-data files are memory-mapped; the weights it packs or\n"
      "quantizes are kept in a scratch file in TMPDIR (as large as they are)\n"
      "until the artifact is written.\n");

  if (emitKind == EmitKind::Auto)
    emitKind = llvm::StringRef(outputPath).ends_with(".kiln") ? EmitKind::Artifact
                                                             : EmitKind::Kiln;
  if (emitKind == EmitKind::Ptx && target == kiln::Target::Cpu)
    return failStage("reading the options", "--emit=ptx needs --target=cuda");
  if (gpuArch.getNumOccurrences() && target == kiln::Target::Cpu)
    return failStage("reading the options", "--gpu picks the GPU of --target=cuda");
  if (cpu.getNumOccurrences() && target == kiln::Target::Cuda)
    return failStage("reading the options", "--cpu picks the CPU of --target=x86");
  if (gpuKernelsOnCpu && target != kiln::Target::Cpu)
    return failStage("reading the options",
                     "--gpu-kernels-on-cpu runs the CUDA target's kernels on "
                     "--target=x86");
  kiln::CompileOptions compileOptions;
  compileOptions.target = target;
  compileOptions.gpuArch = gpuArch;
  compileOptions.gpuKernelsOnCpu = gpuKernelsOnCpu;
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
  if (kvDtype != "f32" && kvDtype != "f16" && kvDtype != "bf16")
    return failStage("reading the options",
                     "--kv-dtype must be f32, f16 or bf16, not '" + kvDtype + "'");
  if (kvDtype.getNumOccurrences() && kvCache != KvCacheKind::Paged)
    return failStage("reading the options",
                     "--kv-dtype sets a paged KV cache's element type: it needs "
                     "--kv-cache=paged");
  if (kvCache == KvCacheKind::Paged) {
    compileOptions.optimizations.pagedKvBlockSize = kvBlockSize;
    compileOptions.optimizations.pagedKvDtype = kvDtype;
  }
  if (quantize != Quantization::None) {
    const bool dynamic = quantize == Quantization::Int8Dynamic;
    const bool calibrated = quantize == Quantization::Int8;
    const std::string mode = calibrated                                ? "int8"
                             : dynamic                                 ? "int8-dynamic"
                             : quantize == Quantization::Int8Weight ? "int8-weight"
                                                                    : "int4-weight";
    if (!compileOptions.optimizations.packWeights)
      return failStage("reading the options",
                       "--quantize=" + mode + " quantizes packed weights, which "
                       "--disable=pack-weights turns off");
    if (quantGroupSize < 1)
      return failStage("reading the options", "--quant-group-size must be positive");
    if ((dynamic || calibrated) && quantGroupSize.getNumOccurrences())
      return failStage("reading the options",
                       "--quantize=" + mode + " scales whole columns; "
                       "--quant-group-size does not apply");
    if (calibrated && calibrationDir.empty())
      return failStage("reading the options",
                       "--quantize=int8 takes its input scales from calibration: "
                       "give --calibration DIR (or use --quantize=int8-dynamic)");
    compileOptions.optimizations.quantizeWeights = true;
    compileOptions.optimizations.quantizeInputs = dynamic || calibrated;
    compileOptions.optimizations.quantizeBits = quantize == Quantization::Int4Weight ? 4 : 8;
    compileOptions.optimizations.quantizeGroupSize = quantGroupSize;
    compileOptions.optimizations.quantizeLmHead = quantizeLmHead;
  } else if (quantizeLmHead || quantGroupSize.getNumOccurrences() ||
             !calibrationDir.empty()) {
    return failStage("reading the options",
                     "--quant-group-size, --quantize-lm-head and --calibration "
                     "need --quantize");
  }
  if (calibrationDir.empty() &&
      (!accuracyBudget.empty() || calibrationMethod.getNumOccurrences() ||
       calibrationPercentile.getNumOccurrences()))
    return failStage("reading the options",
                     "--accuracy-budget and --calibration-method/-percentile "
                     "need --calibration");
  if (calibrationMethod.getNumOccurrences() && quantize != Quantization::Int8)
    return failStage("reading the options",
                     "--calibration-method picks the input ranges of --quantize=int8");
  if (!(calibrationPercentile > 50.0 && calibrationPercentile <= 100.0))
    return failStage("reading the options",
                     "--calibration-percentile must be in (50, 100]");
  kiln::calibration::AccuracyBudget budget;
  if (!accuracyBudget.empty() && !budget.parse(accuracyBudget, optionsError))
    return failStage("reading the options", optionsError);
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
  std::vector<kiln::calibration::InputSet> calibrationSets;
  if (!calibrationDir.empty()) {
    if (emitKind != EmitKind::Artifact)
      return failStage("reading the options",
                       "--calibration runs the model, so it needs an artifact: "
                       "-o MODEL.kiln");
    if (inputPath == "-")
      return failStage("reading the options",
                       "--calibration imports the model twice (an f32 build "
                       "runs beside the quantized one), so it needs a file, "
                       "not standard input");
    if (!kiln::calibration::readInputSets(calibrationDir, calibrationSets, optionsError))
      return failStage("reading the calibration sets", optionsError);
  }

  mlir::DialectRegistry registry;
  kiln::registerCodegenDialects(registry);
  // Owned so that a compile with --calibration can give its weights back
  // before the accuracy runs map both artifacts.
  auto context = std::make_unique<mlir::MLIRContext>(registry);
  kiln::ImportOptions options;
  options.format = inputFormat;
  options.inlineConstantLimit = inlineConstantLimit;
  options.runChecker = !skipChecker;
  std::string error;
  // Calibration runs an f32 build of the same model, compiled from its own
  // import (the passes give a model's weights back as they rewrite them),
  // before the model is imported for this compile, so that the two never
  // hold their weights at once.
  kiln::calibration::CompiledArtifact reference;
  std::optional<llvm::FileRemover> referenceRemover;
  if (!calibrationSets.empty()) {
    llvm::SmallString<128> path;
    if (std::error_code ec =
            llvm::sys::fs::createTemporaryFile("kilnc-f32-reference", "kiln", path))
      return failStage("calibration", "a temporary file: " + ec.message());
    reference.path = path.str().str();
    referenceRemover.emplace(reference.path);
    std::string stage;
    if (!compileReference(registry, options, compileOptions, reference, stage, error))
      return failStage(stage, error);
    giveFreedMemoryBack();
  }
  kiln::calibration::InputRanges inputRanges;
  if (quantize == Quantization::Int8) {
    kiln::calibration::RangeMethod method;
    method.percentile = calibrationMethod == CalibrationMethod::Percentile;
    method.percentileValue = calibrationPercentile;
    if (!kiln::calibration::calibrateInputRanges(reference, calibrationSets, method,
                                                 inputRanges, error))
      return failStage("calibration", error);
  }

  auto module = kiln::importOnnxFile(*context, inputPath, options, error);
  if (!module)
    return failStage("import", error);
  if (quantize == Quantization::Int8)
    setCalibratedInputRanges(*module, inputRanges);

  if (emitKind == EmitKind::Summary) {
    mlir::PassManager pm(context.get());
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
                 : emitKind == EmitKind::LLVM ||
                         emitKind == EmitKind::Ptx ? kiln::CompileStage::LLVM
                                                   : kiln::CompileStage::Artifact;
    kiln::ArtifactContents artifact;
    if (emitKind == EmitKind::LLVMIR)
      compileOptions.optimizedIR = &optimizedIR;
    if (!kiln::compile(*module, compileOptions, stage, artifact, error))
      return failStage("compilation", error);
    if (emitKind == EmitKind::Artifact &&
        !kiln::writeArtifact(outputPath, artifact, error))
      return failStage("writing the artifact", error);
    if (!calibrationSets.empty()) {
      kiln::calibration::CompiledArtifact quantized{outputPath, weightNames(artifact)};
      artifact = {};
      module = nullptr;
      context.reset();
      giveFreedMemoryBack();
      kiln::calibration::AccuracyReport accuracy;
      if (!kiln::calibration::measureAccuracy(reference, quantized, calibrationSets,
                                              accuracy, error)) {
        llvm::sys::fs::remove(outputPath);
        return failStage("measuring the accuracy", error);
      }
      report.setCalibration(calibrationJson(calibrationSets.size(), inputRanges, accuracy));
      if (!reportPath.empty() && !report.write(reportPath, error))
        return failStage("writing the report", error);
      if (std::string exceeded = budget.violation(accuracy); !exceeded.empty()) {
        llvm::sys::fs::remove(outputPath);
        return failStage("the accuracy budget", exceeded + " (" + outputPath +
                                                    " not written)");
      }
    } else if (!reportPath.empty() && !report.write(reportPath, error)) {
      return failStage("writing the report", error);
    }
    if (emitKind == EmitKind::Artifact)
      return 0;
  }

  std::string openError;
  auto output = mlir::openOutputFile(outputPath, &openError);
  if (!output)
    return failStage("writing the output", openError);
  if (emitKind == EmitKind::LLVMIR) {
    output->os() << optimizedIR;
  } else if (emitKind == EmitKind::Ptx) {
    output->os() << kiln::kernelAssembly(*module);
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
