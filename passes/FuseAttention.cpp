//===- FuseAttention.cpp - The kiln-fuse-attention pass -------------------===//
//
// Recognizes softmax(where(keep, Q·Kᵀ * scale + position_bias, fill) +
// bias) · V, with each of the where, the adds and the scale optional (and
// the scale on either side of the where), and replaces it with one
// kiln.attention op. Exporters emit Kᵀ as a transpose of the last two dims.
// The products may run on the heads folded into the batch ([B·H, T, D], as
// BLOOM's baddbmm and bmm do) while the masks and the softmax see the heads
// ([B, H, Tq, Tk]); the fused op then runs on the heads unfolded.
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

/// What the chain between the scores product and the softmax holds. The
/// query and the transposed key are the product's operands with their
/// scales peeled off.
struct ScoreChain {
  MatMulOp scores;
  Value query, keyTransposed;
  /// Added to the scaled product beneath the where (by the add
  /// `positionBiasAdd`); positionBiasScale multiplies it (the scales above
  /// its add).
  Value positionBias;
  AddOp positionBiasAdd;
  double positionBiasScale = 1.0;
  Value keep, bias;
  /// Whether the where fills where `keep` holds, so the op keeps !keep.
  bool keepNegated = false;
  double scale = 1.0, maskedValue = 0.0;
  /// The reshape that unfolds the product's [B·H] into [B, H] below the
  /// masks, if the product runs on folded heads.
  ReshapeOp headSplit;
};

/// `shape` [B·H, ...] with its first dim unfolded into [B, H].
SmallVector<int64_t> unfoldedHeads(ArrayRef<int64_t> shape, int64_t heads) {
  SmallVector<int64_t> unfolded = {
      ShapedType::isDynamic(shape[0]) ? ShapedType::kDynamic : shape[0] / heads, heads};
  llvm::append_range(unfolded, shape.drop_front());
  return unfolded;
}

/// The shape a 3-D attention operand takes in the fused op: with `heads`
/// (folded into its batch), unfolded; else as one batch entry of B·H heads.
SmallVector<int64_t> fusedShape(Value operand, std::optional<int64_t> heads) {
  ArrayRef<int64_t> shape = cast<RankedTensorType>(operand.getType()).getShape();
  if (shape.size() == 4)
    return SmallVector<int64_t>(shape);
  if (heads)
    return unfoldedHeads(shape, *heads);
  SmallVector<int64_t> batched = {1};
  llvm::append_range(batched, shape);
  return batched;
}

/// Whether `folded` [N, X, Y] is `unfolded` [B, H, X, Y] (H static) with
/// its heads folded into the first dim, given that the two hold as many
/// elements: two of N = B·H, X and Y are provably so (traceDim), and the
/// element count makes the third so too.
bool provablyFoldedHeads(Value folded, Value unfolded) {
  auto foldedType = cast<RankedTensorType>(folded.getType());
  auto unfoldedType = cast<RankedTensorType>(unfolded.getType());
  int64_t heads = unfoldedType.getRank() == 4 ? unfoldedType.getDimSize(1) : 0;
  if (foldedType.getRank() != 3 || ShapedType::isDynamic(heads) || heads <= 0)
    return false;
  std::optional<DimSource> batchTimesHeads = traceDim(unfolded, 0).times(heads);
  int proven = (batchTimesHeads && traceDim(folded, 0) == *batchTimesHeads) +
               (traceDim(folded, 1) == traceDim(unfolded, 2)) +
               (traceDim(folded, 2) == traceDim(unfolded, 3));
  return proven >= 2;
}

/// The reshape that `value` is, when it unfolds its input's first dim into
/// [B, H] and keeps the other dims.
ReshapeOp headUnfolding(Value value) {
  auto reshape = elementReadOnceProducer<ReshapeOp>(value);
  return reshape && provablyFoldedHeads(reshape.getInput(), reshape) ? reshape : nullptr;
}

/// The reshape that `value` is, when it folds its rank-4 input's first two
/// dims, [B, H] for a static H, into one; the pattern proves it does (and
/// keeps the other dims) against the scores.
ReshapeOp headFolding(Value value) {
  auto reshape = elementReadOnceProducer<ReshapeOp>(value);
  if (!reshape || cast<RankedTensorType>(reshape.getType()).getRank() != 3 ||
      cast<RankedTensorType>(reshape.getInput().getType()).getRank() != 4 ||
      ShapedType::isDynamic(
          cast<RankedTensorType>(reshape.getInput().getType()).getDimSize(1)))
    return nullptr;
  return reshape;
}

/// Dim `dim` of `value` as a shape entry: its static size, or a read of it.
ShapeElement dimEntry(Value value, int64_t dim) {
  int64_t size = cast<RankedTensorType>(value.getType()).getDimSize(dim);
  return ShapedType::isDynamic(size) ? ShapeElement{std::nullopt, value, dim}
                                     : ShapeElement{size, nullptr, 0};
}

/// `folded` [B·H, ...] (3-D) as [B, H, ...]: the tensor it was folded from,
/// where a reshape provably did that (so that a KV-cache concat stays in
/// sight), else a new reshape.
Value unfoldHeads(PatternRewriter &rewriter, Location loc, Value folded, int64_t heads) {
  if (auto fold = folded.getDefiningOp<ReshapeOp>())
    if (provablyFoldedHeads(folded, fold.getInput()) &&
        cast<RankedTensorType>(fold.getInput().getType()).getDimSize(1) == heads)
      return fold.getInput();
  auto type = cast<RankedTensorType>(folded.getType());
  return rewriter.create<ReshapeOp>(
      loc, type.clone(unfoldedHeads(type.getShape(), heads)), folded,
      buildShape(rewriter, loc,
                 {ShapeElement{-1, nullptr, 0}, ShapeElement{heads, nullptr, 0},
                  dimEntry(folded, 1), dimEntry(folded, 2)}));
}

/// `unfolded` [B, H, ...] (4-D) folded into `type` [B·H, ...].
Value foldHeads(PatternRewriter &rewriter, Location loc, Value unfolded,
                RankedTensorType type) {
  int64_t heads = cast<RankedTensorType>(unfolded.getType()).getDimSize(1);
  ShapeElement batch = dimEntry(unfolded, 0);
  if (batch.constant)
    *batch.constant *= heads;
  else
    batch.factor = heads;
  return rewriter.create<ReshapeOp>(
      loc, type, unfolded,
      buildShape(rewriter, loc, {batch, dimEntry(unfolded, 2), dimEntry(unfolded, 3)}));
}

/// Batch and head dims (all but the last two) of two attention operands must
/// be the same size at run time: equal, or dynamic against anything but a
/// static 1 (checked when lowered). A static 1 that the unfused product would
/// broadcast is not fused.
bool sameBatchAndHeads(ArrayRef<int64_t> x, ArrayRef<int64_t> y) {
  auto same = [](int64_t p, int64_t q) {
    return p == q || (ShapedType::isDynamic(p) && q != 1) ||
           (ShapedType::isDynamic(q) && p != 1);
  };
  return x.size() == y.size() &&
         llvm::all_of(llvm::seq<size_t>(0, x.size() - 2),
                      [&](size_t i) { return same(x[i], y[i]); });
}

/// `value` with its scales by scalar constants peeled off into `scale`:
/// x · c, c · x and x / c, each with no other user and no broadcast.
/// Exporters scale the scores (HF's eager attention), the query, or both the
/// query and the transposed key by the square root of the scale (torch's SDPA
/// export).
Value peelScales(Value value, double &scale) {
  while (true) {
    if (auto div = elementReadOnceProducer<DivOp>(value)) {
      std::optional<double> divisor = scalarConstantValue(div.getRhs());
      if (!divisor || *divisor == 0 || !sameType(div.getLhs(), div))
        return value;
      scale /= *divisor;
      value = div.getLhs();
      continue;
    }
    auto mul = elementReadOnceProducer<MulOp>(value);
    if (!mul)
      return value;
    Value scaled;
    for (Value candidate : {mul.getLhs(), mul.getRhs()})
      if (std::optional<double> factor =
              scalarConstantValue(otherOperand(mul, candidate));
          factor && sameType(candidate, mul)) {
        scale *= *factor;
        scaled = candidate;
        break;
      }
    if (!scaled)
      return value;
    value = scaled;
  }
}

/// Walks from below the bias add up to the Q·Kᵀ product: optional scales by
/// constants with an optional where among them, then the product, whose
/// operands may be scaled too. A scale above the where scales its fill as
/// well, where(keep, s, fill) · c being where(keep, s · c, fill · c): GPT-2
/// masks the scaled scores, GPT-J scales the masked ones. The where may
/// also fill where its condition holds (masked_fill(s, masked, fill), as
/// MPT and older BLOOM write it): the op keeps where it does not.
std::optional<ScoreChain> matchMaskedScores(Value scores) {
  ScoreChain chain;
  scores = peelScales(scores, chain.scale);
  if (auto where = elementReadOnceProducer<WhereOp>(scores)) {
    chain.keepNegated = !scalarConstantValue(where.getOnFalse());
    Value kept = chain.keepNegated ? where.getOnFalse() : where.getOnTrue();
    std::optional<double> fill =
        scalarConstantValue(chain.keepNegated ? where.getOnTrue() : where.getOnFalse());
    if (!fill || !sameType(kept, where))
      return std::nullopt;
    chain.keep = where.getCondition();
    chain.maskedValue = *fill * chain.scale;
    scores = kept;
  }
  // Beneath the masks: scales, at most one unfolding of folded heads, and
  // an add of a position bias, in any order.
  auto peelUnfolding = [](ScoreChain &chain, Value scores) {
    scores = peelScales(scores, chain.scale);
    if (!chain.headSplit)
      if ((chain.headSplit = headUnfolding(scores)))
        scores = peelScales(chain.headSplit.getInput(), chain.scale);
    return scores;
  };
  scores = peelUnfolding(chain, scores);
  if (auto add = elementReadOnceProducer<AddOp>(scores)) {
    for (Value candidate : {add.getLhs(), add.getRhs()}) {
      ScoreChain withBias = chain;
      Value product = peelUnfolding(withBias, candidate);
      if (!sameType(candidate, add) || !elementReadOnceProducer<MatMulOp>(product))
        continue;
      withBias.positionBiasAdd = add;
      withBias.positionBiasScale = chain.scale;
      withBias.positionBias =
          peelScales(otherOperand(add, candidate), withBias.positionBiasScale);
      chain = withBias;
      scores = product;
      break;
    }
  }
  chain.scores = elementReadOnceProducer<MatMulOp>(scores);
  if (!chain.scores)
    return std::nullopt;
  chain.query = peelScales(chain.scores.getLhs(), chain.scale);
  chain.keyTransposed = peelScales(chain.scores.getRhs(), chain.scale);
  return chain;
}

/// Walks from the softmax input up to the Q·Kᵀ product, through an optional
/// add of an additive mask on either side.
std::optional<ScoreChain> matchScoreChain(Value scores) {
  auto add = elementReadOnceProducer<AddOp>(scores);
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

/// The key [B, H, Tk, D] when `keyTransposed` is its last two dims swapped
/// with the heads folded into the batch on the way, as the dynamo exporter
/// writes it: reshape(transpose(reshape(k, [B·H, Tk, D]), [0, 2, 1]),
/// [B, H, D, Tk]). Each reshape must provably keep the dims it does not
/// merge or split; the element count then fixes the merged one.
Value unflattenedKey(Value keyTransposed) {
  auto split = keyTransposed.getDefiningOp<ReshapeOp>();
  auto transpose = split ? split.getInput().getDefiningOp<TransposeOp>() : nullptr;
  auto merge = transpose ? transpose.getInput().getDefiningOp<ReshapeOp>() : nullptr;
  if (!merge || !llvm::equal(transpose.getPermutation(), ArrayRef<int64_t>{0, 2, 1}) ||
      cast<RankedTensorType>(split.getType()).getRank() != 4)
    return nullptr;
  Value key = merge.getInput();
  if (cast<RankedTensorType>(key.getType()).getRank() != 4)
    return nullptr;
  auto same = [](Value a, int64_t i, Value b, int64_t j) {
    return traceDim(a, i) == traceDim(b, j);
  };
  if (!same(merge, 1, key, 2) || !same(merge, 2, key, 3) ||
      !same(split, 0, key, 0) || !same(split, 1, key, 1) ||
      !same(split, 2, key, 3) || !same(split, 3, key, 2))
    return nullptr;
  return key;
}

/// The key [..., Tk, D] of a scores chain, whose product reads the key
/// transposed: by transpose_b, by a transpose whose last two dims are the
/// key's last two swapped, or by that transpose done on the key flattened
/// to 3-D (unflattenedKey). Other permutations (BERT's export moves
/// [B, Tk, H, D] straight to [B, H, D, Tk]; nn.MultiheadAttention's
/// [Tk, B·H, D] to [B·H, D, Tk]) leave a transpose to [..., Tk, D].
Value keyOf(ScoreChain chain, PatternRewriter &rewriter) {
  if (chain.scores.getTransposeB())
    return chain.keyTransposed;
  if (Value key = unflattenedKey(chain.keyTransposed))
    return key;
  auto transpose = chain.keyTransposed.getDefiningOp<TransposeOp>();
  if (!transpose)
    return nullptr;
  SmallVector<int64_t> keyPermutation(transpose.getPermutation());
  size_t rank = keyPermutation.size();
  std::swap(keyPermutation[rank - 1], keyPermutation[rank - 2]);
  if (llvm::equal(keyPermutation, llvm::seq<int64_t>(0, rank)))
    return transpose.getInput();
  auto transposedType = cast<RankedTensorType>(transpose.getType());
  SmallVector<int64_t> shape(transposedType.getShape());
  std::swap(shape[rank - 1], shape[rank - 2]);
  return rewriter.create<TransposeOp>(
      transpose.getLoc(), transposedType.clone(shape), transpose.getInput(),
      rewriter.getDenseI64ArrayAttr(keyPermutation));
}

/// Attention operands are f32 [B, H, T, D], or [B·H, T, D] (batched
/// attention, which the fused op runs as one batch of B·H heads).
bool isAttentionOperand(Value value, int64_t rank) {
  auto type = cast<RankedTensorType>(value.getType());
  return type.getRank() == rank && type.getElementType().isF32();
}

/// `value` with `count` dims of size 1 put in front.
Value withLeadingUnitDims(PatternRewriter &rewriter, Location loc, Value value,
                          int64_t count) {
  if (count == 0)
    return value;
  auto type = cast<RankedTensorType>(value.getType());
  SmallVector<int64_t> shape(count, 1);
  llvm::append_range(shape, type.getShape());
  return rewriter.create<UnsqueezeOp>(
      loc, type.clone(shape), value,
      rewriter.getDenseI64ArrayAttr(llvm::to_vector(llvm::seq<int64_t>(0, count))));
}

/// Whether `mask` broadcasts into `scores` without growing it.
bool broadcastsInto(Value mask, Value scores) {
  auto maskType = cast<RankedTensorType>(mask.getType());
  ArrayRef<int64_t> target = cast<RankedTensorType>(scores.getType()).getShape();
  if (maskType.getRank() > static_cast<int64_t>(target.size()))
    return false;
  int64_t offset = target.size() - maskType.getRank();
  for (auto [i, dim] : llvm::enumerate(maskType.getShape()))
    if (dim != 1 && dim != target[i + offset])
      return false;
  return true;
}

/// The softmax that the attention weights `weights` are: the softmax itself,
/// or the NaN guard where(isnan(p), 0, p) that torch's SDPA export puts on
/// it (a row whose every key is masked is then 0, not NaN). `guarded` says
/// which.
SoftmaxOp matchWeights(Value weights, bool &guarded) {
  guarded = false;
  if (auto softmax = elementReadOnceProducer<SoftmaxOp>(weights))
    return softmax;
  auto where = elementReadOnceProducer<WhereOp>(weights);
  auto isNaN = where ? elementReadOnceProducer<CompareOp>(where.getCondition()) : nullptr;
  Value probabilities = where ? where.getOnFalse() : Value();
  if (!isNaN || isNaN.getPredicate() != ComparePredicate::ne ||
      isNaN.getLhs() != probabilities || isNaN.getRhs() != probabilities ||
      !isScalarConstant(where.getOnTrue(), 0.0) || !sameType(probabilities, where))
    return nullptr;
  auto softmax = probabilities.getDefiningOp<SoftmaxOp>();
  // The guard's compare and where are the softmax's only users.
  if (!softmax || llvm::any_of(softmax->getUsers(), [&](Operation *user) {
        return user != isNaN && user != where;
      }))
    return nullptr;
  guarded = true;
  return softmax;
}

/// A 0-d constant `number` of `like`'s (float) element type.
Value scalarLike(PatternRewriter &rewriter, Location loc, Value like, double number) {
  Type element = cast<RankedTensorType>(like.getType()).getElementType();
  return rewriter.create<ConstantOp>(
      loc, cast<ElementsAttr>(DenseElementsAttr::get(RankedTensorType::get({}, element),
                                                     rewriter.getFloatAttr(element, number))));
}

/// where(isnan(x), 0, x) of the same type as x.
Value zeroNaNs(PatternRewriter &rewriter, Location loc, Value x) {
  auto type = cast<RankedTensorType>(x.getType());
  Value isNaN = rewriter.create<CompareOp>(loc, type.clone(rewriter.getI1Type()),
                                           ComparePredicate::ne, x, x);
  return rewriter.create<WhereOp>(loc, type, isNaN, scalarLike(rewriter, loc, x, 0.0), x);
}

/// `value` · `factor` (a kiln.mul by a scalar constant unless the factor is
/// 1): the position bias, scaled by what scales the scores above its add.
Value scaled(PatternRewriter &rewriter, Location loc, Value value, double factor) {
  if (factor == 1.0)
    return value;
  return rewriter.create<MulOp>(loc, value.getType(), value,
                                scalarLike(rewriter, loc, value, factor));
}

struct FuseAttentionPattern : public OpRewritePattern<MatMulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MatMulOp output,
                                PatternRewriter &rewriter) const override {
    // The weights may come folded into [B·H, Tq, Tk] for the product by V.
    ReshapeOp headFold = headFolding(output.getLhs());
    bool guarded;
    SoftmaxOp softmax =
        matchWeights(headFold ? headFold.getInput() : output.getLhs(), guarded);
    int64_t rank = cast<RankedTensorType>(output.getType()).getRank();
    int64_t weightsRank = headFold ? 4 : rank;
    if (!softmax || output.getTransposeB() || (rank != 3 && rank != 4) ||
        static_cast<int64_t>(softmax.getAxis()) != weightsRank - 1)
      return rewriter.notifyMatchFailure(output, "not softmax(...) · V");
    std::optional<ScoreChain> chain = matchScoreChain(softmax.getInput());
    if (!chain)
      return rewriter.notifyMatchFailure(output, "no Q·Kᵀ score chain");
    // Folded heads, if any: the unfolding's and the folding's, which agree.
    auto headCount = [](Value unfolded) {
      return cast<RankedTensorType>(unfolded.getType()).getDimSize(1);
    };
    std::optional<int64_t> heads;
    if (chain->headSplit)
      heads = headCount(chain->headSplit.getResult());
    if (headFold) {
      if (heads && *heads != headCount(headFold.getInput()))
        return rewriter.notifyMatchFailure(output, "heads folded by different counts");
      heads = headCount(headFold.getInput());
    }
    Value query = chain->query, keyTransposed = chain->keyTransposed;
    Value value = output.getRhs();
    Value scores = chain->scores.getResult();
    int64_t productRank = chain->headSplit ? 3 : weightsRank;
    if (!isAttentionOperand(query, productRank) ||
        !isAttentionOperand(keyTransposed, productRank) ||
        !isAttentionOperand(value, rank) || !isAttentionOperand(output, rank))
      return rewriter.notifyMatchFailure(output, "not f32 Q, K, V of one rank");
    if (!sameBatchAndHeads(fusedShape(query, heads), fusedShape(keyTransposed, heads)) ||
        !sameBatchAndHeads(fusedShape(keyTransposed, heads), fusedShape(value, heads)))
      return rewriter.notifyMatchFailure(output, "batch or heads broadcast");
    Value maskedScores = chain->headSplit ? chain->headSplit.getResult() : scores;
    for (Value mask : {chain->keep, chain->bias})
      if (mask && !broadcastsInto(mask, maskedScores))
        return rewriter.notifyMatchFailure(output, "mask grows the scores");
    for (Value bias : {chain->positionBias, chain->bias})
      if (bias && !cast<RankedTensorType>(bias.getType()).getElementType().isF32())
        return rewriter.notifyMatchFailure(output, "bias is not f32");
    // The folding keeps the scores' dims: the fused op checks at run time
    // that the masks do not grow them, so the weights have the same shape.
    if (headFold && !provablyFoldedHeads(headFold, maskedScores))
      return rewriter.notifyMatchFailure(output, "weights not provably folded by heads");
    // A static batch of folded heads must hold whole groups of H (the
    // unfused reshapes fail otherwise; a position bias of 1 broadcasts).
    bool foldedProduct = static_cast<bool>(chain->headSplit);
    bool foldedBias = foldedProduct && chain->positionBias &&
                      cast<RankedTensorType>(chain->positionBiasAdd.getType()).getRank() == 3;
    auto wholeGroups = [&](Value operand, bool folded, bool broadcasts) {
      if (!operand || !folded || cast<RankedTensorType>(operand.getType()).getRank() != 3)
        return true;
      int64_t batch = cast<RankedTensorType>(operand.getType()).getDimSize(0);
      return ShapedType::isDynamic(batch) || (broadcasts && batch == 1) ||
             (batch > 0 && batch % *heads == 0);
    };
    if (!wholeGroups(query, foldedProduct, false) ||
        !wholeGroups(keyTransposed, foldedProduct, false) ||
        !wholeGroups(value, static_cast<bool>(headFold), false) ||
        !wholeGroups(chain->positionBias, foldedBias, true))
      return rewriter.notifyMatchFailure(output, "folded heads not whole groups");
    Value key = keyOf(*chain, rewriter);
    if (!key)
      return rewriter.notifyMatchFailure(output, "K is not read transposed");

    // The fused op is 4-D: operands of products on folded heads are
    // unfolded; batched attention runs as one batch entry of B·H heads, its
    // masks right-aligned to the 4-D scores.
    Location loc = output.getLoc();
    auto as4d = [&](Value operand, bool foldedHeads) {
      if (!operand)
        return operand;
      auto type = cast<RankedTensorType>(operand.getType());
      if (foldedHeads && type.getRank() == 3 && type.getDimSize(0) != 1)
        return unfoldHeads(rewriter, loc, operand, *heads);
      return withLeadingUnitDims(rewriter, loc, operand, 4 - type.getRank());
    };
    // One statement each: the new ops come in operand order.
    Value query4d = as4d(query, foldedProduct);
    Value key4d = as4d(key, foldedProduct);
    Value value4d = as4d(value, static_cast<bool>(headFold));
    Value positionBias4d = as4d(chain->positionBias, foldedBias);
    if (positionBias4d)
      positionBias4d = scaled(rewriter, loc, positionBias4d, chain->positionBiasScale);
    Value keep4d = as4d(chain->keep, false);
    if (chain->keepNegated)
      keep4d = rewriter.create<NotOp>(loc, keep4d.getType(), keep4d);
    Value bias4d = as4d(chain->bias, false);
    auto outputType = cast<RankedTensorType>(output.getType());
    auto resultType =
        outputType.clone(fusedShape(output, headFold ? heads : std::nullopt));
    auto attention = rewriter.create<AttentionOp>(
        loc, resultType, TypeRange(), query4d, key4d, value4d, ValueRange(),
        positionBias4d, keep4d, bias4d, rewriter.getF32FloatAttr(chain->scale),
        rewriter.getF32FloatAttr(chain->keep ? chain->maskedValue : 0.0));
    Value result = attention.getResult();
    if (headFold) {
      // Folded back into [B·H, Tq, Dv]: the product's result.
      result = foldHeads(rewriter, loc, result, outputType);
    } else if (rank == 3) {
      result = rewriter.create<SqueezeOp>(loc, outputType, result,
                                          rewriter.getDenseI64ArrayAttr({0}));
    }
    // The kernel's fully masked rows are NaN, as the unfused softmax's are;
    // the guard then zeroes them. Zeroing the output's NaNs instead of the
    // weights' is the same function wherever V is finite (0 · V = 0).
    rewriter.replaceOp(output, guarded ? zeroNaNs(rewriter, loc, result) : result);
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
  if (!(((*merged)[0].isConstant(0) && !reshape.getAllowZero()) ||
        (*merged)[0].isDimOf(kv, 0)) ||
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
        value->first, attention.getPast(), attention.getPositionBias(),
        attention.getKeep(), attention.getBias(), attention.getScaleAttr(),
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
      !isAttentionOperand(concat.getInputs()[0], 4))
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
        attention.getPositionBias(), attention.getKeep(), attention.getBias(),
        attention.getScaleAttr(), attention.getMaskedValueAttr());
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
