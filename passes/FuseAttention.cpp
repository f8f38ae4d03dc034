//===- FuseAttention.cpp - The kiln-fuse-attention pass -------------------===//
//
// Recognizes softmax(where(keep, Q·Kᵀ * scale, fill) + bias) · V, with each
// of the where, the bias add and the scale optional, and replaces it with one
// kiln.attention op. Exporters emit Kᵀ as a transpose of the last two dims.
// Grouped-query attention's repeat_kv of K and V is then absorbed into the
// op, which maps query heads to key/value heads itself, and so is a decode
// step's append of the new keys and values to the KV cache.
//
//===----------------------------------------------------------------------===//
#include "passes/PatternUtils.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_KILNFUSEATTENTION
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// What the chain between the scores product and the softmax holds.
struct ScoreChain {
  MatMulOp scores;
  Value keep, bias;
  double scale = 1.0, maskedValue = 0.0;
};

/// Batch and head dims of two attention operands must be the same size at
/// run time: equal, or dynamic against anything but a static 1 (checked when
/// lowered). A static 1 that the unfused product would broadcast is not fused.
bool sameBatchAndHeads(Value a, Value b) {
  ArrayRef<int64_t> x = cast<RankedTensorType>(a.getType()).getShape();
  ArrayRef<int64_t> y = cast<RankedTensorType>(b.getType()).getShape();
  auto same = [](int64_t p, int64_t q) {
    return p == q || (ShapedType::isDynamic(p) && q != 1) ||
           (ShapedType::isDynamic(q) && p != 1);
  };
  return same(x[0], y[0]) && same(x[1], y[1]);
}

/// Walks from below the bias add up to the Q·Kᵀ product: an optional where,
/// an optional scale by a constant, then the product.
std::optional<ScoreChain> matchMaskedScores(Value scores) {
  ScoreChain chain;
  if (auto where = singleUseProducer<WhereOp>(scores)) {
    std::optional<double> fill = scalarConstantValue(where.getOnFalse());
    if (!fill || !sameType(where.getOnTrue(), where))
      return std::nullopt;
    chain.keep = where.getCondition();
    chain.maskedValue = *fill;
    scores = where.getOnTrue();
  }
  if (auto div = singleUseProducer<DivOp>(scores)) {
    std::optional<double> divisor = scalarConstantValue(div.getRhs());
    if (!divisor || *divisor == 0 || !sameType(div.getLhs(), div))
      return std::nullopt;
    chain.scale = 1.0 / *divisor;
    scores = div.getLhs();
  } else if (auto mul = singleUseProducer<MulOp>(scores)) {
    for (Value candidate : {mul.getLhs(), mul.getRhs()})
      if (std::optional<double> factor =
              scalarConstantValue(otherOperand(mul, candidate));
          factor && sameType(candidate, mul)) {
        chain.scale = *factor;
        scores = candidate;
        break;
      }
    if (scores == mul.getResult())
      return std::nullopt;
  }
  chain.scores = singleUseProducer<MatMulOp>(scores);
  if (!chain.scores)
    return std::nullopt;
  return chain;
}

/// Walks from the softmax input up to the Q·Kᵀ product, through an optional
/// add of an additive mask on either side.
std::optional<ScoreChain> matchScoreChain(Value scores) {
  auto add = singleUseProducer<AddOp>(scores);
  if (!add)
    return matchMaskedScores(scores);
  for (Value candidate : {add.getLhs(), add.getRhs()}) {
    if (!sameType(candidate, add))
      continue;
    if (std::optional<ScoreChain> chain = matchMaskedScores(candidate)) {
      chain->bias = otherOperand(add, candidate);
      return chain;
    }
  }
  return std::nullopt;
}

/// The key [B, H, Tk, D] of a scores product, whose right operand is the
/// key read transposed: by transpose_b, or by a transpose whose last two dims
/// are the key's last two swapped. Other permutations (BERT's export moves
/// [B, Tk, H, D] straight to [B, H, D, Tk]) leave a transpose to [B, H, Tk, D].
Value keyOf(MatMulOp scores, PatternRewriter &rewriter) {
  if (scores.getTransposeB())
    return scores.getRhs();
  auto transpose = scores.getRhs().getDefiningOp<TransposeOp>();
  if (!transpose || transpose.getPermutation().size() != 4)
    return nullptr;
  ArrayRef<int64_t> p = transpose.getPermutation();
  SmallVector<int64_t> keyPermutation = {p[0], p[1], p[3], p[2]};
  if (llvm::equal(keyPermutation, llvm::seq<int64_t>(0, 4)))
    return transpose.getInput();
  auto transposedType = cast<RankedTensorType>(transpose.getType());
  ArrayRef<int64_t> shape = transposedType.getShape();
  auto keyType = RankedTensorType::get({shape[0], shape[1], shape[3], shape[2]},
                                       transposedType.getElementType());
  return rewriter.create<TransposeOp>(transpose.getLoc(), keyType,
                                      transpose.getInput(),
                                      rewriter.getDenseI64ArrayAttr(keyPermutation));
}

bool isRank4F32(Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  return type.getRank() == 4 && type.getElementType().isF32();
}

/// Whether `mask` broadcasts into `scores` without growing it.
bool broadcastsInto(Value mask, Value scores) {
  auto maskType = cast<RankedTensorType>(mask.getType());
  ArrayRef<int64_t> target = cast<RankedTensorType>(scores.getType()).getShape();
  if (maskType.getRank() > 4)
    return false;
  int64_t offset = 4 - maskType.getRank();
  for (auto [i, dim] : llvm::enumerate(maskType.getShape()))
    if (dim != 1 && dim != target[i + offset])
      return false;
  return true;
}

struct FuseAttentionPattern : public OpRewritePattern<MatMulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MatMulOp output,
                                PatternRewriter &rewriter) const override {
    auto softmax = singleUseProducer<SoftmaxOp>(output.getLhs());
    if (!softmax || output.getTransposeB() || softmax.getAxis() != 3)
      return rewriter.notifyMatchFailure(output, "not softmax(...) · V");
    std::optional<ScoreChain> chain = matchScoreChain(softmax.getInput());
    if (!chain)
      return rewriter.notifyMatchFailure(output, "no Q·Kᵀ score chain");
    Value query = chain->scores.getLhs(), keyTransposed = chain->scores.getRhs();
    Value value = output.getRhs();
    if (!isRank4F32(query) || !isRank4F32(keyTransposed) ||
        !isRank4F32(value) || !isRank4F32(output))
      return rewriter.notifyMatchFailure(output, "not rank-4 f32 Q, K, V");
    if (!sameBatchAndHeads(query, keyTransposed) ||
        !sameBatchAndHeads(keyTransposed, value))
      return rewriter.notifyMatchFailure(output, "batch or heads broadcast");
    Value scores = chain->scores.getResult();
    for (Value mask : {chain->keep, chain->bias})
      if (mask && !broadcastsInto(mask, scores))
        return rewriter.notifyMatchFailure(output, "mask grows the scores");
    if (chain->bias && !cast<RankedTensorType>(chain->bias.getType())
                            .getElementType()
                            .isF32())
      return rewriter.notifyMatchFailure(output, "bias is not f32");
    Value key = keyOf(chain->scores, rewriter);
    if (!key)
      return rewriter.notifyMatchFailure(output, "K is not read transposed");

    auto attention = rewriter.create<AttentionOp>(
        output.getLoc(), output.getType(), TypeRange(), query, key, value,
        ValueRange(), chain->keep, chain->bias,
        rewriter.getF32FloatAttr(chain->scale),
        rewriter.getF32FloatAttr(chain->keep ? chain->maskedValue : 0.0));
    rewriter.replaceOp(output, attention.getResult());
    return success();
  }
};

/// The key/value heads [B, Hkv, T, D] and the group size r when `repeated`
/// is them with every head repeated r times in place, as exporters write
/// grouped-query attention's repeat_kv:
///   reshape(expand(unsqueeze(kv, [2]), [B, Hkv, r, T, D]), [B, Hkv·r, T, D])
/// Each shape entry must be provably the right size (ShapeElement); an
/// expand entry of 1 keeps the input's size, as does a reshape entry of 0 at
/// the batch position.
std::optional<std::pair<Value, int64_t>> matchRepeatedHeads(Value repeated) {
  auto reshape = repeated.getDefiningOp<ReshapeOp>();
  auto expand = reshape ? reshape.getInput().getDefiningOp<ExpandOp>() : nullptr;
  auto unsqueeze =
      expand ? expand.getInput().getDefiningOp<UnsqueezeOp>() : nullptr;
  if (!unsqueeze || !llvm::equal(unsqueeze.getAxes(), ArrayRef<int64_t>{2}))
    return std::nullopt;
  Value kv = unsqueeze.getInput();
  auto kvType = cast<RankedTensorType>(kv.getType());
  if (kvType.getRank() != 4)
    return std::nullopt;
  int64_t kvHeads = kvType.getDimSize(1);
  std::optional<SmallVector<ShapeElement>> expanded =
      shapeElements(expand.getShape());
  std::optional<SmallVector<ShapeElement>> merged =
      shapeElements(reshape.getShape());
  if (ShapedType::isDynamic(kvHeads) || !expanded || expanded->size() != 5 ||
      !merged || merged->size() != 4)
    return std::nullopt;
  auto keeps = [&](const ShapeElement &entry, int64_t dim) {
    return entry.isConstant(1) || entry.isDimOf(kv, dim);
  };
  std::optional<int64_t> group = (*expanded)[2].constant;
  if (!group || *group < 1 || !keeps((*expanded)[0], 0) ||
      !keeps((*expanded)[1], 1) || !keeps((*expanded)[3], 2) ||
      !keeps((*expanded)[4], 3))
    return std::nullopt;
  if (!((*merged)[0].isConstant(0) || (*merged)[0].isDimOf(kv, 0)) ||
      !(*merged)[1].isConstant(kvHeads * *group) ||
      !(*merged)[2].isDimOf(kv, 2) || !(*merged)[3].isDimOf(kv, 3))
    return std::nullopt;
  return std::make_pair(kv, *group);
}

/// attention(q, repeat_kv(k), repeat_kv(v)) → attention(q, k, v): the kernel
/// maps query head h to key/value head h / r itself, so the repeated copies
/// of K and V need not exist.
struct AbsorbRepeatedHeads : public OpRewritePattern<AttentionOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AttentionOp attention,
                                PatternRewriter &rewriter) const override {
    // A past has as many heads as the key it is concatenated with.
    if (!attention.getPast().empty())
      return rewriter.notifyMatchFailure(attention, "has a past");
    auto key = matchRepeatedHeads(attention.getKey());
    auto value = matchRepeatedHeads(attention.getValue());
    if (!key || !value || key->second != value->second)
      return rewriter.notifyMatchFailure(attention, "K and V not repeated alike");
    // The unfused product checks that the query has as many heads as the
    // repeated K; the fused op checks only that they are a multiple of K's.
    // A static head count, the query's or the declared result's, keeps the
    // stricter check.
    int64_t kvHeads = cast<RankedTensorType>(key->first.getType()).getDimSize(1);
    int64_t heads = cast<RankedTensorType>(attention.getQuery().getType()).getDimSize(1);
    if (ShapedType::isDynamic(heads))
      heads =
          cast<RankedTensorType>(attention.getResult().getType()).getDimSize(1);
    if (heads != kvHeads * key->second)
      return rewriter.notifyMatchFailure(attention, "query heads not Hkv·group");
    rewriter.replaceOpWithNewOp<AttentionOp>(
        attention, attention.getResultTypes(), attention.getQuery(), key->first,
        value->first, attention.getPast(), attention.getKeep(),
        attention.getBias(), attention.getScaleAttr(),
        attention.getMaskedValueAttr());
    return success();
  }
};

/// The KV-cache concat that attention operand `rows` is, concat(past, new)
/// along dim 2, when the attention may absorb it: the attention reads it
/// only there, and its other users read only its dims (which the inputs'
/// dims give) or come after the attention (typically the graph's present
/// outputs), where the attention's present can replace it.
ConcatOp matchCacheConcat(OpOperand &rows) {
  auto concat = rows.get().getDefiningOp<ConcatOp>();
  if (!concat || concat.getAxis() != 2 || concat.getInputs().size() != 2 ||
      !isRank4F32(concat.getInputs()[0]))
    return nullptr;
  Operation *attention = rows.getOwner();
  for (OpOperand &use : concat->getUses()) {
    Operation *user = use.getOwner();
    if (user == attention
            ? &use != &rows
            : !isa<DimOp>(user) && (user->getBlock() != attention->getBlock() ||
                                    !attention->isBeforeInBlock(user)))
      return nullptr;
  }
  return concat;
}

/// Reads each dim of `concat` from its inputs instead: the sum of their
/// lengths along its axis, the first input's size elsewhere (which the
/// others must match).
void readDimsFromInputs(ConcatOp concat, PatternRewriter &rewriter) {
  for (Operation *user : llvm::make_early_inc_range(concat->getUsers())) {
    auto dim = dyn_cast<DimOp>(user);
    if (!dim)
      continue;
    rewriter.setInsertionPoint(dim);
    auto dimOf = [&](Value input) {
      return rewriter.create<DimOp>(dim.getLoc(), dim.getType(), input,
                                    dim.getIndexAttr());
    };
    ValueRange inputs = concat.getInputs();
    if (dim.getIndex() != concat.getAxis()) {
      rewriter.replaceOp(dim, dimOf(inputs[0]));
      continue;
    }
    Value length = dimOf(inputs[0]);
    for (Value input : inputs.drop_front())
      length = rewriter.create<AddOp>(dim.getLoc(), dim.getType(), length,
                                      dimOf(input));
    rewriter.replaceOp(dim, length);
  }
}

/// attention(q, concat(past_k, k), concat(past_v, v)) →
/// attention(q, k, v past past_k, past_v), whose presents replace the
/// concats: the kernel copies each row of the cache into the present as it
/// reads it, instead of the concat copying it all before the attention reads
/// it all again.
struct AbsorbCacheConcat : public OpRewritePattern<AttentionOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AttentionOp attention,
                                PatternRewriter &rewriter) const override {
    if (!attention.getPast().empty())
      return rewriter.notifyMatchFailure(attention, "already has a past");
    ConcatOp keys = matchCacheConcat(attention.getKeyMutable());
    ConcatOp values = matchCacheConcat(attention.getValueMutable());
    if (!keys || !values)
      return rewriter.notifyMatchFailure(
          attention, "K and V are not each a cache concat on dim 2");
    // The unfused product needs as many keys as values; the fused op needs
    // each part alike, which follows when one part provably is.
    auto sameLength = [](Value a, Value b) {
      return traceDim(a, 2) == traceDim(b, 2);
    };
    if (!sameLength(keys.getInputs()[0], values.getInputs()[0]) &&
        !sameLength(keys.getInputs()[1], values.getInputs()[1]))
      return rewriter.notifyMatchFailure(
          attention, "K and V are not provably split at the same row");
    readDimsFromInputs(keys, rewriter);
    readDimsFromInputs(values, rewriter);
    rewriter.setInsertionPoint(attention);
    auto fused = rewriter.create<AttentionOp>(
        attention.getLoc(),
        TypeRange{attention.getResult().getType(), keys.getType(),
                  values.getType()},
        attention.getQuery(), keys.getInputs()[1], values.getInputs()[1],
        ValueRange{keys.getInputs()[0], values.getInputs()[0]},
        attention.getKeep(), attention.getBias(), attention.getScaleAttr(),
        attention.getMaskedValueAttr());
    rewriter.replaceOp(attention, fused.getResult());
    rewriter.replaceOp(keys, fused.getPresents()[0]);
    rewriter.replaceOp(values, fused.getPresents()[1]);
    return success();
  }
};

struct FuseAttentionPass
    : public impl::KilnFuseAttentionBase<FuseAttentionPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseAttentionPattern, AbsorbRepeatedHeads, AbsorbCacheConcat>(
        &getContext());
    if (failed(applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
} // namespace kiln
