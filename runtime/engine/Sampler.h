// Picks a request's next token from its logits: penalties, then greedy or
// temperature sampling through top-k, top-p and min-p, drawing from the
// request's own random stream.
#ifndef KILN_ENGINE_SAMPLER_H
#define KILN_ENGINE_SAMPLER_H

#include "Request.h"

#include <cstdint>
#include <vector>

namespace kiln::engine {

struct SampledToken {
  int64_t token = -1;
  /// log-softmax of the raw logits (what the model says, before penalties,
  /// temperature and filters), when the request asked for logprobs.
  float logprob = 0.0f;
  std::vector<int64_t> topTokens; // the request's `logprobs` most likely
  std::vector<float> topLogprobs;
};

/// Seeds a request's random stream: from its seed when it has one, so that
/// its tokens depend on nothing else.
uint64_t initialRngState(const SamplingParams &params, uint64_t fallbackSeed);

class Sampler {
public:
  /// Samples the next token of `request` from its `vocabSize` logits, and
  /// advances its random stream.
  SampledToken sample(Request &request, const float *logits, int32_t vocabSize);

private:
  std::vector<float> adjusted_;            // logits after penalties
  std::vector<int32_t> order_;             // candidate token ids
  std::vector<int32_t> counts_;            // output occurrences per token
  std::vector<char> seen_;                 // tokens the repetition penalty hit
  std::vector<int64_t> touched_;           // tokens whose counts_ are set
};

} // namespace kiln::engine

#endif // KILN_ENGINE_SAMPLER_H
