#include "Request.h"

#include <cmath>

namespace kiln::engine {

SamplingParams SamplingParams::fromC(const kiln_sampling_params_t &c,
                                     std::string &error) {
  SamplingParams params;
  auto check = [&error](bool ok, const char *what) {
    if (!ok && error.empty())
      error = what;
  };
  check(std::isfinite(c.temperature) && c.temperature >= 0,
        "temperature must be >= 0");
  check(c.top_k >= 0, "top_k must be >= 0 (0 keeps every token)");
  check(c.top_p > 0 && c.top_p <= 1, "top_p must be in (0, 1]");
  check(c.min_p >= 0 && c.min_p <= 1, "min_p must be in [0, 1]");
  check(std::isfinite(c.repetition_penalty) && c.repetition_penalty > 0,
        "repetition_penalty must be > 0");
  check(std::isfinite(c.presence_penalty), "presence_penalty must be finite");
  check(std::isfinite(c.frequency_penalty), "frequency_penalty must be finite");
  check(c.max_tokens >= 1, "max_tokens must be >= 1");
  check(c.num_stop_token_ids >= 0 && (c.num_stop_token_ids == 0 || c.stop_token_ids),
        "stop_token_ids is NULL or num_stop_token_ids negative");
  check(c.logprobs >= -1 && c.logprobs <= 20, "logprobs must be in [-1, 20]");
  if (!error.empty())
    return params;
  params.temperature = c.temperature;
  params.topK = c.top_k;
  params.topP = c.top_p;
  params.minP = c.min_p;
  params.repetitionPenalty = c.repetition_penalty;
  params.presencePenalty = c.presence_penalty;
  params.frequencyPenalty = c.frequency_penalty;
  if (c.has_seed)
    params.seed = c.seed;
  params.maxTokens = c.max_tokens;
  params.stopTokenIds.assign(c.stop_token_ids,
                             c.stop_token_ids + c.num_stop_token_ids);
  params.logprobs = c.logprobs;
  return params;
}

} // namespace kiln::engine
