/* Kiln serving C API: the generation engine, which serves many generation
 * requests at once over one loaded decoder artifact, with a paged KV cache,
 * continuous batching, chunked prefill, preemption and prefix caching; and
 * the dynamic batcher, which groups single requests to any model (below).
 * docs/architecture.md, "The generation engine".
 *
 * The engine takes a decoder with the optimum KV-cache interface: inputs
 * input_ids [batch, sequence], attention_mask [batch, total_sequence],
 * position_ids [batch, sequence] (int64; optional, as BLOOM's export, whose
 * positions come from the attention mask, has none) and
 * past_key_values.N.key/.value
 * [batch, kv_heads, past_sequence, head_dim] (f32); outputs logits
 * [batch, sequence, vocab] (f32) and present.N.key/.value. Or, compiled
 * with kilnc --kv-cache=paged, the paged form of it: kv_cache, block_tables
 * and past_lengths instead of the past, new_key_values.N.key/.value (the new
 * rows) instead of the presents; the engine's pool is then the artifact's
 * input and no step copies the cache. Any other interface is refused at
 * create, with the input or output that did not match named.
 *
 * Thread safety:
 *   - kiln_engine_create/release: one thread; release only after every other
 *     call on the engine has returned (it stops a background loop itself).
 *   - kiln_engine_add_request, kiln_engine_abort, kiln_engine_get_stats and
 *     kiln_engine_has_unfinished may be called from any thread at any time,
 *     also from inside an event callback.
 *   - kiln_engine_step: one thread at a time, and not while the background
 *     loop runs (kiln_engine_start). Event callbacks run on the thread that
 *     steps (the caller of kiln_engine_step, or the loop's thread).
 */
#ifndef KILN_ENGINE_H
#define KILN_ENGINE_H

#include "kiln/runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_engine_s kiln_engine_t;
typedef uint64_t kiln_request_id_t;

typedef struct kiln_engine_options_s {
  /* Tokens per KV-cache block. 0 (the default): the block size a paged
   * artifact was compiled for, or 16. */
  int32_t block_size;
  /* Bytes of the KV-cache pool. 0 (the default): enough blocks for
   * max_num_seqs sequences of the model's longest length. */
  uint64_t kv_cache_bytes;
  /* Sequences running at once at most. 0 (the default): the model's largest
   * batch. */
  int32_t max_num_seqs;
  /* Tokens computed in one step at most, prefill chunks and decode tokens
   * together. Default 512. */
  int32_t max_num_batched_tokens;
  /* Share the KV blocks of identical prompt prefixes. Default 1. */
  int32_t enable_prefix_caching;
} kiln_engine_options_t;

typedef struct kiln_sampling_params_s {
  /* 0 samples greedily (the most likely token). Default 1. */
  float temperature;
  /* Keep the k most likely tokens; 0 keeps all. Default 0. */
  int32_t top_k;
  /* Keep the smallest set of most likely tokens whose probability reaches
   * top_p, in (0, 1]. Default 1. */
  float top_p;
  /* Drop tokens less likely than min_p times the most likely one, in [0, 1].
   * Default 0. */
  float min_p;
  /* Divides positive logits (multiplies negative ones) of every token in the
   * prompt or the output, > 0. Default 1 (off). */
  float repetition_penalty;
  /* Subtracted from the logit of every token in the output (presence) and
   * once per occurrence (frequency), as OpenAI defines them. Default 0. */
  float presence_penalty;
  float frequency_penalty;
  /* With has_seed, the request's random draws depend only on the seed and
   * the request: the same request gives the same tokens in any batch. */
  uint64_t seed;
  int32_t has_seed;
  /* Output tokens at most, >= 1. Default 16. */
  int32_t max_tokens;
  /* Generation stops after any of these tokens (which is emitted). */
  const int64_t *stop_token_ids;
  int32_t num_stop_token_ids;
  /* -1 (the default): no log-probabilities. 0: the chosen token's. n > 0:
   * the chosen token's and the n most likely tokens'. At most 20. */
  int32_t logprobs;
} kiln_sampling_params_t;

typedef enum kiln_finish_reason_e {
  KILN_FINISH_NONE = 0,   /* not finished: more events follow */
  KILN_FINISH_STOP = 1,   /* a stop token was generated */
  KILN_FINISH_LENGTH = 2, /* max_tokens, or the model's longest sequence */
  KILN_FINISH_ABORT = 3,  /* kiln_engine_abort */
  KILN_FINISH_ERROR = 4,  /* the step that ran the request failed */
} kiln_finish_reason_t;

/* One event of a request: a generated token, or its end. Every request gets
 * exactly one event with finish_reason != KILN_FINISH_NONE, its last. */
typedef struct kiln_engine_event_s {
  kiln_request_id_t request_id;
  /* The generated token, or -1 when the event carries none (abort, error). */
  int64_t token_id;
  /* The chosen token's log-probability under the model's distribution
   * (before temperature and filters), when the request asked for logprobs. */
  float logprob;
  int32_t num_top_logprobs;
  const int64_t *top_token_ids; /* most likely first */
  const float *top_logprobs;
  kiln_finish_reason_t finish_reason;
  /* Why the request failed (KILN_FINISH_ERROR), else NULL. */
  const char *error_message;
} kiln_engine_event_t;

/* Called on the stepping thread; the event and its arrays are valid during
 * the call only. It may call add_request and abort. */
typedef void (*kiln_engine_event_callback_t)(void *user_data,
                                             const kiln_engine_event_t *event);

typedef struct kiln_request_s {
  const int64_t *prompt_ids;
  int32_t num_prompt_ids;
  kiln_sampling_params_t params;
  kiln_engine_event_callback_t callback; /* may be NULL */
  void *user_data;
} kiln_request_t;

typedef struct kiln_engine_stats_s {
  int32_t num_running;
  int32_t num_waiting;
  int32_t num_blocks_total;
  int32_t num_blocks_used;   /* held by running requests */
  int32_t num_blocks_free;   /* the rest, cached prefix blocks included */
  int32_t num_blocks_cached; /* free blocks that still hold a cached prefix */
  int32_t block_size;
  int32_t max_model_len;     /* the longest sequence, prompt and output */
  int32_t max_num_seqs;      /* running sequences at most */
  uint64_t num_preemptions;
  uint64_t num_steps;
  /* Tokens run through the model: prompts, decodes and recomputes. */
  uint64_t num_computed_tokens;
  uint64_t num_prefix_cache_hit_tokens;
  uint64_t num_generated_tokens;
  uint64_t num_finished_requests;
  int32_t peak_num_running;
  /* The token slots of the blocks running requests hold, and how many of
   * them hold a token, after the last step: 1 - used / allocated is the
   * KV cache's waste. */
  uint64_t num_slots_allocated;
  uint64_t num_slots_used;
} kiln_engine_stats_t;

KILN_API void kiln_engine_options_init(kiln_engine_options_t *options);
KILN_API void kiln_sampling_params_init(kiln_sampling_params_t *params);

/* Creates an engine over `model`, which must outlive it. Sizes and allocates
 * the KV-cache pool; refuses a model whose interface is not the decoder one
 * above, or options that cannot work (a pool too small for one sequence). */
KILN_API kiln_status_t kiln_engine_create(kiln_model_t *model,
                                          const kiln_engine_options_t *options,
                                          kiln_engine_t **out_engine);
/* Stops the background loop, if any; unfinished requests are dropped
 * without events. */
KILN_API void kiln_engine_release(kiln_engine_t *engine);

/* Queues a request; it is scheduled at the next step. The prompt and the
 * stop ids are copied. Refuses (INVALID_ARGUMENT, naming the field) an empty
 * prompt, a token outside the vocabulary, a prompt longer than the model's
 * longest sequence, and parameters out of range. */
KILN_API kiln_status_t kiln_engine_add_request(kiln_engine_t *engine,
                                               const kiln_request_t *request,
                                               kiln_request_id_t *out_id);
/* Aborts a request: its blocks are freed and its last event (ABORT) is sent
 * at the next step. NOT_FOUND when it is unknown or already finished. */
KILN_API kiln_status_t kiln_engine_abort(kiln_engine_t *engine,
                                         kiln_request_id_t id);
/* Runs one step: schedules, runs the model, samples, sends events. A step
 * whose model run fails ends the requests it ran with KILN_FINISH_ERROR and
 * the reason, frees their blocks, and still returns success: the engine goes
 * on. *out_num_unfinished (may be NULL) is the count of requests that are
 * still waiting or running after it. */
KILN_API kiln_status_t kiln_engine_step(kiln_engine_t *engine,
                                        int32_t *out_num_unfinished);
KILN_API int32_t kiln_engine_has_unfinished(kiln_engine_t *engine);

/* A thread that steps whenever a request is unfinished and sleeps otherwise.
 * kiln_engine_stop waits for the step in flight and returns; requests stay
 * queued. */
KILN_API kiln_status_t kiln_engine_start(kiln_engine_t *engine);
KILN_API void kiln_engine_stop(kiln_engine_t *engine);

KILN_API kiln_status_t kiln_engine_get_stats(kiln_engine_t *engine,
                                             kiln_engine_stats_t *out_stats);

/*===------------------------------------------------------------------===*/
/* Dynamic batching (any model, encoders first)                            */
/*===------------------------------------------------------------------===*/

/* Queues single requests to a model and runs them together, as Triton's
 * dynamic batcher does: a batch runs when max_batch_size requests wait, or
 * when the oldest has waited max_queue_delay_us. Every input's dim 0 is the
 * batch; a request brings one item (dim 0 of size 1). Other dims may differ
 * between requests: each input is padded with zeros at the end of those
 * dims to the batch's largest, and each output is cut back to the request's
 * own sizes, matched by dim name (an output dim named "sequence" takes the
 * size of the request's inputs' "sequence"). Zero padding is right for
 * models whose padding is masked by an input (a Hugging Face encoder's
 * attention_mask); a model without such a mask should get requests of one
 * shape.
 *
 * Thread safety: kiln_batcher_submit and kiln_batcher_get_stats may be
 * called from any thread; callbacks run on the batcher's thread.
 */
typedef struct kiln_batcher_s kiln_batcher_t;

typedef struct kiln_batcher_options_s {
  /* Requests in one run at most; 0 (the default): the model's batch bound,
   * at most 64. */
  int32_t max_batch_size;
  /* How long the oldest waiting request may wait for others. Default 1000. */
  int64_t max_queue_delay_us;
} kiln_batcher_options_t;

/* Called once per request on the batcher's thread: status NULL and the
 * request's outputs (in model output order, valid during the call), or a
 * status (owned by the batcher) saying why its batch failed. */
typedef void (*kiln_batcher_callback_t)(void *user_data, kiln_status_t status,
                                        const kiln_tensor_t *outputs,
                                        int32_t num_outputs);

typedef struct kiln_batcher_stats_s {
  uint64_t num_requests;
  uint64_t num_batches;
  int32_t largest_batch;
  int32_t num_waiting;
} kiln_batcher_stats_t;

KILN_API void kiln_batcher_options_init(kiln_batcher_options_t *options);
/* Starts the batcher's thread over `model`, which must outlive it. */
KILN_API kiln_status_t kiln_batcher_create(kiln_model_t *model,
                                           const kiln_batcher_options_t *options,
                                           kiln_batcher_t **out_batcher);
/* Runs what is queued, then stops; every request gets its callback. */
KILN_API void kiln_batcher_release(kiln_batcher_t *batcher);
/* Queues one request: `inputs` in model input order, each with dim 0 of
 * size 1, copied. Refuses (INVALID_ARGUMENT, naming the input) a count,
 * dtype, rank or size the model does not accept. */
KILN_API kiln_status_t kiln_batcher_submit(kiln_batcher_t *batcher,
                                           const kiln_tensor_t *inputs,
                                           int32_t num_inputs,
                                           kiln_batcher_callback_t callback,
                                           void *user_data);
KILN_API kiln_status_t kiln_batcher_get_stats(kiln_batcher_t *batcher,
                                              kiln_batcher_stats_t *out_stats);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KILN_ENGINE_H */
