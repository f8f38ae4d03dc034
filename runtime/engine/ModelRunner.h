// Runs the scheduled tokens through a decoder artifact, its keys and values
// kept in the engine's paged pool. Two interfaces:
//
// - paged (kilnc --kv-cache=paged): the artifact reads the pool itself
//   through block tables and past lengths, and returns only the new rows
//   (new_key_values.N.*), which the runner copies into their blocks;
// - dense (the optimum export as it is): the artifact takes the past as
//   tensors, so each run gathers its requests' cached keys and values from
//   their blocks into past_key_values.N.*, and copies the new rows of
//   present.N.* back into the blocks.
//
// Requests with different pasts share a run: the attention mask's columns
// are a padded past as long as the longest, each request's right-aligned
// in it with the padding in front hidden, as Hugging Face pads a batch on
// the left (the dense past really holds the padding as zeros; the paged
// attention skips it).
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
  int32_t blockSize = 0;   // the paged interface's block; 0 for the dense one
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
  /// values into its blocks. `logits[i]` is scheduled request i's last
  /// token's logits (vocabSize floats, valid until the next execute) when
  /// it samples and its run succeeded, else null. Returns one message per
  /// scheduled request: empty when its run succeeded, else why it failed.
  std::vector<std::string> execute(const std::vector<ScheduledRequest> &scheduled,
                                   std::vector<const float *> &logits);

private:
  ModelRunner(kiln_model_t *model, kiln_session_t *session)
      : model_(model), session_(session) {}
  /// One model run over requests that all compute the same number of new
  /// tokens; appends their logits rows.
  std::string runGroup(const std::vector<const ScheduledRequest *> &group,
                       std::vector<float> &logits);
  /// Where a row of the pool starts, in the pool's dtype.
  char *cacheAt(BlockId block, int32_t layer, int32_t kv, int32_t head,
                int32_t slot);
  /// Writes `count` f32 values at `to` in the pool's dtype.
  void storeRows(const float *values, size_t count, char *to) const;
  void gatherPast(const std::vector<const ScheduledRequest *> &group,
                  int64_t past);
  /// The paged interface's tables and lengths for the group.
  void fillTables(const std::vector<const ScheduledRequest *> &group);
  /// Copies each request's new rows into its blocks from the key/value
  /// outputs, where they start at row `first` (the dense presents repeat the
  /// padded past before them).
  void scatterNewRows(const std::vector<const ScheduledRequest *> &group,
                      int64_t first, int64_t newTokens);

  kiln_model_t *model_;
  kiln_session_t *session_;
  DecoderShape shape_;
  int32_t inputIds_ = -1, attentionMask_ = -1, positionIds_ = -1, logits_ = -1;
  // The paged interface's inputs, or -1 with the dense one.
  int32_t kvCache_ = -1, blockTables_ = -1, pastLengths_ = -1;
  std::vector<int32_t> pastInputs_; // [layer * 2 + kv]; empty when paged
  std::vector<int32_t> kvOutputs_;  // presents or new rows, [layer * 2 + kv]

  int32_t blockSize_ = 0;
  // The paged interface's pool dtype: f32, or 16 bits (kilnc --kv-dtype).
  // The dense interface keeps f32 rows.
  kiln_dtype_t cacheDtype_ = KILN_DTYPE_F32;
  std::vector<char> cache_; // [block][layer][kv][head][slot][headDim]
  // Scratch of the run, reused across steps.
  std::vector<int64_t> ids_, mask_, positions_, tables_, lengths_;
  int64_t tableWidth_ = 1;
  std::vector<std::vector<float>> pasts_; // [layer * 2 + kv]
  std::vector<std::vector<float>> groupLogits_; // each run's sampled rows
};

} // namespace kiln::engine

#endif // KILN_ENGINE_MODELRUNNER_H
