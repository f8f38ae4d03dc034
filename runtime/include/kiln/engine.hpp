// Kiln serving C++ wrapper: an RAII Engine over kiln_engine_*, with failures
// thrown as kiln::Error and events delivered to std::function callbacks, and
// a DynamicBatcher over kiln_batcher_* whose requests return futures. Thread
// safety is that of the C API (engine.h).
#ifndef KILN_ENGINE_HPP
#define KILN_ENGINE_HPP

#include "kiln/engine.h"
#include "kiln/runtime.hpp"

#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace kiln {

struct SamplingParams : kiln_sampling_params_t {
  SamplingParams() { kiln_sampling_params_init(this); }
};

struct EngineOptions : kiln_engine_options_t {
  EngineOptions() { kiln_engine_options_init(this); }
};

class Engine {
public:
  using Callback = std::function<void(const kiln_engine_event_t &)>;

  Engine(const Model &model, const EngineOptions &options = {}) {
    kiln_engine_t *engine = nullptr;
    check(kiln_engine_create(model.get(), &options, &engine));
    handle_.reset(engine);
  }
  kiln_engine_t *get() const { return handle_.get(); }

  /// Queues a request; `callback` receives its events on the stepping
  /// thread, the last one with a finish reason.
  kiln_request_id_t addRequest(const std::vector<int64_t> &promptIds,
                               const SamplingParams &params, Callback callback) {
    auto owned = std::make_unique<Pending>(Pending{this, std::move(callback)});
    Pending *pending = owned.get();
    {
      std::lock_guard<std::mutex> lock(pendingMutex_);
      pending_.emplace(pending, std::move(owned));
    }
    kiln_request_t request = {};
    request.prompt_ids = promptIds.data();
    request.num_prompt_ids = (int32_t)promptIds.size();
    request.params = params;
    request.callback = &Engine::dispatch;
    request.user_data = pending;
    kiln_request_id_t id = 0;
    kiln_status_t status = kiln_engine_add_request(get(), &request, &id);
    if (status) {
      forget(pending);
      check(status);
    }
    return id;
  }
  void abort(kiln_request_id_t id) { check(kiln_engine_abort(get(), id)); }
  /// One step; returns the number of unfinished requests after it.
  int32_t step() {
    int32_t unfinished = 0;
    check(kiln_engine_step(get(), &unfinished));
    return unfinished;
  }
  bool hasUnfinished() const { return kiln_engine_has_unfinished(get()) != 0; }
  void start() { check(kiln_engine_start(get())); }
  void stop() { kiln_engine_stop(get()); }
  kiln_engine_stats_t stats() const {
    kiln_engine_stats_t stats;
    check(kiln_engine_get_stats(get(), &stats));
    return stats;
  }

private:
  // A request's callback, held until its last event.
  struct Pending {
    Engine *engine;
    Callback callback;
  };
  static void dispatch(void *userData, const kiln_engine_event_t *event) {
    auto *pending = static_cast<Pending *>(userData);
    pending->callback(*event);
    if (event->finish_reason != KILN_FINISH_NONE)
      pending->engine->forget(pending);
  }
  void forget(Pending *pending) {
    std::lock_guard<std::mutex> lock(pendingMutex_);
    pending_.erase(pending);
  }

  struct Release {
    void operator()(kiln_engine_t *p) const { kiln_engine_release(p); }
  };
  std::mutex pendingMutex_;
  std::unordered_map<Pending *, std::unique_ptr<Pending>> pending_;
  // Declared last, so destroyed first: releasing the engine stops its loop
  // before the callbacks it might call go.
  std::unique_ptr<kiln_engine_t, Release> handle_;
};

/// A dynamic batcher (kiln_batcher_*): submit() queues one request and
/// returns a future of its outputs; it throws kiln::Error when the request
/// is refused, and the future does when its run failed.
class DynamicBatcher {
public:
  /// One output of a request: its shape and bytes.
  struct Output {
    kiln_dtype_t dtype;
    std::vector<int64_t> shape;
    std::vector<char> data;
    template <typename T> const T *as() const {
      return reinterpret_cast<const T *>(data.data());
    }
  };

  explicit DynamicBatcher(const Model &model, int32_t maxBatchSize = 0,
                          int64_t maxQueueDelayUs = 1000) {
    kiln_batcher_options_t options;
    kiln_batcher_options_init(&options);
    options.max_batch_size = maxBatchSize;
    options.max_queue_delay_us = maxQueueDelayUs;
    kiln_batcher_t *batcher = nullptr;
    check(kiln_batcher_create(model.get(), &options, &batcher));
    handle_.reset(batcher);
  }

  std::future<std::vector<Output>> submit(const std::vector<kiln_tensor_t> &inputs) {
    auto promise = new std::promise<std::vector<Output>>();
    std::future<std::vector<Output>> result = promise->get_future();
    kiln_status_t status = kiln_batcher_submit(handle_.get(), inputs.data(),
                                               (int32_t)inputs.size(), &answer, promise);
    if (status) {
      delete promise;
      check(status);
    }
    return result;
  }
  kiln_batcher_stats_t stats() const {
    kiln_batcher_stats_t stats;
    check(kiln_batcher_get_stats(handle_.get(), &stats));
    return stats;
  }

private:
  static void answer(void *userData, kiln_status_t status, const kiln_tensor_t *outputs,
                     int32_t numOutputs) {
    std::unique_ptr<std::promise<std::vector<Output>>> promise(
        static_cast<std::promise<std::vector<Output>> *>(userData));
    if (status) {
      promise->set_exception(std::make_exception_ptr(
          Error(kiln_status_code(status), kiln_status_message(status))));
      return;
    }
    std::vector<Output> results;
    for (int32_t i = 0; i < numOutputs; ++i) {
      const char *bytes = static_cast<const char *>(outputs[i].data);
      results.push_back({outputs[i].dtype,
                         std::vector<int64_t>(outputs[i].shape,
                                              outputs[i].shape + outputs[i].rank),
                         std::vector<char>(bytes, bytes + outputs[i].byte_size)});
    }
    promise->set_value(std::move(results));
  }

  struct Release {
    void operator()(kiln_batcher_t *p) const { kiln_batcher_release(p); }
  };
  std::unique_ptr<kiln_batcher_t, Release> handle_;
};

} // namespace kiln

#endif // KILN_ENGINE_HPP
