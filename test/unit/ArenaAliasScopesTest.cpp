//===- ArenaAliasScopesTest.cpp - Alias scopes of arena accesses ----------===//
//
// annotateArenaAccesses on a hand-written function, judged by LLVM's own
// scoped-noalias analysis (ScopedNoAliasAA): which pairs of accesses it lets
// LLVM treat as disjoint, and which it must not.
//
//===----------------------------------------------------------------------===//
#include "compiler/Codegen/LLVMCPU/ArenaAliasScopes.h"

#include "llvm/Analysis/AliasAnalysis.h"
#include "llvm/Analysis/MemoryLocation.h"
#include "llvm/Analysis/ScopedNoAliasAA.h"
#include "llvm/Analysis/TargetLibraryInfo.h"
#include "llvm/AsmParser/Parser.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/SourceMgr.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>

namespace {

// The arena is main's last argument, a 1-D memref descriptor (allocated
// and aligned pointers, offset, size, stride). A 4 KiB buffer lives at
// offset 0 early in the function; later a 64-byte buffer at offset 64 sits
// inside its bytes, and one at 8192 never overlaps it. The view at offset 0
// has no GEP of its own, as after MLIR's folding. A second nest, a loop in
// a loop, reads both overlapping buffers again.
constexpr const char *kFunction = R"(
define void @main(ptr %allocated, ptr %arena, i64 %offset, i64 %size, i64 %stride) {
entry:
  %early = load float, ptr %arena
  %far.view = getelementptr i8, ptr %arena, i64 8192
  %far = load float, ptr %far.view
  %small.view = getelementptr i8, ptr %arena, i64 64
  br label %loop

loop:
  %i = phi i64 [ 0, %entry ], [ %next, %loop ]
  %src = getelementptr float, ptr %arena, i64 %i
  %inLoop = load float, ptr %src
  %dst = getelementptr float, ptr %small.view, i64 %i
  store float %inLoop, ptr %dst
  %byte.view = getelementptr i8, ptr %arena, i64 64
  %byte = load i8, ptr %byte.view
  %next = add i64 %i, 1
  %done = icmp eq i64 %next, 16
  br i1 %done, label %exit, label %loop

exit:
  store float %early, ptr %small.view
  br label %outer

outer:
  %j = phi i64 [ 0, %exit ], [ %nextOuter, %outerLatch ]
  br label %inner

inner:
  %k = phi i64 [ 0, %outer ], [ %nextInner, %inner ]
  %small.elem = getelementptr float, ptr %small.view, i64 %k
  %nestedSmall = load float, ptr %small.elem
  %big.elem = getelementptr float, ptr %arena, i64 %k
  %nestedBig = load float, ptr %big.elem
  %nextInner = add i64 %k, 1
  %doneInner = icmp eq i64 %nextInner, 4
  br i1 %doneInner, label %outerLatch, label %inner

outerLatch:
  %small.j = getelementptr float, ptr %small.view, i64 %j
  %outerSmall = load float, ptr %small.j
  %nextOuter = add i64 %j, 1
  %doneOuter = icmp eq i64 %nextOuter, 4
  br i1 %doneOuter, label %end, label %outer

end:
  ret void
}
)";

/// Whether LLVM's scoped-noalias analysis lets `a` and `b` alias, from
/// their metadata alone.
bool mayAlias(const llvm::Instruction *a, const llvm::Instruction *b) {
  llvm::TargetLibraryInfoImpl libraryInfo;
  llvm::TargetLibraryInfo library(libraryInfo);
  llvm::AAResults results(library);
  llvm::SimpleAAQueryInfo query(results);
  llvm::ScopedNoAliasAAResult scoped;
  return scoped.alias(*llvm::MemoryLocation::getOrNone(a),
                      *llvm::MemoryLocation::getOrNone(b), query,
                      nullptr) != llvm::AliasResult::NoAlias;
}

class ArenaAliasScopesTest : public ::testing::Test {
protected:
  void SetUp() override {
    llvm::SMDiagnostic diagnostic;
    module = llvm::parseAssemblyString(kFunction, diagnostic, context);
    ASSERT_TRUE(module) << diagnostic.getMessage().str();
    kiln::annotateArenaAccesses(*module, "main",
                                {{0, 4096}, {64, 64}, {8192, 64}});
    // Loads by the name of their value; the two stores by where they are.
    for (llvm::Instruction &instruction :
         llvm::instructions(*module->getFunction("main"))) {
      if (llvm::isa<llvm::LoadInst>(instruction))
        accesses[instruction.getName().str()] = &instruction;
      else if (llvm::isa<llvm::StoreInst>(instruction))
        accesses[instruction.getParent()->getName().str() == "loop"
                     ? "storeInLoop"
                     : "storeAfter"] = &instruction;
    }
  }

  llvm::LLVMContext context;
  std::unique_ptr<llvm::Module> module;
  std::map<std::string, llvm::Instruction *> accesses;
};

TEST_F(ArenaAliasScopesTest, AnnotatesTheViewAtOffsetZero) {
  // Element GEPs straight off the arena reach the buffer at offset 0.
  EXPECT_TRUE(
      accesses["inLoop"]->getMetadata(llvm::LLVMContext::MD_alias_scope));
  EXPECT_TRUE(
      accesses["early"]->getMetadata(llvm::LLVMContext::MD_alias_scope));
}

TEST_F(ArenaAliasScopesTest, SlotsDisjointOverTheFunctionNeverAlias) {
  EXPECT_FALSE(mayAlias(accesses["early"], accesses["far"]));
  EXPECT_FALSE(mayAlias(accesses["inLoop"], accesses["far"]));
}

TEST_F(ArenaAliasScopesTest, OverlappingSlotsAreDisjointWithinOneLoopNest) {
  // Both buffers are live in the loop, so the plan kept them apart.
  EXPECT_FALSE(mayAlias(accesses["inLoop"], accesses["storeInLoop"]));
}

TEST_F(ArenaAliasScopesTest, OverlappingSlotsMayAliasAcrossNests) {
  // Outside the loop the 4 KiB buffer may be dead and its bytes reused by
  // the one at 64.
  EXPECT_TRUE(mayAlias(accesses["early"], accesses["storeAfter"]));
  EXPECT_TRUE(mayAlias(accesses["early"], accesses["storeInLoop"]));
  EXPECT_TRUE(mayAlias(accesses["inLoop"], accesses["storeAfter"]));
}

TEST_F(ArenaAliasScopesTest, NestsAreSeparateOpsButOneNestIsOneOp) {
  // A second nest is another op: the first nest's access to the 4 KiB
  // buffer may alias the second's to the buffer at 64, whose bytes it
  // shared. Within the second nest, inner and outer loop alike, the two
  // are apart.
  EXPECT_TRUE(mayAlias(accesses["inLoop"], accesses["nestedSmall"]));
  EXPECT_TRUE(mayAlias(accesses["storeInLoop"], accesses["nestedBig"]));
  EXPECT_FALSE(mayAlias(accesses["nestedBig"], accesses["nestedSmall"]));
  EXPECT_FALSE(mayAlias(accesses["nestedBig"], accesses["outerSmall"]));
}

TEST_F(ArenaAliasScopesTest, ByteGepOffTheArenaGetsNoLoopScope) {
  // It may be byte 64 of the buffer at offset 0 rather than the view at 64,
  // so nothing in the loop is claimed apart from it.
  EXPECT_TRUE(mayAlias(accesses["byte"], accesses["inLoop"]));
  EXPECT_TRUE(mayAlias(accesses["byte"], accesses["storeInLoop"]));
  EXPECT_FALSE(mayAlias(accesses["byte"], accesses["far"]));
}

} // namespace
