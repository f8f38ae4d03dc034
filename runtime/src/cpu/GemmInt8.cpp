//===- GemmInt8.cpp - Products of uint8-quantized rows by int8 weights ----===//
//
// W8A8 (gemmInt8): A is quantized to uint8 row by row (each row by its own
// range, or all by one given scale and zero point) into a scratch buffer,
// each tile of C is summed in int32 by the ISA's microkernel, dequantized in
// registers, and finished by the GEMM epilogue while it is in cache.
//
// The microkernels: AVX-512 VNNI's VPDPBUSD does 64 products of uint8 by
// int8 per instruction, four times an f32 FMA's 16. AVX2's VPMADDUBSW also
// multiplies uint8 by int8, but it saturates its sums of two products at 16
// bits, and 2 · 255 · 127 does not fit: results would depend on the values.
// So AVX2 widens both to 16 bits and uses VPMADDWD, which is exact, and
// every ISA gives the same integers.
//
//===----------------------------------------------------------------------===//
#include "kiln/abi/cpu_features.h"
#include "runtime/src/cpu/Gemm.h"
#include "runtime/src/cpu/VectorMath.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

// GCC 12's AVX-512 intrinsics pass _mm512_undefined_*() as unused sources,
// which -Wmaybe-uninitialized reports once they are inlined.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace kiln::rt {
namespace {

/// Bytes of a quad row of an Int8Weight's panel: 4 rows of W columns.
constexpr int64_t kQuadRowBytes = kInt8RowQuad * kWeightPanelWidth;

//===----------------------------------------------------------------------===//
// Quantizing rows of A
//===----------------------------------------------------------------------===//

/// Widens [low, high] to hold the k floats at x (NaN is skipped).
template <int W>
KILN_ALWAYS_INLINE void widenRange(const float *x, int64_t k, float &low, float &high) {
  using F = typename Vec<W>::F;
  F lowest = F{} + low, highest = F{} + high;
  int64_t j = 0;
  for (; j + W <= k; j += W) {
    const F v = load<W>(x + j);
    lowest = v < lowest ? v : lowest;
    highest = v > highest ? v : highest;
  }
  for (int lane = 0; lane < W; ++lane) {
    low = std::min(low, lowest[lane]);
    high = std::max(high, highest[lane]);
  }
  for (int64_t t = j; t < k; ++t) {
    low = std::min(low, x[t]);
    high = std::max(high, x[t]);
  }
}

constexpr float kUint8Max = 255.0f;

/// The scale and zero point of the range [low, high] (which holds 0): 255
/// steps of scale, and the zero point where 0 lands.
void rangeQuantization(float low, float high, float &scale, int32_t &zeroPoint) {
  scale = (high - low) / kUint8Max;
  // A range of zeros is exact with any scale.
  if (!(scale > 0.0f))
    scale = 1.0f;
  zeroPoint = static_cast<int32_t>(std::clamp(std::nearbyint(-low / scale), 0.0f, kUint8Max));
}

/// The k floats at x as uint8, as ONNX's QuantizeLinear computes them:
/// round(x / scale), ties to even, clamped to [−zero point, 255 − zero
/// point], plus the zero point. Rounding adds 1.5 · 2^23, whose ulp is 1,
/// so the sum's low bits hold the rounded value (its low byte, plus the
/// zero point's, is the result).
template <int W>
KILN_ALWAYS_INLINE void quantizeRow(const float *x, int64_t k, uint8_t *out, float scale,
                                    int32_t zeroPoint) {
  using F = typename Vec<W>::F;
  using U = typename Vec<W>::U;
  const float below = -static_cast<float>(zeroPoint);
  const float above = kUint8Max - static_cast<float>(zeroPoint);
  const uint32_t zero = static_cast<uint32_t>(zeroPoint);
  constexpr float kRound = 12582912.0f;
  auto quantize = [&](F v) {
    F y = v / scale;
    // NaN compares false and lands on `below`: the value 0.
    y = y >= below ? y : F{} + below;
    y = y <= above ? y : F{} + above;
    return ((U)(y + kRound) + zero) & 0xFF;
  };
  int64_t j = 0;
  for (; j + W <= k; j += W) {
    const U values = quantize(load<W>(x + j));
    for (int lane = 0; lane < W; ++lane)
      out[j + lane] = static_cast<uint8_t>(values[lane]);
  }
  if (j < k) {
    float tail[W] = {};
    std::memcpy(tail, x + j, (k - j) * sizeof(float));
    const U values = quantize(load<W>(tail));
    for (int64_t lane = 0; lane < k - j; ++lane)
      out[j + lane] = static_cast<uint8_t>(values[lane]);
  }
}

/// One ISA's instances of widenRange and quantizeRow.
struct RowKernels {
  void (*widenRange)(const float *x, int64_t k, float &low, float &high);
  void (*quantize)(const float *x, int64_t k, uint8_t *out, float scale, int32_t zeroPoint);
};

void widenRangeGeneric(const float *x, int64_t k, float &low, float &high) {
  widenRange<4>(x, k, low, high);
}
void quantizeRowGeneric(const float *x, int64_t k, uint8_t *out, float scale,
                        int32_t zeroPoint) {
  quantizeRow<4>(x, k, out, scale, zeroPoint);
}

#if defined(__x86_64__)
__attribute__((target("avx2,fma"))) void widenRangeAvx2(const float *x, int64_t k, float &low,
                                                       float &high) {
  widenRange<8>(x, k, low, high);
}
__attribute__((target("avx2,fma"))) void quantizeRowAvx2(const float *x, int64_t k, uint8_t *out,
                                                        float scale, int32_t zeroPoint) {
  quantizeRow<8>(x, k, out, scale, zeroPoint);
}
__attribute__((target("avx512f,avx512bw"))) void widenRangeAvx512(const float *x, int64_t k,
                                                                 float &low, float &high) {
  widenRange<16>(x, k, low, high);
}
__attribute__((target("avx512f,avx512bw"))) void
quantizeRowAvx512(const float *x, int64_t k, uint8_t *out, float scale, int32_t zeroPoint) {
  quantizeRow<16>(x, k, out, scale, zeroPoint);
}
#endif

//===----------------------------------------------------------------------===//
// Microkernels
//===----------------------------------------------------------------------===//

/// One strip of C for a microkernel: C[0:rows, 0:cols] = (sum over the
/// quads of A's rows · B's strip − z_r · columnSums) · (scale_j · s_r).
struct Int8Tile {
  int64_t quads;               // k / 4
  const uint8_t *a;            // `rows` rows of quantized A, lda bytes apart
  int64_t lda;
  const float *aScales;        // s_r, one per row
  const int32_t *aZeroPoints;  // z_r
  const int8_t *b;             // the strip's first quad row (kQuadRowBytes apart)
  const float *bScales;        // the strip's column scales
  const int32_t *bColumnSums;  // the strip's column sums
  float *c;
  int64_t ldc;
  int64_t rows, cols;
};

struct Int8Microkernel {
  void (*run)(const Int8Tile &tile);
  int64_t mr; // at most this many rows per call
  int64_t nr; // columns per strip: whole from a lane that is a multiple of nr
  const char *name;
};

/// 4 bytes of A as the int32 a 32-bit lane of a quad holds.
KILN_ALWAYS_INLINE int32_t quadAt(const uint8_t *row, int64_t quad) {
  int32_t bytes;
  std::memcpy(&bytes, row + quad * kInt8RowQuad, sizeof bytes);
  return bytes;
}

/// The sum of row r by column j as C holds it: every ISA dequantizes so.
KILN_ALWAYS_INLINE float dequantized(int32_t sum, int32_t zeroPoint,
                                     int32_t columnSum, float columnScale,
                                     float rowScale) {
  return static_cast<float>(sum - zeroPoint * columnSum) *
         (columnScale * rowScale);
}

constexpr int64_t kGenericRows = 4, kGenericColumns = 16;

void genericInt8Kernel(const Int8Tile &t) {
  int32_t sums[kGenericRows][kGenericColumns] = {};
  for (int64_t q = 0; q < t.quads; ++q) {
    const int8_t *quad = t.b + q * kQuadRowBytes;
    for (int64_t r = 0; r < t.rows; ++r) {
      const uint8_t *a = t.a + r * t.lda + q * kInt8RowQuad;
      for (int64_t j = 0; j < t.cols; ++j)
        for (int64_t i = 0; i < kInt8RowQuad; ++i)
          sums[r][j] += int32_t{a[i]} * quad[j * kInt8RowQuad + i];
    }
  }
  for (int64_t r = 0; r < t.rows; ++r)
    for (int64_t j = 0; j < t.cols; ++j)
      t.c[r * t.ldc + j] =
          dequantized(sums[r][j], t.aZeroPoints[r], t.bColumnSums[j],
                      t.bScales[j], t.aScales[r]);
}

#if defined(__x86_64__)

/// AVX2: Rows rows × 8 columns. A quad row of 8 columns is 32 bytes, widened
/// to 16 bits as two vectors of 4 columns; VPMADDWD by the row's 4 bytes
/// (widened and repeated) sums each column's products in pairs, two 32-bit
/// lanes per column, which are added at the end.
constexpr int64_t kAvx2Rows = 4, kAvx2Columns = 8;

template <int Rows>
__attribute__((target("avx2,fma"), always_inline)) inline void
avx2Int8Rows(const Int8Tile &t) {
  __m256i sums[Rows][2];
  #pragma GCC unroll 16
  for (int r = 0; r < Rows; ++r)
    sums[r][0] = sums[r][1] = _mm256_setzero_si256();
  for (int64_t q = 0; q < t.quads; ++q) {
    const __m256i bytes = _mm256_loadu_si256(
        reinterpret_cast<const __m256i *>(t.b + q * kQuadRowBytes));
    const __m256i low = _mm256_cvtepi8_epi16(_mm256_castsi256_si128(bytes));
    const __m256i high = _mm256_cvtepi8_epi16(_mm256_extracti128_si256(bytes, 1));
    #pragma GCC unroll 16
    for (int r = 0; r < Rows; ++r) {
      const __m256i a = _mm256_broadcastq_epi64(
          _mm_cvtepu8_epi16(_mm_cvtsi32_si128(quadAt(t.a + r * t.lda, q))));
      sums[r][0] = _mm256_add_epi32(sums[r][0], _mm256_madd_epi16(a, low));
      sums[r][1] = _mm256_add_epi32(sums[r][1], _mm256_madd_epi16(a, high));
    }
  }
  const __m256i columnSums =
      _mm256_loadu_si256(reinterpret_cast<const __m256i *>(t.bColumnSums));
  const __m256 columnScales = _mm256_loadu_ps(t.bScales);
  #pragma GCC unroll 16
  for (int r = 0; r < Rows; ++r) {
    // Pairs of lanes to columns: hadd gives columns 0 1 4 5 | 2 3 6 7.
    const __m256i sum = _mm256_permute4x64_epi64(
        _mm256_hadd_epi32(sums[r][0], sums[r][1]), 0b11011000);
    const __m256 value = _mm256_mul_ps(
        _mm256_cvtepi32_ps(_mm256_sub_epi32(
            sum, _mm256_mullo_epi32(_mm256_set1_epi32(t.aZeroPoints[r]), columnSums))),
        _mm256_mul_ps(columnScales, _mm256_set1_ps(t.aScales[r])));
    float *out = t.c + r * t.ldc;
    if (t.cols == kAvx2Columns) {
      _mm256_storeu_ps(out, value);
    } else {
      float lanes[kAvx2Columns];
      _mm256_storeu_ps(lanes, value);
      std::copy(lanes, lanes + t.cols, out);
    }
  }
}

__attribute__((target("avx2,fma"))) void avx2Int8Kernel(const Int8Tile &t) {
  switch (t.rows) {
  case 1:
    return avx2Int8Rows<1>(t);
  case 2:
    return avx2Int8Rows<2>(t);
  case 3:
    return avx2Int8Rows<3>(t);
  default:
    return avx2Int8Rows<4>(t);
  }
}

/// AVX-512 VNNI: Rows rows × Vectors zmm of 16 columns, one VPDPBUSD per row
/// and vector for each quad. Products of many rows use 12 × 2 (24
/// accumulators, as the f32 kernel); of few rows (a decode step's), up to 4
/// × 4, so that each row's 4 sums keep the unit busy while the weight
/// streams.
/// sums += the dot products of each 32-bit lane's 4 bytes of `a` (uint8)
/// and `b` (int8). In asm because GCC 12 copies the accumulator of the
/// intrinsic to another register and back around each VPDPBUSD, which
/// took the 12 × 2 kernel from about 80% of the unit's peak to 45%.
__attribute__((target("avx512f,avx512bw,avx512vnni"), always_inline)) inline void
dotBytes(__m512i &sums, __m512i a, __m512i b) {
  asm("vpdpbusd %2, %1, %0" : "+v"(sums) : "v"(a), "v"(b));
}

template <int Rows, int Vectors>
__attribute__((target("avx512f,avx512bw,avx512vnni"), always_inline)) inline void
vnniInt8Rows(const Int8Tile &t) {
  constexpr int kLanes = 16;
  __m512i sums[Rows][Vectors];
  #pragma GCC unroll 16
  for (int r = 0; r < Rows; ++r)
    #pragma GCC unroll 16
    for (int v = 0; v < Vectors; ++v)
      sums[r][v] = _mm512_setzero_si512();
  for (int64_t q = 0; q < t.quads; ++q) {
    __m512i b[Vectors];
    #pragma GCC unroll 16
    for (int v = 0; v < Vectors; ++v)
      b[v] = _mm512_loadu_si512(t.b + q * kQuadRowBytes + v * kLanes * kInt8RowQuad);
    #pragma GCC unroll 16
    for (int r = 0; r < Rows; ++r) {
      const __m512i a = _mm512_set1_epi32(quadAt(t.a + r * t.lda, q));
      #pragma GCC unroll 16
      for (int v = 0; v < Vectors; ++v)
        dotBytes(sums[r][v], a, b[v]);
    }
  }
  __m512i columnSums[Vectors];
  __m512 columnScales[Vectors];
  __mmask16 masks[Vectors];
  #pragma GCC unroll 16
  for (int v = 0; v < Vectors; ++v) {
    columnSums[v] = _mm512_loadu_si512(t.bColumnSums + v * kLanes);
    columnScales[v] = _mm512_loadu_ps(t.bScales + v * kLanes);
    const int64_t cols = std::clamp<int64_t>(t.cols - v * kLanes, 0, kLanes);
    masks[v] = static_cast<__mmask16>((1u << cols) - 1);
  }
  #pragma GCC unroll 16
  for (int r = 0; r < Rows; ++r) {
    const __m512i zeroPoint = _mm512_set1_epi32(t.aZeroPoints[r]);
    const __m512 rowScale = _mm512_set1_ps(t.aScales[r]);
    #pragma GCC unroll 16
    for (int v = 0; v < Vectors; ++v) {
      const __m512 value = _mm512_mul_ps(
          _mm512_cvtepi32_ps(_mm512_sub_epi32(
              sums[r][v], _mm512_mullo_epi32(zeroPoint, columnSums[v]))),
          _mm512_mul_ps(columnScales[v], rowScale));
      _mm512_mask_storeu_ps(t.c + r * t.ldc + v * kLanes, masks[v], value);
    }
  }
}

#define KILN_VNNI_ROWS(R, V)                                                   \
  case R:                                                                      \
    return vnniInt8Rows<R, V>(t)

__attribute__((target("avx512f,avx512bw,avx512vnni"))) void
vnniInt8KernelFew(const Int8Tile &t) {
  switch (t.rows) {
    KILN_VNNI_ROWS(1, 4);
    KILN_VNNI_ROWS(2, 4);
    KILN_VNNI_ROWS(3, 4);
  default:
    return vnniInt8Rows<4, 4>(t);
  }
}

__attribute__((target("avx512f,avx512bw,avx512vnni"))) void
vnniInt8KernelMany(const Int8Tile &t) {
  switch (t.rows) {
    KILN_VNNI_ROWS(1, 2);
    KILN_VNNI_ROWS(2, 2);
    KILN_VNNI_ROWS(3, 2);
    KILN_VNNI_ROWS(4, 2);
    KILN_VNNI_ROWS(5, 2);
    KILN_VNNI_ROWS(6, 2);
    KILN_VNNI_ROWS(7, 2);
    KILN_VNNI_ROWS(8, 2);
    KILN_VNNI_ROWS(9, 2);
    KILN_VNNI_ROWS(10, 2);
    KILN_VNNI_ROWS(11, 2);
  default:
    return vnniInt8Rows<12, 2>(t);
  }
}
#undef KILN_VNNI_ROWS

#endif // defined(__x86_64__)

static_assert(kWeightPanelWidth % kGenericColumns == 0 &&
                  kWeightPanelWidth % 64 == 0,
              "a strip must lie inside one panel of the weight");

/// The rows of a product that make it "few": the decode step's batch.
constexpr int64_t kFewRows = 4;

/// The microkernel and row kernels for a product of `m` rows on the
/// active ISA. VNNI needs more than AVX-512F, so an avx512 ISA on a CPU
/// without it runs the AVX2 kernel.
struct Int8Kernels {
  Int8Microkernel kernel;
  RowKernels rows;
};

Int8Kernels int8KernelsFor(int64_t m) {
#if defined(__x86_64__)
  static const bool vnni =
      hostHasCpuFeature("avx512vnni") && hostHasCpuFeature("avx512bw");
  const GemmIsa isa = activeGemmIsa();
  if (isa == GemmIsa::Avx512 && vnni)
    return {m <= kFewRows
                ? Int8Microkernel{vnniInt8KernelFew, kFewRows, 64, "avx512-vnni"}
                : Int8Microkernel{vnniInt8KernelMany, 12, 32, "avx512-vnni"},
            {widenRangeAvx512, quantizeRowAvx512}};
  if (isa >= GemmIsa::Avx2)
    return {{avx2Int8Kernel, kAvx2Rows, kAvx2Columns, "avx2"},
            {widenRangeAvx2, quantizeRowAvx2}};
#endif
  (void)m;
  return {{genericInt8Kernel, kGenericRows, kGenericColumns, "generic"},
          {widenRangeGeneric, quantizeRowGeneric}};
}

//===----------------------------------------------------------------------===//
// Driver
//===----------------------------------------------------------------------===//

/// An int8 multiply-add costs a quarter of an f32 one (VNNI does 64 where
/// an FMA does 16), which is what threadsWorthUsing counts.
constexpr double kInt8MultiplyAddsPerF32 = 4;
/// Quantized rows of A a strip of B passes over while they stay in L2.
constexpr int64_t kRowBlockBytes = 256 * 1024;

/// Row-quantized A: row i's values at values + i · ld, with its scale and
/// zero point. One per calling thread, grown as needed.
struct QuantizedRows {
  std::vector<uint8_t> values;
  std::vector<float> scales;
  std::vector<int32_t> zeroPoints;
  int64_t ld = 0;
};

} // namespace

void quantizeRowToUint8(const float *x, int64_t k, uint8_t *out, float &scale,
                        int32_t &zeroPoint, bool findRange) {
  const RowKernels rows = int8KernelsFor(1).rows;
  if (findRange) {
    float low = 0.0f, high = 0.0f;
    rows.widenRange(x, k, low, high);
    rangeQuantization(low, high, scale, zeroPoint);
  }
  rows.quantize(x, k, out, scale, zeroPoint);
}

const char *int8GemmIsaName() { return int8KernelsFor(1).kernel.name; }

void gemmInt8(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
              const InputQuantization &input, const Int8Weight &b, float *c,
              int64_t ldc, ThreadPool *pool, const GemmEpilogue &epilogue) {
  if (m <= 0 || n <= 0)
    return;
  const Int8Kernels kernels = int8KernelsFor(m);
  const Int8Microkernel &kernel = kernels.kernel;

  // Every row's scale and zero point: the given ones, the whole input's
  // range's, or (below) each row's own.
  float scale = input.scale;
  int32_t zeroPoint = input.zeroPoint;
  if (input.range == InputQuantization::Range::Tensor) {
    // One pass over A, on the calling thread: it reads m·k floats once,
    // which the product then reads n / 64 times over.
    float low = 0.0f, high = 0.0f;
    for (int64_t i = 0; i < m; ++i)
      kernels.rows.widenRange(a + i * lda, k, low, high);
    rangeQuantization(low, high, scale, zeroPoint);
  }
  thread_local QuantizedRows quantized;
  quantized.ld = std::max<int64_t>(kInt8RowQuad, ceilDiv(k, 64) * 64);
  quantized.values.resize(m * quantized.ld);
  quantized.scales.assign(m, scale);
  quantized.zeroPoints.assign(m, zeroPoint);
  QuantizedRows &rows = quantized; // the workers reach the caller's buffers
  const bool perRow = input.range == InputQuantization::Range::Row;
  auto quantizeRows = [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const float *row = a + i * lda;
      if (perRow) {
        float low = 0.0f, high = 0.0f;
        kernels.rows.widenRange(row, k, low, high);
        rangeQuantization(low, high, rows.scales[i], rows.zeroPoints[i]);
      }
      kernels.rows.quantize(row, k, rows.values.data() + i * rows.ld, rows.scales[i],
                            rows.zeroPoints[i]);
    }
  };
  // A pass over A's floats: split by the bytes it streams, a row a strip.
  detail::splitStripsOverThreads(pool, m, /*multiplyAdds=*/0,
                                 static_cast<double>(m) * k * sizeof(float), quantizeRows);

  const detail::EpilogueRunner finish = detail::epilogueRunnerFor(activeGemmIsa(), epilogue);
  const int64_t strips = ceilDiv(n, kernel.nr);
  // Rows of A quantized, blocked so that a block stays in L2 while every
  // strip of B passes over it.
  const int64_t rowBlock =
      std::max(kernel.mr, kRowBlockBytes / std::max<int64_t>(k, 1) / kernel.mr * kernel.mr);
  auto run = [&](int64_t firstStrip, int64_t lastStrip) {
    for (int64_t i0 = 0; i0 < m; i0 += rowBlock) {
      const int64_t blockRows = std::min(rowBlock, m - i0);
      for (int64_t strip = firstStrip; strip < lastStrip; ++strip) {
        const int64_t j = strip * kernel.nr;
        const int64_t panel = j / kWeightPanelWidth, lane = j % kWeightPanelWidth;
        Int8Tile tile{k / kInt8RowQuad,
                      nullptr,
                      rows.ld,
                      nullptr,
                      nullptr,
                      b.values + panel * b.ld + lane * kInt8RowQuad,
                      b.scales + panel * b.scalesLd + lane,
                      b.columnSums + j,
                      nullptr,
                      ldc,
                      0,
                      std::min(kernel.nr, n - j)};
        for (int64_t i = i0; i < i0 + blockRows; i += kernel.mr) {
          tile.a = rows.values.data() + i * rows.ld;
          tile.aScales = rows.scales.data() + i;
          tile.aZeroPoints = rows.zeroPoints.data() + i;
          tile.c = c + i * ldc + j;
          tile.rows = std::min(kernel.mr, i0 + blockRows - i);
          kernel.run(tile);
        }
        if (finish)
          finish(epilogue, c + i0 * ldc + j, ldc, i0, blockRows, j, tile.cols);
      }
    }
  };
  detail::splitStripsOverThreads(
      pool, strips, static_cast<double>(m) * n * k / kInt8MultiplyAddsPerF32,
      static_cast<double>(n) * k, run);
}

} // namespace kiln::rt
