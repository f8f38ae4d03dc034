//===- WeightBlobs.cpp - Reading and replacing constant weights -----------===//
#include "passes/WeightBlobs.h"

#include "mlir/IR/AsmState.h"

#include <algorithm>

using namespace mlir;

namespace kiln {

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
    AsmResourceBlob blob = HeapAsmResourceBlob::allocate(bytes, /*align=*/64);
    MutableArrayRef<char> data = blob.getMutableData();
    std::fill(data.begin(), data.end(), 0);
    fill(data);
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

std::string weightName(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().str();
  std::string text;
  llvm::raw_string_ostream os(text);
  loc.print(os);
  return os.str();
}

} // namespace kiln
