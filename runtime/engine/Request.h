// One generation request as the engine tracks it.
#ifndef KILN_ENGINE_REQUEST_H
#define KILN_ENGINE_REQUEST_H

#include "BlockPool.h"
#include "kiln/engine.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kiln::engine {

using RequestId = kiln_request_id_t;

struct SamplingParams {
  float temperature = 1.0f;
  int32_t topK = 0;
  float topP = 1.0f;
  float minP = 0.0f;
  float repetitionPenalty = 1.0f;
  float presencePenalty = 0.0f;
  float frequencyPenalty = 0.0f;
  std::optional<uint64_t> seed;
  int32_t maxTokens = 16;
  std::vector<int64_t> stopTokenIds;
  int32_t logprobs = -1;

  /// The C struct's values, checked: an error names the field out of range,
  /// and is empty when all are valid.
  static SamplingParams fromC(const kiln_sampling_params_t &params,
                              std::string &error);
};

struct Request {
  RequestId id = 0;
  /// The prompt, then every token generated so far.
  std::vector<int64_t> tokens;
  int32_t numPromptTokens = 0;
  SamplingParams params;
  kiln_engine_event_callback_t callback = nullptr;
  void *userData = nullptr;

  /// Leading tokens whose keys and values are in `blocks`.
  int32_t numComputedTokens = 0;
  /// The KV blocks, in token order: block i holds tokens
  /// [i * blockSize, (i + 1) * blockSize).
  std::vector<BlockId> blocks;
  /// Leading blocks registered in the prefix cache, and the hash of the
  /// last of them (the parent of the next).
  int32_t numCachedBlocks = 0;
  uint64_t lastCachedHash = 0;

  /// The state of the request's own random stream (see Sampler).
  uint64_t rngState = 0;
  int32_t numPreemptions = 0;

  int32_t numTokens() const { return (int32_t)tokens.size(); }
  int32_t numOutputTokens() const { return numTokens() - numPromptTokens; }
};

} // namespace kiln::engine

#endif // KILN_ENGINE_REQUEST_H
