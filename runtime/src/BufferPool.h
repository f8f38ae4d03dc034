//===- BufferPool.h - Buffers of generated code, cached across runs -*- C++ -*-===//
#ifndef KILN_RUNTIME_SRC_BUFFERPOOL_H
#define KILN_RUNTIME_SRC_BUFFERPOOL_H

#include <cstddef>
#include <unordered_set>

namespace kiln::rt {

/// A buffer of at least `size` bytes aligned to `alignment` (a power of two
/// up to 4096), from the pool that generated code allocates from; NULL when
/// out of memory.
void *allocateBuffer(size_t alignment, size_t size);
/// Returns a buffer from allocateBuffer (or generated code) to the pool.
/// NULL is ignored.
void releaseBuffer(void *buffer);

/// While one lives, the buffers generated code allocates on this thread and
/// has not yet freed are recorded in it, so that a run its checks end early
/// (kiln_rt_trap jumps out of the code) can release what the code held
/// instead of leaking it: a server meets bad requests all day. A run that
/// completes keeps its outputs; the tracker only stops recording. Trackers
/// nest (the innermost records).
class RunBufferTracker {
public:
  RunBufferTracker();
  ~RunBufferTracker();
  RunBufferTracker(const RunBufferTracker &) = delete;
  RunBufferTracker &operator=(const RunBufferTracker &) = delete;

  /// Releases every buffer recorded and not freed since.
  void releaseAll();

  /// The tracker recording on this thread, or null (for the allocator).
  static RunBufferTracker *current();
  void allocated(void *buffer) { live_.insert(buffer); }
  void freed(void *buffer) { live_.erase(buffer); }

private:
  std::unordered_set<void *> live_;
  RunBufferTracker *outer_;
};

} // namespace kiln::rt

#endif // KILN_RUNTIME_SRC_BUFFERPOOL_H
