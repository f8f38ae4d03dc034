// The generation engine behind kiln_engine_*: requests in, a scheduler, the
// KV cache, the model runner and the sampler, events out.
#ifndef KILN_ENGINE_ENGINE_H
#define KILN_ENGINE_ENGINE_H

#include "KVCacheManager.h"
#include "ModelRunner.h"
#include "Sampler.h"
#include "Scheduler.h"
#include "kiln/engine.h"

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <unordered_set>

namespace kiln::engine {

class Engine {
public:
  /// Checks the model and the options and allocates the pool; returns a
  /// status naming what is wrong.
  static kiln_status_t create(kiln_model_t *model,
                              const kiln_engine_options_t &options,
                              std::unique_ptr<Engine> &out);
  ~Engine();

  kiln_status_t addRequest(const kiln_request_t &request, RequestId *outId);
  kiln_status_t abort(RequestId id);
  kiln_status_t step(int32_t *outNumUnfinished);
  bool hasUnfinished();
  kiln_status_t start();
  void stop();
  kiln_engine_stats_t stats();

private:
  Engine() = default;
  void runStep();
  /// Ends a request: frees its blocks, forgets it, and sends its last event.
  void finish(Request &request, kiln_finish_reason_t reason,
              const SampledToken *token = nullptr,
              const std::string &error = {});
  void emit(const Request &request, const SampledToken *token,
            kiln_finish_reason_t reason, const std::string &error);
  void loop();

  // Used by the stepping thread only.
  std::unique_ptr<ModelRunner> runner_;
  std::unique_ptr<KVCacheManager> kvCache_;
  std::unique_ptr<Scheduler> scheduler_;
  Sampler sampler_;
  std::unordered_map<RequestId, std::unique_ptr<Request>> requests_;
  std::vector<const float *> logits_; // per scheduled request, or null
  int32_t blockSize_ = 0;
  int64_t maxModelLen_ = 0;
  uint64_t fallbackSeed_ = 0;

  // Shared with the threads that add, abort and ask; guarded by mutex_.
  std::mutex mutex_;
  std::condition_variable workAvailable_;
  std::vector<std::unique_ptr<Request>> incoming_;
  std::vector<RequestId> aborts_;
  std::unordered_set<RequestId> live_; // added and not yet finished
  RequestId nextId_ = 1;
  kiln_engine_stats_t stats_ = {};
  bool stopRequested_ = false;

  std::thread loopThread_;
  std::atomic<bool> stepping_{false}; // a step, or the loop, owns the engine
};

} // namespace kiln::engine

#endif // KILN_ENGINE_ENGINE_H
