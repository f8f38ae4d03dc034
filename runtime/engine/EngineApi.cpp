// The kiln_engine_* and kiln_batcher_* C API over kiln::engine::Engine and
// DynamicBatcher. No C++ exception crosses it.
#include "DynamicBatcher.h"
#include "Engine.h"

#include "runtime/src/Status.h"

using kiln::engine::DynamicBatcher;
using kiln::engine::Engine;
using kiln::rt::guarded;
using kiln::rt::makeStatus;

struct kiln_engine_s {
  std::unique_ptr<Engine> engine;
};

struct kiln_batcher_s {
  std::unique_ptr<DynamicBatcher> batcher;
};

extern "C" {

void kiln_engine_options_init(kiln_engine_options_t *options) {
  if (!options)
    return;
  *options = {};
  options->max_num_batched_tokens = 512;
  options->enable_prefix_caching = 1;
}

void kiln_sampling_params_init(kiln_sampling_params_t *params) {
  if (!params)
    return;
  *params = {};
  params->temperature = 1.0f;
  params->top_p = 1.0f;
  params->repetition_penalty = 1.0f;
  params->max_tokens = 16;
  params->logprobs = -1;
}

kiln_status_t kiln_engine_create(kiln_model_t *model,
                                 const kiln_engine_options_t *options,
                                 kiln_engine_t **out_engine) {
  if (!model || !out_engine)
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      "kiln_engine_create: model and out_engine must not be NULL");
  return guarded("kiln_engine_create", [&]() -> kiln_status_t {
    kiln_engine_options_t defaults;
    kiln_engine_options_init(&defaults);
    std::unique_ptr<Engine> engine;
    if (kiln_status_t status = Engine::create(model, options ? *options : defaults, engine))
      return status;
    *out_engine = new kiln_engine_s{std::move(engine)};
    return nullptr;
  });
}

void kiln_engine_release(kiln_engine_t *engine) { delete engine; }

kiln_status_t kiln_engine_add_request(kiln_engine_t *engine,
                                      const kiln_request_t *request,
                                      kiln_request_id_t *out_id) {
  if (!engine || !request)
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      "kiln_engine_add_request: engine and request must not be NULL");
  return guarded("kiln_engine_add_request",
                 [&] { return engine->engine->addRequest(*request, out_id); });
}

kiln_status_t kiln_engine_abort(kiln_engine_t *engine, kiln_request_id_t id) {
  if (!engine)
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT, "kiln_engine_abort: engine is NULL");
  return guarded("kiln_engine_abort", [&] { return engine->engine->abort(id); });
}

kiln_status_t kiln_engine_step(kiln_engine_t *engine, int32_t *out_num_unfinished) {
  if (!engine)
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT, "kiln_engine_step: engine is NULL");
  return guarded("kiln_engine_step",
                 [&] { return engine->engine->step(out_num_unfinished); });
}

int32_t kiln_engine_has_unfinished(kiln_engine_t *engine) {
  return engine && engine->engine->hasUnfinished();
}

kiln_status_t kiln_engine_start(kiln_engine_t *engine) {
  if (!engine)
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT, "kiln_engine_start: engine is NULL");
  return guarded("kiln_engine_start", [&] { return engine->engine->start(); });
}

void kiln_engine_stop(kiln_engine_t *engine) {
  if (engine)
    engine->engine->stop();
}

kiln_status_t kiln_engine_get_stats(kiln_engine_t *engine,
                                    kiln_engine_stats_t *out_stats) {
  if (!engine || !out_stats)
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      "kiln_engine_get_stats: engine and out_stats must not be NULL");
  *out_stats = engine->engine->stats();
  return nullptr;
}

void kiln_batcher_options_init(kiln_batcher_options_t *options) {
  if (!options)
    return;
  *options = {};
  options->max_queue_delay_us = 1000;
}

kiln_status_t kiln_batcher_create(kiln_model_t *model,
                                  const kiln_batcher_options_t *options,
                                  kiln_batcher_t **out_batcher) {
  if (!model || !out_batcher)
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      "kiln_batcher_create: model and out_batcher must not be NULL");
  return guarded("kiln_batcher_create", [&]() -> kiln_status_t {
    kiln_batcher_options_t defaults;
    kiln_batcher_options_init(&defaults);
    std::unique_ptr<DynamicBatcher> batcher;
    if (kiln_status_t status =
            DynamicBatcher::create(model, options ? *options : defaults, batcher))
      return status;
    *out_batcher = new kiln_batcher_s{std::move(batcher)};
    return nullptr;
  });
}

void kiln_batcher_release(kiln_batcher_t *batcher) { delete batcher; }

kiln_status_t kiln_batcher_submit(kiln_batcher_t *batcher, const kiln_tensor_t *inputs,
                                  int32_t num_inputs, kiln_batcher_callback_t callback,
                                  void *user_data) {
  if (!batcher)
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT, "kiln_batcher_submit: batcher is NULL");
  return guarded("kiln_batcher_submit", [&] {
    return batcher->batcher->submit(inputs, num_inputs, callback, user_data);
  });
}

kiln_status_t kiln_batcher_get_stats(kiln_batcher_t *batcher,
                                     kiln_batcher_stats_t *out_stats) {
  if (!batcher || !out_stats)
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      "kiln_batcher_get_stats: batcher and out_stats must not be NULL");
  *out_stats = batcher->batcher->stats();
  return nullptr;
}

} // extern "C"
