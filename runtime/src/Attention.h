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

#include <cstdint>

/// The attention that compiled model code calls. Q is [batch, heads, q_len,
/// head_dim], K [batch, kv_heads, kv_len, head_dim], V [batch, kv_heads,
/// kv_len, value_dim] and OUT [batch, heads, q_len, value_dim]; every stride is
/// in elements and follows its tensor's dims in that order (b, h, t, d), so
/// transposed and strided views need no copy. heads must be a multiple of
/// kv_heads: head h reads kv head h / (heads / kv_heads) (grouped-query
/// attention; kv_heads == heads is plain multi-head attention). For each b, h
/// and query row i, over keys j < kv_len:
///   s_j = scale · Σ_d Q[b,h,i,d]·K[b,h/group,j,d]
///   s_j = masked_value             if keep and keep[b,h,i,j] == 0
///   s_j = s_j + bias[b,h,i,j]      if bias (an f32 add: it may overflow to
///                                  -inf, as the unfused Add does)
///   OUT[b,h,i,e] = Σ_j softmax(s)_j · V[b,h/group,j,e]
/// keep and bias are optional (nullptr) and are indexed [b, h, i, j] with
/// strides that may be 0 to broadcast. kv_len == 0 writes zeros. A row whose
/// scores are all -inf (or NaN) comes out NaN, as exp(-inf - -inf) makes it in
/// the unfused softmax; NaN inputs propagate. OUT must not overlap the inputs.
/// Runs on currentThreadPool() when the product is large enough to gain from
/// it; results do not depend on the thread count.
extern "C" __attribute__((visibility("default"))) void kiln_ukernel_attention(
    int64_t batch, int64_t heads, int64_t kv_heads, int64_t q_len,
    int64_t kv_len, int64_t head_dim, int64_t value_dim, const float *q,
    int64_t q_sb, int64_t q_sh, int64_t q_st, int64_t q_sd, const float *k,
    int64_t k_sb, int64_t k_sh, int64_t k_st, int64_t k_sd, const float *v,
    int64_t v_sb, int64_t v_sh, int64_t v_st, int64_t v_sd, const uint8_t *keep,
    int64_t keep_sb, int64_t keep_sh, int64_t keep_sq, int64_t keep_sk,
    float masked_value, const float *bias, int64_t bias_sb, int64_t bias_sh,
    int64_t bias_sq, int64_t bias_sk, float scale, float *out, int64_t out_sb,
    int64_t out_sh, int64_t out_st, int64_t out_sd);

#endif // KILN_RUNTIME_ATTENTION_H
