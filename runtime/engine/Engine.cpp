#include "Engine.h"

#include "runtime/src/Status.h"

#include <algorithm>
#include <random>

namespace kiln::engine {

using kiln::rt::makeStatus;

namespace {
// Longest sequence the engine sizes a pool for: an undeclared dim bound is
// 2^31 - 1, and a pool for that is no pool.
constexpr int64_t kMaxModelLen = 1 << 20;
constexpr int32_t kDefaultMaxNumSeqs = 256;
} // namespace

kiln_status_t Engine::create(kiln_model_t *model,
                             const kiln_engine_options_t &options,
                             std::unique_ptr<Engine> &out) {
  if (options.block_size < 0 || options.block_size > 4096)
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      "block_size must be in [1, 4096] (or 0), got " +
                          std::to_string(options.block_size));
  if (options.max_num_batched_tokens < 1)
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      "max_num_batched_tokens must be >= 1");
  if (options.max_num_seqs < 0)
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT, "max_num_seqs must be >= 0");

  std::string error;
  std::unique_ptr<ModelRunner> runner = ModelRunner::create(model, error);
  if (!runner)
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT, error);
  const DecoderShape &shape = runner->shape();
  if (shape.maxModelLen > kMaxModelLen)
    return makeStatus(
        KILN_STATUS_INVALID_ARGUMENT,
        "the model's longest sequence is unbounded (" +
            std::to_string(shape.maxModelLen) +
            " tokens): compile it with bounds, e.g. kilnc --dim "
            "past_sequence=0:2047 --dim total_sequence=1:2048");

  // A paged artifact fixes the block size; the dense interface takes any.
  int32_t blockSize = shape.blockSize ? shape.blockSize
                                      : (options.block_size ? options.block_size : 16);
  if (options.block_size && options.block_size != blockSize)
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      "block_size " + std::to_string(options.block_size) +
                          " differs from the " + std::to_string(blockSize) +
                          "-token blocks the artifact's paged cache was compiled "
                          "for (kilnc --kv-block-size)");
  std::unique_ptr<Engine> engine(new Engine());
  engine->blockSize_ = blockSize;
  engine->maxModelLen_ = shape.maxModelLen;
  int32_t maxNumSeqs = options.max_num_seqs
                           ? options.max_num_seqs
                           : (int32_t)std::min<int64_t>(shape.maxBatch, kDefaultMaxNumSeqs);
  int64_t blocksPerSequence =
      (shape.maxModelLen + blockSize - 1) / blockSize;
  size_t blockBytes = runner->blockBytes(blockSize);
  int64_t numBlocks = options.kv_cache_bytes
                          ? (int64_t)(options.kv_cache_bytes / blockBytes)
                          : blocksPerSequence * maxNumSeqs;
  if (numBlocks < blocksPerSequence)
    return makeStatus(
        KILN_STATUS_INVALID_ARGUMENT,
        "kv_cache_bytes " + std::to_string(options.kv_cache_bytes) + " holds " +
            std::to_string(numBlocks) + " blocks of " + std::to_string(blockBytes) +
            " bytes; one sequence of the model's longest length (" +
            std::to_string(shape.maxModelLen) + " tokens) needs " +
            std::to_string(blocksPerSequence));
  if (numBlocks > INT32_MAX)
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      "the KV cache would have " + std::to_string(numBlocks) +
                          " blocks; at most 2^31 - 1");
  try {
    runner->allocateCache((int32_t)numBlocks, blockSize);
  } catch (const std::bad_alloc &) {
    return makeStatus(KILN_STATUS_RESOURCE_EXHAUSTED,
                      "cannot allocate the KV cache: " + std::to_string(numBlocks) +
                          " blocks of " + std::to_string(blockBytes) + " bytes");
  }
  engine->kvCache_ = std::make_unique<KVCacheManager>(
      (int32_t)numBlocks, blockSize, options.enable_prefix_caching != 0);
  SchedulerLimits limits;
  limits.maxNumSeqs = maxNumSeqs;
  limits.maxNumBatchedTokens = options.max_num_batched_tokens;
  limits.maxChunkTokens = (int32_t)std::min<int64_t>(shape.maxSequence, INT32_MAX);
  engine->scheduler_ = std::make_unique<Scheduler>(limits, *engine->kvCache_);
  engine->runner_ = std::move(runner);
  engine->fallbackSeed_ = ((uint64_t)std::random_device()() << 32) ^ std::random_device()();
  engine->stats_.num_blocks_total = (int32_t)numBlocks;
  engine->stats_.num_blocks_free = (int32_t)numBlocks;
  engine->stats_.block_size = blockSize;
  engine->stats_.max_model_len = (int32_t)shape.maxModelLen;
  engine->stats_.max_num_seqs = maxNumSeqs;
  out = std::move(engine);
  return nullptr;
}

Engine::~Engine() { stop(); }

kiln_status_t Engine::addRequest(const kiln_request_t &c, RequestId *outId) {
  if (c.num_prompt_ids < 1 || !c.prompt_ids)
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      "prompt_ids: the prompt must have at least one token");
  if (c.num_prompt_ids > maxModelLen_)
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      "prompt_ids: " + std::to_string(c.num_prompt_ids) +
                          " tokens, more than the model's longest sequence (" +
                          std::to_string(maxModelLen_) + ")");
  const int32_t vocab = runner_->shape().vocabSize;
  for (int32_t i = 0; i < c.num_prompt_ids; ++i)
    if (c.prompt_ids[i] < 0 || c.prompt_ids[i] >= vocab)
      return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                        "prompt_ids[" + std::to_string(i) + "] = " +
                            std::to_string(c.prompt_ids[i]) +
                            " is outside the vocabulary [0, " +
                            std::to_string(vocab) + ")");
  std::string error;
  SamplingParams params = SamplingParams::fromC(c.params, error);
  if (!error.empty())
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT, "params: " + error);

  auto request = std::make_unique<Request>();
  request->tokens.assign(c.prompt_ids, c.prompt_ids + c.num_prompt_ids);
  request->numPromptTokens = c.num_prompt_ids;
  request->params = std::move(params);
  request->callback = c.callback;
  request->userData = c.user_data;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    request->id = nextId_++;
    request->rngState =
        initialRngState(request->params, fallbackSeed_ ^ (request->id * 0x9e3779b97f4a7c15ull));
    live_.insert(request->id);
    if (outId)
      *outId = request->id;
    incoming_.push_back(std::move(request));
  }
  workAvailable_.notify_one();
  return nullptr;
}

kiln_status_t Engine::abort(RequestId id) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!live_.count(id))
    return makeStatus(KILN_STATUS_NOT_FOUND,
                      "request " + std::to_string(id) + " is unknown or finished");
  aborts_.push_back(id);
  return nullptr;
}

bool Engine::hasUnfinished() {
  std::lock_guard<std::mutex> lock(mutex_);
  return !live_.empty();
}

kiln_engine_stats_t Engine::stats() {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void Engine::emit(const Request &request, const SampledToken *token,
                  kiln_finish_reason_t reason, const std::string &error) {
  if (!request.callback)
    return;
  kiln_engine_event_t event = {};
  event.request_id = request.id;
  event.token_id = token ? token->token : -1;
  if (token) {
    event.logprob = token->logprob;
    event.num_top_logprobs = (int32_t)token->topTokens.size();
    event.top_token_ids = token->topTokens.data();
    event.top_logprobs = token->topLogprobs.data();
  }
  event.finish_reason = reason;
  event.error_message = reason == KILN_FINISH_ERROR ? error.c_str() : nullptr;
  request.callback(request.userData, &event);
}

void Engine::finish(Request &request, kiln_finish_reason_t reason,
                    const SampledToken *token, const std::string &error) {
  scheduler_->remove(&request);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    live_.erase(request.id);
    ++stats_.num_finished_requests;
  }
  // The request leaves requests_ after its last event, whose callback may
  // still read it.
  std::unique_ptr<Request> owned = std::move(requests_[request.id]);
  requests_.erase(request.id);
  emit(*owned, token, reason, error);
}

kiln_status_t Engine::step(int32_t *outNumUnfinished) {
  bool idle = false;
  if (!stepping_.compare_exchange_strong(idle, true))
    return makeStatus(KILN_STATUS_FAILED_PRECONDITION,
                      "kiln_engine_step: another step is running, or the "
                      "background loop (kiln_engine_start) steps this engine");
  kiln_status_t status = nullptr;
  try {
    runStep();
  } catch (const std::bad_alloc &) {
    status = makeStatus(KILN_STATUS_RESOURCE_EXHAUSTED, "out of memory in a step");
  }
  stepping_ = false;
  if (outNumUnfinished) {
    std::lock_guard<std::mutex> lock(mutex_);
    *outNumUnfinished = (int32_t)live_.size();
  }
  return status;
}

void Engine::runStep() {
  std::vector<std::unique_ptr<Request>> incoming;
  std::vector<RequestId> aborts;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    incoming.swap(incoming_);
    aborts.swap(aborts_);
  }
  for (std::unique_ptr<Request> &request : incoming) {
    scheduler_->add(request.get());
    RequestId id = request->id;
    requests_.emplace(id, std::move(request));
  }
  for (RequestId id : aborts) {
    auto it = requests_.find(id);
    if (it != requests_.end())
      finish(*it->second, KILN_FINISH_ABORT);
  }

  SchedulerOutput out = scheduler_->schedule();
  std::vector<std::string> errors;
  try {
    errors = runner_->execute(out.scheduled, logits_);
  } catch (const std::bad_alloc &) {
    errors.assign(out.scheduled.size(), "out of memory while running the model");
  }
  const int32_t vocab = runner_->shape().vocabSize;
  uint64_t generated = 0;
  for (size_t i = 0; i < out.scheduled.size(); ++i) {
    const ScheduledRequest &scheduled = out.scheduled[i];
    Request &request = *scheduled.request;
    if (!errors[i].empty()) {
      finish(request, KILN_FINISH_ERROR, nullptr, errors[i]);
      continue;
    }
    request.numComputedTokens += scheduled.numNewTokens;
    kvCache_->cacheComputedBlocks(request);
    if (!scheduled.samples)
      continue;
    SampledToken token =
        sampler_.sample(request, logits_[i], vocab);
    request.tokens.push_back(token.token);
    ++generated;
    const std::vector<int64_t> &stops = request.params.stopTokenIds;
    kiln_finish_reason_t reason = KILN_FINISH_NONE;
    if (std::find(stops.begin(), stops.end(), token.token) != stops.end())
      reason = KILN_FINISH_STOP;
    else if (request.numOutputTokens() >= request.params.maxTokens ||
             request.numTokens() > maxModelLen_)
      reason = KILN_FINISH_LENGTH;
    if (reason == KILN_FINISH_NONE)
      emit(request, &token, reason, {});
    else
      finish(request, reason, &token);
  }

  uint64_t slotsAllocated = 0, slotsUsed = 0;
  for (const Request *request : scheduler_->running()) {
    slotsAllocated += request->blocks.size() * blockSize_;
    slotsUsed += request->numComputedTokens;
  }
  const BlockPool &pool = kvCache_->pool();
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.num_running = scheduler_->numRunning();
  stats_.num_waiting = scheduler_->numWaiting() + (int32_t)incoming_.size();
  stats_.num_blocks_free = pool.numFree();
  stats_.num_blocks_used = pool.numBlocks() - pool.numFree();
  stats_.num_blocks_cached = pool.numCachedFree();
  stats_.num_preemptions += out.preempted.size();
  stats_.num_steps += !out.scheduled.empty();
  stats_.num_computed_tokens += out.numScheduledTokens;
  stats_.num_prefix_cache_hit_tokens += out.numPrefixHitTokens;
  stats_.num_generated_tokens += generated;
  stats_.peak_num_running = std::max(stats_.peak_num_running, stats_.num_running);
  stats_.num_slots_allocated = slotsAllocated;
  stats_.num_slots_used = slotsUsed;
}

kiln_status_t Engine::start() {
  bool idle = false;
  if (!stepping_.compare_exchange_strong(idle, true))
    return makeStatus(KILN_STATUS_FAILED_PRECONDITION,
                      "kiln_engine_start: the loop already runs, or a step is running");
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopRequested_ = false;
  }
  loopThread_ = std::thread([this] { loop(); });
  return nullptr;
}

void Engine::loop() {
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      workAvailable_.wait(lock, [this] { return stopRequested_ || !live_.empty(); });
      if (stopRequested_)
        return;
    }
    try {
      runStep();
    } catch (const std::bad_alloc &) {
      // Only the scheduler's and sampler's own bookkeeping gets here (the
      // model run's failures end its requests): there is no caller to
      // tell, and the next step may find memory again.
    }
  }
}

void Engine::stop() {
  if (!loopThread_.joinable())
    return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopRequested_ = true;
  }
  workAvailable_.notify_all();
  loopThread_.join();
  stepping_ = false;
}

} // namespace kiln::engine
