//===- ArtifactChecksumTest.cpp - The loader's checksum over threads ------===//
//
// A big artifact is checksummed in parts on the instance's threads; the
// result must be the one file-wide CRC the compiler wrote, whatever the
// number of parts, and must still see a flipped byte anywhere.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/Artifact.h"
#include "kiln/abi/artifact_format.h"
#include "runtime/src/ThreadPool.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace {

using kiln::rt::checksumOnPool;
using kiln::rt::kParallelChecksumBytes;
using kiln::rt::ThreadPool;

/// `size` random bytes (the tests pick sizes that 2 and 3 parts do not
/// divide evenly).
std::vector<uint8_t> randomFile(uint64_t size) {
  std::vector<uint8_t> bytes(size);
  std::mt19937_64 random(7);
  for (uint8_t &byte : bytes)
    byte = static_cast<uint8_t>(random());
  return bytes;
}

TEST(ArtifactChecksumTest, PartsCombineToTheWholeFilesChecksum) {
  const std::vector<uint8_t> file = randomFile(kParallelChecksumBytes + 12345);
  const uint32_t whole = kiln::artifact::computeChecksum(file.data(), file.size());
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    EXPECT_EQ(checksumOnPool(file.data(), file.size(), &pool), whole)
        << threads << " threads";
  }
  EXPECT_EQ(checksumOnPool(file.data(), file.size(), nullptr), whole);
}

TEST(ArtifactChecksumTest, SeesAFlippedByteInEveryPart) {
  std::vector<uint8_t> file = randomFile(kParallelChecksumBytes + 12345);
  ThreadPool pool(3);
  const uint32_t original = checksumOnPool(file.data(), file.size(), &pool);
  // The checksum field itself (in the header) is not covered; every other
  // byte is, in the first, middle and last part.
  for (uint64_t offset : {uint64_t(0), file.size() / 2, file.size() - 1}) {
    file[offset] ^= 0x10;
    EXPECT_NE(checksumOnPool(file.data(), file.size(), &pool), original)
        << "byte " << offset;
    file[offset] ^= 0x10;
  }
}

} // namespace
