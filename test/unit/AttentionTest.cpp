//===- AttentionTest.cpp - The fused attention microkernel ----------------===//
//
// Every ISA the CPU has is checked against a double-precision, three-pass
// softmax reference over MHA/GQA, decode and prefill shapes, key counts on
// both sides of the kernel's 128-key blocks, odd head sizes, broadcast keep
// masks and biases, transposed and padded views, and keys and values split
// into a past and new rows with the presents written. Inputs have NaN in every
// element outside their view and the output buffer starts as NaN, so a read
// past a row, an element left unwritten or a write outside the view shows up.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/cpu/Attention.h"
#include "runtime/src/cpu/Gemm.h"
#include "runtime/src/HalfFloat.h"
#include "runtime/src/ThreadPool.h"
#include "test/unit/PerIsaTest.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

using namespace kiln::rt;

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();
/// What ONNX exporters put in masked scores: the lowest finite float.
constexpr float kLowest = -3.4028235e38f;

using Dims = std::array<int64_t, 4>;

/// How a tensor's logical dims [b, h, t, d] are laid out in memory.
enum class Layout {
  Contiguous, // [b, h, t, d]
  Padded,     // [b, h, t, d] with 3 spare floats after each row
  TokenMajor, // [b, t, h, d], as attention inputs come out of a projection
  DimMajor,   // [b, h, d, t], a transposed K (the d stride is not 1)
};

const char *layoutName(Layout layout) {
  switch (layout) {
  case Layout::Contiguous:
    return "contiguous";
  case Layout::Padded:
    return "padded";
  case Layout::TokenMajor:
    return "token-major";
  case Layout::DimMajor:
    return "dim-major";
  }
  return "?";
}

/// A strided 4-d view into a buffer whose elements outside the view are NaN.
struct Tensor {
  Dims dims;
  Dims strides;
  std::vector<float> data;

  Tensor(Dims dims, Layout layout) : dims(dims) {
    // Physical order, outermost first, as indices into dims.
    Dims order = {0, 1, 2, 3};
    if (layout == Layout::TokenMajor)
      order = {0, 2, 1, 3};
    if (layout == Layout::DimMajor)
      order = {0, 1, 3, 2};
    int64_t stride = 1;
    for (int i = 3; i >= 0; --i) {
      strides[order[i]] = stride;
      stride *= dims[order[i]] + (i == 3 && layout == Layout::Padded ? 3 : 0);
    }
    data.assign(std::max<int64_t>(1, stride), kNaN);
  }

  int64_t offset(int64_t b, int64_t h, int64_t t, int64_t d) const {
    return b * strides[0] + h * strides[1] + t * strides[2] + d * strides[3];
  }
  float &at(int64_t b, int64_t h, int64_t t, int64_t d) {
    return data[offset(b, h, t, d)];
  }
  float at(int64_t b, int64_t h, int64_t t, int64_t d) const {
    return data[offset(b, h, t, d)];
  }

  void
  fill(const std::function<float(int64_t, int64_t, int64_t, int64_t)> &value) {
    for (int64_t b = 0; b < dims[0]; ++b)
      for (int64_t h = 0; h < dims[1]; ++h)
        for (int64_t t = 0; t < dims[2]; ++t)
          for (int64_t d = 0; d < dims[3]; ++d)
            at(b, h, t, d) = value(b, h, t, d);
  }
  void fillUniform(std::mt19937 &rng, float low = -1.0f, float high = 1.0f) {
    std::uniform_real_distribution<float> uniform(low, high);
    fill([&](int64_t, int64_t, int64_t, int64_t) { return uniform(rng); });
  }
};

/// A keep mask or bias over the scores [b, h, i, j], stored over `dims` (each
/// 1 or the scores' size) and read with stride 0 along size-1 dims; stored
/// [b, h, j, i] when keyMajor.
template <typename T> struct ScoreOperand {
  Dims dims;
  Dims strides;
  std::vector<T> data;

  ScoreOperand(
      Dims dims,
      const std::function<T(int64_t, int64_t, int64_t, int64_t)> &value,
      bool keyMajor = false)
      : dims(dims) {
    const Dims order = keyMajor ? Dims{0, 1, 3, 2} : Dims{0, 1, 2, 3};
    int64_t stride = 1;
    for (int i = 3; i >= 0; --i) {
      strides[order[i]] = dims[order[i]] == 1 ? 0 : stride;
      stride *= dims[order[i]];
    }
    data.resize(std::max<int64_t>(1, stride));
    for (int64_t b = 0; b < dims[0]; ++b)
      for (int64_t h = 0; h < dims[1]; ++h)
        for (int64_t i = 0; i < dims[2]; ++i)
          for (int64_t j = 0; j < dims[3]; ++j)
            data[b * strides[0] + h * strides[1] + i * strides[2] +
                 j * strides[3]] = value(b, h, i, j);
  }
  T at(int64_t b, int64_t h, int64_t i, int64_t j) const {
    return data[b * strides[0] + h * strides[1] + i * strides[2] +
                j * strides[3]];
  }
};
using Keep = ScoreOperand<uint8_t>;
using Bias = ScoreOperand<float>;

struct Shape {
  int64_t batch, heads, kvHeads, qLen, kvLen, headDim, valueDim;
};

std::string shapeName(const Shape &s) {
  return "b" + std::to_string(s.batch) + " h" + std::to_string(s.heads) + "/" +
         std::to_string(s.kvHeads) + " q" + std::to_string(s.qLen) + " kv" +
         std::to_string(s.kvLen) + " d" + std::to_string(s.headDim) + " e" +
         std::to_string(s.valueDim);
}

/// One attention call: inputs with random values in [-1, 1], a NaN output.
struct Problem {
  Shape shape;
  Tensor q, k, v, out;
  /// Added to the scores beneath the keep mask (ALiBi's biases).
  const Bias *positionBias = nullptr;
  const Keep *keep = nullptr;
  float maskedValue = kLowest;
  const Bias *bias = nullptr;
  float scale;
  /// Rows [0, pastLen) of k and v go to the kernel as the past (the KV
  /// cache), the others as the new rows.
  int64_t pastLen = 0;
  /// Where the kernel writes the past and new rows back, when not null.
  Tensor *presentK = nullptr, *presentV = nullptr;

  Problem(const Shape &s, std::mt19937 &rng, Layout qLayout = Layout::Padded,
          Layout kLayout = Layout::Padded, Layout vLayout = Layout::Padded,
          Layout outLayout = Layout::Padded)
      : shape(s), q({s.batch, s.heads, s.qLen, s.headDim}, qLayout),
        k({s.batch, s.kvHeads, s.kvLen, s.headDim}, kLayout),
        v({s.batch, s.kvHeads, s.kvLen, s.valueDim}, vLayout),
        out({s.batch, s.heads, s.qLen, s.valueDim}, outLayout),
        scale(1.0f / std::sqrt(float(std::max<int64_t>(1, s.headDim)))) {
    q.fillUniform(rng);
    k.fillUniform(rng);
    v.fillUniform(rng);
  }

  void run(ThreadPool *pool = nullptr) {
    const Shape &s = shape;
    kiln_attention_params_t params = {};
    params.batch = s.batch;
    params.heads = s.heads;
    params.kv_heads = s.kvHeads;
    params.q_len = s.qLen;
    params.past_len = pastLen;
    params.kv_len = s.kvLen - pastLen;
    params.head_dim = s.headDim;
    params.value_dim = s.valueDim;
    params.q = q.data.data();
    params.past_k = pastLen ? k.data.data() : nullptr;
    params.k = k.data.data() + pastLen * k.strides[2];
    params.past_v = pastLen ? v.data.data() : nullptr;
    params.v = v.data.data() + pastLen * v.strides[2];
    params.position_bias = positionBias ? positionBias->data.data() : nullptr;
    params.keep = keep ? keep->data.data() : nullptr;
    params.masked_value = maskedValue;
    params.bias = bias ? bias->data.data() : nullptr;
    params.scale = scale;
    params.out = out.data.data();
    params.present_k = presentK ? presentK->data.data() : nullptr;
    params.present_v = presentV ? presentV->data.data() : nullptr;
    for (int d = 0; d < 4; ++d) {
      params.q_strides[d] = q.strides[d];
      params.past_k_strides[d] = params.k_strides[d] = k.strides[d];
      params.past_v_strides[d] = params.v_strides[d] = v.strides[d];
      params.position_bias_strides[d] = positionBias ? positionBias->strides[d] : 0;
      params.keep_strides[d] = keep ? keep->strides[d] : 0;
      params.bias_strides[d] = bias ? bias->strides[d] : 0;
      params.out_strides[d] = out.strides[d];
      params.present_k_strides[d] = presentK ? presentK->strides[d] : 0;
      params.present_v_strides[d] = presentV ? presentV->strides[d] : 0;
    }
    ScopedThreadPool scope(pool);
    kiln_ukernel_attention(&params);
  }
};

/// One output row of the reference: the scores in double, rounded to f32 as
/// the unfused MatMul's result is, masked and biased in f32 (so -3.4e38 plus
/// -3.4e38 overflows to -inf as it does there), then a three-pass softmax and
/// the weighted sum of V in double. `scale` gets Σ_j p_j·|V_j,e|, the size of
/// the terms, which any summation order's rounding error is relative to.
void referenceRow(const Problem &p, int64_t b, int64_t h, int64_t i,
                  std::vector<double> &result, std::vector<double> &scale) {
  const Shape &s = p.shape;
  const int64_t kvHead = h / (s.heads / s.kvHeads);
  std::vector<double> scores(s.kvLen);
  double max = -kInf;
  for (int64_t j = 0; j < s.kvLen; ++j) {
    double dot = 0;
    for (int64_t d = 0; d < s.headDim; ++d)
      dot += double(p.q.at(b, h, i, d)) * p.k.at(b, kvHead, j, d);
    float score = float(p.scale * dot);
    if (p.positionBias)
      score = score + p.positionBias->at(b, h, i, j);
    if (p.keep && p.keep->at(b, h, i, j) == 0)
      score = p.maskedValue;
    if (p.bias)
      score = score + p.bias->at(b, h, i, j);
    scores[j] = score;
    max = std::max(max, scores[j]);
  }
  double sum = 0;
  for (int64_t j = 0; j < s.kvLen; ++j)
    sum += std::exp(scores[j] - max);
  result.assign(s.valueDim, 0.0);
  scale.assign(s.valueDim, 0.0);
  for (int64_t j = 0; j < s.kvLen; ++j) {
    const double weight = std::exp(scores[j] - max) / sum;
    for (int64_t e = 0; e < s.valueDim; ++e) {
      result[e] += weight * p.v.at(b, kvHead, j, e);
      scale[e] += std::fabs(weight * p.v.at(b, kvHead, j, e));
    }
  }
}

/// Checks every output element against the reference: within 1e-5 of the
/// size of its terms (NaN exactly where the reference is NaN), and that the
/// output buffer outside the view still holds its NaN.
void expectMatchesReference(const Problem &p, const std::string &what) {
  const Shape &s = p.shape;
  std::vector<bool> inView(p.out.data.size(), false);
  std::vector<double> expected, scale;
  int64_t mismatches = 0;
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < s.heads; ++h)
      for (int64_t i = 0; i < s.qLen; ++i) {
        referenceRow(p, b, h, i, expected, scale);
        for (int64_t e = 0; e < s.valueDim; ++e) {
          inView[p.out.offset(b, h, i, e)] = true;
          const float actual = p.out.at(b, h, i, e);
          const bool ok =
              std::isnan(expected[e])
                  ? std::isnan(actual)
                  : std::fabs(actual - expected[e]) <= 1e-5 * scale[e] + 1e-30;
          if (!ok && mismatches++ < 5)
            ADD_FAILURE() << what << ": out[" << b << "," << h << "," << i
                          << "," << e << "] = " << actual << ", expected "
                          << expected[e] << " (scale " << scale[e] << ")";
        }
      }
  for (size_t n = 0; n < inView.size(); ++n)
    if (!inView[n] && !std::isnan(p.out.data[n]) && mismatches++ < 5)
      ADD_FAILURE() << what << ": wrote element " << n
                    << " of the output buffer, outside the view";
  EXPECT_EQ(mismatches, 0) << what;
}

/// Checks that `present` holds exactly the elements of `rows` (bit for bit,
/// since the kernel copies them) and NaN outside its view.
void expectSameRows(const Tensor &present, const Tensor &rows,
                    const std::string &what) {
  ASSERT_EQ(present.dims, rows.dims) << what;
  std::vector<bool> inView(present.data.size(), false);
  int64_t mismatches = 0;
  for (int64_t b = 0; b < rows.dims[0]; ++b)
    for (int64_t h = 0; h < rows.dims[1]; ++h)
      for (int64_t t = 0; t < rows.dims[2]; ++t)
        for (int64_t d = 0; d < rows.dims[3]; ++d) {
          inView[present.offset(b, h, t, d)] = true;
          const float actual = present.at(b, h, t, d);
          const float expected = rows.at(b, h, t, d);
          if (std::memcmp(&actual, &expected, sizeof(float)) != 0 &&
              mismatches++ < 5)
            ADD_FAILURE() << what << ": present[" << b << "," << h << "," << t
                          << "," << d << "] = " << actual << ", expected "
                          << expected;
        }
  for (size_t n = 0; n < inView.size(); ++n)
    if (!inView[n] && !std::isnan(present.data[n]) && mismatches++ < 5)
      ADD_FAILURE() << what << ": wrote element " << n
                    << " of the present, outside the view";
  EXPECT_EQ(mismatches, 0) << what;
}

/// Whether every element of the output row is NaN (all) or none is (!all).
bool rowIsNaN(const Problem &p, int64_t b, int64_t h, int64_t i, bool all) {
  for (int64_t e = 0; e < p.shape.valueDim; ++e)
    if (std::isnan(p.out.at(b, h, i, e)) != all)
      return false;
  return true;
}

//===----------------------------------------------------------------------===//
// Per ISA
//===----------------------------------------------------------------------===//

class AttentionTest : public PerIsaTest {};

TEST_P(AttentionTest, MatchesReferenceOverShapes) {
  // MHA, GQA and MQA; decode (q 1), prefill (q == kv) and q < kv; key counts
  // of 1 and around the 128-key block; head sizes that are and are not a
  // whole number of vectors, with head_dim != value_dim; more rows per kv
  // head than one 64-row tile.
  const Shape shapes[] = {
      {1, 4, 4, 1, 128, 16, 16},
      {2, 4, 2, 1, 65, 64, 64},
      {1, 4, 1, 1, 300, 16, 16},
      {1, 4, 4, 64, 64, 16, 16},
      {2, 4, 2, 63, 63, 13, 13},
      {1, 4, 1, 40, 40, 80, 80},
      {1, 2, 2, 5, 300, 64, 32},
      {1, 4, 2, 7, 129, 13, 20},
      {2, 3, 3, 3, 1, 16, 16},
      {1, 4, 4, 130, 127, 16, 80},
      {1, 2, 1, 9, 64, 16, 13},
      {1, 1, 1, 2, 256, 24, 8},
      {1, 4, 2, 17, 17, 1, 3},
      {1, 2, 2, 3, 64, 256, 256},
      // Decode with one row per kv head, whose keys are read in place when
      // their rows are contiguous and whole vectors: several key blocks, a
      // partial last vector of keys, a block of fewer keys than one vector,
      // and a head size that is no whole number of vectors (transposed
      // instead).
      {2, 2, 2, 1, 300, 64, 64},
      {1, 3, 3, 1, 37, 32, 16},
      {1, 2, 2, 1, 129, 32, 32},
      {1, 2, 2, 1, 5, 32, 32},
      {1, 2, 2, 1, 129, 24, 24},
  };
  std::mt19937 rng(1);
  for (const Shape &shape : shapes)
    for (Layout layout : {Layout::Contiguous, Layout::Padded}) {
      Problem p(shape, rng, layout, layout, layout, layout);
      p.run();
      expectMatchesReference(p, shapeName(shape) + " " + layoutName(layout));
    }
}

TEST_P(AttentionTest, EmptyKeysGiveZerosAndEmptyOutputsWriteNothing) {
  std::mt19937 rng(2);
  Problem noKeys({2, 4, 2, 3, 0, 16, 16}, rng);
  noKeys.run();
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t h = 0; h < 4; ++h)
      for (int64_t i = 0; i < 3; ++i)
        for (int64_t e = 0; e < 16; ++e)
          EXPECT_EQ(noKeys.out.at(b, h, i, e), 0.0f);
  expectMatchesReference(noKeys, "kv_len 0");

  for (const Shape &shape :
       {Shape{0, 4, 2, 3, 5, 16, 16}, Shape{2, 0, 0, 3, 5, 16, 16},
        Shape{2, 4, 2, 0, 5, 16, 16}, Shape{2, 4, 2, 3, 5, 16, 0}}) {
    Problem p(shape, rng);
    p.run();
    for (float x : p.out.data)
      EXPECT_TRUE(std::isnan(x)) << shapeName(shape);
  }
}

TEST_P(AttentionTest, CausalKeepMask) {
  // [1, 1, q, k], broadcast over batch and heads, aligned so that the last
  // query sees every key (as with a past KV cache when q < kv).
  std::mt19937 rng(3);
  for (const Shape &shape :
       {Shape{2, 4, 4, 65, 65, 16, 16}, Shape{1, 4, 2, 130, 130, 64, 64},
        Shape{1, 4, 1, 10, 300, 16, 16}, Shape{2, 2, 2, 1, 200, 16, 16}}) {
    const int64_t offset = shape.kvLen - shape.qLen;
    const Keep causal({1, 1, shape.qLen, shape.kvLen},
                      [&](int64_t, int64_t, int64_t i, int64_t j) {
                        return uint8_t(j <= i + offset);
                      });
    Problem p(shape, rng);
    p.keep = &causal;
    p.run();
    expectMatchesReference(p, "causal " + shapeName(shape));
  }
}

TEST_P(AttentionTest, RandomKeepMaskOverEveryDim) {
  std::mt19937 rng(4);
  const Shape shape{2, 4, 2, 9, 140, 16, 24};
  std::bernoulli_distribution kept(0.7);
  const Keep keep({2, 4, 9, 140}, [&](int64_t, int64_t, int64_t, int64_t) {
    return uint8_t(kept(rng) ? 1 + rng() % 255 : 0); // any nonzero keeps
  });
  Problem p(shape, rng);
  p.keep = &keep;
  p.maskedValue = -1e4f; // replaces the score: finite masked scores still count
  p.run();
  expectMatchesReference(p, "random keep");
}

TEST_P(AttentionTest, MaskAndBiasWithOtherKeyStrides) {
  // A causal keep mask stored key-major (key stride q_len), and a keep mask
  // and a bias per query row (key stride 0): rows masked whole spread their
  // weight evenly; the bias shifts every score of a row alike.
  std::mt19937 rng(14);
  const Shape shape{2, 2, 1, 20, 150, 16, 16};
  const Keep keyMajor(
      {1, 1, 20, 150},
      [](int64_t, int64_t, int64_t i, int64_t j) {
        return uint8_t(j <= i + 130);
      },
      /*keyMajor=*/true);
  const Keep perRow({2, 2, 20, 1},
                    [](int64_t b, int64_t h, int64_t i, int64_t) {
                      return uint8_t((b + h + i) % 4 != 0);
                    });
  std::uniform_real_distribution<float> uniform(-30.0f, 30.0f);
  const Bias rowBias({2, 2, 20, 1}, [&](int64_t, int64_t, int64_t, int64_t) {
    return uniform(rng);
  });
  for (const Keep *keep : {&keyMajor, &perRow}) {
    Problem p(shape, rng);
    p.keep = keep;
    p.bias = &rowBias;
    p.run();
    expectMatchesReference(p, keep == &keyMajor ? "key-major keep"
                                                : "per-row keep and bias");
  }
}

TEST_P(AttentionTest, AdditiveBias) {
  std::mt19937 rng(5);
  const Shape shape{2, 4, 2, 33, 150, 16, 16};
  // [B, 1, 1, k]: a padding mask, the second batch entry's last 70 keys off.
  const Bias padding({2, 1, 1, 150},
                     [](int64_t b, int64_t, int64_t, int64_t j) {
                       return b == 1 && j >= 80 ? kLowest : 0.0f;
                     });
  // [B, 1, q, k]: an arbitrary additive bias (relative positions, ALiBi).
  std::uniform_real_distribution<float> uniform(-3.0f, 3.0f);
  const Bias positional({2, 1, 33, 150}, [&](int64_t, int64_t, int64_t,
                                             int64_t) { return uniform(rng); });
  for (const Bias *bias : {&padding, &positional}) {
    Problem p(shape, rng);
    p.bias = bias;
    p.run();
    expectMatchesReference(p, bias == &padding ? "padding bias"
                                               : "positional bias");
  }
}

TEST_P(AttentionTest, PositionBiasIsAddedBeneathTheKeepMask) {
  // ALiBi's [B, H, 1, k] slopes × key positions, beneath a random keep mask
  // whose masked value (0) is in the scores' range: a masked key's score is
  // 0 whatever its position bias, which an add after the mask would move.
  // A padding bias on top, as BLOOM's export adds its mask.
  std::mt19937 rng(12);
  const Shape shape{2, 4, 4, 37, 150, 16, 16};
  const Bias alibi({2, 4, 1, 150}, [](int64_t, int64_t h, int64_t, int64_t j) {
    return std::ldexp(1.0f, -2 * int(h + 1)) * float(j) * 8.0f;
  });
  std::bernoulli_distribution kept(0.7);
  const Keep keep({2, 4, 37, 150}, [&](int64_t, int64_t, int64_t, int64_t) {
    return uint8_t(kept(rng));
  });
  const Bias padding({2, 1, 1, 150}, [](int64_t b, int64_t, int64_t, int64_t j) {
    return b == 1 && j < 30 ? kLowest : 0.0f;
  });
  Problem p(shape, rng);
  p.positionBias = &alibi;
  p.keep = &keep;
  p.maskedValue = 0.0f;
  p.bias = &padding;
  p.run();
  expectMatchesReference(p, "ALiBi beneath a keep mask, padding above");
}

TEST_P(AttentionTest, KeepAndBiasTogether) {
  // A causal keep mask and a padding bias, both -3.4e38: where both block a
  // key its score is -3.4e38 + -3.4e38 = -inf in f32; where one does, it is
  // -3.4e38 (the score itself rounds away), so a row whose visible keys are
  // all padded spreads its weight evenly over them.
  std::mt19937 rng(6);
  const Shape shape{3, 4, 2, 140, 140, 16, 16};
  const Keep causal(
      {1, 1, 140, 140},
      [](int64_t, int64_t, int64_t i, int64_t j) { return uint8_t(j <= i); });
  const Bias padding(
      {3, 1, 1, 140}, [](int64_t b, int64_t, int64_t, int64_t j) {
        const bool padded = b == 1 ? j < 20 : b == 2 ? j >= 100 : false;
        return padded ? kLowest : 0.0f;
      });
  Problem p(shape, rng);
  p.keep = &causal;
  p.bias = &padding;
  p.run();
  expectMatchesReference(p, "causal + padding");
  // Batch 1's first 20 rows see only padded keys: an even spread, not NaN.
  for (int64_t i = 0; i < 20; ++i)
    EXPECT_TRUE(rowIsNaN(p, 1, 0, i, /*all=*/false)) << "row " << i;
}

TEST_P(AttentionTest, AllMinusInfinityRowsAreNaN) {
  // Rows where every key is blocked twice: all scores -inf, so the unfused
  // softmax gives NaN. Batch 1 is fully padded; its row 3 is fully masked.
  std::mt19937 rng(7);
  const Shape shape{2, 2, 2, 6, 140, 16, 16};
  const Keep keep({2, 1, 6, 140}, [](int64_t, int64_t, int64_t i, int64_t j) {
    return uint8_t(i != 3 && j % 3 != 0);
  });
  const Bias padding({2, 1, 1, 140}, [](int64_t b, int64_t, int64_t, int64_t) {
    return b == 1 ? kLowest : 0.0f;
  });
  Problem p(shape, rng);
  p.keep = &keep;
  p.bias = &padding;
  p.run();
  expectMatchesReference(p, "blocked twice");
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t i = 0; i < 6; ++i) {
      EXPECT_TRUE(rowIsNaN(p, 0, h, i, /*all=*/false))
          << "b0 h" << h << " " << i;
      EXPECT_EQ(rowIsNaN(p, 1, h, i, /*all=*/true), i == 3)
          << "b1 h" << h << " row " << i;
    }
}

TEST_P(AttentionTest, LeadingBlocksOfMinusInfinity) {
  // Scores of -inf over the first 200 keys (more than one 128-key block)
  // before finite ones: the streaming softmax must give them weight 0 rather
  // than NaN from exp(-inf - -inf) while its running max is still -inf.
  std::mt19937 rng(8);
  const Shape shape{1, 4, 2, 5, 300, 16, 16};
  for (float masked : {-kInf, kLowest}) {
    const Keep keep({1, 1, 1, 300}, [](int64_t, int64_t, int64_t, int64_t j) {
      return uint8_t(j >= 200);
    });
    const Bias bias({1, 1, 1, 300}, [](int64_t, int64_t, int64_t, int64_t j) {
      return j >= 200 ? 0.5f : kLowest;
    });
    Problem p(shape, rng);
    p.keep = &keep;
    p.maskedValue = masked;
    if (masked == kLowest)
      p.bias = &bias; // -3.4e38 + -3.4e38 = -inf
    p.run();
    expectMatchesReference(p, masked == -kInf ? "masked -inf"
                                              : "masked and biased");
    for (int64_t h = 0; h < 4; ++h)
      for (int64_t i = 0; i < 5; ++i)
        EXPECT_TRUE(rowIsNaN(p, 0, h, i, /*all=*/false));
  }
}

TEST_P(AttentionTest, MaskedKeysGetExactlyZeroWeight) {
  // V is 3e38 at masked keys: any weight above 0 there, even e^-87 (about
  // the smallest normal float), would swamp the result, so both exp(-inf)
  // and exp(-3.4e38 - max) must be exactly 0.
  std::mt19937 rng(9);
  const Shape shape{1, 2, 2, 4, 150, 16, 16};
  for (float masked : {-kInf, kLowest}) {
    const Keep keep({1, 1, 1, 150}, [](int64_t, int64_t, int64_t, int64_t j) {
      return uint8_t(j % 5 != 0);
    });
    Problem p(shape, rng);
    p.v.fill([&](int64_t, int64_t, int64_t j, int64_t) {
      return j % 5 == 0 ? 3e38f : 0.25f;
    });
    p.keep = &keep;
    p.maskedValue = masked;
    p.run();
    expectMatchesReference(p, "huge masked values");
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t i = 0; i < 4; ++i)
        for (int64_t e = 0; e < 16; ++e)
          EXPECT_NEAR(p.out.at(0, h, i, e), 0.25f, 1e-6f);
  }
}

TEST_P(AttentionTest, NaNPropagatesUnlessMaskedAway) {
  // NaN in a query row poisons that row. NaN in key 5 poisons every row
  // that keeps key 5; the keep mask replaces the score (as ONNX Where does),
  // so rows that mask it are unaffected.
  std::mt19937 rng(10);
  const Shape shape{1, 2, 1, 6, 140, 16, 16};
  const Keep keep({1, 1, 6, 140}, [](int64_t, int64_t, int64_t i, int64_t j) {
    return uint8_t(j != 5 || i % 2 == 1);
  });
  Problem p(shape, rng);
  p.q.at(0, 1, 0, 3) = kNaN;
  p.k.at(0, 0, 5, 7) = kNaN;
  p.keep = &keep;
  p.run();
  expectMatchesReference(p, "NaN inputs");
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t i = 0; i < 6; ++i) {
      const bool poisoned = i % 2 == 1 || (h == 1 && i == 0);
      EXPECT_TRUE(rowIsNaN(p, 0, h, i, /*all=*/poisoned))
          << "h" << h << " row " << i;
    }
}

TEST_P(AttentionTest, DecodeKeysPastTheLastAreIgnored) {
  // A decode row reads keys in place, a vector of keys at a time; the last
  // group of 37 (5 keys of 16 or 8, 1 of 4) is partial, and what stands in for
  // the missing keys must not reach the output: with the last key NaN and
  // masked, the row is finite; kept, it is NaN.
  std::mt19937 rng(12);
  const Shape shape{1, 2, 2, 1, 37, 32, 32};
  for (bool keepLast : {false, true}) {
    const Keep keep({1, 1, 1, 37}, [&](int64_t, int64_t, int64_t, int64_t j) {
      return uint8_t(j != 36 || keepLast);
    });
    Problem p(shape, rng);
    p.k.at(0, 1, 36, 0) = kNaN;
    p.keep = &keep;
    p.run();
    expectMatchesReference(p, keepLast ? "NaN key kept" : "NaN key masked");
    EXPECT_TRUE(rowIsNaN(p, 0, 0, 0, /*all=*/false));
    EXPECT_TRUE(rowIsNaN(p, 0, 1, 0, /*all=*/keepLast));
  }
}

TEST_P(AttentionTest, PastAndNewRowsAttendAsOneCacheAndFillThePresents) {
  // The keys and values split into a past and new rows: as one decode step
  // (a past of 127 and one new row), over several key blocks with the split
  // inside one, GQA with more query rows per kv head than one tile (whose
  // other tiles must not write the presents), a prefill with no past, and
  // a past with no new rows. The causal mask checks that the new rows' keys
  // are indexed after the past's. Presents in other layouts than the rows,
  // and from K read with a d stride other than 1.
  struct Case {
    Shape shape;
    int64_t pastLen;
    Layout rows, present;
  };
  const Case cases[] = {
      {{1, 4, 4, 1, 128, 16, 16}, 127, Layout::Contiguous, Layout::Contiguous},
      {{2, 4, 2, 1, 300, 64, 64}, 299, Layout::Padded, Layout::TokenMajor},
      {{1, 4, 4, 3, 300, 16, 16}, 200, Layout::TokenMajor, Layout::Padded},
      {{1, 4, 1, 40, 140, 16, 13}, 100, Layout::Padded, Layout::Contiguous},
      {{2, 2, 2, 9, 9, 32, 32}, 0, Layout::Contiguous, Layout::Padded},
      {{1, 2, 1, 2, 70, 24, 24}, 70, Layout::DimMajor, Layout::Contiguous},
  };
  std::mt19937 rng(14);
  for (const Case &c : cases) {
    const Shape &s = c.shape;
    const int64_t offset = s.kvLen - s.qLen;
    const Keep causal({1, 1, s.qLen, s.kvLen},
                      [&](int64_t, int64_t, int64_t i, int64_t j) {
                        return uint8_t(j <= i + offset);
                      });
    Problem p(s, rng, Layout::Padded, c.rows, c.rows, Layout::Padded);
    Tensor presentK(p.k.dims, c.present), presentV(p.v.dims, c.present);
    p.pastLen = c.pastLen;
    p.presentK = &presentK;
    p.presentV = &presentV;
    p.keep = &causal;
    p.run();
    const std::string what =
        shapeName(s) + " past " + std::to_string(c.pastLen) + " " +
        layoutName(c.rows) + " -> " + layoutName(c.present);
    expectMatchesReference(p, what);
    expectSameRows(presentK, p.k, what + " key");
    expectSameRows(presentV, p.v, what + " value");
  }
}

TEST_P(AttentionTest, PresentsAreWrittenWithoutQueriesAndOneAtATime) {
  // No query rows, or no value columns, leave no attention to compute, but
  // the presents still get the cache; either present may be left out.
  std::mt19937 rng(15);
  for (const Shape &shape :
       {Shape{2, 4, 2, 0, 9, 16, 16}, Shape{2, 4, 2, 3, 9, 16, 0},
        Shape{1, 2, 2, 1, 130, 16, 16}}) {
    for (bool withValues : {true, false}) {
      Problem p(shape, rng);
      Tensor presentK(p.k.dims, Layout::Padded),
          presentV(p.v.dims, Layout::Padded);
      p.pastLen = shape.kvLen - 1;
      p.presentK = &presentK;
      p.presentV = withValues ? &presentV : nullptr;
      p.run();
      const std::string what =
          shapeName(shape) + (withValues ? " both presents" : " key only");
      expectMatchesReference(p, what);
      expectSameRows(presentK, p.k, what);
      if (!withValues) {
        for (float x : presentV.data)
          EXPECT_TRUE(std::isnan(x)) << what;
      }
    }
  }
}

TEST_P(AttentionTest, StridedViews) {
  // Token-major Q, V and output ([b, t, h, d], as projections produce them),
  // a transposed K ([b, h, d, t]), and V with a d stride other than 1.
  struct Views {
    Layout q, k, v, out;
  };
  const Views views[] = {
      {Layout::TokenMajor, Layout::TokenMajor, Layout::TokenMajor,
       Layout::TokenMajor},
      {Layout::Padded, Layout::DimMajor, Layout::DimMajor, Layout::DimMajor},
      {Layout::DimMajor, Layout::Contiguous, Layout::Padded,
       Layout::TokenMajor},
  };
  std::mt19937 rng(11);
  for (const Shape &shape :
       {Shape{2, 4, 2, 1, 130, 16, 16}, Shape{1, 4, 4, 70, 70, 64, 64},
        Shape{2, 4, 1, 9, 200, 13, 20}}) {
    for (const Views &view : views) {
      Problem p(shape, rng, view.q, view.k, view.v, view.out);
      p.run();
      expectMatchesReference(p, shapeName(shape) + " q " + layoutName(view.q) +
                                    ", k " + layoutName(view.k) + ", v " +
                                    layoutName(view.v) + ", out " +
                                    layoutName(view.out));
    }
  }
}

TEST_P(AttentionTest, LargeScoresRescaleExactly) {
  // Integer-valued Q and K make every score exact in f32 (scale 1/2), so the
  // reference needs no slack for rounded dot products. Scores reach about
  // ±80, where a missed or doubled rescale of the running sum is off by
  // orders of magnitude; a ramp in the bias makes later key blocks raise the
  // max again and again (and the falling ramp never).
  std::mt19937 rng(12);
  const Shape shape{1, 2, 1, 9, 400, 16, 16};
  std::uniform_int_distribution<int> digit(-4, 4);
  for (float slope : {0.25f, -0.25f, 0.0f}) {
    const Bias ramp({1, 1, 1, 400}, [&](int64_t, int64_t, int64_t, int64_t j) {
      return slope * (j - 200);
    });
    Problem p(shape, rng);
    p.q.fill([&](int64_t, int64_t, int64_t, int64_t) { return digit(rng); });
    p.k.fill([&](int64_t, int64_t, int64_t, int64_t) { return digit(rng); });
    p.scale = 0.5f;
    p.bias = &ramp;
    p.run();
    expectMatchesReference(p, "slope " + std::to_string(slope));
  }
}

TEST_P(AttentionTest, ThreadCountDoesNotChangeResults) {
  // Big enough to be split (about 60M multiply-adds), with a mask and bias.
  std::mt19937 rng(13);
  const Shape shape{2, 4, 2, 200, 300, 64, 64};
  const Keep causal({1, 1, 200, 300},
                    [](int64_t, int64_t, int64_t i, int64_t j) {
                      return uint8_t(j <= i + 100);
                    });
  const Bias bias({2, 1, 1, 300}, [](int64_t b, int64_t, int64_t, int64_t j) {
    return b == 1 && j < 10 ? kLowest : 0.0f;
  });
  Problem serial(shape, rng, Layout::TokenMajor, Layout::Padded,
                 Layout::Contiguous, Layout::TokenMajor);
  serial.keep = &causal;
  serial.bias = &bias;
  // Each kv head's rows are split over several tiles, only one of which
  // writes its presents (and reads the keys from them).
  serial.pastLen = 250;
  Tensor presentK(serial.k.dims, Layout::Contiguous),
      presentV(serial.v.dims, Layout::Contiguous);
  Problem parallel = serial;
  serial.presentK = &presentK;
  serial.presentV = &presentV;
  serial.run(nullptr);
  Tensor serialK = presentK, serialV = presentV;
  expectSameRows(serialK, serial.k, "one thread, key");
  expectSameRows(serialV, serial.v, "one thread, value");
  std::fill(presentK.data.begin(), presentK.data.end(), kNaN);
  std::fill(presentV.data.begin(), presentV.data.end(), kNaN);
  parallel.presentK = &presentK;
  parallel.presentV = &presentV;
  ThreadPool twoThreads(2);
  parallel.run(&twoThreads);
  expectSameRows(presentK, parallel.k, "two threads, key");
  expectSameRows(presentV, parallel.v, "two threads, value");
  ASSERT_EQ(serial.out.data.size(), parallel.out.data.size());
  EXPECT_EQ(std::memcmp(serial.out.data.data(), parallel.out.data.data(),
                        serial.out.data.size() * sizeof(float)),
            0);
  expectMatchesReference(parallel, "two threads");
}

// The paged past, read block by block through a table from a pool laid out
// as the engine's ([blocks, layers, 2, kv heads, block size, dim], here
// layer 1 of 2, blocks out of order), gives what the dense kernel gives for
// the same rows right-aligned in a padded past whose front the bias masks:
// for decode and prefill rows, grouped heads, an empty past, a past that
// ends inside a block and one that fills the padded width. A pool of f16
// or bf16 rows (head size 20: whole vectors and a scalar tail) gives what
// the dense kernel gives for those rows widened to f32, and the new rows
// rounded to the pool's precision.
using PagedAttentionTest = PerIsaTestOf<std::tuple<GemmIsa, kiln_dtype_t>>;

TEST_P(PagedAttentionTest, PagedPastMatchesTheDensePast) {
  const kiln_dtype_t dtype = std::get<1>(GetParam());
  const int64_t batch = 3, heads = 4, kvHeads = 2, width = 40;
  const int64_t dim = dtype == KILN_DTYPE_F32 ? 16 : 20;
  const int64_t blockSize = 8, layers = 2, layer = 1, blocks = 20;
  const int64_t lengths[batch] = {0, 37, 40};
  std::mt19937 rng(21);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  // The pool as the kernel reads it (`stored`), and its values in f32.
  std::vector<float> pool(blocks * layers * 2 * kvHeads * blockSize * dim);
  std::vector<uint16_t> narrow(dtype == KILN_DTYPE_F32 ? 0 : pool.size());
  for (size_t i = 0; i < pool.size(); ++i) {
    // Some f16 subnormals (below 6.1e-5) among the values.
    pool[i] = i % 7 == 3 ? uniform(rng) * 1e-5f : uniform(rng);
    if (dtype == KILN_DTYPE_F16) {
      narrow[i] = floatToHalf(pool[i]);
      pool[i] = halfToFloat(narrow[i]);
    } else if (dtype == KILN_DTYPE_BF16) {
      narrow[i] = floatToBfloat16(pool[i]);
      pool[i] = bfloat16ToFloat(narrow[i]);
    }
  }
  const void *stored = narrow.empty() ? static_cast<const void *>(pool.data())
                                      : static_cast<const void *>(narrow.data());
  // Block i of sequence b is pool block (7 * (b * 5 + i) + 3) % 20: no two
  // the same, none in order.
  const int64_t tableWidth = 5;
  std::vector<int64_t> tables(batch * tableWidth);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < tableWidth; ++i)
      tables[b * tableWidth + i] = (7 * (b * tableWidth + i) + 3) % blocks;
  auto poolRow = [&](int64_t b, int64_t kv, int64_t h, int64_t t) {
    int64_t block = tables[b * tableWidth + t / blockSize];
    return pool.data() +
           ((((block * layers + layer) * 2 + kv) * kvHeads + h) * blockSize + t % blockSize) * dim;
  };
  for (int64_t qLen : {1, 5}) {
    std::vector<float> q(batch * heads * qLen * dim), k(batch * kvHeads * qLen * dim),
        v(k.size());
    for (auto *x : {&q, &k, &v})
      for (float &e : *x)
        e = uniform(rng);
    // The paged kernel rounds the new rows to a 16-bit pool's precision
    // before it attends to them; the dense one is given them so rounded.
    std::vector<float> kRounded = k, vRounded = v;
    if (dtype != KILN_DTYPE_F32)
      for (auto *x : {&kRounded, &vRounded})
        for (float &e : *x)
          e = roundedTo16Bits(e, dtype == KILN_DTYPE_BF16);
    // The dense past: each sequence's rows right-aligned, zeros in front.
    std::vector<float> pastK(batch * kvHeads * width * dim, 0.0f), pastV(pastK.size(), 0.0f);
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t h = 0; h < kvHeads; ++h)
        for (int64_t t = 0; t < lengths[b]; ++t) {
          size_t at = ((b * kvHeads + h) * width + width - lengths[b] + t) * dim;
          std::memcpy(&pastK[at], poolRow(b, 0, h, t), dim * sizeof(float));
          std::memcpy(&pastV[at], poolRow(b, 1, h, t), dim * sizeof(float));
        }
    // The padding and the new rows' future are masked, as exports mask them.
    const int64_t columns = width + qLen;
    std::vector<float> bias(batch * qLen * columns);
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t i = 0; i < qLen; ++i)
        for (int64_t j = 0; j < columns; ++j)
          bias[(b * qLen + i) * columns + j] =
              (j < width - lengths[b] || j > width + i) ? kLowest : 0.0f;
    const int64_t qs[4] = {heads * qLen * dim, qLen * dim, dim, 1};
    const int64_t kvs[4] = {kvHeads * qLen * dim, qLen * dim, dim, 1};
    const int64_t ps[4] = {kvHeads * width * dim, width * dim, dim, 1};
    const int64_t bs[4] = {qLen * columns, 0, columns, 1};
    std::vector<float> dense(q.size()), paged(q.size(), kNaN);
    kiln_attention_params_t denseParams = {};
    denseParams.batch = batch;
    denseParams.heads = heads;
    denseParams.kv_heads = kvHeads;
    denseParams.q_len = qLen;
    denseParams.past_len = width;
    denseParams.kv_len = qLen;
    denseParams.head_dim = denseParams.value_dim = dim;
    denseParams.q = q.data();
    denseParams.past_k = pastK.data();
    denseParams.k = kRounded.data();
    denseParams.past_v = pastV.data();
    denseParams.v = vRounded.data();
    denseParams.bias = bias.data();
    denseParams.scale = 0.25;
    denseParams.out = dense.data();
    for (int d = 0; d < 4; ++d) {
      denseParams.q_strides[d] = denseParams.out_strides[d] = qs[d];
      denseParams.past_k_strides[d] = denseParams.past_v_strides[d] = ps[d];
      denseParams.k_strides[d] = denseParams.v_strides[d] = kvs[d];
      denseParams.bias_strides[d] = bs[d];
    }
    kiln_ukernel_attention(&denseParams);
    kiln_paged_attention_params_t params = {};
    params.batch = batch;
    params.heads = heads;
    params.kv_heads = kvHeads;
    params.q_len = qLen;
    params.head_dim = dim;
    params.past_width = width;
    params.q = q.data();
    params.k = k.data();
    params.v = v.data();
    params.out = paged.data();
    for (int d = 0; d < 4; ++d) {
      params.q_strides[d] = params.out_strides[d] = qs[d];
      params.k_strides[d] = params.v_strides[d] = kvs[d];
      params.bias_strides[d] = bs[d];
    }
    params.kv_cache = stored;
    params.kv_cache_dtype = dtype;
    params.num_blocks = blocks;
    params.num_layers = layers;
    params.layer = layer;
    params.block_size = blockSize;
    params.block_tables = tables.data();
    params.block_table_stride = params.block_table_width = tableWidth;
    params.past_lengths = lengths;
    params.bias = bias.data();
    params.scale = 0.25;
    kiln_ukernel_paged_attention(&params);
    for (size_t i = 0; i < dense.size(); ++i)
      ASSERT_NEAR(paged[i], dense[i], 1e-5f) << "q_len " << qLen << ", element " << i;
  }
}

/// Sequences whose keys and values sit in a paged pool as the engine's (a
/// shuffled table each, the rows rounded to the pool's dtype), with every
/// row's query, key and value in f32, to run kiln_ukernel_paged_attention
/// steps over them: the past from the pool, the new rows as the projection
/// gives them (token-major, f32).
struct PagedSequences {
  static constexpr int64_t kHeads = 4, kKvHeads = 2, kBlockSize = 16;
  kiln_dtype_t dtype;
  int64_t dim, tableWidth;
  std::vector<int64_t> lengths;
  std::vector<std::vector<float>> q, k, v; // [t][head][dim] per sequence
  std::vector<float> pool;                 // f32, or 16-bit pairs
  std::vector<uint16_t> narrow;
  std::vector<int64_t> tables;             // [sequence][tableWidth]

  PagedSequences(kiln_dtype_t dtype, int64_t dim, std::vector<int64_t> lengths,
                 std::mt19937 &rng)
      : dtype(dtype), dim(dim), lengths(std::move(lengths)) {
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    tableWidth = 0;
    int64_t blocks = 0;
    for (int64_t length : this->lengths) {
      tableWidth = std::max(tableWidth, ceilDiv(length, kBlockSize));
      blocks += ceilDiv(length, kBlockSize);
    }
    std::vector<int64_t> order(blocks);
    for (int64_t i = 0; i < blocks; ++i)
      order[i] = i;
    std::shuffle(order.begin(), order.end(), rng);
    tables.assign(this->lengths.size() * tableWidth, 0);
    pool.assign(blocks * 2 * kKvHeads * kBlockSize * dim, 0.0f);
    int64_t used = 0;
    for (size_t s = 0; s < this->lengths.size(); ++s) {
      const int64_t length = this->lengths[s];
      for (int64_t i = 0; i < ceilDiv(length, kBlockSize); ++i)
        tables[s * tableWidth + i] = order[used++];
      for (auto *rows : {&q, &k, &v}) {
        const int64_t heads = rows == &q ? kHeads : kKvHeads;
        rows->emplace_back(length * heads * dim);
        for (float &x : rows->back())
          x = uniform(rng);
      }
      for (int64_t t = 0; t < length; ++t)
        for (int64_t kv = 0; kv < 2; ++kv)
          for (int64_t h = 0; h < kKvHeads; ++h)
            std::memcpy(poolRow(s, kv, h, t), &(kv ? v : k)[s][(t * kKvHeads + h) * dim],
                        dim * sizeof(float));
    }
    if (dtype == KILN_DTYPE_F32)
      return;
    narrow.resize(pool.size());
    for (size_t i = 0; i < pool.size(); ++i)
      narrow[i] = dtype == KILN_DTYPE_F16 ? floatToHalf(pool[i]) : floatToBfloat16(pool[i]);
  }

  float *poolRow(size_t s, int64_t kv, int64_t h, int64_t t) {
    const int64_t block = tables[s * tableWidth + t / kBlockSize];
    return &pool[(((block * 2 + kv) * kKvHeads + h) * kBlockSize + t % kBlockSize) * dim];
  }

  /// One step: each entry {sequence, past} computes its sequence's rows
  /// [past, past + qLen) against its first `past` rows, in the pool, and
  /// the new ones; the padded past is as wide as the longest, each
  /// sequence's right-aligned in it, the padding and the future masked by
  /// the lowest float, as exports mask them. Returns the outputs,
  /// [entry][t][head][dim].
  std::vector<float> step(const std::vector<std::pair<size_t, int64_t>> &entries,
                          int64_t qLen) const {
    const int64_t batch = static_cast<int64_t>(entries.size());
    int64_t width = 0;
    for (const auto &[s, past] : entries)
      width = std::max(width, past);
    const int64_t columns = width + qLen;
    std::vector<float> qs(batch * qLen * kHeads * dim), ks(batch * qLen * kKvHeads * dim),
        vs(ks.size()), bias(batch * qLen * columns), out(qs.size(), kNaN);
    std::vector<int64_t> pastLengths, stepTables;
    for (int64_t e = 0; e < batch; ++e) {
      const auto [s, past] = entries[e];
      pastLengths.push_back(past);
      stepTables.insert(stepTables.end(), tables.begin() + s * tableWidth,
                        tables.begin() + (s + 1) * tableWidth);
      std::copy_n(&q[s][past * kHeads * dim], qLen * kHeads * dim, &qs[e * qLen * kHeads * dim]);
      std::copy_n(&k[s][past * kKvHeads * dim], qLen * kKvHeads * dim,
                  &ks[e * qLen * kKvHeads * dim]);
      std::copy_n(&v[s][past * kKvHeads * dim], qLen * kKvHeads * dim,
                  &vs[e * qLen * kKvHeads * dim]);
      for (int64_t i = 0; i < qLen; ++i)
        for (int64_t j = 0; j < columns; ++j) {
          const int64_t key = j - (width - past);
          bias[(e * qLen + i) * columns + j] = key < 0 || key > past + i ? kLowest : 0.0f;
        }
    }
    kiln_paged_attention_params_t params = {};
    params.batch = batch;
    params.heads = kHeads;
    params.kv_heads = kKvHeads;
    params.q_len = qLen;
    params.head_dim = dim;
    params.past_width = width;
    params.q = qs.data();
    params.k = ks.data();
    params.v = vs.data();
    params.out = out.data();
    const int64_t tokenMajorQ[4] = {qLen * kHeads * dim, dim, kHeads * dim, 1};
    const int64_t tokenMajorKv[4] = {qLen * kKvHeads * dim, dim, kKvHeads * dim, 1};
    const int64_t biasStrides[4] = {qLen * columns, 0, columns, 1};
    for (int d = 0; d < 4; ++d) {
      params.q_strides[d] = params.out_strides[d] = tokenMajorQ[d];
      params.k_strides[d] = params.v_strides[d] = tokenMajorKv[d];
      params.bias_strides[d] = biasStrides[d];
    }
    params.kv_cache = narrow.empty() ? static_cast<const void *>(pool.data())
                                     : static_cast<const void *>(narrow.data());
    params.kv_cache_dtype = dtype;
    params.num_blocks = static_cast<int64_t>(pool.size() / (2 * kKvHeads * kBlockSize * dim));
    params.num_layers = 1;
    params.block_size = kBlockSize;
    params.block_tables = stepTables.data();
    params.block_table_stride = params.block_table_width = tableWidth;
    params.past_lengths = pastLengths.data();
    params.bias = bias.data();
    params.scale = 0.125;
    kiln_ukernel_paged_attention(&params);
    return out;
  }
};

// A row's attention depends only on its query and the keys and values up
// to it: not on how the engine cut its sequence into steps (a prompt in
// chunks, one decode step per token, a recomputation after preemption) nor
// on the sequences beside it. Every row of a 300-token sequence (three of
// the kernel's 128-key blocks), computed in chunks cut in several places
// and as decode steps among other sequences, must be bitwise what decoding
// it alone gives; head size 64 reads the keys in place, 20 transposes them
// on ISAs whose vectors do not divide it. With a 16-bit pool the new rows
// are rounded to the pool's precision before use, as the rows before them
// were when they were stored, so no row sees a key at two precisions.
TEST_P(PagedAttentionTest, RowsDoNotDependOnHowTheSequenceIsCut) {
  const kiln_dtype_t dtype = std::get<1>(GetParam());
  const int64_t length = 300;
  for (int64_t dim : {64, 20}) {
    std::mt19937 rng(dim);
    const PagedSequences sequences(dtype, dim, {length, 57, 410}, rng);
    const int64_t rowSize = PagedSequences::kHeads * dim; // one token's heads
    std::vector<float> alone(length * rowSize);
    for (int64_t t = 0; t < length; ++t) {
      const std::vector<float> out = sequences.step({{0, t}}, 1);
      std::copy(out.begin(), out.end(), &alone[t * rowSize]);
    }
    auto expectRows = [&](const float *got, int64_t first, int64_t count,
                          const std::string &how) {
      for (int64_t t = first; t < first + count; ++t)
        ASSERT_EQ(std::memcmp(got + (t - first) * rowSize, &alone[t * rowSize],
                              rowSize * sizeof(float)),
                  0)
            << "head size " << dim << ": row " << t << " computed " << how
            << " differs from its decode step alone";
    };
    const std::vector<std::vector<int64_t>> cuts = {
        {0, 300}, {0, 100, 300}, {0, 128, 256, 300}, {0, 127, 129, 250, 299, 300}};
    for (const std::vector<int64_t> &cut : cuts)
      for (size_t c = 0; c + 1 < cut.size(); ++c) {
        const int64_t qLen = cut[c + 1] - cut[c];
        expectRows(sequences.step({{0, cut[c]}}, qLen).data(), cut[c], qLen,
                   "in the chunk [" + std::to_string(cut[c]) + ", " +
                       std::to_string(cut[c + 1]) + ")");
      }
    for (int64_t t : {0, 1, 56, 127, 128, 129, 255, 256, 299}) {
      const std::vector<float> out =
          sequences.step({{1, std::min<int64_t>(t, 56)}, {0, t}, {2, 409 - t}}, 1);
      expectRows(out.data() + rowSize, t, 1, "as a decode step beside two others");
    }
    const std::vector<float> out = sequences.step({{2, 7}, {0, 100}}, 50);
    expectRows(out.data() + 50 * rowSize, 100, 50, "beside another sequence's chunk");
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllIsasAndPoolDtypes, PagedAttentionTest,
    ::testing::Combine(::testing::Values(GemmIsa::Generic, GemmIsa::Avx2, GemmIsa::Avx512),
                       ::testing::Values(KILN_DTYPE_F32, KILN_DTYPE_F16, KILN_DTYPE_BF16)),
    [](const auto &info) {
      return std::string(gemmIsaName(std::get<0>(info.param))) + "_" +
             kiln_dtype_name(std::get<1>(info.param));
    });

KILN_INSTANTIATE_PER_ISA(AttentionTest);

} // namespace
