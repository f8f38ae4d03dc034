//===- gemm_bench.cpp - SGEMM throughput per ISA and thread count ---------===//
//
// Prints GFLOP/s of kiln::rt::sgemm for each ISA this CPU has, on 1 and 2
// threads, with B stored [K, N], [N, K] and in packed panels (what
// kiln-pack-weights makes of constant weights), and of sgemmQuantizedWeight
// on those panels quantized to int8 and to 4 bits by groups of 128 rows
// (what kiln-quantize-weights makes of them), and of gemmInt8 on
// them quantized for int8 inputs ("w8a8", its quantize-inputs, rows
// quantized by their own range), next to a
// naive triple loop; and the GB/s at which each streams B, the figure that bounds a decode step.
// Built as build/bin/kiln-gemm-bench; `kiln-gemm-bench 1x192x64 8x256x64`
// measures those shapes instead of the default ones.
//
//===----------------------------------------------------------------------===//
#include "passes/WeightQuantizer.h"
#include "runtime/src/cpu/Gemm.h"
#include "runtime/src/ThreadPool.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <random>
#include <vector>

using namespace kiln::rt;
namespace quantizer = kiln::quantizer;

static_assert(quantizer::kPanelWidth == kWeightPanelWidth,
              "the compiler's quantizer lays out the runtime's panels");

namespace {

struct Shape {
  int64_t m, n, k;
};

/// Best seconds per call over repeated calls totalling at least half a second.
double bestSeconds(const std::function<void()> &call) {
  using Clock = std::chrono::steady_clock;
  call(); // warm caches, page in buffers, start workers
  double best = 1e30, total = 0;
  for (int reps = 0; reps < 3 || total < 0.5; ++reps) {
    const Clock::time_point start = Clock::now();
    call();
    const double seconds =
        std::chrono::duration<double>(Clock::now() - start).count();
    best = std::min(best, seconds);
    total += seconds;
  }
  return best;
}

void naiveGemm(const Shape &s, const float *a, const float *b, float *c) {
  for (int64_t i = 0; i < s.m; ++i)
    for (int64_t j = 0; j < s.n; ++j) {
      float sum = 0;
      for (int64_t p = 0; p < s.k; ++p)
        sum += a[i * s.k + p] * b[p * s.n + j];
      c[i * s.n + j] = sum;
    }
}

/// `b` (k×n, row-major) in `layout`: as it is, transposed, or in panels.
std::vector<float> layOut(const std::vector<float> &b, const Shape &s,
                          GemmLayout layout, int64_t &ldb) {
  const int64_t w = kWeightPanelWidth;
  switch (layout) {
  case GemmLayout::RowMajor:
    ldb = s.n;
    return b;
  case GemmLayout::Transposed: {
    ldb = s.k;
    std::vector<float> t(s.k * s.n);
    for (int64_t p = 0; p < s.k; ++p)
      for (int64_t j = 0; j < s.n; ++j)
        t[j * s.k + p] = b[p * s.n + j];
    return t;
  }
  case GemmLayout::Panels: {
    ldb = s.k * w;
    std::vector<float> panels((s.n + w - 1) / w * ldb, 0.0f);
    for (int64_t p = 0; p < s.k; ++p)
      for (int64_t j = 0; j < s.n; ++j)
        panels[j / w * ldb + p * w + j % w] = b[p * s.n + j];
    return panels;
  }
  }
  return b;
}

/// Packed panels quantized as kiln-quantize-weights does (its own
/// quantizer), a scale per column and group of kGroupSize rows: symmetric
/// int8, or 4-bit with a zero point.
struct QuantizedPanels {
  static constexpr int64_t kGroupSize = 128;
  QuantizedFormat format;
  std::vector<uint8_t> values, zeroPoints;
  std::vector<float> scales;
  int64_t ld, scalesLd;

  QuantizedWeight weight() const {
    return {format,   values.data(), ld,         scales.data(),
            zeroPoints.empty() ? nullptr : zeroPoints.data(),
            scalesLd, kGroupSize};
  }
};

QuantizedPanels quantizePanels(const std::vector<float> &panels, const Shape &s,
                               QuantizedFormat format) {
  const int64_t w = kWeightPanelWidth, count = (s.n + w - 1) / w;
  const int64_t groups = (s.k + QuantizedPanels::kGroupSize - 1) / QuantizedPanels::kGroupSize;
  const quantizer::Format bits{format == QuantizedFormat::Int8 ? 8 : 4};
  QuantizedPanels q{format,
                    std::vector<uint8_t>(count * s.k * bits.rowBytes()),
                    std::vector<uint8_t>(bits.hasZeroPoints() ? count * groups * w : 0),
                    std::vector<float>(count * groups * w),
                    s.k * bits.rowBytes(),
                    groups * w};
  quantizer::quantizePanels(panels.data(), count, s.k, QuantizedPanels::kGroupSize, bits,
                            {q.values.data(), q.scales.data(), q.zeroPoints.data()});
  return q;
}

/// Packed panels quantized for int8 products with quantized inputs, as
/// kiln-quantize-weights does with quantize-inputs: one scale per column,
/// the values in row quads, and the column sums.
struct Int8Panels {
  std::vector<uint8_t> values;
  std::vector<float> scales;
  std::vector<int32_t> columnSums;
  int64_t ld;

  Int8Weight weight() const {
    return {reinterpret_cast<const int8_t *>(values.data()), ld, scales.data(),
            kWeightPanelWidth, columnSums.data()};
  }
};

Int8Panels quantizeForInt8Inputs(const std::vector<float> &panels, const Shape &s) {
  const int64_t w = kWeightPanelWidth, count = (s.n + w - 1) / w;
  std::vector<uint8_t> rows(count * s.k * w);
  Int8Panels q{std::vector<uint8_t>(rows.size()), std::vector<float>(count * w),
               std::vector<int32_t>(count * w), s.k * w};
  quantizer::quantizePanels(panels.data(), count, s.k, s.k, quantizer::Format{8},
                            {rows.data(), q.scales.data(), nullptr});
  quantizer::toRowQuads(rows.data(), count, s.k, q.values.data(), q.columnSums.data());
  return q;
}

/// Parses "MxNxK"; false when it is not three positive integers.
bool parseShape(const char *text, Shape &shape) {
  long long m, n, k;
  char rest;
  if (std::sscanf(text, "%lldx%lldx%lld%c", &m, &n, &k, &rest) != 3 || m <= 0 ||
      n <= 0 || k <= 0)
    return false;
  shape = {m, n, k};
  return true;
}

} // namespace

int main(int argc, char **argv) {
  // Square, a transformer MLP's prefill, decode steps (one row, then four)
  // against a 4096×4096 weight, where how B is stored matters most, and a
  // batch-8 decode step of bench/'s tiny GPT-2 (its QKV product). Shapes
  // given as MxNxK arguments replace these.
  std::vector<Shape> shapes = {{512, 512, 512},
                               {1024, 768, 3072},
                               {1, 4096, 4096},
                               {4, 4096, 4096},
                               {8, 192, 64}};
  if (argc > 1) {
    shapes.clear();
    for (int i = 1; i < argc; ++i) {
      Shape shape;
      if (!parseShape(argv[i], shape)) {
        std::fprintf(stderr,
                     "kiln-gemm-bench: '%s' is not a shape MxNxK of positive "
                     "integers\n",
                     argv[i]);
        return 1;
      }
      shapes.push_back(shape);
    }
  }
  const GemmIsa best = detectGemmIsa();
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);

  std::printf("%-18s %-8s %-7s %7s %10s %8s\n", "m x n x k", "isa", "B",
              "threads", "GFLOP/s", "B GB/s");
  for (const Shape &s : shapes) {
    std::vector<float> a(s.m * s.k), b(s.k * s.n), c(s.m * s.n);
    for (float &x : a)
      x = uniform(rng);
    for (float &x : b)
      x = uniform(rng);
    const double flops = 2.0 * s.m * s.n * s.k;
    char name[32];
    std::snprintf(name, sizeof(name), "%lldx%lldx%lld", (long long)s.m,
                  (long long)s.n, (long long)s.k);

    // Each way of storing B: its name, its bytes, and the product on a pool.
    struct StoredB {
      const char *name;
      double bytes;
      std::function<void(ThreadPool *)> multiply;
    };
    std::vector<StoredB> storedBs;
    std::vector<std::vector<float>> layouts;
    for (GemmLayout layout :
         {GemmLayout::RowMajor, GemmLayout::Transposed, GemmLayout::Panels}) {
      int64_t ldb = 0;
      layouts.push_back(layOut(b, s, layout, ldb));
      const float *stored = layouts.back().data();
      storedBs.push_back({gemmLayoutName(layout), 4.0 * s.k * s.n,
                          [&, stored, ldb, layout](ThreadPool *pool) {
                            sgemm(s.m, s.n, s.k, a.data(), s.k, stored, ldb,
                                  layout, c.data(), s.n, pool);
                          }});
    }
    std::vector<QuantizedPanels> quantized;
    for (QuantizedFormat format : {QuantizedFormat::Int8, QuantizedFormat::Uint4})
      quantized.push_back(quantizePanels(layouts.back(), s, format));
    for (const QuantizedPanels &q : quantized)
      storedBs.push_back({q.format == QuantizedFormat::Int8 ? "int8" : "uint4",
                          1.0 * q.values.size() + 1.0 * q.zeroPoints.size() +
                              4.0 * q.scales.size(),
                          [&](ThreadPool *pool) {
                            sgemmQuantizedWeight(s.m, s.n, s.k, a.data(), s.k,
                                                 q.weight(), c.data(), s.n, pool);
                          }});
    // The inputs quantized too (k a multiple of 4): int8 × int8 products.
    Int8Panels int8Inputs;
    if (s.k % quantizer::kRowQuad == 0) {
      int8Inputs = quantizeForInt8Inputs(layouts.back(), s);
      storedBs.push_back({"w8a8",
                          1.0 * int8Inputs.values.size() + 4.0 * int8Inputs.scales.size(),
                          [&](ThreadPool *pool) {
                            gemmInt8(s.m, s.n, s.k, a.data(), s.k,
                                     InputQuantization::perRowRange(),
                                     int8Inputs.weight(), c.data(), s.n, pool);
                          }});
    }
    for (const StoredB &stored : storedBs) {
      for (GemmIsa isa : {GemmIsa::Generic, GemmIsa::Avx2, GemmIsa::Avx512}) {
        if (isa > best)
          continue;
        setGemmIsa(isa);
        for (int threads : {1, 2}) {
          std::unique_ptr<ThreadPool> pool;
          if (threads > 1)
            pool = std::make_unique<ThreadPool>(threads);
          const double seconds = bestSeconds([&] { stored.multiply(pool.get()); });
          std::printf("%-18s %-8s %-7s %7d %10.1f %8.1f\n", name,
                      gemmIsaName(isa), stored.name, threads,
                      flops / seconds * 1e-9, stored.bytes / seconds * 1e-9);
        }
      }
    }
    if (s.m < 64)
      continue; // the naive loop only as a reference point for big products
    using Clock = std::chrono::steady_clock;
    const Clock::time_point start = Clock::now();
    naiveGemm(s, a.data(), b.data(), c.data());
    const double seconds =
        std::chrono::duration<double>(Clock::now() - start).count();
    std::printf("%-18s %-8s %-7s %7d %10.1f\n", name, "naive", "k x n", 1,
                flops / seconds * 1e-9);
  }
  return 0;
}
