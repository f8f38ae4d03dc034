//===- BufferPool.cpp - Buffers of generated code, cached across runs -----===//
//
// Generated code allocates every buffer through MLIR's generic allocation
// functions, which the runtime provides here. Freed buffers are kept by size
// class, so the next run of the same model reuses them instead of mapping and
// zeroing fresh pages: page faults were a quarter of a BERT prefill's time,
// and 35,000 a step (a third of the step) in a batch-18 decode loop of the
// medium Llama while its stale classes filled the cache.
// Static memory planning (issue #4) will make most of these allocations go
// away; this keeps the rest cheap.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/BufferPool.h"
#include "runtime/src/Trap.h"

#include "kiln/runtime.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

namespace kiln::rt {
namespace {

/// Every buffer is preceded by its header: padding up to the alignment, then
/// the size class and the header size, just before the returned pointer.
struct Trailer {
  size_t sizeClass;
  size_t headerSize;
};

/// Past this many cached bytes, or the most the buffers in use have ever
/// held together if that is more, the least recently released buffers go
/// back to the system. A fixed bound alone failed large steps: a batch-32
/// decode of a 16-head model returns 1.07 GB of presents, which a 1 GiB
/// cache could not keep, so every step faulted in and zeroed them afresh
/// (41% of its time in the kernel's clear_page).
constexpr size_t kMinCacheBound = size_t(1) << 30;

/// Powers of two up to 64 KiB, then eight classes per octave (multiples of
/// an eighth of the size's power of two, and of 64 KiB): at most 1/2 waste
/// for small buffers, 1/8 for large ones. A decode loop's buffers grow by a
/// row a step; in classes this coarse a buffer keeps its class for an eighth
/// of its size, instead of outgrowing it every 64 KiB.
size_t sizeClassOf(size_t size) {
  constexpr size_t kLargeStep = 64 * 1024;
  if (size <= kLargeStep) {
    size_t sizeClass = 64;
    while (sizeClass < size)
      sizeClass *= 2;
    return sizeClass;
  }
  size_t octave = size_t(1) << (63 - __builtin_clzll(size));
  size_t step = std::max(kLargeStep, octave / 8);
  return (size + step - 1) / step * step;
}

/// The largest cached size class a request of `sizeClass` takes: its own,
/// or for a large buffer one up to a quarter larger.
size_t largestReusedClass(size_t sizeClass) {
  return sizeClass <= 64 * 1024 ? sizeClass : sizeClass + sizeClass / 4;
}

struct Pool {
  std::mutex mutex;
  // Non-empty lists only, by (header size, size class): a lower_bound finds
  // the smallest cached class that fits. Each list holds (release stamp,
  // buffer) in release order: reuse takes the newest, eviction the oldest.
  std::map<std::pair<size_t, size_t>, std::vector<std::pair<uint64_t, void *>>> free;
  size_t cachedBytes = 0;
  // Bytes of the buffers handed out and not yet released, and their most.
  size_t liveBytes = 0, peakLiveBytes = 0;
  uint64_t releases = 0;

  size_t cacheBound() const { return std::max(kMinCacheBound, peakLiveBytes); }

  /// Frees the least recently released buffer; false when none is cached.
  bool evictOldest() {
    auto oldest = free.end();
    for (auto it = free.begin(); it != free.end(); ++it)
      if (oldest == free.end() || it->second.front().first < oldest->second.front().first)
        oldest = it;
    if (oldest == free.end())
      return false;
    std::free(oldest->second.front().second);
    cachedBytes -= oldest->first.first + oldest->first.second;
    oldest->second.erase(oldest->second.begin());
    if (oldest->second.empty())
      free.erase(oldest);
    return true;
  }
};

Pool &pool() {
  // Never destroyed: generated code in another thread may still free buffers
  // while the process exits.
  static Pool *instance = new Pool();
  return *instance;
}

} // namespace

void *allocateBuffer(size_t alignment, size_t size) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0 || alignment > 4096)
    return nullptr;
  const size_t headerSize = std::max<size_t>(alignment, 64);
  size_t sizeClass = sizeClassOf(std::max<size_t>(size, 1));
  if (sizeClass > SIZE_MAX / 2 - headerSize)
    return nullptr;
  void *raw = nullptr;
  Pool &p = pool();
  {
    std::lock_guard<std::mutex> lock(p.mutex);
    auto it = p.free.lower_bound({headerSize, sizeClass});
    if (it != p.free.end() && it->first.first == headerSize &&
        it->first.second <= largestReusedClass(sizeClass)) {
      sizeClass = it->first.second;
      raw = it->second.back().second;
      it->second.pop_back();
      if (it->second.empty())
        p.free.erase(it);
      p.cachedBytes -= sizeClass + headerSize;
    }
  }
  if (!raw)
    raw = std::aligned_alloc(headerSize, headerSize + sizeClass);
  if (!raw)
    return nullptr;
  {
    // Counted once it exists: a request the system cannot meet (a bad
    // request's sizes) must not raise the cache's bound.
    std::lock_guard<std::mutex> lock(p.mutex);
    p.liveBytes += headerSize + sizeClass;
    p.peakLiveBytes = std::max(p.peakLiveBytes, p.liveBytes);
  }
  char *buffer = static_cast<char *>(raw) + headerSize;
  reinterpret_cast<Trailer *>(buffer)[-1] = {sizeClass, headerSize};
  return buffer;
}

void releaseBuffer(void *buffer) {
  if (!buffer)
    return;
  const Trailer trailer = static_cast<Trailer *>(buffer)[-1];
  void *raw = static_cast<char *>(buffer) - trailer.headerSize;
  const size_t bytes = trailer.sizeClass + trailer.headerSize;
  {
    Pool &p = pool();
    std::lock_guard<std::mutex> lock(p.mutex);
    p.liveBytes -= bytes;
    if (bytes <= p.cacheBound()) {
      // A loop whose buffers outgrow their classes leaves the old ones
      // behind: the oldest go, so that the cache keeps what is in use.
      while (p.cachedBytes + bytes > p.cacheBound() && p.evictOldest()) {
      }
      p.free[{trailer.headerSize, trailer.sizeClass}].emplace_back(++p.releases, raw);
      p.cachedBytes += bytes;
      return;
    }
  }
  std::free(raw);
}

namespace {
thread_local RunBufferTracker *currentTracker = nullptr;
} // namespace

RunBufferTracker::RunBufferTracker() : outer_(currentTracker) {
  currentTracker = this;
}

RunBufferTracker::~RunBufferTracker() { currentTracker = outer_; }

RunBufferTracker *RunBufferTracker::current() { return currentTracker; }

void RunBufferTracker::releaseAll() {
  for (void *buffer : live_)
    releaseBuffer(buffer);
  live_.clear();
}

} // namespace kiln::rt

namespace {

/// Generated code does not check for NULL, so a buffer that cannot be had
/// (sizes from a bad request, say) ends the run with an error instead.
void *allocateOrTrap(size_t alignment, size_t size) {
  if (void *buffer = kiln::rt::allocateBuffer(alignment, size)) {
    if (kiln::rt::RunBufferTracker *tracker = kiln::rt::RunBufferTracker::current())
      tracker->allocated(buffer);
    return buffer;
  }
  kiln::rt::trap(KILN_STATUS_RESOURCE_EXHAUSTED,
                 "out of memory: a buffer the model needs cannot be allocated");
}

} // namespace

// MLIR's generic allocation functions (finalize-memref-to-llvm with
// use-generic-functions), which generated code calls.
extern "C" KILN_API void *_mlir_memref_to_llvm_alloc(uint64_t size) {
  return allocateOrTrap(16, size);
}

extern "C" KILN_API void *_mlir_memref_to_llvm_aligned_alloc(uint64_t alignment,
                                                            uint64_t size) {
  return allocateOrTrap(alignment, size);
}

extern "C" KILN_API void _mlir_memref_to_llvm_free(void *buffer) {
  if (kiln::rt::RunBufferTracker *tracker = kiln::rt::RunBufferTracker::current())
    tracker->freed(buffer);
  kiln::rt::releaseBuffer(buffer);
}
