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

/// The attention that compiled model code calls, as kiln/abi/kernel_abi.h
/// specifies it. Runs on currentThreadPool() when the product is large
/// enough to gain from it; results do not depend on the thread count.
extern "C" __attribute__((visibility("default"))) void
kiln_ukernel_attention(const kiln_attention_params_t *params);

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
