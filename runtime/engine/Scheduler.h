// Continuous batching: each step, the scheduler picks which requests run and
// how many of their tokens, under a token budget and the free KV blocks.
//
// Running requests come first, in the order they were admitted: a decoding
// request gets one token, a request still in its prompt a chunk of it
// (chunked prefill: a long prompt takes several steps, so decodes are not
// starved). When the blocks run out, the newest running request is
// preempted: its blocks are freed and it goes back to the front of the
// waiting queue, to be recomputed from its tokens (prompt and output so far)
// when it is admitted again. Waiting requests are admitted in arrival order
// while the budget, the blocks and max_num_seqs allow, each starting from
// its longest cached prefix, and only in steps that preempted nothing.
#ifndef KILN_ENGINE_SCHEDULER_H
#define KILN_ENGINE_SCHEDULER_H

#include "KVCacheManager.h"
#include "Request.h"

#include <deque>
#include <vector>

namespace kiln::engine {

struct ScheduledRequest {
  Request *request;
  /// Tokens to compute this step, from request->numComputedTokens on.
  int32_t numNewTokens;
  /// Whether they reach the request's last token, so that the step's logits
  /// sample its next one.
  bool samples;
};

/// The one interface between the scheduler and the model runner: what to run
/// this step.
struct SchedulerOutput {
  std::vector<ScheduledRequest> scheduled;
  int32_t numScheduledTokens = 0;
  /// Preempted this step (not in `scheduled`).
  std::vector<Request *> preempted;
  /// Prompt tokens the admitted requests found in the prefix cache.
  int32_t numPrefixHitTokens = 0;
};

struct SchedulerLimits {
  int32_t maxNumSeqs;
  int32_t maxNumBatchedTokens;
  /// Tokens of one request in one step (the model's `sequence` bound).
  int32_t maxChunkTokens;
};

class Scheduler {
public:
  Scheduler(SchedulerLimits limits, KVCacheManager &kvCache)
      : limits_(limits), kvCache_(kvCache) {}

  void add(Request *request) { waiting_.push_back(request); }
  SchedulerOutput schedule();
  /// Removes a request (finished or aborted) and frees its blocks.
  void remove(Request *request);

  int32_t numRunning() const { return (int32_t)running_.size(); }
  int32_t numWaiting() const { return (int32_t)waiting_.size(); }
  const std::vector<Request *> &running() const { return running_; }

private:
  SchedulerLimits limits_;
  KVCacheManager &kvCache_;
  std::vector<Request *> running_; // oldest admitted first
  std::deque<Request *> waiting_;
};

} // namespace kiln::engine

#endif // KILN_ENGINE_SCHEDULER_H
