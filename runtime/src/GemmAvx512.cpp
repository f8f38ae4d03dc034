//===- GemmAvx512.cpp - AVX-512F SGEMM microkernel ------------------------===//
//
// Compiled for AVX-512F through a target attribute, so the file needs no
// special flags; Gemm.cpp only calls it on CPUs that support it.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/Gemm.h"

#if defined(__x86_64__)

#include <immintrin.h>

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

/// acc[r] += A[r, p] · B's row p, for the Rows rows.
template <int Rows, bool Masked>
__attribute__((target("avx512f"), always_inline)) inline void
directStep(const float *a, int64_t lda, int64_t p, const float *bRow,
           const __mmask16 (&mask)[kDirectVectors],
           __m512 (&acc)[Rows][kDirectVectors]) {
  __m512 vectors[kDirectVectors];
  for (int q = 0; q < kDirectVectors; ++q)
    vectors[q] = loadStripVector<Masked>(bRow + q * kLanes, mask[q]);
  for (int r = 0; r < Rows; ++r) {
    const __m512 scalar = _mm512_set1_ps(a[r * lda + p]);
    for (int q = 0; q < kDirectVectors; ++q)
      acc[r][q] = _mm512_fmadd_ps(scalar, vectors[q], acc[r][q]);
  }
}

/// C[0:Rows, 0:cols] (+)= A·B over k, B rows ldb apart. Masked is false when
/// cols is the whole strip: a masked load needs its mask in a k register,
/// and GCC reloads all four masks on every step of k, which then waits on
/// the one port that writes them instead of on the FMAs.
template <int Rows, bool Masked>
__attribute__((target("avx512f"), always_inline)) inline void
avx512DirectRows(int64_t k, const float *a, int64_t lda, const float *b,
                 int64_t ldb, float *c, int64_t ldc, int64_t cols,
                 bool accumulate) {
  // One row has only kDirectVectors accumulators, each FMA waiting on the
  // last: too few to keep two FMA pipes busy. It sums even and odd steps of
  // k apart and adds them at the end.
  constexpr int Chains = Rows == 1 ? 2 : 1;
  __mmask16 mask[kDirectVectors];
  __m512 acc[Chains][Rows][kDirectVectors];
  for (int q = 0; q < kDirectVectors; ++q) {
    mask[q] = laneMask(cols - q * kLanes);
    for (int chain = 0; chain < Chains; ++chain)
      for (int r = 0; r < Rows; ++r)
        acc[chain][r][q] = _mm512_setzero_ps();
  }
  int64_t p = 0;
  for (; p + Chains <= k; p += Chains, b += Chains * ldb)
    for (int chain = 0; chain < Chains; ++chain)
      directStep<Rows, Masked>(a, lda, p + chain, b + chain * ldb, mask,
                               acc[chain]);
  for (; p < k; ++p, b += ldb)
    directStep<Rows, Masked>(a, lda, p, b, mask, acc[0]);
  for (int r = 0; r < Rows; ++r)
    for (int q = 0; q < kDirectVectors; ++q) {
      for (int chain = 1; chain < Chains; ++chain)
        acc[0][r][q] = _mm512_add_ps(acc[0][r][q], acc[chain][r][q]);
      float *out = c + r * ldc + q * kLanes;
      if (accumulate)
        acc[0][r][q] =
            _mm512_add_ps(acc[0][r][q], loadStripVector<Masked>(out, mask[q]));
      if constexpr (Masked)
        _mm512_mask_storeu_ps(out, mask[q], acc[0][r][q]);
      else
        _mm512_storeu_ps(out, acc[0][r][q]);
    }
}

/// avx512DirectRows for a whole strip of 64 columns or a partial one.
template <int Rows>
__attribute__((target("avx512f"), always_inline)) inline void
avx512DirectStrip(int64_t k, const float *a, int64_t lda, const float *b,
                  int64_t ldb, float *c, int64_t ldc, int64_t cols,
                  bool accumulate) {
  if (cols == kDirectColumns)
    avx512DirectRows<Rows, false>(k, a, lda, b, ldb, c, ldc, cols, accumulate);
  else
    avx512DirectRows<Rows, true>(k, a, lda, b, ldb, c, ldc, cols, accumulate);
}

__attribute__((target("avx512f"))) void
avx512Direct(int64_t k, const float *a, int64_t lda, const float *b,
             int64_t ldb, float *c, int64_t ldc, int64_t rows, int64_t cols,
             bool accumulate) {
  switch (rows) {
  case 1:
    return avx512DirectStrip<1>(k, a, lda, b, ldb, c, ldc, cols, accumulate);
  case 2:
    return avx512DirectStrip<2>(k, a, lda, b, ldb, c, ldc, cols, accumulate);
  case 3:
    return avx512DirectStrip<3>(k, a, lda, b, ldb, c, ldc, cols, accumulate);
  default:
    return avx512DirectStrip<4>(k, a, lda, b, ldb, c, ldc, cols, accumulate);
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
    /*nc=*/256,   avx512Direct, kDirectColumns};

} // namespace kiln::rt::detail

#endif // defined(__x86_64__)
