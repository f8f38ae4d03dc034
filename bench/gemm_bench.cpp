//===- gemm_bench.cpp - SGEMM throughput per ISA and thread count ---------===//
//
// Prints GFLOP/s of kiln::rt::sgemm for each ISA this CPU has, on 1 and 2
// threads, next to a naive triple loop. Standalone: from the repository root,
//   g++ -O2 -std=c++17 -pthread -I. -o gemm_bench bench/gemm_bench.cpp
//       runtime/src/Gemm*.cpp runtime/src/ThreadPool.cpp
//
//===----------------------------------------------------------------------===//
#include "runtime/src/Gemm.h"
#include "runtime/src/ThreadPool.h"

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <random>
#include <vector>

using namespace kiln::rt;

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

} // namespace

int main() {
  const Shape shapes[] = {{512, 512, 512}, {1024, 768, 3072}};
  const GemmIsa best = detectGemmIsa();
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);

  std::printf("%-18s %-8s %7s %10s\n", "m x n x k", "isa", "threads",
              "GFLOP/s");
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

    for (GemmIsa isa : {GemmIsa::Generic, GemmIsa::Avx2, GemmIsa::Avx512}) {
      if (isa > best)
        continue;
      setGemmIsa(isa);
      for (int threads : {1, 2}) {
        std::unique_ptr<ThreadPool> pool;
        if (threads > 1)
          pool = std::make_unique<ThreadPool>(threads);
        const double seconds = bestSeconds([&] {
          sgemm(s.m, s.n, s.k, a.data(), s.k, b.data(), s.n, false, c.data(),
                s.n, pool.get());
        });
        std::printf("%-18s %-8s %7d %10.1f\n", name, gemmIsaName(isa), threads,
                    flops / seconds * 1e-9);
      }
    }
    using Clock = std::chrono::steady_clock;
    const Clock::time_point start = Clock::now();
    naiveGemm(s, a.data(), b.data(), c.data());
    const double seconds =
        std::chrono::duration<double>(Clock::now() - start).count();
    std::printf("%-18s %-8s %7d %10.1f\n", name, "naive", 1,
                flops / seconds * 1e-9);
  }
  return 0;
}
