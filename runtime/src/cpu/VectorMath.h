//===- VectorMath.h - W-float vectors for the ISA-generic kernels -*- C++
//-*-===//
//
// The attention kernel and the GEMM epilogue are written once on GCC vector
// extensions of W floats and instantiated inside an AVX-512F, an AVX2+FMA
// and a baseline wrapper (target attributes), picked by activeGemmIsa(). The
// helpers here are always inlined into those wrappers, so they compile for
// the wrapper's ISA and no vector ever crosses a call. The GEMM's packing
// of A uses the in-register transpose at 4 lanes, the baseline's own width.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_VECTORMATH_H
#define KILN_RUNTIME_VECTORMATH_H

#include <cstdint>

// The helpers take and return W-float vectors, which GCC warns would be
// passed differently without AVX; they are never called out of line.
#pragma GCC diagnostic ignored "-Wpsabi"

#define KILN_ALWAYS_INLINE inline __attribute__((always_inline))

namespace kiln::rt {

template <int W> struct Vec {
  typedef float F __attribute__((vector_size(W * sizeof(float))));
  typedef uint32_t U __attribute__((vector_size(W * sizeof(float))));
};

template <int W> KILN_ALWAYS_INLINE typename Vec<W>::F load(const float *p) {
  typename Vec<W>::F v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}

template <int W>
KILN_ALWAYS_INLINE void store(float *p, const typename Vec<W>::F &v) {
  __builtin_memcpy(p, &v, sizeof v);
}

/// x in every lane, broadcast as integer bits: GCC 12 expands a float
/// broadcast for AVX-512F (without VL) into one masked insert per lane.
template <int W> KILN_ALWAYS_INLINE typename Vec<W>::F splat(float x) {
  uint32_t bits;
  __builtin_memcpy(&bits, &x, sizeof bits);
  return (typename Vec<W>::F)(bits - typename Vec<W>::U{});
}

/// The larger of a and b lane by lane; b where a is NaN.
template <int W>
KILN_ALWAYS_INLINE typename Vec<W>::F vecMax(const typename Vec<W>::F &a,
                                             const typename Vec<W>::F &b) {
  return a > b ? a : b;
}

/// e^x for x <= 88 to about 1 ulp, branch-free (Cephes expf): x = n·ln2 + r
/// with |r| <= ln2/2, e^r from a degree-6 polynomial, 2^n from exponent bits.
/// e^-inf is exactly 0 and NaN stays NaN. Results below e^-87 (near the
/// smallest normal float) flush to 0, which only matters where they would be
/// added to a sum of at least 1 (a softmax's, or 1 + e^-x in a sigmoid).
template <int W>
KILN_ALWAYS_INLINE typename Vec<W>::F vecExp(const typename Vec<W>::F &x) {
  using F = typename Vec<W>::F;
  using U = typename Vec<W>::U;
  constexpr float kLow = -87.0f;
  // Adding 1.5·2^23 rounds x·log2(e) to an integer held in the low mantissa
  // bits; subtracting it back gives n as a float, the bit difference as int.
  // Below kLow these are garbage (unsigned, so without overflow) that the
  // final select drops.
  constexpr float kRound = 12582912.0f;
  const F shifted = x * 1.44269504088896341f + kRound;
  const F n = shifted - kRound;
  const U exponent = (U)shifted - (U)splat<W>(kRound);
  // ln2 in two parts, the first exact in few bits, so n·ln2 loses nothing.
  F r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  F p = 1.9875691500e-4f * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const F power = (F)((exponent + 127) << 23);
  // False for NaN, which the polynomial has carried through.
  return x < kLow ? F{} : p * power;
}

/// x / (1 + e^-s): x·sigmoid(s), which is SiLU for s = x and the tanh GELU
/// for s = 2·sqrt(2/pi)·(x + 0.044715·x³), since 0.5·(1 + tanh(u)) =
/// sigmoid(2u). Written this way nothing cancels where the sigmoid is tiny.
/// Below s = -88, where e^-s leaves vecExp's range (its lanes there are
/// dropped), the result is x·0: -0 for finite x (the true value is below
/// 1e-36 in magnitude) and NaN for infinite x, as the unfused x·sigmoid(x)
/// gives.
template <int W>
KILN_ALWAYS_INLINE typename Vec<W>::F
timesSigmoid(const typename Vec<W>::F &x, const typename Vec<W>::F &s) {
  return s < -88.0f ? x * 0.0f : x / (1.0f + vecExp<W>(-s));
}

/// x·Phi(x), Phi the standard normal CDF: the exact GELU. erfc(|x|/sqrt(2))
/// comes from Abramowitz & Stegun 7.1.26, whose error is absolute (below
/// 1.5e-7): Phi(x) is half of it for x < 0, one less half of it otherwise,
/// so the result is within about 1e-7·|x| of the GELU everywhere, though
/// its relative error grows in the far negative tail, where the GELU itself
/// is below 1e-7 (1% at x = -8).
template <int W>
KILN_ALWAYS_INLINE typename Vec<W>::F exactGelu(const typename Vec<W>::F &x) {
  using F = typename Vec<W>::F;
  const F z = (x < 0.0f ? -x : x) * 0.70710678118654752f;
  const F t = 1.0f / (1.0f + 0.3275911f * z);
  F poly = 1.061405429f * t - 1.453152027f;
  poly = poly * t + 1.421413741f;
  poly = poly * t - 0.284496736f;
  poly = poly * t + 0.254829592f;
  const F halfErfc = 0.5f * poly * t * vecExp<W>(-z * z);
  return x * (x < 0.0f ? halfErfc : 1.0f - halfErfc);
}

/// The two-source shuffle masks of one transpose step (see transposeStep):
/// `low` keeps the lanes outside the swapped B×B blocks of the first row and
/// takes the second row's into them; `high` the other way round.
template <int W, int B>
KILN_ALWAYS_INLINE void transposeMasks(typename Vec<W>::U &low,
                                       typename Vec<W>::U &high) {
#pragma GCC unroll 16
  for (int lane = 0; lane < W; ++lane) {
    low[lane] = lane & B ? W + lane - B : lane;
    high[lane] = lane & B ? W + lane : lane + B;
  }
}

/// One step of an in-register transpose of W rows of W floats: swaps the
/// off-diagonal B×B blocks of every 2B×2B diagonal block, then does the same
/// for B/2. Template recursion keeps B, and so the shuffle masks, constant.
template <int W, int B>
KILN_ALWAYS_INLINE void transposeStep(typename Vec<W>::F (&rows)[W]) {
  if constexpr (B >= 1) {
    typename Vec<W>::U low, high;
    transposeMasks<W, B>(low, high);
#pragma GCC unroll 16
    for (int i = 0; i < W; ++i) {
      if (i & B)
        continue;
      const typename Vec<W>::F top = rows[i], bottom = rows[i + B];
      rows[i] = __builtin_shuffle(top, bottom, low);
      rows[i + B] = __builtin_shuffle(top, bottom, high);
    }
    transposeStep<W, B / 2>(rows);
  }
}

} // namespace kiln::rt

#endif // KILN_RUNTIME_VECTORMATH_H
