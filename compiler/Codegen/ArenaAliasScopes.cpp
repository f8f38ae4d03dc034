//===- ArenaAliasScopes.cpp - Alias scopes for the planned arena ----------===//
//
// Every planned buffer is a view of one arena argument, so LLVM sees all of
// them as one object and cannot tell that a loop's input and output do not
// overlap: it keeps accumulators in memory and vectorizes behind run-time
// overlap checks. Buffers on the heap did not have the problem, each being a
// fresh allocation. Scoped alias metadata gives that knowledge back.
//
//===----------------------------------------------------------------------===//
#include "compiler/Codegen/ArenaAliasScopes.h"

#include "llvm/IR/Constants.h"
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
std::optional<int64_t> viewOffset(llvm::Value *pointer, llvm::Value *arena) {
  for (int steps = 0; steps < 64; ++steps) {
    if (pointer == arena)
      return 0;
    if (auto *gep = llvm::dyn_cast<llvm::GetElementPtrInst>(pointer)) {
      if (gep->getPointerOperand() == arena) {
        auto *offset = gep->getNumIndices() == 1 &&
                               gep->getSourceElementType()->isIntegerTy(8)
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
  llvm::MDBuilder builder(module.getContext());
  llvm::MDNode *domain = builder.createAnonymousAliasScopeDomain("kiln.arena");
  std::map<int64_t, llvm::MDNode *> scopes;
  for (const auto &[offset, bytes] : slots)
    scopes[offset] = builder.createAnonymousAliasScope(domain);
  // An access to a slot aliases no access to a slot whose bytes it does not
  // share, whenever each happens: the metadata holds for the whole function.
  std::map<int64_t, std::pair<llvm::MDNode *, llvm::MDNode *>> metadata;
  for (const auto &[offset, bytes] : slots) {
    llvm::SmallVector<llvm::Metadata *> disjoint;
    for (const auto &[other, otherBytes] : slots)
      if (other + otherBytes <= offset || offset + bytes <= other)
        disjoint.push_back(scopes[other]);
    metadata[offset] = {llvm::MDNode::get(module.getContext(), {scopes[offset]}),
                        llvm::MDNode::get(module.getContext(), disjoint)};
  }

  for (llvm::Instruction &instruction : llvm::instructions(*function)) {
    llvm::Value *pointer = nullptr;
    if (auto *load = llvm::dyn_cast<llvm::LoadInst>(&instruction))
      pointer = load->getPointerOperand();
    else if (auto *store = llvm::dyn_cast<llvm::StoreInst>(&instruction))
      pointer = store->getPointerOperand();
    if (!pointer)
      continue;
    std::optional<int64_t> offset = viewOffset(pointer, arena);
    auto slot = offset ? metadata.find(*offset) : metadata.end();
    if (slot == metadata.end())
      continue;
    instruction.setMetadata(llvm::LLVMContext::MD_alias_scope, slot->second.first);
    instruction.setMetadata(llvm::LLVMContext::MD_noalias, slot->second.second);
  }
}

} // namespace kiln
