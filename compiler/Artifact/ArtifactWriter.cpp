//===- ArtifactWriter.cpp - Writes .kiln artifacts ------------------------===//
#include "compiler/Artifact/ArtifactWriter.h"
#include "kiln/abi/artifact_format.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <cstring>

namespace kiln {
namespace {

/// Bytes read at a time, so that contents.weightRead can let a
/// gigabyte-sized weight go while it is written, not after.
constexpr uint64_t kWeightChunkBytes = 64 << 20;

nlohmann::json tensorJson(const ArtifactTensor &tensor) {
  nlohmann::json dims = nlohmann::json::array();
  for (const ArtifactDim &dim : tensor.dims) {
    if (dim.size >= 0)
      dims.push_back(dim.size);
    else
      dims.push_back({{"name", dim.name}, {"min", dim.min}, {"max", dim.max}});
  }
  return {{"name", tensor.name}, {"dtype", tensor.dtype}, {"dims", dims}};
}

} // namespace

bool writeArtifact(const std::string &path, const ArtifactContents &contents,
                   std::string &error) {
  using namespace artifact;
  nlohmann::json manifest;
  manifest["format_version"] = kFormatVersion;
  manifest["compiler"] = contents.compilerVersion;
  manifest["target"] = {{"triple", contents.triple},
                        {"cpu", contents.cpu},
                        {"features", contents.cpuFeatures}};
  manifest["inputs"] = nlohmann::json::array();
  manifest["outputs"] = nlohmann::json::array();
  for (const ArtifactTensor &input : contents.inputs)
    manifest["inputs"].push_back(tensorJson(input));
  for (const ArtifactTensor &output : contents.outputs)
    manifest["outputs"].push_back(tensorJson(output));

  // Each weight's bytes are written once: the CPU code and the GPU's share
  // the weights that neither packs (one blob, compiled from one graph).
  uint64_t weightsSize = 0;
  std::vector<const ArtifactWeight *> written;
  std::vector<uint64_t> weightOffsets;
  std::map<std::pair<const char *, size_t>, uint64_t> offsetOfBytes;
  auto weightList = [&](const std::vector<ArtifactWeight> &weights) {
    nlohmann::json list = nlohmann::json::array();
    for (const ArtifactWeight &weight : weights) {
      auto [known, added] =
          offsetOfBytes.try_emplace({weight.data.data(), weight.data.size()}, 0);
      if (added) {
        weightsSize = alignTo(weightsSize, kWeightAlignment);
        known->second = weightsSize;
        written.push_back(&weight);
        weightOffsets.push_back(weightsSize);
        weightsSize += weight.data.size();
      }
      list.push_back({{"dtype", weight.dtype},
                      {"shape", weight.shape},
                      {"offset", known->second},
                      {"size", weight.data.size()}});
    }
    return list;
  };
  if (contents.cpuCode) {
    manifest["entry"] = kEntrySymbol;
    manifest["weights"] = weightList(contents.weights);
    manifest["arena_bytes"] = contents.arenaBytes;
  }
  if (contents.gpu) {
    const ArtifactGpuCode &gpu = *contents.gpu;
    manifest["gpu"] = {{"api", "cuda"},
                       {"arch", gpu.arch},
                       {"kernel_checks", gpu.kernelChecks},
                       {"entry", std::string(kEntrySymbol) + kGpuSymbolSuffix},
                       {"weights", weightList(gpu.weights)},
                       {"arena_bytes", gpu.arenaBytes}};
  }
  std::string manifestText = manifest.dump(2);

  Header header = {};
  std::memcpy(header.magic, kMagic, sizeof(kMagic));
  header.formatVersion = kFormatVersion;
  header.headerSize = sizeof(Header);
  header.manifestOffset = sizeof(Header);
  header.manifestSize = manifestText.size();
  header.codeOffset =
      alignTo(header.manifestOffset + header.manifestSize, kSectionAlignment);
  header.codeSize = contents.code.size();
  header.weightsOffset =
      alignTo(header.codeOffset + header.codeSize, kSectionAlignment);
  header.weightsSize = weightsSize;
  header.fileSize = header.weightsOffset + header.weightsSize;

  // The file in order, as pieces of bytes or of zero padding, so that a
  // model of gigabytes is checksummed and written from where its weights
  // already are, never copied into one buffer.
  struct Piece {
    const uint8_t *data; // null: zeros
    uint64_t size;
    const ArtifactWeight *weight; // null: not a weight
  };
  std::vector<Piece> pieces;
  uint64_t end = 0;
  auto append = [&](uint64_t offset, const void *data, uint64_t size,
                    const ArtifactWeight *weight = nullptr) {
    if (offset > end)
      pieces.push_back({nullptr, offset - end, nullptr});
    pieces.push_back({static_cast<const uint8_t *>(data), size, weight});
    end = offset + size;
  };
  append(0, &header, sizeof(header));
  append(header.manifestOffset, manifestText.data(), manifestText.size());
  append(header.codeOffset, contents.code.data(), contents.code.size());
  for (size_t i = 0; i < written.size(); ++i)
    append(header.weightsOffset + weightOffsets[i], written[i]->data.data(),
           written[i]->data.size(), written[i]);
  // Without weights the file still ends at the weights section's offset.
  append(header.fileSize, nullptr, 0);

  // The checksum covers the file with its checksum field zero, which it is
  // in `header` until now.
  static const uint8_t zeros[kSectionAlignment] = {};
  auto forEachChunk = [&](auto &&visit) {
    for (const Piece &piece : pieces)
      for (uint64_t done = 0; done < piece.size;) {
        uint64_t size = std::min<uint64_t>(piece.size - done,
                                           piece.data ? kWeightChunkBytes : sizeof(zeros));
        const uint8_t *data = piece.data ? piece.data + done : zeros;
        visit(data, size);
        done += size;
        if (piece.weight && contents.weightRead)
          contents.weightRead(llvm::ArrayRef<char>(reinterpret_cast<const char *>(data), size));
      }
  };
  uLong crc = crc32(0L, Z_NULL, 0);
  forEachChunk([&](const uint8_t *data, uint64_t size) { crc = crc32_z(crc, data, size); });
  header.checksum = static_cast<uint32_t>(crc);

  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  if (ec) {
    error = "cannot open '" + path + "' for writing: " + ec.message();
    return false;
  }
  forEachChunk([&](const uint8_t *data, uint64_t size) {
    os.write(reinterpret_cast<const char *>(data), size);
  });
  os.close();
  if (os.has_error()) {
    error = "cannot write '" + path + "': " + os.error().message();
    os.clear_error();
    return false;
  }
  return true;
}

} // namespace kiln
