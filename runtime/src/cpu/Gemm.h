//===- Gemm.h - Single-precision matrix multiply for the CPU ---*- C++ -*-===//
//
// A packed-panel SGEMM (B and A are copied into cache-sized panels laid out
// for a register-blocked microkernel) with microkernels for AVX-512F,
// AVX2+FMA and portable C++. The ISA is chosen on first use from what the CPU
// supports; KILN_ISA=avx512|avx2|generic in the environment forces a lower one.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_GEMM_H
#define KILN_RUNTIME_GEMM_H

#include "kiln/abi/kernel_abi.h"

#include <algorithm>
#include <cstdint>
#include <functional>

namespace kiln::rt {

class ThreadPool;

/// x / y rounded up, for x >= 0 and y > 0: how many blocks of y cover x.
constexpr int64_t ceilDiv(int64_t x, int64_t y) { return (x + y - 1) / y; }

/// Ordered: every ISA can run on a CPU that supports a later one.
enum class GemmIsa { Generic, Avx2, Avx512 };

/// The best ISA this CPU supports, lowered to KILN_ISA when that is set.
GemmIsa detectGemmIsa();
/// "generic", "avx2" or "avx512".
const char *gemmIsaName(GemmIsa isa);
/// The ISA sgemm runs with.
GemmIsa activeGemmIsa();
/// Makes sgemm use `isa`, or detectGemmIsa() if `isa` is beyond it, so that it
/// never runs instructions the CPU lacks. For tests and benchmarks.
void setGemmIsa(GemmIsa isa);

/// How many of `pool`'s threads a kernel doing `multiplyAdds` multiply-adds
/// should split over: 1 without a pool, and never so many that a thread gets
/// less work than waking it costs.
int threadsWorthUsing(ThreadPool *pool, double multiplyAdds);
/// The same for a memory-bound kernel that reads `streamedBytes` from
/// memory: a decode step's product of one row by a weight is few
/// multiply-adds on many bytes, and two threads stream more than one.
int threadsWorthStreaming(ThreadPool *pool, double streamedBytes);

/// How sgemm's B (k×n in the product) is stored. The values are
/// kiln_linear_params_t's `weight_layout`, which generated code fills with
/// the compiler's WeightLayout: keep the two in step.
enum class GemmLayout : int64_t {
  RowMajor = 0,   // k rows of n, ldb apart
  Transposed = 1, // n rows of k, ldb apart: the product is by its transpose
  // ceil(n / kWeightPanelWidth) panels, ldb apart, each k rows of
  // kWeightPanelWidth floats: column j of B is column j % W of panel j / W,
  // zeros past n. kiln-pack-weights lays constant weights out so, and the
  // microkernels read it in place.
  Panels = 2,
};
/// "k x n", "n x k" or "panels": how B is stored, for reports and tests.
const char *gemmLayoutName(GemmLayout layout);

/// Columns per panel of GemmLayout::Panels: a multiple of every
/// microkernel's strip width. The compiler's LinearOp::kPanelWidth: keep the
/// two in step.
constexpr int64_t kWeightPanelWidth = 64;

/// The activation of a GEMM epilogue. The values are kiln_linear_params_t's
/// `activation`, which generated code fills with the kiln dialect's
/// Activation enum: keep the two in step.
enum class GemmActivation : int64_t {
  None = 0,
  Relu = 1,     // max(x, 0)
  Gelu = 2,     // x·Phi(x)
  GeluTanh = 3, // 0.5·x·(1 + tanh(sqrt(2/pi)·(x + 0.044715·x³)))
  Silu = 4,     // x·sigmoid(x)
};

/// What sgemm does to each element of C once its sum is complete, while the
/// tile is still in cache: C[i][j] = activation(C[i][j] + bias[j]) ·
/// gate[i·ldg + j] + residual[i·ldr + j]. A null bias, gate or residual is
/// left out.
struct GemmEpilogue {
  const float *bias = nullptr;
  GemmActivation activation = GemmActivation::None;
  const float *gate = nullptr;
  int64_t ldg = 0;
  const float *residual = nullptr;
  int64_t ldr = 0;

  bool empty() const {
    return !bias && !gate && !residual &&
           activation == GemmActivation::None;
  }
};

/// C = A·B for row-major m×k A and m×n C, and B k×n as `bLayout` says; with
/// `accumulate`, C += the product instead;
/// then `epilogue` on the result. Leading dimensions are in elements and may
/// exceed the logical row width. Without `accumulate` C is overwritten (zeros
/// when k == 0). C must not overlap A, B or the epilogue's operands. Splits
/// large products over `pool`; nullptr runs on the calling thread.
/// Accumulates in f32 (with FMA where the ISA has it), in the same order
/// whatever the pool, so results do not depend on the thread count; and
/// batch-invariant: every path (direct or packed, any row count) sums a row
/// of C over k in the ISA's blocks of GemmMicrokernel::kc, each block's
/// products in order from 0 and the blocks added to C in order, so that a
/// row's bits do not depend on how many rows share the product, nor which.
/// The generation engine batches whatever requests are running, and a
/// seeded request must draw the same tokens in any batch.
/// sgemmQuantizedWeight is not, on AVX-512: its direct kernels for one or
/// two rows scale a group's sums where taller products scale each value.
void sgemm(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
           const float *b, int64_t ldb, GemmLayout bLayout, float *c,
           int64_t ldc, ThreadPool *pool, bool accumulate = false,
           const GemmEpilogue &epilogue = {});

/// How a quantized weight (QuantizedWeight) stores its values. The values
/// are kiln_linear_params_t's `weight_dtype` codes for them.
enum class QuantizedFormat : int64_t {
  /// Symmetric int8: B[p][j] = value · scale.
  Int8 = KILN_WEIGHT_I8,
  /// Asymmetric 4-bit: B[p][j] = (value − zero point) · scale, values and
  /// zero points unsigned in [0, 15]. A panel row is kWeightPanelWidth / 2
  /// bytes: byte b holds column b in its low 4 bits and column b + W/2 in
  /// its high 4 bits, so that a vector of bytes unpacks into two vectors of
  /// consecutive columns.
  Uint4 = KILN_WEIGHT_U4,
};

/// Bytes per row of a panel of kWeightPanelWidth columns in `format`.
constexpr int64_t panelRowBytes(QuantizedFormat format) {
  return format == QuantizedFormat::Int8 ? kWeightPanelWidth
                                         : kWeightPanelWidth / 2;
}

/// A k×n weight in GemmLayout::Panels quantized by group: panel j / W of
/// B's column j (W = kWeightPanelWidth) starts at values + j / W · ld
/// (bytes), row p of it panelRowBytes(format) bytes further per row, and
/// the column's group of groupSize rows from p / groupSize has its scale at
/// scales[j / W · scalesLd + p / groupSize · W + j % W] and, for Uint4, its
/// zero point at the same index of zeroPoints. The scales are 0 past n (as
/// the values are), so every lane of a panel is finite.
/// kiln-quantize-weights lays weights out so (kiln_linear_params_t).
struct QuantizedWeight {
  QuantizedFormat format;
  const uint8_t *values;
  int64_t ld;
  const float *scales;
  const uint8_t *zeroPoints; // Uint4 only
  int64_t scalesLd;
  int64_t groupSize;
};

/// sgemm for a quantized weight: C = A·B, then `epilogue`, where B's values
/// are multiplied back to f32 in registers as the microkernels read them
/// (products of up to kStreamedRows rows, which stream B from memory and so
/// read a quarter (int8) or an eighth (4-bit) of an f32 weight's bytes), or
/// panel by panel into the buffer that sgemm packs other layouts into
/// (taller products).
void sgemmQuantizedWeight(int64_t m, int64_t n, int64_t k, const float *a,
                          int64_t lda, const QuantizedWeight &b, float *c,
                          int64_t ldc, ThreadPool *pool,
                          const GemmEpilogue &epilogue = {});

/// Rows of B per 32-bit lane of an Int8Weight: VNNI's dot product of 4
/// bytes.
constexpr int64_t kInt8RowQuad = 4;
/// The deepest product gemmInt8 sums exactly in int32: |Σ (a − z)·w| ≤
/// 255 · 128 · k stays below 2^31 (an imported weight may hold −128). The compiler's
/// LinearOp::kMaxInt8Depth: keep the two in step.
constexpr int64_t kMaxInt8Depth = 65536;

/// A k×n int8 weight for products whose input is quantized too
/// (KILN_WEIGHT_I8_ROW_QUADS): ceil(n / W) panels of W = kWeightPanelWidth
/// columns, `ld` bytes apart, each holding its k rows (k a multiple of 4)
/// in quads: row 4q + i of column c at byte q · 4W + 4c + i, so that one
/// 32-bit lane holds 4 consecutive rows of a column. Column j's value times
/// scales[j / W · scalesLd + j % W] is B[p][j] (one scale per column), and
/// columnSums[j] is the sum of its k values (panels side by side, W each).
/// Scales, sums and values are 0 past n. kiln-quantize-weights lays
/// weights out so (quantize-inputs).
struct Int8Weight {
  const int8_t *values;
  int64_t ld;
  const float *scales;
  int64_t scalesLd;
  const int32_t *columnSums;
};

/// How gemmInt8 quantizes A to uint8 values q, x ≈ (q − z) · s: each row
/// with the scale and zero point of its own range, or every row with those
/// of the whole input's range, both found at run time (ONNX's
/// DynamicQuantizeLinear is the latter), or every row with one given scale
/// s > 0 and zero point z in [0, 255] (a static per-tensor quantization: a
/// QDQ model's, or calibration's).
struct InputQuantization {
  enum class Range { Row, Tensor, Fixed };
  Range range = Range::Row;
  float scale = 1.0f;
  int32_t zeroPoint = 0;

  static InputQuantization perRowRange() { return {}; }
  static InputQuantization tensorRange() { return {Range::Tensor}; }
  static InputQuantization fixed(float scale, int32_t zeroPoint) {
    return {Range::Fixed, scale, zeroPoint};
  }
};

/// C = A·B, then `epilogue`, with A quantized to uint8 row by row as
/// `input` says: a range found at run time (a row's or the whole input's)
/// [min(x, 0), max(x, 0)] in 255 steps of s_i and zero point z_i =
/// round(−min / s_i); then, as ONNX's
/// QuantizeLinear, values round(x / s_i) + z_i clamped to [0, 255] (ties
/// to even). The products are summed in int32, exactly for k ≤
/// kMaxInt8Depth, and C[i][j] = (sum − z_i · columnSums[j]) · (scale_j ·
/// s_i). Every ISA computes the same sums: AVX-512 VNNI where the CPU has
/// it and the active ISA is avx512, else AVX2, else portable C++.
void gemmInt8(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
              const InputQuantization &input, const Int8Weight &b, float *c,
              int64_t ldc, ThreadPool *pool, const GemmEpilogue &epilogue = {});

/// The uint8 values gemmInt8 gives row `x` of k floats, written to `out`:
/// with `findRange`, by the row's own range (setting `scale` and
/// `zeroPoint`), else by the given ones. For tests.
void quantizeRowToUint8(const float *x, int64_t k, uint8_t *out, float &scale,
                        int32_t &zeroPoint, bool findRange = true);

/// The name of the ISA gemmInt8 runs on: "avx512-vnni", "avx2"
/// or "generic".
const char *int8GemmIsaName();

namespace detail {

/// A strip of a QuantizedWeight as the microkernels read it: the columns
/// from `lane` of one panel, from row p on. `row` is row p's first byte
/// (rows panelRowBytes(format) apart); `scales` and `zeroPoints` are those
/// of p's group at `lane` (groups kWeightPanelWidth apart), of which
/// `firstGroupRows` rows are left before the next group starts.
struct QuantizedStrip {
  QuantizedFormat format;
  const uint8_t *row;
  int64_t lane;
  const float *scales;
  const uint8_t *zeroPoints; // Uint4 only
  int64_t groupSize;
  int64_t firstGroupRows;
};

/// The stored integer of column `lane` of a panel row in `format` (before
/// its zero point is subtracted).
inline int32_t quantizedValueAt(QuantizedFormat format, const uint8_t *row,
                                int64_t lane) {
  if (format == QuantizedFormat::Int8)
    return static_cast<int8_t>(row[lane]);
  constexpr int64_t half = kWeightPanelWidth / 2;
  return (row[lane % half] >> (lane / half * 4)) & 0xF;
}

/// The groups of a QuantizedStrip's first `depth` rows, in order: after
/// each next() that returns true, rows [begin, end) share the scales (and
/// zero points) at `scales` (`zeroPoints`). Every ISA's kernels walk a
/// strip so, one group at a time.
struct QuantizedGroups {
  const QuantizedStrip &strip;
  int64_t depth;
  int64_t begin = 0, end = 0;
  const float *scales = nullptr;
  const uint8_t *zeroPoints = nullptr;

  /// Moves to the next group; false once the rows run out.
  __attribute__((always_inline)) bool next() {
    if (end >= depth)
      return false;
    if (!scales) {
      scales = strip.scales;
      zeroPoints = strip.zeroPoints;
    } else {
      scales += kWeightPanelWidth;
      if (zeroPoints)
        zeroPoints += kWeightPanelWidth;
    }
    begin = end;
    end = std::min(depth, begin + (begin == 0 ? strip.firstGroupRows : strip.groupSize));
    return true;
  }
};

/// One call of a direct kernel: C[0:rows, 0:cols] = (accumulate ? C : 0) +
/// A·B over k rows of B, straight from row-major A (lda), for rows <=
/// kDirectRows and cols <= the kernel's directCols.
struct DirectProduct {
  int64_t k;
  const float *a;
  int64_t lda;
  float *c;
  int64_t ldc;
  int64_t rows;
  int64_t cols;
  bool accumulate;
};

/// The rows of B in one turn of a direct product's groups of rows (see
/// directGemm).
constexpr int64_t kTurnDepth = 32;

/// The running sums of a direct product whose k is cut into slices, one
/// call each (see directGemm): a call begins from the sums the one before
/// left, and only the last writes C. Each sum then adds the same products
/// in the same order as one call over the whole k would, and rounds the
/// same. Only a microkernel whose mostRowsTakingTurns is not 0 is given
/// sums to carry; while it carries them it prefetches B kTurnDepth rows
/// ahead, because the groups' turns hide the stream from the hardware
/// prefetcher (without, 8 rows streamed B at 37 GB/s instead of 71).
struct CarriedSums {
  /// kDirectRows rows of directCols floats, directCols apart, or null for
  /// a product in one call.
  float *sums = nullptr;
  /// Begin from `sums` (else from zero).
  bool resume = false;
  /// End by writing C (else by leaving the sums in `sums`).
  bool finish = true;
};

/// What the blocking driver in Gemm.cpp needs to know about one ISA's
/// microkernel; GemmAvx2.cpp and GemmAvx512.cpp each define one.
struct GemmMicrokernel {
  /// Computes C[0:rows, 0:cols] = (accumulate ? C : 0) + Ap·Bp, where Ap is an
  /// mr×k strip of A packed column by column (mr floats per step of k, rows
  /// past `rows` zero) and Bp a k×nr strip of B row by row (nr floats per
  /// step of k, ldb apart, columns past `cols` finite). rows <= mr,
  /// cols <= nr.
  void (*run)(int64_t k, const float *packedA, const float *packedB,
              int64_t ldb, float *c, int64_t ldc, int64_t rows, int64_t cols,
              bool accumulate);
  int64_t mr;
  int64_t nr;
  /// A kc×nc panel of packed B stays in L2 while mr×kc strips of A pass
  /// through L1 against it; up to mc rows of A are packed at once, so B is
  /// packed again only every mc rows.
  int64_t kc;
  int64_t mc;
  int64_t nc;
  /// Computes `product` for a row-major B (ldb), carrying its sums in and
  /// out as `carried` says. When only a few rows of A pass over B (a decode
  /// step multiplies one row per sequence), packing B costs more than the
  /// product, and the packed kernel would compute all mr rows for each.
  void (*runDirect)(const DirectProduct &product, const float *b, int64_t ldb,
                    const CarriedSums &carried);
  int64_t directCols;
  /// runDirect in one call for B a QuantizedStrip (directCols columns of
  /// one panel from a lane that is a multiple of directCols, every lane
  /// readable): each value is converted and scaled in registers.
  void (*runDirectQuantized)(const DirectProduct &product, const QuantizedStrip &b);
  /// Writes `depth` rows of `cols` columns of QuantizedStrip `b` (cols a
  /// multiple of nr from a lane that is one, within one panel) multiplied
  /// back to f32 to `out`, row by row: the packed strips that the
  /// microkernel reads for a product of many rows.
  void (*dequantize)(const QuantizedStrip &b, int64_t depth, int64_t cols,
                     float *out);
  /// Direct products of kDirectRows + 1 to this many rows of A (0: none)
  /// take turns over slices of kTurnDepth rows of B, carrying their sums,
  /// where the ISA's direct products are bound by reading B, not by their
  /// multiply-adds (see directGemm).
  int64_t mostRowsTakingTurns;
};

/// Runs `run(first, last)` over strips [0, strips) of a product that does
/// `multiplyAdds` f32 multiply-adds (or as much work) and streams
/// `streamedBytes` from memory: on the calling thread, or cut into
/// contiguous ranges over as many of `pool`'s threads as either count
/// makes worth waking (a decode step's products are few multiply-adds on
/// many bytes).
void splitStripsOverThreads(ThreadPool *pool, int64_t strips, double multiplyAdds,
                            double streamedBytes,
                            const std::function<void(int64_t, int64_t)> &run);

/// runDirect's most rows per call.
constexpr int64_t kDirectRows = 4;
/// Products with at most this many rows of A skip packing: each strip of B
/// passes through runDirect once per kDirectRows rows while it is in L2. At
/// these heights the product streams B from memory (a decode step's
/// batch); past them packing pays for itself.
constexpr int64_t kStreamedRows = 32;

/// Applies `epilogue` to C[row:row+rows, col:col+cols], which `c` points at
/// (row and col place the residual and the bias).
using EpilogueRunner = void (*)(const GemmEpilogue &epilogue, float *c,
                                int64_t ldc, int64_t row, int64_t rows,
                                int64_t col, int64_t cols);
/// The runner of `epilogue` on `isa` (GemmEpilogue.cpp), or null when it is
/// empty: the product's sums are then C as they are.
EpilogueRunner epilogueRunnerFor(GemmIsa isa, const GemmEpilogue &epilogue);

#if defined(__x86_64__)
extern const GemmMicrokernel avx2Microkernel;
extern const GemmMicrokernel avx512Microkernel;
#endif

} // namespace detail
} // namespace kiln::rt

/// The GEMM that compiled model code calls: for i in [0, batch),
///   C_i = A_i·B_i  (or A_i·B_iᵀ when transpose_b != 0; with accumulate != 0,
///   C_i += the product)
/// with X_i = x + i * x_batch_stride; a batch stride of 0 shares that operand
/// across the batch (c_batch_stride may be 0 only when batch <= 1). Shapes and
/// leading dimensions are as for kiln::rt::sgemm. Runs on currentThreadPool():
/// across the batch when there are at least as many entries as threads, else
/// inside each product.
extern "C" __attribute__((visibility("default"))) void
kiln_ukernel_sgemm(int64_t batch, int64_t m, int64_t n, int64_t k,
                   const float *a, int64_t a_batch_stride, int64_t lda,
                   const float *b, int64_t b_batch_stride, int64_t ldb,
                   int64_t transpose_b, float *c, int64_t c_batch_stride,
                   int64_t ldc, int64_t accumulate);

/// The GEMM with an epilogue that compiled model code calls for a
/// kiln.linear (kiln/abi/kernel_abi.h): sgemm with a GemmEpilogue, or
/// sgemmQuantizedWeight for an int8 or 4-bit weight, or gemmInt8 for a
/// weight with quantized inputs. Runs on currentThreadPool(). Ends
/// the run (kiln_rt_trap) on a code it does not know, which means the code
/// was compiled for a newer runtime.
extern "C" __attribute__((visibility("default"))) void
kiln_ukernel_linear(const kiln_linear_params_t *params);

#endif // KILN_RUNTIME_GEMM_H
