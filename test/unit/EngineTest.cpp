//===- EngineTest.cpp - The generation engine against a plain loop --------===//
//
// Runs decoders compiled by kilnc at build time (the models/ and models/hf/
// exports with a KV cache; CMake puts them in KILN_ENGINE_TEST_DIR) through
// the engine's C++ wrapper (kiln/engine.hpp) and checks every greedy token
// against a plain loop over the same artifact: one request at a time, the
// past fed back as a dense tensor, as a user of ONNX Runtime would write it.
// The engine's chosen-token logprob must equal the loop's log-softmax within
// 1e-4, and a token may differ only where the loop's two candidates tie
// within 1e-4 (batching changes the rounding); the comparison of that
// request stops there. After every test the pool is all free.
//
//===----------------------------------------------------------------------===//
#include "kiln/engine.hpp"
#include "test/unit/EngineTestModels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

using kiln::test::artifact;
using kiln::test::instance;

/// The dense build of an engine test artifact: NAME for NAME_paged or
/// NAME_paged_DTYPE (the plain loop needs past and present tensors).
std::string denseOf(const std::string &name) {
  return name.substr(0, name.rfind("_paged"));
}

/// The plain loop: prefill, then one decode step at a time, the presents
/// fed back as the next step's past.
struct Reference {
  std::vector<int64_t> tokens;
  std::vector<std::vector<float>> logits; // the row each token came from
};

Reference greedyLoop(const kiln::Model &model, const std::vector<int64_t> &prompt,
                     int32_t maxTokens) {
  kiln::Session session(model);
  Reference reference;
  std::vector<int64_t> ids = prompt;
  int64_t past = 0;
  std::map<int32_t, std::vector<float>> pasts; // by input index
  for (int32_t i = 0; i < model.inputCount(); ++i)
    if (std::string(model.input(i).name).rfind("past_key_values.", 0) == 0)
      pasts[i] = {};
  std::vector<int64_t> positions, mask;
  int32_t logitsIndex = kiln_model_find_output(model.get(), "logits");
  while ((int32_t)reference.tokens.size() < maxTokens) {
    const int64_t n = (int64_t)ids.size();
    positions.resize(n);
    for (int64_t t = 0; t < n; ++t)
      positions[t] = past + t;
    mask.assign(past + n, 1);
    session.bindInput(model.inputIndex("input_ids"), KILN_DTYPE_I64, {1, n},
                      ids.data(), n * 8);
    if (int32_t positionIds = kiln_model_find_input(model.get(), "position_ids");
        positionIds >= 0) // BLOOM has none
      session.bindInput(positionIds, KILN_DTYPE_I64, {1, n}, positions.data(), n * 8);
    session.bindInput(model.inputIndex("attention_mask"), KILN_DTYPE_I64,
                      {1, past + n}, mask.data(), mask.size() * 8);
    for (auto &[index, data] : pasts) {
      kiln_io_info_t info = model.input(index);
      int64_t heads = info.dims[1].size, dim = info.dims[3].size;
      data.resize(std::max<size_t>(heads * past * dim, 1));
      session.bindInput(index, KILN_DTYPE_F32, {1, heads, past, dim}, data.data(),
                        heads * past * dim * 4);
    }
    session.run();
    kiln_tensor_t logits = session.output(logitsIndex);
    int64_t vocab = logits.shape[2];
    const float *last = (const float *)logits.data + (n - 1) * vocab;
    reference.logits.emplace_back(last, last + vocab);
    int64_t token = std::max_element(last, last + vocab) - last;
    reference.tokens.push_back(token);
    for (auto &[index, data] : pasts) {
      std::string name = model.input(index).name; // past_key_values.N.kind
      std::string present = "present." + name.substr(16);
      kiln_tensor_t out = session.output(kiln_model_find_output(model.get(), present.c_str()));
      const float *values = (const float *)out.data;
      data.assign(values, values + out.byte_size / 4);
    }
    past += n;
    ids = {token};
  }
  return reference;
}

/// What the engine gave one request.
struct Outcome {
  std::vector<int64_t> tokens;
  std::vector<float> logprobs;
  kiln_finish_reason_t finish = KILN_FINISH_NONE;
  int finalEvents = 0;
  std::string error;
};

kiln::Engine::Callback recordInto(Outcome &outcome) {
  return [&outcome](const kiln_engine_event_t &event) {
    if (event.token_id >= 0) {
      outcome.tokens.push_back(event.token_id);
      outcome.logprobs.push_back(event.logprob);
    }
    if (event.finish_reason != KILN_FINISH_NONE) {
      outcome.finish = event.finish_reason;
      ++outcome.finalEvents;
      if (event.error_message)
        outcome.error = event.error_message;
    }
  };
}

kiln::SamplingParams greedy(int32_t maxTokens) {
  kiln::SamplingParams params;
  params.temperature = 0;
  params.max_tokens = maxTokens;
  params.logprobs = 0;
  return params;
}

/// The engine's tokens and log-probabilities against the loop's, the
/// latter within `tolerance`; a token may differ where the loop's logits
/// tie within it, and the comparison ends there.
void expectMatchesLoop(const Reference &reference, const Outcome &outcome,
                       const std::string &label, double tolerance = 1e-4) {
  ASSERT_EQ(outcome.finalEvents, 1) << label << ": " << outcome.error;
  EXPECT_EQ(outcome.finish, KILN_FINISH_LENGTH) << label;
  ASSERT_EQ(outcome.tokens.size(), reference.tokens.size()) << label;
  for (size_t k = 0; k < reference.tokens.size(); ++k) {
    const std::vector<float> &row = reference.logits[k];
    double maxLogit = *std::max_element(row.begin(), row.end());
    double lse = 0;
    for (float v : row)
      lse += std::exp((double)v - maxLogit);
    lse = maxLogit + std::log(lse);
    int64_t got = outcome.tokens[k];
    EXPECT_NEAR(outcome.logprobs[k], row[got] - lse, tolerance)
        << label << ": token " << k << " (" << got << ")";
    if (got != reference.tokens[k]) {
      EXPECT_LE(std::fabs(row[got] - row[reference.tokens[k]]), tolerance)
          << label << ": token " << k << " is " << got << ", the loop's "
          << reference.tokens[k] << ", and they do not tie";
      return; // the sequences diverge from here on
    }
  }
}

void expectAllFree(const kiln::Engine &engine) {
  kiln_engine_stats_t stats = engine.stats();
  EXPECT_EQ(stats.num_running, 0);
  EXPECT_EQ(stats.num_waiting, 0);
  EXPECT_EQ(stats.num_blocks_used, 0);
  EXPECT_EQ(stats.num_blocks_free, stats.num_blocks_total);
}

std::vector<int64_t> promptOf(int32_t length, int64_t seed, int64_t vocab = 256) {
  std::vector<int64_t> prompt(length);
  for (int32_t i = 0; i < length; ++i)
    prompt[i] = (seed * 31 + i * 17 + i * i) % vocab;
  return prompt;
}

void runToEnd(kiln::Engine &engine) {
  for (int guard = 0; engine.step() > 0; ++guard)
    ASSERT_LT(guard, 100000) << "the engine does not finish";
}

//===--- Every decoder, mixed concurrent requests ------------------------===//

class EveryDecoder : public ::testing::TestWithParam<const char *> {};

TEST_P(EveryDecoder, MixedRequestsMatchThePlainLoop) {
  kiln::Model model(instance(), artifact(GetParam()));
  kiln::Model dense(instance(), artifact(denseOf(GetParam())));
  kiln::EngineOptions options;
  options.block_size = 8;
  options.max_num_batched_tokens = 16; // chunked prefills beside decodes
  kiln::Engine engine(model, options);
  const int64_t vocab =
      model.output(kiln_model_find_output(model.get(), "logits")).dims[2].size;

  struct Planned {
    int step;
    int32_t promptLength;
    int32_t maxTokens;
  };
  const std::vector<Planned> plan = {
      {0, 1, 20}, {0, 13, 24}, {2, 40, 12}, {5, 7, 30}, {9, 25, 16}, {9, 8, 9}};
  std::vector<Outcome> outcomes(plan.size());
  std::vector<std::vector<int64_t>> prompts;
  size_t next = 0;
  for (int step = 0; next < plan.size() || engine.hasUnfinished(); ++step) {
    ASSERT_LT(step, 10000);
    for (; next < plan.size() && plan[next].step == step; ++next) {
      prompts.push_back(promptOf(plan[next].promptLength, (int64_t)next, vocab));
      engine.addRequest(prompts.back(), greedy(plan[next].maxTokens),
                        recordInto(outcomes[next]));
    }
    engine.step();
  }
  for (size_t i = 0; i < plan.size(); ++i)
    expectMatchesLoop(greedyLoop(dense, prompts[i], plan[i].maxTokens), outcomes[i],
                      std::string(GetParam()) + " request " + std::to_string(i));
  EXPECT_GE(engine.stats().peak_num_running, 3);
  expectAllFree(engine);
}

// Each export twice: as exported (dense past and presents, gathered from
// the blocks each step) and compiled with the paged interface (the blocks
// read in place).
INSTANTIATE_TEST_SUITE_P(
    Decoders, EveryDecoder,
    ::testing::Values("gpt2_tiny", "llama_tiny", "gptj_tiny", "bloom_tiny",
                      "hf_gemma_kv_ts17", "hf_gpt_neox_kv_ts17", "hf_opt_kv_ts17",
                      "hf_phi3_kv_ts17", "hf_qwen3_kv_ts17", "gpt2_tiny_paged",
                      "llama_tiny_paged", "gptj_tiny_paged", "bloom_tiny_paged",
                      "hf_gemma_kv_ts17_paged", "hf_gpt_neox_kv_ts17_paged",
                      "hf_opt_kv_ts17_paged", "hf_phi3_kv_ts17_paged",
                      "hf_qwen3_kv_ts17_paged"));

//===--- A 16-bit pool ----------------------------------------------------===//

// A pool that stores keys and values in f16 or bf16 (kilnc --kv-dtype)
// holds twice the blocks of an f32 pool in the same bytes, and generates
// what the plain f32 loop does within the rounding of its stored rows:
// f16 keeps 11 significant bits, bf16 8.
struct SixteenBitPool {
  const char *name;
  double tolerance; // of a log-probability
};

class SixteenBitPools : public ::testing::TestWithParam<SixteenBitPool> {};

TEST_P(SixteenBitPools, MatchThePlainLoopWithinTheirRounding) {
  const std::string name = GetParam().name;
  kiln::Model model(instance(), artifact(name));
  kiln::Model f32Pool(instance(), artifact(denseOf(name) + "_paged"));
  kiln::Model dense(instance(), artifact(denseOf(name)));
  kiln::EngineOptions options;
  options.block_size = 8;
  options.kv_cache_bytes = 1 << 20;
  kiln::Engine engine(model, options), f32Engine(f32Pool, options);
  EXPECT_EQ(engine.stats().num_blocks_total, 2 * f32Engine.stats().num_blocks_total);
  const int64_t vocab =
      model.output(kiln_model_find_output(model.get(), "logits")).dims[2].size;
  const std::vector<int32_t> promptLengths = {5, 30, 17};
  std::vector<Outcome> outcomes(promptLengths.size());
  std::vector<std::vector<int64_t>> prompts;
  for (size_t i = 0; i < promptLengths.size(); ++i) {
    prompts.push_back(promptOf(promptLengths[i], (int64_t)i + 3, vocab));
    engine.addRequest(prompts.back(), greedy(24), recordInto(outcomes[i]));
  }
  runToEnd(engine);
  for (size_t i = 0; i < prompts.size(); ++i)
    expectMatchesLoop(greedyLoop(dense, prompts[i], 24), outcomes[i],
                      name + " request " + std::to_string(i), GetParam().tolerance);
  expectAllFree(engine);
}

// The largest log-probability errors seen: 3.3e-5 (f16, Llama) and 1e-7
// (bf16, GPT-2, whose tiny random logits barely move); a wrongly widened
// pool is off by far more than the bound.
INSTANTIATE_TEST_SUITE_P(KvDtypes, SixteenBitPools,
                         ::testing::Values(SixteenBitPool{"llama_tiny_paged_f16", 1e-3},
                                           SixteenBitPool{"gpt2_tiny_paged_bf16", 1e-3}),
                         [](const auto &info) { return std::string(info.param.name); });

//===--- Preemption, prefix caching, aborts, failures ---------------------===//

class BothInterfaces : public ::testing::TestWithParam<const char *> {};

TEST_P(BothInterfaces, PreemptedRequestsAreRecomputedAndMatch) {
  kiln::Model model(instance(), artifact(GetParam()));
  kiln::Model dense(instance(), artifact(denseOf(GetParam())));
  kiln::EngineOptions options;
  options.block_size = 8;
  // 20 blocks: one longest sequence (128 tokens, 16 blocks) and a little.
  options.kv_cache_bytes = 20 * 2 /*layers*/ * 2 * 2 /*kv heads*/ * 8 * 16 * 4;
  kiln::Engine engine(model, options);
  const int32_t maxTokens = 50;
  std::vector<Outcome> outcomes(5);
  std::vector<std::vector<int64_t>> prompts;
  for (int i = 0; i < 5; ++i) {
    prompts.push_back(promptOf(10 + 3 * i, i));
    engine.addRequest(prompts.back(), greedy(maxTokens), recordInto(outcomes[i]));
  }
  runToEnd(engine);
  EXPECT_GT(engine.stats().num_preemptions, 0u) << "the pool was meant to run out";
  for (int i = 0; i < 5; ++i)
    expectMatchesLoop(greedyLoop(dense, prompts[i], maxTokens), outcomes[i],
                      "request " + std::to_string(i));
  expectAllFree(engine);
}

TEST_P(BothInterfaces, SharedPrefixIsComputedOnce) {
  kiln::Model model(instance(), artifact(GetParam()));
  kiln::Model dense(instance(), artifact(denseOf(GetParam())));
  kiln::EngineOptions options;
  options.block_size = 8;
  kiln::Engine engine(model, options);
  std::vector<int64_t> shared = promptOf(40, 3); // 5 full blocks
  std::vector<std::vector<int64_t>> prompts;
  for (int i = 0; i < 4; ++i) {
    prompts.push_back(shared);
    prompts.back().push_back(100 + i);
    prompts.back().push_back(7);
  }
  std::vector<Outcome> outcomes(4);
  engine.addRequest(prompts[0], greedy(10), recordInto(outcomes[0]));
  engine.step(); // computes and caches the prefix
  for (int i = 1; i < 4; ++i)
    engine.addRequest(prompts[i], greedy(10), recordInto(outcomes[i]));
  runToEnd(engine);
  EXPECT_EQ(engine.stats().num_prefix_cache_hit_tokens, 3u * 40)
      << "each later request finds the 5 shared blocks";
  for (int i = 0; i < 4; ++i)
    expectMatchesLoop(greedyLoop(dense, prompts[i], 10), outcomes[i],
                      "request " + std::to_string(i));
  expectAllFree(engine);
  EXPECT_GT(engine.stats().num_blocks_cached, 0) << "kept for later prompts";
}

INSTANTIATE_TEST_SUITE_P(Llama, BothInterfaces,
                         ::testing::Values("llama_tiny", "llama_tiny_paged"));

TEST(EngineTest, PagedBlockSizeIsTheArtifacts) {
  kiln::Model model(instance(), artifact("llama_tiny_paged"));
  kiln::EngineOptions options;
  options.block_size = 16;
  try {
    kiln::Engine engine(model, options);
    ADD_FAILURE() << "a block size other than the artifact's must be refused";
  } catch (const kiln::Error &e) {
    EXPECT_NE(std::string(e.what()).find("block_size 16 differs from the 8-token blocks"),
              std::string::npos)
        << e.what();
  }
  kiln::Engine engine(model);
  EXPECT_EQ(engine.stats().block_size, 8);
}

TEST(EngineTest, NothingIsSharedWithoutPrefixCaching) {
  kiln::Model model(instance(), artifact("gpt2_tiny"));
  kiln::EngineOptions options;
  options.block_size = 8;
  options.enable_prefix_caching = 0;
  kiln::Engine engine(model, options);
  std::vector<int64_t> prompt = promptOf(40, 3);
  Outcome first, second;
  engine.addRequest(prompt, greedy(2), recordInto(first));
  engine.step();
  engine.addRequest(prompt, greedy(2), recordInto(second));
  runToEnd(engine);
  EXPECT_EQ(engine.stats().num_prefix_cache_hit_tokens, 0u);
  EXPECT_EQ(first.tokens, second.tokens);
}

TEST(EngineTest, StopTokensEndRequests) {
  kiln::Model model(instance(), artifact("gpt2_tiny"));
  kiln::Engine engine(model);
  std::vector<int64_t> prompt = promptOf(9, 1);
  Reference reference = greedyLoop(model, prompt, 8);
  kiln::SamplingParams params = greedy(8);
  int64_t stop = reference.tokens[3];
  params.stop_token_ids = &stop;
  params.num_stop_token_ids = 1;
  Outcome outcome;
  engine.addRequest(prompt, params, recordInto(outcome));
  runToEnd(engine);
  EXPECT_EQ(outcome.finish, KILN_FINISH_STOP);
  size_t firstStop = std::find(reference.tokens.begin(), reference.tokens.end(), stop) -
                     reference.tokens.begin();
  EXPECT_EQ(outcome.tokens.size(), firstStop + 1) << "the stop token is the last";
  expectAllFree(engine);
}

TEST(EngineTest, AbortEndsTheRequestAndFreesItsBlocks) {
  kiln::Model model(instance(), artifact("gpt2_tiny"));
  kiln::Engine engine(model);
  Outcome aborted, kept;
  kiln_request_id_t id =
      engine.addRequest(promptOf(20, 1), greedy(100), recordInto(aborted));
  engine.addRequest(promptOf(5, 2), greedy(12), recordInto(kept));
  engine.step();
  engine.step();
  engine.abort(id);
  EXPECT_THROW(engine.abort(id + 100), kiln::Error) << "an unknown id";
  runToEnd(engine);
  EXPECT_EQ(aborted.finish, KILN_FINISH_ABORT);
  EXPECT_EQ(aborted.finalEvents, 1);
  EXPECT_EQ(aborted.tokens.size(), 2u);
  EXPECT_EQ(kept.finish, KILN_FINISH_LENGTH);
  EXPECT_EQ(kept.tokens.size(), 12u);
  try {
    engine.abort(id);
    ADD_FAILURE() << "aborting a finished request must fail";
  } catch (const kiln::Error &e) {
    EXPECT_EQ(e.code(), KILN_STATUS_NOT_FOUND);
  }
  expectAllFree(engine);
}

TEST(EngineTest, TrappingRunFailsOnlyItsRequest) {
  // GPT-2's learned positions stop at 256, but this build allows 512 tokens:
  // the prefill chunk that reaches position 256 traps in the position
  // embedding's gather.
  kiln::Model model(instance(), artifact("gpt2_tiny_long"));
  kiln::EngineOptions options;
  options.max_num_batched_tokens = 80;
  kiln::Engine engine(model, options);
  Outcome failing, healthy;
  engine.addRequest(promptOf(300, 1), greedy(4), recordInto(failing));
  std::vector<int64_t> prompt = promptOf(6, 2);
  engine.addRequest(prompt, greedy(30), recordInto(healthy));
  runToEnd(engine);
  EXPECT_EQ(failing.finish, KILN_FINISH_ERROR);
  EXPECT_NE(failing.error.find("wpe/Gather"), std::string::npos) << failing.error;
  expectMatchesLoop(greedyLoop(model, prompt, 30), healthy, "the healthy request");
  expectAllFree(engine);
  // The engine goes on.
  Outcome after;
  engine.addRequest(prompt, greedy(3), recordInto(after));
  runToEnd(engine);
  EXPECT_EQ(after.tokens.size(), 3u);
  expectAllFree(engine);
}

//===--- Batch invariance -------------------------------------------------===//

/// Bytes of one block of a paged artifact's pool, from its kv_cache input
/// ([blocks, layers, 2, kv heads, block size, head size]).
uint64_t pagedBlockBytes(const kiln::Model &model) {
  const kiln_io_info_t pool = model.input(model.inputIndex("kv_cache"));
  uint64_t bytes = kiln_dtype_size(pool.dtype);
  for (int32_t d = 1; d < pool.rank; ++d)
    bytes *= pool.dims[d].size;
  return bytes;
}

// A seeded request's sampled tokens, and the log-probabilities they were
// drawn from to the bit, are the same alone (its prompt in chunks of the
// artifact's 64 tokens), with its prompt fed one token a step, and in a
// crowd: its prompt cut into other chunks (a 24-token budget shared with
// decodes), decoded in
// batches of changing size, its first 64 tokens' keys computed by another
// request (prefix caching), and recomputed after preemption (it is the
// newest when the pool runs out). Sampling at temperature 1 from a random
// model's nearly flat distribution over 256 tokens, any difference in
// rounding would change a draw. 240 tokens span two of the attention
// kernel's 128-key blocks. The artifacts allow 256 tokens (the models'
// positions); with a 16-bit pool, the kernel rounds a step's new rows as
// the engine stores them, or a key would be seen at two precisions.
class BatchInvariance : public ::testing::TestWithParam<const char *> {};

TEST_P(BatchInvariance, SeededRequestDrawsTheSameTokensInAnyBatch) {
  kiln::Model model(instance(), artifact(GetParam()));
  kiln::SamplingParams params;
  params.temperature = 1.0f;
  params.seed = 42;
  params.has_seed = 1;
  params.max_tokens = 90;
  params.logprobs = 0; // the chosen token's
  const std::vector<int64_t> prompt = promptOf(150, 4);
  Outcome alone, tokenByToken, crowded;
  for (int32_t budget : {0, 1}) {
    kiln::EngineOptions options;
    if (budget)
      options.max_num_batched_tokens = budget;
    kiln::Engine engine(model, options);
    engine.addRequest(prompt, params, recordInto(budget ? tokenByToken : alone));
    runToEnd(engine);
    expectAllFree(engine);
  }
  {
    kiln::EngineOptions options;
    options.max_num_batched_tokens = 24;
    options.kv_cache_bytes = 40 * pagedBlockBytes(model); // 320 tokens
    kiln::Engine engine(model, options);
    struct Other {
      std::vector<int64_t> prompt;
      int32_t maxTokens;
    };
    const std::vector<Other> others = {
        {promptOf(40, 1), 60},
        {promptOf(100, 2), 40},
        {std::vector<int64_t>(prompt.begin(), prompt.begin() + 64), 30},
        {promptOf(5, 3), 100},
        {promptOf(180, 5), 30}};
    std::vector<Outcome> outcomes(others.size());
    for (size_t i = 0; i < others.size(); ++i) {
      kiln::SamplingParams noise = params;
      noise.temperature = 0.8f;
      noise.seed = 7 + i;
      noise.max_tokens = others[i].maxTokens;
      engine.addRequest(others[i].prompt, noise, recordInto(outcomes[i]));
    }
    for (int i = 0; i < 4; ++i)
      engine.step();
    engine.addRequest(prompt, params, recordInto(crowded));
    runToEnd(engine);
    const kiln_engine_stats_t stats = engine.stats();
    EXPECT_GT(stats.num_preemptions, 0u) << "the pool was meant to run out";
    EXPECT_GT(stats.num_prefix_cache_hit_tokens, 0u) << "the prefix was meant to be shared";
    for (const Outcome &outcome : outcomes)
      EXPECT_EQ(outcome.finish, KILN_FINISH_LENGTH) << outcome.error;
    expectAllFree(engine);
  }
  ASSERT_EQ(alone.tokens.size(), 90u) << alone.error;
  EXPECT_EQ(tokenByToken.tokens, alone.tokens);
  EXPECT_EQ(tokenByToken.logprobs, alone.logprobs);
  EXPECT_EQ(crowded.tokens, alone.tokens);
  EXPECT_EQ(crowded.logprobs, alone.logprobs);
}

INSTANTIATE_TEST_SUITE_P(PagedDecoders, BatchInvariance,
                         ::testing::Values("llama_tiny_paged_256", "gpt2_tiny_paged_256",
                                           "llama_tiny_paged_256_f16",
                                           "gpt2_tiny_paged_256_bf16"));

//===--- The background loop and a soak -----------------------------------===//

TEST(EngineTest, BackgroundLoopServesRequestsFromOtherThreads) {
  kiln::Model model(instance(), artifact("gpt2_tiny"));
  kiln::Engine engine(model);
  engine.start();
  EXPECT_THROW(engine.step(), kiln::Error) << "the loop steps the engine";
  const int threads = 3, perThread = 4;
  std::vector<Outcome> outcomes(threads * perThread);
  std::vector<std::vector<int64_t>> prompts(outcomes.size());
  std::mutex mutex;
  std::condition_variable finished;
  std::atomic<int> done{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < threads; ++t)
    clients.emplace_back([&, t] {
      for (int i = 0; i < perThread; ++i) {
        int index = t * perThread + i;
        prompts[index] = promptOf(3 + index, index);
        auto record = recordInto(outcomes[index]);
        engine.addRequest(prompts[index], greedy(10),
                          [&, record](const kiln_engine_event_t &event) {
                            record(event);
                            if (event.finish_reason != KILN_FINISH_NONE) {
                              std::lock_guard<std::mutex> lock(mutex);
                              ++done;
                              finished.notify_all();
                            }
                          });
      }
    });
  for (std::thread &client : clients)
    client.join();
  {
    std::unique_lock<std::mutex> lock(mutex);
    ASSERT_TRUE(finished.wait_for(lock, std::chrono::seconds(60),
                                  [&] { return done == (int)outcomes.size(); }));
  }
  engine.stop();
  for (size_t i = 0; i < outcomes.size(); ++i)
    expectMatchesLoop(greedyLoop(model, prompts[i], 10), outcomes[i],
                      "request " + std::to_string(i));
  expectAllFree(engine);
}

TEST(EngineTest, SoakWithRandomAbortsLeaksNoBlock) {
  kiln::Model model(instance(), artifact("gpt2_tiny"));
  kiln::EngineOptions options;
  options.block_size = 4;
  options.max_num_batched_tokens = 48;
  options.kv_cache_bytes = 48 * 2 * 2 * 4 * 4 * 16 * 4; // 48 blocks: preemptions
  kiln::Engine engine(model, options);
  std::mt19937 random(2024);
  const int total = 2000;
  std::vector<Outcome> outcomes(total);
  std::vector<kiln_request_id_t> ids;
  int added = 0;
  while (added < total || engine.hasUnfinished()) {
    for (int burst = random() % 4; burst > 0 && added < total; --burst, ++added) {
      kiln::SamplingParams params;
      params.temperature = (random() % 2) ? 0.0f : 1.0f;
      params.top_k = random() % 3 == 0 ? 5 : 0;
      params.max_tokens = 1 + random() % 20;
      ids.push_back(engine.addRequest(promptOf(1 + random() % 30, added), params,
                                      recordInto(outcomes[added])));
    }
    if (!ids.empty() && random() % 5 == 0) {
      kiln_request_id_t id = ids[random() % ids.size()];
      try {
        engine.abort(id);
      } catch (const kiln::Error &e) {
        EXPECT_EQ(e.code(), KILN_STATUS_NOT_FOUND) << e.what();
      }
    }
    engine.step();
  }
  int aborted = 0;
  for (const Outcome &outcome : outcomes) {
    ASSERT_EQ(outcome.finalEvents, 1);
    EXPECT_NE(outcome.finish, KILN_FINISH_ERROR) << outcome.error;
    aborted += outcome.finish == KILN_FINISH_ABORT;
  }
  kiln_engine_stats_t stats = engine.stats();
  EXPECT_GT(aborted, 0);
  EXPECT_GT(stats.num_preemptions, 0u);
  EXPECT_EQ(stats.num_finished_requests, (uint64_t)total);
  expectAllFree(engine);
}

//===--- Refusals ----------------------------------------------------------===//

void expectError(const std::function<void()> &body, kiln_status_code_t code,
                 const std::string &fragment) {
  try {
    body();
    ADD_FAILURE() << "expected an error naming '" << fragment << "'";
  } catch (const kiln::Error &e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(EngineTest, RefusesAModelWithoutTheKvCacheInterface) {
  // The runtime API tests' model (an MLP: inputs x, b and ids), which CMake
  // compiles next to the engine's.
  kiln::Model model(instance(), artifact("../runtime_model"));
  expectError([&] { kiln::Engine engine(model); }, KILN_STATUS_INVALID_ARGUMENT,
              "input 'x'");
}

TEST(EngineTest, RefusesBadOptionsAndRequests) {
  kiln::Model model(instance(), artifact("gpt2_tiny"));
  kiln::EngineOptions small;
  small.kv_cache_bytes = 1000;
  expectError([&] { kiln::Engine engine(model, small); },
              KILN_STATUS_INVALID_ARGUMENT, "one sequence of the model's longest");
  kiln::EngineOptions hugeBlock;
  hugeBlock.block_size = 5000;
  expectError([&] { kiln::Engine engine(model, hugeBlock); },
              KILN_STATUS_INVALID_ARGUMENT, "block_size must be in [1, 4096]");

  kiln::Engine engine(model);
  auto add = [&](std::vector<int64_t> prompt, kiln::SamplingParams params) {
    return [&engine, prompt, params] { engine.addRequest(prompt, params, nullptr); };
  };
  expectError(add({}, greedy(1)), KILN_STATUS_INVALID_ARGUMENT, "prompt_ids");
  expectError(add({1, 256}, greedy(1)), KILN_STATUS_INVALID_ARGUMENT,
              "prompt_ids[1] = 256 is outside the vocabulary");
  expectError(add(promptOf(129, 0), greedy(1)), KILN_STATUS_INVALID_ARGUMENT,
              "longest sequence (128)");
  kiln::SamplingParams bad = greedy(1);
  bad.top_p = 0;
  expectError(add({1}, bad), KILN_STATUS_INVALID_ARGUMENT, "top_p");
  bad = greedy(0);
  expectError(add({1}, bad), KILN_STATUS_INVALID_ARGUMENT, "max_tokens");
  bad = greedy(1);
  bad.temperature = -1;
  expectError(add({1}, bad), KILN_STATUS_INVALID_ARGUMENT, "temperature");
  EXPECT_FALSE(engine.hasUnfinished()) << "refused requests are not queued";
}

TEST(EngineTest, LongestSequenceEndsWithLength) {
  kiln::Model model(instance(), artifact("gpt2_tiny"));
  kiln::Engine engine(model);
  Outcome outcome;
  engine.addRequest(promptOf(120, 1), greedy(100), recordInto(outcome));
  runToEnd(engine);
  EXPECT_EQ(outcome.finish, KILN_FINISH_LENGTH);
  // Tokens 121..128 are computed; the one sampled from position 128 ends it.
  EXPECT_EQ(outcome.tokens.size(), 9u);
  expectAllFree(engine);
}

} // namespace
