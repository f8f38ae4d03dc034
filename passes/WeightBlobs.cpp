//===- WeightBlobs.cpp - Reading and replacing constant weights -----------===//
#include "passes/WeightBlobs.h"

#include "mlir/IR/AsmState.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/Path.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <mutex>

using namespace mlir;

namespace kiln {
namespace {

/// Smaller weights stay on the heap: below 16 pages, the rounding to whole
/// pages and a mapping of their own cost more than they save.
constexpr size_t kScratchMinBytes = 64 * 1024;

/// Free space that the scratch file leaves in TMPDIR, for the object file
/// that code generation writes there and for everyone else.
constexpr uint64_t kScratchHeadroomBytes = 256ull << 20;

/// The file that the weights a compile writes (packed, quantized) are kept
/// in instead of the heap, so that kilnc holds each in its memory only while
/// it writes or reads it: a model's packed copy is built beside its original
/// weights, and neither has to be resident while the code is generated. One
/// per process, in TMPDIR, unlinked as soon as it is made; a weight's pages
/// are given back to the file system (punched out) when its blob goes.
class ScratchFile {
public:
  static ScratchFile &get() {
    // Never destroyed: blobs that outlive main's locals may still name it.
    static ScratchFile *file = new ScratchFile();
    return *file;
  }

  /// A zeroed, writable blob of `size` bytes mapped from the file, or none
  /// when the file cannot hold it (no TMPDIR, too little free space): the
  /// caller then uses the heap. The space is reserved before the mapping is
  /// touched, so a full disk is an error here, never a SIGBUS later.
  std::optional<AsmResourceBlob> allocate(size_t size) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!open())
      return std::nullopt;
    const size_t length = llvm::alignTo(size, pageSize_);
    const off_t offset = end_;
    struct statvfs fs;
    if (::fstatvfs(fd_, &fs) != 0 ||
        static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize < length + kScratchHeadroomBytes ||
        ::posix_fallocate(fd_, offset, length) != 0)
      return std::nullopt;
    void *data = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, offset);
    if (data == MAP_FAILED) {
      punch(offset, length);
      return std::nullopt;
    }
    end_ += length;
    regions_[reinterpret_cast<uintptr_t>(data)] = length;
    return AsmResourceBlob(
        ArrayRef<char>(static_cast<char *>(data), size), pageSize_,
        [this, offset, length](void *data, size_t, size_t) { release(data, offset, length); },
        /*dataIsMutable=*/true);
  }

  /// Unmaps the pages that `bytes` touches, if they are the file's; they
  /// stay in the file and a later read maps them again, so a page that it
  /// shares with bytes still to be read can go too.
  void dropPages(ArrayRef<char> bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto begin = reinterpret_cast<uintptr_t>(bytes.data());
    auto region = regions_.upper_bound(begin);
    if (region == regions_.begin())
      return;
    --region;
    const uintptr_t regionEnd = region->first + region->second;
    if (begin >= regionEnd)
      return;
    const uintptr_t from = llvm::alignDown(begin, pageSize_);
    const uintptr_t to = std::min<uintptr_t>(llvm::alignTo(begin + bytes.size(), pageSize_), regionEnd);
    ::madvise(reinterpret_cast<void *>(from), to - from, MADV_DONTNEED);
  }

private:
  bool open() {
    if (fd_ >= 0 || failed_)
      return fd_ >= 0;
    failed_ = true;
    llvm::SmallString<128> model;
    llvm::sys::path::system_temp_directory(/*ErasedOnReboot=*/true, model);
    llvm::sys::path::append(model, "kilnc-weights-%%%%%%%%");
    llvm::SmallString<128> path;
    if (llvm::sys::fs::createUniqueFile(model, fd_, path))
      return false;
    llvm::sys::fs::remove(path);
    pageSize_ = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    failed_ = false;
    return true;
  }

  void release(void *data, off_t offset, size_t length) {
    std::lock_guard<std::mutex> lock(mutex_);
    ::munmap(data, length);
    regions_.erase(reinterpret_cast<uintptr_t>(data));
    punch(offset, length);
  }

  /// Gives a region's blocks back; the file keeps its size, with a hole.
  void punch(off_t offset, size_t length) {
    ::fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, offset, length);
  }

  std::mutex mutex_;
  int fd_ = -1;
  bool failed_ = false;
  size_t pageSize_ = 0;
  off_t end_ = 0;
  /// Each mapped weight's address and length.
  std::map<uintptr_t, size_t> regions_;
};

} // namespace

std::optional<ArrayRef<char>> elementBytes(ElementsAttr value,
                                           std::vector<char> &storage) {
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(value)) {
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    if (!blob)
      return std::nullopt;
    return blob->getData();
  }
  auto dense = dyn_cast<DenseElementsAttr>(value);
  if (!dense || dense.getElementType().isInteger(1))
    return std::nullopt;
  ArrayRef<char> raw = dense.getRawData();
  if (!dense.isSplat())
    return raw;
  storage.resize(raw.size() * dense.getNumElements());
  for (size_t at = 0; at < storage.size(); at += raw.size())
    std::copy(raw.begin(), raw.end(), storage.begin() + at);
  return ArrayRef<char>(storage);
}

std::optional<ArrayRef<float>> floatValues(ElementsAttr value,
                                           std::vector<char> &storage) {
  if (!value.getElementType().isF32())
    return std::nullopt;
  std::optional<ArrayRef<char>> bytes = elementBytes(value, storage);
  if (!bytes)
    return std::nullopt;
  return ArrayRef<float>(reinterpret_cast<const float *>(bytes->data()),
                         bytes->size() / sizeof(float));
}

ElementsAttr
replacementWeight(ElementsAttr original, RankedTensorType type,
                  StringRef suffix,
                  function_ref<void(MutableArrayRef<char>)> fill) {
  const size_t bytes =
      type.getNumElements() * type.getElementType().getIntOrFloatBitWidth() / 8;
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(original)) {
    std::optional<AsmResourceBlob> scratch;
    if (bytes >= kScratchMinBytes)
      scratch = ScratchFile::get().allocate(bytes);
    AsmResourceBlob blob =
        scratch ? std::move(*scratch) : HeapAsmResourceBlob::allocate(bytes, /*align=*/64);
    MutableArrayRef<char> data = blob.getMutableData();
    if (!scratch)
      std::fill(data.begin(), data.end(), 0);
    fill(data);
    dropScratchPages(data);
    std::string key = (resource.getRawHandle().getKey() + suffix).str();
    return DenseResourceElementsAttr::get(type, key, std::move(blob));
  }
  std::vector<char> data(bytes, 0);
  fill(data);
  return DenseElementsAttr::getFromRawBuffer(type, data);
}

template <typename Fn> static void forEachBlob(Operation *op, Fn &&fn) {
  op->getAttrDictionary().walk([&](DenseResourceElementsAttr attr) {
    fn(attr.getRawHandle().getResource());
  });
}

BlobReaders::BlobReaders(ModuleOp module) {
  module->walk([&](Operation *op) {
    forEachBlob(op, [&](DialectResourceBlobManager::BlobEntry *blob) {
      ++count_[blob];
    });
  });
}

void BlobReaders::erase(Operation *op) {
  forEachBlob(op, [&](DialectResourceBlobManager::BlobEntry *blob) {
    if (--count_[blob] == 0)
      blob->setBlob(AsmResourceBlob());
  });
  op->erase();
}

void dropScratchPages(ArrayRef<char> bytes) { ScratchFile::get().dropPages(bytes); }

std::string weightName(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().str();
  std::string text;
  llvm::raw_string_ostream os(text);
  loc.print(os);
  return os.str();
}

} // namespace kiln
