//===- GemmAvx2.cpp - AVX2+FMA SGEMM microkernel --------------------------===//
//
// Compiled for AVX2 and FMA through a target attribute, so the file needs no
// special flags; Gemm.cpp only calls it on CPUs that support both.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/cpu/Gemm.h"

#if defined(__x86_64__)

#include <algorithm>
#include <cassert>
#include <immintrin.h>
#include <type_traits>

namespace kiln::rt::detail {
namespace {

// 6 rows × 2 ymm of columns: 12 accumulators, 2 vectors of B and a broadcast
// of A fill 15 of the 16 ymm registers.
constexpr int kRows = 6;
constexpr int kColumns = 16;
constexpr int kLanes = 8;

/// All-ones in the lanes below `columns`, for maskload/maskstore.
__attribute__((target("avx2"))) __m256i laneMask(int64_t columns) {
  const int clamped = static_cast<int>(std::clamp<int64_t>(columns, 0, kLanes));
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(clamped),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

__attribute__((target("avx2,fma"))) void
avx2Kernel(int64_t k, const float *packedA, const float *packedB, int64_t ldb,
           float *c, int64_t ldc, int64_t rows, int64_t cols, bool accumulate) {
  __m256 acc[kRows][2];
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r)
    acc[r][0] = acc[r][1] = _mm256_setzero_ps();

#pragma GCC unroll 16
  // C's rows arrive while the k loop runs instead of stalling the stores. A
  // 64-byte row spans one cache line, or two when unaligned.
  for (int r = 0; r < kRows; ++r) {
    if (r >= rows)
      break;
    const char *row = reinterpret_cast<const char *>(c + r * ldc);
    _mm_prefetch(row, _MM_HINT_T0);
    _mm_prefetch(row + kColumns * sizeof(float) - 1, _MM_HINT_T0);
  }

  for (int64_t p = 0; p < k; ++p, packedA += kRows, packedB += ldb) {
    const __m256 b0 = _mm256_loadu_ps(packedB);
    const __m256 b1 = _mm256_loadu_ps(packedB + kLanes);
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) {
      const __m256 a = _mm256_broadcast_ss(packedA + r);
      acc[r][0] = _mm256_fmadd_ps(a, b0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(a, b1, acc[r][1]);
    }
  }

  const __m256i mask0 = laneMask(cols), mask1 = laneMask(cols - kLanes);
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) {
    if (r >= rows)
      break;
    float *row = c + r * ldc;
    // Masked stores are slow on some AMD cores; full tiles avoid them.
    if (cols == kColumns) {
      if (accumulate) {
        acc[r][0] = _mm256_add_ps(acc[r][0], _mm256_loadu_ps(row));
        acc[r][1] = _mm256_add_ps(acc[r][1], _mm256_loadu_ps(row + kLanes));
      }
      _mm256_storeu_ps(row, acc[r][0]);
      _mm256_storeu_ps(row + kLanes, acc[r][1]);
      continue;
    }
    if (accumulate) {
      acc[r][0] = _mm256_add_ps(acc[r][0], _mm256_maskload_ps(row, mask0));
      acc[r][1] =
          _mm256_add_ps(acc[r][1], _mm256_maskload_ps(row + kLanes, mask1));
    }
    _mm256_maskstore_ps(row, mask0, acc[r][0]);
    _mm256_maskstore_ps(row + kLanes, mask1, acc[r][1]);
  }
}

// 4 rows × 2 ymm of columns: 8 accumulators, 2 vectors of B and a broadcast
// of A.
constexpr int kDirectVectors = 2;
constexpr int kDirectColumns = kDirectVectors * kLanes;

/// 8 floats at `from`: a plain load for a full strip, else the lanes of
/// `mask` (masked loads are slow on some AMD cores).
__attribute__((target("avx2"), always_inline)) inline __m256
loadLanes(const float *from, bool full, __m256i mask) {
  return full ? _mm256_loadu_ps(from) : _mm256_maskload_ps(from, mask);
}

/// A strip of an f32 B: rows ldb apart.
struct FloatStrip {
  const float *b;
  int64_t ldb;
};

/// Rows of an f32 B, ldb apart: all lanes of a full strip, else those of
/// `mask`.
struct FloatRows {
  const float *b;
  int64_t ldb;
  bool full;
  const __m256i (&mask)[kDirectVectors];

  __attribute__((target("avx2"), always_inline)) void
  load(int64_t p, __m256 (&row)[kDirectVectors]) const {
    for (int q = 0; q < kDirectVectors; ++q)
      row[q] = loadLanes(b + p * ldb + q * kLanes, full, mask[q]);
  }
};

/// 8 int8 values at `from`, sign-extended and converted to f32.
__attribute__((target("avx2"), always_inline)) inline __m256
int8ToFloats(const uint8_t *from) {
  return _mm256_cvtepi32_ps(
      _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i *>(from))));
}

/// Columns [lane, lane + 8) of a Uint4 panel row (lane a multiple of 8),
/// converted to f32: the low or high 4 bits of 8 bytes.
__attribute__((target("avx2"), always_inline)) inline __m256
uint4ToFloats(const uint8_t *row, int64_t lane) {
  constexpr int64_t half = kWeightPanelWidth / 2;
  const __m256i bytes = _mm256_cvtepu8_epi32(
      _mm_loadl_epi64(reinterpret_cast<const __m128i *>(row + lane % half)));
  const __m256i values =
      _mm256_and_si256(_mm256_srl_epi32(bytes, _mm_cvtsi64_si128(lane / half * 4)),
                       _mm256_set1_epi32(0xF));
  return _mm256_cvtepi32_ps(values);
}

/// Columns [lane, lane + 8) of row `values` of a QuantizedStrip in
/// `format`, converted to f32 and multiplied back by their group's
/// `scale` (+ `offset`, −zero point · scale, for Uint4).
__attribute__((target("avx2,fma"), always_inline)) inline __m256
quantizedToFloats(QuantizedFormat format, const uint8_t *values, int64_t lane,
                  __m256 scale, __m256 offset) {
  if (format == QuantizedFormat::Int8)
    return _mm256_mul_ps(int8ToFloats(values + lane), scale);
  return _mm256_fmadd_ps(uint4ToFloats(values, lane), scale, offset);
}

/// The scales and offsets (see quantizedToFloats) of 8 columns of a group
/// from `lane`.
__attribute__((target("avx2"), always_inline)) inline void
loadGroupScales(const QuantizedGroups &groups, int64_t lane, __m256 &scale,
                __m256 &offset) {
  scale = _mm256_loadu_ps(groups.scales + lane);
  offset = _mm256_setzero_ps();
  if (groups.zeroPoints) {
    const __m256 zeroPoint = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(
        _mm_loadl_epi64(reinterpret_cast<const __m128i *>(groups.zeroPoints + lane))));
    offset = _mm256_sub_ps(offset, _mm256_mul_ps(zeroPoint, scale));
  }
}

/// Rows of a QuantizedStrip within one group, converted and multiplied
/// back in registers. Every lane of a panel is readable, so no load is
/// masked.
template <QuantizedFormat Format> struct QuantizedGroupRows {
  const uint8_t *row; // the strip's row 0
  int64_t lane;
  __m256 scale[kDirectVectors], offset[kDirectVectors];

  __attribute__((target("avx2,fma"), always_inline)) void
  load(int64_t p, __m256 (&vectors)[kDirectVectors]) const {
    for (int q = 0; q < kDirectVectors; ++q)
      vectors[q] = quantizedToFloats(Format, row + p * panelRowBytes(Format),
                                     lane + q * kLanes, scale[q], offset[q]);
  }
};

/// acc[r] += A[r, p] · B's row p for p in [begin, end).
template <int Rows, typename BRows>
__attribute__((target("avx2,fma"), always_inline)) inline void
avx2DirectAccumulate(const float *a, int64_t lda, int64_t begin, int64_t end,
                     const BRows &b, __m256 (&acc)[Rows][kDirectVectors]) {
  for (int64_t p = begin; p < end; ++p) {
    __m256 row[kDirectVectors];
    b.load(p, row);
    for (int r = 0; r < Rows; ++r) {
      const __m256 scalar = _mm256_broadcast_ss(a + r * lda + p);
      for (int q = 0; q < kDirectVectors; ++q)
        acc[r][q] = _mm256_fmadd_ps(scalar, row[q], acc[r][q]);
    }
  }
}

/// acc[r] += A[r, :k] · B for B a QuantizedStrip in `Format`, one group of
/// rows (one set of scales) at a time.
template <int Rows, QuantizedFormat Format>
__attribute__((target("avx2,fma"), always_inline)) inline void
avx2AccumulateGroups(int64_t k, const float *a, int64_t lda,
                     const QuantizedStrip &b, __m256 (&acc)[Rows][kDirectVectors]) {
  QuantizedGroupRows<Format> rows{b.row, b.lane, {}, {}};
  for (QuantizedGroups groups{b, k}; groups.next();) {
    for (int q = 0; q < kDirectVectors; ++q)
      loadGroupScales(groups, q * kLanes, rows.scale[q], rows.offset[q]);
    avx2DirectAccumulate<Rows>(a, lda, groups.begin, groups.end, rows, acc);
  }
}

/// The product for B a FloatStrip or a QuantizedStrip.
template <int Rows, typename Strip>
__attribute__((target("avx2,fma"), always_inline)) inline void
avx2DirectRows(const DirectProduct &d, const Strip &b) {
  const bool full = d.cols == kDirectColumns;
  __m256i mask[kDirectVectors];
  __m256 acc[Rows][kDirectVectors];
  for (int q = 0; q < kDirectVectors; ++q) {
    mask[q] = laneMask(d.cols - q * kLanes);
    for (int r = 0; r < Rows; ++r)
      acc[r][q] = _mm256_setzero_ps();
  }
  if constexpr (std::is_same_v<Strip, FloatStrip>) {
    avx2DirectAccumulate<Rows>(d.a, d.lda, 0, d.k, FloatRows{b.b, b.ldb, full, mask},
                               acc);
  } else {
    if (b.format == QuantizedFormat::Int8)
      avx2AccumulateGroups<Rows, QuantizedFormat::Int8>(d.k, d.a, d.lda, b, acc);
    else
      avx2AccumulateGroups<Rows, QuantizedFormat::Uint4>(d.k, d.a, d.lda, b, acc);
  }
  for (int r = 0; r < Rows; ++r)
    for (int q = 0; q < kDirectVectors; ++q) {
      float *out = d.c + r * d.ldc + q * kLanes;
      if (d.accumulate)
        acc[r][q] = _mm256_add_ps(acc[r][q], loadLanes(out, full, mask[q]));
      if (full)
        _mm256_storeu_ps(out, acc[r][q]);
      else
        _mm256_maskstore_ps(out, mask[q], acc[r][q]);
    }
}

/// avx2DirectRows for 1 to 4 rows.
template <typename Strip>
__attribute__((target("avx2,fma"), always_inline)) inline void
avx2DirectStrip(const DirectProduct &d, const Strip &b) {
  switch (d.rows) {
  case 1:
    return avx2DirectRows<1>(d, b);
  case 2:
    return avx2DirectRows<2>(d, b);
  case 3:
    return avx2DirectRows<3>(d, b);
  default:
    return avx2DirectRows<4>(d, b);
  }
}

__attribute__((target("avx2,fma"))) void
avx2Direct(const DirectProduct &d, const float *b, int64_t ldb,
           const CarriedSums &carried) {
  assert(!carried.sums && "AVX2's direct products do not take turns");
  avx2DirectStrip(d, FloatStrip{b, ldb});
}

__attribute__((target("avx2,fma"))) void
avx2DirectQuantized(const DirectProduct &d, const QuantizedStrip &b) {
  avx2DirectStrip(d, b);
}

__attribute__((target("avx2,fma"))) void
avx2Dequantize(const QuantizedStrip &b, int64_t depth, int64_t cols,
               float *out) {
  const int64_t rowBytes = panelRowBytes(b.format);
  for (QuantizedGroups groups{b, depth}; groups.next();)
    for (int64_t q = 0; q < cols; q += kLanes) {
      __m256 scale, offset;
      loadGroupScales(groups, q, scale, offset);
      for (int64_t row = groups.begin; row < groups.end; ++row)
        _mm256_storeu_ps(out + row * cols + q,
                         quantizedToFloats(b.format, b.row + row * rowBytes,
                                           b.lane + q, scale, offset));
    }
}

static_assert(kWeightPanelWidth % kColumns == 0 &&
                  kWeightPanelWidth % kDirectColumns == 0,
              "a strip must lie inside one panel of a packed weight");
static_assert(kDirectRows == 4, "avx2Direct handles 1 to 4 rows");

} // namespace

// A 256×128 panel of B (128 KB) fits in the 256 KB L2 of the smallest AVX2
// cores with room for the C rows and A strips (6 KB each) passing through.
// Direct products take no turns: from 8 rows on AVX2's are bound by their
// multiply-adds, and the turns made them slower (8 x 131072 x 1024 streamed
// B at 13.6 GB/s with them, 16.7 without; kiln-gemm-bench, 2 threads).
const GemmMicrokernel avx2Microkernel{avx2Kernel, kRows,      kColumns,
                                      /*kc=*/256, /*mc=*/960,
                                      /*nc=*/128, avx2Direct, kDirectColumns,
                                      avx2DirectQuantized, avx2Dequantize,
                                      /*mostRowsTakingTurns=*/0};

} // namespace kiln::rt::detail

#endif // defined(__x86_64__)
