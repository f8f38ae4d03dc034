//===- ArenaAliasScopes.h - Alias scopes for the planned arena --*- C++ -*-===//
#ifndef KILN_COMPILER_CODEGEN_ARENAALIASSCOPES_H
#define KILN_COMPILER_CODEGEN_ARENAALIASSCOPES_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>

namespace llvm {
class Module;
} // namespace llvm

namespace kiln {

/// Where kiln-plan-memory placed a buffer in the arena.
struct ArenaSlot {
  int64_t offset = 0, bytes = 0;
};

/// Gives every load and store of `functionName` (LLVM IR, not yet
/// optimized) that reaches a planned buffer through its view of the arena
/// (the function's last argument) alias-scope metadata saying that it does
/// not alias accesses to the buffers placed at bytes it does not share.
void annotateArenaAccesses(llvm::Module &module, llvm::StringRef functionName,
                           llvm::ArrayRef<ArenaSlot> buffers);

} // namespace kiln

#endif // KILN_COMPILER_CODEGEN_ARENAALIASSCOPES_H
