//===- artifact_format.h - The .kiln artifact file layout -------*- C++ -*-===//
//
// Part of the compiler/runtime contract (kiln/abi/): shared by the compiler's
// writer and the runtime's loader; see docs/artifact-format.md. All integers
// are little-endian.
//
//   [header][manifest JSON][pad][code: ELF shared object][pad][weights]
//
//===----------------------------------------------------------------------===//
#ifndef KILN_ABI_ARTIFACT_FORMAT_H
#define KILN_ABI_ARTIFACT_FORMAT_H

#include <zlib.h>

#include <cstddef>
#include <cstdint>

namespace kiln::artifact {

inline constexpr char kMagic[8] = {'K', 'I', 'L', 'N', 'A', 'R', 'T', '\0'};
inline constexpr uint32_t kFormatVersion = 10;
/// Sections start on page boundaries so that each can be mapped on its own.
inline constexpr uint64_t kSectionAlignment = 4096;
/// Every weight starts on a cache line, which also satisfies every dtype.
inline constexpr uint64_t kWeightAlignment = 64;

struct Header {
  char magic[8];
  uint32_t formatVersion;
  uint32_t headerSize; // sizeof(Header)
  uint64_t fileSize;
  uint64_t manifestOffset, manifestSize;
  uint64_t codeOffset, codeSize;
  uint64_t weightsOffset, weightsSize;
  uint32_t checksum; // CRC-32 of the file with this field read as zero
  uint32_t reserved; // zero
};
static_assert(sizeof(Header) == 80, "the header layout is part of the format");

/// The CPU code's entry point (see docs/artifact-format.md). The CUDA
/// target's code exports its entry point, signature and arena size with
/// this suffix (kiln_entry_cuda, ...), so that both can be in one artifact.
inline constexpr char kEntrySymbol[] = "kiln_entry";
inline constexpr char kGpuSymbolSuffix[] = "_cuda";

/// The code exports `kiln_signature`, an int64 array the loader checks the
/// manifest against, so that a manifest edited to disagree with the code is
/// refused instead of making the code read or write out of bounds:
///   [kSignatureVersion, #inputs, #weights, #outputs,
///    then per input, weight and output: dtype (kiln_dtype_t), rank, sizes
///    (-1 for a dynamic size)]
inline constexpr char kSignatureSymbol[] = "kiln_signature";
inline constexpr int64_t kSignatureVersion = 1;

/// Code compiled with memory planning exports `kiln_arena_bytes`, an int64:
/// the size of the arena it takes as its last argument, after the weights.
/// The loader checks the manifest's `arena_bytes` against it.
inline constexpr char kArenaBytesSymbol[] = "kiln_arena_bytes";
/// The arena's alignment, which every planned buffer's offset keeps.
inline constexpr uint64_t kArenaAlignment = 64;

inline uint64_t alignTo(uint64_t value, uint64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

/// The checksum of a whole file, skipping the header's checksum field.
inline uint32_t computeChecksum(const uint8_t *data, size_t size) {
  constexpr size_t field = offsetof(Header, checksum);
  static const uint8_t zeros[sizeof(uint32_t)] = {};
  uLong crc = crc32(0L, Z_NULL, 0);
  crc = crc32_z(crc, data, field);
  crc = crc32_z(crc, zeros, sizeof(zeros));
  crc = crc32_z(crc, data + field + sizeof(uint32_t),
                size - field - sizeof(uint32_t));
  return static_cast<uint32_t>(crc);
}

} // namespace kiln::artifact

#endif // KILN_ABI_ARTIFACT_FORMAT_H
