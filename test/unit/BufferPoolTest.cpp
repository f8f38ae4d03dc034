//===- BufferPoolTest.cpp - The buffers generated code allocates ----------===//
#include "runtime/src/BufferPool.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

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

// A step whose buffers hold more than the pool's 1 GiB floor together (a
// batch-32 decode's presents) gets them all back the next step: the cache
// keeps as much as the buffers in use ever held together. Each buffer is
// marked in its first byte: a buffer given back to the system would come
// back as fresh zeroed pages (the same address is no proof: the system
// often maps one there again). Only the first page of each is touched.
TEST(BufferPoolTest, KeepsAWorkingSetLargerThanItsFloor) {
  constexpr size_t kBuffer = size_t(300) << 20;
  constexpr int kCount = 5; // 1.5 GB together
  std::vector<void *> step;
  for (int i = 0; i < kCount; ++i) {
    step.push_back(allocateBuffer(64, kBuffer));
    ASSERT_NE(step.back(), nullptr);
    *static_cast<unsigned char *>(step.back()) = 0xA5;
  }
  for (void *buffer : step)
    releaseBuffer(buffer);
  std::vector<void *> next;
  for (int i = 0; i < kCount; ++i) {
    next.push_back(allocateBuffer(64, kBuffer));
    ASSERT_NE(next.back(), nullptr);
    EXPECT_EQ(*static_cast<unsigned char *>(next.back()), 0xA5)
        << "buffer " << i << " of the second step is not one the first step released";
  }
  for (void *buffer : next)
    releaseBuffer(buffer);
}
