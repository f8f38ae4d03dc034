/* The calling convention between kilnc's generated code and the runtime
 * kernels that take a parameter struct. Every field is 8 bytes, so that
 * generated code fills a struct as an array of int64 slots in declaration
 * order: pointers as integers, floats as the bits of a double. Part of the
 * compiler/runtime contract (kiln/abi/): the compiler
 * (compiler/Conversion/KilnToLinalg) and the runtime (runtime/src) both
 * include this header; each struct's KILN_..._SLOTS is checked against its
 * size on both sides.
 */
#ifndef KILN_ABI_KERNEL_ABI_H
#define KILN_ABI_KERNEL_ABI_H

#include "../runtime.h" /* kiln_dtype_t */

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* kiln.attention: softmax(scale·Q·Kᵀ, biased and masked)·V, with the
 * softmax computed online so that the q_len × keys scores never exist.
 *
 * Q is [batch, heads, q_len, head_dim] and OUT [batch, heads, q_len,
 * value_dim]. The keys and values are a past (the KV cache: PAST_K [batch,
 * kv_heads, past_len, head_dim], PAST_V [batch, kv_heads, past_len,
 * value_dim]) followed by kv_len new rows (K [batch, kv_heads, kv_len,
 * head_dim], V [batch, kv_heads, kv_len, value_dim]); past_len is 0 (and
 * the past pointers NULL) without a cache. Every stride is in elements and
 * follows its tensor's dims in that order (b, h, t, d), so transposed and
 * strided views need no copy. heads is a multiple of kv_heads: head h reads
 * kv head h / (heads / kv_heads) (grouped-query attention). For each b, h
 * and query row i, over keys j < past_len + kv_len:
 *   s_j = scale · Σ_d Q[b,h,i,d]·K[b,h/group,j,d]
 *   s_j = s_j + POSITION_BIAS[b,h,i,j]  if POSITION_BIAS (ALiBi's slopes ×
 *                                       distances: added beneath the mask)
 *   s_j = MASKED_VALUE                  if KEEP and KEEP[b,h,i,j] == 0
 *   s_j = s_j + BIAS[b,h,i,j]           if BIAS (an f32 add: it may overflow
 *                                       to -inf, as the unfused Add does)
 *   OUT[b,h,i,e] = Σ_j softmax(s)_j · V[b,h/group,j,e]
 * The three masks are optional (NULL) and indexed [b, h, i, j] with strides
 * that may be 0 to broadcast. No keys at all writes zeros. A row whose
 * scores are all -inf (or NaN) comes out NaN, as exp(-inf - -inf) makes it
 * in the unfused softmax; NaN inputs propagate. PRESENT_K [batch, kv_heads,
 * past_len + kv_len, head_dim] and PRESENT_V (likewise, value_dim wide)
 * receive the past and new rows concatenated: the next step's cache,
 * written as the rows are read. Either may be NULL to skip it. OUT and the
 * presents must not overlap the inputs or each other. */
typedef struct kiln_attention_params_s {
  int64_t batch, heads, kv_heads, q_len, past_len, kv_len, head_dim, value_dim;
  const float *q;
  int64_t q_strides[4];
  const float *past_k;
  int64_t past_k_strides[4];
  const float *k;
  int64_t k_strides[4];
  const float *past_v;
  int64_t past_v_strides[4];
  const float *v;
  int64_t v_strides[4];
  const float *position_bias;
  int64_t position_bias_strides[4];
  const uint8_t *keep;
  int64_t keep_strides[4];
  double masked_value;
  const float *bias;
  int64_t bias_strides[4];
  double scale;
  float *out;
  int64_t out_strides[4];
  float *present_k;
  int64_t present_k_strides[4];
  float *present_v;
  int64_t present_v_strides[4];
} kiln_attention_params_t;

#define KILN_ATTENTION_SLOTS 65

/* kiln.paged_attention: attention whose past keys and values are read from
 * the generation engine's paged pool instead of a dense tensor.
 *
 * Q [batch, heads, q_len, head_dim], the new rows K and V [batch, kv_heads,
 * q_len, head_dim] and OUT [batch, heads, q_len, head_dim] are strided
 * (b, h, t, d). The pool KV_CACHE is dense [blocks, num_layers, 2, kv_heads,
 * block_size, head_dim] (2: key, value); sequence b's cached token t is in
 * block BLOCK_TABLES[b * block_table_stride + t / block_size], row
 * t % block_size, for t < PAST_LENGTHS[b]. KV_CACHE_DTYPE (a kiln_dtype_t)
 * is KILN_DTYPE_F32, or KILN_DTYPE_F16 or KILN_DTYPE_BF16 for a pool that
 * stores keys and values in 16 bits, which the kernel widens as it reads.
 * The masks (POSITION_BIAS, KEEP, BIAS, applied as kiln_attention_params_t
 * says, strided over [batch, heads, q_len, past_width + q_len], any may be
 * NULL) see a padded past of PAST_WIDTH columns:
 * sequence b's cached rows are columns [past_width - past_lengths[b],
 * past_width) and the new rows follow; the columns in front hold no key and
 * take no weight. A length outside [0, past_width], a table too narrow for
 * it or a block id outside [0, num_blocks) ends the run with an error
 * (kiln_rt_trap). */
typedef struct kiln_paged_attention_params_s {
  int64_t batch, heads, kv_heads, q_len, head_dim, past_width;
  const float *q;
  int64_t q_strides[4];
  const float *k;
  int64_t k_strides[4];
  const float *v;
  int64_t v_strides[4];
  const void *kv_cache;
  int64_t kv_cache_dtype;
  int64_t num_blocks, num_layers, layer, block_size;
  const int64_t *block_tables;
  int64_t block_table_stride, block_table_width;
  const int64_t *past_lengths;
  const float *position_bias;
  int64_t position_bias_strides[4];
  const uint8_t *keep;
  int64_t keep_strides[4];
  double masked_value;
  const float *bias;
  int64_t bias_strides[4];
  double scale;
  float *out;
  int64_t out_strides[4];
} kiln_paged_attention_params_t;

#define KILN_PAGED_ATTENTION_SLOTS 53

/* How kiln_linear_params_t's WEIGHT_DTYPE stores a weight. F32 and I8
 * have kiln_dtype_t's codes; 4-bit values are never a tensor's element
 * type, so U4's code lies outside kiln_dtype_t. */
typedef enum kiln_weight_dtype_e {
  KILN_WEIGHT_F32 = 1,
  KILN_WEIGHT_I8 = 7,
  KILN_WEIGHT_U4 = 64,
  KILN_WEIGHT_I8_ROW_QUADS = 65,
} kiln_weight_dtype_t;

/* How kiln_linear_params_t's INPUT_QUANTIZATION treats A. F32: A is
 * multiplied as it is. U8_DYNAMIC_ROWS: each row of A is quantized at run
 * time to uint8 with its own scale s and zero point z (its range, widened
 * to include 0, cut into 255 steps), and the product is computed in
 * integers: row i of OUT is s_i · (A_q · W_q − z_i · COLUMN_SUMS) · scale,
 * for W a KILN_WEIGHT_I8_ROW_QUADS weight. U8_STATIC: the same with one
 * scale INPUT_SCALE (finite, positive) and zero point INPUT_ZERO_POINT (in
 * [0, 255]) for every row, fixed at compile time (a QDQ model's).
 * U8_DYNAMIC_TENSOR: one scale and zero point for every row, from the
 * range of the whole A at run time (ONNX's DynamicQuantizeLinear). Values
 * are round(x / s) + z clamped to [0, 255], ties to even, as ONNX's
 * QuantizeLinear computes them. */
typedef enum kiln_input_quantization_e {
  KILN_INPUT_F32 = 0,
  KILN_INPUT_U8_DYNAMIC_ROWS = 1,
  KILN_INPUT_U8_STATIC = 2,
  KILN_INPUT_U8_DYNAMIC_TENSOR = 3,
} kiln_input_quantization_t;

/* kiln.linear: OUT = activation(A · W + BIAS) · GATE + RESIDUAL for A
 * [m, k] and OUT [m, n], rows lda and ldc floats apart. W is k×n as
 * WEIGHT_LAYOUT says (kiln::rt::GemmLayout, the compiler's WeightLayout:
 * 0 [k, n] rows, 1 [n, k] rows, 2 packed panels), with rows or panels
 * WEIGHT_STRIDE elements (bytes for a quantized weight) apart.
 * WEIGHT_DTYPE is a kiln_weight_dtype_t. A quantized weight (packed panels
 * only) is quantized by group: each column's k values are cut into groups
 * of GROUP_SIZE rows, each with a scale (and, for KILN_WEIGHT_U4, a zero
 * point) read from SCALES (ZERO_POINTS), which are laid out as panels of
 * the weight's ceil(k / group_size) rows, SCALES_STRIDE elements apart
 * (f32 scales, one byte per zero point). KILN_WEIGHT_I8: W's element is
 * its int8 value times its scale; ZERO_POINTS is NULL. KILN_WEIGHT_U4:
 * (value − zero point) · scale, 4-bit unsigned values and zero points, a
 * panel row of 64 columns in 32 bytes with column c in the low 4 bits of
 * byte c and column c + 32 in its high 4 bits. KILN_WEIGHT_I8_ROW_QUADS:
 * int8 values times a scale per column (GROUP_SIZE >= k), each panel's k
 * rows in quads, row 4q + i of column c at byte 256q + 4c + i (k a
 * multiple of 4), the layout of the VNNI dot product of 4 bytes;
 * COLUMN_SUMS holds each column's sum of values (int32, 64 per panel, the
 * panels side by side), and INPUT_QUANTIZATION is not F32 (a
 * kiln_input_quantization_t; F32 for every other weight). INPUT_SCALE and
 * INPUT_ZERO_POINT are read for U8_STATIC only. BIAS (n floats), GATE
 * (m×n, ldg) and RESIDUAL (m×n, ldr) may be NULL; ACTIVATION is the kiln
 * dialect's Activation value (0 for none). */
typedef struct kiln_linear_params_s {
  int64_t m, n, k;
  const float *a;
  int64_t lda;
  const void *weight;
  int64_t weight_stride, weight_layout, weight_dtype;
  const float *scales;
  const uint8_t *zero_points;
  const int32_t *column_sums;
  int64_t scales_stride, group_size, input_quantization;
  double input_scale;
  int64_t input_zero_point;
  const float *bias;
  int64_t activation;
  const float *gate;
  int64_t ldg;
  const float *residual;
  int64_t ldr;
  float *out;
  int64_t ldc;
} kiln_linear_params_t;

#define KILN_LINEAR_SLOTS 25

/* The runtime exports the kernels that generated code calls; tools that
 * check a product (kilnc's accuracy report) may call kiln_ukernel_linear
 * too, inside a run (from a kiln_linear_observer_t). */
void kiln_ukernel_linear(const kiln_linear_params_t *params);
void kiln_ukernel_attention(const kiln_attention_params_t *params);
void kiln_ukernel_paged_attention(const kiln_paged_attention_params_t *params);

#ifdef __cplusplus
} /* extern "C" */
static_assert(sizeof(kiln_attention_params_t) == 8 * KILN_ATTENTION_SLOTS,
              "every field of the parameter struct is one 8-byte slot");
static_assert(sizeof(kiln_paged_attention_params_t) == 8 * KILN_PAGED_ATTENTION_SLOTS,
              "every field of the parameter struct is one 8-byte slot");
static_assert(sizeof(kiln_linear_params_t) == 8 * KILN_LINEAR_SLOTS,
              "every field of the parameter struct is one 8-byte slot");
#endif

#endif /* KILN_ABI_KERNEL_ABI_H */
