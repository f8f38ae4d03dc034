//===- Attention.h - Fused attention for the CPU ---------------*- C++ -*-===//
//
// softmax(scale·Q·Kᵀ, masked and biased)·V in one pass over K and V: the
// softmax is computed online (a running max and sum per query row, the
// accumulated output rescaled when the max grows), so the q_len×kv_len score
// matrix never exists. It replaces the unfused MatMul, Mul, Where, Add,
// Softmax, MatMul chain and gives its results, NaN included.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_ATTENTION_H
#define KILN_RUNTIME_ATTENTION_H

#include "kiln/abi/kernel_abi.h"

#include <cstdint>

/// The attention that compiled model code calls. Q is [batch, heads, q_len,
/// head_dim] and OUT [batch, heads, q_len, value_dim]. The keys and values
/// are a past (the KV cache: PAST_K [batch, kv_heads, past_len, head_dim],
/// PAST_V [batch, kv_heads, past_len, value_dim]) followed by kv_len new rows
/// (K [batch, kv_heads, kv_len, head_dim], V [batch, kv_heads, kv_len,
/// value_dim]); past_len is 0 (and the past pointers null) without a cache.
/// Every stride is in elements and follows its tensor's dims in that order
/// (b, h, t, d), so transposed and strided views need no copy. heads must be
/// a multiple of kv_heads: head h reads kv head h / (heads / kv_heads)
/// (grouped-query attention; kv_heads == heads is plain multi-head
/// attention). With keys and values the past's rows then the new ones, for
/// each b, h and query row i, over keys j < past_len + kv_len:
///   s_j = scale · Σ_d Q[b,h,i,d]·K[b,h/group,j,d]
///   s_j = masked_value             if keep and keep[b,h,i,j] == 0
///   s_j = s_j + bias[b,h,i,j]      if bias (an f32 add: it may overflow to
///                                  -inf, as the unfused Add does)
///   OUT[b,h,i,e] = Σ_j softmax(s)_j · V[b,h/group,j,e]
/// keep and bias are optional (nullptr) and are indexed [b, h, i, j] with
/// strides that may be 0 to broadcast. No keys at all writes zeros. A row
/// whose scores are all -inf (or NaN) comes out NaN, as exp(-inf - -inf)
/// makes it in the unfused softmax; NaN inputs propagate.
/// PRESENT_K [batch, kv_heads, past_len + kv_len, head_dim] and PRESENT_V
/// (likewise, value_dim wide) receive the past and new rows concatenated: the
/// next step's cache, written as the rows are read. Either may be null to
/// skip it. OUT and the presents must not overlap the inputs or each other.
/// Runs on currentThreadPool() when the product is large enough to gain from
/// it; results do not depend on the thread count.
extern "C" __attribute__((visibility("default"))) void kiln_ukernel_attention(
    int64_t batch, int64_t heads, int64_t kv_heads, int64_t q_len,
    int64_t past_len, int64_t kv_len, int64_t head_dim, int64_t value_dim,
    const float *q, int64_t q_sb, int64_t q_sh, int64_t q_st, int64_t q_sd,
    const float *past_k, int64_t past_k_sb, int64_t past_k_sh,
    int64_t past_k_st, int64_t past_k_sd, const float *k, int64_t k_sb,
    int64_t k_sh, int64_t k_st, int64_t k_sd, const float *past_v,
    int64_t past_v_sb, int64_t past_v_sh, int64_t past_v_st, int64_t past_v_sd,
    const float *v, int64_t v_sb, int64_t v_sh, int64_t v_st, int64_t v_sd,
    const uint8_t *keep, int64_t keep_sb, int64_t keep_sh, int64_t keep_sq,
    int64_t keep_sk, float masked_value, const float *bias, int64_t bias_sb,
    int64_t bias_sh, int64_t bias_sq, int64_t bias_sk, float scale, float *out,
    int64_t out_sb, int64_t out_sh, int64_t out_st, int64_t out_sd,
    float *present_k, int64_t present_k_sb, int64_t present_k_sh,
    int64_t present_k_st, int64_t present_k_sd, float *present_v,
    int64_t present_v_sb, int64_t present_v_sh, int64_t present_v_st,
    int64_t present_v_sd);

/// The same attention with the past read from the generation engine's paged
/// pool (kiln/abi/kernel_abi.h says where each row is); no presents are written: the
/// engine stores the new rows itself. With a 16-bit pool the new rows are
/// rounded to its precision before they are attended to, as the engine
/// stores them. Batch-invariant: a row's output is the same bits whatever
/// the step's other rows and sequences, and wherever its sequence's past
/// ends (a prompt in chunks, decode steps, a recomputation), so that a
/// seeded request draws the same tokens in any batch.
extern "C" __attribute__((visibility("default"))) void
kiln_ukernel_paged_attention(const kiln_paged_attention_params_t *params);

#endif // KILN_RUNTIME_ATTENTION_H
