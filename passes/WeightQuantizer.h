//===- WeightQuantizer.h - The arithmetic of weight-only quantization -*- C++ -*-===//
//
// How kiln-quantize-weights turns packed f32 panels into int8 or 4-bit
// values with scales (and zero points) by group, in plain C++ so that
// kiln-gemm-bench quantizes its weights exactly as the compiler does. The
// layouts are the runtime's (runtime/src/cpu/Gemm.h, QuantizedWeight).
//
//===----------------------------------------------------------------------===//
#ifndef KILN_PASSES_WEIGHTQUANTIZER_H
#define KILN_PASSES_WEIGHTQUANTIZER_H

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace kiln::quantizer {

/// Columns per panel: LinearOp::kPanelWidth, kiln::rt::kWeightPanelWidth.
constexpr int64_t kPanelWidth = 64;

/// How a group of a column's values maps to integers: w ≈ (value −
/// zeroPoint) · scale, value in [lowest, highest].
struct GroupQuantizer {
  float scale;
  float zeroPoint;
  float lowest, highest;

  /// Int8: symmetric about 0, so that no zero point is stored.
  static GroupQuantizer int8(float low, float high) {
    constexpr float kInt8Max = 127.0f;
    return {std::max(high, -low) / kInt8Max, 0.0f, -kInt8Max, kInt8Max};
  }
  /// 4-bit: the group's range, widened to include 0 so that a zero weight
  /// stays exact, cut into 15 steps; the zero point is where 0 lands.
  static GroupQuantizer uint4(float low, float high) {
    constexpr float kUint4Max = 15.0f;
    low = std::min(low, 0.0f);
    high = std::max(high, 0.0f);
    const float scale = (high - low) / kUint4Max;
    const float zeroPoint =
        scale > 0 ? std::clamp(std::nearbyint(-low / scale), 0.0f, kUint4Max) : 0.0f;
    return {scale, zeroPoint, 0.0f, kUint4Max};
  }

  /// The stored integer for `weight` (round to nearest, ties to even).
  float quantize(float weight) const {
    return std::clamp(std::nearbyint(weight / scale) + zeroPoint, lowest, highest);
  }
  float dequantize(float value) const { return (value - zeroPoint) * scale; }
};

/// What one quantization format stores per panel row, and how.
struct Format {
  int64_t bits; // 8: int8; 4: pairs of 4-bit values with zero points

  bool hasZeroPoints() const { return bits == 4; }
  /// Bytes (elements of the values' tensor) per panel row.
  int64_t rowBytes() const { return bits == 8 ? kPanelWidth : kPanelWidth / 2; }
  GroupQuantizer quantizer(float low, float high) const {
    return bits == 8 ? GroupQuantizer::int8(low, high) : GroupQuantizer::uint4(low, high);
  }
  /// Writes integer `value` of column `lane` to a panel row.
  void store(uint8_t *row, int64_t lane, float value) const {
    if (bits == 8) {
      row[lane] = static_cast<uint8_t>(static_cast<int8_t>(value));
      return;
    }
    // Column c in the low 4 bits of byte c, column c + 32 in its high 4
    // bits: the runtime unpacks a vector of bytes into two of columns.
    const int64_t half = kPanelWidth / 2;
    row[lane % half] |= static_cast<uint8_t>(value) << (lane / half * 4);
  }
};

/// Where quantizePanels writes: the values laid out as the format says
/// (zeroed beforehand: 4-bit values are OR-ed into their bytes), and the
/// scales (and zero points) of each group as panels [panels, groups, W].
struct QuantizedPanels {
  uint8_t *values;
  float *scales;
  uint8_t *zeroPoints; // 4-bit only
};

/// Quantizes packed panels `weights` ([panels, k, W]) into `out`, group by
/// group of `groupSize` rows of each column. Returns the error's relative
/// RMS, |W - dequantized| / |W| over all elements (0 for a zero weight).
inline double quantizePanels(const float *weights, int64_t panels, int64_t k,
                             int64_t groupSize, const Format &format,
                             const QuantizedPanels &out) {
  const int64_t groups = (k + groupSize - 1) / groupSize;
  double squaredError = 0, squaredWeight = 0;
  for (int64_t panel = 0; panel < panels; ++panel)
    for (int64_t group = 0; group < groups; ++group) {
      const int64_t begin = group * groupSize, end = std::min(k, begin + groupSize);
      for (int64_t lane = 0; lane < kPanelWidth; ++lane) {
        auto weight = [&](int64_t p) { return weights[(panel * k + p) * kPanelWidth + lane]; };
        float low = 0.0f, high = 0.0f;
        for (int64_t p = begin; p < end; ++p) {
          low = std::min(low, weight(p));
          high = std::max(high, weight(p));
        }
        const GroupQuantizer quantizer = format.quantizer(low, high);
        const int64_t at = (panel * groups + group) * kPanelWidth + lane;
        out.scales[at] = quantizer.scale;
        if (format.hasZeroPoints())
          out.zeroPoints[at] = static_cast<uint8_t>(quantizer.zeroPoint);
        if (quantizer.scale == 0.0f)
          continue; // the values stay zero, as the weights are
        for (int64_t p = begin; p < end; ++p) {
          const float value = quantizer.quantize(weight(p));
          format.store(&out.values[(panel * k + p) * format.rowBytes()], lane, value);
          const double error = double(weight(p)) - double(quantizer.dequantize(value));
          squaredError += error * error;
          squaredWeight += double(weight(p)) * weight(p);
        }
      }
    }
  return squaredWeight > 0 ? std::sqrt(squaredError / squaredWeight) : 0.0;
}

/// Rows of a column per 32-bit lane in the layout of int8 products with
/// quantized inputs: kiln::rt::kInt8RowQuad.
constexpr int64_t kRowQuad = 4;

/// Lays int8 panels [panels, k, W] (k a multiple of kRowQuad) out as int8
/// products with quantized inputs read them (KILN_WEIGHT_I8_ROW_QUADS):
/// row 4q + i of column c at byte (q · W + c) · 4 + i of its panel, each
/// panel k · W bytes; and writes each column's sum of values to
/// `columnSums`, [panels, W].
inline void toRowQuads(const uint8_t *rows, int64_t panels, int64_t k,
                       uint8_t *quads, int32_t *columnSums) {
  for (int64_t panel = 0; panel < panels; ++panel)
    for (int64_t lane = 0; lane < kPanelWidth; ++lane) {
      int32_t sum = 0;
      for (int64_t p = 0; p < k; ++p) {
        const uint8_t value = rows[(panel * k + p) * kPanelWidth + lane];
        quads[panel * k * kPanelWidth + (p / kRowQuad * kPanelWidth + lane) * kRowQuad +
              p % kRowQuad] = value;
        sum += static_cast<int8_t>(value);
      }
      columnSums[panel * kPanelWidth + lane] = sum;
    }
}

} // namespace kiln::quantizer

#endif // KILN_PASSES_WEIGHTQUANTIZER_H
