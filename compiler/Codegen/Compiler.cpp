//===- Compiler.cpp - kiln IR to a .kiln artifact -------------------------===//
#include "compiler/Codegen/Compiler.h"
#include "compiler/Codegen/CUDA/Pipelines.h"
#include "compiler/Codegen/Common/PassReport.h"
#include "compiler/Codegen/Common/Passes.h"
#include "compiler/Codegen/Common/Pipelines.h"
#include "compiler/Codegen/LLVMCPU/ObjectEmitter.h"
#include "compiler/Codegen/LLVMCPU/Pipelines.h"
#include "dialects/Kiln/IR/KilnDialect.h"
#include "kiln/abi/artifact_format.h"
#include "kiln/abi/dtype.h"
#include "passes/WeightBlobs.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <set>

using namespace mlir;

namespace kiln {
namespace {

/// The runtime's name for an element type, or "" when it has none.
std::string dtypeName(Type type) {
  kiln_dtype_t dtype = runtimeDtype(type);
  return dtype == KILN_DTYPE_INVALID ? "" : rt::dtypeName(dtype);
}

std::string typeString(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << type;
  return text;
}

bool describeTensor(Type type, std::string name,
                    llvm::ArrayRef<std::string> dimNames,
                    const CompileOptions &options, ArtifactTensor &tensor,
                    std::string &error) {
  auto tensorType = cast<RankedTensorType>(type);
  tensor.name = std::move(name);
  tensor.dtype = dtypeName(tensorType.getElementType());
  if (tensor.dtype.empty()) {
    error = "'" + tensor.name + "' has type " + typeString(type) +
            ", whose element type the runtime does not support";
    return false;
  }
  for (int64_t dim = 0; dim < tensorType.getRank(); ++dim) {
    ArtifactDim artifactDim;
    if (!tensorType.isDynamicDim(dim)) {
      artifactDim.size = artifactDim.min = artifactDim.max =
          tensorType.getDimSize(dim);
    } else {
      artifactDim.name = dim < (int64_t)dimNames.size() ? dimNames[dim] : "";
      artifactDim.max = kDefaultDimMax;
      auto bound = options.dimBounds.find(artifactDim.name);
      if (bound != options.dimBounds.end()) {
        artifactDim.min = bound->second.min;
        artifactDim.max = bound->second.max;
      }
    }
    tensor.dims.push_back(artifactDim);
  }
  return true;
}

std::string nameAttr(DictionaryAttr attrs, const std::string &fallback) {
  if (attrs)
    if (auto name = attrs.getAs<StringAttr>(KilnDialect::kNameAttrName))
      return name.str();
  return fallback;
}

bool describeSignature(func::FuncOp func, const CompileOptions &options,
                       ArtifactContents &artifact, std::string &error) {
  std::set<std::string> dimNames;
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    ArtifactTensor tensor;
    auto names = getArgumentDimNames(func, i);
    dimNames.insert(names.begin(), names.end());
    if (!describeTensor(func.getArgument(i).getType(),
                        nameAttr(func.getArgAttrDict(i), "input" + std::to_string(i)),
                        names, options, tensor, error))
      return false;
    artifact.inputs.push_back(std::move(tensor));
  }
  for (unsigned i = 0; i < func.getNumResults(); ++i) {
    ArtifactTensor tensor;
    auto names = getResultDimNames(func, i);
    dimNames.insert(names.begin(), names.end());
    if (!describeTensor(func.getResultTypes()[i],
                        nameAttr(func.getResultAttrDict(i), "output" + std::to_string(i)),
                        names, options, tensor, error))
      return false;
    artifact.outputs.push_back(std::move(tensor));
  }
  for (const auto &[name, bound] : options.dimBounds)
    if (!dimNames.count(name)) {
      error = "--dim " + name + ": no input or output has a dimension named '" +
              name + "'";
      return false;
    }
  return true;
}

/// Tells memory planning the largest and smallest size of each input dim
/// (kiln.dim_max, kiln.dim_min), which the runtime enforces.
void declareDimBounds(func::FuncOp func, const std::vector<ArtifactTensor> &inputs) {
  Builder b(func.getContext());
  for (auto [index, input] : llvm::enumerate(inputs)) {
    SmallVector<int64_t> maxima, minima;
    for (const ArtifactDim &dim : input.dims) {
      maxima.push_back(dim.size >= 0 ? dim.size : dim.max);
      minima.push_back(dim.size >= 0 ? dim.size : dim.min);
    }
    func.setArgAttr(index, KilnDialect::kDimMaxAttrName, b.getDenseI64ArrayAttr(maxima));
    func.setArgAttr(index, KilnDialect::kDimMinAttrName, b.getDenseI64ArrayAttr(minima));
  }
}

/// The bytes of a weight, dense and row-major; i1 is one byte per element.
bool weightBytes(ElementsAttr value, std::vector<char> &storage,
                 llvm::ArrayRef<char> &bytes, std::string &error) {
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(value)) {
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    if (!blob) {
      error = "weight blob '" + resource.getRawHandle().getKey().str() +
              "' has no data";
      return false;
    }
    bytes = blob->getData();
    return true;
  }
  auto dense = dyn_cast<DenseElementsAttr>(value);
  if (!dense) {
    error = "unsupported constant kind for a weight";
    return false;
  }
  if (dense.getElementType().isInteger(1)) {
    for (bool element : dense.getValues<bool>())
      storage.push_back(element ? 1 : 0);
    bytes = storage;
    return true;
  }
  bytes = dense.getRawData();
  return true;
}

bool collectWeights(ModuleOp module, ArtifactContents &artifact,
                    std::vector<std::vector<char>> &storage, std::string &error) {
  auto weights = module->getAttrOfType<ArrayAttr>(kWeightsAttrName);
  if (!weights)
    return true;
  auto names = module->getAttrOfType<ArrayAttr>(kWeightNamesAttrName);
  storage.resize(weights.size());
  for (auto [index, attr] : llvm::enumerate(weights)) {
    auto value = cast<ElementsAttr>(attr);
    auto type = cast<ShapedType>(value.getType());
    ArtifactWeight weight;
    if (names && index < names.size())
      weight.name = cast<StringAttr>(names[index]).str();
    weight.dtype = dtypeName(type.getElementType());
    if (weight.dtype.empty()) {
      error = "a weight has type " + typeString(type) +
              ", whose element type the runtime does not support";
      return false;
    }
    weight.shape.assign(type.getShape().begin(), type.getShape().end());
    if (!weightBytes(value, storage[index], weight.data, error))
      return false;
    size_t elementSize = rt::dtypeSize(runtimeDtype(type.getElementType()));
    if (weight.data.size() != elementSize * type.getNumElements()) {
      error = "a weight of type " + typeString(type) + " holds " +
              std::to_string(weight.data.size()) + " bytes";
      return false;
    }
    artifact.weights.push_back(weight);
  }
  return true;
}

/// Runs `pm` on `module`, collecting its diagnostics into `error`.
bool runPipeline(PassManager &pm, ModuleOp module, llvm::StringRef stage,
                 std::string &error) {
  std::string diagnostics;
  ScopedDiagnosticHandler handler(module.getContext(), [&](Diagnostic &diag) {
    if (diag.getSeverity() != DiagnosticSeverity::Error)
      return success();
    llvm::raw_string_ostream os(diagnostics);
    os << (diagnostics.empty() ? "" : "\n") << diag.getLocation() << ": "
       << diag;
    for (Diagnostic &note : diag.getNotes())
      os << "\n  note: " << note.getLocation() << ": " << note;
    return success();
  });
  if (succeeded(pm.run(module)))
    return true;
  error = stage.str() + ": " +
          (diagnostics.empty() ? std::string("a pass failed") : diagnostics);
  return false;
}

/// The memory plan that kiln-plan-memory left on `module`, removed from it
/// and given to `report`; null without one.
DictionaryAttr takeMemoryPlan(ModuleOp module, PassReport *report) {
  auto plan = module->getAttrOfType<DictionaryAttr>(kMemoryPlanAttrName);
  if (!plan)
    return {};
  if (report)
    report->setMemoryPlan(plan);
  module->removeAttr(kMemoryPlanAttrName);
  return plan;
}

/// Whether `op` declares a symbol defined elsewhere (the runtime's, libc's).
bool declaresOnly(Operation &op) {
  if (auto function = dyn_cast<LLVM::LLVMFuncOp>(op))
    return function.isExternal();
  auto symbol = dyn_cast<SymbolOpInterface>(op);
  return symbol && symbol.isDeclaration();
}

/// The CUDA target's code gives every symbol it defines (but its kernels'
/// binary) a suffix, so that it can sit beside the CPU code in one shared
/// object: its entry point is kiln_entry_cuda, and so on.
void suffixGpuSymbols(ModuleOp module) {
  SymbolTable symbols(module);
  for (Operation &op : llvm::make_early_inc_range(module.getBody()->getOperations())) {
    auto symbol = dyn_cast<SymbolOpInterface>(op);
    if (!symbol || declaresOnly(op) || isa<gpu::BinaryOp>(op))
      continue;
    std::string renamed = (symbol.getName() + artifact::kGpuSymbolSuffix).str();
    if (failed(symbols.rename(&op, StringAttr::get(module.getContext(), renamed))))
      llvm::report_fatal_error("kilnc: cannot rename a symbol of the GPU code");
  }
}

/// Moves the GPU code (suffixed) into the CPU code's module, for one shared
/// object: the functions both declare (the runtime's, libc's) once.
void mergeGpuCode(ModuleOp cpu, ModuleOp gpu) {
  for (Operation &op : llvm::make_early_inc_range(gpu.getBody()->getOperations())) {
    auto symbol = dyn_cast<SymbolOpInterface>(op);
    if (symbol && declaresOnly(op) && cpu.lookupSymbol(symbol.getName()))
      continue;
    op.moveBefore(cpu.getBody(), cpu.getBody()->end());
  }
  cpu->setAttr(gpu::GPUDialect::getContainerModuleAttrName(), UnitAttr::get(cpu.getContext()));
}

/// compile() for one device, to the LLVM dialect at most: `target` receives
/// the CPU the code is for and `arenaBuffers` what memory planning placed
/// in the entry function's arena.
bool lowerForOneDevice(ModuleOp module, const CompileOptions &options, CompileStage stage,
                       ArtifactContents &artifact, CpuTarget &target,
                       std::vector<ArenaSlot> &arenaBuffers, std::string &error) {
  auto func = module.lookupSymbol<func::FuncOp>("main");
  if (!func) {
    error = "the module has no @main function";
    return false;
  }
  const bool cuda = options.target == Target::Cuda;
  // Whether the code is the CUDA target's kernels, for the GPU or run on
  // the CPU.
  const bool cudaKernels = cuda || options.gpuKernelsOnCpu;
  OptimizationOptions optimizations = options.optimizations;
  if (cudaKernels && !cudaOptimizations(optimizations, error))
    return false;
  if (cuda && !isSupportedGpuArch(options.gpuArch)) {
    error = "--gpu=" + options.gpuArch + ": not a GPU architecture kilnc "
            "generates PTX for (" + supportedGpuArchs() + ")";
    return false;
  }
  // The GPU target's host code only launches kernels and copies: it runs on
  // any x86-64.
  if (!resolveCpuTarget(cuda ? "x86-64" : options.cpu, target, error))
    return false;

  auto instrument = [&](PassManager &pm) {
    if (options.report)
      pm.addInstrumentation(options.report->instrumentation());
  };
  PassManager graph(module.getContext());
  instrument(graph);
  buildGraphOptimizationPipeline(graph, optimizations);
  if (!runPipeline(graph, module, "graph optimization", error))
    return false;
  if (auto quantization = module->getAttrOfType<DictionaryAttr>(kQuantizationAttrName)) {
    if (options.report)
      options.report->setQuantization(quantization);
    module->removeAttr(kQuantizationAttrName);
  }
  // The signature after the graph passes, which may give it another KV-cache
  // interface.
  if (!describeSignature(func, options, artifact, error))
    return false;
  if (stage == CompileStage::Optimized)
    return true;
  if (optimizations.planMemory)
    declareDimBounds(func, artifact.inputs);
  PassManager tensors(module.getContext());
  instrument(tensors);
  // cudaOptimizations makes no op that the CUDA target would run as a
  // kernel of its own, so it has none to lower here.
  const KernelLowering lowerKernels = cudaKernels ? KernelLowering([](OpPassManager &) {})
                                                  : KernelLowering(addLLVMCPUKernelLowering);
  buildLinalgLoweringPipeline(tensors, lowerKernels, optimizations);
  if (!runPipeline(tensors, module, "lowering to linalg", error))
    return false;
  if (stage == CompileStage::Linalg)
    return true;
  if (!collectWeights(module, artifact, artifact.convertedWeights, error))
    return false;
  // The weights that the passes wrote are read back from their scratch file
  // as they are written into the artifact; none stays in memory.
  artifact.weightRead = dropScratchPages;

  PassManager llvmLowering(module.getContext());
  instrument(llvmLowering);
  if (cuda) {
    buildCudaLoweringPipeline(llvmLowering, options.gpuArch, optimizations);
    addCudaHostLowering(llvmLowering);
  } else if (options.gpuKernelsOnCpu) {
    addCudaKernelMapping(llvmLowering, optimizations);
    addLLVMCPULoopLowering(llvmLowering);
  } else {
    buildLLVMCPULoweringPipeline(llvmLowering, optimizations);
  }
  if (!runPipeline(llvmLowering, module, cuda ? "lowering to PTX and LLVM" : "lowering to LLVM",
                   error))
    return false;
  if (DictionaryAttr plan = takeMemoryPlan(module, options.report)) {
    artifact.arenaBytes = plan.getAs<IntegerAttr>("arena_bytes").getInt();
    for (Attribute entry : plan.getAs<ArrayAttr>("buffers")) {
      auto buffer = cast<DictionaryAttr>(entry);
      arenaBuffers.push_back({buffer.getAs<IntegerAttr>("offset").getInt(),
                              buffer.getAs<IntegerAttr>("bytes").getInt()});
    }
    // The GPU target's host code touches no arena buffer; its kernels do.
    if (cuda)
      arenaBuffers.clear();
  }
  if (cuda) {
    // The code, its weights and its arena are the GPU's.
    ArtifactGpuCode &gpu = artifact.gpu.emplace();
    gpu.arch = options.gpuArch;
    if (auto checks = module->getAttrOfType<ArrayAttr>(kKernelChecksAttrName)) {
      for (Attribute message : checks)
        gpu.kernelChecks.push_back(cast<StringAttr>(message).str());
      module->removeAttr(kKernelChecksAttrName);
    }
    gpu.weights = std::move(artifact.weights);
    gpu.arenaBytes = artifact.arenaBytes;
    artifact.weights.clear();
    artifact.arenaBytes = 0;
    artifact.cpuCode = false;
    suffixGpuSymbols(module);
  }
  return true;
}

} // namespace

bool compile(ModuleOp module, const CompileOptions &options, CompileStage stage,
             ArtifactContents &artifact, std::string &error) {
  CpuTarget target;
  std::vector<ArenaSlot> arenaBuffers;
  const CompileStage lowered = std::min(stage, CompileStage::LLVM);
  if (options.target == Target::CpuAndCuda) {
    // The CPU code and the GPU's, each compiled from its own copy of the
    // graph, with its own graph options, weights and arena, in one artifact.
    OwningOpRef<ModuleOp> gpuModule = module.clone();
    CompileOptions gpuOptions = options;
    gpuOptions.target = Target::Cuda;
    gpuOptions.report = nullptr; // the report is the CPU code's
    ArtifactContents gpuArtifact;
    CpuTarget gpuHost;
    std::vector<ArenaSlot> gpuArena;
    if (!lowerForOneDevice(*gpuModule, gpuOptions, lowered, gpuArtifact, gpuHost, gpuArena,
                           error))
      return false;
    // The CPU code's passes give a weight's blob back once no op of their
    // module names it any more (a packed weight's original: BlobReaders in
    // passes/WeightBlobs.h), but the GPU code reads it still: naming the GPU
    // code's weights on the module keeps them.
    constexpr llvm::StringLiteral kGpuCodeWeights = "kiln.gpu_code_weights";
    if (Attribute weights = (*gpuModule)->getAttr(kWeightsAttrName))
      module->setAttr(kGpuCodeWeights, weights);
    CompileOptions cpuOptions = options;
    cpuOptions.target = Target::Cpu;
    const bool cpuLowered = lowerForOneDevice(module, cpuOptions, lowered, artifact, target,
                                              arenaBuffers, error);
    module->removeAttr(kGpuCodeWeights);
    if (!cpuLowered)
      return false;
    if (stage < CompileStage::LLVM)
      return true;
    artifact.gpu = std::move(gpuArtifact.gpu);
    for (std::vector<char> &converted : gpuArtifact.convertedWeights)
      artifact.convertedWeights.push_back(std::move(converted));
    mergeGpuCode(module, *gpuModule);
  } else if (!lowerForOneDevice(module, options, lowered, artifact, target, arenaBuffers,
                                error)) {
    return false;
  }
  if (stage != CompileStage::Artifact)
    return true;

  artifact.compilerVersion = options.compilerVersion;
  artifact.triple = target.triple;
  artifact.cpu = target.cpu;
  artifact.cpuFeatures = target.features;
  if (!emitSharedObject(module, target, arenaBuffers, artifact.code, error,
                        options.optimizedIR)) {
    error = "code generation: " + error;
    return false;
  }
  return true;
}

} // namespace kiln
