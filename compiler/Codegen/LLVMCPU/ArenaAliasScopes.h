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
/// not alias accesses to the buffers placed at bytes it does not share,
/// nor, within its outermost loop nest, accesses to other offsets. That
/// rests on invariants of the pipeline: each loop nest comes from one op of
/// the memory plan (nothing after kiln-plan-memory moves or merges ops
/// across positions, and this runs before LLVM's optimizations), every
/// view is a byte GEP of the arena (memref.view) but the one at offset 0,
/// which MLIR folds to the arena itself.
void annotateArenaAccesses(llvm::Module &module, llvm::StringRef functionName,
                           llvm::ArrayRef<ArenaSlot> buffers);

} // namespace kiln

#endif // KILN_COMPILER_CODEGEN_ARENAALIASSCOPES_H
