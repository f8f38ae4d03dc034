//===- ObjectEmitter.h - LLVM dialect to an x86-64 shared object -*- C++ -*-===//
#ifndef KILN_COMPILER_CODEGEN_OBJECTEMITTER_H
#define KILN_COMPILER_CODEGEN_OBJECTEMITTER_H

#include "compiler/Codegen/LLVMCPU/ArenaAliasScopes.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <vector>

namespace kiln {

struct CpuTarget {
  std::string triple;
  std::string cpu;                   // LLVM's CPU name, resolved ("skylake-avx512")
  std::vector<std::string> features; // those of kiln/abi/cpu_features.h the code may use
};

/// Resolves `--cpu`: "native" (this machine), "x86-64-v3", "x86-64-v4" or any
/// other LLVM x86 CPU name. Fails with a message for an unknown CPU.
bool resolveCpuTarget(const std::string &cpu, CpuTarget &target,
                      std::string &error);

/// Translates `module` (LLVM dialect) to LLVM IR, optimizes it at O3 for
/// `target`, emits an object file and links it into an ELF shared object
/// with the system linker (ld.lld or ld). `arenaBuffers` are the buffers
/// memory planning placed in the entry function `main`'s arena, whose
/// accesses get alias scopes (ArenaAliasScopes.h). When `optimizedIR` is
/// set, it receives the optimized LLVM IR as text (kilnc --emit=llvm-ir).
bool emitSharedObject(mlir::ModuleOp module, const CpuTarget &target,
                      llvm::ArrayRef<ArenaSlot> arenaBuffers,
                      std::vector<char> &sharedObject, std::string &error,
                      std::string *optimizedIR = nullptr);

} // namespace kiln

#endif // KILN_COMPILER_CODEGEN_OBJECTEMITTER_H
