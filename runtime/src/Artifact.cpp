//===- Artifact.cpp - Loading and validating .kiln artifacts --------------===//
//
// Everything in the file is checked before it is used: header fields, section
// bounds, the checksum, every manifest field, weight extents, and the CPU
// features the code needs. Only then is the code mapped and its entry point
// looked up.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/Artifact.h"
#include "kiln/abi/artifact_format.h"
#include "kiln/abi/cpu_features.h"
#include "runtime/src/Status.h"
#include "runtime/src/ThreadPool.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace kiln::rt {
namespace {

using nlohmann::json;

kiln_dtype_t parseDtype(const std::string &name) {
  for (kiln_dtype_t dtype :
       {KILN_DTYPE_F32, KILN_DTYPE_F16, KILN_DTYPE_BF16, KILN_DTYPE_F64,
        KILN_DTYPE_I64, KILN_DTYPE_I32, KILN_DTYPE_I16, KILN_DTYPE_I8,
        KILN_DTYPE_U64, KILN_DTYPE_U32, KILN_DTYPE_U16, KILN_DTYPE_U8,
        KILN_DTYPE_BOOL})
    if (name == kiln_dtype_name(dtype))
      return dtype;
  return KILN_DTYPE_INVALID;
}

/// Reads manifest fields, remembering the first problem with its field path.
class ManifestReader {
public:
  explicit ManifestReader(std::string path) : path_(std::move(path)) {}

  const json *field(const json &object, const std::string &where,
                    const char *key) {
    if (!object.is_object()) {
      fail(where, "expected an object");
      return nullptr;
    }
    auto it = object.find(key);
    if (it == object.end()) {
      fail(where + "." + key, "missing");
      return nullptr;
    }
    return &*it;
  }
  bool string(const json &object, const std::string &where, const char *key,
              std::string &out) {
    const json *value = field(object, where, key);
    if (!value)
      return false;
    if (!value->is_string())
      return fail(where + "." + key, "expected a string");
    out = value->get<std::string>();
    return true;
  }
  bool integer(const json &value, const std::string &where, int64_t &out) {
    if (!value.is_number_integer())
      return fail(where, "expected an integer");
    out = value.get<int64_t>();
    return true;
  }
  bool integer(const json &object, const std::string &where, const char *key,
               int64_t &out) {
    const json *value = field(object, where, key);
    return value && integer(*value, where + "." + key, out);
  }
  const json *array(const json &object, const std::string &where,
                    const char *key) {
    const json *value = field(object, where, key);
    if (value && !value->is_array()) {
      fail(where + "." + key, "expected an array");
      return nullptr;
    }
    return value;
  }
  bool dtype(const json &object, const std::string &where, kiln_dtype_t &out) {
    std::string name;
    if (!string(object, where, "dtype", name))
      return false;
    out = parseDtype(name);
    if (out == KILN_DTYPE_INVALID)
      return fail(where + ".dtype", "unknown dtype '" + name + "'");
    return true;
  }

  bool fail(const std::string &where, const std::string &what) {
    if (error_.empty())
      error_ = path_ + ": manifest: " + where + ": " + what;
    return false;
  }
  const std::string &error() const { return error_; }

private:
  std::string path_;
  std::string error_;
};

bool readTensor(ManifestReader &reader, const json &value,
                const std::string &where, TensorInfo &tensor) {
  if (!reader.string(value, where, "name", tensor.name) ||
      !reader.dtype(value, where, tensor.dtype))
    return false;
  const json *dims = reader.array(value, where, "dims");
  if (!dims)
    return false;
  tensor.dimNames.resize(dims->size());
  for (size_t i = 0; i < dims->size(); ++i) {
    std::string dimWhere = where + ".dims[" + std::to_string(i) + "]";
    const json &dim = (*dims)[i];
    kiln_dim_t info{};
    if (dim.is_number_integer()) {
      if (!reader.integer(dim, dimWhere, info.size) || info.size < 0)
        return reader.fail(dimWhere, "expected a size >= 0");
      info.min = info.max = info.size;
    } else {
      info.size = -1;
      if (!reader.string(dim, dimWhere, "name", tensor.dimNames[i]) ||
          !reader.integer(dim, dimWhere, "min", info.min) ||
          !reader.integer(dim, dimWhere, "max", info.max))
        return false;
      if (info.min < 0 || info.max < info.min)
        return reader.fail(dimWhere, "bounds [" + std::to_string(info.min) +
                                         ", " + std::to_string(info.max) +
                                         "] are not 0 <= min <= max");
    }
    tensor.dims.push_back(info);
  }
  for (size_t i = 0; i < tensor.dims.size(); ++i)
    tensor.dims[i].name = tensor.dimNames[i].c_str();
  return true;
}

/// One device's code: its weights (at `where`.weights) and arena size;
/// `where` is "" for the top level, whose fields are the CPU code's.
bool readCode(ManifestReader &reader, const json &object, const std::string &where,
              uint64_t weightsSize, Code &code) {
  const std::string prefix = where.empty() ? "" : where + ".";
  const std::string objectName = where.empty() ? "manifest" : where;
  const json *weights = reader.array(object, objectName, "weights");
  if (!weights)
    return false;
  for (size_t i = 0; i < weights->size(); ++i) {
    std::string at = prefix + "weights[" + std::to_string(i) + "]";
    const json &entry = (*weights)[i];
    WeightInfo weight;
    int64_t offset, bytes;
    const json *shape = reader.array(entry, at, "shape");
    if (!reader.dtype(entry, at, weight.dtype) || !shape ||
        !reader.integer(entry, at, "offset", offset) || !reader.integer(entry, at, "size", bytes))
      return false;
    uint64_t elements = 1;
    for (size_t d = 0; d < shape->size(); ++d) {
      int64_t size;
      if (!reader.integer((*shape)[d], at + ".shape[" + std::to_string(d) + "]", size))
        return false;
      if (size < 0 || (size > 0 && elements > (uint64_t(1) << 62) / size))
        return reader.fail(at + ".shape", "sizes out of range");
      elements *= size;
      weight.shape.push_back(size);
    }
    if (offset < 0 || offset % artifact::kWeightAlignment != 0 || bytes < 0 ||
        uint64_t(offset) > weightsSize || uint64_t(bytes) > weightsSize - offset)
      return reader.fail(at, "extent [" + std::to_string(offset) + ", +" +
                                 std::to_string(bytes) +
                                 ") is unaligned or outside the weights section (" +
                                 std::to_string(weightsSize) + " bytes)");
    if (uint64_t(bytes) != elements * kiln_dtype_size(weight.dtype))
      return reader.fail(at + ".size",
                         std::to_string(bytes) + " bytes, but the shape needs " +
                             std::to_string(elements * kiln_dtype_size(weight.dtype)));
    code.weights.push_back(std::move(weight));
    code.weightOffsets.push_back(offset);
  }
  int64_t arenaBytes;
  if (!reader.integer(object, objectName, "arena_bytes", arenaBytes))
    return false;
  if (arenaBytes < 0)
    return reader.fail(objectName + ".arena_bytes", "is negative");
  code.arenaBytes = arenaBytes;
  return true;
}

std::string hex(uint32_t value) {
  char text[16];
  std::snprintf(text, sizeof(text), "0x%08x", value);
  return text;
}

// The generated code calls the runtime's exported symbols (the
// microkernels, the allocation functions) by name. An embedder that loaded
// the runtime with RTLD_LOCAL (Python's extension modules, plugins) left them
// out of the global scope the code's symbols resolve in; reopening the
// runtime with RTLD_NOLOAD | RTLD_GLOBAL puts them there, and is a no-op
// where they already are.
void exportRuntimeSymbols() {
  Dl_info self;
  if (::dladdr(reinterpret_cast<void *>(&exportRuntimeSymbols), &self) && self.dli_fname)
    ::dlopen(self.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL);
}

} // namespace

uint32_t checksumOnPool(const uint8_t *bytes, uint64_t size, ThreadPool *pool) {
  using namespace artifact;
  if (!pool || pool->size() == 1 || size < kParallelChecksumBytes)
    return computeChecksum(bytes, size);
  // The header holds the checksum field, which computeChecksum skips.
  const uint64_t head = sizeof(Header), body = size - head;
  const int64_t parts = pool->size();
  auto partBegin = [&](int64_t part) { return head + body * part / parts; };
  std::vector<uLong> crcs(parts);
  pool->parallelFor(parts, [&](int64_t begin, int64_t end) {
    for (int64_t part = begin; part < end; ++part)
      crcs[part] = crc32_z(crc32(0L, Z_NULL, 0), bytes + partBegin(part),
                           partBegin(part + 1) - partBegin(part));
  });
  uLong crc = computeChecksum(bytes, head);
  for (int64_t part = 0; part < parts; ++part)
    crc = crc32_combine64(crc, crcs[part], partBegin(part + 1) - partBegin(part));
  return static_cast<uint32_t>(crc);
}

kiln_status_t Artifact::load(const std::string &path, ThreadPool *pool,
                             std::unique_ptr<Artifact> &out) {
  using namespace artifact;
  std::unique_ptr<Artifact> loaded(new Artifact());
  loaded->path_ = path;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return makeStatus(errno == ENOENT ? KILN_STATUS_NOT_FOUND
                                      : KILN_STATUS_INVALID_ARGUMENT,
                      path + ": cannot open: " + std::strerror(errno));
  struct stat info;
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(fd);
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT, path + ": not a regular file");
  }
  uint64_t fileSize = info.st_size;
  if (fileSize < sizeof(Header)) {
    ::close(fd);
    return makeStatus(KILN_STATUS_DATA_LOSS,
                      path + ": truncated: " + std::to_string(fileSize) +
                          " bytes, but the header alone is " +
                          std::to_string(sizeof(Header)));
  }
  void *mapping = ::mmap(nullptr, fileSize, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (mapping == MAP_FAILED)
    return makeStatus(KILN_STATUS_RESOURCE_EXHAUSTED,
                      path + ": cannot map: " + std::strerror(errno));
  loaded->mapping_ = mapping;
  loaded->mappingSize_ = fileSize;
  const auto *bytes = static_cast<const uint8_t *>(mapping);

  Header header;
  std::memcpy(&header, bytes, sizeof(header));
  if (std::memcmp(header.magic, kMagic, sizeof(kMagic)) != 0)
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      path + ": not a Kiln artifact (wrong magic number at offset 0)");
  if (header.formatVersion != kFormatVersion)
    return makeStatus(KILN_STATUS_UNIMPLEMENTED,
                      path + ": format version " +
                          std::to_string(header.formatVersion) +
                          " (offset 8); this runtime reads version " +
                          std::to_string(kFormatVersion));
  if (header.headerSize != sizeof(Header))
    return makeStatus(KILN_STATUS_DATA_LOSS,
                      path + ": header size " + std::to_string(header.headerSize) +
                          " (offset 12), expected " + std::to_string(sizeof(Header)));
  if (header.fileSize != fileSize)
    return makeStatus(KILN_STATUS_DATA_LOSS,
                      path + ": " + (fileSize < header.fileSize ? "truncated: " : "") +
                          "the header (offset 16) says " +
                          std::to_string(header.fileSize) + " bytes, the file has " +
                          std::to_string(fileSize));
  uint32_t checksum = checksumOnPool(bytes, fileSize, pool);
  if (checksum != header.checksum)
    return makeStatus(KILN_STATUS_DATA_LOSS,
                      path + ": checksum mismatch: the header (offset " +
                          std::to_string(offsetof(Header, checksum)) + ") says " +
                          hex(header.checksum) + ", the contents give " +
                          hex(checksum) + "; the file is corrupted");
  if (header.reserved != 0)
    return makeStatus(KILN_STATUS_DATA_LOSS,
                      path + ": the reserved header field (offset " +
                          std::to_string(offsetof(Header, reserved)) +
                          ") is not zero");
  // Sections follow each other in order: header, manifest, code, weights;
  // code and weights start on page boundaries.
  struct Section {
    const char *name;
    uint64_t offset, size;
    size_t fieldOffset;
  };
  const Section sections[] = {
      {"manifest", header.manifestOffset, header.manifestSize,
       offsetof(Header, manifestOffset)},
      {"code", header.codeOffset, header.codeSize, offsetof(Header, codeOffset)},
      {"weights", header.weightsOffset, header.weightsSize,
       offsetof(Header, weightsOffset)}};
  uint64_t previousEnd = sizeof(Header);
  for (const Section &section : sections) {
    std::string where = path + ": the " + section.name + " section [" +
                        std::to_string(section.offset) + ", +" +
                        std::to_string(section.size) + ") (header offset " +
                        std::to_string(section.fieldOffset) + ")";
    if (section.offset > fileSize || section.size > fileSize - section.offset)
      return makeStatus(KILN_STATUS_DATA_LOSS, where + " lies outside the file");
    if (section.offset < previousEnd)
      return makeStatus(KILN_STATUS_DATA_LOSS,
                        where + " overlaps what precedes it (which ends at " +
                            std::to_string(previousEnd) + ")");
    if (&section != &sections[0] && section.offset % kSectionAlignment != 0)
      return makeStatus(KILN_STATUS_DATA_LOSS,
                        where + " is not aligned to " +
                            std::to_string(kSectionAlignment) + " bytes");
    previousEnd = section.offset + section.size;
  }

  if (kiln_status_t status = loaded->parseManifest(
          reinterpret_cast<const char *>(bytes + header.manifestOffset),
          header.manifestSize, header.weightsSize))
    return status;
  const uint8_t *weights = bytes + header.weightsOffset;
  for (std::optional<Code> *code : {&loaded->cpu_, &loaded->gpu_})
    if (*code)
      for (size_t i = 0; i < (*code)->weights.size(); ++i)
        (*code)->weights[i].data = weights + (*code)->weightOffsets[i];
  if (kiln_status_t status =
          loaded->loadCode(bytes + header.codeOffset, header.codeSize))
    return status;
  out = std::move(loaded);
  return nullptr;
}

kiln_status_t Artifact::parseManifest(const char *text, size_t size,
                                      uint64_t weightsSize) {
  json manifest = json::parse(text, text + size, nullptr, /*allow_exceptions=*/false);
  if (manifest.is_discarded())
    return makeStatus(KILN_STATUS_DATA_LOSS, path_ + ": manifest: not valid JSON");
  ManifestReader reader(path_);
  auto failed = [&] { return makeStatus(KILN_STATUS_DATA_LOSS, reader.error()); };

  const json *target = reader.field(manifest, "manifest", "target");
  const json *features = target ? reader.array(*target, "target", "features") : nullptr;
  if (!features)
    return failed();
  std::string missing;
  for (size_t i = 0; i < features->size(); ++i) {
    const json &feature = (*features)[i];
    if (!feature.is_string()) {
      reader.fail("target.features[" + std::to_string(i) + "]", "expected a string");
      return failed();
    }
    if (!hostHasCpuFeature(feature.get<std::string>()))
      missing += (missing.empty() ? "" : ", ") + feature.get<std::string>();
  }
  if (!missing.empty()) {
    std::string cpu;
    reader.string(*target, "target", "cpu", cpu);
    return makeStatus(KILN_STATUS_FAILED_PRECONDITION,
                      path_ + ": compiled for CPU '" + cpu +
                          "', whose features this CPU lacks: " + missing +
                          " (recompile with kilnc --cpu=native or an older --cpu)");
  }

  for (auto [key, list] : {std::pair("inputs", &inputs_), std::pair("outputs", &outputs_)}) {
    const json *tensors = reader.array(manifest, "manifest", key);
    if (!tensors)
      return failed();
    list->resize(tensors->size());
    for (size_t i = 0; i < tensors->size(); ++i)
      if (!readTensor(reader, (*tensors)[i],
                      std::string(key) + "[" + std::to_string(i) + "]", (*list)[i]))
        return failed();
  }

  // The CPU code, when there is an entry point for it.
  if (manifest.is_object() && manifest.contains("entry")) {
    if (!readCode(reader, manifest, "", weightsSize, cpu_.emplace()))
      return failed();
  }
  // The CUDA target's code (format version 10).
  if (manifest.is_object() && manifest.contains("gpu")) {
    const json &gpu = manifest["gpu"];
    std::string api;
    const json *checks = reader.array(gpu, "gpu", "kernel_checks");
    if (!reader.string(gpu, "gpu", "api", api) || !reader.string(gpu, "gpu", "arch", gpuArch_) ||
        !checks)
      return failed();
    if (gpuArch_.empty()) {
      reader.fail("gpu.arch", "empty");
      return failed();
    }
    if (api != "cuda") {
      reader.fail("gpu.api", "'" + api + "' is not a GPU API this runtime knows (cuda)");
      return failed();
    }
    for (size_t i = 0; i < checks->size(); ++i) {
      if (!(*checks)[i].is_string()) {
        reader.fail("gpu.kernel_checks[" + std::to_string(i) + "]", "expected a string");
        return failed();
      }
      kernelChecks_.push_back((*checks)[i].get<std::string>());
    }
    if (!readCode(reader, gpu, "gpu", weightsSize, gpu_.emplace()))
      return failed();
  }
  if (!cpu_ && !gpu_) {
    reader.fail("manifest", "no code: neither an entry nor a gpu entry");
    return failed();
  }
  return nullptr;
}

kiln_status_t Artifact::loadCode(const void *code, size_t size) {
  // The code is an ELF shared object; the dynamic loader needs it as a file,
  // so it goes through an anonymous memory file.
  int fd = ::memfd_create("kiln-code", MFD_CLOEXEC);
  if (fd < 0)
    return makeStatus(KILN_STATUS_INTERNAL,
                      path_ + ": cannot create a memory file for the code: " +
                          std::strerror(errno));
  const char *cursor = static_cast<const char *>(code);
  size_t left = size;
  while (left > 0) {
    ssize_t written = ::write(fd, cursor, left);
    if (written <= 0) {
      ::close(fd);
      return makeStatus(KILN_STATUS_INTERNAL,
                        path_ + ": cannot write the code: " + std::strerror(errno));
    }
    cursor += written;
    left -= written;
  }
  // The memory file stays open while the library is loaded: dlopen knows a
  // library by its path, and a closed fd's number, hence path, would be
  // reused by the next artifact, which dlopen would then take for this one.
  codeFd_ = fd;
  exportRuntimeSymbols();
  std::string procPath = "/proc/self/fd/" + std::to_string(fd);
  library_ = ::dlopen(procPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library_) {
    const char *message = ::dlerror();
    return makeStatus(KILN_STATUS_DATA_LOSS,
                      path_ + ": cannot load the code section: " +
                          (message ? message : "unknown error"));
  }
  if (cpu_)
    if (kiln_status_t status = bindCode(*cpu_, ""))
      return status;
  if (gpu_)
    if (kiln_status_t status = bindCode(*gpu_, artifact::kGpuSymbolSuffix))
      return status;
  return nullptr;
}

kiln_status_t Artifact::bindCode(Code &code, const std::string &suffix) {
  const std::string entry = artifact::kEntrySymbol + suffix;
  code.entry = reinterpret_cast<EntryFunction>(::dlsym(library_, entry.c_str()));
  if (!code.entry)
    return makeStatus(KILN_STATUS_DATA_LOSS,
                      path_ + ": the code section has no " + entry + " symbol");
  const std::string signature = artifact::kSignatureSymbol + suffix;
  if (kiln_status_t status = checkSignature(
          static_cast<const int64_t *>(::dlsym(library_, signature.c_str())), code, signature))
    return status;
  // Code without memory planning exports no arena size and takes no arena.
  const std::string arena = artifact::kArenaBytesSymbol + suffix;
  auto *codeArenaBytes = static_cast<const int64_t *>(::dlsym(library_, arena.c_str()));
  int64_t expected = codeArenaBytes ? *codeArenaBytes : 0;
  if (expected != (int64_t)code.arenaBytes)
    return makeStatus(KILN_STATUS_DATA_LOSS,
                      path_ + ": the manifest's " + (suffix.empty() ? "" : "gpu.") +
                          "arena_bytes (" + std::to_string(code.arenaBytes) +
                          ") disagrees with the code's arena of " + std::to_string(expected) +
                          " bytes");
  return nullptr;
}

kiln_status_t Artifact::checkSignature(const int64_t *signature, const Code &code,
                                       const std::string &symbol) const {
  auto mismatch = [&](const std::string &what) {
    return makeStatus(KILN_STATUS_DATA_LOSS,
                      path_ + ": the manifest does not match the code: " + what);
  };
  const std::vector<WeightInfo> &weights = code.weights;
  if (!signature)
    return mismatch("the code has no " + symbol);
  if (signature[0] != artifact::kSignatureVersion)
    return mismatch("signature version " + std::to_string(signature[0]));
  if (signature[1] != (int64_t)inputs_.size() ||
      signature[2] != (int64_t)weights.size() ||
      signature[3] != (int64_t)outputs_.size())
    return mismatch("the code takes " + std::to_string(signature[1]) + " inputs, " +
                    std::to_string(signature[2]) + " weights and returns " +
                    std::to_string(signature[3]) + " outputs; the manifest lists " +
                    std::to_string(inputs_.size()) + ", " +
                    std::to_string(weights.size()) + " and " +
                    std::to_string(outputs_.size()));
  const int64_t *word = signature + 4;
  // Checks one value's dtype, rank and static sizes; a manifest dim may be
  // static where the code's is dynamic, never the other way round.
  auto check = [&](const std::string &what, kiln_dtype_t dtype,
                   const std::vector<int64_t> &sizes) -> kiln_status_t {
    int64_t codeDtype = *word++, rank = *word++;
    const int64_t *codeSizes = word;
    word += rank;
    if (codeDtype != dtype || rank != (int64_t)sizes.size())
      return mismatch(what + " is " + kiln_dtype_name(dtype) + " of rank " +
                      std::to_string(sizes.size()) + " in the manifest, " +
                      kiln_dtype_name((kiln_dtype_t)codeDtype) + " of rank " +
                      std::to_string(rank) + " in the code");
    for (int64_t d = 0; d < rank; ++d)
      if (codeSizes[d] >= 0 && sizes[d] != codeSizes[d])
        return mismatch(what + " dim " + std::to_string(d) + " is " +
                        std::to_string(sizes[d]) + " in the manifest, " +
                        std::to_string(codeSizes[d]) + " in the code");
    return nullptr;
  };
  auto sizesOf = [](const TensorInfo &tensor) {
    std::vector<int64_t> sizes;
    for (const kiln_dim_t &dim : tensor.dims)
      sizes.push_back(dim.size);
    return sizes;
  };
  for (const TensorInfo &input : inputs_)
    if (kiln_status_t status = check("input '" + input.name + "'", input.dtype,
                                     sizesOf(input)))
      return status;
  for (size_t i = 0; i < weights.size(); ++i)
    if (kiln_status_t status = check("weight " + std::to_string(i),
                                     weights[i].dtype, weights[i].shape))
      return status;
  for (const TensorInfo &output : outputs_)
    if (kiln_status_t status = check("output '" + output.name + "'", output.dtype,
                                     sizesOf(output)))
      return status;
  return nullptr;
}

bool Artifact::contains(const void *pointer) const {
  auto *begin = static_cast<const char *>(mapping_);
  auto *p = static_cast<const char *>(pointer);
  return p >= begin && p < begin + mappingSize_;
}

int32_t Artifact::weightIndex(const void *pointer) const {
  auto *p = static_cast<const char *>(pointer);
  if (!cpu_)
    return -1;
  const std::vector<WeightInfo> &weights = cpu_->weights;
  for (size_t i = 0; i < weights.size(); ++i) {
    const WeightInfo &weight = weights[i];
    auto *begin = static_cast<const char *>(weight.data);
    if (p >= begin && p < begin + weight.bytes())
      return static_cast<int32_t>(i);
  }
  return -1;
}

Artifact::~Artifact() {
  if (library_)
    ::dlclose(library_);
  if (codeFd_ >= 0)
    ::close(codeFd_);
  if (mapping_)
    ::munmap(mapping_, mappingSize_);
}

} // namespace kiln::rt
