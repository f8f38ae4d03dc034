//===- ObjectEmitter.cpp - LLVM dialect to an x86-64 shared object --------===//
#include "compiler/Codegen/LLVMCPU/ObjectEmitter.h"
#include "kiln/abi/cpu_features.h"

#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"

namespace kiln {
namespace {

std::unique_ptr<llvm::TargetMachine> createTargetMachine(const CpuTarget &target,
                                                         std::string &error) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  const llvm::Target *llvmTarget =
      llvm::TargetRegistry::lookupTarget(target.triple, error);
  if (!llvmTarget)
    return nullptr;
  std::string features;
  for (const std::string &feature : target.features)
    features += (features.empty() ? "+" : ",+") + feature;
  return std::unique_ptr<llvm::TargetMachine>(llvmTarget->createTargetMachine(
      target.triple, target.cpu, features, llvm::TargetOptions(),
      llvm::Reloc::PIC_, std::nullopt, llvm::CodeGenOptLevel::Aggressive));
}

void optimize(llvm::Module &module, llvm::TargetMachine &machine) {
  llvm::LoopAnalysisManager loops;
  llvm::FunctionAnalysisManager functions;
  llvm::CGSCCAnalysisManager cgsccs;
  llvm::ModuleAnalysisManager modules;
  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = true;
  tuning.SLPVectorization = true;
  llvm::PassBuilder builder(&machine, tuning);
  builder.registerModuleAnalyses(modules);
  builder.registerCGSCCAnalyses(cgsccs);
  builder.registerFunctionAnalyses(functions);
  builder.registerLoopAnalyses(loops);
  builder.crossRegisterProxies(loops, functions, cgsccs, modules);
  builder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3)
      .run(module, modules);
}

/// A temporary file removed when this goes out of scope.
struct TempFile {
  llvm::SmallString<128> path;
  ~TempFile() {
    if (!path.empty())
      llvm::sys::fs::remove(path);
  }
};

bool link(llvm::ArrayRef<char> object, std::vector<char> &sharedObject,
          std::string &error) {
  TempFile objectFile, libraryFile;
  int fd;
  if (auto ec = llvm::sys::fs::createTemporaryFile("kiln", "o", fd, objectFile.path)) {
    error = "cannot create a temporary object file: " + ec.message();
    return false;
  }
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os.write(object.data(), object.size());
  }
  if (auto ec = llvm::sys::fs::createTemporaryFile("kiln", "so", libraryFile.path)) {
    error = "cannot create a temporary library file: " + ec.message();
    return false;
  }
  llvm::ErrorOr<std::string> linker = llvm::sys::findProgramByName("ld.lld");
  if (!linker)
    linker = llvm::sys::findProgramByName("ld");
  if (!linker) {
    error = "no linker found: install lld or binutils (ld.lld or ld on PATH)";
    return false;
  }
  llvm::SmallVector<llvm::StringRef> args = {
      *linker, "-shared", "-z", "noexecstack", "-o", libraryFile.path,
      objectFile.path};
  std::string message;
  int rc = llvm::sys::ExecuteAndWait(*linker, args, std::nullopt, {}, 0, 0,
                                     &message);
  if (rc != 0) {
    error = "linking with " + *linker + " failed" +
            (message.empty() ? "" : ": " + message);
    return false;
  }
  auto buffer = llvm::MemoryBuffer::getFile(libraryFile.path);
  if (!buffer) {
    error = "cannot read the linked library: " + buffer.getError().message();
    return false;
  }
  sharedObject.assign((*buffer)->getBufferStart(), (*buffer)->getBufferEnd());
  return true;
}

} // namespace

bool resolveCpuTarget(const std::string &cpu, CpuTarget &target,
                      std::string &error) {
  llvm::InitializeNativeTarget();
  target.triple = llvm::sys::getDefaultTargetTriple();
  target.cpu = cpu == "native" ? llvm::sys::getHostCPUName().str() : cpu;
  target.features.clear();
  const llvm::Target *llvmTarget =
      llvm::TargetRegistry::lookupTarget(target.triple, error);
  if (!llvmTarget)
    return false;
  // Asking about an unknown CPU makes LLVM print a warning, so the name is
  // checked against a generic subtarget first.
  std::unique_ptr<llvm::MCSubtargetInfo> generic(
      llvmTarget->createMCSubtargetInfo(target.triple, "", ""));
  if (!generic->isCPUStringValid(target.cpu)) {
    error = "unknown CPU '" + cpu + "' (try native, x86-64-v3 or x86-64-v4)";
    return false;
  }
  std::unique_ptr<llvm::MCSubtargetInfo> subtarget(
      llvmTarget->createMCSubtargetInfo(target.triple, target.cpu, ""));
  // A named CPU implies its features; for native, the host's are added
  // explicitly since its name alone may not capture them all.
  llvm::StringMap<bool> hostFeatures;
  if (cpu == "native")
    hostFeatures = llvm::sys::getHostCPUFeatures();
  for (std::string_view feature : rt::kCheckableCpuFeatures) {
    std::string name(feature);
    bool enabled = cpu == "native"
                       ? hostFeatures.lookup(name)
                       : subtarget->checkFeatures("+" + name);
    if (enabled)
      target.features.push_back(name);
  }
  return true;
}

bool emitSharedObject(mlir::ModuleOp module, const CpuTarget &target,
                      llvm::ArrayRef<ArenaSlot> arenaBuffers,
                      std::vector<char> &sharedObject, std::string &error,
                      std::string *optimizedIR) {
  std::unique_ptr<llvm::TargetMachine> machine = createTargetMachine(target, error);
  if (!machine)
    return false;
  llvm::LLVMContext context;
  std::unique_ptr<llvm::Module> llvmModule =
      mlir::translateModuleToLLVMIR(module, context, "kiln");
  if (!llvmModule) {
    error = "translation to LLVM IR failed";
    return false;
  }
  llvmModule->setTargetTriple(target.triple);
  llvmModule->setDataLayout(machine->createDataLayout());
  annotateArenaAccesses(*llvmModule, "main", arenaBuffers);
  optimize(*llvmModule, *machine);
  if (optimizedIR) {
    llvm::raw_string_ostream os(*optimizedIR);
    llvmModule->print(os, nullptr);
  }

  llvm::SmallVector<char, 0> object;
  {
    llvm::raw_svector_ostream os(object);
    llvm::legacy::PassManager passes;
    if (machine->addPassesToEmitFile(passes, os, nullptr,
                                     llvm::CodeGenFileType::ObjectFile)) {
      error = "the target cannot emit object files";
      return false;
    }
    passes.run(*llvmModule);
  }
  return link(object, sharedObject, error);
}

} // namespace kiln
