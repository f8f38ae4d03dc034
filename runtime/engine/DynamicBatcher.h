// Groups single requests to any model into batches, as Triton's dynamic
// batcher does (kiln_batcher_* in kiln/engine.h).
#ifndef KILN_ENGINE_DYNAMICBATCHER_H
#define KILN_ENGINE_DYNAMICBATCHER_H

#include "kiln/engine.h"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace kiln::engine {

class DynamicBatcher {
public:
  static kiln_status_t create(kiln_model_t *model,
                              const kiln_batcher_options_t &options,
                              std::unique_ptr<DynamicBatcher> &out);
  /// Runs what is queued, then stops the thread.
  ~DynamicBatcher();

  kiln_status_t submit(const kiln_tensor_t *inputs, int32_t numInputs,
                       kiln_batcher_callback_t callback, void *userData);
  kiln_batcher_stats_t stats();

private:
  struct Port { // one input or output of the model
    std::string name;
    kiln_dtype_t dtype;
    std::vector<kiln_dim_t> dims; // the names point into the model
  };
  struct Request {
    std::vector<std::vector<char>> data; // per input
    std::vector<std::vector<int64_t>> shapes;
    kiln_batcher_callback_t callback;
    void *userData;
    std::chrono::steady_clock::time_point arrival;
  };
  using Batch = std::vector<std::unique_ptr<Request>>;

  DynamicBatcher() = default;
  void loop();
  /// Runs the requests as one batch and answers each; a failed batch of
  /// several is run again one request at a time, so that only the requests
  /// that fail alone get an error.
  void run(Batch &batch);
  /// Runs one batch; on success (NULL) each request's outputs are in
  /// `outputs` [request][output].
  kiln_status_t runOnce(const Batch &batch,
                      std::vector<std::vector<std::vector<char>>> &outputs,
                      std::vector<std::vector<std::vector<int64_t>>> &shapes);
  /// The size a request gives the dim named `name`, or -1.
  int64_t sizeByName(const Request &request, const char *name) const;

  kiln_model_t *model_ = nullptr;
  kiln_session_t *session_ = nullptr;
  std::vector<Port> inputs_, outputs_;
  int32_t maxBatch_ = 1;
  std::chrono::microseconds maxDelay_{1000};

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::unique_ptr<Request>> queue_;
  bool stopping_ = false;
  kiln_batcher_stats_t stats_ = {};
  std::thread thread_;
};

} // namespace kiln::engine

#endif // KILN_ENGINE_DYNAMICBATCHER_H
