//===- MemRefCopy.cpp - memrefCopy for generated code ---------------------===//
//
// MLIR lowers a memref.copy between non-contiguous buffers (as the
// deallocation pipeline's clones can be) to a call to `memrefCopy`, a function
// of MLIR's runner library. The runtime provides it so that artifacts need no
// MLIR library at run time.
//
//===----------------------------------------------------------------------===//
#include <cstdint>
#include <cstring>

namespace {

/// MLIR's unranked memref: a rank and a pointer to a ranked descriptor
/// {allocated, aligned, offset, sizes[rank], strides[rank]}.
struct UnrankedMemRef {
  int64_t rank;
  void *descriptor;
};

struct RankedView {
  char *aligned;
  int64_t offset;
  const int64_t *sizes;
  const int64_t *strides;
};

RankedView view(const UnrankedMemRef &memref) {
  auto *words = static_cast<int64_t *>(memref.descriptor);
  return {reinterpret_cast<char *>(words[1]), words[2], words + 3,
          words + 3 + memref.rank};
}

void copyDimension(int64_t dim, int64_t rank, int64_t elementSize,
                   const RankedView &source, const char *from,
                   const RankedView &target, char *to) {
  if (dim == rank) {
    std::memcpy(to, from, elementSize);
    return;
  }
  for (int64_t i = 0; i < source.sizes[dim]; ++i)
    copyDimension(dim + 1, rank, elementSize, source,
                  from + i * source.strides[dim] * elementSize, target,
                  to + i * target.strides[dim] * elementSize);
}

} // namespace

extern "C" __attribute__((visibility("default"))) void
memrefCopy(int64_t elementSize, UnrankedMemRef *source, UnrankedMemRef *target) {
  RankedView from = view(*source), to = view(*target);
  copyDimension(0, source->rank, elementSize, from,
                from.aligned + from.offset * elementSize, to,
                to.aligned + to.offset * elementSize);
}
