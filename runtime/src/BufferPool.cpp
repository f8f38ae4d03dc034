//===- BufferPool.cpp - Buffers of generated code, cached across runs -----===//
//
// Generated code allocates every buffer through MLIR's generic allocation
// functions, which the runtime provides here. Freed buffers are kept by size
// class, so the next run of the same model reuses them instead of mapping and
// zeroing fresh pages: page faults were a quarter of a BERT prefill's time.
// Static memory planning (issue #4) will make most of these allocations go
// away; this keeps the rest cheap.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/BufferPool.h"

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

/// Past this many cached bytes, freed buffers go back to the system.
constexpr size_t kMaxCachedBytes = size_t(1) << 30;

/// Powers of two up to 64 KiB, then multiples of 64 KiB: at most 1/2 waste
/// for small buffers, under 64 KiB for large ones.
size_t sizeClassOf(size_t size) {
  constexpr size_t kLargeStep = 64 * 1024;
  if (size <= kLargeStep) {
    size_t sizeClass = 64;
    while (sizeClass < size)
      sizeClass *= 2;
    return sizeClass;
  }
  return (size + kLargeStep - 1) / kLargeStep * kLargeStep;
}

struct Pool {
  std::mutex mutex;
  std::map<std::pair<size_t, size_t>, std::vector<void *>> free; // by (class, header)
  size_t cachedBytes = 0;
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
  const size_t sizeClass = sizeClassOf(std::max<size_t>(size, 1));
  if (sizeClass > SIZE_MAX - headerSize)
    return nullptr;
  void *raw = nullptr;
  {
    Pool &p = pool();
    std::lock_guard<std::mutex> lock(p.mutex);
    auto it = p.free.find({sizeClass, headerSize});
    if (it != p.free.end() && !it->second.empty()) {
      raw = it->second.back();
      it->second.pop_back();
      p.cachedBytes -= sizeClass + headerSize;
    }
  }
  if (!raw)
    raw = std::aligned_alloc(headerSize, headerSize + sizeClass);
  if (!raw)
    return nullptr;
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
    if (p.cachedBytes + bytes <= kMaxCachedBytes) {
      p.free[{trailer.sizeClass, trailer.headerSize}].push_back(raw);
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

extern "C" void kiln_rt_trap(const char *message);

namespace {

/// Generated code does not check for NULL, so a buffer that cannot be had
/// (sizes from a bad request, say) ends the run with an error instead.
void *allocateOrTrap(size_t alignment, size_t size) {
  if (void *buffer = kiln::rt::allocateBuffer(alignment, size)) {
    if (kiln::rt::RunBufferTracker *tracker = kiln::rt::RunBufferTracker::current())
      tracker->allocated(buffer);
    return buffer;
  }
  kiln_rt_trap("out of memory: a buffer the model needs cannot be allocated");
  return nullptr;
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
