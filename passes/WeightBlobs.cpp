//===- WeightBlobs.cpp - Reading and replacing constant weights -----------===//
#include "passes/WeightBlobs.h"

#include "mlir/IR/AsmState.h"

#include <algorithm>

using namespace mlir;

namespace kiln {

std::optional<ArrayRef<float>> floatValues(ElementsAttr value,
                                           std::vector<float> &storage) {
  if (auto resource = dyn_cast<DenseF32ResourceElementsAttr>(value))
    return resource.tryGetAsArrayRef();
  auto dense = dyn_cast<DenseFPElementsAttr>(value);
  if (!dense || !dense.getElementType().isF32())
    return std::nullopt;
  if (dense.isSplat()) {
    storage.assign(dense.getNumElements(), dense.getSplatValue<float>());
    return ArrayRef<float>(storage);
  }
  ArrayRef<char> raw = dense.getRawData();
  return ArrayRef<float>(reinterpret_cast<const float *>(raw.data()),
                         raw.size() / sizeof(float));
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

} // namespace kiln
