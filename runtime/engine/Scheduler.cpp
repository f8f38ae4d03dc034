#include "Scheduler.h"

#include <algorithm>

namespace kiln::engine {

SchedulerOutput Scheduler::schedule() {
  SchedulerOutput out;
  int32_t budget = limits_.maxNumBatchedTokens;
  auto chunkOf = [&](const Request &request) {
    return std::min({request.numTokens() - request.numComputedTokens, budget,
                     limits_.maxChunkTokens});
  };
  auto scheduleRequest = [&](Request *request, int32_t numNewTokens) {
    out.scheduled.push_back(
        {request, numNewTokens,
         request->numComputedTokens + numNewTokens == request->numTokens()});
    out.numScheduledTokens += numNewTokens;
    budget -= numNewTokens;
  };

  for (size_t i = 0; i < running_.size() && budget > 0;) {
    Request *request = running_[i];
    int32_t numNewTokens = chunkOf(*request);
    bool allocated = false;
    // Preempt from the back (the newest), which this loop has not reached:
    // every request already scheduled this step keeps its blocks.
    while (!(allocated = kvCache_.allocate(*request, numNewTokens))) {
      Request *victim = running_.back();
      running_.pop_back();
      kvCache_.free(*victim);
      ++victim->numPreemptions;
      waiting_.push_front(victim);
      out.preempted.push_back(victim);
      if (victim == request)
        break;
    }
    if (!allocated)
      break;
    scheduleRequest(request, numNewTokens);
    ++i;
  }

  if (!out.preempted.empty())
    return out;
  while (!waiting_.empty() && budget > 0 &&
         (int32_t)running_.size() < limits_.maxNumSeqs) {
    Request *request = waiting_.front();
    CachedPrefix prefix = kvCache_.findCachedPrefix(*request);
    int32_t hitTokens = prefix.numTokens(kvCache_.blockSize());
    int32_t numNewTokens =
        std::min({request->numTokens() - hitTokens, budget,
                  limits_.maxChunkTokens});
    if (!kvCache_.allocate(*request, numNewTokens, prefix))
      break;
    waiting_.pop_front();
    running_.push_back(request);
    out.numPrefixHitTokens += hitTokens;
    scheduleRequest(request, numNewTokens);
  }
  return out;
}

void Scheduler::remove(Request *request) {
  auto running = std::find(running_.begin(), running_.end(), request);
  if (running != running_.end())
    running_.erase(running);
  auto waiting = std::find(waiting_.begin(), waiting_.end(), request);
  if (waiting != waiting_.end())
    waiting_.erase(waiting);
  kvCache_.free(*request);
}

} // namespace kiln::engine
