//===- BufferPoolTest.cpp - The buffers generated code allocates ----------===//
#include "runtime/src/BufferPool.h"

#include <gtest/gtest.h>

#include <cstdint>

extern "C" void *_mlir_memref_to_llvm_aligned_alloc(uint64_t alignment, uint64_t size);
extern "C" void _mlir_memref_to_llvm_free(void *buffer);

namespace {

using kiln::rt::allocateBuffer;
using kiln::rt::releaseBuffer;
using kiln::rt::RunBufferTracker;

// A trapped run's buffers go back to the pool: the pool hands out the most
// recently released buffer of a size class first, so the next allocation of
// the held buffer's size gets it back. The buffer the code freed itself is
// not released twice (two allocations would then share it).
TEST(RunBufferTrackerTest, ReleasesWhatATrappedRunHeld) {
  void *held = nullptr, *freedByCode = nullptr;
  {
    RunBufferTracker tracker;
    held = _mlir_memref_to_llvm_aligned_alloc(64, 1000);
    freedByCode = _mlir_memref_to_llvm_aligned_alloc(64, 300000);
    _mlir_memref_to_llvm_free(freedByCode);
    tracker.releaseAll();
  }
  void *again = allocateBuffer(64, 1000);
  EXPECT_EQ(again, held);
  void *first = allocateBuffer(64, 300000), *second = allocateBuffer(64, 300000);
  EXPECT_NE(first, second);
  for (void *buffer : {again, first, second})
    releaseBuffer(buffer);
}

// A run that completes keeps what it allocated (its outputs), and nothing is
// recorded once the tracker is gone.
TEST(RunBufferTrackerTest, KeepsTheOutputsOfACompletedRun) {
  void *output = nullptr;
  {
    RunBufferTracker tracker;
    output = _mlir_memref_to_llvm_aligned_alloc(64, 5000);
  }
  EXPECT_EQ(RunBufferTracker::current(), nullptr);
  void *other = allocateBuffer(64, 5000);
  EXPECT_NE(other, output);
  releaseBuffer(other);
  releaseBuffer(output);
}

} // namespace

// A large buffer is reused for a request up to a quarter smaller, so that a
// decode loop's buffers, which grow by a row a step, stay in the pool; a
// request beyond that, or larger than the cached buffer, gets another.
TEST(BufferPoolTest, ReusesALargeBufferForASlightlySmallerRequest) {
  const size_t large = 10 * 1024 * 1024;
  void *first = allocateBuffer(64, large);
  ASSERT_NE(first, nullptr);
  releaseBuffer(first);
  void *smaller = allocateBuffer(64, large - 1024 * 1024);
  EXPECT_EQ(smaller, first) << "within a quarter of the cached size";
  releaseBuffer(smaller);
  void *muchSmaller = allocateBuffer(64, large / 2);
  EXPECT_NE(muchSmaller, first) << "half the size takes its own buffer";
  void *again = allocateBuffer(64, large);
  EXPECT_EQ(again, first) << "the cached buffer is still there, in its class";
  void *larger = allocateBuffer(64, large + 1);
  EXPECT_NE(larger, first);
  for (void *buffer : {muchSmaller, again, larger})
    releaseBuffer(buffer);
}
