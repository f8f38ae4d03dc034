// Runs the scheduled tokens through a decoder artifact with the optimum
// KV-cache interface, its keys and values kept in the engine's paged pool.
//
// The artifact takes the past as dense tensors, so each run gathers its
// requests' cached keys and values from their blocks into
// past_key_values.N.*, and copies the new rows of present.N.* back into the
// blocks (the compiler's paged attention entry, issue #16, will let the
// kernel read the blocks in place). Requests with different pasts share a
// run: each past is right-aligned to the longest and the attention mask
// hides the padding in front of it, as Hugging Face pads a batch on the
// left.
#ifndef KILN_ENGINE_MODELRUNNER_H
#define KILN_ENGINE_MODELRUNNER_H

#include "Scheduler.h"
#include "kiln/runtime.h"

#include <memory>
#include <string>
#include <vector>

namespace kiln::engine {

/// What the engine needs to know of the decoder, read from its interface.
struct DecoderShape {
  int32_t numLayers = 0;
  int32_t numKvHeads = 0;
  int32_t headDim = 0;
  int32_t vocabSize = 0;
  int64_t maxBatch = 0;    // the `batch` bound
  int64_t maxSequence = 0; // new tokens of one request in one run
  int64_t maxModelLen = 0; // tokens of one request in all, past and new
};

class ModelRunner {
public:
  /// Reads the model's interface; on a mismatch returns null and says which
  /// input or output differs in `error`.
  static std::unique_ptr<ModelRunner> create(kiln_model_t *model,
                                             std::string &error);
  ~ModelRunner();

  const DecoderShape &shape() const { return shape_; }
  /// Bytes of one block: every layer's keys and values for its tokens.
  size_t blockBytes(int32_t blockSize) const;
  /// Allocates the pool (throws std::bad_alloc when it cannot).
  void allocateCache(int32_t numBlocks, int32_t blockSize);

  /// Runs every scheduled request's new tokens and writes their keys and
  /// values into its blocks. For each request that samples and whose run
  /// succeeded, its last token's logits become a row of `logits` (vocabSize
  /// floats), in the order of `scheduled`. Returns one message per scheduled
  /// request: empty when its run succeeded, else why it failed.
  std::vector<std::string> execute(const std::vector<ScheduledRequest> &scheduled,
                                   std::vector<float> &logits);

private:
  ModelRunner(kiln_model_t *model, kiln_session_t *session)
      : model_(model), session_(session) {}
  /// One model run over requests that all compute the same number of new
  /// tokens; appends their logits rows.
  std::string runGroup(const std::vector<const ScheduledRequest *> &group,
                       std::vector<float> &logits);
  float *cacheAt(BlockId block, int32_t layer, int32_t kv, int32_t head,
                 int32_t slot);
  void gatherPast(const std::vector<const ScheduledRequest *> &group,
                  int64_t past);
  void scatterPresents(const std::vector<const ScheduledRequest *> &group,
                       int64_t past, int64_t newTokens);

  kiln_model_t *model_;
  kiln_session_t *session_;
  DecoderShape shape_;
  int32_t inputIds_ = -1, attentionMask_ = -1, positionIds_ = -1, logits_ = -1;
  std::vector<int32_t> pastInputs_;     // [layer * 2 + kv]
  std::vector<int32_t> presentOutputs_; // [layer * 2 + kv]

  int32_t blockSize_ = 0;
  std::vector<float> cache_; // [block][layer][kv][head][slot][headDim]
  // Scratch of the run, reused across steps.
  std::vector<int64_t> ids_, mask_, positions_;
  std::vector<std::vector<float>> pasts_; // [layer * 2 + kv]
};

} // namespace kiln::engine

#endif // KILN_ENGINE_MODELRUNNER_H
