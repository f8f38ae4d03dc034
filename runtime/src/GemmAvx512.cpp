//===- GemmAvx512.cpp - AVX-512F SGEMM microkernel ------------------------===//
//
// Compiled for AVX-512F through a target attribute, so the file needs no
// special flags; Gemm.cpp only calls it on CPUs that support it.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/Gemm.h"

#if defined(__x86_64__)

#include <algorithm>
#include <immintrin.h>
#include <type_traits>

// GCC 12's conversion intrinsics pass _mm512_undefined_*() as the unused
// merge source, which -Wmaybe-uninitialized reports once they are inlined.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace kiln::rt::detail {
namespace {

// 12 rows × 2 zmm of columns: 24 accumulators hide the FMA latency of two FMA
// pipes, and each step of k loads 2 vectors of B for 24 FMAs.
constexpr int kRows = 12;
constexpr int kColumns = 32;
constexpr int kLanes = 16;

__mmask16 laneMask(int64_t columns) {
  if (columns >= kLanes)
    return 0xFFFF;
  return columns <= 0 ? 0 : static_cast<__mmask16>((1u << columns) - 1);
}

__attribute__((target("avx512f"))) void
avx512Kernel(int64_t k, const float *packedA, const float *packedB, int64_t ldb,
             float *c, int64_t ldc, int64_t rows, int64_t cols,
             bool accumulate) {
  __m512 acc[kRows][2];
#pragma GCC unroll 16
  for (int r = 0; r < kRows; ++r)
    acc[r][0] = acc[r][1] = _mm512_setzero_ps();

#pragma GCC unroll 16
  // C's rows arrive while the k loop runs instead of stalling the stores. A
  // 128-byte row spans two cache lines, or three when unaligned.
  for (int r = 0; r < kRows; ++r) {
    if (r >= rows)
      break;
    const char *row = reinterpret_cast<const char *>(c + r * ldc);
    _mm_prefetch(row, _MM_HINT_T0);
    _mm_prefetch(row + 64, _MM_HINT_T0);
    _mm_prefetch(row + kColumns * sizeof(float) - 1, _MM_HINT_T0);
  }

  for (int64_t p = 0; p < k; ++p, packedA += kRows, packedB += ldb) {
    const __m512 b0 = _mm512_loadu_ps(packedB);
    const __m512 b1 = _mm512_loadu_ps(packedB + kLanes);
#pragma GCC unroll 16
    for (int r = 0; r < kRows; ++r) {
      const __m512 a = _mm512_set1_ps(packedA[r]);
      acc[r][0] = _mm512_fmadd_ps(a, b0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(a, b1, acc[r][1]);
    }
  }

  const __mmask16 mask0 = laneMask(cols), mask1 = laneMask(cols - kLanes);
#pragma GCC unroll 16
  for (int r = 0; r < kRows; ++r) {
    if (r >= rows)
      break;
    float *row = c + r * ldc;
    if (accumulate) {
      acc[r][0] = _mm512_add_ps(acc[r][0], _mm512_maskz_loadu_ps(mask0, row));
      acc[r][1] =
          _mm512_add_ps(acc[r][1], _mm512_maskz_loadu_ps(mask1, row + kLanes));
    }
    _mm512_mask_storeu_ps(row, mask0, acc[r][0]);
    _mm512_mask_storeu_ps(row + kLanes, mask1, acc[r][1]);
  }
}

// Up to 4 rows × 4 zmm of columns: 16 accumulators at 4 rows, and 4 vectors
// of B loaded once per step of k for every row.
constexpr int kDirectVectors = 4;
constexpr int kDirectColumns = kDirectVectors * kLanes;

/// One vector of a row of B: all 16 lanes, or those of `mask`.
template <bool Masked>
__attribute__((target("avx512f"), always_inline)) inline __m512
loadStripVector(const float *from, __mmask16 mask) {
  return Masked ? _mm512_maskz_loadu_ps(mask, from) : _mm512_loadu_ps(from);
}

/// Rows of an f32 B, ldb apart: a strip of a row-major or packed weight.
/// Masked is false when the strip is whole: a masked load needs its mask in
/// a k register, and GCC reloads all four masks on every step of k, which
/// then waits on the one port that writes them instead of on the FMAs.
template <bool Masked> struct FloatRows {
  const float *b;
  int64_t ldb;
  const __mmask16 (&mask)[kDirectVectors];

  __attribute__((target("avx512f"), always_inline)) void
  load(int64_t p, __m512 (&vectors)[kDirectVectors]) const {
    for (int q = 0; q < kDirectVectors; ++q)
      vectors[q] = loadStripVector<Masked>(b + p * ldb + q * kLanes, mask[q]);
  }
};

/// 16 int8 values at `from`, sign-extended and converted to f32.
__attribute__((target("avx512f"), always_inline)) inline __m512
int8ToFloats(const int8_t *from) {
  return _mm512_cvtepi32_ps(
      _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(from))));
}

/// Rows of an Int8Strip within one group: int8 values, kWeightPanelWidth
/// apart, sign-extended and converted in registers, and with Scaled
/// multiplied by the group's scales. Every lane of a panel is readable, so
/// no load is masked.
template <bool Scaled> struct Int8GroupRows {
  const int8_t *values;
  __m512 scale[kDirectVectors];

  __attribute__((target("avx512f"), always_inline)) void
  load(int64_t p, __m512 (&vectors)[kDirectVectors]) const {
    for (int q = 0; q < kDirectVectors; ++q) {
      vectors[q] = int8ToFloats(values + p * kWeightPanelWidth + q * kLanes);
      if constexpr (Scaled)
        vectors[q] = _mm512_mul_ps(vectors[q], scale[q]);
    }
  }
};

/// The accumulators of up to 4 rows × 4 zmm of C. One row has only
/// kDirectVectors of them, each FMA waiting on the last: too few to keep two
/// FMA pipes busy, so it sums even and odd steps of k apart and adds them at
/// the end.
template <int Rows, bool Masked> struct DirectTile {
  static constexpr int Chains = Rows == 1 ? 2 : 1;
  __mmask16 mask[kDirectVectors];
  __m512 acc[Chains][Rows][kDirectVectors];

  __attribute__((target("avx512f"), always_inline)) explicit DirectTile(
      int64_t cols) {
    for (int q = 0; q < kDirectVectors; ++q) {
      mask[q] = laneMask(cols - q * kLanes);
      for (int chain = 0; chain < Chains; ++chain)
        for (int r = 0; r < Rows; ++r)
          acc[chain][r][q] = _mm512_setzero_ps();
    }
  }

  /// acc[r] += A[r, p] · B's row p for p in [begin, end), for the Rows rows.
  template <typename BRows>
  __attribute__((target("avx512f"), always_inline)) void
  accumulate(const float *a, int64_t lda, int64_t begin, int64_t end,
             const BRows &b) {
    int64_t p = begin;
    for (; p + Chains <= end; p += Chains)
      for (int chain = 0; chain < Chains; ++chain)
        step(a, lda, p + chain, b, acc[chain]);
    for (; p < end; ++p)
      step(a, lda, p, b, acc[0]);
  }

  template <typename BRows>
  __attribute__((target("avx512f"), always_inline)) static void
  step(const float *a, int64_t lda, int64_t p, const BRows &b,
       __m512 (&sums)[Rows][kDirectVectors]) {
    __m512 vectors[kDirectVectors];
    b.load(p, vectors);
    for (int r = 0; r < Rows; ++r) {
      const __m512 scalar = _mm512_set1_ps(a[r * lda + p]);
      for (int q = 0; q < kDirectVectors; ++q)
        sums[r][q] = _mm512_fmadd_ps(scalar, vectors[q], sums[r][q]);
    }
  }

  /// C[0:Rows, 0:cols] = the sums (+ C with `add`).
  __attribute__((target("avx512f"), always_inline)) void
  store(float *c, int64_t ldc, bool add) {
    for (int r = 0; r < Rows; ++r)
      for (int q = 0; q < kDirectVectors; ++q) {
        for (int chain = 1; chain < Chains; ++chain)
          acc[0][r][q] = _mm512_add_ps(acc[0][r][q], acc[chain][r][q]);
        float *out = c + r * ldc + q * kLanes;
        if (add)
          acc[0][r][q] = _mm512_add_ps(acc[0][r][q],
                                       loadStripVector<Masked>(out, mask[q]));
        if constexpr (Masked)
          _mm512_mask_storeu_ps(out, mask[q], acc[0][r][q]);
        else
          _mm512_storeu_ps(out, acc[0][r][q]);
      }
  }
};

/// A strip of an f32 B: rows ldb apart.
struct FloatStrip {
  const float *b;
  int64_t ldb;
};

/// C[0:Rows, 0:cols] (+)= A·B over k for B a FloatStrip or an Int8Strip,
/// the latter one group of rows (one set of scales) at a time.
template <int Rows, bool Masked, typename Strip>
__attribute__((target("avx512f"), always_inline)) inline void
avx512DirectRows(int64_t k, const float *a, int64_t lda, const Strip &b,
                 float *c, int64_t ldc, int64_t cols, bool accumulate) {
  DirectTile<Rows, Masked> tile(cols);
  if constexpr (std::is_same_v<Strip, FloatStrip>) {
    tile.accumulate(a, lda, 0, k, FloatRows<Masked>{b.b, b.ldb, tile.mask});
  } else {
    // One or two rows do too few FMAs per converted value to hide a
    // multiply by the scale, which then bounds the kernel below the memory
    // roofline: they sum a group's products of the raw values and scale
    // the sums once at the group's end. More rows would run out of
    // registers for the group's sums, and hide the multiply anyway.
    constexpr bool kScaleSums = Rows <= 2;
    for (Int8Groups groups{b, k}; groups.next();) {
      Int8GroupRows<!kScaleSums> rows{b.values, {}};
      for (int q = 0; q < kDirectVectors; ++q)
        rows.scale[q] = _mm512_loadu_ps(groups.scales + q * kLanes);
      if constexpr (kScaleSums) {
        DirectTile<Rows, Masked> group(cols);
        group.accumulate(a, lda, groups.begin, groups.end, rows);
        for (int chain = 0; chain < tile.Chains; ++chain)
          for (int r = 0; r < Rows; ++r)
            for (int q = 0; q < kDirectVectors; ++q)
              tile.acc[0][r][q] = _mm512_fmadd_ps(group.acc[chain][r][q],
                                                  rows.scale[q], tile.acc[0][r][q]);
      } else {
        tile.accumulate(a, lda, groups.begin, groups.end, rows);
      }
    }
  }
  tile.store(c, ldc, accumulate);
}

/// avx512DirectRows for 1 to 4 rows of a whole strip of 64 columns or a
/// partial one.
template <typename Strip>
__attribute__((target("avx512f"), always_inline)) inline void
avx512DirectStrip(int64_t k, const float *a, int64_t lda, const Strip &b,
                  float *c, int64_t ldc, int64_t rows, int64_t cols,
                  bool accumulate) {
  const bool whole = cols == kDirectColumns;
#define KILN_DIRECT_ROWS(R)                                                    \
  return whole ? avx512DirectRows<R, false>(k, a, lda, b, c, ldc, cols,        \
                                            accumulate)                        \
               : avx512DirectRows<R, true>(k, a, lda, b, c, ldc, cols,         \
                                           accumulate)
  switch (rows) {
  case 1:
    KILN_DIRECT_ROWS(1);
  case 2:
    KILN_DIRECT_ROWS(2);
  case 3:
    KILN_DIRECT_ROWS(3);
  default:
    KILN_DIRECT_ROWS(4);
  }
#undef KILN_DIRECT_ROWS
}

__attribute__((target("avx512f"))) void
avx512Direct(int64_t k, const float *a, int64_t lda, const float *b,
             int64_t ldb, float *c, int64_t ldc, int64_t rows, int64_t cols,
             bool accumulate) {
  avx512DirectStrip(k, a, lda, FloatStrip{b, ldb}, c, ldc, rows, cols,
                    accumulate);
}

__attribute__((target("avx512f"))) void
avx512DirectInt8(int64_t k, const float *a, int64_t lda, const Int8Strip &b,
                 float *c, int64_t ldc, int64_t rows, int64_t cols,
                 bool accumulate) {
  avx512DirectStrip(k, a, lda, b, c, ldc, rows, cols, accumulate);
}

__attribute__((target("avx512f"))) void
avx512DequantizeInt8(const Int8Strip &b, int64_t depth, int64_t cols,
                     float *out) {
  for (Int8Groups groups{b, depth}; groups.next();)
    for (int64_t q = 0; q < cols; q += kLanes) {
      const __m512 scale = _mm512_loadu_ps(groups.scales + q);
      for (int64_t row = groups.begin; row < groups.end; ++row)
        _mm512_storeu_ps(out + row * cols + q,
                         _mm512_mul_ps(int8ToFloats(b.values + row * kWeightPanelWidth + q),
                                       scale));
    }
}

static_assert(kWeightPanelWidth % kColumns == 0 &&
                  kWeightPanelWidth % kDirectColumns == 0,
              "a strip must lie inside one panel of a packed weight");
static_assert(kDirectRows == 4, "avx512Direct handles 1 to 4 rows");

} // namespace

// A 384×256 panel of B (384 KB) fits in the 1 MB and larger L2 of AVX-512
// cores with room for the C rows and A strips (18 KB each) passing through;
// kc = 384 keeps the passes over C, one per kc of depth, few.
const GemmMicrokernel avx512Microkernel{
    avx512Kernel, kRows,        kColumns,      /*kc=*/384, /*mc=*/960,
    /*nc=*/256,   avx512Direct, kDirectColumns, avx512DirectInt8,
    avx512DequantizeInt8};

} // namespace kiln::rt::detail

#endif // defined(__x86_64__)
