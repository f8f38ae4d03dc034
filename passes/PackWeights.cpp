//===- PackWeights.cpp - The kiln-pack-weights pass
//------------------------===//
//
// Lays each constant weight of a product out as the CPU microkernels read it,
// so that the runtime no longer packs (or transposes) it on every call: the
// columns in panels of kiln.linear's kPanelWidth, each panel row by row. A
// kiln.matmul by such a weight becomes a kiln.linear without an epilogue.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/Kiln/IR/KilnOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/DenseMap.h"

namespace kiln {
#define GEN_PASS_DEF_KILNPACKWEIGHTS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

constexpr int64_t kPanelWidth = LinearOp::kPanelWidth;

/// A product by the weight: a kiln.linear, or a kiln.matmul with the weight
/// as its right-hand side.
struct WeightUse {
  Operation *op;
  bool transposed;
};

/// The products that use `weight`, when every use is one, all read it the
/// same way round, and none is packed already.
std::optional<SmallVector<WeightUse>> productUses(Value weight) {
  SmallVector<WeightUse> uses;
  for (OpOperand &use : weight.getUses()) {
    Operation *user = use.getOwner();
    if (auto linear = dyn_cast<LinearOp>(user)) {
      if (use.getOperandNumber() !=
              linear.getWeightMutable().getOperandNumber() ||
          linear.getPacked())
        return std::nullopt;
      uses.push_back({user, linear.getTransposeB()});
    } else if (auto matmul = dyn_cast<MatMulOp>(user)) {
      if (use.get() != matmul.getRhs() || matmul.getLhs() == weight)
        return std::nullopt;
      uses.push_back({user, matmul.getTransposeB()});
    } else {
      return std::nullopt;
    }
  }
  if (uses.empty() || llvm::any_of(uses, [&](const WeightUse &u) {
        return u.transposed != uses.front().transposed;
      }))
    return std::nullopt;
  return uses;
}

/// The f32 values of a constant, read where they are (a splat is expanded
/// into `storage`), or nothing when its data is not at hand.
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

/// Writes `values`, a [K, N] matrix ([N, K] when `transposed`), into
/// `packed` as panels: packed[j / W][p][j % W] = B[p][j], zeros past N.
void packPanels(ArrayRef<float> values, int64_t k, int64_t n, bool transposed,
                MutableArrayRef<float> packed) {
  std::fill(packed.begin(), packed.end(), 0.0f);
  for (int64_t p = 0; p < k; ++p)
    for (int64_t j = 0; j < n; ++j)
      packed[(j / kPanelWidth * k + p) * kPanelWidth + j % kPanelWidth] =
          transposed ? values[j * k + p] : values[p * n + j];
}

/// `values` packed as the same kind of attribute as `original`: a
/// `dense_resource` blob for a weight that was one (packed straight into
/// the blob), else a dense literal.
ElementsAttr packedAttr(ElementsAttr original, ArrayRef<float> values,
                        RankedTensorType type, int64_t k, int64_t n,
                        bool transposed) {
  int64_t count = type.getNumElements();
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(original)) {
    AsmResourceBlob blob =
        HeapAsmResourceBlob::allocate(count * sizeof(float), /*align=*/64);
    MutableArrayRef<char> bytes = blob.getMutableData();
    packPanels(
        values, k, n, transposed,
        MutableArrayRef<float>(reinterpret_cast<float *>(bytes.data()), count));
    std::string key = (resource.getRawHandle().getKey() + "_packed").str();
    return DenseResourceElementsAttr::get(type, key, std::move(blob));
  }
  std::vector<float> packed(count);
  packPanels(values, k, n, transposed, packed);
  return DenseElementsAttr::get(type, ArrayRef<float>(packed));
}

/// Replaces the product `use` by a kiln.linear that reads `packed`.
void rewriteUse(OpBuilder &builder, const WeightUse &use, Value packed,
                int64_t n) {
  builder.setInsertionPoint(use.op);
  auto type = cast<RankedTensorType>(use.op->getResult(0).getType());
  // A packed weight carries no N of its own: the result's last dim must say.
  SmallVector<int64_t> shape(type.getShape());
  shape.back() = n;
  auto packedType = type.clone(shape);
  Location loc = use.op->getLoc();
  Value result;
  if (auto linear = dyn_cast<LinearOp>(use.op)) {
    result = builder.create<LinearOp>(
        loc, packedType, linear.getInput(), packed, linear.getBias(),
        linear.getActivationAttr(), linear.getGate(), linear.getResidual(),
        /*transpose_b=*/false, /*packed=*/true);
  } else {
    result = builder.create<LinearOp>(
        loc, packedType, cast<MatMulOp>(use.op).getLhs(), packed, Value(),
        ActivationAttr(), Value(), Value(), /*transpose_b=*/false,
        /*packed=*/true);
  }
  if (packedType != type)
    result = builder.create<tensor::CastOp>(loc, type, result);
  use.op->getResult(0).replaceAllUsesWith(result);
  use.op->erase();
}

/// How many operations name each `dense_resource` blob of a module. Erasing
/// the last reader of a blob empties it, so that a packed weight's original
/// is given back (see WeightLoader) before the next weight is packed, and a
/// model's weights are held once while it compiles, not twice.
class BlobReaders {
public:
  explicit BlobReaders(ModuleOp module) {
    module->walk([&](Operation *op) {
      forEachBlob(op, [&](DialectResourceBlobManager::BlobEntry *blob) { ++count_[blob]; });
    });
  }

  void erase(Operation *op) {
    forEachBlob(op, [&](DialectResourceBlobManager::BlobEntry *blob) {
      if (--count_[blob] == 0)
        blob->setBlob(AsmResourceBlob());
    });
    op->erase();
  }

private:
  template <typename Fn>
  static void forEachBlob(Operation *op, Fn &&fn) {
    op->getAttrDictionary().walk(
        [&](DenseResourceElementsAttr attr) { fn(attr.getRawHandle().getResource()); });
  }

  llvm::DenseMap<DialectResourceBlobManager::BlobEntry *, int64_t> count_;
};

struct PackWeightsPass : public impl::KilnPackWeightsBase<PackWeightsPass> {
  using KilnPackWeightsBase::KilnPackWeightsBase;

  void runOnOperation() override {
    SmallVector<ConstantOp> constants;
    getOperation().walk(
        [&](ConstantOp constant) { constants.push_back(constant); });
    OpBuilder builder(&getContext());
    BlobReaders readers(getOperation());
    for (ConstantOp constant : constants) {
      auto type = dyn_cast<RankedTensorType>(constant.getType());
      if (!type || type.getRank() != 2 || !type.hasStaticShape() ||
          !type.getElementType().isF32())
        continue;
      std::optional<SmallVector<WeightUse>> uses = productUses(constant);
      if (!uses)
        continue;
      bool transposed = uses->front().transposed;
      int64_t k = type.getDimSize(transposed ? 1 : 0);
      int64_t n = type.getDimSize(transposed ? 0 : 1);
      int64_t padding = LinearOp::panelCount(n) * kPanelWidth - n;
      if (k == 0 || n == 0 || padding * 100 > n * maxPaddingPercent)
        continue;
      std::vector<float> splat;
      std::optional<ArrayRef<float>> values =
          floatValues(constant.getValue(), splat);
      if (!values)
        continue;
      auto packedType = RankedTensorType::get(
          {LinearOp::panelCount(n), k, kPanelWidth}, type.getElementType());
      builder.setInsertionPoint(constant);
      Value packed =
          builder.create<ConstantOp>(constant.getLoc(), packedType,
                                     packedAttr(constant.getValue(), *values,
                                                packedType, k, n, transposed));
      for (const WeightUse &use : *uses)
        rewriteUse(builder, use, packed, n);
      readers.erase(constant);
    }
  }
};

} // namespace
} // namespace kiln
