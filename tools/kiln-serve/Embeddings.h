//===- Embeddings.h - /v1/embeddings over an encoder ----------------------===//
//
// An encoder artifact (input_ids, and attention_mask / token_type_ids where
// it has them; a [batch, sequence, hidden] output) answers OpenAI's
// embeddings API through the engine's dynamic batcher: each input is its own
// request, batched with whatever else arrives within the batcher's delay, and
// its hidden states are pooled into one vector (the mean over its tokens, or
// the first token's).
//
//===----------------------------------------------------------------------===//
#ifndef KILN_TOOLS_KILN_SERVE_EMBEDDINGS_H
#define KILN_TOOLS_KILN_SERVE_EMBEDDINGS_H

#include "Protocol.h"

namespace kiln::serve {

enum class Pooling { Mean, First };

class Embedder {
public:
  /// Refuses (kiln::Error) a model whose inputs or outputs an embedding
  /// cannot be made from, naming them.
  Embedder(const kiln::Model &model, Pooling pooling, int64_t maxQueueDelayUs);
  /// The OpenAI answer to a /v1/embeddings body; ApiError for a bad one.
  Json embed(const Json &body, const ServedModel &served);

private:
  const kiln::Model &model_;
  Pooling pooling_;
  kiln::DynamicBatcher batcher_;
  std::vector<std::string> inputs_; // the model's inputs, in order
  int32_t output_ = 0;              // the hidden states
};

/// Whether the model is an encoder Embedder can serve (no logits).
bool isEncoder(const kiln::Model &model);

} // namespace kiln::serve

#endif
