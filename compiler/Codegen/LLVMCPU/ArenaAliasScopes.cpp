//===- ArenaAliasScopes.cpp - Alias scopes for the planned arena ----------===//
//
// Every planned buffer is a view of one arena argument, so LLVM sees all of
// them as one object and cannot tell that a loop's input and output do not
// overlap: it keeps accumulators in memory and vectorizes behind run-time
// overlap checks. Buffers on the heap did not have the problem, each being a
// fresh allocation. Scoped alias metadata gives that knowledge back.
//
//===----------------------------------------------------------------------===//
#include "compiler/Codegen/LLVMCPU/ArenaAliasScopes.h"

#include "llvm/Analysis/LoopInfo.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/MDBuilder.h"
#include "llvm/IR/Module.h"

#include <map>

namespace kiln {
namespace {

/// The field `indices` of the aggregate `aggregate`, where it comes from the
/// insertvalue chain that built the aggregate (memref descriptors).
llvm::Value *aggregateField(llvm::Value *aggregate, llvm::ArrayRef<unsigned> indices) {
  while (auto *insert = llvm::dyn_cast<llvm::InsertValueInst>(aggregate)) {
    if (insert->getIndices() == indices)
      return insert->getInsertedValueOperand();
    aggregate = insert->getAggregateOperand();
  }
  return nullptr;
}

/// The arena offset of the view that `pointer` is derived from: the
/// constant-offset GEP of `arena` that memref.view lowers to, found through
/// GEPs and descriptor fields. None when the pointer is not traced to one.
/// The view at offset 0 has no GEP of its own (MLIR folds it away), so an
/// element GEP straight off the arena (typed, unlike a view's byte GEP) is
/// an access to that view. Every accessed byte lies in the slot it is
/// attributed to, so the slot-disjointness it is annotated with holds.
std::optional<int64_t> viewOffset(llvm::Value *pointer, llvm::Value *arena) {
  for (int steps = 0; steps < 64; ++steps) {
    if (pointer == arena)
      return 0;
    if (auto *gep = llvm::dyn_cast<llvm::GetElementPtrInst>(pointer)) {
      if (gep->getPointerOperand() == arena) {
        if (!gep->getSourceElementType()->isIntegerTy(8))
          return 0;
        auto *offset =
            gep->getNumIndices() == 1
                ? llvm::dyn_cast<llvm::ConstantInt>(gep->getOperand(1))
                : nullptr;
        if (!offset)
          return std::nullopt;
        return offset->getSExtValue();
      }
      pointer = gep->getPointerOperand();
      continue;
    }
    if (auto *extract = llvm::dyn_cast<llvm::ExtractValueInst>(pointer)) {
      pointer = aggregateField(extract->getAggregateOperand(), extract->getIndices());
      if (!pointer)
        return std::nullopt;
      continue;
    }
    return std::nullopt;
  }
  return std::nullopt;
}

} // namespace

void annotateArenaAccesses(llvm::Module &module, llvm::StringRef functionName,
                           llvm::ArrayRef<ArenaSlot> buffers) {
  llvm::Function *function = module.getFunction(functionName);
  // The arena is the last argument, a 1-D memref: allocated and aligned
  // pointers, offset, size, stride.
  if (!function || buffers.empty() || function->arg_size() < 5)
    return;
  llvm::Value *arena = function->getArg(function->arg_size() - 4);

  // One slot per offset, as long as the largest buffer placed there.
  std::map<int64_t, int64_t> slots;
  for (const ArenaSlot &buffer : buffers)
    slots[buffer.offset] = std::max(slots[buffer.offset], buffer.bytes);

  // Each access to a planned buffer, with its slot and the loop nest it is
  // in. A nest is one op of the plan (a linalg op, or a copy), and every
  // buffer an op touches is live while it runs, so the plan gave buffers at
  // different offsets disjoint bytes: within one nest, accesses to
  // different slots do not alias, even where those slots' bytes overlap
  // over the whole function (a large buffer early, smaller ones inside its
  // bytes later). A byte GEP straight off the arena is left out of that: it
  // is a view, or element c of a byte buffer at offset 0.
  llvm::DominatorTree dominators(*function);
  llvm::LoopInfo loops(dominators);
  struct Access {
    llvm::Instruction *instruction;
    int64_t offset;
    llvm::Loop *nest;
  };
  std::vector<Access> accesses;
  for (llvm::Instruction &instruction : llvm::instructions(*function)) {
    llvm::Value *pointer = nullptr;
    if (auto *load = llvm::dyn_cast<llvm::LoadInst>(&instruction))
      pointer = load->getPointerOperand();
    else if (auto *store = llvm::dyn_cast<llvm::StoreInst>(&instruction))
      pointer = store->getPointerOperand();
    if (!pointer)
      continue;
    std::optional<int64_t> offset = viewOffset(pointer, arena);
    if (!offset || !slots.count(*offset))
      continue;
    auto *gep = llvm::dyn_cast<llvm::GetElementPtrInst>(pointer);
    bool ambiguous = gep && gep->getPointerOperand() == arena &&
                     gep->getSourceElementType()->isIntegerTy(8);
    llvm::Loop *nest =
        ambiguous ? nullptr : loops.getLoopFor(instruction.getParent());
    while (nest && nest->getParentLoop())
      nest = nest->getParentLoop();
    accesses.push_back({&instruction, *offset, nest});
  }

  // A scope per slot for the whole function, and a scope per slot a nest
  // touches in a domain of that nest.
  llvm::MDBuilder builder(module.getContext());
  llvm::MDNode *domain = builder.createAnonymousAliasScopeDomain("kiln.arena");
  std::map<int64_t, llvm::MDNode *> scopes;
  for (const auto &[offset, bytes] : slots)
    scopes[offset] = builder.createAnonymousAliasScope(domain);
  std::map<int64_t, llvm::SmallVector<llvm::Metadata *>> disjointSlots;
  for (const auto &[offset, bytes] : slots)
    for (const auto &[other, otherBytes] : slots)
      if (other + otherBytes <= offset || offset + bytes <= other)
        disjointSlots[offset].push_back(scopes[other]);
  std::map<llvm::Loop *, std::map<int64_t, llvm::MDNode *>> nestScopes;
  for (const Access &access : accesses)
    if (access.nest)
      nestScopes[access.nest][access.offset] = nullptr;
  for (auto &[nest, nestSlots] : nestScopes) {
    llvm::MDNode *nestDomain =
        builder.createAnonymousAliasScopeDomain("kiln.arena.nest");
    for (auto &[offset, scope] : nestSlots)
      scope = builder.createAnonymousAliasScope(nestDomain);
  }

  for (const Access &access : accesses) {
    llvm::SmallVector<llvm::Metadata *> own = {scopes[access.offset]};
    llvm::SmallVector<llvm::Metadata *> disjoint = disjointSlots[access.offset];
    if (access.nest)
      for (const auto &[other, scope] : nestScopes[access.nest])
        (other == access.offset ? own : disjoint).push_back(scope);
    access.instruction->setMetadata(
        llvm::LLVMContext::MD_alias_scope,
        llvm::MDNode::get(module.getContext(), own));
    access.instruction->setMetadata(
        llvm::LLVMContext::MD_noalias,
        llvm::MDNode::get(module.getContext(), disjoint));
  }
}

} // namespace kiln
