//===- Attention.cpp - Streaming-softmax attention microkernel ------------===//
//
// Flash-attention's loop on the CPU. The query rows that share a kv head are
// cut into tiles; for each tile, blocks of keys stream past: a block of K is
// transposed into scratch (so scores vectorize across keys), each 4-row block
// of queries computes its scores against it in registers, folds them into its
// running max and sum, and adds p·V to its f32 output accumulators, which are
// rescaled whenever a row's max grows. No buffer grows with kv_len. A tile of
// a few rows (a decode step: one per head of the group) reads the keys in
// place instead, each row against every key, since transposing would cost
// more than its scores.
//
// A key block is read through a pointer per row of K and of V, so that one
// loop serves a dense past and the generation engine's block pool
// (kiln_ukernel_paged_attention), whose rows sit in scattered pool blocks and
// are read there, in place; a pool of 16-bit rows (kilnc --kv-dtype) is
// widened to f32 a key block at a time into scratch, and read there. The
// paged kernel is batch-invariant (see computeTile): its key blocks are
// counted from the sequence's first key, cached or new, and a row is
// computed the same way whatever shares its tile.
//
// The keys and values may come in two parts, a past (the KV cache) and the
// new rows, which the kernel also writes out concatenated (the presents):
// the first tile of each kv head copies each block there just before it
// uses it, and, when both presents are wanted, reads the block back from
// them, in L1. A paged past writes no presents: the engine stores the new
// rows itself.
//
// One source serves every ISA: the kernel is written on GCC vector extensions
// of W floats and instantiated inside an AVX-512F, an AVX2+FMA and a baseline
// wrapper, picked by activeGemmIsa() so that KILN_ISA governs both kernels.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/cpu/Attention.h"

#include "kiln/abi/dtype.h"
#include "runtime/src/cpu/Gemm.h"
#include "runtime/src/HalfFloat.h"
#include "runtime/src/ThreadPool.h"
#include "runtime/src/cpu/VectorMath.h"

#include <algorithm>
#include <cstring>

// Runtime.cpp: ends the run in progress with `message`.
extern "C" void kiln_rt_trap(const char *message);
#include <limits>
#include <memory>
#include <new>
#include <vector>

namespace kiln::rt {
namespace {

/// Keys per step of the online softmax: a 4-row block of scores (2 KB) stays
/// in L1, and the per-row max, rescale and reductions are amortized over 128
/// keys.
constexpr int64_t kKeyBlock = 128;
/// Query rows that share each transposed block of K, and the unit of parallel
/// work: enough rows that transposing is a small share of their scores, few
/// enough that their accumulators (64 rows of value_dim) stay in L2.
constexpr int64_t kTileRows = 64;
/// Query rows per register block.
constexpr int kRowBlock = 4;
/// The most query rows of a tile that read the keys in place rather than
/// transposed. Up to here, by count, scoring each row against untransposed
/// keys (W - 1 shuffle pairs per W keys a row) takes fewer shuffles than
/// transposing the block; timed at 4 rows (Llama medium's decode, grouped
/// heads), the two ways were equal within this VM's noise, both bound by
/// the read of the past.
constexpr int64_t kInPlaceRows = 4;

constexpr float kInfinity = std::numeric_limits<float>::infinity();

template <int W>
KILN_ALWAYS_INLINE float sumLanes(const typename Vec<W>::F &v) {
  float sum = v[0];
  for (int lane = 1; lane < W; ++lane)
    sum += v[lane];
  return sum;
}

/// The largest lane of v, which has no NaN. Halving with shuffles: a chain
/// of W - 1 scalar max would sit in every row's path to its exponentials.
template <int W, int H = W / 2>
KILN_ALWAYS_INLINE float maxLanes(const typename Vec<W>::F &v) {
  if constexpr (H >= 1) {
    typename Vec<W>::U rotate;
#pragma GCC unroll 16
    for (int lane = 0; lane < W; ++lane)
      rotate[lane] = (lane + H) % W;
    return maxLanes<W, H / 2>(vecMax<W>(__builtin_shuffle(v, rotate), v));
  } else {
    return v[0];
  }
}

struct Strides {
  int64_t b, h, t, d; // for keep and bias: b, h, query row, key
};

/// Rows of keys and their values: the past (the KV cache) or the new rows.
struct KeyValueRows {
  int64_t length;
  const float *k;
  Strides ks;
  const float *v;
  Strides vs;
};

/// Where the keys and values attended to are written out, or null.
struct Presents {
  float *k;
  Strides ks;
  float *v;
  Strides vs;
};

/// A past read through the generation engine's block tables instead of a
/// dense tensor (kiln/abi/kernel_abi.h, kiln_paged_attention_params_t).
struct PagedPast {
  const void *cache;
  kiln_dtype_t dtype; // f32, or f16/bf16 widened as they are read
  int64_t numLayers, layer, blockSize;
  const int64_t *tables;
  int64_t tableStride;
  const int64_t *lengths;
  int64_t width; // the padded past's columns in the masks

  bool narrow() const { return dtype != KILN_DTYPE_F32; }
  /// The first of block `block`'s rows of keys (kv 0) or values (kv 1) of
  /// `head`, each headDim elements of the pool's dtype.
  const char *rows(int64_t block, int64_t kv, int64_t kvHeads, int64_t head,
                   int64_t headDim) const {
    int64_t index = ((block * numLayers + layer) * 2 + kv) * kvHeads + head;
    return static_cast<const char *>(cache) +
           index * blockSize * headDim * dtypeSize(dtype);
  }
};

/// `count` 16-bit floats (f16, or bf16 when `bfloat`) at `from` widened to
/// f32 at `to`, W at a time. A bf16 is an f32's upper half. An f16's
/// exponent and fraction move to f32's places and the value is scaled by
/// 2^112, which rebiases the exponent (15 to 127) and makes a subnormal
/// half's f32 denormal a normal f32; inf and NaN then take the all-ones
/// exponent back.
template <int W>
KILN_ALWAYS_INLINE void widenRow(const uint16_t *from, int64_t count, bool bfloat,
                                 float *to) {
  using F = typename Vec<W>::F;
  using U = typename Vec<W>::U;
  typedef uint16_t Halves __attribute__((vector_size(W * sizeof(uint16_t))));
  int64_t i = 0;
  for (; i + W <= count; i += W) {
    Halves halves;
    __builtin_memcpy(&halves, from + i, sizeof halves);
    const U bits = __builtin_convertvector(halves, U);
    U wide;
    if (bfloat) {
      wide = bits << 16;
    } else {
      const U magnitude = (bits & 0x7FFF) << 13;
      const U scaled = (U)((F)magnitude * 0x1p112f);
      wide = (magnitude >= (0x7C00u << 13) ? scaled | 0x7F800000u : scaled) |
             ((bits & 0x8000) << 16);
    }
    __builtin_memcpy(to + i, &wide, sizeof wide);
  }
  for (; i < count; ++i)
    to[i] = bfloat ? bfloat16ToFloat(from[i]) : halfToFloat(from[i]);
}

struct Problem {
  int64_t batch, heads, kvHeads, qLen, headDim, valueDim;
  const float *q;
  Strides qs;
  KeyValueRows past, current; // attended to in this order
  const float *positionBias;
  Strides positionBiass;
  const uint8_t *keep;
  Strides keeps;
  float maskedValue;
  const float *bias;
  Strides biass;
  float scale;
  float *out;
  Strides outs;
  Presents presents;
  const PagedPast *paged = nullptr; // then `past` is empty

  int64_t kvLen() const {
    return (paged ? paged->width : past.length) + current.length;
  }
  int64_t group() const { return heads / kvHeads; }
  int64_t tilesPerKvHead() const { return ceilDiv(group() * qLen, kTileRows); }
  int64_t tiles() const { return batch * kvHeads * tilesPerKvHead(); }
};

/// Where each row of one block of keys and values starts: rows of a dense
/// tensor, or of the engine's pool blocks.
struct BlockRows {
  const float *k[kKeyBlock];
  const float *v[kKeyBlock];
};

/// Where one query row's inputs and output start.
struct Row {
  const float *q;
  const float *positionBias;
  const uint8_t *keep;
  const float *bias;
  float *out;
};

/// This thread's scratch, at least `floats` long and cache-line aligned. It
/// only grows, so calls after the first allocate nothing.
float *threadScratch(int64_t floats) {
  constexpr size_t kAlignment = 64;
  struct AlignedDelete {
    void operator()(float *p) const {
      ::operator delete(p, std::align_val_t(kAlignment));
    }
  };
  thread_local std::unique_ptr<float, AlignedDelete> data;
  thread_local int64_t capacity = 0;
  if (floats > capacity) {
    data.reset(static_cast<float *>(
        ::operator new(floats * sizeof(float), std::align_val_t(kAlignment))));
    capacity = floats;
  }
  return data.get();
}

/// Folds rows[0, 2B) into rows[0, B) by one transpose step (see
/// transposeStep) whose two halves are added: the transpose's remaining
/// steps are linear and the same for both halves, so adding early changes
/// nothing of the sum of all rows. Down to B = 1, rows[0] lane r ends up as
/// the sum of the lanes of row r, in W - 1 shuffle pairs.
template <int W, int B>
KILN_ALWAYS_INLINE void foldRows(typename Vec<W>::F (&rows)[W]) {
  if constexpr (B >= 1) {
    typename Vec<W>::U low, high;
    transposeMasks<W, B>(low, high);
#pragma GCC unroll 16
    for (int i = 0; i < B; ++i)
      rows[i] = __builtin_shuffle(rows[i], rows[i + B], low) +
                __builtin_shuffle(rows[i], rows[i + B], high);
    foldRows<W, B / 2>(rows);
  }
}

/// s[0:W] = scale · q·K[r] for the W key rows from `keys` on: each key's
/// products with q summed over the depth into one vector, then the W vectors
/// folded into the W scores. The depth loop is outside the keys so that one
/// query vector serves W independent FMAs. Only the first `count` keys exist
/// when Partial; the others repeat the last, which keeps the reads in
/// bounds, and maskScores turns their scores into -inf.
template <int W, bool Partial>
KILN_ALWAYS_INLINE void scoreKeys(const float *q, const float *const *keys,
                                  int64_t depth, int64_t count, float scale,
                                  float *s) {
  using F = typename Vec<W>::F;
  const float *key[W];
  F sums[W];
#pragma GCC unroll 16
  for (int r = 0; r < W; ++r) {
    key[r] = keys[Partial ? std::min<int64_t>(r, count - 1) : r];
    sums[r] = F{};
  }
  for (int64_t d = 0; d < depth; d += W) {
    const F query = load<W>(q + d);
#pragma GCC unroll 16
    for (int r = 0; r < W; ++r)
      sums[r] += query * load<W>(key[r] + d);
  }
  foldRows<W, W / 2>(sums);
  store<W>(s, sums[0] * scale);
}

/// One query row's scores against `count` key rows read in place, rows that
/// are contiguous and a whole number of vectors long, W keys at a time. A
/// tile of a few rows cannot repay transposing K into scratch; this reads
/// each key once per row, from L1 after the first.
template <int W>
KILN_ALWAYS_INLINE void rowScores(const float *q, const float *const *keys,
                                  int64_t depth, int64_t count, float scale,
                                  float *s) {
  int64_t j = 0;
  for (; j + W <= count; j += W)
    scoreKeys<W, false>(q, keys + j, depth, W, scale, s + j);
  if (j < count)
    scoreKeys<W, true>(q, keys + j, depth, count - j, scale, s + j);
}

/// kt[d * kKeyBlock + j] = K[j, d] for the `count` key rows (elements sd
/// apart), and 0 up to paddedCount. This runs for every tile and key block:
/// contiguous rows go W×W at a time through registers, 5x faster than
/// element by element.
template <int W>
KILN_ALWAYS_INLINE void transposeKeys(const float *const *keys, int64_t sd,
                                      int64_t count, int64_t paddedCount,
                                      int64_t depth, float *kt) {
  using F = typename Vec<W>::F;
  int64_t j = 0, d = 0;
  if (sd == 1) {
    for (; j + W <= count; j += W) {
      for (d = 0; d + W <= depth; d += W) {
        F rows[W];
#pragma GCC unroll 16
        for (int r = 0; r < W; ++r)
          rows[r] = load<W>(keys[j + r] + d);
        transposeStep<W, W / 2>(rows);
#pragma GCC unroll 16
        for (int r = 0; r < W; ++r)
          store<W>(kt + (d + r) * kKeyBlock + j, rows[r]);
      }
      for (; d < depth; ++d)
        for (int r = 0; r < W; ++r)
          kt[d * kKeyBlock + j + r] = keys[j + r][d];
    }
  }
  for (; j < count; ++j)
    for (d = 0; d < depth; ++d)
      kt[d * kKeyBlock + j] = keys[j][d * sd];
  for (d = 0; d < depth; ++d)
    std::fill(kt + d * kKeyBlock + count, kt + d * kKeyBlock + paddedCount,
              0.0f);
}

/// Copies the `count` V rows (elements sd apart) to `packed`, zero-padded
/// to paddedWidth, and points the rows there: for V rows that cannot be read
/// a whole vector at a time.
void packValues(const float **values, int64_t sd, int64_t count,
                int64_t width, int64_t paddedWidth, float *packed) {
  for (int64_t j = 0; j < count; ++j, packed += paddedWidth) {
    const float *row = values[j];
    for (int64_t e = 0; e < width; ++e)
      packed[e] = row[e * sd];
    std::fill(packed + width, packed + paddedWidth, 0.0f);
    values[j] = packed;
  }
}

/// dst[j, e] = src[j, e] for `count` rows of `width` floats.
void copyRows(const float *src, int64_t srcRowStride, int64_t srcStride,
              float *dst, int64_t dstRowStride, int64_t dstStride,
              int64_t count, int64_t width) {
  if (srcStride != 1 || dstStride != 1) {
    for (int64_t j = 0; j < count; ++j)
      for (int64_t e = 0; e < width; ++e)
        dst[j * dstRowStride + e * dstStride] =
            src[j * srcRowStride + e * srcStride];
    return;
  }
  if (srcRowStride == width && dstRowStride == width) {
    std::memcpy(dst, src, count * width * sizeof(float));
    return;
  }
  for (int64_t j = 0; j < count; ++j)
    std::memcpy(dst + j * dstRowStride, src + j * srcRowStride,
                width * sizeof(float));
}

/// Copies rows [j0, j0 + count) of kv head `kvHead` of batch entry `b` from
/// `rows` to the presents, at key index `to` there.
void copyToPresents(const Problem &p, const KeyValueRows &rows, int64_t b,
                    int64_t kvHead, int64_t j0, int64_t count, int64_t to) {
  const Presents &out = p.presents;
  if (count <= 0)
    return;
  if (out.k)
    copyRows(rows.k + b * rows.ks.b + kvHead * rows.ks.h + j0 * rows.ks.t,
             rows.ks.t, rows.ks.d,
             out.k + b * out.ks.b + kvHead * out.ks.h + to * out.ks.t, out.ks.t,
             out.ks.d, count, p.headDim);
  if (out.v)
    copyRows(rows.v + b * rows.vs.b + kvHead * rows.vs.h + j0 * rows.vs.t,
             rows.vs.t, rows.vs.d,
             out.v + b * out.vs.b + kvHead * out.vs.h + to * out.vs.t, out.vs.t,
             out.vs.d, count, p.valueDim);
}

/// Writes keys [first, first + count) of kv head `kvHead` of batch entry
/// `b`, from the past and the new rows, to the presents.
void appendToPresents(const Problem &p, int64_t b, int64_t kvHead,
                      int64_t first, int64_t count) {
  const int64_t fromPast = std::clamp<int64_t>(p.past.length - first, 0, count);
  copyToPresents(p, p.past, b, kvHead, first, fromPast, first);
  copyToPresents(p, p.current, b, kvHead,
                 std::max<int64_t>(first - p.past.length, 0), count - fromPast,
                 first + fromPast);
}

/// s[r][j0:j0+C·W] = scale · Σ_d q[r][d]·kt[d][j0:...] for the R rows.
template <int W, int R, int C>
KILN_ALWAYS_INLINE void scoreStrip(const Row *rows, int64_t qsd, int64_t depth,
                                   const float *kt, float scale, float *s) {
  using F = typename Vec<W>::F;
  F acc[R][C];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
    for (int c = 0; c < C; ++c)
      acc[r][c] = F{};
  for (int64_t d = 0; d < depth; ++d, kt += kKeyBlock) {
    F keys[C];
#pragma GCC unroll 16
    for (int c = 0; c < C; ++c)
      keys[c] = load<W>(kt + c * W);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const F query = splat<W>(rows[r].q[d * qsd]);
#pragma GCC unroll 16
      for (int c = 0; c < C; ++c)
        acc[r][c] += query * keys[c];
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
    for (int c = 0; c < C; ++c)
      store<W>(s + r * kKeyBlock + c * W, acc[r][c] * scale);
}

/// The R rows' scores against the first `paddedCount` keys of the block.
template <int W, int R>
KILN_ALWAYS_INLINE void scores(const Row *rows, int64_t qsd, int64_t depth,
                               const float *kt, int64_t paddedCount,
                               float scale, float *s) {
  // R·C accumulators: enough independent FMAs to hide their latency.
  constexpr int C = R == 1 ? 4 : 2;
  int64_t j = 0;
  for (; j + C * W <= paddedCount; j += C * W)
    scoreStrip<W, R, C>(rows, qsd, depth, kt + j, scale, s + j);
  for (; j < paddedCount; j += W)
    scoreStrip<W, R, 1>(rows, qsd, depth, kt + j, scale, s + j);
}

/// Adds `count` biases, `stride` apart, to the scores.
KILN_ALWAYS_INLINE void addBias(const float *__restrict bias, int64_t stride,
                                int64_t count, float *__restrict s) {
  if (stride == 1) {
    for (int64_t j = 0; j < count; ++j)
      s[j] += bias[j];
  } else {
    for (int64_t j = 0; j < count; ++j)
      s[j] += bias[j * stride];
  }
}

/// Applies the position bias, the keep mask and the bias, in that order, to
/// one row's block of scores and sets the padding past `count` to -inf,
/// which vecExp turns into weight 0.
KILN_ALWAYS_INLINE void maskScores(const Problem &p, const Row &row, int64_t j0,
                                   int64_t count, int64_t paddedCount,
                                   float *__restrict s) {
  if (row.positionBias)
    addBias(row.positionBias + j0 * p.positionBiass.d, p.positionBiass.d, count, s);
  if (row.keep) {
    const uint8_t *__restrict keep = row.keep + j0 * p.keeps.d;
    const float masked = p.maskedValue;
    if (p.keeps.d == 1) {
      for (int64_t j = 0; j < count; ++j)
        s[j] = keep[j] ? s[j] : masked;
    } else {
      for (int64_t j = 0; j < count; ++j)
        s[j] = keep[j * p.keeps.d] ? s[j] : masked;
    }
  }
  if (row.bias)
    addBias(row.bias + j0 * p.biass.d, p.biass.d, count, s);
  std::fill(s + count, s + paddedCount, -kInfinity);
}

/// Folds one row's block of scores into its running max `m` and lane-wise
/// sum `l`, leaving in s the weights exp(s - m) to multiply V by. When the
/// max grows, what was accumulated against the old one is scaled by
/// exp(old - new).
template <int W>
KILN_ALWAYS_INLINE void
softmaxStep(float *s, int64_t count, int64_t paddedCount, float &m,
            typename Vec<W>::F &l, float *acc, int64_t accWidth) {
  using F = typename Vec<W>::F;
  F blockMax = splat<W>(-kInfinity);
  for (int64_t j = 0; j < paddedCount; j += W)
    blockMax = vecMax<W>(load<W>(s + j), blockMax);
  const float mNew = std::max(m, maxLanes<W>(blockMax));
  if (mNew == -kInfinity) {
    // Every score so far is -inf: weight 0 for now, since a later finite
    // score makes these exp(-inf) = 0. If none comes, the row ends NaN.
    std::fill(s, s + count, 0.0f);
    return;
  }
  const F shift = splat<W>(mNew);
  F sum = F{};
  for (int64_t j = 0; j < paddedCount; j += W) {
    const F weight = vecExp<W>(load<W>(s + j) - shift);
    store<W>(s + j, weight);
    sum += weight;
  }
  // From -inf there is nothing to rescale: the sum and accumulators are 0
  // (or NaN from 0·inf in V, which rescaling would keep).
  if (mNew > m && m != -kInfinity) {
    const F alpha = vecExp<W>(splat<W>(m - mNew));
    l *= alpha;
    for (int64_t e = 0; e < accWidth; e += W)
      store<W>(acc + e, load<W>(acc + e) * alpha);
  }
  m = mNew;
  l += sum;
}

/// acc[r][e0:e0+C·W] += Σ_j p[r][j]·V[j][e0:...] for the R rows, each
/// element summing its keys in order, whatever R and C: a row's output
/// must not depend on how many rows share its register block (batch
/// invariance; see computeTile). One chain of FMAs per accumulator: with
/// one row and four vectors that is four chains, as many as a 4-cycle FMA
/// at one per cycle needs, and a decode step's V comes from memory anyway.
template <int W, int R, int C>
KILN_ALWAYS_INLINE void valueStrip(const float *p, int64_t count,
                                   const float *const *values, int64_t e0,
                                   float *acc, int64_t accWidth) {
  using F = typename Vec<W>::F;
  F sums[R][C];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
    for (int c = 0; c < C; ++c)
      sums[r][c] = load<W>(acc + r * accWidth + c * W);
  for (int64_t j = 0; j < count; ++j) {
    F value[C];
#pragma GCC unroll 16
    for (int c = 0; c < C; ++c)
      value[c] = load<W>(values[j] + e0 + c * W);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const F weight = splat<W>(p[r * kKeyBlock + j]);
#pragma GCC unroll 16
      for (int c = 0; c < C; ++c)
        sums[r][c] += weight * value[c];
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
    for (int c = 0; c < C; ++c)
      store<W>(acc + r * accWidth + c * W, sums[r][c]);
}

/// Adds the R rows' weighted block of V (accWidth readable floats a row) to
/// their accumulators.
template <int W, int R>
KILN_ALWAYS_INLINE void accumulateValues(const float *p, int64_t count,
                                         const float *const *values,
                                         float *acc, int64_t accWidth) {
  constexpr int C = R == 1 ? 4 : 2;
  int64_t e = 0;
  for (; e + C * W <= accWidth; e += C * W)
    valueStrip<W, R, C>(p, count, values, e, acc + e, accWidth);
  for (; e < accWidth; e += W)
    valueStrip<W, R, 1>(p, count, values, e, acc + e, accWidth);
}

/// What one key block does for R query rows once their scores are in s:
/// masks, the online softmax, and the weighted values.
template <int W, int R>
KILN_ALWAYS_INLINE void
weighBlock(const Problem &p, const Row *rows, int64_t j0, int64_t count,
           int64_t paddedCount, float *s, const float *const *values, float *m,
           typename Vec<W>::F *l, float *acc, int64_t accWidth) {
  for (int r = 0; r < R; ++r) {
    maskScores(p, rows[r], j0, count, paddedCount, s + r * kKeyBlock);
    softmaxStep<W>(s + r * kKeyBlock, count, paddedCount, m[r], l[r],
                   acc + r * accWidth, accWidth);
  }
  accumulateValues<W, R>(s, count, values, acc, accWidth);
}

/// Everything one key block does for R query rows: scores against the
/// transposed keys kt, or, without kt, against the key rows in place.
template <int W, int R>
KILN_ALWAYS_INLINE void
rowBlockStep(const Problem &p, const Row *rows, int64_t j0, int64_t count,
             int64_t paddedCount, const BlockRows &block, const float *kt,
             float *m, typename Vec<W>::F *l, float *acc, int64_t accWidth) {
  alignas(64) float s[R * kKeyBlock];
  if (kt)
    scores<W, R>(rows, p.qs.d, p.headDim, kt, paddedCount, p.scale, s);
  else
    for (int r = 0; r < R; ++r)
      rowScores<W>(rows[r].q, block.k, p.headDim, count, p.scale,
                   s + r * kKeyBlock);
  weighBlock<W, R>(p, rows, j0, count, paddedCount, s, block.v, m, l, acc,
                   accWidth);
}

/// Computes `count` query rows, from `first` on, of the rows (head by head,
/// then query by query) that share kv head `kvHead` of batch entry `b`.
template <int W>
KILN_ALWAYS_INLINE void computeTile(const Problem &p, int64_t b, int64_t kvHead,
                                    int64_t first, int64_t count,
                                    float *scratch) {
  using F = typename Vec<W>::F;
  Row rows[kTileRows];
  for (int64_t r = 0; r < count; ++r) {
    const int64_t h = kvHead * p.group() + (first + r) / p.qLen;
    const int64_t i = (first + r) % p.qLen;
    rows[r].q = p.q + b * p.qs.b + h * p.qs.h + i * p.qs.t;
    rows[r].positionBias = p.positionBias ? p.positionBias + b * p.positionBiass.b +
                                                h * p.positionBiass.h +
                                                i * p.positionBiass.t
                                          : nullptr;
    rows[r].keep = p.keep
                       ? p.keep + b * p.keeps.b + h * p.keeps.h + i * p.keeps.t
                       : nullptr;
    rows[r].bias = p.bias
                       ? p.bias + b * p.biass.b + h * p.biass.h + i * p.biass.t
                       : nullptr;
    rows[r].out = p.out + b * p.outs.b + h * p.outs.h + i * p.outs.t;
  }

  const int64_t accWidth = ceilDiv(p.valueDim, W) * W;
  float *kt = scratch;
  float *vPacked = kt + p.headDim * kKeyBlock;
  float *acc = vPacked + kKeyBlock * accWidth;
  // A 16-bit pool's rows of one key block, widened: keys, then values.
  float *widened = acc + kTileRows * accWidth;
  std::fill(acc, acc + count * accWidth, 0.0f);
  float m[kTileRows];
  F l[kTileRows];
  std::fill(m, m + count, -kInfinity);
  std::fill(l, l + count, F{});

  // The first tile of each kv head also writes its rows to the presents,
  // each block just before it is read. With both presents it then reads
  // them back, while still in cache: the past and the new rows as one run.
  const bool appends = first == 0 && (p.presents.k || p.presents.v);
  const KeyValueRows cache = {p.kvLen(), p.presents.k, p.presents.ks,
                              p.presents.v, p.presents.vs};
  const bool readsCache = appends && p.presents.k && p.presents.v;
  // Few rows score the keys in place; more share one transposed copy. The
  // two round differently, so a paged problem (the generation engine's,
  // which must be batch-invariant) decides by the layout alone: a row's
  // scores must not depend on how many rows share its tile.
  const bool keysInPlace = (p.paged || count <= kInPlaceRows) && p.qs.d == 1 &&
                           p.headDim % W == 0;
  BlockRows block;
  // Attends to the `keys` rows of `block` (their elements kd and vd apart),
  // which are columns [at, at + keys) of the masks. Forced inline, as is
  // every lambda here: an out-of-line lambda does not inherit the ISA
  // wrapper's target attribute, and compiled for the baseline it ran the
  // W-float vectors as spilled SSE pairs (4x slower on AVX-512).
  auto attendBlock = [&](int64_t keys, int64_t kd, int64_t vd,
                         int64_t at) __attribute__((always_inline)) {
    const int64_t paddedKeys = ceilDiv(keys, W) * W;
    const bool inPlace = keysInPlace && kd == 1;
    if (!inPlace)
      transposeKeys<W>(block.k, kd, keys, paddedKeys, p.headDim, kt);
    // V rows are read W floats at a time, so they are used in place only
    // when contiguous and a whole number of vectors wide.
    if (vd != 1 || accWidth != p.valueDim)
      packValues(block.v, vd, keys, p.valueDim, accWidth, vPacked);
    const float *keysT = inPlace ? nullptr : kt;
    int64_t r = 0;
    for (; r + kRowBlock <= count; r += kRowBlock)
      rowBlockStep<W, kRowBlock>(p, rows + r, at, keys, paddedKeys, block,
                                 keysT, m + r, l + r, acc + r * accWidth,
                                 accWidth);
    for (; r < count; ++r)
      rowBlockStep<W, 1>(p, rows + r, at, keys, paddedKeys, block, keysT,
                         m + r, l + r, acc + r * accWidth, accWidth);
  };
  // Attends to a dense run of this kv head's keys and values, which are
  // columns [keyIndex, keyIndex + length) of the masks.
  auto attendSegment = [&](const KeyValueRows &segment, int64_t keyIndex)
                           __attribute__((always_inline)) {
    if (segment.length == 0) // an absent past has null pointers
      return;
    const float *k = segment.k + b * segment.ks.b + kvHead * segment.ks.h;
    const float *v = segment.v + b * segment.vs.b + kvHead * segment.vs.h;
    for (int64_t j0 = 0; j0 < segment.length; j0 += kKeyBlock) {
      const int64_t keys = std::min(kKeyBlock, segment.length - j0);
      if (appends)
        appendToPresents(p, b, kvHead, keyIndex + j0, keys);
      for (int64_t j = 0; j < keys; ++j) {
        block.k[j] = k + (j0 + j) * segment.ks.t;
        block.v[j] = v + (j0 + j) * segment.vs.t;
      }
      attendBlock(keys, segment.ks.d, segment.vs.d, keyIndex + j0);
    }
  };

  if (const PagedPast *paged = p.paged) {
    // Keys [0, length) are the cached rows, read where they lie in their
    // pool blocks, and keys [length, length + qLen) the new rows. They are
    // attended to in blocks of kKeyBlock counted from key 0, whatever the
    // split between the two, so that a row's online softmax adds the same
    // blocks in the same order however the engine cut its sequence into
    // steps (batch invariance: the keys past a row's own are masked, and
    // add exact zeros). Key t is column width - length + t of the masks:
    // the cached rows are right-aligned in the padded past, whose front
    // columns hold no key.
    const int64_t length = paged->lengths[b];
    const int64_t total = length + p.current.length;
    const int64_t *table = paged->tables + b * paged->tableStride;
    const KeyValueRows &fresh = p.current; // contiguous rows (freshRows)
    const float *freshK = fresh.k + b * fresh.ks.b + kvHead * fresh.ks.h;
    const float *freshV = fresh.v + b * fresh.vs.b + kvHead * fresh.vs.h;
    for (int64_t t0 = 0; t0 < total; t0 += kKeyBlock) {
      const int64_t keys = std::min(kKeyBlock, total - t0);
      const int64_t cached = std::clamp<int64_t>(length - t0, 0, keys);
      for (int64_t t = t0; t < t0 + cached;) {
        const int64_t poolBlock = table[t / paged->blockSize];
        const int64_t slot = t % paged->blockSize;
        const int64_t run = std::min(paged->blockSize - slot, t0 + cached - t);
        for (int kv = 0; kv < 2; ++kv) {
          const char *first = paged->rows(poolBlock, kv, p.kvHeads, kvHead, p.headDim);
          const float **into = kv ? block.v : block.k;
          if (!paged->narrow()) {
            const float *rows = reinterpret_cast<const float *>(first) + slot * p.headDim;
            for (int64_t i = 0; i < run; ++i)
              into[t - t0 + i] = rows + i * p.headDim;
            continue;
          }
          // 16-bit rows are widened into this block's scratch rows.
          float *wide = widened + (kv * kKeyBlock + (t - t0)) * p.headDim;
          widenRow<W>(reinterpret_cast<const uint16_t *>(first) + slot * p.headDim,
                      run * p.headDim, paged->dtype == KILN_DTYPE_BF16, wide);
          for (int64_t i = 0; i < run; ++i)
            into[t - t0 + i] = wide + i * p.headDim;
        }
        t += run;
      }
      for (int64_t t = t0 + cached; t < t0 + keys; ++t) {
        block.k[t - t0] = freshK + (t - length) * fresh.ks.t;
        block.v[t - t0] = freshV + (t - length) * fresh.vs.t;
      }
      attendBlock(keys, 1, 1, paged->width - length + t0);
    }
  } else if (readsCache) {
    attendSegment(cache, 0);
  } else {
    attendSegment(p.past, 0);
    attendSegment(p.current, p.past.length);
  }

  for (int64_t r = 0; r < count; ++r) {
    float *__restrict out = rows[r].out;
    const float *__restrict sums = acc + r * accWidth;
    // A row whose scores were all -inf has sum 0 and accumulators 0: 0/0 is
    // the NaN that the unfused softmax's exp(-inf - -inf) gives.
    const float total = sumLanes<W>(l[r]);
    if (p.outs.d == 1) {
      for (int64_t e = 0; e < p.valueDim; ++e)
        out[e] = sums[e] / total;
    } else {
      for (int64_t e = 0; e < p.valueDim; ++e)
        out[e * p.outs.d] = sums[e] / total;
    }
  }
}

/// Computes tiles [begin, end) of p.tiles(), ordered by batch entry, kv head,
/// then rows.
template <int W>
KILN_ALWAYS_INLINE void runTiles(const Problem &p, int64_t begin, int64_t end) {
  const int64_t accWidth = ceilDiv(p.valueDim, W) * W;
  const bool widens = p.paged && p.paged->narrow();
  float *scratch = threadScratch(p.headDim * kKeyBlock + kKeyBlock * accWidth +
                                 kTileRows * accWidth +
                                 (widens ? 2 * kKeyBlock * p.headDim : 0));
  const int64_t perKvHead = p.tilesPerKvHead();
  const int64_t rowsPerKvHead = p.group() * p.qLen;
  for (int64_t tile = begin; tile < end; ++tile) {
    const int64_t kvHeadIndex = tile / perKvHead;
    const int64_t first = tile % perKvHead * kTileRows;
    computeTile<W>(p, kvHeadIndex / p.kvHeads, kvHeadIndex % p.kvHeads, first,
                   std::min(kTileRows, rowsPerKvHead - first), scratch);
  }
}

using TileRunner = void (*)(const Problem &, int64_t, int64_t);

// Four lanes: SSE2, which every x86-64 CPU has, or the target's own vectors.
void runTilesGeneric(const Problem &p, int64_t begin, int64_t end) {
  runTiles<4>(p, begin, end);
}

#if defined(__x86_64__)
__attribute__((target("avx2,fma"))) void
runTilesAvx2(const Problem &p, int64_t begin, int64_t end) {
  runTiles<8>(p, begin, end);
}

__attribute__((target("avx512f"))) void
runTilesAvx512(const Problem &p, int64_t begin, int64_t end) {
  runTiles<16>(p, begin, end);
}
#endif

TileRunner tileRunnerFor(GemmIsa isa) {
  switch (isa) {
#if defined(__x86_64__)
  case GemmIsa::Avx512:
    return runTilesAvx512;
  case GemmIsa::Avx2:
    return runTilesAvx2;
#endif
  default:
    return runTilesGeneric;
  }
}

/// A parameter struct's strides (b, h, t, d).
Strides stridesOf(const int64_t (&s)[4]) { return {s[0], s[1], s[2], s[3]}; }

/// The paged kernel's new rows as its tiles read them: contiguous rows
/// ([batch, kv heads, q_len, head_dim]) and, with a 16-bit pool, rounded to
/// the pool's precision, as the engine stores them. Every key a row
/// attends to then has the precision it has in the pool, whether it came in
/// the row's own step or an earlier one, and is read a whole row at a time
/// (batch invariance; see computeTile). An f32 pool's contiguous rows are
/// used where they are; others are written to `storage`.
KeyValueRows freshRows(const kiln_paged_attention_params_t &a,
                       std::vector<float> &storage) {
  const kiln_dtype_t dtype = static_cast<kiln_dtype_t>(a.kv_cache_dtype);
  if (dtype == KILN_DTYPE_F32 && a.k_strides[3] == 1 && a.v_strides[3] == 1)
    return {a.q_len, a.k, stridesOf(a.k_strides), a.v, stridesOf(a.v_strides)};
  const bool narrow = dtype != KILN_DTYPE_F32, bfloat = dtype == KILN_DTYPE_BF16;
  const int64_t rows = a.batch * a.kv_heads * a.q_len, dim = a.head_dim;
  storage.resize(2 * rows * dim);
  for (int kv = 0; kv < 2; ++kv) {
    const float *from = kv ? a.v : a.k;
    const int64_t(&s)[4] = kv ? a.v_strides : a.k_strides;
    float *to = storage.data() + kv * rows * dim;
    for (int64_t b = 0; b < a.batch; ++b)
      for (int64_t h = 0; h < a.kv_heads; ++h)
        for (int64_t t = 0; t < a.q_len; ++t, to += dim) {
          const float *row = from + b * s[0] + h * s[1] + t * s[2];
          for (int64_t d = 0; d < dim; ++d)
            to[d] = narrow ? roundedTo16Bits(row[d * s[3]], bfloat) : row[d * s[3]];
        }
  }
  const Strides contiguous = {a.kv_heads * a.q_len * dim, a.q_len * dim, dim, 1};
  return {a.q_len, storage.data(), contiguous, storage.data() + rows * dim, contiguous};
}

/// The problem a parameter struct states: the fields both structs share (by
/// name), with the keys and values that each entry point reads its own way.
template <typename Params>
Problem problemOf(const Params &a, int64_t valueDim, KeyValueRows past,
                  KeyValueRows current, Presents presents) {
  return Problem{a.batch,
                 a.heads,
                 a.kv_heads,
                 a.q_len,
                 a.head_dim,
                 valueDim,
                 a.q,
                 stridesOf(a.q_strides),
                 past,
                 current,
                 a.position_bias,
                 stridesOf(a.position_bias_strides),
                 a.keep,
                 stridesOf(a.keep_strides),
                 static_cast<float>(a.masked_value),
                 a.bias,
                 stridesOf(a.bias_strides),
                 static_cast<float>(a.scale),
                 a.out,
                 stridesOf(a.out_strides),
                 presents};
}

/// Runs a problem on the pool: the part both entry points share.
void solve(const Problem &problem) {
  if (problem.heads <= 0 || problem.qLen <= 0 || problem.valueDim <= 0 ||
      problem.kvLen() == 0) {
    // No tile runs to write the presents as it reads the rows.
    for (int64_t b = 0; b < problem.batch; ++b)
      for (int64_t kvHead = 0; kvHead < problem.kvHeads; ++kvHead)
        appendToPresents(problem, b, kvHead, 0, problem.kvLen());
    // An empty softmax times an empty V: the sum over no keys.
    if (problem.kvLen() == 0)
      for (int64_t b = 0; b < problem.batch; ++b)
        for (int64_t h = 0; h < problem.heads; ++h)
          for (int64_t i = 0; i < problem.qLen; ++i)
            for (int64_t e = 0; e < problem.valueDim; ++e)
              problem.out[b * problem.outs.b + h * problem.outs.h +
                          i * problem.outs.t + e * problem.outs.d] = 0.0f;
    return;
  }
  const TileRunner run = tileRunnerFor(activeGemmIsa());
  const int64_t tiles = problem.tiles();
  ThreadPool *pool = currentThreadPool();
  // Each tile's rows are computed in the same order whichever thread runs
  // it, so the split does not change results. A decode step's attention is
  // few multiply-adds on many bytes: every key and value read once, and
  // written again when there are presents (the dense interface copies the
  // whole past each step), so the split also counts the bytes it streams.
  const double keyValueBytes = sizeof(float) * static_cast<double>(problem.batch) *
                               problem.kvHeads * problem.kvLen() *
                               (problem.headDim + problem.valueDim);
  const bool writesPresents = problem.presents.k || problem.presents.v;
  const int64_t threads = std::min<int64_t>(
      tiles,
      std::max(threadsWorthUsing(pool, static_cast<double>(problem.batch) * problem.heads *
                                           problem.qLen * problem.kvLen() *
                                           (problem.headDim + problem.valueDim)),
               threadsWorthStreaming(pool, keyValueBytes * (writesPresents ? 2 : 1))));
  if (threads <= 1) {
    run(problem, 0, tiles);
    return;
  }
  pool->parallelFor(threads, [&](int64_t begin, int64_t end) {
    for (int64_t part = begin; part < end; ++part)
      run(problem, part * tiles / threads, (part + 1) * tiles / threads);
  });
}

} // namespace
} // namespace kiln::rt

extern "C" void kiln_ukernel_attention(const kiln_attention_params_t *params) {
  using namespace kiln::rt;
  const kiln_attention_params_t &a = *params;
  if (a.batch <= 0 || a.kv_heads <= 0)
    return;
  solve(problemOf(a, a.value_dim,
                  {std::max<int64_t>(a.past_len, 0), a.past_k, stridesOf(a.past_k_strides),
                   a.past_v, stridesOf(a.past_v_strides)},
                  {std::max<int64_t>(a.kv_len, 0), a.k, stridesOf(a.k_strides), a.v,
                   stridesOf(a.v_strides)},
                  {a.present_k, stridesOf(a.present_k_strides), a.present_v,
                   stridesOf(a.present_v_strides)}));
}

extern "C" void
kiln_ukernel_paged_attention(const kiln_paged_attention_params_t *params) {
  using namespace kiln::rt;
  const kiln_paged_attention_params_t &a = *params;
  if (a.batch <= 0 || a.kv_heads <= 0)
    return;
  // The engine's tables are inputs: checked before anything with a
  // destructor exists, since the trap jumps over this frame.
  for (int64_t b = 0; b < a.batch; ++b) {
    const int64_t length = a.past_lengths[b];
    if (length < 0 || length > a.past_width)
      kiln_rt_trap("kiln.paged_attention: a past length is outside [0, the "
                   "padded past's width]");
    const int64_t blocks = (length + a.block_size - 1) / a.block_size;
    if (blocks > a.block_table_width)
      kiln_rt_trap("kiln.paged_attention: a block table is too narrow for its "
                   "past length");
    for (int64_t i = 0; i < blocks; ++i) {
      const int64_t block = a.block_tables[b * a.block_table_stride + i];
      if (block < 0 || block >= a.num_blocks)
        kiln_rt_trap("kiln.paged_attention: a block table names a block "
                     "outside the cache");
    }
  }
  if (a.kv_cache_dtype != KILN_DTYPE_F32 && a.kv_cache_dtype != KILN_DTYPE_F16 &&
      a.kv_cache_dtype != KILN_DTYPE_BF16)
    kiln_rt_trap("kiln.paged_attention: the cache's dtype is not f32, f16 or bf16");
  // The new rows as the tiles read them (freshRows); this thread's, since
  // the tiles' own scratch is threadScratch.
  thread_local std::vector<float> freshStorage;
  const PagedPast paged = {a.kv_cache,
                           static_cast<kiln_dtype_t>(a.kv_cache_dtype),
                           a.num_layers,
                           a.layer,
                           a.block_size,
                           a.block_tables,
                           a.block_table_stride,
                           a.past_lengths,
                           a.past_width};
  Problem problem = problemOf(a, a.head_dim, {0, nullptr, {}, nullptr, {}},
                              freshRows(a, freshStorage), {nullptr, {}, nullptr, {}});
  problem.paged = &paged;
  solve(problem);
}
