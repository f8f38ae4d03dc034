//===- GemmTest.cpp - SGEMM microkernels and the thread pool -------------===//
//
// Every ISA the CPU has is checked against a double-precision reference over
// edge, odd and blocked shapes, with padded leading dimensions and NaN in all
// padding, so a read past a row or an accumulation into stale C shows up.
//
//===----------------------------------------------------------------------===//
#include "kiln/runtime.h"
#include "runtime/src/cpu/Gemm.h"
#include "runtime/src/ThreadPool.h"
#include "test/unit/PerIsaTest.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

using namespace kiln::rt;

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

/// A rows×cols row-major matrix with leading dimension `ld`, random values in
/// [-1, 1] and NaN in the padding between `cols` and `ld`.
struct Matrix {
  int64_t rows, cols, ld;
  std::vector<float> data;

  Matrix(int64_t rows, int64_t cols, int64_t padding, std::mt19937 &rng)
      : rows(rows), cols(cols), ld(cols + padding),
        data(std::max<int64_t>(1, rows * ld), kNaN) {
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j)
        at(i, j) = uniform(rng);
  }
  float &at(int64_t i, int64_t j) { return data[i * ld + j]; }
  float at(int64_t i, int64_t j) const { return data[i * ld + j]; }
};

/// A k×n B stored as `layout` says, random values in [-1, 1]: [k, n] or
/// [n, k] rows with NaN in the padding between rows, or panels with `padding`
/// rows of NaN between them and zeros past n in the last, as the layout
/// requires.
struct WeightMatrix {
  GemmLayout layout;
  Matrix stored; // the rows, [n, k] when transposed; the panels' source
  std::vector<float> panels;
  int64_t panelStride = 0;

  WeightMatrix(GemmLayout layout, int64_t k, int64_t n, int64_t padding,
               std::mt19937 &rng)
      : WeightMatrix(layout,
                     layout == GemmLayout::Transposed
                         ? Matrix(n, k, padding, rng)
                         : Matrix(k, n, padding, rng),
                     padding) {}

  /// `stored` in `layout`: as it is, or cut into panels.
  WeightMatrix(GemmLayout layout, Matrix storedRows, int64_t padding)
      : layout(layout), stored(std::move(storedRows)) {
    if (layout != GemmLayout::Panels)
      return;
    const int64_t k = stored.rows, n = stored.cols;
    const int64_t width = kWeightPanelWidth;
    const int64_t count = (n + width - 1) / width;
    panelStride = (k + padding) * width;
    panels.assign(std::max<int64_t>(1, count * panelStride), kNaN);
    for (int64_t panel = 0; panel < count; ++panel)
      for (int64_t p = 0; p < k; ++p)
        for (int64_t lane = 0; lane < width; ++lane) {
          const int64_t j = panel * width + lane;
          panels[panel * panelStride + p * width + lane] =
              j < n ? stored.at(p, j) : 0.0f;
        }
  }
  const float *data() const {
    return layout == GemmLayout::Panels ? panels.data() : stored.data.data();
  }
  int64_t ld() const {
    return layout == GemmLayout::Panels ? panelStride : stored.ld;
  }
  /// B[p][j] of the product.
  float at(int64_t p, int64_t j) const {
    return layout == GemmLayout::Transposed ? stored.at(j, p) : stored.at(p, j);
  }
};

/// A k×n B as a QuantizedWeight in `format`: random values (int8 in
/// [-127, 127], 4-bit in [0, 15] with random zero points) and positive
/// scales, one per column and group of `groupSize` rows, in panels with
/// `padding` rows of junk (NaN scales) between them, and zeros past n in
/// the last, as the layout requires. `dequantized` is B in f32, each
/// element (value − zero point) · scale rounded once, as the kernels
/// compute it; `errorScale` is (|value| + zero point) · scale, the scale of
/// the rounding error of kernels that multiply the value and the zero point
/// by the scale apart.
struct QuantizedMatrix {
  QuantizedFormat format;
  int64_t groupSize, ld, scalesLd;
  std::vector<uint8_t> values, zeroPoints;
  std::vector<float> scales;
  WeightMatrix dequantized, errorScale;

  QuantizedMatrix(QuantizedFormat format, int64_t k, int64_t n,
                  int64_t groupSize, int64_t padding, std::mt19937 &rng)
      : format(format), groupSize(groupSize),
        ld((k + padding) * panelRowBytes(format)),
        scalesLd(((k + groupSize - 1) / groupSize + padding) * kWeightPanelWidth),
        dequantized(GemmLayout::RowMajor, Matrix(k, n, 0, rng), 0),
        errorScale(GemmLayout::RowMajor, Matrix(k, n, 0, rng), 0) {
    const bool int8 = format == QuantizedFormat::Int8;
    const int64_t panels = (n + kWeightPanelWidth - 1) / kWeightPanelWidth;
    values.assign(std::max<int64_t>(1, panels * ld), 0x55);
    scales.assign(std::max<int64_t>(1, panels * scalesLd), kNaN);
    if (!int8)
      zeroPoints.assign(scales.size(), 0xAA);
    std::uniform_int_distribution<int> value(int8 ? -127 : 0, int8 ? 127 : 15);
    std::uniform_int_distribution<int> zeroPoint(0, 15);
    std::uniform_real_distribution<float> scale(1e-4f, 1e-2f);
    for (int64_t panel = 0; panel < panels; ++panel)
      for (int64_t lane = 0; lane < kWeightPanelWidth; ++lane) {
        const int64_t j = panel * kWeightPanelWidth + lane;
        for (int64_t p = 0; p < k; ++p) {
          const int64_t group = panel * scalesLd + p / groupSize * kWeightPanelWidth + lane;
          const bool past = j >= n;
          if (p % groupSize == 0) {
            scales[group] = past ? 0.0f : scale(rng);
            if (!int8)
              zeroPoints[group] = past ? 0 : zeroPoint(rng);
          }
          const int stored = past ? 0 : value(rng);
          uint8_t *row = values.data() + panel * ld + p * panelRowBytes(format);
          if (int8) {
            row[lane] = static_cast<uint8_t>(static_cast<int8_t>(stored));
          } else {
            const int64_t half = kWeightPanelWidth / 2, shift = lane / half * 4;
            uint8_t &byte = row[lane % half];
            byte = static_cast<uint8_t>((byte & ~(0xF << shift)) | (stored << shift));
          }
          if (!past) {
            const int zero = int8 ? 0 : zeroPoints[group];
            dequantized.stored.at(p, j) = static_cast<float>(stored - zero) * scales[group];
            errorScale.stored.at(p, j) = (std::abs(stored) + zero) * scales[group];
          }
        }
      }
  }
  QuantizedWeight weight() const {
    return {format,    values.data(), ld,       scales.data(),
            zeroPoints.empty() ? nullptr : zeroPoints.data(),
            scalesLd,  groupSize};
  }
};

constexpr QuantizedFormat kQuantizedFormats[] = {QuantizedFormat::Int8,
                                                 QuantizedFormat::Uint4};

std::string formatName(QuantizedFormat format) {
  return format == QuantizedFormat::Int8 ? "int8" : "uint4";
}

constexpr GemmLayout kAllLayouts[] = {
    GemmLayout::RowMajor, GemmLayout::Transposed, GemmLayout::Panels};

struct Shape {
  int64_t m, n, k;
};

std::string shapeName(const Shape &s) {
  return std::to_string(s.m) + "x" + std::to_string(s.n) + "x" +
         std::to_string(s.k);
}

/// Checks C = A·B against a double-precision product, relative to Σ|a·b|,
/// the scale of the rounding error of any summation order (Σ|a|·bScale
/// when given: B's elements may be sums whose terms the kernel adds apart);
/// and that C's padding was not written.
void expectProduct(const Matrix &a, const WeightMatrix &b, const Matrix &c,
                   const std::string &what, const WeightMatrix *bScale = nullptr) {
  int64_t mismatches = 0;
  for (int64_t i = 0; i < c.rows; ++i) {
    for (int64_t j = 0; j < c.cols; ++j) {
      double sum = 0, magnitude = 0;
      for (int64_t p = 0; p < a.cols; ++p) {
        const double term = double(a.at(i, p)) * b.at(p, j);
        sum += term;
        magnitude += bScale ? std::fabs(a.at(i, p)) * bScale->at(p, j) : std::fabs(term);
      }
      const double error = std::fabs(double(c.at(i, j)) - sum);
      if (!(error <= 1e-5 * magnitude + 1e-30) && mismatches++ < 5)
        ADD_FAILURE() << what << ": C[" << i << "," << j << "] = " << c.at(i, j)
                      << ", expected " << sum << " (error " << error
                      << ", scale " << magnitude << ")";
    }
    for (int64_t j = c.cols; j < c.ld; ++j)
      if (!std::isnan(c.at(i, j)) && mismatches++ < 5)
        ADD_FAILURE() << what << ": wrote C[" << i << "," << j
                      << "] in the padding";
  }
  EXPECT_EQ(mismatches, 0) << what;
}

//===----------------------------------------------------------------------===//
// sgemm, per ISA
//===----------------------------------------------------------------------===//

class SgemmTest : public PerIsaTest {};

TEST_P(SgemmTest, RunsTheRequestedIsa) {
  EXPECT_EQ(activeGemmIsa(), GetParam());
}

TEST_P(SgemmTest, MatchesDoubleReference) {
  // Empty, tiny and prime shapes; shapes just past a microkernel tile (mr is
  // 4, 6 or 12 and nr 8, 16 or 32); k past a cache block (kc <= 384) and n
  // past a panel (nc <= 256); and shapes big enough to be split over two
  // threads (>= 4M multiply-adds: 256^3, 64x64x4096), some with one strip of
  // rows or columns; direct products of whole 64-column strips, and one row
  // with odd k (its two FMA chains and the step left over).
  const Shape shapes[] = {
      {0, 0, 0},     {0, 5, 3},       {5, 0, 3},      {4, 5, 0},
      {1, 1, 1},     {1, 1, 2},       {2, 3, 1},      {7, 13, 17},
      {1, 4096, 1},  {1, 1, 4096},    {4096, 1, 3},   {6, 16, 8},
      {12, 32, 9},   {13, 33, 5},     {5, 15, 1000},  {33, 65, 129},
      {3, 1100, 7},  {100, 40, 600},  {97, 203, 61},  {1, 3000, 600},
      {301, 7, 400}, {256, 256, 256}, {64, 64, 4096}, {2, 128, 33},
      {1, 200, 7},   {32, 1100, 70},  {17, 3000, 300}};
  ThreadPool twoThreads(2);
  std::mt19937 rng(42);
  for (const Shape &shape : shapes) {
    for (GemmLayout layout : kAllLayouts) {
      for (int64_t padding : {0, 3}) {
        const Matrix a(shape.m, shape.k, padding, rng);
        const WeightMatrix b(layout, shape.k, shape.n, padding, rng);
        for (ThreadPool *pool :
             {static_cast<ThreadPool *>(nullptr), &twoThreads}) {
          Matrix c(shape.m, shape.n, padding, rng);
          std::fill(c.data.begin(), c.data.end(), kNaN);
          sgemm(shape.m, shape.n, shape.k, a.data.data(), a.ld, b.data(),
                b.ld(), layout, c.data.data(), c.ld, pool);
          expectProduct(a, b, c,
                        shapeName(shape) + " " + gemmLayoutName(layout) +
                            " padding " + std::to_string(padding) +
                            (pool ? " 2 threads" : " serial"));
        }
      }
    }
  }
}

TEST_P(SgemmTest, AccumulatesIntoC) {
  // C0 + A·B for shapes of one and several k blocks, serial and threaded, of
  // few rows (the unpacked path, one and several column strips, wide enough
  // to be threaded), and C left alone for k == 0.
  ThreadPool twoThreads(2);
  std::mt19937 rng(5);
  for (const Shape &shape :
       {Shape{7, 13, 17}, Shape{100, 40, 600}, Shape{256, 256, 256},
        Shape{3, 4, 0}, Shape{1, 300, 64}, Shape{4, 70, 33}, Shape{2, 5, 9},
        Shape{3, 4096, 512}, Shape{1, 130, 5}}) {
    for (ThreadPool *pool : {static_cast<ThreadPool *>(nullptr), &twoThreads}) {
      const Matrix a(shape.m, shape.k, 0, rng), b(shape.k, shape.n, 0, rng);
      const Matrix initial(shape.m, shape.n, 0, rng);
      Matrix c = initial;
      sgemm(shape.m, shape.n, shape.k, a.data.data(), a.ld, b.data.data(), b.ld,
            GemmLayout::RowMajor, c.data.data(), c.ld, pool,
            /*accumulate=*/true);
      // Subtracting C0 leaves the product, within the rounding of one add.
      Matrix product = c;
      for (int64_t i = 0; i < shape.m; ++i)
        for (int64_t j = 0; j < shape.n; ++j)
          product.at(i, j) -= initial.at(i, j);
      if (shape.k == 0) {
        EXPECT_EQ(c.data, initial.data) << shapeName(shape);
        continue;
      }
      int64_t mismatches = 0;
      for (int64_t i = 0; i < shape.m; ++i)
        for (int64_t j = 0; j < shape.n; ++j) {
          double sum = 0;
          for (int64_t p = 0; p < shape.k; ++p)
            sum += double(a.at(i, p)) * b.at(p, j);
          if (std::fabs(product.at(i, j) - sum) > 1e-4 && mismatches++ < 5)
            ADD_FAILURE() << shapeName(shape) << ": C[" << i << "," << j
                          << "] - C0 = " << product.at(i, j) << ", expected "
                          << sum;
        }
      EXPECT_EQ(mismatches, 0) << shapeName(shape);
    }
  }
}

/// The activation applied in double, as the ONNX operators define it.
double referenceActivation(GemmActivation activation, double x) {
  switch (activation) {
  case GemmActivation::Relu:
    return x < 0 ? 0 : x;
  case GemmActivation::Gelu:
    return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
  case GemmActivation::GeluTanh:
    return 0.5 * x *
           (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
  case GemmActivation::Silu:
    return x / (1 + std::exp(-x));
  case GemmActivation::None:
    break;
  }
  return x;
}

TEST_P(SgemmTest, AppliesEpilogue) {
  // act(A·B + bias) · gate + residual through the unpacked path (m <= 4, one and
  // several strips, a partial vector at the end of each row) and the packed
  // one (several k blocks, edge tiles), each activation with and without
  // bias, gate and residual; then the two shapes big enough to split over two
  // threads (the tile grid and the direct path's strips) with the whole
  // epilogue. Sums reach about ±20, so the activations' tails and both
  // signs are covered; padding stays NaN.
  ThreadPool twoThreads(2);
  std::mt19937 rng(11);
  const std::vector<GemmActivation> allActivations = {
      GemmActivation::None, GemmActivation::Relu, GemmActivation::Gelu,
      GemmActivation::GeluTanh, GemmActivation::Silu};
  const std::vector<GemmActivation> oneActivation = {GemmActivation::GeluTanh};
  struct EpilogueCase {
    Shape shape;
    std::vector<GemmActivation> activations;
  };
  for (const EpilogueCase &epilogueCase :
       {EpilogueCase{{1, 37, 300}, allActivations},
        EpilogueCase{{4, 70, 33}, allActivations},
        EpilogueCase{{13, 33, 700}, allActivations},
        EpilogueCase{{100, 203, 61}, allActivations},
        EpilogueCase{{3, 5, 0}, allActivations},
        EpilogueCase{{301, 203, 100}, oneActivation},
        EpilogueCase{{4, 2048, 512}, oneActivation}}) {
    const Shape &shape = epilogueCase.shape;
    for (GemmLayout layout : kAllLayouts) {
      const Matrix a(shape.m, shape.k, 2, rng);
      const WeightMatrix b(layout, shape.k, shape.n, 1, rng);
      const Matrix bias(1, shape.n, 0, rng), gate(shape.m, shape.n, 4, rng),
          residual(shape.m, shape.n, 5, rng);
      for (GemmActivation activation : epilogueCase.activations) {
        for (int parts = 0; parts < 8; ++parts) {
          const bool withBias = parts & 1, withGate = parts & 2,
                     withResidual = parts & 4;
          GemmEpilogue epilogue;
          epilogue.bias = withBias ? bias.data.data() : nullptr;
          epilogue.activation = activation;
          epilogue.gate = withGate ? gate.data.data() : nullptr;
          epilogue.ldg = gate.ld;
          epilogue.residual = withResidual ? residual.data.data() : nullptr;
          epilogue.ldr = residual.ld;
          const std::string what =
              shapeName(shape) + " " + gemmLayoutName(layout) + " activation " +
              std::to_string(int(activation)) + (withBias ? " bias" : "") +
              (withGate ? " gate" : "") + (withResidual ? " residual" : "");
          Matrix c(shape.m, shape.n, 3, rng);
          std::fill(c.data.begin(), c.data.end(), kNaN);
          sgemm(shape.m, shape.n, shape.k, a.data.data(), a.ld, b.data(),
                b.ld(), layout, c.data.data(), c.ld, &twoThreads, false,
                epilogue);
          int64_t mismatches = 0;
          for (int64_t i = 0; i < shape.m; ++i) {
            for (int64_t j = 0; j < shape.n; ++j) {
              double sum = withBias ? bias.at(0, j) : 0, magnitude = 0;
              for (int64_t p = 0; p < shape.k; ++p) {
                const double term = double(a.at(i, p)) * b.at(p, j);
                sum += term;
                magnitude += std::fabs(term);
              }
              double expected =
                  referenceActivation(activation, sum) *
                      (withGate ? gate.at(i, j) : 1) +
                  (withResidual ? residual.at(i, j) : 0);
              const double error = std::fabs(c.at(i, j) - expected);
              // The sum's rounding passes through the activation (slope at
              // most 1.13) and the activations are good to about 1e-7·|x|.
              if (!(error <= 2e-5 * magnitude + 1e-6 * (1 + std::fabs(sum))) &&
                  mismatches++ < 5)
                ADD_FAILURE() << what << ": C[" << i << "," << j
                              << "] = " << c.at(i, j) << ", expected "
                              << expected;
            }
            for (int64_t j = shape.n; j < c.ld; ++j)
              if (!std::isnan(c.at(i, j)) && mismatches++ < 5)
                ADD_FAILURE() << what << ": wrote the padding of row " << i;
          }
          EXPECT_EQ(mismatches, 0) << what;
        }
      }
    }
  }
}

TEST_P(SgemmTest, EpilogueSpecialValues) {
  // Sums of ±inf, NaN and far negative values through each activation, as
  // the unfused ops give them: x·sigmoid(x) is -0 below -88 and NaN at
  // -inf, ReLU keeps NaN, the exact GELU of +inf is +inf.
  const float inf = std::numeric_limits<float>::infinity();
  const float sums[] = {-inf, -3e38f, -1000.0f, -90.0f, 0.0f, 1000.0f, inf, kNaN};
  const int64_t n = std::size(sums);
  const float one = 1.0f;
  auto run = [&](GemmActivation activation) {
    // C = 1 × sums (k = 1), then the activation.
    std::vector<float> c(n);
    GemmEpilogue epilogue;
    epilogue.activation = activation;
    sgemm(1, n, 1, &one, 1, sums, n, GemmLayout::RowMajor, c.data(), n, nullptr,
          false, epilogue);
    return c;
  };
  auto same = [](float got, float want) {
    return std::isnan(want) ? std::isnan(got)
                            : got == want && std::signbit(got) == std::signbit(want);
  };
  const std::vector<float> silu = run(GemmActivation::Silu);
  const std::vector<float> geluTanh = run(GemmActivation::GeluTanh);
  const std::vector<float> gelu = run(GemmActivation::Gelu);
  const std::vector<float> relu = run(GemmActivation::Relu);
  const float siluWant[] = {kNaN, -0.0f, -0.0f, -0.0f, 0.0f, 1000.0f, inf, kNaN};
  const float geluWant[] = {kNaN, -0.0f, -0.0f, -0.0f, 0.0f, 1000.0f, inf, kNaN};
  const float reluWant[] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 1000.0f, inf, kNaN};
  for (int64_t j = 0; j < n; ++j) {
    EXPECT_TRUE(same(silu[j], siluWant[j])) << "silu(" << sums[j] << ") = " << silu[j];
    EXPECT_TRUE(same(geluTanh[j], geluWant[j]))
        << "gelu_tanh(" << sums[j] << ") = " << geluTanh[j];
    EXPECT_TRUE(same(relu[j], reluWant[j])) << "relu(" << sums[j] << ") = " << relu[j];
    // The exact GELU is x·Phi(x): 0 times -inf is NaN there too.
    EXPECT_TRUE(same(gelu[j], geluWant[j])) << "gelu(" << sums[j] << ") = " << gelu[j];
  }
}

TEST_P(SgemmTest, QuantizedWeightMatchesDequantizedProduct) {
  // Rows through the direct path (1 to 4 at a time, up to kStreamedRows),
  // past it (packed A, the values dequantized panel by panel) and across
  // the direct path's depth pieces (k > 1024) with groups that do and do
  // not line up with them; partial strips, one column, groups of one row,
  // groups that do not divide k, and panels with junk between them; for
  // int8 and 4-bit values.
  struct QuantizedCase {
    int64_t n, k, groupSize;
  };
  ThreadPool twoThreads(2);
  std::mt19937 rng(17);
  for (QuantizedFormat format : kQuantizedFormats)
    for (const QuantizedCase &weightCase :
         {QuantizedCase{1, 1, 1}, QuantizedCase{17, 37, 7},
          QuantizedCase{64, 128, 128}, QuantizedCase{70, 300, 32},
          QuantizedCase{130, 129, 128}, QuantizedCase{200, 1030, 64},
          QuantizedCase{70, 1100, 100}, QuantizedCase{33, 5, 1}}) {
      for (int64_t padding : {0, 2}) {
        const QuantizedMatrix b(format, weightCase.k, weightCase.n,
                                weightCase.groupSize, padding, rng);
        for (int64_t m : {1, 2, 3, 4, 5, 9, 32, 33, 70}) {
          const Matrix a(m, weightCase.k, padding, rng);
          for (ThreadPool *pool : {static_cast<ThreadPool *>(nullptr), &twoThreads}) {
            Matrix c(m, weightCase.n, padding, rng);
            std::fill(c.data.begin(), c.data.end(), kNaN);
            sgemmQuantizedWeight(m, weightCase.n, weightCase.k, a.data.data(),
                                 a.ld, b.weight(), c.data.data(), c.ld, pool);
            expectProduct(a, b.dequantized, c,
                          formatName(format) + " " +
                              shapeName({m, weightCase.n, weightCase.k}) +
                              " group " + std::to_string(weightCase.groupSize) +
                              " padding " + std::to_string(padding) +
                              (pool ? " 2 threads" : " serial"),
                          &b.errorScale);
          }
        }
      }
    }
}

TEST_P(SgemmTest, QuantizedWeightAppliesEpilogue) {
  // The epilogue after a quantized weight's product, direct and packed.
  std::mt19937 rng(19);
  const int64_t n = 70, k = 200;
  for (QuantizedFormat format : kQuantizedFormats) {
    const QuantizedMatrix b(format, k, n, 64, 1, rng);
    const Matrix bias(1, n, 0, rng);
    for (int64_t m : {3, 40}) {
      const Matrix a(m, k, 0, rng), residual(m, n, 2, rng);
      GemmEpilogue epilogue;
      epilogue.bias = bias.data.data();
      epilogue.activation = GemmActivation::Relu;
      epilogue.residual = residual.data.data();
      epilogue.ldr = residual.ld;
      Matrix c(m, n, 0, rng);
      sgemmQuantizedWeight(m, n, k, a.data.data(), a.ld, b.weight(),
                           c.data.data(), c.ld, nullptr, epilogue);
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double sum = bias.at(0, j);
          for (int64_t p = 0; p < k; ++p)
            sum += double(a.at(i, p)) * b.dequantized.at(p, j);
          ASSERT_NEAR(c.at(i, j), std::max(sum, 0.0) + residual.at(i, j), 1e-5)
              << formatName(format) << " " << m << " rows, at [" << i << ","
              << j << "]";
        }
    }
  }
}

TEST_P(SgemmTest, ThreadCountDoesNotChangeResults) {
  std::mt19937 rng(7);
  const Matrix a(301, 700, 0, rng), b(700, 203, 0, rng);
  Matrix serial(301, 203, 0, rng), parallel(301, 203, 0, rng);
  ThreadPool threads(3);
  sgemm(301, 203, 700, a.data.data(), a.ld, b.data.data(), b.ld,
        GemmLayout::RowMajor, serial.data.data(), serial.ld, nullptr);
  sgemm(301, 203, 700, a.data.data(), a.ld, b.data.data(), b.ld,
        GemmLayout::RowMajor, parallel.data.data(), parallel.ld, &threads);
  EXPECT_EQ(serial.data, parallel.data);
}

/// Rows [first, first + rows) of a product's m×n C, written to `c` (ldc
/// apart).
using RowsOfProduct = std::function<void(int64_t first, int64_t rows, float *c, int64_t ldc)>;

/// Checks that every row of a product comes out the same bits computed
/// among all m rows and among fewer (the direct kernel's 1 to
/// kStreamedRows, alone or in a group of kDirectRows, the packed one
/// above), wherever it sits. The generation engine batches whatever
/// requests are running, and a seeded request must draw the same tokens in
/// any batch.
void expectRowsIndependent(int64_t m, int64_t n, const RowsOfProduct &product,
                           const std::string &what) {
  std::vector<float> all(m * n), some(m * n);
  product(0, m, all.data(), n);
  for (int64_t rows : {1, 2, 3, 4, 5, 7, 8, 31, 32, 33, 40})
    for (int64_t first : {int64_t(0), m - rows, int64_t(5)}) {
      product(first, rows, some.data(), n);
      for (int64_t i = 0; i < rows; ++i)
        ASSERT_TRUE(std::equal(&some[i * n], &some[(i + 1) * n], &all[(first + i) * n]))
            << what << ": row " << first + i << " of " << m
            << " differs computed among rows [" << first << ", " << first + rows << ")";
    }
}

TEST_P(SgemmTest, RowsDoNotDependOnTheOtherRows) {
  // k crosses every ISA's cache block and n a panel and the strips; the
  // epilogue is on.
  std::mt19937 rng(11);
  const int64_t m = 70, n = 130, k = 1100;
  const Matrix a(m, k, 0, rng), bias(1, n, 0, rng);
  GemmEpilogue epilogue;
  epilogue.bias = bias.data.data();
  epilogue.activation = GemmActivation::Silu;
  ThreadPool twoThreads(2);
  for (GemmLayout layout : kAllLayouts) {
    const WeightMatrix b(layout, k, n, 0, rng);
    expectRowsIndependent(
        m, n,
        [&](int64_t first, int64_t rows, float *c, int64_t ldc) {
          sgemm(rows, n, k, &a.data[first * a.ld], a.ld, b.data(), b.ld(), layout, c, ldc,
                &twoThreads, false, epilogue);
        },
        gemmLayoutName(layout));
  }
}

KILN_INSTANTIATE_PER_ISA(SgemmTest);

//===----------------------------------------------------------------------===//
// gemmInt8, per ISA
//===----------------------------------------------------------------------===//

/// A k×n B as an Int8Weight (k a multiple of 4): random int8 values in
/// [-127, 127], a positive scale per column, the column sums, panels with
/// `padding` quads of junk between them (and junk scales), zeros past n.
/// `dequantized` is B in f32, value · scale.
struct Int8Matrix {
  int64_t ld, scalesLd;
  std::vector<int8_t> values;
  std::vector<float> scales;
  std::vector<int32_t> columnSums;
  WeightMatrix dequantized;

  Int8Matrix(int64_t k, int64_t n, int64_t padding, std::mt19937 &rng)
      : ld((k + padding * kInt8RowQuad) * kWeightPanelWidth),
        scalesLd((1 + padding) * kWeightPanelWidth),
        dequantized(GemmLayout::RowMajor, Matrix(k, n, 0, rng), 0) {
    const int64_t panels = (n + kWeightPanelWidth - 1) / kWeightPanelWidth;
    values.assign(std::max<int64_t>(1, panels * ld), 0x55);
    scales.assign(std::max<int64_t>(1, panels * scalesLd), kNaN);
    columnSums.assign(std::max<int64_t>(1, panels * kWeightPanelWidth), 0);
    std::uniform_int_distribution<int> value(-127, 127);
    std::uniform_real_distribution<float> scale(1e-4f, 1e-2f);
    for (int64_t panel = 0; panel < panels; ++panel)
      for (int64_t lane = 0; lane < kWeightPanelWidth; ++lane) {
        const int64_t j = panel * kWeightPanelWidth + lane;
        const bool past = j >= n;
        float &columnScale = scales[panel * scalesLd + lane];
        columnScale = past ? 0.0f : scale(rng);
        for (int64_t p = 0; p < k; ++p) {
          const int stored = past ? 0 : value(rng);
          values[panel * ld + p / kInt8RowQuad * kInt8RowQuad * kWeightPanelWidth +
                 lane * kInt8RowQuad + p % kInt8RowQuad] = static_cast<int8_t>(stored);
          columnSums[j] += stored;
          if (!past)
            dequantized.stored.at(p, j) = static_cast<float>(stored) * columnScale;
        }
      }
  }
  Int8Weight weight() const {
    return {values.data(), ld, scales.data(), scalesLd, columnSums.data()};
  }
};

/// A's rows as gemmInt8 quantizes them (its documented formula, in
/// double): the scale, and the values multiplied back.
struct QuantizedRowReference {
  double scale;
  std::vector<double> dequantized;

  /// Row `x` of k floats quantized as `input` says; a range is the row's,
  /// or [low, high] when given (the whole input's).
  QuantizedRowReference(const float *x, int64_t k, const InputQuantization &input,
                        double low = 0, double high = 0) {
    const bool fixed = input.range == InputQuantization::Range::Fixed;
    if (input.range == InputQuantization::Range::Row)
      for (int64_t p = 0; p < k; ++p) {
        low = std::min<double>(low, x[p]);
        high = std::max<double>(high, x[p]);
      }
    scale = fixed ? input.scale : high > low ? (high - low) / 255 : 1;
    const double zero = !fixed
                            ? std::clamp(std::nearbyint(-low / scale), 0.0, 255.0)
                            : input.zeroPoint;
    for (int64_t p = 0; p < k; ++p)
      dequantized.push_back(
          (std::clamp(std::nearbyint(x[p] / scale) + zero, 0.0, 255.0) - zero) * scale);
  }
};

/// Checks C against A·B with A quantized as the reference does, up to f32
/// rounding and one value of the row rounded the other way.
void expectInt8Product(const Matrix &a, const InputQuantization &input,
                       const Int8Matrix &b, const Matrix &c, const std::string &what) {
  double low = 0, high = 0;
  if (input.range == InputQuantization::Range::Tensor)
    for (int64_t i = 0; i < a.rows; ++i)
      for (int64_t p = 0; p < a.cols; ++p) {
        low = std::min<double>(low, a.at(i, p));
        high = std::max<double>(high, a.at(i, p));
      }
  int64_t mismatches = 0;
  for (int64_t i = 0; i < c.rows; ++i) {
    const QuantizedRowReference row(&a.data[i * a.ld], a.cols, input, low, high);
    for (int64_t j = 0; j < c.cols; ++j) {
      double sum = 0, magnitude = 0, largestWeight = 0;
      for (int64_t p = 0; p < a.cols; ++p) {
        const double weight = b.dequantized.at(p, j);
        sum += row.dequantized[p] * weight;
        magnitude += std::fabs(row.dequantized[p] * weight);
        largestWeight = std::max(largestWeight, std::fabs(weight));
      }
      // A value within f32 rounding of a tie may round either way, one step
      // from the reference's: allow one such value in the row.
      const double bound = 1e-5 * magnitude + 1.001 * row.scale * largestWeight + 1e-30;
      const double error = std::fabs(double(c.at(i, j)) - sum);
      if (!(error <= bound) && mismatches++ < 5)
        ADD_FAILURE() << what << ": C[" << i << "," << j << "] = " << c.at(i, j)
                      << ", expected " << sum << " (error " << error << ", bound "
                      << bound << ")";
    }
    for (int64_t j = c.cols; j < c.ld; ++j)
      if (!std::isnan(c.at(i, j)) && mismatches++ < 5)
        ADD_FAILURE() << what << ": wrote C[" << i << "," << j << "] in the padding";
  }
  EXPECT_EQ(mismatches, 0) << what;
}

class Int8GemmTest : public PerIsaTest {};

TEST_P(Int8GemmTest, RunsTheRequestedIsa) {
  const std::string expected =
      GetParam() == GemmIsa::Generic ? "generic"
      : GetParam() == GemmIsa::Avx2 || !__builtin_cpu_supports("avx512vnni")
          ? "avx2"
          : "avx512-vnni";
  EXPECT_EQ(int8GemmIsaName(), expected);
}

TEST_P(Int8GemmTest, QuantizesRowsByTheirRange) {
  // Mixed signs, one sign only (the range widened to 0), zeros, NaN (to
  // 0), lengths that are and are not whole vectors.
  std::mt19937 rng(23);
  for (int64_t k : {1, 5, 16, 37, 300}) {
    for (int shift : {0, 1, -1}) {
      Matrix x(1, k, 0, rng);
      for (int64_t p = 0; p < k; ++p)
        x.at(0, p) = shift == 0 ? x.at(0, p) * 3 : shift * std::fabs(x.at(0, p));
      std::vector<uint8_t> values(k);
      float scale;
      int32_t zeroPoint;
      quantizeRowToUint8(x.data.data(), k, values.data(), scale, zeroPoint);
      const QuantizedRowReference reference(x.data.data(), k,
                                            InputQuantization::perRowRange());
      EXPECT_NEAR(scale, reference.scale, 1e-6 * reference.scale);
      EXPECT_EQ(zeroPoint, shift > 0 ? 0 : shift < 0 ? 255 : zeroPoint);
      for (int64_t p = 0; p < k; ++p)
        ASSERT_LE(std::fabs((values[p] - zeroPoint) * double(scale) - x.at(0, p)),
                  0.5001 * scale)
            << "k " << k << " shift " << shift << " at " << p;
    }
  }
  const float zeros[5] = {0, 0, 0, 0, 0};
  uint8_t values[5];
  float scale;
  int32_t zeroPoint;
  quantizeRowToUint8(zeros, 5, values, scale, zeroPoint);
  EXPECT_EQ(zeroPoint, 0);
  EXPECT_GT(scale, 0.0f);
  EXPECT_EQ(std::count(values, values + 5, 0), 5);
  const float withNaN[3] = {1.0f, kNaN, -1.0f};
  quantizeRowToUint8(withNaN, 3, values, scale, zeroPoint);
  EXPECT_EQ(values[1], 0);
  EXPECT_LE(std::fabs((values[0] - zeroPoint) * scale - 1.0f), 0.5001f * scale);
  EXPECT_LE(std::fabs((values[2] - zeroPoint) * scale + 1.0f), 0.5001f * scale);
}

TEST_P(Int8GemmTest, QuantizesRowsAsQuantizeLinearWithAFixedScale) {
  // ONNX's QuantizeLinear in f32: round(x / s) to even, clamped to
  // [-z, 255 - z], plus z. Values on ties (x / s = n + 0.5) round to even,
  // and values past either end clamp; NaN lands on 0.
  std::mt19937 rng(41);
  const float scale = 0.0625f;
  const int32_t zeroPoint = 77;
  for (int64_t k : {1, 7, 16, 45, 301}) {
    Matrix x(1, k, 0, rng);
    for (int64_t p = 0; p < k; ++p)
      x.at(0, p) = p % 3 == 0   ? (std::floor(x.at(0, p) * 40) + 0.5f) * scale
                   : p % 3 == 1 ? x.at(0, p) * 30
                                : x.at(0, p) * 5;
    if (k > 1)
      x.at(0, 1) = kNaN;
    std::vector<uint8_t> values(k);
    float givenScale = scale;
    int32_t givenZeroPoint = zeroPoint;
    quantizeRowToUint8(x.data.data(), k, values.data(), givenScale, givenZeroPoint,
                       /*findRange=*/false);
    EXPECT_EQ(givenScale, scale);
    EXPECT_EQ(givenZeroPoint, zeroPoint);
    for (int64_t p = 0; p < k; ++p) {
      const float quotient = x.at(0, p) / scale;
      const float expected =
          std::isnan(quotient)
              ? 0.0f
              : std::clamp(std::nearbyint(quotient) + zeroPoint, 0.0f, 255.0f);
      ASSERT_EQ(values[p], expected) << "k " << k << " at " << p << ": " << x.at(0, p);
    }
  }
}

TEST_P(Int8GemmTest, SumsExactlyWhenTheRowsQuantizeExactly) {
  // Rows whose values are (q − z) · 2^-5 with q spanning [0, 255]: they
  // quantize to q and z exactly, so C is the integer product, scaled, and
  // any wrong byte or lane shows at f32 precision.
  std::mt19937 rng(29);
  std::uniform_int_distribution<int> byte(0, 255);
  for (const Shape &shape : {Shape{1, 64, 4}, Shape{3, 70, 100}, Shape{13, 130, 64},
                             Shape{40, 33, 1028}, Shape{4, 200, 2048}}) {
    const Int8Matrix b(shape.k, shape.n, 1, rng);
    Matrix a(shape.m, shape.k, 2, rng);
    for (int64_t i = 0; i < shape.m; ++i) {
      const int zero = byte(rng);
      for (int64_t p = 0; p < shape.k; ++p) {
        const int q = p == 0 ? 0 : p == 1 ? 255 : byte(rng);
        a.at(i, p) = static_cast<float>(q - zero) * 0.03125f;
      }
    }
    Matrix c(shape.m, shape.n, 1, rng);
    std::fill(c.data.begin(), c.data.end(), kNaN);
    gemmInt8(shape.m, shape.n, shape.k, a.data.data(), a.ld, InputQuantization::perRowRange(), b.weight(),
                        c.data.data(), c.ld, nullptr);
    // The reference's weights were rounded to f32 once each, so it is
    // within about 1e-7 of Σ|a·b| of the exact product.
    for (int64_t i = 0; i < shape.m; ++i)
      for (int64_t j = 0; j < shape.n; ++j) {
        double sum = 0, magnitude = 0;
        for (int64_t p = 0; p < shape.k; ++p) {
          sum += double(a.at(i, p)) * b.dequantized.at(p, j);
          magnitude += std::fabs(double(a.at(i, p)) * b.dequantized.at(p, j));
        }
        ASSERT_NEAR(c.at(i, j), sum, 1e-6 * std::fabs(sum) + 3e-7 * magnitude)
            << shapeName(shape) << " at [" << i << "," << j << "]";
      }
  }
}

TEST_P(Int8GemmTest, MatchesQuantizedReference) {
  // One to 4 rows (the few-rows kernel), tiles of 4 and 12 rows and their
  // remainders, blocks of rows past L2's (k = 1028: 252 rows), partial
  // strips, one column, several panels with junk between them; one thread
  // and two. Rows quantized by their own range, by the whole input's, and
  // by one fixed scale and zero point that clamps some values (A's values
  // lie in [-1, 1]).
  ThreadPool twoThreads(2);
  std::mt19937 rng(31);
  for (auto [n, k] : {std::pair<int64_t, int64_t>{1, 4}, {17, 8}, {64, 100},
                            {70, 300}, {130, 1028}}) {
    for (int64_t padding : {0, 1}) {
      const Int8Matrix b(k, n, padding, rng);
      for (int64_t m : {1, 2, 3, 4, 5, 12, 13, 40, 300}) {
        if (m * k > 100000 && padding == 0)
          continue; // the big shapes once, with padding
        const Matrix a(m, k, 3 * padding, rng);
        for (auto input : {InputQuantization::perRowRange(), InputQuantization::tensorRange(),
                           InputQuantization::fixed(1.5f / 255, 100)}) {
          for (ThreadPool *pool : {static_cast<ThreadPool *>(nullptr), &twoThreads}) {
            Matrix c(m, n, padding, rng);
            std::fill(c.data.begin(), c.data.end(), kNaN);
            gemmInt8(m, n, k, a.data.data(), a.ld, input, b.weight(), c.data.data(), c.ld,
                     pool);
            expectInt8Product(a, input, b, c,
                              shapeName({m, n, k}) + " padding " + std::to_string(padding) +
                                  " range " + std::to_string(static_cast<int>(input.range)) +
                                  (pool ? " 2 threads" : " serial"));
          }
        }
      }
    }
  }
}

TEST_P(Int8GemmTest, AppliesEpilogueAndIgnoresThreadCount) {
  std::mt19937 rng(37);
  const int64_t n = 70, k = 200;
  const Int8Matrix b(k, n, 0, rng);
  const Matrix bias(1, n, 0, rng);
  ThreadPool threads(3);
  for (int64_t m : {3, 40, 301}) {
    const Matrix a(m, k, 0, rng), gate(m, n, 1, rng), residual(m, n, 2, rng);
    GemmEpilogue epilogue;
    epilogue.bias = bias.data.data();
    epilogue.activation = GemmActivation::Relu;
    epilogue.gate = gate.data.data();
    epilogue.ldg = gate.ld;
    epilogue.residual = residual.data.data();
    epilogue.ldr = residual.ld;
    Matrix serial(m, n, 0, rng), parallel(m, n, 0, rng);
    gemmInt8(m, n, k, a.data.data(), a.ld, InputQuantization::perRowRange(), b.weight(), serial.data.data(),
                        serial.ld, nullptr, epilogue);
    gemmInt8(m, n, k, a.data.data(), a.ld, InputQuantization::perRowRange(), b.weight(), parallel.data.data(),
                        parallel.ld, &threads, epilogue);
    EXPECT_EQ(serial.data, parallel.data) << m << " rows";
    Matrix plain(m, n, 0, rng);
    gemmInt8(m, n, k, a.data.data(), a.ld, InputQuantization::perRowRange(), b.weight(), plain.data.data(),
                        plain.ld, nullptr);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        const double expected =
            std::max(double(plain.at(i, j)) + bias.at(0, j), 0.0) * gate.at(i, j) +
            residual.at(i, j);
        ASSERT_NEAR(serial.at(i, j), expected, 1e-5)
            << m << " rows, at [" << i << "," << j << "]";
      }
  }
}

TEST_P(Int8GemmTest, RowsDoNotDependOnTheOtherRows) {
  // A row quantized by its own range or a fixed one: its int32 sums are
  // exact, and the epilogue is the same per element on every path. (The
  // whole input's range, DynamicQuantizeLinear's, depends on the other
  // rows by definition.)
  std::mt19937 rng(13);
  const int64_t m = 70, n = 130, k = 1100;
  const Matrix a(m, k, 0, rng), bias(1, n, 0, rng);
  const Int8Matrix b(k, n, 0, rng);
  GemmEpilogue epilogue;
  epilogue.bias = bias.data.data();
  ThreadPool twoThreads(2);
  for (const InputQuantization &input :
       {InputQuantization::perRowRange(), InputQuantization::fixed(0.01f, 120)})
    expectRowsIndependent(
        m, n,
        [&](int64_t first, int64_t rows, float *c, int64_t ldc) {
          gemmInt8(rows, n, k, &a.data[first * a.ld], a.ld, input, b.weight(), c, ldc,
                   &twoThreads, epilogue);
        },
        input.range == InputQuantization::Range::Row ? "per-row range" : "fixed range");
}

KILN_INSTANTIATE_PER_ISA(Int8GemmTest);

/// kiln_ukernel_linear's parameters for C = A·B, B f32 in layout code
/// `layout`, without an epilogue.
kiln_linear_params_t linearParams(int64_t m, int64_t n, int64_t k,
                                  const Matrix &a, const void *b, int64_t ldb,
                                  int64_t layout, Matrix &c) {
  kiln_linear_params_t params{};
  params.m = m;
  params.n = n;
  params.k = k;
  params.a = a.data.data();
  params.lda = a.ld;
  params.weight = b;
  params.weight_stride = ldb;
  params.weight_layout = layout;
  params.weight_dtype = KILN_WEIGHT_F32;
  params.out = c.data.data();
  params.ldc = c.ld;
  return params;
}

TEST(KilnUkernelLinearTest, ActivationCodesAreTheDialectsEnum) {
  // Generated code passes the kiln dialect's Activation value (KilnBase.td:
  // relu 1, gelu 2, gelu_tanh 3, silu 4; 0 when there is none) as is.
  const std::pair<int64_t, GemmActivation> codes[] = {
      {0, GemmActivation::None},     {1, GemmActivation::Relu},
      {2, GemmActivation::Gelu},     {3, GemmActivation::GeluTanh},
      {4, GemmActivation::Silu}};
  std::mt19937 rng(3);
  const int64_t m = 5, n = 19, k = 40;
  const Matrix a(m, k, 0, rng), b(k, n, 0, rng), bias(1, n, 0, rng),
      gate(m, n, 3, rng), residual(m, n, 2, rng);
  for (auto [code, activation] : codes) {
    Matrix c(m, n, 1, rng);
    kiln_linear_params_t params =
        linearParams(m, n, k, a, b.data.data(), b.ld, /*layout=*/0, c);
    params.bias = bias.data.data();
    params.activation = code;
    params.gate = gate.data.data();
    params.ldg = gate.ld;
    params.residual = residual.data.data();
    params.ldr = residual.ld;
    kiln_ukernel_linear(&params);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double sum = bias.at(0, j);
        for (int64_t p = 0; p < k; ++p)
          sum += double(a.at(i, p)) * b.at(p, j);
        const double expected =
            referenceActivation(activation, sum) * gate.at(i, j) +
            residual.at(i, j);
        ASSERT_NEAR(c.at(i, j), expected, 1e-5)
            << "code " << code << " at [" << i << "," << j << "]";
      }
  }
}

TEST(KilnUkernelLinearTest, LayoutCodesAreTheCompilersEnum) {
  // Generated code passes the compiler's WeightLayout (UkernelCalls.h:
  // [K, N] rows 0, [N, K] rows 1, packed panels 2) as is; through the direct
  // path (2 rows) and the packed one (5 rows), over two panels.
  const std::pair<int64_t, GemmLayout> codes[] = {{0, GemmLayout::RowMajor},
                                                  {1, GemmLayout::Transposed},
                                                  {2, GemmLayout::Panels}};
  std::mt19937 rng(4);
  const int64_t n = 70, k = 40;
  for (int64_t m : {2, 5}) {
    const Matrix a(m, k, 0, rng);
    for (auto [code, layout] : codes) {
      const WeightMatrix b(layout, k, n, 1, rng);
      Matrix c(m, n, 1, rng);
      const kiln_linear_params_t params =
          linearParams(m, n, k, a, b.data(), b.ld(), code, c);
      kiln_ukernel_linear(&params);
      expectProduct(a, b, c, "code " + std::to_string(code));
    }
  }
}

TEST(KilnUkernelLinearTest, QuantizedWeightThroughTheParameterStruct) {
  // weight_dtype KILN_WEIGHT_I8 and KILN_WEIGHT_U4 with packed panels,
  // scales (and zero points) and group size as kiln-quantize-weights lays
  // them out, direct (2 rows) and packed (40).
  std::mt19937 rng(6);
  const int64_t n = 70, k = 150;
  for (auto [format, dtype] : {std::pair{QuantizedFormat::Int8, KILN_WEIGHT_I8},
                               std::pair{QuantizedFormat::Uint4, KILN_WEIGHT_U4}}) {
    const QuantizedMatrix b(format, k, n, 64, 1, rng);
    for (int64_t m : {2, 40}) {
      const Matrix a(m, k, 0, rng);
      Matrix c(m, n, 1, rng);
      kiln_linear_params_t params =
          linearParams(m, n, k, a, b.values.data(), b.ld, /*layout=*/2, c);
      params.weight_dtype = dtype;
      params.scales = b.scales.data();
      params.zero_points = b.weight().zeroPoints;
      params.scales_stride = b.scalesLd;
      params.group_size = b.groupSize;
      kiln_ukernel_linear(&params);
      expectProduct(a, b.dequantized, c, formatName(format) + " " + std::to_string(m) + " rows",
                    &b.errorScale);
    }
  }
}

TEST(KilnUkernelLinearTest, Int8WeightWithQuantizedInputThroughTheParameterStruct) {
  // weight_dtype KILN_WEIGHT_I8_ROW_QUADS with input_quantization
  // KILN_INPUT_U8_DYNAMIC_ROWS (kiln-quantize-weights' quantize-inputs),
  // KILN_INPUT_U8_DYNAMIC_TENSOR (DynamicQuantizeLinear's) and
  // KILN_INPUT_U8_STATIC (a QDQ model's), a bias: few rows and many.
  std::mt19937 rng(8);
  const int64_t n = 70, k = 148;
  const Int8Matrix b(k, n, 1, rng);
  const Matrix bias(1, n, 0, rng);
  for (auto input : {InputQuantization::perRowRange(), InputQuantization::tensorRange(),
                     InputQuantization::fixed(0.01f, 131)}) {
    for (int64_t m : {2, 40}) {
      const Matrix a(m, k, 0, rng);
      Matrix c(m, n, 1, rng), expected(m, n, 1, rng);
      kiln_linear_params_t params =
          linearParams(m, n, k, a, b.values.data(), b.ld, /*layout=*/2, c);
      params.weight_dtype = KILN_WEIGHT_I8_ROW_QUADS;
      params.input_quantization =
          input.range == InputQuantization::Range::Row      ? KILN_INPUT_U8_DYNAMIC_ROWS
          : input.range == InputQuantization::Range::Tensor ? KILN_INPUT_U8_DYNAMIC_TENSOR
                                                            : KILN_INPUT_U8_STATIC;
      params.input_scale = input.scale;
      params.input_zero_point = input.zeroPoint;
      params.scales = b.scales.data();
      params.column_sums = b.columnSums.data();
      params.scales_stride = b.scalesLd;
      params.group_size = k;
      params.bias = bias.data.data();
      kiln_ukernel_linear(&params);
      GemmEpilogue epilogue;
      epilogue.bias = bias.data.data();
      gemmInt8(m, n, k, a.data.data(), a.ld, input, b.weight(), expected.data.data(),
               expected.ld, nullptr, epilogue);
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j)
          ASSERT_EQ(c.at(i, j), expected.at(i, j))
              << m << " rows at [" << i << "," << j << "], "
              << "range " << static_cast<int>(input.range);
    }
  }
}

TEST(KilnUkernelLinearDeathTest, UnknownCodesTrap) {
  // Outside a run the trap reports and aborts; inside one it ends the run.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  std::mt19937 rng(1);
  const Matrix a(1, 1, 0, rng), b(1, 1, 0, rng);
  Matrix c(1, 1, 0, rng);
  const uint8_t zeroPoint = 0;
  auto linear = [&](int64_t layout, int64_t activation, int64_t dtype,
                    int64_t groupSize, const uint8_t *zeroPoints = nullptr) {
    kiln_linear_params_t params =
        linearParams(1, 1, 1, a, b.data.data(), 1, layout, c);
    params.activation = activation;
    params.weight_dtype = dtype;
    params.group_size = groupSize;
    params.zero_points = zeroPoints;
    kiln_ukernel_linear(&params);
  };
  EXPECT_DEATH(linear(0, 5, KILN_WEIGHT_F32, 0),
               "kiln_ukernel_linear: unknown activation code");
  EXPECT_DEATH(linear(3, 0, KILN_WEIGHT_F32, 0),
               "kiln_ukernel_linear: unknown weight layout code");
  EXPECT_DEATH(linear(0, 0, KILN_DTYPE_F16, 0),
               "kiln_ukernel_linear: unknown weight dtype");
  const char *quantizedMisuse = "a quantized weight must be packed in panels";
  EXPECT_DEATH(linear(0, 0, KILN_WEIGHT_I8, 1), quantizedMisuse);
  EXPECT_DEATH(linear(2, 0, KILN_WEIGHT_I8, 0), quantizedMisuse);
  EXPECT_DEATH(linear(2, 0, KILN_WEIGHT_I8, 1, &zeroPoint), quantizedMisuse);
  EXPECT_DEATH(linear(2, 0, KILN_WEIGHT_U4, 1), quantizedMisuse);

  // Int8 products with quantized inputs: the pairing of dtype and input
  // quantization, and the weight's shape.
  const int32_t columnSum = 0;
  auto int8Linear = [&](int64_t dtype, int64_t inputQuantization, int64_t k,
                        int64_t groupSize, const int32_t *columnSums) {
    kiln_linear_params_t params = linearParams(1, 1, k, a, b.data.data(), 1, 2, c);
    params.weight_dtype = dtype;
    params.input_quantization = inputQuantization;
    params.group_size = groupSize;
    params.column_sums = columnSums;
    kiln_ukernel_linear(&params);
  };
  EXPECT_DEATH(int8Linear(KILN_WEIGHT_I8_ROW_QUADS, 4, 4, 4, &columnSum),
               "unknown input quantization");
  const char *pairing = "an input is quantized exactly when the weight is int8 in row quads";
  EXPECT_DEATH(int8Linear(KILN_WEIGHT_I8_ROW_QUADS, KILN_INPUT_F32, 4, 4, &columnSum), pairing);
  EXPECT_DEATH(int8Linear(KILN_WEIGHT_F32, KILN_INPUT_U8_DYNAMIC_ROWS, 4, 4, &columnSum), pairing);
  const char *shape = "an int8 weight in row quads must be packed in panels";
  EXPECT_DEATH(int8Linear(KILN_WEIGHT_I8_ROW_QUADS, KILN_INPUT_U8_DYNAMIC_ROWS, 6, 6, &columnSum), shape);
  EXPECT_DEATH(int8Linear(KILN_WEIGHT_I8_ROW_QUADS, KILN_INPUT_U8_DYNAMIC_ROWS, 8, 4, &columnSum), shape);
  EXPECT_DEATH(int8Linear(KILN_WEIGHT_I8_ROW_QUADS, KILN_INPUT_U8_DYNAMIC_ROWS, 4, 4, nullptr), shape);
  EXPECT_DEATH(int8Linear(KILN_WEIGHT_I8_ROW_QUADS, KILN_INPUT_U8_DYNAMIC_ROWS,
                          kMaxInt8Depth + 4, kMaxInt8Depth + 4, &columnSum), shape);

  // A static input quantization's scale and zero point.
  auto staticLinear = [&](double scale, int64_t zeroPoint) {
    kiln_linear_params_t params = linearParams(1, 1, 4, a, b.data.data(), 1, 2, c);
    params.weight_dtype = KILN_WEIGHT_I8_ROW_QUADS;
    params.input_quantization = KILN_INPUT_U8_STATIC;
    params.group_size = 4;
    params.column_sums = &columnSum;
    params.input_scale = scale;
    params.input_zero_point = zeroPoint;
    kiln_ukernel_linear(&params);
  };
  const char *parameters = "a static input quantization needs a finite positive scale";
  EXPECT_DEATH(staticLinear(0.0, 0), parameters);
  EXPECT_DEATH(staticLinear(-1.0, 0), parameters);
  EXPECT_DEATH(staticLinear(std::nan(""), 0), parameters);
  EXPECT_DEATH(staticLinear(1e300, 0), parameters);
  EXPECT_DEATH(staticLinear(0.5, -1), parameters);
  EXPECT_DEATH(staticLinear(0.5, 256), parameters);
}

TEST(GemmIsaTest, NamesAndLimits) {
  EXPECT_STREQ(gemmIsaName(GemmIsa::Generic), "generic");
  EXPECT_STREQ(gemmIsaName(GemmIsa::Avx2), "avx2");
  EXPECT_STREQ(gemmIsaName(GemmIsa::Avx512), "avx512");
  const GemmIsa previous = activeGemmIsa();
  // Asking for more than the CPU has gives the best it has.
  setGemmIsa(GemmIsa::Avx512);
  EXPECT_EQ(activeGemmIsa(), detectGemmIsa());
  setGemmIsa(previous);
}

//===----------------------------------------------------------------------===//
// kiln_ukernel_sgemm
//===----------------------------------------------------------------------===//

/// A batch of row-major matrices, `stride` floats apart; stride 0 is one
/// matrix shared by the batch.
struct Batch {
  std::vector<Matrix> entries;
  int64_t stride;
  std::vector<float> data;

  Batch(int64_t batch, int64_t rows, int64_t cols, int64_t padding, bool shared,
        std::mt19937 &rng) {
    const int64_t stored = shared ? 1 : std::max<int64_t>(1, batch);
    for (int64_t i = 0; i < stored; ++i)
      entries.emplace_back(rows, cols, padding, rng);
    const int64_t size = entries[0].data.size();
    stride = shared ? 0 : size + 5; // gaps between entries, filled with NaN
    data.assign(size + stride * (stored - 1), kNaN);
    for (size_t i = 0; i < entries.size(); ++i)
      std::copy(entries[i].data.begin(), entries[i].data.end(),
                data.begin() + i * stride);
  }
  const Matrix &entry(int64_t i) const { return entries[stride ? i : 0]; }
};

struct BatchCase {
  int64_t batch, m, n, k;
  bool sharedA, sharedB, transposeB;
};

void checkBatchedGemm(const BatchCase &bc, ThreadPool *pool) {
  std::mt19937 rng(11);
  const Batch a(bc.batch, bc.m, bc.k, 1, bc.sharedA, rng);
  const Batch b = bc.transposeB
                      ? Batch(bc.batch, bc.n, bc.k, 2, bc.sharedB, rng)
                      : Batch(bc.batch, bc.k, bc.n, 2, bc.sharedB, rng);
  Batch c(bc.batch, bc.m, bc.n, 3, false, rng);
  std::fill(c.data.begin(), c.data.end(), kNaN);
  {
    ScopedThreadPool scope(pool);
    kiln_ukernel_sgemm(bc.batch, bc.m, bc.n, bc.k, a.data.data(), a.stride,
                       a.entry(0).ld, b.data.data(), b.stride, b.entry(0).ld,
                       bc.transposeB, c.data.data(), c.stride, c.entry(0).ld,
                       /*accumulate=*/0);
  }
  for (int64_t i = 0; i < bc.batch; ++i) {
    Matrix result = c.entry(i);
    std::copy_n(c.data.begin() + i * c.stride, result.data.size(),
                result.data.begin());
    expectProduct(a.entry(i),
                  WeightMatrix(bc.transposeB ? GemmLayout::Transposed
                                             : GemmLayout::RowMajor,
                               b.entry(i), 0),
                  result,
                  "batch entry " + std::to_string(i) + " of " +
                      std::to_string(bc.batch) +
                      (pool ? " pooled" : " serial"));
  }
  // The gaps between C entries stay untouched.
  for (int64_t i = 0; i + 1 < bc.batch; ++i)
    for (int64_t g = c.entry(0).data.size(); g < c.stride; ++g)
      EXPECT_TRUE(std::isnan(c.data[i * c.stride + g])) << "gap after " << i;
}

TEST(KilnUkernelSgemmTest, BatchesWithOwnAndSharedOperands) {
  const BatchCase cases[] = {
      {0, 4, 4, 4, false, false, false},
      {1, 37, 45, 70, false, false, false},
      {1, 120, 150, 70, false, false, true}, // split inside the one product
      {3, 7, 13, 17, false, false, false},
      {3, 40, 50, 60, false, false, true},
      {4, 16, 20, 64, false, true, false}, // one weight for every entry
      {4, 16, 20, 64, true, false, true},  // one activation for every entry
      {5, 64, 96, 80, false, true, true},  // split across the batch
      {2, 128, 64, 64, false, true, false},
      {2, 3, 5, 0, false, false, false},
  };
  ThreadPool twoThreads(2);
  for (const BatchCase &bc : cases) {
    checkBatchedGemm(bc, nullptr);
    checkBatchedGemm(bc, &twoThreads);
  }
}

//===----------------------------------------------------------------------===//
// ThreadPool
//===----------------------------------------------------------------------===//

TEST(ThreadPoolTest, Size) {
  EXPECT_EQ(ThreadPool(1).size(), 1);
  EXPECT_EQ(ThreadPool(3).size(), 3);
  EXPECT_EQ(
      ThreadPool(0).size(),
      static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
}

TEST(ThreadPoolTest, CoversEveryIndexOnceInContiguousChunks) {
  for (int threads : {1, 2, 4}) {
    ThreadPool pool(threads);
    for (int64_t count : {1, 2, 3, 7, 1000}) {
      std::vector<std::atomic<int>> visits(count);
      std::atomic<int> chunks{0};
      pool.parallelFor(count, [&](int64_t begin, int64_t end) {
        EXPECT_LT(begin, end);
        ++chunks;
        for (int64_t i = begin; i < end; ++i)
          ++visits[i];
      });
      for (int64_t i = 0; i < count; ++i)
        EXPECT_EQ(visits[i].load(), 1) << "index " << i << " of " << count;
      EXPECT_EQ(chunks.load(), std::min<int64_t>(count, threads));
    }
  }
}

TEST(ThreadPoolTest, EmptyRangeRunsNothing) {
  ThreadPool pool(2);
  bool ran = false;
  pool.parallelFor(0, [&](int64_t, int64_t) { ran = true; });
  pool.parallelFor(-3, [&](int64_t, int64_t) { ran = true; });
  EXPECT_FALSE(ran);
}

TEST(ThreadPoolTest, NestedCallsRunInline) {
  ThreadPool pool(2);
  std::vector<std::atomic<int>> visits(8 * 8);
  pool.parallelFor(8, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      pool.parallelFor(8, [&](int64_t innerBegin, int64_t innerEnd) {
        for (int64_t j = innerBegin; j < innerEnd; ++j)
          ++visits[i * 8 + j];
      });
  });
  for (const std::atomic<int> &v : visits)
    EXPECT_EQ(v.load(), 1);
}

TEST(ThreadPoolTest, ConcurrentCallers) {
  ThreadPool pool(2);
  constexpr int kCallers = 4, kCalls = 200, kCount = 100;
  std::vector<int64_t> sums(kCallers, 0);
  std::vector<std::thread> callers;
  for (int t = 0; t < kCallers; ++t)
    callers.emplace_back([&, t] {
      for (int call = 0; call < kCalls; ++call) {
        std::atomic<int64_t> sum{0};
        pool.parallelFor(kCount, [&](int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i)
            sum += i;
        });
        sums[t] += sum.load();
      }
    });
  for (std::thread &caller : callers)
    caller.join();
  for (int64_t sum : sums)
    EXPECT_EQ(sum, int64_t(kCalls) * kCount * (kCount - 1) / 2);
}

TEST(ThreadPoolTest, RethrowsAfterAllChunksFinish) {
  ThreadPool pool(2);
  std::atomic<int> finished{0};
  EXPECT_THROW(pool.parallelFor(2,
                                [&](int64_t begin, int64_t) {
                                  if (begin == 0)
                                    throw std::runtime_error("chunk 0");
                                  ++finished;
                                }),
               std::runtime_error);
  EXPECT_EQ(finished.load(), 1);
  // The pool is still usable.
  std::atomic<int> ran{0};
  pool.parallelFor(2, [&](int64_t, int64_t) { ++ran; });
  EXPECT_EQ(ran.load(), 2);
}

TEST(ThreadPoolTest, ScopedThreadPoolSetsAndRestores) {
  EXPECT_EQ(currentThreadPool(), nullptr);
  ThreadPool outer(1), inner(1);
  {
    ScopedThreadPool outerScope(&outer);
    EXPECT_EQ(currentThreadPool(), &outer);
    {
      ScopedThreadPool innerScope(&inner);
      EXPECT_EQ(currentThreadPool(), &inner);
    }
    EXPECT_EQ(currentThreadPool(), &outer);
    // Other threads keep their own.
    std::thread([] { EXPECT_EQ(currentThreadPool(), nullptr); }).join();
  }
  EXPECT_EQ(currentThreadPool(), nullptr);
}

} // namespace
