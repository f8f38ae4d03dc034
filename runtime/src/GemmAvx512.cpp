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

// 4 rows × 4 zmm of columns: 16 accumulators, and 4 vectors of B loaded once
// per step of k for every row.
constexpr int kDirectVectors = 4;
constexpr int kDirectColumns = kDirectVectors * kLanes;

template <int Rows>
__attribute__((target("avx512f"), always_inline)) inline void
avx512DirectRows(int64_t k, const float *a, int64_t lda, const float *b,
                 int64_t ldb, float *c, int64_t ldc, int64_t cols,
                 bool accumulate) {
  __mmask16 mask[kDirectVectors];
  __m512 acc[Rows][kDirectVectors];
  for (int q = 0; q < kDirectVectors; ++q) {
    mask[q] = laneMask(cols - q * kLanes);
    for (int r = 0; r < Rows; ++r)
      acc[r][q] = _mm512_setzero_ps();
  }
  for (int64_t p = 0; p < k; ++p, b += ldb) {
    __m512 row[kDirectVectors];
    for (int q = 0; q < kDirectVectors; ++q)
      row[q] = _mm512_maskz_loadu_ps(mask[q], b + q * kLanes);
    for (int r = 0; r < Rows; ++r) {
      const __m512 scalar = _mm512_set1_ps(a[r * lda + p]);
      for (int q = 0; q < kDirectVectors; ++q)
        acc[r][q] = _mm512_fmadd_ps(scalar, row[q], acc[r][q]);
    }
  }
  for (int r = 0; r < Rows; ++r)
    for (int q = 0; q < kDirectVectors; ++q) {
      float *out = c + r * ldc + q * kLanes;
      if (accumulate)
        acc[r][q] =
            _mm512_add_ps(acc[r][q], _mm512_maskz_loadu_ps(mask[q], out));
      _mm512_mask_storeu_ps(out, mask[q], acc[r][q]);
    }
}

__attribute__((target("avx512f"))) void
avx512Direct(int64_t k, const float *a, int64_t lda, const float *b,
             int64_t ldb, float *c, int64_t ldc, int64_t rows, int64_t cols,
             bool accumulate) {
  switch (rows) {
  case 1:
    return avx512DirectRows<1>(k, a, lda, b, ldb, c, ldc, cols, accumulate);
  case 2:
    return avx512DirectRows<2>(k, a, lda, b, ldb, c, ldc, cols, accumulate);
  case 3:
    return avx512DirectRows<3>(k, a, lda, b, ldb, c, ldc, cols, accumulate);
  default:
    return avx512DirectRows<4>(k, a, lda, b, ldb, c, ldc, cols, accumulate);
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
