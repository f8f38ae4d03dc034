//===- attention_bench.cpp - Decode attention, dense past against paged ---===//
//
// Times one layer's decode attention (one new token per sequence, a bias
// over the padded past) with the past as a dense tensor
// (kiln_ukernel_attention) and as the generation engine's block pool read
// through tables (kiln_ukernel_paged_attention), on the same rows, over 2
// threads. Built as build/bin/kiln-attention-bench; prints one line per
// shape, the best milliseconds of each.
//
//   kiln-attention-bench [BATCHxHEADSxKV_HEADSxPAST ...]
//
// The default shapes are Llama medium's at batch 32 after 512 tokens (16
// query heads on 4 KV heads) and the same without grouped heads (4 on 4).
//
//===----------------------------------------------------------------------===//
#include "runtime/src/Attention.h"
#include "runtime/src/ThreadPool.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <vector>

using namespace kiln::rt;

namespace {

constexpr int64_t kHeadDim = 64, kBlockSize = 16, kLayers = 8, kLayer = 3;

double bestMs(const std::function<void()> &call) {
  using Clock = std::chrono::steady_clock;
  call();
  double best = 1e30;
  for (int rep = 0; rep < 20; ++rep) {
    Clock::time_point start = Clock::now();
    call();
    best = std::min(best, std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  return best;
}

void measure(int64_t batch, int64_t heads, int64_t kvHeads, int64_t past) {
  const int64_t d = kHeadDim, total = past + 1;
  const int64_t blocksPerSequence = (past + kBlockSize - 1) / kBlockSize;
  const int64_t blocks = batch * blocksPerSequence;
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> uniform(-1, 1);
  auto randomVector = [&](size_t size) {
    std::vector<float> v(size);
    for (float &x : v)
      x = uniform(rng);
    return v;
  };
  std::vector<float> q = randomVector(batch * heads * d), k = randomVector(batch * kvHeads * d),
                     v = randomVector(k.size()), dense = randomVector(batch * kvHeads * past * d),
                     pool = randomVector(blocks * kLayers * 2 * kvHeads * kBlockSize * d);
  std::vector<float> out(q.size()), bias(batch * total, 0.0f);
  // Each sequence's blocks spread over the pool, as a busy engine's are.
  std::vector<int64_t> tables(batch * blocksPerSequence), lengths(batch, past);
  for (int64_t i = 0; i < (int64_t)tables.size(); ++i)
    tables[i] = (i * 7919) % blocks;
  ThreadPool threads(2);
  ScopedThreadPool scope(&threads);

  const double denseMs = bestMs([&] {
    kiln_ukernel_attention(batch, heads, kvHeads, 1, past, 1, d, d, q.data(), heads * d, d, d, 1,
                           dense.data(), kvHeads * past * d, past * d, d, 1, k.data(),
                           kvHeads * d, d, d, 1, dense.data(), kvHeads * past * d, past * d, d,
                           1, v.data(), kvHeads * d, d, d, 1, nullptr, 0, 0, 0, 0, 0.0f,
                           bias.data(), total, 0, total, 1, 0.125f, out.data(), heads * d, d,
                           d, 1, nullptr, 0, 0, 0, 0, nullptr, 0, 0, 0, 0);
  });
  kiln_paged_attention_params_t params = {};
  params.batch = batch;
  params.heads = heads;
  params.kv_heads = kvHeads;
  params.q_len = 1;
  params.head_dim = d;
  params.past_width = past;
  params.q = q.data();
  params.k = k.data();
  params.v = v.data();
  params.out = out.data();
  const int64_t qStrides[4] = {heads * d, d, d, 1}, kvStrides[4] = {kvHeads * d, d, d, 1},
                biasStrides[4] = {total, 0, total, 1};
  for (int i = 0; i < 4; ++i) {
    params.q_strides[i] = params.out_strides[i] = qStrides[i];
    params.k_strides[i] = params.v_strides[i] = kvStrides[i];
    params.bias_strides[i] = biasStrides[i];
  }
  params.kv_cache = pool.data();
  params.num_blocks = blocks;
  params.num_layers = kLayers;
  params.layer = kLayer;
  params.block_size = kBlockSize;
  params.block_tables = tables.data();
  params.block_table_stride = params.block_table_width = blocksPerSequence;
  params.past_lengths = lengths.data();
  params.bias = bias.data();
  params.scale = 0.125;
  const double pagedMs = bestMs([&] { kiln_ukernel_paged_attention(&params); });
  std::printf("batch %lld, %lld heads on %lld kv heads, past %lld: dense %.3f ms, paged %.3f ms "
              "(%.2fx)\n",
              (long long)batch, (long long)heads, (long long)kvHeads, (long long)past, denseMs,
              pagedMs, pagedMs / denseMs);
}

} // namespace

int main(int argc, char **argv) {
  if (argc == 1) {
    measure(32, 16, 4, 512);
    measure(32, 4, 4, 512);
    return 0;
  }
  for (int i = 1; i < argc; ++i) {
    long long b, h, kv, p;
    if (std::sscanf(argv[i], "%lldx%lldx%lldx%lld", &b, &h, &kv, &p) != 4 || b < 1 || kv < 1 ||
        h % kv != 0 || p < 1) {
      std::fprintf(stderr, "kiln-attention-bench: error: '%s' is not BATCHxHEADSxKV_HEADSxPAST\n",
                   argv[i]);
      return 1;
    }
    measure(b, h, kv, p);
  }
  return 0;
}
