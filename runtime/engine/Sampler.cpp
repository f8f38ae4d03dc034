#include "Sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace kiln::engine {

namespace {

// splitmix64: a small, well-mixed generator whose whole state is one word,
// kept in the request.
uint64_t nextRandom(uint64_t &state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// A uniform double in [0, 1) from the top 53 bits.
double nextUniform(uint64_t &state) {
  return (double)(nextRandom(state) >> 11) * 0x1.0p-53;
}

// log-sum-exp of the logits, for log-softmax.
double logSumExp(const float *logits, int32_t count) {
  float maxLogit = *std::max_element(logits, logits + count);
  double sum = 0.0;
  for (int32_t i = 0; i < count; ++i)
    sum += std::exp((double)logits[i] - maxLogit);
  return maxLogit + std::log(sum);
}

} // namespace

uint64_t initialRngState(const SamplingParams &params, uint64_t fallbackSeed) {
  uint64_t state = params.seed ? *params.seed : fallbackSeed;
  // One draw, so that seeds 0, 1, 2 ... start far apart.
  nextRandom(state);
  return state;
}

SampledToken Sampler::sample(Request &request, const float *logits,
                             int32_t vocabSize) {
  const SamplingParams &params = request.params;
  SampledToken result;
  double lse = params.logprobs >= 0 ? logSumExp(logits, vocabSize) : 0.0;

  if (params.logprobs >= 0) {
    int32_t top = std::min(params.logprobs, vocabSize);
    order_.resize(vocabSize);
    std::iota(order_.begin(), order_.end(), 0);
    std::partial_sort(order_.begin(), order_.begin() + top, order_.end(),
                      [&](int32_t a, int32_t b) {
                        return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
                      });
    for (int32_t i = 0; i < top; ++i) {
      result.topTokens.push_back(order_[i]);
      result.topLogprobs.push_back((float)(logits[order_[i]] - lse));
    }
  }

  adjusted_.assign(logits, logits + vocabSize);
  if (params.repetitionPenalty != 1.0f) {
    // Once per distinct token of the prompt and the output, as in CTRL and
    // vLLM.
    seen_.assign(vocabSize, 0);
    for (int64_t token : request.tokens) {
      if (seen_[token])
        continue;
      seen_[token] = 1;
      float &logit = adjusted_[token];
      logit = logit > 0 ? logit / params.repetitionPenalty
                        : logit * params.repetitionPenalty;
    }
  }
  if (params.presencePenalty != 0.0f || params.frequencyPenalty != 0.0f) {
    counts_.resize(vocabSize);
    touched_.clear();
    for (int32_t i = request.numPromptTokens; i < request.numTokens(); ++i) {
      int64_t token = request.tokens[i];
      if (counts_[token]++ == 0)
        touched_.push_back(token);
    }
    for (int64_t token : touched_) {
      adjusted_[token] -= params.presencePenalty +
                          params.frequencyPenalty * (float)counts_[token];
      counts_[token] = 0;
    }
  }

  if (params.temperature == 0.0f) {
    // Greedy: the first of the largest, so ties go to the lowest id.
    result.token = std::max_element(adjusted_.begin(), adjusted_.end()) -
                   adjusted_.begin();
  } else {
    // Candidates most likely first; top-k, top-p and min-p each keep a
    // prefix of them.
    order_.resize(vocabSize);
    std::iota(order_.begin(), order_.end(), 0);
    auto moreLikely = [&](int32_t a, int32_t b) {
      return adjusted_[a] > adjusted_[b] || (adjusted_[a] == adjusted_[b] && a < b);
    };
    int32_t kept = vocabSize;
    if (params.topK > 0 && params.topK < vocabSize) {
      kept = params.topK;
      std::partial_sort(order_.begin(), order_.begin() + kept, order_.end(),
                        moreLikely);
    } else {
      std::sort(order_.begin(), order_.end(), moreLikely);
    }
    float maxLogit = adjusted_[order_[0]];
    std::vector<double> probs(kept);
    double sum = 0.0;
    for (int32_t i = 0; i < kept; ++i) {
      probs[i] = std::exp(((double)adjusted_[order_[i]] - maxLogit) /
                          params.temperature);
      sum += probs[i];
    }
    if (params.topP < 1.0f) {
      double cumulative = 0.0;
      for (int32_t i = 0; i < kept; ++i) {
        cumulative += probs[i] / sum;
        if (cumulative >= params.topP) {
          kept = i + 1;
          break;
        }
      }
    }
    if (params.minP > 0.0f) {
      // probs[0] is the largest; the rest fall off in order.
      int32_t i = 1;
      while (i < kept && probs[i] >= params.minP * probs[0])
        ++i;
      kept = i;
    }
    double keptSum = std::accumulate(probs.begin(), probs.begin() + kept, 0.0);
    double target = nextUniform(request.rngState) * keptSum;
    int32_t chosen = kept - 1;
    double cumulative = 0.0;
    for (int32_t i = 0; i < kept; ++i) {
      cumulative += probs[i];
      if (target < cumulative) {
        chosen = i;
        break;
      }
    }
    result.token = order_[chosen];
  }

  if (params.logprobs >= 0)
    result.logprob = (float)(logits[result.token] - lse);
  return result;
}

} // namespace kiln::engine
