/* Kiln runtime C API: loads a compiled Kiln artifact (.kiln) and runs it.
 *
 * Objects:
 *   kiln_instance_t  process-wide state: the CPU kernels chosen for this
 *                    machine and the worker thread pool.
 *   kiln_model_t     one loaded artifact: its manifest, code and mmapped
 *                    weights. Immutable once loaded.
 *   kiln_session_t   the input/output bindings of one model plus the state of
 *                    one run.
 *
 * Every call that can fail returns a kiln_status_t: NULL means success,
 * anything else is an error that the caller owns and frees with
 * kiln_status_free. Messages name the culprit (file, offset, field, input).
 *
 * Thread safety:
 *   - kiln_instance_*: create/release from one thread; a live instance may be
 *     used by any number of models and sessions on any threads.
 *   - kiln_model_*: loading is thread-safe; a loaded model is immutable and its
 *     queries may be called from any thread concurrently.
 *   - kiln_session_*: a session is NOT thread-safe; use each session from one
 *     thread at a time. Different sessions of one model may run concurrently.
 *   - kiln_status_*: a status belongs to the caller; no shared state.
 */
#ifndef KILN_RUNTIME_H
#define KILN_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define KILN_API __attribute__((visibility("default")))
#else
#define KILN_API
#endif

/*===------------------------------------------------------------------===*/
/* Status                                                                  */
/*===------------------------------------------------------------------===*/

typedef enum kiln_status_code_e {
  KILN_STATUS_OK = 0,
  KILN_STATUS_INVALID_ARGUMENT = 1,    /* a bad input, shape, dtype or name */
  KILN_STATUS_NOT_FOUND = 2,           /* a missing file or a name not in the model */
  KILN_STATUS_DATA_LOSS = 3,           /* a corrupted or truncated artifact */
  KILN_STATUS_UNIMPLEMENTED = 4,       /* a format version this runtime cannot read */
  KILN_STATUS_FAILED_PRECONDITION = 5, /* e.g. CPU features the artifact needs */
  KILN_STATUS_RESOURCE_EXHAUSTED = 6,  /* out of memory */
  KILN_STATUS_INTERNAL = 7,
} kiln_status_code_t;

typedef struct kiln_status_s *kiln_status_t;

KILN_API kiln_status_code_t kiln_status_code(kiln_status_t status);
/* The message; valid until kiln_status_free. "OK" for a NULL status. */
KILN_API const char *kiln_status_message(kiln_status_t status);
KILN_API void kiln_status_free(kiln_status_t status);

/*===------------------------------------------------------------------===*/
/* Element types                                                           */
/*===------------------------------------------------------------------===*/

/* Values are stable: they are stored in artifacts. */
typedef enum kiln_dtype_e {
  KILN_DTYPE_INVALID = 0,
  KILN_DTYPE_F32 = 1,
  KILN_DTYPE_F16 = 2,
  KILN_DTYPE_BF16 = 3,
  KILN_DTYPE_F64 = 4,
  KILN_DTYPE_I64 = 5,
  KILN_DTYPE_I32 = 6,
  KILN_DTYPE_I8 = 7,
  KILN_DTYPE_BOOL = 8, /* one byte per element, 0 or 1 */
  KILN_DTYPE_I16 = 9,
  KILN_DTYPE_U8 = 10,
  KILN_DTYPE_U16 = 11,
  KILN_DTYPE_U32 = 12,
  KILN_DTYPE_U64 = 13,
} kiln_dtype_t;

/* Bytes per element; 0 for KILN_DTYPE_INVALID or an unknown value. */
KILN_API size_t kiln_dtype_size(kiln_dtype_t dtype);
/* "f32", "i64", "bool", ...; "invalid" for an unknown value. */
KILN_API const char *kiln_dtype_name(kiln_dtype_t dtype);

/*===------------------------------------------------------------------===*/
/* Instance                                                                */
/*===------------------------------------------------------------------===*/

typedef struct kiln_instance_s kiln_instance_t;

typedef struct kiln_instance_options_s {
  /* Worker threads for GEMMs and attention heads, the caller included.
   * 0 means one per online CPU core. */
  int32_t num_threads;
} kiln_instance_options_t;

KILN_API void kiln_instance_options_init(kiln_instance_options_t *options);
KILN_API kiln_status_t kiln_instance_create(
    const kiln_instance_options_t *options, kiln_instance_t **out_instance);
/* Every model and session of the instance must be released first. */
KILN_API void kiln_instance_release(kiln_instance_t *instance);
KILN_API int32_t kiln_instance_num_threads(const kiln_instance_t *instance);
/* The CPU kernel family chosen at create time: "avx512", "avx2" or "generic". */
KILN_API const char *kiln_instance_kernel_isa(const kiln_instance_t *instance);

/*===------------------------------------------------------------------===*/
/* CUDA devices                                                            */
/*===------------------------------------------------------------------===*/

/* The runtime reaches NVIDIA GPUs through the CUDA driver, libcuda.so.1
 * (or the library $KILN_CUDA_DRIVER names), which it loads the first time
 * it is asked: it needs no CUDA to build, load or run on the CPU. An
 * artifact of the CUDA target (kilnc --target=cuda) runs on device 0. */
typedef struct kiln_cuda_device_s {
  char name[256];
  int32_t compute_capability_major; /* 9 and 0 for sm_90 */
  int32_t compute_capability_minor;
  uint64_t memory_bytes;
} kiln_cuda_device_t;

/* Sets *count to the number of CUDA devices and fills the first
 * min(*count, capacity) of `devices` (which may be NULL when capacity is
 * 0). Without a driver, or when it cannot start (no device, a stub
 * library), returns KILN_STATUS_FAILED_PRECONDITION saying why, *count 0.
 * Thread-safe. */
KILN_API kiln_status_t kiln_cuda_devices(kiln_cuda_device_t *devices,
                                         int32_t capacity, int32_t *count);

/*===------------------------------------------------------------------===*/
/* Model                                                                   */
/*===------------------------------------------------------------------===*/

typedef struct kiln_model_s kiln_model_t;

/* Which of an artifact's codes a model runs: kilnc --target=x86 makes CPU
 * code, --target=cuda GPU code, --target=x86,cuda both. */
typedef enum kiln_device_e {
  KILN_DEVICE_AUTO = 0, /* the GPU code on device 0 where it can run, else
                           the CPU code (kiln_model_device says why) */
  KILN_DEVICE_CPU = 1,
  KILN_DEVICE_CUDA = 2,
} kiln_device_t;

typedef struct kiln_model_options_s {
  kiln_device_t device;
} kiln_model_options_t;

/* Defaults: KILN_DEVICE_AUTO. */
KILN_API void kiln_model_options_init(kiln_model_options_t *options);

/* Loads and validates an artifact: magic, format version, section bounds,
 * checksum, and the CPU features its code needs. The file is mmapped; the
 * CPU code's weights are used in place. On a GPU, the weights are uploaded
 * to device 0 here, once, and the model's sessions run there. Asking for a
 * device whose code the artifact lacks, or for CUDA where there is no
 * usable device, fails with KILN_STATUS_FAILED_PRECONDITION, saying why.
 * `options` may be NULL for the defaults. */
KILN_API kiln_status_t kiln_model_load(kiln_instance_t *instance, const char *path,
                                       const kiln_model_options_t *options,
                                       kiln_model_t **out_model);
/* kiln_model_load with the defaults. */
KILN_API kiln_status_t kiln_model_load_file(kiln_instance_t *instance,
                                            const char *path,
                                            kiln_model_t **out_model);
KILN_API void kiln_model_release(kiln_model_t *model);
/* What the model runs on: "cpu", its GPU ("device 0 (NAME, sm_90)"), or,
 * where KILN_DEVICE_AUTO fell back to the CPU code, "cpu" and why
 * ("cpu (... no CUDA device: ...)"). Valid while the model is; "" for NULL. */
KILN_API const char *kiln_model_device(const kiln_model_t *model);

/* One dimension of an input or output. */
typedef struct kiln_dim_s {
  int64_t size;     /* the static size, or -1 when symbolic */
  const char *name; /* the symbolic name ("batch"); "" when static */
  int64_t min;      /* bounds of a symbolic dim; min == max == size when static */
  int64_t max;
} kiln_dim_t;

typedef struct kiln_io_info_s {
  const char *name;
  kiln_dtype_t dtype;
  int32_t rank;
  const kiln_dim_t *dims; /* rank entries; valid while the model lives */
} kiln_io_info_t;

KILN_API int32_t kiln_model_input_count(const kiln_model_t *model);
KILN_API int32_t kiln_model_output_count(const kiln_model_t *model);
KILN_API kiln_status_t kiln_model_input_info(const kiln_model_t *model,
                                             int32_t index,
                                             kiln_io_info_t *out_info);
KILN_API kiln_status_t kiln_model_output_info(const kiln_model_t *model,
                                              int32_t index,
                                              kiln_io_info_t *out_info);
/* The bytes of the arena in which the model's code places its intermediate
 * buffers (0 when the compiler planned none). Every session allocates one
 * when it is created and reuses it for all its runs; buffers the plan could
 * not bound, and outputs, are allocated per run. 0 for NULL. */
KILN_API size_t kiln_model_arena_bytes(const kiln_model_t *model);
/* The index of the input or output called `name`, or -1. */
KILN_API int32_t kiln_model_find_input(const kiln_model_t *model,
                                       const char *name);
KILN_API int32_t kiln_model_find_output(const kiln_model_t *model,
                                        const char *name);

/*===------------------------------------------------------------------===*/
/* Session                                                                 */
/*===------------------------------------------------------------------===*/

typedef struct kiln_session_s kiln_session_t;

/* A dense row-major tensor in caller or runtime memory. */
typedef struct kiln_tensor_s {
  kiln_dtype_t dtype;
  int32_t rank;
  const int64_t *shape; /* rank entries */
  void *data;
  size_t byte_size; /* for an output binding: the capacity of `data` */
} kiln_tensor_t;

KILN_API kiln_status_t kiln_session_create(kiln_model_t *model,
                                           kiln_session_t **out_session);
KILN_API void kiln_session_release(kiln_session_t *session);

/* Binds caller-owned memory to input `index`. The dtype, rank and shape are
 * checked against the model (static sizes, dim bounds, and one size per dim
 * name across all inputs) when bound and again at run. The memory must stay
 * valid and unchanged until kiln_session_run returns. The shape is copied. */
KILN_API kiln_status_t kiln_session_bind_input(kiln_session_t *session,
                                               int32_t index,
                                               const kiln_tensor_t *tensor);
/* Binds caller-owned memory to output `index`: after a run the output is
 * written there, and the run fails if it does not fit in byte_size. Unbound
 * outputs are kept in runtime memory; see kiln_session_output. Only
 * tensor->data and tensor->byte_size are read. */
KILN_API kiln_status_t kiln_session_bind_output(kiln_session_t *session,
                                                int32_t index,
                                                const kiln_tensor_t *tensor);
/* Runs the model on the bound inputs; every input must be bound. */
KILN_API kiln_status_t kiln_session_run(kiln_session_t *session);
/* Output `index` of the last successful run. The view's shape and data stay
 * valid until the next run or release of the session; data points into the
 * caller's bound buffer when the output was bound. */
KILN_API kiln_status_t kiln_session_output(const kiln_session_t *session,
                                           int32_t index,
                                           kiln_tensor_t *out_tensor);

/* A linear observer, for calibration and accuracy tools (kilnc
 * --calibration): called on the thread that runs the session, before
 * (`after` 0) and after (`after` 1) every kiln.linear product of the run,
 * with the kernel's parameters (kiln/abi/kernel_abi.h) and the index of the
 * product's weight among the model's weights in manifest order (-1 for a
 * weight computed at run time). While it runs the observer is off, so it
 * may call kiln_ukernel_linear itself, for example to compute a reference
 * product into its own memory; it must not keep the pointers past the
 * call, nor write the product's operands. NULL turns observing off. */
struct kiln_linear_params_s;
typedef void (*kiln_linear_observer_t)(void *user_data,
                                       const struct kiln_linear_params_s *params,
                                       int32_t weight_index, int32_t after);
KILN_API kiln_status_t kiln_session_set_linear_observer(kiln_session_t *session,
                                                        kiln_linear_observer_t observer,
                                                        void *user_data);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KILN_RUNTIME_H */
