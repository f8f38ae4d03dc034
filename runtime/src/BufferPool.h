//===- BufferPool.h - Buffers of generated code, cached across runs -*- C++ -*-===//
#ifndef KILN_RUNTIME_SRC_BUFFERPOOL_H
#define KILN_RUNTIME_SRC_BUFFERPOOL_H

#include <cstddef>

namespace kiln::rt {

/// A buffer of at least `size` bytes aligned to `alignment` (a power of two
/// up to 4096), from the pool that generated code allocates from; NULL when
/// out of memory.
void *allocateBuffer(size_t alignment, size_t size);
/// Returns a buffer from allocateBuffer (or generated code) to the pool.
/// NULL is ignored.
void releaseBuffer(void *buffer);

} // namespace kiln::rt

#endif // KILN_RUNTIME_SRC_BUFFERPOOL_H
