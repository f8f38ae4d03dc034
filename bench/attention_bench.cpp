//===- attention_bench.cpp - Decode attention, dense past against paged ---===//
//
// Times attention over a past (one new token per sequence, a decode step,
// or a chunk of NEW new tokens, a prefill; a bias over the padded past and,
// for a chunk, the causal mask) with the past as dense tensors
// (kiln_ukernel_attention) and as the generation engine's block pool read
// through tables (kiln_ukernel_paged_attention), over 2 threads, with the
// pool in f32 and in 16 bits (f16, bf16: kilnc --kv-dtype). Each timed call
// runs every layer of a step, each on its own past, so that the pasts come
// from memory as in a model's step rather than from the cache a single
// layer would stay in. Built as build/bin/kiln-attention-bench; prints one
// line per shape: the best step's milliseconds per layer, and the GB/s of
// past read.
//
//   kiln-attention-bench [BATCHxHEADSxKV_HEADSxPAST[xNEW] ...]
//
// The default shapes are Llama medium's at batch 32 after 512 tokens (16
// query heads on 4 KV heads) and the same without grouped heads (4 on 4).
// A chunk shows what the paged kernel's batch invariance costs a prefill:
// it scores every row against the keys in place, as a decode step does,
// where the dense kernel shares one transposed copy of each key block among
// a tile's rows.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/cpu/Attention.h"
#include "runtime/src/HalfFloat.h"
#include "runtime/src/ThreadPool.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <vector>

using namespace kiln::rt;

namespace {

constexpr int64_t kHeadDim = 64, kBlockSize = 16, kLayers = 8;

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

void measure(int64_t batch, int64_t heads, int64_t kvHeads, int64_t past, int64_t fresh) {
  const int64_t d = kHeadDim, total = past + fresh;
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
  const int64_t layerPast = batch * kvHeads * past * d;
  std::vector<float> q = randomVector(batch * heads * fresh * d),
                     k = randomVector(batch * kvHeads * fresh * d), v = randomVector(k.size()),
                     dense = randomVector(kLayers * 2 * layerPast),
                     pool = randomVector(blocks * kLayers * 2 * kvHeads * kBlockSize * d);
  // Each new row sees the past and the new rows up to itself.
  std::vector<float> out(q.size()), bias(batch * fresh * total, 0.0f);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < fresh; ++i)
      for (int64_t j = past + i + 1; j < total; ++j)
        bias[(b * fresh + i) * total + j] = -3.4028235e38f;
  // Each sequence's blocks spread over the pool, as a busy engine's are.
  std::vector<int64_t> tables(batch * blocksPerSequence), lengths(batch, past);
  for (int64_t i = 0; i < (int64_t)tables.size(); ++i)
    tables[i] = (i * 7919) % blocks;
  ThreadPool threads(2);
  ScopedThreadPool scope(&threads);

  kiln_attention_params_t denseParams = {};
  denseParams.batch = batch;
  denseParams.heads = heads;
  denseParams.kv_heads = kvHeads;
  denseParams.q_len = fresh;
  denseParams.past_len = past;
  denseParams.kv_len = fresh;
  denseParams.head_dim = denseParams.value_dim = d;
  denseParams.q = q.data();
  denseParams.k = k.data();
  denseParams.v = v.data();
  denseParams.bias = bias.data();
  denseParams.scale = 0.125;
  denseParams.out = out.data();
  const int64_t denseStrides[4][4] = {{heads * fresh * d, fresh * d, d, 1},
                                      {kvHeads * past * d, past * d, d, 1},
                                      {kvHeads * fresh * d, fresh * d, d, 1},
                                      {fresh * total, 0, total, 1}};
  for (int i = 0; i < 4; ++i) {
    denseParams.q_strides[i] = denseParams.out_strides[i] = denseStrides[0][i];
    denseParams.past_k_strides[i] = denseParams.past_v_strides[i] = denseStrides[1][i];
    denseParams.k_strides[i] = denseParams.v_strides[i] = denseStrides[2][i];
    denseParams.bias_strides[i] = denseStrides[3][i];
  }
  const double denseMs = bestMs([&] {
    for (int64_t layer = 0; layer < kLayers; ++layer) {
      denseParams.past_k = dense.data() + 2 * layer * layerPast;
      denseParams.past_v = denseParams.past_k + layerPast;
      kiln_ukernel_attention(&denseParams);
    }
  }) / kLayers;
  kiln_paged_attention_params_t params = {};
  params.batch = batch;
  params.heads = heads;
  params.kv_heads = kvHeads;
  params.q_len = fresh;
  params.head_dim = d;
  params.past_width = past;
  params.q = q.data();
  params.k = k.data();
  params.v = v.data();
  params.out = out.data();
  const int64_t qStrides[4] = {heads * fresh * d, fresh * d, d, 1},
                kvStrides[4] = {kvHeads * fresh * d, fresh * d, d, 1},
                biasStrides[4] = {fresh * total, 0, total, 1};
  for (int i = 0; i < 4; ++i) {
    params.q_strides[i] = params.out_strides[i] = qStrides[i];
    params.k_strides[i] = params.v_strides[i] = kvStrides[i];
    params.bias_strides[i] = biasStrides[i];
  }
  params.kv_cache = pool.data();
  params.kv_cache_dtype = KILN_DTYPE_F32;
  params.num_blocks = blocks;
  params.num_layers = kLayers;
  params.block_size = kBlockSize;
  params.block_tables = tables.data();
  params.block_table_stride = params.block_table_width = blocksPerSequence;
  params.past_lengths = lengths.data();
  params.bias = bias.data();
  params.scale = 0.125;
  auto pagedMs = [&] {
    return bestMs([&] {
             for (params.layer = 0; params.layer < kLayers; ++params.layer)
               kiln_ukernel_paged_attention(&params);
           }) /
           kLayers;
  };
  const double f32Ms = pagedMs();
  // The same pool in 16 bits: half the bytes to read, widened as read.
  std::vector<uint16_t> narrow(pool.size());
  double narrowMs[2];
  for (int bfloat = 0; bfloat < 2; ++bfloat) {
    for (size_t i = 0; i < pool.size(); ++i)
      narrow[i] = bfloat ? floatToBfloat16(pool[i]) : floatToHalf(pool[i]);
    params.kv_cache = narrow.data();
    params.kv_cache_dtype = bfloat ? KILN_DTYPE_BF16 : KILN_DTYPE_F16;
    narrowMs[bfloat] = pagedMs();
  }
  const double pastBytes = 2.0 * layerPast * sizeof(float);
  std::printf("batch %lld, %lld heads on %lld kv heads, past %lld, new %lld: per layer dense "
              "%.3f ms "
              "(%.1f GB/s), paged %.3f ms (%.1f GB/s), paged/dense %.2f; 16-bit pool: f16 "
              "%.3f ms, bf16 %.3f ms, f32/f16 %.2f, f32/bf16 %.2f\n",
              (long long)batch, (long long)heads, (long long)kvHeads, (long long)past,
              (long long)fresh, denseMs,
              pastBytes / denseMs / 1e6, f32Ms, pastBytes / f32Ms / 1e6, f32Ms / denseMs,
              narrowMs[0], narrowMs[1], f32Ms / narrowMs[0], f32Ms / narrowMs[1]);
}

} // namespace

int main(int argc, char **argv) {
  if (argc == 1) {
    measure(32, 16, 4, 512, 1);
    measure(32, 4, 4, 512, 1);
    return 0;
  }
  for (int i = 1; i < argc; ++i) {
    long long b, h, kv, p, fresh = 1;
    const int fields =
        std::sscanf(argv[i], "%lldx%lldx%lldx%lldx%lld", &b, &h, &kv, &p, &fresh);
    if (fields < 4 || b < 1 || kv < 1 || h % kv != 0 || p < 0 || fresh < 1) {
      std::fprintf(stderr,
                   "kiln-attention-bench: error: '%s' is not BATCHxHEADSxKV_HEADSxPAST[xNEW]\n",
                   argv[i]);
      return 1;
    }
    measure(b, h, kv, p, fresh);
  }
  return 0;
}
