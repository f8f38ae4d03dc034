//===- GemmEpilogue.cpp - Bias, activation and residual on GEMM tiles -----===//
//
// sgemm runs the epilogue on each tile of C right after the tile's last
// microkernel store, while it is in L1, instead of in another pass over C.
// One source serves every ISA, as in the attention kernel: the row loop is
// instantiated per vector width and activation inside target wrappers.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/cpu/Gemm.h"
#include "runtime/src/cpu/VectorMath.h"

#include <cstring>

namespace kiln::rt::detail {
namespace {

template <int W, GemmActivation A>
KILN_ALWAYS_INLINE typename Vec<W>::F activate(const typename Vec<W>::F &x) {
  using F = typename Vec<W>::F;
  if constexpr (A == GemmActivation::Relu)
    return x < 0.0f ? F{} : x; // keeps NaN
  if constexpr (A == GemmActivation::Gelu)
    return exactGelu<W>(x);
  if constexpr (A == GemmActivation::GeluTanh)
    // 2u for u = sqrt(2/pi)·(x + 0.044715·x³).
    return timesSigmoid<W>(x, x * (1.5957691216057308f + 0.071354816f * x * x));
  if constexpr (A == GemmActivation::Silu)
    return timesSigmoid<W>(x, x);
  return x;
}

/// The epilogue on W columns of one row; the operands point at them.
template <int W, GemmActivation A>
KILN_ALWAYS_INLINE typename Vec<W>::F
finish(const typename Vec<W>::F &sum, const float *bias, const float *gate,
       const float *residual) {
  typename Vec<W>::F x = sum;
  if (bias)
    x += load<W>(bias);
  x = activate<W, A>(x);
  if (gate)
    x *= load<W>(gate);
  if (residual)
    x += load<W>(residual);
  return x;
}

template <int W, GemmActivation A>
KILN_ALWAYS_INLINE void finishTile(const GemmEpilogue &e, float *c,
                                   int64_t ldc, int64_t row, int64_t rows,
                                   int64_t col, int64_t cols) {
  const float *bias = e.bias ? e.bias + col : nullptr;
  auto at = [](const float *p, int64_t j) { return p ? p + j : nullptr; };
  for (int64_t r = 0; r < rows; ++r) {
    float *out = c + r * ldc;
    const float *gate = e.gate ? e.gate + (row + r) * e.ldg + col : nullptr;
    const float *residual =
        e.residual ? e.residual + (row + r) * e.ldr + col : nullptr;
    int64_t j = 0;
    for (; j + W <= cols; j += W)
      store<W>(out + j, finish<W, A>(load<W>(out + j), at(bias, j),
                                     at(gate, j), at(residual, j)));
    if (j == cols)
      continue;
    // The last partial vector goes through zero-padded copies, so that
    // nothing past the row's end is read or written.
    const int64_t tail = cols - j;
    float tails[4][W] = {};
    const float *sources[4] = {out, bias, gate, residual};
    for (int operand = 0; operand < 4; ++operand)
      if (sources[operand])
        std::memcpy(tails[operand], sources[operand] + j, tail * sizeof(float));
    store<W>(tails[0],
             finish<W, A>(load<W>(tails[0]), bias ? tails[1] : nullptr,
                          gate ? tails[2] : nullptr,
                          residual ? tails[3] : nullptr));
    std::memcpy(out + j, tails[0], tail * sizeof(float));
  }
}

// Four lanes: SSE2, which every x86-64 CPU has, or the target's own vectors.
template <GemmActivation A>
void finishGeneric(const GemmEpilogue &e, float *c, int64_t ldc, int64_t row,
                   int64_t rows, int64_t col, int64_t cols) {
  finishTile<4, A>(e, c, ldc, row, rows, col, cols);
}

#if defined(__x86_64__)
template <GemmActivation A>
__attribute__((target("avx2,fma"))) void
finishAvx2(const GemmEpilogue &e, float *c, int64_t ldc, int64_t row,
           int64_t rows, int64_t col, int64_t cols) {
  finishTile<8, A>(e, c, ldc, row, rows, col, cols);
}

template <GemmActivation A>
__attribute__((target("avx512f"))) void
finishAvx512(const GemmEpilogue &e, float *c, int64_t ldc, int64_t row,
             int64_t rows, int64_t col, int64_t cols) {
  finishTile<16, A>(e, c, ldc, row, rows, col, cols);
}
#endif

template <GemmActivation A> EpilogueRunner runnerFor(GemmIsa isa) {
  switch (isa) {
#if defined(__x86_64__)
  case GemmIsa::Avx512:
    return finishAvx512<A>;
  case GemmIsa::Avx2:
    return finishAvx2<A>;
#endif
  default:
    return finishGeneric<A>;
  }
}

} // namespace

EpilogueRunner epilogueRunnerFor(GemmIsa isa, const GemmEpilogue &epilogue) {
  if (epilogue.empty())
    return nullptr;
  switch (epilogue.activation) {
  case GemmActivation::Relu:
    return runnerFor<GemmActivation::Relu>(isa);
  case GemmActivation::Gelu:
    return runnerFor<GemmActivation::Gelu>(isa);
  case GemmActivation::GeluTanh:
    return runnerFor<GemmActivation::GeluTanh>(isa);
  case GemmActivation::Silu:
    return runnerFor<GemmActivation::Silu>(isa);
  case GemmActivation::None:
    break;
  }
  return runnerFor<GemmActivation::None>(isa);
}

} // namespace kiln::rt::detail
