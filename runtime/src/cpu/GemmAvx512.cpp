//===- GemmAvx512.cpp - AVX-512F SGEMM microkernel ------------------------===//
//
// Compiled for AVX-512F through a target attribute, so the file needs no
// special flags; Gemm.cpp only calls it on CPUs that support it.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/cpu/Gemm.h"

#if defined(__x86_64__)

#include <algorithm>
#include <immintrin.h>

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
/// With Prefetch each row's load also prefetches the row kTurnDepth ahead
/// (see CarriedSums).
template <bool Masked, bool Prefetch> struct FloatRows {
  const float *b;
  int64_t ldb;
  const __mmask16 (&mask)[kDirectVectors];

  __attribute__((target("avx512f"), always_inline)) void
  load(int64_t p, __m512 (&vectors)[kDirectVectors]) const {
    for (int q = 0; q < kDirectVectors; ++q) {
      const float *at = b + p * ldb + q * kLanes;
      if constexpr (Prefetch)
        _mm_prefetch(reinterpret_cast<const char *>(at + kTurnDepth * ldb), _MM_HINT_T0);
      vectors[q] = loadStripVector<Masked>(at, mask[q]);
    }
  }
};

/// 16 int8 values at `from`, sign-extended and converted to f32.
__attribute__((target("avx512f"), always_inline)) inline __m512
int8ToFloats(const uint8_t *from) {
  return _mm512_cvtepi32_ps(
      _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(from))));
}

/// 16 bytes at `from`, zero-extended to 32 bits.
__attribute__((target("avx512f"), always_inline)) inline __m512i
bytesToLanes(const uint8_t *from) {
  return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(from)));
}

/// The low 4 bits of each lane of `lanes` as f32. A permute by the lanes
/// (which reads only their low 4 bits) from the table 0..15 masks and
/// converts in one instruction, where an AND and a conversion take two: a
/// 4-bit weight's product is bound by the work of unpacking it.
__attribute__((target("avx512f"), always_inline)) inline __m512
lowNibblesToFloats(__m512i lanes) {
  const __m512 nibbleValues = _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10,
                                             11, 12, 13, 14, 15);
  return _mm512_permutexvar_ps(lanes, nibbleValues);
}

/// Columns [lane, lane + 16) of a Uint4 panel row (lane a multiple of 16),
/// converted to f32: the low or high 4 bits of 16 bytes.
__attribute__((target("avx512f"), always_inline)) inline __m512
uint4ToFloats(const uint8_t *row, int64_t lane) {
  constexpr int64_t half = kWeightPanelWidth / 2;
  const __m512i bytes = bytesToLanes(row + lane % half);
  return lowNibblesToFloats(lane < half ? bytes : _mm512_srli_epi32(bytes, 4));
}

/// 16 scales and, for Uint4, offsets −zero point · scale of a group, from
/// `lane`: the weight is value · scale + offset.
struct GroupScales {
  __m512 scale, offset;

  template <QuantizedFormat Format>
  __attribute__((target("avx512f"), always_inline)) static GroupScales
  at(const QuantizedGroups &groups, int64_t lane) {
    const __m512 scale = _mm512_loadu_ps(groups.scales + lane);
    if constexpr (Format == QuantizedFormat::Int8)
      return {scale, _mm512_setzero_ps()};
    const __m512 zeroPoint = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(
        _mm_loadu_si128(reinterpret_cast<const __m128i *>(groups.zeroPoints + lane))));
    return {scale, _mm512_sub_ps(_mm512_setzero_ps(), _mm512_mul_ps(zeroPoint, scale))};
  }
};

/// Rows of a QuantizedStrip within one group, converted in registers: the
/// raw values, or with Scaled the weights value · scale (+ offset). Every
/// lane of a panel is readable, so no load is masked.
template <QuantizedFormat Format, bool Scaled> struct QuantizedGroupRows {
  const uint8_t *row; // the strip's row 0
  int64_t lane;
  GroupScales scales[kDirectVectors];

  __attribute__((target("avx512f"), always_inline)) void
  load(int64_t p, __m512 (&vectors)[kDirectVectors]) const {
    const uint8_t *values = row + p * panelRowBytes(Format);
    if constexpr (Format == QuantizedFormat::Uint4) {
      // A strip of 4 vectors is a whole panel (lane 0): two vectors of
      // bytes, each holding two vectors of columns 32 apart.
      static_assert(kDirectColumns == kWeightPanelWidth);
      for (int q = 0; q < kDirectVectors / 2; ++q) {
        const __m512i bytes = bytesToLanes(values + q * kLanes);
        vectors[q] = lowNibblesToFloats(bytes);
        vectors[q + kDirectVectors / 2] = lowNibblesToFloats(_mm512_srli_epi32(bytes, 4));
      }
    }
    for (int q = 0; q < kDirectVectors; ++q) {
      if constexpr (Format == QuantizedFormat::Int8)
        vectors[q] = int8ToFloats(values + lane + q * kLanes);
      if constexpr (Scaled && Format == QuantizedFormat::Int8)
        vectors[q] = _mm512_mul_ps(vectors[q], scales[q].scale);
      else if constexpr (Scaled)
        vectors[q] = _mm512_fmadd_ps(vectors[q], scales[q].scale, scales[q].offset);
    }
  }
};

/// The sum of a[0:count].
__attribute__((target("avx512f"), always_inline)) inline float
sumOf(const float *a, int64_t count) {
  __m512 sum = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + kLanes <= count; i += kLanes)
    sum = _mm512_add_ps(sum, _mm512_loadu_ps(a + i));
  sum = _mm512_add_ps(sum, _mm512_maskz_loadu_ps(laneMask(count - i), a + i));
  return _mm512_reduce_add_ps(sum);
}

/// The accumulators of up to 4 rows × 4 zmm of C, each summing its steps of
/// k in order, as the packed kernel does: a row of C is the same bits
/// whatever rows share its product (batch invariance, Gemm.h). With Chains
/// = 2 the even and odd steps are summed apart and added at the end, which
/// keeps two FMA pipes busy on one row's kDirectVectors accumulators but
/// rounds differently; only the quantized kernels' group sums, which are not
/// batch-invariant anyway, use it.
template <int Rows, bool Masked, int Chains = 1> struct DirectTile {
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

  /// Begins from the sums that `carried` holds (one chain).
  __attribute__((target("avx512f"), always_inline)) void
  resume(const CarriedSums &carried) {
    static_assert(Chains == 1);
    if (carried.resume)
      for (int r = 0; r < Rows; ++r)
        for (int q = 0; q < kDirectVectors; ++q)
          acc[0][r][q] = _mm512_loadu_ps(carried.sums + r * kDirectColumns + q * kLanes);
  }

  /// Ends as `carried` says: the sums left there, or written to C.
  __attribute__((target("avx512f"), always_inline)) void
  finish(const DirectProduct &d, const CarriedSums &carried) {
    static_assert(Chains == 1);
    if (carried.finish) {
      store(d.c, d.ldc, d.accumulate);
      return;
    }
    for (int r = 0; r < Rows; ++r)
      for (int q = 0; q < kDirectVectors; ++q)
        _mm512_storeu_ps(carried.sums + r * kDirectColumns + q * kLanes, acc[0][r][q]);
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

/// The product of Rows rows for B a FloatStrip, its sums carried as
/// `carried` says.
template <int Rows, bool Masked>
__attribute__((target("avx512f"), always_inline)) inline void
avx512DirectRows(const DirectProduct &d, const FloatStrip &b,
                 const CarriedSums &carried) {
  DirectTile<Rows, Masked> tile(d.cols);
  tile.resume(carried);
  if (carried.sums)
    tile.accumulate(d.a, d.lda, 0, d.k, FloatRows<Masked, true>{b.b, b.ldb, tile.mask});
  else
    tile.accumulate(d.a, d.lda, 0, d.k, FloatRows<Masked, false>{b.b, b.ldb, tile.mask});
  tile.finish(d, carried);
}

/// The same for B a QuantizedStrip in `Format`, one group of rows (one set
/// of scales) at a time.
template <int Rows, bool Masked, QuantizedFormat Format>
__attribute__((target("avx512f"), always_inline)) inline void
avx512DirectQuantizedRows(const DirectProduct &d, const QuantizedStrip &b) {
  const float *a = d.a;
  const int64_t lda = d.lda;
  // One or two rows do too few FMAs per converted value to hide a
  // multiply by the scale, which then bounds the kernel below the memory
  // roofline: they sum a group's products of the raw values and scale
  // the sums once at the group's end, adding the offsets times the sum of
  // the group's A. More rows would run out of registers for the group's
  // sums, and hide the multiply anyway.
  constexpr bool kScaleSums = Rows <= 2;
  DirectTile<Rows, Masked> tile(d.cols);
  for (QuantizedGroups groups{b, d.k}; groups.next();) {
    QuantizedGroupRows<Format, !kScaleSums> rows{b.row, b.lane, {}};
    for (int q = 0; q < kDirectVectors; ++q)
      rows.scales[q] = GroupScales::at<Format>(groups, q * kLanes);
    if constexpr (kScaleSums) {
      constexpr int kChains = Rows == 1 ? 2 : 1;
      DirectTile<Rows, Masked, kChains> group(d.cols);
      group.accumulate(a, lda, groups.begin, groups.end, rows);
      for (int r = 0; r < Rows; ++r) {
        __m512 sumOfA = _mm512_setzero_ps();
        if constexpr (Format != QuantizedFormat::Int8)
          sumOfA = _mm512_set1_ps(
              sumOf(a + r * lda + groups.begin, groups.end - groups.begin));
        for (int q = 0; q < kDirectVectors; ++q) {
          for (int chain = 0; chain < kChains; ++chain)
            tile.acc[0][r][q] = _mm512_fmadd_ps(group.acc[chain][r][q],
                                                rows.scales[q].scale, tile.acc[0][r][q]);
          if constexpr (Format != QuantizedFormat::Int8)
            tile.acc[0][r][q] =
                _mm512_fmadd_ps(sumOfA, rows.scales[q].offset, tile.acc[0][r][q]);
        }
      }
    } else {
      tile.accumulate(a, lda, groups.begin, groups.end, rows);
    }
  }
  tile.store(d.c, d.ldc, d.accumulate);
}

/// avx512DirectQuantizedRows in the strip's format, in one call.
template <int Rows, bool Masked>
__attribute__((target("avx512f"), always_inline)) inline void
avx512DirectRows(const DirectProduct &d, const QuantizedStrip &b,
                 const CarriedSums &) {
  if (b.format == QuantizedFormat::Int8)
    avx512DirectQuantizedRows<Rows, Masked, QuantizedFormat::Int8>(d, b);
  else
    avx512DirectQuantizedRows<Rows, Masked, QuantizedFormat::Uint4>(d, b);
}

/// avx512DirectRows for 1 to 4 rows of a whole strip of 64 columns or a
/// partial one.
template <typename Strip>
__attribute__((target("avx512f"), always_inline)) inline void
avx512DirectStrip(const DirectProduct &d, const Strip &b,
                  const CarriedSums &carried) {
  const bool whole = d.cols == kDirectColumns;
#define KILN_DIRECT_ROWS(R)                                                    \
  return whole ? avx512DirectRows<R, false>(d, b, carried)                      \
               : avx512DirectRows<R, true>(d, b, carried)
  switch (d.rows) {
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
avx512Direct(const DirectProduct &d, const float *b, int64_t ldb,
             const CarriedSums &carried) {
  avx512DirectStrip(d, FloatStrip{b, ldb}, carried);
}

__attribute__((target("avx512f"))) void
avx512DirectQuantized(const DirectProduct &d, const QuantizedStrip &b) {
  avx512DirectStrip(d, b, CarriedSums{});
}

template <QuantizedFormat Format>
__attribute__((target("avx512f"), always_inline)) inline void
avx512DequantizeFormat(const QuantizedStrip &b, int64_t depth, int64_t cols,
                       float *out) {
  for (QuantizedGroups groups{b, depth}; groups.next();)
    for (int64_t q = 0; q < cols; q += kLanes) {
      const GroupScales scales = GroupScales::at<Format>(groups, q);
      for (int64_t row = groups.begin; row < groups.end; ++row) {
        const uint8_t *values = b.row + row * panelRowBytes(Format);
        const __m512 weight =
            Format == QuantizedFormat::Int8
                ? _mm512_mul_ps(int8ToFloats(values + b.lane + q), scales.scale)
                : _mm512_fmadd_ps(uint4ToFloats(values, b.lane + q),
                                  scales.scale, scales.offset);
        _mm512_storeu_ps(out + row * cols + q, weight);
      }
    }
}

__attribute__((target("avx512f"))) void
avx512Dequantize(const QuantizedStrip &b, int64_t depth, int64_t cols,
                 float *out) {
  if (b.format == QuantizedFormat::Int8)
    avx512DequantizeFormat<QuantizedFormat::Int8>(b, depth, cols, out);
  else
    avx512DequantizeFormat<QuantizedFormat::Uint4>(b, depth, cols, out);
}

static_assert(kWeightPanelWidth % kColumns == 0 &&
                  kWeightPanelWidth % kDirectColumns == 0,
              "a strip must lie inside one panel of a packed weight");
static_assert(kDirectRows == 4, "avx512Direct handles 1 to 4 rows");

} // namespace

// A 384×256 panel of B (384 KB) fits in the 1 MB and larger L2 of AVX-512
// cores with room for the C rows and A strips (18 KB each) passing through;
// kc = 384 keeps the passes over C, one per kc of depth, few.
// Direct products of 5 to 12 rows (two or three groups) take turns:
// 8 x 131072 x 1024 streamed B at 67-71 GB/s with them and 40-53 without,
// where one group (4 rows) streams at 70-80 (kiln-gemm-bench, 2 threads,
// runs alternated on one VM). From four groups on the products are bound
// by their multiply-adds, and the turns only add the sums' saving and
// reloading (4-10% slower at 16 and 32 rows).
const GemmMicrokernel avx512Microkernel{
    avx512Kernel, kRows,        kColumns,      /*kc=*/384, /*mc=*/960,
    /*nc=*/256,   avx512Direct, kDirectColumns, avx512DirectQuantized,
    avx512Dequantize, /*mostRowsTakingTurns=*/12};

} // namespace kiln::rt::detail

#endif // defined(__x86_64__)
