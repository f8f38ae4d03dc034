//===- Weights.cpp - ONNX tensors to constant attributes ------------------===//
//
// Small tensors become `dense` literals. Large ones become `dense_resource`
// blobs that point at the bytes where they already are: inside the parsed
// model, or in a memory-mapped external-data file. A copy is made only when
// the bytes must be converted (typed protobuf fields) or are misaligned.
//
//===----------------------------------------------------------------------===//
#include "compiler/Importer/ImportContext.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <functional>
#include <map>

#include <sys/mman.h>
#include <unistd.h>

using namespace mlir;

namespace kiln {

struct WeightLoader::MappedFiles {
  std::map<std::string, std::shared_ptr<llvm::MemoryBuffer>> byPath;
};

WeightLoader::WeightLoader(std::string baseDir, std::shared_ptr<const void> keepAlive,
                           int64_t inlineLimit)
    : baseDir_(std::move(baseDir)), keepAlive_(std::move(keepAlive)),
      inlineLimit_(inlineLimit), files_(std::make_shared<MappedFiles>()) {}

WeightLoader::~WeightLoader() = default;

namespace {

/// Bytes per element in MLIR's dense layout (i1 takes a whole byte in raw
/// ONNX data and in resource blobs).
size_t byteWidth(Type element) {
  return std::max<size_t>(1, element.getIntOrFloatBitWidth() / 8);
}

/// Resource keys must be identifiers; ONNX names may hold any character.
std::string resourceKey(StringRef name) {
  std::string key;
  for (char c : name)
    key.push_back(llvm::isAlnum(c) || c == '_' || c == '.' ? c : '_');
  if (key.empty() || llvm::isDigit(key.front()))
    key.insert(key.begin(), '_');
  return key;
}

/// Converts the typed repeated fields of a TensorProto into MLIR's layout.
std::vector<char> typedFieldBytes(const onnx::TensorProto &tensor, int64_t count) {
  std::vector<char> bytes;
  auto append = [&](const auto &values, auto convert) {
    for (const auto &v : values) {
      auto converted = convert(v);
      const char *p = reinterpret_cast<const char *>(&converted);
      bytes.insert(bytes.end(), p, p + sizeof(converted));
    }
  };
  switch (tensor.data_type()) {
  case onnx::TensorProto::FLOAT:
    append(tensor.float_data(), [](float v) { return v; });
    break;
  case onnx::TensorProto::DOUBLE:
    append(tensor.double_data(), [](double v) { return v; });
    break;
  case onnx::TensorProto::INT64:
    append(tensor.int64_data(), [](int64_t v) { return v; });
    break;
  case onnx::TensorProto::INT32:
    append(tensor.int32_data(), [](int32_t v) { return v; });
    break;
  case onnx::TensorProto::UINT64:
    append(tensor.uint64_data(), [](uint64_t v) { return v; });
    break;
  case onnx::TensorProto::UINT32:
    append(tensor.uint64_data(), [](uint64_t v) { return static_cast<uint32_t>(v); });
    break;
  // These are stored widened to int32; the low bits hold the value.
  case onnx::TensorProto::INT16:
  case onnx::TensorProto::UINT16:
    append(tensor.int32_data(), [](int32_t v) { return static_cast<int16_t>(v); });
    break;
  case onnx::TensorProto::INT8:
  case onnx::TensorProto::UINT8:
  case onnx::TensorProto::BOOL:
    append(tensor.int32_data(), [](int32_t v) { return static_cast<int8_t>(v); });
    break;
  case onnx::TensorProto::FLOAT16:
  case onnx::TensorProto::BFLOAT16:
    append(tensor.int32_data(), [](int32_t v) { return static_cast<uint16_t>(v); });
    break;
  default:
    break;
  }
  return bytes;
}

/// Drops the pages that lie wholly inside `bytes`, a range of a read-only
/// file mapping, from the process: the page cache keeps them, and a later
/// read faults them back in. Pages shared with neighbouring tensors stay.
void dropFilePages(ArrayRef<char> bytes) {
  uintptr_t pageSize = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  uintptr_t begin = llvm::alignTo(reinterpret_cast<uintptr_t>(bytes.data()), pageSize);
  uintptr_t end = llvm::alignDown(reinterpret_cast<uintptr_t>(bytes.data()) + bytes.size(),
                                  pageSize);
  if (begin < end)
    ::madvise(reinterpret_cast<void *>(begin), end - begin, MADV_DONTNEED);
}

bool isAligned(const char *data, size_t alignment) {
  return reinterpret_cast<uintptr_t>(data) % alignment == 0;
}

/// Bytes per element of an ONNX data type stored as raw data, 0 for
/// strings and unknown types.
size_t onnxByteWidth(int32_t dataType) {
  switch (dataType) {
  case onnx::TensorProto::UINT8:
  case onnx::TensorProto::INT8:
  case onnx::TensorProto::BOOL:
    return 1;
  case onnx::TensorProto::UINT16:
  case onnx::TensorProto::INT16:
  case onnx::TensorProto::FLOAT16:
  case onnx::TensorProto::BFLOAT16:
    return 2;
  case onnx::TensorProto::FLOAT:
  case onnx::TensorProto::INT32:
  case onnx::TensorProto::UINT32:
    return 4;
  case onnx::TensorProto::DOUBLE:
  case onnx::TensorProto::INT64:
  case onnx::TensorProto::UINT64:
  case onnx::TensorProto::COMPLEX64:
    return 8;
  case onnx::TensorProto::COMPLEX128:
    return 16;
  default:
    return 0;
  }
}

/// The number of values of a tensor's typed field for its data type: complex
/// numbers take two.
int64_t typedFieldValues(const onnx::TensorProto &tensor) {
  switch (tensor.data_type()) {
  case onnx::TensorProto::FLOAT:
    return tensor.float_data_size();
  case onnx::TensorProto::COMPLEX64:
    return tensor.float_data_size() / 2;
  case onnx::TensorProto::DOUBLE:
    return tensor.double_data_size();
  case onnx::TensorProto::COMPLEX128:
    return tensor.double_data_size() / 2;
  case onnx::TensorProto::INT64:
    return tensor.int64_data_size();
  case onnx::TensorProto::UINT32:
  case onnx::TensorProto::UINT64:
    return tensor.uint64_data_size();
  case onnx::TensorProto::STRING:
    return tensor.string_data_size();
  default:
    return tensor.int32_data_size();
  }
}

/// The element count of `dims`, or nullopt for a negative dim or a count
/// past 2^48 (256 TB of bytes: no real model, and far from overflowing).
std::optional<int64_t> elementCount(llvm::ArrayRef<int64_t> dims) {
  constexpr int64_t kMaxElements = int64_t(1) << 48;
  int64_t count = 1;
  for (int64_t dim : dims) {
    if (dim < 0 || (dim > 0 && count > kMaxElements / dim))
      return std::nullopt;
    count *= dim;
  }
  return count;
}

} // namespace

LogicalResult validateTensor(const onnx::TensorProto &tensor, StringRef what,
                             std::string &error) {
  SmallVector<int64_t> dims(tensor.dims().begin(), tensor.dims().end());
  std::optional<int64_t> count = elementCount(dims);
  if (!count) {
    error = what.str() + " has dims [" + llvm::join(llvm::map_range(
                dims, [](int64_t d) { return std::to_string(d); }), ", ") +
            "]: a dim is negative or their product is out of range";
    return failure();
  }
  if (tensor.data_location() == onnx::TensorProto::EXTERNAL)
    return success();
  if (tensor.has_raw_data()) {
    size_t width = onnxByteWidth(tensor.data_type());
    if (width && tensor.raw_data().size() != static_cast<size_t>(*count) * width) {
      error = what.str() + " holds " + std::to_string(tensor.raw_data().size()) + " bytes of raw data but its type " +
              onnxTypeName(tensor.data_type()) + " and shape need " +
              std::to_string(static_cast<size_t>(*count) * width);
      return failure();
    }
    return success();
  }
  if (typedFieldValues(tensor) != *count) {
    error = what.str() + " holds " + std::to_string(typedFieldValues(tensor)) +
            " values of type " + onnxTypeName(tensor.data_type()) + " but its shape needs " +
            std::to_string(*count);
    return failure();
  }
  return success();
}

FailureOr<ElementsAttr> WeightLoader::load(const onnx::TensorProto &tensor,
                                           MLIRContext *context,
                                           std::string &error,
                                           StringRef tensorName) {
  return load(tensor, context, error, tensorName, /*releasableRawData=*/nullptr);
}

FailureOr<ElementsAttr> WeightLoader::loadReleasable(onnx::TensorProto &tensor,
                                                     MLIRContext *context,
                                                     std::string &error) {
  return load(tensor, context, error, tensor.name(),
              tensor.has_raw_data() ? tensor.mutable_raw_data() : nullptr);
}

FailureOr<ElementsAttr> WeightLoader::load(const onnx::TensorProto &tensor,
                                           MLIRContext *context,
                                           std::string &error, StringRef tensorName,
                                           std::string *releasableRawData) {
  if (tensorName.empty())
    tensorName = tensor.name();
  std::string name = "tensor '" + tensorName.str() + "'";
  Type element = convertElementType(context, tensor.data_type());
  if (!element) {
    error = name + " has unsupported data type " + onnxTypeName(tensor.data_type());
    return failure();
  }
  if (failed(validateTensor(tensor, name, error)))
    return failure();
  SmallVector<int64_t> shape(tensor.dims().begin(), tensor.dims().end());
  int64_t count = *elementCount(shape);
  auto type = RankedTensorType::get(shape, element);
  size_t width = byteWidth(element);
  size_t expectedBytes = static_cast<size_t>(count) * width;

  // Locate the bytes: external file, raw_data, or converted typed fields.
  ArrayRef<char> bytes;
  std::shared_ptr<const void> owner;
  // Gives the bytes back once the blob that views them is dropped.
  std::function<void()> release;
  std::vector<char> converted;
  if (tensor.data_location() == onnx::TensorProto::EXTERNAL) {
    std::string location;
    uint64_t offset = 0;
    std::optional<uint64_t> length;
    for (const auto &entry : tensor.external_data()) {
      char *end = nullptr;
      if (entry.key() == "location") {
        location = entry.value();
      } else if (entry.key() == "offset" || entry.key() == "length") {
        uint64_t value = std::strtoull(entry.value().c_str(), &end, 10);
        if (entry.value().empty() || *end) {
          error = name + ": external_data field '" + entry.key() +
                  "' is not a number: '" + entry.value() + "'";
          return failure();
        }
        (entry.key() == "offset" ? offset : length.emplace()) = value;
      }
    }
    if (location.empty()) {
      error = name + ": external_data has no 'location'";
      return failure();
    }
    if (llvm::sys::path::is_absolute(location) ||
        llvm::is_contained(llvm::make_range(llvm::sys::path::begin(location),
                                            llvm::sys::path::end(location)),
                           "..")) {
      error = name + ": external_data location '" + location +
              "' must be a relative path inside the model's directory";
      return failure();
    }
    llvm::SmallString<256> path(baseDir_);
    llvm::sys::path::append(path, location);
    auto &file = files_->byPath[std::string(path)];
    if (!file) {
      auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                                /*RequiresNullTerminator=*/false);
      if (!buffer) {
        error = name + ": cannot open external data file '" + std::string(path) +
                "': " + buffer.getError().message();
        return failure();
      }
      file = std::move(*buffer);
    }
    uint64_t size = file->getBufferSize();
    uint64_t used = length.value_or(offset <= size ? size - offset : 0);
    if (offset > size || used > size - offset) {
      error = name + ": external data at offset " + std::to_string(offset) +
              " with length " + std::to_string(used) + " runs past the end of '" +
              std::string(path) + "' (" + std::to_string(size) + " bytes)";
      return failure();
    }
    bytes = ArrayRef<char>(file->getBufferStart() + offset, used);
    owner = file;
    if (file->getBufferKind() == llvm::MemoryBuffer::MemoryBuffer_MMap)
      release = [bytes] { dropFilePages(bytes); };
  } else if (tensor.has_raw_data()) {
    bytes = ArrayRef<char>(tensor.raw_data().data(), tensor.raw_data().size());
    owner = keepAlive_;
    if (releasableRawData)
      release = [releasableRawData] { std::string().swap(*releasableRawData); };
  } else {
    converted = typedFieldBytes(tensor, count);
    bytes = converted;
  }
  if (bytes.size() != expectedBytes) {
    error = name + " holds " + std::to_string(bytes.size()) + " bytes of data but " +
            "its type " + onnxTypeName(tensor.data_type()) + " and shape need " +
            std::to_string(expectedBytes);
    return failure();
  }

  if (count <= inlineLimit_) {
    if (element.isInteger(1)) {
      SmallVector<bool> values;
      for (char b : bytes)
        values.push_back(b != 0);
      return cast<ElementsAttr>(DenseElementsAttr::get(type, values));
    }
    return cast<ElementsAttr>(DenseElementsAttr::getFromRawBuffer(type, bytes));
  }

  AsmResourceBlob blob;
  if (owner && !converted.size() && isAligned(bytes.data(), width)) {
    size_t alignment = width;
    while (alignment < 64 && isAligned(bytes.data(), alignment * 2))
      alignment *= 2;
    blob = AsmResourceBlob(bytes, alignment,
                           [owner, release](void *, size_t, size_t) mutable {
                             if (release)
                               release();
                             owner.reset();
                           },
                           /*dataIsMutable=*/false);
  } else {
    blob = HeapAsmResourceBlob::allocateAndCopyWithAlign(bytes, std::max<size_t>(width, 16));
  }
  return cast<ElementsAttr>(
      DenseResourceElementsAttr::get(type, resourceKey(tensorName), std::move(blob)));
}

} // namespace kiln
