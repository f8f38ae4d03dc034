//===- roofline.cpp - The machine's read bandwidth and fp32 FMA peak ------===//
//
// The two ceilings bench/run.py holds every step against, measured in the
// same run as the step:
//   - read bandwidth: each thread sums its own contiguous slice of one
//     buffer far larger than the last-level cache (STREAM's "read" kernel,
//     with several vector accumulators so that the adds never wait), best
//     of several passes;
//   - fp32 FMA peak: each thread runs independent FMA chains held in
//     registers (more chains than the FMA latency times the FMA ports), in
//     the widest vectors this CPU has, best of several bursts;
//   - int8 dot-product peak, where the CPU has AVX-512 VNNI (W8A8's
//     products): the same with VPDPBUSD chains, counted as 2 operations
//     per multiply-add like the FMAs (64 multiply-adds an instruction).
// Prints one JSON object: {"threads", "isa", "read_gb_per_s",
// "fma_gflop_per_s", "int8_gop_per_s" (null without VNNI), "buffer_mib"}.
//
// usage: kiln-roofline [--threads N] [--buffer-mib M]
//
//===----------------------------------------------------------------------===//
#include "kiln/abi/cpu_features.h"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

// GCC 12's AVX-512 reductions pass _mm256_undefined_*() as unused sources,
// which -Wuninitialized reports once they are inlined.
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace {

using Clock = std::chrono::steady_clock;

/// Runs `work(t)` on threads 0..n-1 started together; returns the seconds
/// from the common start to the last thread's end.
double timeOnThreads(int n, const std::function<void(int)> &work) {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < n; ++t)
    threads.emplace_back([&, t] {
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) {
      }
      work(t);
    });
  while (ready.load() != n) {
  }
  Clock::time_point start = Clock::now();
  go.store(true, std::memory_order_release);
  for (std::thread &thread : threads)
    thread.join();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The sums go to a global so that the reads cannot be optimized away.
volatile float gSink;

__attribute__((target("avx512f"))) float readAvx512(const float *p, size_t n) {
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i + 64 <= n; i += 64) {
    a0 = _mm512_add_ps(a0, _mm512_load_ps(p + i));
    a1 = _mm512_add_ps(a1, _mm512_load_ps(p + i + 16));
    a2 = _mm512_add_ps(a2, _mm512_load_ps(p + i + 32));
    a3 = _mm512_add_ps(a3, _mm512_load_ps(p + i + 48));
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
}

__attribute__((target("avx2"))) float readAvx2(const float *p, size_t n) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i + 32 <= n; i += 32) {
    a0 = _mm256_add_ps(a0, _mm256_load_ps(p + i));
    a1 = _mm256_add_ps(a1, _mm256_load_ps(p + i + 8));
    a2 = _mm256_add_ps(a2, _mm256_load_ps(p + i + 16));
    a3 = _mm256_add_ps(a3, _mm256_load_ps(p + i + 24));
  }
  __m256 s = _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3));
  float lanes[8];
  _mm256_storeu_ps(lanes, s);
  float sum = 0;
  for (float lane : lanes)
    sum += lane;
  return sum;
}

// 12 independent chains: FMA latency (4 cycles) times 2 ports needs 8; 12
// leaves room on CPUs with longer latencies. Returns a value that depends on
// every chain.
__attribute__((target("avx512f"))) float fmaAvx512(int64_t iterations) {
  __m512 x = _mm512_set1_ps(0.999999f), y = _mm512_set1_ps(1e-7f);
  __m512 c[12];
  for (int i = 0; i < 12; ++i)
    c[i] = _mm512_set1_ps(static_cast<float>(i));
  for (int64_t it = 0; it < iterations; ++it)
    for (int i = 0; i < 12; ++i)
      c[i] = _mm512_fmadd_ps(c[i], x, y);
  __m512 s = c[0];
  for (int i = 1; i < 12; ++i)
    s = _mm512_add_ps(s, c[i]);
  return _mm512_reduce_add_ps(s);
}

__attribute__((target("avx2,fma"))) float fmaAvx2(int64_t iterations) {
  __m256 x = _mm256_set1_ps(0.999999f), y = _mm256_set1_ps(1e-7f);
  __m256 c[12];
  for (int i = 0; i < 12; ++i)
    c[i] = _mm256_set1_ps(static_cast<float>(i));
  for (int64_t it = 0; it < iterations; ++it)
    for (int i = 0; i < 12; ++i)
      c[i] = _mm256_fmadd_ps(c[i], x, y);
  __m256 s = c[0];
  for (int i = 1; i < 12; ++i)
    s = _mm256_add_ps(s, c[i]);
  float lanes[8];
  _mm256_storeu_ps(lanes, s);
  return lanes[0] + lanes[7];
}

// The same for VPDPBUSD, in asm: GCC 12 copies the intrinsic's accumulator
// to another register and back around each instruction.
__attribute__((target("avx512f,avx512bw,avx512vnni"))) int32_t
dotBytesAvx512(int64_t iterations) {
  __m512i a = _mm512_set1_epi32(0x01010101), b = _mm512_set1_epi32(0x01FF01FF);
  // Every loop over the chains unrolled, so that they live in registers.
  __m512i c[12];
#pragma GCC unroll 12
  for (int i = 0; i < 12; ++i)
    c[i] = _mm512_set1_epi32(i);
  for (int64_t it = 0; it < iterations; ++it)
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i)
      asm("vpdpbusd %2, %1, %0" : "+v"(c[i]) : "v"(a), "v"(b));
  __m512i s = c[0];
#pragma GCC unroll 12
  for (int i = 1; i < 12; ++i)
    s = _mm512_add_epi32(s, c[i]);
  int32_t lanes[16];
  _mm512_storeu_si512(lanes, s);
  return lanes[0] + lanes[15];
}

volatile int32_t gIntSink;

struct Isa {
  const char *name;
  int lanes;
  float (*read)(const float *, size_t);
  float (*fma)(int64_t);
};

} // namespace

int main(int argc, char **argv) {
  int threads = static_cast<int>(std::thread::hardware_concurrency());
  int bufferMib = 1024;
  for (int i = 1; i < argc; ++i) {
    bool hasValue = i + 1 < argc;
    if (hasValue && std::strcmp(argv[i], "--threads") == 0)
      threads = std::atoi(argv[++i]);
    else if (hasValue && std::strcmp(argv[i], "--buffer-mib") == 0)
      bufferMib = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: kiln-roofline [--threads N] [--buffer-mib M]\n");
      return 2;
    }
  }
  if (threads < 1 || bufferMib < 16) {
    std::fprintf(stderr, "kiln-roofline: --threads must be >= 1 and --buffer-mib >= 16\n");
    return 2;
  }
  Isa isa = kiln::rt::hostHasCpuFeature("avx512f")
                ? Isa{"avx512", 16, readAvx512, fmaAvx512}
            : kiln::rt::hostHasCpuFeature("avx2") && kiln::rt::hostHasCpuFeature("fma")
                ? Isa{"avx2", 8, readAvx2, fmaAvx2}
                : Isa{nullptr, 0, nullptr, nullptr};
  if (!isa.name) {
    std::fprintf(stderr, "kiln-roofline: this CPU has neither AVX-512 nor AVX2 with FMA\n");
    return 1;
  }

  // Read bandwidth. Each thread first writes its own slice, so that its
  // pages are mapped (and, on NUMA machines, local) before any timing.
  size_t floats = static_cast<size_t>(bufferMib) << 18;
  size_t slice = floats / threads / 64 * 64;
  std::unique_ptr<float, decltype(&std::free)> buffer(
      static_cast<float *>(std::aligned_alloc(64, floats * sizeof(float))), &std::free);
  if (!buffer) {
    std::fprintf(stderr, "kiln-roofline: cannot allocate %d MiB\n", bufferMib);
    return 1;
  }
  timeOnThreads(threads, [&](int t) {
    std::fill(buffer.get() + t * slice, buffer.get() + (t + 1) * slice, 1.0f);
  });
  double bestRead = 1e30;
  for (int pass = 0; pass < 7; ++pass)
    bestRead = std::min(bestRead, timeOnThreads(threads, [&](int t) {
                          gSink = isa.read(buffer.get() + t * slice, slice);
                        }));
  double readBytes = static_cast<double>(slice) * threads * sizeof(float);

  // FMA peak: bursts of about 0.1 s each.
  const int64_t iterations = 20'000'000;
  double bestFma = 1e30;
  for (int burst = 0; burst < 5; ++burst)
    bestFma = std::min(bestFma, timeOnThreads(threads, [&](int) {
                         gSink = isa.fma(iterations);
                       }));
  double flops = 2.0 * 12 * isa.lanes * static_cast<double>(iterations) * threads;

  // int8 dot products: 16 lanes of 4 multiply-adds per instruction.
  std::string int8Peak = "null";
  if (kiln::rt::hostHasCpuFeature("avx512vnni") && kiln::rt::hostHasCpuFeature("avx512bw")) {
    double bestDot = 1e30;
    for (int burst = 0; burst < 5; ++burst)
      bestDot = std::min(bestDot, timeOnThreads(threads, [&](int) {
                           gIntSink = dotBytesAvx512(iterations);
                         }));
    const double operations = 2.0 * 12 * 64 * static_cast<double>(iterations) * threads;
    int8Peak = std::to_string(operations / bestDot / 1e9);
  }

  std::printf("{\"threads\": %d, \"isa\": \"%s\", \"read_gb_per_s\": %.2f, "
              "\"fma_gflop_per_s\": %.2f, \"int8_gop_per_s\": %s, \"buffer_mib\": %d}\n",
              threads, isa.name, readBytes / bestRead / 1e9, flops / bestFma / 1e9,
              int8Peak.c_str(), bufferMib);
  return 0;
}
