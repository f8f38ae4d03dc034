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
#include "passes/WeightBlobs.h"

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

/// Writes `values`, a [K, N] matrix ([N, K] when `transposed`), into
/// `packed` (zeros) as panels: packed[j / W][p][j % W] = B[p][j], zeros
/// past N.
void packPanels(ArrayRef<float> values, int64_t k, int64_t n, bool transposed,
                MutableArrayRef<float> packed) {
  for (int64_t p = 0; p < k; ++p)
    for (int64_t j = 0; j < n; ++j)
      packed[(j / kPanelWidth * k + p) * kPanelWidth + j % kPanelWidth] =
          transposed ? values[j * k + p] : values[p * n + j];
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
        loc, packedType, linear.getInput(), packed, /*scales=*/Value(), /*zero_points=*/Value(),
        /*column_sums=*/Value(), linear.getBias(), linear.getActivationAttr(), linear.getGate(),
        linear.getResidual(), /*transpose_b=*/false, /*packed=*/true,
        /*group_size=*/IntegerAttr(), /*quantize_input=*/false,
        /*input_scale=*/FloatAttr(), /*input_zero_point=*/IntegerAttr(),
        /*input_tensor_range=*/false);
  } else {
    result = builder.create<LinearOp>(
        loc, packedType, cast<MatMulOp>(use.op).getLhs(), packed,
        /*scales=*/Value(), /*zero_points=*/Value(), /*column_sums=*/Value(),
        /*bias=*/Value(), ActivationAttr(), /*gate=*/Value(),
        /*residual=*/Value(), /*transpose_b=*/false, /*packed=*/true,
        /*group_size=*/IntegerAttr(), /*quantize_input=*/false,
        /*input_scale=*/FloatAttr(), /*input_zero_point=*/IntegerAttr(),
        /*input_tensor_range=*/false);
  }
  if (packedType != type)
    result = builder.create<tensor::CastOp>(loc, type, result);
  use.op->getResult(0).replaceAllUsesWith(result);
  use.op->erase();
}

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
      std::vector<char> splat;
      std::optional<ArrayRef<float>> values =
          floatValues(constant.getValue(), splat);
      if (!values)
        continue;
      auto packedType = RankedTensorType::get(
          {LinearOp::panelCount(n), k, kPanelWidth}, type.getElementType());
      builder.setInsertionPoint(constant);
      ElementsAttr packedValues = replacementWeight(
          constant.getValue(), packedType, "_packed",
          [&](MutableArrayRef<char> bytes) {
            packPanels(*values, k, n, transposed,
                       MutableArrayRef<float>(
                           reinterpret_cast<float *>(bytes.data()),
                           packedType.getNumElements()));
          });
      Value packed = builder.create<ConstantOp>(constant.getLoc(), packedType,
                                                packedValues);
      for (const WeightUse &use : *uses)
        rewriteUse(builder, use, packed, n);
      readers.erase(constant);
    }
  }
};

} // namespace
} // namespace kiln
