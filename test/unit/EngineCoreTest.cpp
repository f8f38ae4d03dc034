//===- EngineCoreTest.cpp - The engine's block pool, KV cache manager, ----===//
//    scheduler and sampler, without a model
//===----------------------------------------------------------------------===//
#include "runtime/engine/KVCacheManager.h"
#include "runtime/engine/Sampler.h"
#include "runtime/engine/Scheduler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <numeric>

using namespace kiln::engine;

namespace {

Request makeRequest(RequestId id, std::vector<int64_t> tokens) {
  Request request;
  request.id = id;
  request.numPromptTokens = (int32_t)tokens.size();
  request.tokens = std::move(tokens);
  return request;
}

std::vector<int64_t> iota(int64_t count, int64_t first = 0) {
  std::vector<int64_t> values(count);
  std::iota(values.begin(), values.end(), first);
  return values;
}

//===--- BlockPool ---------------------------------------------------------===//

TEST(BlockPoolTest, AllocatesUntilEmptyAndFreesInOrder) {
  BlockPool pool(4, /*enablePrefixCaching=*/true);
  auto first = pool.allocate(3);
  ASSERT_TRUE(first);
  EXPECT_EQ(*first, (std::vector<BlockId>{0, 1, 2}));
  EXPECT_EQ(pool.numFree(), 1);
  EXPECT_FALSE(pool.allocate(2)) << "only one block is free";
  EXPECT_EQ(pool.numFree(), 1) << "a refused allocation takes nothing";
  pool.release({2, 0});
  EXPECT_EQ(pool.numFree(), 3);
  // The free queue: 3 (never used), then 2 and 0 in the order released.
  auto second = pool.allocate(3);
  ASSERT_TRUE(second);
  EXPECT_EQ(*second, (std::vector<BlockId>{3, 2, 0}));
}

TEST(BlockPoolTest, SharedBlockIsFreeOnlyAfterItsLastReference) {
  BlockPool pool(2, true);
  auto blocks = *pool.allocate(1);
  pool.acquire(blocks[0]);
  EXPECT_EQ(pool.refCount(blocks[0]), 2);
  pool.release(blocks);
  EXPECT_EQ(pool.numFree(), 1);
  pool.release(blocks);
  EXPECT_EQ(pool.numFree(), 2);
}

TEST(BlockPoolTest, CachedBlockIsFoundUntilAllocationEvictsIt) {
  BlockPool pool(2, true);
  auto blocks = *pool.allocate(2);
  BlockKey key{0, {1, 2, 3, 4}};
  pool.cache(blocks[0], key);
  pool.release(blocks); // free queue: 0 (cached), 1
  EXPECT_EQ(pool.numCachedFree(), 1);
  ASSERT_TRUE(pool.lookup(key));
  EXPECT_EQ(*pool.lookup(key), blocks[0]);
  EXPECT_FALSE(pool.lookup(BlockKey{0, {1, 2, 3, 5}})) << "other tokens";
  EXPECT_FALSE(pool.lookup(BlockKey{key.hash(), {1, 2, 3, 4}}))
      << "the same tokens after another prefix";
  // Reusing the cached block takes it out of the free queue.
  pool.acquire(blocks[0]);
  EXPECT_EQ(pool.numFree(), 1);
  pool.release({blocks[0]});
  // Least recently freed first: block 1, then the cached block 0, whose
  // content is forgotten when it is reused.
  EXPECT_EQ(*pool.allocate(1), std::vector<BlockId>{blocks[1]});
  EXPECT_TRUE(pool.lookup(key));
  EXPECT_EQ(*pool.allocate(1), std::vector<BlockId>{blocks[0]});
  EXPECT_FALSE(pool.lookup(key));
}

TEST(BlockPoolTest, NothingIsCachedWithPrefixCachingOff) {
  BlockPool pool(1, false);
  auto blocks = *pool.allocate(1);
  BlockKey key{0, {7}};
  pool.cache(blocks[0], key);
  pool.release(blocks);
  EXPECT_FALSE(pool.lookup(key));
}

//===--- KVCacheManager ----------------------------------------------------===//

TEST(KVCacheManagerTest, AllocatesWholeBlocksAsTheRequestGrows) {
  KVCacheManager cache(8, 4, true);
  Request request = makeRequest(1, iota(6));
  ASSERT_TRUE(cache.allocate(request, 6));
  EXPECT_EQ(request.blocks.size(), 2u);
  request.numComputedTokens = 6;
  request.tokens.push_back(6);
  ASSERT_TRUE(cache.allocate(request, 1));
  EXPECT_EQ(request.blocks.size(), 2u) << "token 7 fits in the second block";
  request.numComputedTokens = 7;
  request.tokens.push_back(7);
  request.tokens.push_back(8);
  ASSERT_TRUE(cache.allocate(request, 2));
  EXPECT_EQ(request.blocks.size(), 3u);
  cache.free(request);
  EXPECT_EQ(cache.pool().numFree(), 8);
  EXPECT_TRUE(request.blocks.empty());
}

TEST(KVCacheManagerTest, RefusedAllocationChangesNothing) {
  KVCacheManager cache(2, 4, true);
  Request request = makeRequest(1, iota(12));
  EXPECT_FALSE(cache.allocate(request, 12));
  EXPECT_TRUE(request.blocks.empty());
  EXPECT_EQ(cache.pool().numFree(), 2);
}

TEST(KVCacheManagerTest, PrefixHitSharesBlocksAndLeavesTheLastTokenToCompute) {
  KVCacheManager cache(16, 4, true);
  Request first = makeRequest(1, iota(10));
  ASSERT_TRUE(cache.allocate(first, 10));
  first.numComputedTokens = 10;
  cache.cacheComputedBlocks(first); // blocks [0,4) and [4,8)

  Request same = makeRequest(2, iota(10));
  CachedPrefix prefix = cache.findCachedPrefix(same);
  EXPECT_EQ(prefix.blocks, (std::vector<BlockId>{first.blocks[0], first.blocks[1]}));
  ASSERT_TRUE(cache.allocate(same, 2, prefix));
  EXPECT_EQ(same.numComputedTokens, 8);
  EXPECT_EQ(cache.pool().refCount(first.blocks[0]), 2);

  // A prompt that is exactly two blocks long reuses only the first: its
  // last token must run to give logits.
  Request exact = makeRequest(3, iota(8));
  EXPECT_EQ(cache.findCachedPrefix(exact).blocks.size(), 1u);

  // Another first block hides the second block too.
  std::vector<int64_t> tokens = iota(10);
  tokens[0] = 99;
  Request other = makeRequest(4, tokens);
  EXPECT_TRUE(cache.findCachedPrefix(other).blocks.empty());

  cache.free(first);
  cache.free(same);
  EXPECT_EQ(cache.pool().numFree(), 16);
  // Freed, the blocks stay findable until reused.
  EXPECT_EQ(cache.findCachedPrefix(makeRequest(5, iota(10))).blocks.size(), 2u);
}

//===--- Scheduler ---------------------------------------------------------===//

TEST(SchedulerTest, ChunksLongPromptsUnderTheTokenBudget) {
  KVCacheManager cache(64, 4, true);
  Scheduler scheduler({/*maxNumSeqs=*/8, /*maxNumBatchedTokens=*/10,
                       /*maxChunkTokens=*/64},
                      cache);
  Request a = makeRequest(1, iota(25)), b = makeRequest(2, iota(3, 100));
  scheduler.add(&a);
  scheduler.add(&b);
  SchedulerOutput out = scheduler.schedule();
  ASSERT_EQ(out.scheduled.size(), 1u) << "a's first chunk takes the budget";
  EXPECT_EQ(out.scheduled[0].numNewTokens, 10);
  EXPECT_FALSE(out.scheduled[0].samples);
  a.numComputedTokens += 10;

  out = scheduler.schedule();
  ASSERT_EQ(out.scheduled.size(), 1u);
  EXPECT_EQ(out.scheduled[0].numNewTokens, 10);
  a.numComputedTokens += 10;

  out = scheduler.schedule();
  ASSERT_EQ(out.scheduled.size(), 2u) << "a's last 5 tokens leave room for b";
  EXPECT_EQ(out.scheduled[0].request, &a);
  EXPECT_EQ(out.scheduled[0].numNewTokens, 5);
  EXPECT_TRUE(out.scheduled[0].samples);
  EXPECT_EQ(out.scheduled[1].request, &b);
  EXPECT_EQ(out.scheduled[1].numNewTokens, 3);
  EXPECT_EQ(out.numScheduledTokens, 8);
}

TEST(SchedulerTest, PreemptsTheNewestWhenBlocksRunOut) {
  // 4 blocks of 4 tokens; two requests of 7 tokens take 2 blocks each.
  KVCacheManager cache(4, 4, false);
  Scheduler scheduler({8, 64, 64}, cache);
  Request older = makeRequest(1, iota(7)), newer = makeRequest(2, iota(7, 50));
  scheduler.add(&older);
  scheduler.add(&newer);
  SchedulerOutput out = scheduler.schedule();
  ASSERT_EQ(out.scheduled.size(), 2u);
  for (Request *r : {&older, &newer}) {
    r->numComputedTokens = 7;
    r->tokens.push_back(1); // the sampled token: 8 tokens, still 2 blocks
  }
  out = scheduler.schedule();
  ASSERT_EQ(out.scheduled.size(), 2u);
  for (Request *r : {&older, &newer}) {
    r->numComputedTokens = 8;
    r->tokens.push_back(1); // 9 tokens: each needs a third block
  }
  out = scheduler.schedule();
  ASSERT_EQ(out.preempted, std::vector<Request *>{&newer});
  ASSERT_EQ(out.scheduled.size(), 1u);
  EXPECT_EQ(out.scheduled[0].request, &older);
  EXPECT_EQ(newer.numComputedTokens, 0) << "recomputed when readmitted";
  EXPECT_TRUE(newer.blocks.empty());
  EXPECT_EQ(newer.numPreemptions, 1);
  EXPECT_EQ(scheduler.numWaiting(), 1);
  EXPECT_EQ(older.blocks.size(), 3u);

  scheduler.remove(&older);
  out = scheduler.schedule();
  ASSERT_EQ(out.scheduled.size(), 1u);
  EXPECT_EQ(out.scheduled[0].request, &newer);
  EXPECT_EQ(out.scheduled[0].numNewTokens, 9) << "the prompt and its output";
  EXPECT_TRUE(out.scheduled[0].samples);
  scheduler.remove(&newer);
  EXPECT_EQ(cache.pool().numFree(), 4);
}

TEST(SchedulerTest, AdmitsNoMoreThanMaxNumSeqs) {
  KVCacheManager cache(64, 4, false);
  Scheduler scheduler({2, 512, 64}, cache);
  Request a = makeRequest(1, {1}), b = makeRequest(2, {2}), c = makeRequest(3, {3});
  for (Request *r : {&a, &b, &c})
    scheduler.add(r);
  EXPECT_EQ(scheduler.schedule().scheduled.size(), 2u);
  EXPECT_EQ(scheduler.numWaiting(), 1);
  for (Request *r : {&a, &b, &c})
    scheduler.remove(r);
}

//===--- Sampler -----------------------------------------------------------===//

Request requestWith(SamplingParams params, uint64_t seed = 7) {
  Request request = makeRequest(1, {0});
  request.params = params;
  request.rngState = initialRngState(params, seed);
  return request;
}

TEST(SamplerTest, GreedyTakesTheLargestAndTheLowestIdOnTies) {
  SamplingParams params;
  params.temperature = 0;
  Request request = requestWith(params);
  Sampler sampler;
  std::vector<float> logits = {0.5f, 2.0f, -1.0f, 2.0f};
  EXPECT_EQ(sampler.sample(request, logits.data(), 4).token, 1);
}

TEST(SamplerTest, TopKOfOneIsGreedyAtAnyTemperature) {
  SamplingParams params;
  params.temperature = 5.0f;
  params.topK = 1;
  Request request = requestWith(params);
  Sampler sampler;
  std::vector<float> logits = {0.1f, 0.3f, 0.2f};
  for (int i = 0; i < 50; ++i)
    EXPECT_EQ(sampler.sample(request, logits.data(), 3).token, 1);
}

TEST(SamplerTest, TopPAndMinPKeepOnlyTheLikelyTokens) {
  // Probabilities ~ 0.64, 0.24, 0.09, 0.03.
  std::vector<float> logits = {3.0f, 2.0f, 1.0f, 0.0f};
  Sampler sampler;
  SamplingParams topP;
  topP.topP = 0.8f; // 0.64 < 0.8 <= 0.88: tokens 0 and 1
  Request a = requestWith(topP);
  SamplingParams minP;
  minP.minP = 0.3f; // keeps p >= 0.3 * 0.64 = 0.19: tokens 0 and 1
  Request b = requestWith(minP);
  std::map<int64_t, int> seenA, seenB;
  for (int i = 0; i < 2000; ++i) {
    ++seenA[sampler.sample(a, logits.data(), 4).token];
    ++seenB[sampler.sample(b, logits.data(), 4).token];
  }
  for (auto *seen : {&seenA, &seenB}) {
    EXPECT_EQ(seen->size(), 2u);
    EXPECT_GT((*seen)[1], 300) << "token 1 keeps ~27% of the draws";
    EXPECT_EQ(seen->count(2), 0u);
  }
}

TEST(SamplerTest, DrawsFollowTheTemperedDistribution) {
  std::vector<float> logits = {1.0f, 0.0f, -1.0f};
  SamplingParams params;
  params.temperature = 2.0f;
  Request request = requestWith(params);
  Sampler sampler;
  std::vector<int> counts(3);
  const int draws = 20000;
  for (int i = 0; i < draws; ++i)
    ++counts[sampler.sample(request, logits.data(), 3).token];
  double z = std::exp(0.5) + 1 + std::exp(-0.5);
  std::vector<double> expected = {std::exp(0.5) / z, 1 / z, std::exp(-0.5) / z};
  for (int t = 0; t < 3; ++t) // ~4 standard deviations at 20000 draws
    EXPECT_NEAR(counts[t] / (double)draws, expected[t], 0.015) << "token " << t;
}

TEST(SamplerTest, SeedMakesTheDrawsReproducible) {
  std::vector<float> logits(50);
  for (int i = 0; i < 50; ++i)
    logits[i] = std::sin(i * 1.7f);
  SamplingParams params;
  params.seed = 1234;
  auto draw = [&](uint64_t fallback) {
    Request request = requestWith(params, fallback);
    Sampler sampler;
    std::vector<int64_t> tokens;
    for (int i = 0; i < 30; ++i)
      tokens.push_back(sampler.sample(request, logits.data(), 50).token);
    return tokens;
  };
  std::vector<int64_t> tokens = draw(1);
  EXPECT_EQ(tokens, draw(2)) << "the seed, not the engine's fallback, decides";
  params.seed = 1235;
  EXPECT_NE(tokens, draw(1)) << "another seed, other tokens";
  params.seed.reset();
  EXPECT_NE(draw(1), draw(2)) << "without a seed, the fallback decides";
}

TEST(SamplerTest, PenaltiesFollowTheirDefinitions) {
  Sampler sampler;
  std::vector<float> logits = {2.0f, 1.9f, -1.0f, -1.05f};
  SamplingParams params;
  params.temperature = 0;
  params.repetitionPenalty = 1.2f; // token 0 is in the prompt: 2.0 / 1.2 < 1.9
  Request request = requestWith(params);
  EXPECT_EQ(sampler.sample(request, logits.data(), 4).token, 1);

  // Presence and frequency count only the output: token 1 twice.
  params = SamplingParams();
  params.temperature = 0;
  params.frequencyPenalty = 0.1f;
  Request freq = requestWith(params);
  freq.tokens = {1, 1, 1};
  freq.numPromptTokens = 1;
  std::vector<float> close = {1.75f, 1.9f};
  EXPECT_EQ(sampler.sample(freq, close.data(), 2).token, 0) << "1.9 - 2 * 0.1 < 1.75";
  params.frequencyPenalty = 0;
  params.presencePenalty = 0.1f;
  Request presence = requestWith(params);
  presence.tokens = {1, 1, 1};
  presence.numPromptTokens = 1;
  EXPECT_EQ(sampler.sample(presence, close.data(), 2).token, 1) << "1.9 - 0.1 > 1.75";
  // The negative logit is multiplied: -1.0 * 1.2 < -1.05.
  params = SamplingParams();
  params.temperature = 0;
  params.repetitionPenalty = 1.2f;
  Request negative = requestWith(params);
  negative.tokens = {0, 1, 2};
  std::vector<float> low = {-9.0f, -9.0f, -1.0f, -1.05f};
  EXPECT_EQ(sampler.sample(negative, low.data(), 4).token, 3);
}

TEST(SamplerTest, LogprobsAreTheRawLogSoftmax) {
  std::vector<float> logits = {1.0f, 3.0f, 2.0f};
  SamplingParams params;
  params.temperature = 0;
  params.repetitionPenalty = 100.0f; // changes the choice, not the logprobs
  params.logprobs = 2;
  Request request = requestWith(params);
  request.tokens = {1};
  Sampler sampler;
  SampledToken token = sampler.sample(request, logits.data(), 3);
  double lse = std::log(std::exp(1.0) + std::exp(3.0) + std::exp(2.0));
  EXPECT_EQ(token.token, 2);
  EXPECT_NEAR(token.logprob, 2.0 - lse, 1e-6);
  ASSERT_EQ(token.topTokens, (std::vector<int64_t>{1, 2}));
  EXPECT_NEAR(token.topLogprobs[0], 3.0 - lse, 1e-6);
  EXPECT_NEAR(token.topLogprobs[1], 2.0 - lse, 1e-6);
}

} // namespace
