//===- Gemm.cpp - Packed-panel SGEMM driver, ISA choice, batched entry ----===//
//
// The driver follows BLIS/GotoBLAS, blocked for a row-major microkernel that
// broadcasts A against rows of B: for each kc-deep slice of k, a block of up
// to mc rows of A is packed once, then each kc×nc panel of B is packed (it
// stays in L2) and every mr-row strip of the A block (in L1 while in use) is
// swept across the panel's nr-column strips. A B that the compiler packed
// (GemmLayout::Panels) is already in strips and is read in place. Threads
// get disjoint tiles of C and pack their own panels, so they never
// synchronize inside a product.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/cpu/Gemm.h"

#include "kiln/runtime.h"
#include "runtime/src/LinearObserver.h"
#include "runtime/src/ThreadPool.h"
#include "runtime/src/cpu/VectorMath.h"

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cfloat>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <utility>

namespace kiln::rt {
namespace {

//===----------------------------------------------------------------------===//
// Portable microkernel
//===----------------------------------------------------------------------===//

// Plain loops that compilers vectorize; 8×8 measured fastest of 4..12 rows by
// 8 or 16 columns with baseline x86-64 SSE2.
constexpr int64_t kGenericMr = 8;
constexpr int64_t kGenericNr = 8;

void genericMicrokernel(int64_t k, const float *packedA, const float *packedB,
                        int64_t ldb, float *c, int64_t ldc, int64_t rows,
                        int64_t cols, bool accumulate) {
  float acc[kGenericMr][kGenericNr] = {};
  for (int64_t p = 0; p < k; ++p, packedA += kGenericMr, packedB += ldb)
    for (int64_t r = 0; r < kGenericMr; ++r)
      for (int64_t j = 0; j < kGenericNr; ++j)
        acc[r][j] += packedA[r] * packedB[j];
  for (int64_t r = 0; r < rows; ++r) {
    float *row = c + r * ldc;
    for (int64_t j = 0; j < cols; ++j)
      row[j] = accumulate ? row[j] + acc[r][j] : acc[r][j];
  }
}

constexpr int64_t kGenericDirectCols = 16;

using GenericDirectSums = float[detail::kDirectRows][kGenericDirectCols];

/// C[0:rows, 0:cols] = (accumulate ? C : 0) + acc.
void storeDirectSums(const detail::DirectProduct &d, const GenericDirectSums &acc) {
  for (int64_t r = 0; r < d.rows; ++r) {
    float *row = d.c + r * d.ldc;
    for (int64_t j = 0; j < d.cols; ++j)
      row[j] = d.accumulate ? row[j] + acc[r][j] : acc[r][j];
  }
}

void genericDirect(const detail::DirectProduct &d, const float *b, int64_t ldb,
                   const detail::CarriedSums &carried) {
  assert(!carried.sums && "the generic direct products do not take turns");
  GenericDirectSums acc = {};
  for (int64_t p = 0; p < d.k; ++p, b += ldb)
    for (int64_t r = 0; r < d.rows; ++r)
      for (int64_t j = 0; j < d.cols; ++j)
        acc[r][j] += d.a[r * d.lda + p] * b[j];
  storeDirectSums(d, acc);
}

/// Calls fn(p, weights) for the first `depth` rows p of strip `b`, with
/// row p's first `cols` weights multiplied back to f32.
template <typename Fn>
void forEachQuantizedRow(const detail::QuantizedStrip &b, int64_t depth,
                         int64_t cols, Fn &&fn) {
  const int64_t rowBytes = panelRowBytes(b.format);
  float weights[kWeightPanelWidth];
  for (detail::QuantizedGroups groups{b, depth}; groups.next();)
    for (int64_t p = groups.begin; p < groups.end; ++p) {
      for (int64_t j = 0; j < cols; ++j) {
        const int32_t zeroPoint = groups.zeroPoints ? groups.zeroPoints[j] : 0;
        weights[j] = static_cast<float>(detail::quantizedValueAt(
                         b.format, b.row + p * rowBytes, b.lane + j) -
                                        zeroPoint) *
                     groups.scales[j];
      }
      fn(p, weights);
    }
}

void genericDirectQuantized(const detail::DirectProduct &d,
                            const detail::QuantizedStrip &b) {
  GenericDirectSums acc = {};
  forEachQuantizedRow(b, d.k, d.cols, [&](int64_t p, const float *weights) {
    for (int64_t r = 0; r < d.rows; ++r)
      for (int64_t j = 0; j < d.cols; ++j)
        acc[r][j] += d.a[r * d.lda + p] * weights[j];
  });
  storeDirectSums(d, acc);
}

void genericDequantize(const detail::QuantizedStrip &b, int64_t depth,
                       int64_t cols, float *out) {
  forEachQuantizedRow(b, depth, cols, [&](int64_t p, const float *weights) {
    std::copy(weights, weights + cols, out + p * cols);
  });
}

static_assert(kWeightPanelWidth % kGenericNr == 0 &&
                  kWeightPanelWidth % kGenericDirectCols == 0,
              "a strip must lie inside one panel of a packed weight");

constexpr detail::GemmMicrokernel genericMicrokernelInfo{
    genericMicrokernel,     kGenericMr,       kGenericNr,    /*kc=*/256,
    /*mc=*/1024,            /*nc=*/256,       genericDirect, kGenericDirectCols,
    genericDirectQuantized, genericDequantize, /*mostRowsTakingTurns=*/0};

//===----------------------------------------------------------------------===//
// ISA choice
//===----------------------------------------------------------------------===//

constexpr GemmIsa kAllIsas[] = {GemmIsa::Generic, GemmIsa::Avx2,
                                GemmIsa::Avx512};

GemmIsa cpuGemmIsa() {
#if defined(__x86_64__)
  // Needed if the first call comes from a static constructor that runs before
  // libgcc's.
  __builtin_cpu_init();
  // libgcc also checks that the OS saves the wider registers (XCR0).
  if (__builtin_cpu_supports("avx512f"))
    return GemmIsa::Avx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return GemmIsa::Avx2;
#endif
  return GemmIsa::Generic;
}

std::atomic<GemmIsa> &activeIsaSlot() {
  static std::atomic<GemmIsa> isa{detectGemmIsa()};
  return isa;
}

const detail::GemmMicrokernel &microkernelFor(GemmIsa isa) {
  switch (isa) {
#if defined(__x86_64__)
  case GemmIsa::Avx512:
    return detail::avx512Microkernel;
  case GemmIsa::Avx2:
    return detail::avx2Microkernel;
#endif
  default:
    return genericMicrokernelInfo;
  }
}

//===----------------------------------------------------------------------===//
// Packing
//===----------------------------------------------------------------------===//

/// A per-thread scratch buffer, cache-line aligned, that only grows.
class PackBuffer {
public:
  float *reserve(int64_t floats) {
    if (floats > capacity_) {
      data_.reset(static_cast<float *>(::operator new(
          floats * sizeof(float), std::align_val_t(kAlignment))));
      capacity_ = floats;
    }
    return data_.get();
  }

private:
  static constexpr size_t kAlignment = 64;
  struct AlignedDelete {
    void operator()(float *p) const {
      ::operator delete(p, std::align_val_t(kAlignment));
    }
  };
  std::unique_ptr<float, AlignedDelete> data_;
  int64_t capacity_ = 0;
};

struct GemmOperands {
  int64_t k;
  const float *a;
  int64_t lda;
  const float *b;
  int64_t ldb;
  GemmLayout bLayout;
  const QuantizedWeight *quantized; // B instead of `b` when set (Panels)
  float *c;
  int64_t ldc;
  bool accumulate; // into C's values rather than over them
  const GemmEpilogue &epilogue;
  detail::EpilogueRunner finish; // null when the epilogue is empty

  /// Runs the epilogue on C[row:row+rows, col:col+cols] once its sums are
  /// complete.
  void finishTile(int64_t row, int64_t rows, int64_t col, int64_t cols) const {
    if (finish)
      finish(epilogue, c + row * ldc + col, ldc, row, rows, col, cols);
  }

  /// B[p][j] of a packed B; the strip of columns from j lies in one panel
  /// when j is a multiple of the strip width, which divides the panels'.
  const float *panelAt(int64_t p, int64_t j) const {
    return b + j / kWeightPanelWidth * ldb + p * kWeightPanelWidth +
           j % kWeightPanelWidth;
  }

  /// The same for a quantized B: the strip of its values from row p and
  /// column j on.
  detail::QuantizedStrip quantizedStripAt(int64_t p, int64_t j) const {
    const QuantizedWeight &w = *quantized;
    const int64_t panel = j / kWeightPanelWidth, lane = j % kWeightPanelWidth;
    const int64_t group = panel * w.scalesLd + p / w.groupSize * kWeightPanelWidth + lane;
    return {w.format,
            w.values + panel * w.ld + p * panelRowBytes(w.format),
            lane,
            w.scales + group,
            w.zeroPoints ? w.zeroPoints + group : nullptr,
            w.groupSize,
            w.groupSize - p % w.groupSize};
  }
};

/// packed[p * stride + r] = rows[r * ld + p] for r < count, p < depth: lays
/// `count` rows out side by side, one column after another.
void transposeRows(const float *rows, int64_t ld, int64_t count, int64_t depth,
                   int64_t stride, float *packed) {
  using F = Vec<4>::F;
  int64_t r = 0;
  // Four rows at a time: four sequential read streams and adjacent stores
  // run several times faster than one row at a time, and four columns of
  // them go through registers as a 4×4 transpose.
  for (; r + 4 <= count; r += 4) {
    const float *row0 = rows + r * ld, *row1 = row0 + ld, *row2 = row1 + ld,
                *row3 = row2 + ld;
    float *column = packed + r;
    int64_t p = 0;
    for (; p + 4 <= depth; p += 4, column += 4 * stride) {
      F block[4] = {load<4>(row0 + p), load<4>(row1 + p), load<4>(row2 + p),
                    load<4>(row3 + p)};
      transposeStep<4, 2>(block);
      for (int i = 0; i < 4; ++i)
        store<4>(column + i * stride, block[i]);
    }
    for (; p < depth; ++p, column += stride) {
      column[0] = row0[p];
      column[1] = row1[p];
      column[2] = row2[p];
      column[3] = row3[p];
    }
  }
  for (; r < count; ++r)
    for (int64_t p = 0; p < depth; ++p)
      packed[p * stride + r] = rows[r * ld + p];
}

/// Zeroes lanes [used, stride) of each of the `depth` steps of a packed strip.
/// The microkernel computes those lanes but never stores them; zeros keep
/// stale buffer contents, which may be denormals that stall FMAs on some
/// CPUs, out of the arithmetic.
void zeroUnusedLanes(int64_t used, int64_t stride, int64_t depth,
                     float *packed) {
  if (used < stride)
    for (int64_t p = 0; p < depth; ++p)
      std::fill(packed + p * stride + used, packed + (p + 1) * stride, 0.0f);
}

/// Packs B[p0:p0+kc, j0:j0+nc] as consecutive kc×nr strips, each row by row.
void packBPanel(const detail::GemmMicrokernel &kernel, const GemmOperands &g,
                int64_t p0, int64_t kc, int64_t j0, int64_t nc, float *packed) {
  const int64_t nr = kernel.nr;
  for (int64_t js = 0; js < nc; js += nr, packed += kc * nr) {
    const int64_t width = std::min(nr, nc - js);
    if (g.quantized) {
      // The strip lies in one panel, whose lanes past n are zeros.
      kernel.dequantize(g.quantizedStripAt(p0, j0 + js), kc, nr, packed);
      continue;
    }
    if (g.bLayout == GemmLayout::Transposed) {
      // Stored n×k: the strip's columns are rows in memory.
      transposeRows(g.b + (j0 + js) * g.ldb + p0, g.ldb, width, kc, nr, packed);
    } else {
      const float *rows = g.b + p0 * g.ldb + j0 + js;
      for (int64_t p = 0; p < kc; ++p)
        std::memcpy(packed + p * nr, rows + p * g.ldb, width * sizeof(float));
    }
    zeroUnusedLanes(width, nr, kc, packed);
  }
}

/// Packs A[i0:i0+rows, p0:p0+kc] as consecutive mr×kc strips, each column by
/// column.
void packABlock(const GemmOperands &g, int64_t i0, int64_t rows, int64_t p0,
                int64_t kc, int64_t mr, float *packed) {
  for (int64_t is = 0; is < rows; is += mr, packed += mr * kc) {
    const int64_t height = std::min(mr, rows - is);
    transposeRows(g.a + (i0 + is) * g.lda + p0, g.lda, height, kc, mr, packed);
    zeroUnusedLanes(height, mr, kc, packed);
  }
}

//===----------------------------------------------------------------------===//
// Blocking and threading
//===----------------------------------------------------------------------===//

/// Computes C[rowBegin:rowEnd, colBegin:colEnd].
void computeTile(const detail::GemmMicrokernel &kernel, const GemmOperands &g,
                 int64_t rowBegin, int64_t rowEnd, int64_t colBegin,
                 int64_t colEnd) {
  const int64_t mr = kernel.mr, nr = kernel.nr;
  const int64_t kc = std::min(kernel.kc, g.k);
  // Whole strips, so that the packed block and panel fit their buffers.
  const int64_t mc = ceilDiv(std::min(kernel.mc, rowEnd - rowBegin), mr) * mr;
  const int64_t nc = ceilDiv(std::min(kernel.nc, colEnd - colBegin), nr) * nr;
  // A packed f32 B is read in place; other layouts (and quantized values)
  // are packed panel by panel.
  const bool prepacked = g.bLayout == GemmLayout::Panels && !g.quantized;
  thread_local PackBuffer aBlockBuffer, bPanelBuffer;
  float *aBlock = aBlockBuffer.reserve(mc * kc);
  float *bPanel = prepacked ? nullptr : bPanelBuffer.reserve(kc * nc);

  for (int64_t p0 = 0; p0 < g.k; p0 += kc) {
    const int64_t depth = std::min(kc, g.k - p0);
    // The first block of k overwrites C unless asked to add to it; later
    // ones add to it. After the last, each tile is complete.
    const bool accumulate = p0 > 0 || g.accumulate;
    const bool last = p0 + depth == g.k;
    for (int64_t i0 = rowBegin; i0 < rowEnd; i0 += mc) {
      const int64_t blockRows = std::min(mc, rowEnd - i0);
      packABlock(g, i0, blockRows, p0, depth, mr, aBlock);
      for (int64_t j0 = colBegin; j0 < colEnd; j0 += nc) {
        const int64_t panelCols = std::min(nc, colEnd - j0);
        if (!prepacked)
          packBPanel(kernel, g, p0, depth, j0, panelCols, bPanel);
        for (int64_t is = 0; is < blockRows; is += mr)
          for (int64_t js = 0; js < panelCols; js += nr) {
            const int64_t rows = std::min(mr, blockRows - is);
            const int64_t cols = std::min(nr, panelCols - js);
            const float *strip =
                prepacked ? g.panelAt(p0, j0 + js) : bPanel + js * depth;
            kernel.run(depth, aBlock + is * depth, strip,
                       prepacked ? kWeightPanelWidth : nr,
                       g.c + (i0 + is) * g.ldc + j0 + js, g.ldc, rows, cols,
                       accumulate);
            if (last)
              g.finishTile(i0 + is, rows, j0 + js, cols);
          }
      }
    }
  }
}

/// C = (accumulate ? C : 0) + A·B, then the epilogue, for m <=
/// kStreamedRows and B not transposed: one strip of directCols columns at a
/// time, each strip through every group of kDirectRows rows while it is in
/// L2, so that B streams from memory once, in the order it is stored.
/// Strips are split over the pool when the product is big enough by either
/// count: its multiply-adds, or the bytes of B it streams (a decode step's
/// products are few multiply-adds on many bytes).
void directGemm(const detail::GemmMicrokernel &kernel, const GemmOperands &g,
                int64_t m, int64_t n, ThreadPool *pool) {
  const int64_t strips = ceilDiv(n, kernel.directCols);
  // Each strip is read a piece of the packed kernel's kc rows at a time,
  // each piece through every group of rows while in L2 (a whole strip of a
  // deep B, Llama's down projection with K = 8192, is 2 MB), its sums added
  // to C's: the packed kernel's blocks of k, so that both sum a row in the
  // same order (batch invariance).
  const int64_t depth = kernel.kc;
  // A piece outgrows L1, so a second group of rows reads it again from L2
  // while no read from memory is under way. Where the microkernel says so,
  // the groups instead take turns over slices of kTurnDepth rows of a
  // piece, which stay in L1, each group carrying its sums from slice to
  // slice, so that the next slice's reads follow soon after the last.
  const bool takesTurns = !g.quantized && m > detail::kDirectRows &&
                          m <= kernel.mostRowsTakingTurns;
  const int64_t slice = takesTurns ? detail::kTurnDepth : depth;
  auto run = [&](int64_t begin, int64_t end) {
    // A direct product has at most kStreamedRows rows, and a strip at
    // most a panel's columns.
    alignas(64) float carried[detail::kStreamedRows * kWeightPanelWidth];
    for (int64_t strip = begin; strip < end; ++strip) {
      const int64_t j = strip * kernel.directCols;
      const int64_t cols = std::min(kernel.directCols, n - j);
      const bool panels = g.bLayout == GemmLayout::Panels;
      const float *b = panels && !g.quantized ? g.panelAt(0, j) : g.b + j;
      const int64_t ldb = panels ? kWeightPanelWidth : g.ldb;
      for (int64_t p = 0; p < g.k; p += depth) {
        const int64_t pieceDepth = std::min(depth, g.k - p);
        for (int64_t s = 0; s < pieceDepth; s += slice) {
          const int64_t sliceDepth = std::min(slice, pieceDepth - s);
          for (int64_t i = 0; i < m; i += detail::kDirectRows) {
            const detail::DirectProduct product{
                sliceDepth, g.a + i * g.lda + p + s, g.lda, g.c + i * g.ldc + j,
                g.ldc, std::min(detail::kDirectRows, m - i), cols,
                g.accumulate || p > 0};
            // Each group of rows converts a quantized strip's values again,
            // in registers: converting a piece once into a buffer in L2 and
            // running the f32 kernel on it measured slower at 8 rows and
            // no faster at 32 (kiln-gemm-bench, 8192 x 8192, int8).
            if (g.quantized)
              kernel.runDirectQuantized(product, g.quantizedStripAt(p, j));
            else
              kernel.runDirect(product, b + (p + s) * ldb, ldb,
                               takesTurns ? detail::CarriedSums{carried + i * kernel.directCols,
                                                                s > 0, s + sliceDepth == pieceDepth}
                                          : detail::CarriedSums{});
          }
        }
      }
      g.finishTile(0, m, j, cols);
    }
  };
  // A 4-bit weight counts as int8: unpacking its values, not reading them,
  // bounds its products, which take about as long per value as int8's
  // (kiln-gemm-bench). Counted by its bytes, a 1024×1024 product would run
  // on one thread.
  const double streamedBytes =
      static_cast<double>(g.k) * n * (g.quantized ? sizeof(int8_t) : sizeof(float));
  detail::splitStripsOverThreads(pool, strips, static_cast<double>(m) * n * g.k,
                                 streamedBytes, run);
}

/// [0, length) cut into `parts` ranges of whole `unit`-long strips (the last
/// strip may be short), as even as possible.
struct Split {
  int64_t length;
  int64_t unit;
  int64_t parts;

  int64_t strips() const { return ceilDiv(length, unit); }
  int64_t begin(int64_t part) const {
    return std::min(length, part * strips() / parts * unit);
  }
  int64_t end(int64_t part) const { return begin(part + 1); }
  int64_t largest() const { return ceilDiv(strips(), parts) * unit; }
};

struct TileGrid {
  Split rows;
  Split cols;

  int64_t tiles() const { return rows.parts * cols.parts; }
};

/// One tile of C per thread (fewer threads when C has too few strips). Picks
/// the grid whose largest tile, which every thread waits for, is smallest,
/// then the one that packs least: each tile packs its own rows of A and
/// columns of B, so tile height plus width.
TileGrid chooseTileGrid(int64_t m, int64_t n, int64_t mr, int64_t nr,
                        int threads) {
  for (int t = threads; t > 1; --t) {
    bool found = false;
    TileGrid best{{m, mr, 1}, {n, nr, 1}};
    std::pair<int64_t, int64_t> bestCost;
    for (int rowParts = 1; rowParts <= t; ++rowParts) {
      if (t % rowParts != 0)
        continue;
      const TileGrid grid{{m, mr, rowParts}, {n, nr, t / rowParts}};
      if (grid.rows.parts > grid.rows.strips() ||
          grid.cols.parts > grid.cols.strips())
        continue;
      const std::pair<int64_t, int64_t> cost{
          grid.rows.largest() * grid.cols.largest(),
          grid.rows.largest() + grid.cols.largest()};
      if (!found || cost < bestCost) {
        found = true;
        best = grid;
        bestCost = cost;
      }
    }
    if (found)
      return best;
  }
  return {{m, mr, 1}, {n, nr, 1}};
}

/// Waking a sleeping worker takes microseconds (a futex wake and a reschedule;
/// about 20 µs on a 2-core VM), the time AVX-512 takes for ~1M multiply-adds.
/// Below this much work per thread, another thread costs more than it saves.
/// (A late worker costs little: the caller takes any chunk not yet claimed.)
/// Measured on the bench/ models at 2 threads: 256K per thread made whole
/// runs 10-30% slower than 1 thread; 2M makes them break even.
constexpr double kMinMultiplyAddsPerThread = 2048 * 1024;

/// The same waking cost in bytes read from memory: about 20 µs of one
/// thread's stream at 25 GB/s.
constexpr double kMinStreamedBytesPerThread = 512 * 1024;

} // namespace

void detail::splitStripsOverThreads(ThreadPool *pool, int64_t strips,
                                    double multiplyAdds, double streamedBytes,
                                    const std::function<void(int64_t, int64_t)> &run) {
  const int64_t threads = std::min<int64_t>(
      std::max(threadsWorthUsing(pool, multiplyAdds),
               threadsWorthStreaming(pool, streamedBytes)),
      strips);
  if (threads <= 1) {
    run(0, strips);
    return;
  }
  pool->parallelFor(threads, [&](int64_t begin, int64_t end) {
    run(begin * strips / threads, end * strips / threads);
  });
}

int threadsWorthStreaming(ThreadPool *pool, double streamedBytes) {
  if (!pool)
    return 1;
  return static_cast<int>(std::clamp(streamedBytes / kMinStreamedBytesPerThread,
                                     1.0, static_cast<double>(pool->size())));
}

int threadsWorthUsing(ThreadPool *pool, double multiplyAdds) {
  if (!pool)
    return 1;
  return static_cast<int>(std::clamp(multiplyAdds / kMinMultiplyAddsPerThread,
                                     1.0, static_cast<double>(pool->size())));
}

GemmIsa detectGemmIsa() {
  const GemmIsa supported = cpuGemmIsa();
  const char *forced = std::getenv("KILN_ISA");
  if (!forced || !*forced)
    return supported;
  for (GemmIsa isa : kAllIsas)
    if (std::strcmp(forced, gemmIsaName(isa)) == 0)
      return std::min(isa, supported);
  static std::atomic<bool> warned{false};
  if (!warned.exchange(true))
    std::fprintf(
        stderr,
        "kiln: ignoring KILN_ISA=%s (expected avx512, avx2 or generic)\n",
        forced);
  return supported;
}

const char *gemmIsaName(GemmIsa isa) {
  switch (isa) {
  case GemmIsa::Avx512:
    return "avx512";
  case GemmIsa::Avx2:
    return "avx2";
  case GemmIsa::Generic:
    break;
  }
  return "generic";
}

const char *gemmLayoutName(GemmLayout layout) {
  switch (layout) {
  case GemmLayout::Transposed:
    return "n x k";
  case GemmLayout::Panels:
    return "panels";
  case GemmLayout::RowMajor:
    break;
  }
  return "k x n";
}

GemmIsa activeGemmIsa() {
  return activeIsaSlot().load(std::memory_order_relaxed);
}

void setGemmIsa(GemmIsa isa) {
  activeIsaSlot().store(std::min(isa, detectGemmIsa()),
                        std::memory_order_relaxed);
}

namespace {

/// C = A·B (+ C with g.accumulate), then the epilogue, on the ISA that `isa`
/// names.
void runGemm(GemmIsa isa, const GemmOperands &g, int64_t m, int64_t n,
             ThreadPool *pool) {
  if (m <= 0 || n <= 0)
    return;
  if (g.k <= 0) {
    if (!g.accumulate)
      for (int64_t i = 0; i < m; ++i)
        std::fill(g.c + i * g.ldc, g.c + i * g.ldc + n, 0.0f);
    g.finishTile(0, m, 0, n);
    return;
  }
  const detail::GemmMicrokernel &kernel = microkernelFor(isa);
  if (g.bLayout != GemmLayout::Transposed && m <= detail::kStreamedRows) {
    directGemm(kernel, g, m, n, pool);
    return;
  }
  const TileGrid grid =
      chooseTileGrid(m, n, kernel.mr, kernel.nr,
                     threadsWorthUsing(pool, static_cast<double>(m) * n * g.k));
  if (grid.tiles() == 1) {
    computeTile(kernel, g, 0, m, 0, n);
    return;
  }
  pool->parallelFor(grid.tiles(), [&](int64_t begin, int64_t end) {
    for (int64_t tile = begin; tile < end; ++tile) {
      const int64_t rowPart = tile / grid.cols.parts;
      const int64_t colPart = tile % grid.cols.parts;
      computeTile(kernel, g, grid.rows.begin(rowPart), grid.rows.end(rowPart),
                  grid.cols.begin(colPart), grid.cols.end(colPart));
    }
  });
}

} // namespace

void sgemm(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
           const float *b, int64_t ldb, GemmLayout bLayout, float *c,
           int64_t ldc, ThreadPool *pool, bool accumulate,
           const GemmEpilogue &epilogue) {
  const GemmIsa isa = activeGemmIsa();
  runGemm(isa,
          {k, a, lda, b, ldb, bLayout, nullptr, c, ldc, accumulate, epilogue,
           detail::epilogueRunnerFor(isa, epilogue)},
          m, n, pool);
}

void sgemmQuantizedWeight(int64_t m, int64_t n, int64_t k, const float *a,
                          int64_t lda, const QuantizedWeight &b, float *c,
                          int64_t ldc, ThreadPool *pool,
                          const GemmEpilogue &epilogue) {
  const GemmIsa isa = activeGemmIsa();
  runGemm(isa,
          {k, a, lda, nullptr, 0, GemmLayout::Panels, &b, c, ldc,
           /*accumulate=*/false, epilogue, detail::epilogueRunnerFor(isa, epilogue)},
          m, n, pool);
}

} // namespace kiln::rt

// Runtime.cpp: ends the run in progress with `message`.
extern "C" void kiln_rt_trap(const char *message);

namespace {

/// kiln_ukernel_linear's product, on parameters it has checked.
void runLinear(const kiln_linear_params_t &p) {
  using namespace kiln::rt;
  const bool quantized =
      p.weight_dtype == KILN_WEIGHT_I8 || p.weight_dtype == KILN_WEIGHT_U4;
  const bool quantizedInput = p.weight_dtype == KILN_WEIGHT_I8_ROW_QUADS;
  const bool staticInput = p.input_quantization == KILN_INPUT_U8_STATIC;
  const GemmEpilogue epilogue{p.bias,     static_cast<GemmActivation>(p.activation),
                              p.gate,     p.ldg,
                              p.residual, p.ldr};
  if (quantizedInput) {
    const Int8Weight weight{static_cast<const int8_t *>(p.weight), p.weight_stride,
                            p.scales, p.scales_stride, p.column_sums};
    const InputQuantization input =
        staticInput ? InputQuantization::fixed(static_cast<float>(p.input_scale),
                                               static_cast<int32_t>(p.input_zero_point))
        : p.input_quantization == KILN_INPUT_U8_DYNAMIC_TENSOR
            ? InputQuantization::tensorRange()
            : InputQuantization::perRowRange();
    gemmInt8(p.m, p.n, p.k, p.a, p.lda, input, weight, p.out, p.ldc,
             currentThreadPool(), epilogue);
    return;
  }
  if (quantized) {
    const QuantizedWeight weight{static_cast<QuantizedFormat>(p.weight_dtype),
                                 static_cast<const uint8_t *>(p.weight),
                                 p.weight_stride,
                                 p.scales,
                                 p.zero_points,
                                 p.scales_stride,
                                 p.group_size};
    sgemmQuantizedWeight(p.m, p.n, p.k, p.a, p.lda, weight, p.out, p.ldc,
                         currentThreadPool(), epilogue);
    return;
  }
  sgemm(p.m, p.n, p.k, p.a, p.lda, static_cast<const float *>(p.weight),
        p.weight_stride, static_cast<GemmLayout>(p.weight_layout), p.out, p.ldc,
        currentThreadPool(), /*accumulate=*/false, epilogue);
}

} // namespace

extern "C" void kiln_ukernel_linear(const kiln_linear_params_t *params) {
  using namespace kiln::rt;
  const kiln_linear_params_t &p = *params;
  // Before anything with a destructor exists: the trap jumps over this frame.
  if (p.activation < static_cast<int64_t>(GemmActivation::None) ||
      p.activation > static_cast<int64_t>(GemmActivation::Silu))
    kiln_rt_trap("kiln_ukernel_linear: unknown activation code (the code was "
                 "compiled for a newer runtime)");
  if (p.weight_layout < static_cast<int64_t>(GemmLayout::RowMajor) ||
      p.weight_layout > static_cast<int64_t>(GemmLayout::Panels))
    kiln_rt_trap("kiln_ukernel_linear: unknown weight layout code (the code "
                 "was compiled for a newer runtime)");
  const bool quantized =
      p.weight_dtype == KILN_WEIGHT_I8 || p.weight_dtype == KILN_WEIGHT_U4;
  const bool quantizedInput = p.weight_dtype == KILN_WEIGHT_I8_ROW_QUADS;
  if (!quantized && !quantizedInput && p.weight_dtype != KILN_WEIGHT_F32)
    kiln_rt_trap("kiln_ukernel_linear: unknown weight dtype (the code was "
                 "compiled for a newer runtime)");
  if (p.input_quantization != KILN_INPUT_F32 &&
      p.input_quantization != KILN_INPUT_U8_DYNAMIC_ROWS &&
      p.input_quantization != KILN_INPUT_U8_STATIC &&
      p.input_quantization != KILN_INPUT_U8_DYNAMIC_TENSOR)
    kiln_rt_trap("kiln_ukernel_linear: unknown input quantization (the code "
                 "was compiled for a newer runtime)");
  if (quantizedInput != (p.input_quantization != KILN_INPUT_F32))
    kiln_rt_trap("kiln_ukernel_linear: an input is quantized exactly when "
                 "the weight is int8 in row quads");
  if (quantizedInput &&
      (p.weight_layout != static_cast<int64_t>(GemmLayout::Panels) ||
       p.k % kInt8RowQuad != 0 || p.k > kMaxInt8Depth || p.group_size < p.k ||
       !p.column_sums || p.zero_points))
    kiln_rt_trap("kiln_ukernel_linear: an int8 weight in row quads must be "
                 "packed in panels, with k a multiple of 4 and at most 65536, "
                 "one scale per column, column sums and no zero points");
  const bool staticInput = p.input_quantization == KILN_INPUT_U8_STATIC;
  if (staticInput && (!(p.input_scale > 0.0 && p.input_scale <= FLT_MAX) ||
                      p.input_zero_point < 0 || p.input_zero_point > 255))
    kiln_rt_trap("kiln_ukernel_linear: a static input quantization needs a "
                 "finite positive scale and a zero point in [0, 255]");
  if (quantized && (p.weight_layout != static_cast<int64_t>(GemmLayout::Panels) ||
                    p.group_size <= 0 ||
                    (p.weight_dtype == KILN_WEIGHT_U4) != (p.zero_points != nullptr)))
    kiln_rt_trap("kiln_ukernel_linear: a quantized weight must be packed in "
                 "panels with a positive group size, and have zero points "
                 "exactly when it is 4-bit");
  observeLinear(p, /*after=*/false);
  runLinear(p);
  observeLinear(p, /*after=*/true);
}

extern "C" void kiln_ukernel_sgemm(int64_t batch, int64_t m, int64_t n,
                                   int64_t k, const float *a,
                                   int64_t a_batch_stride, int64_t lda,
                                   const float *b, int64_t b_batch_stride,
                                   int64_t ldb, int64_t transpose_b, float *c,
                                   int64_t c_batch_stride, int64_t ldc,
                                   int64_t accumulate) {
  using namespace kiln::rt;
  ThreadPool *pool = currentThreadPool();
  auto multiply = [&](int64_t i, ThreadPool *innerPool) {
    sgemm(m, n, k, a + i * a_batch_stride, lda, b + i * b_batch_stride, ldb,
          transpose_b != 0 ? GemmLayout::Transposed : GemmLayout::RowMajor,
          c + i * c_batch_stride, ldc, innerPool, accumulate != 0);
  };
  const bool worthSplitting =
      threadsWorthUsing(pool, static_cast<double>(batch) * m * n * k) > 1;
  if (worthSplitting && batch >= pool->size()) {
    pool->parallelFor(batch, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        multiply(i, nullptr);
    });
    return;
  }
  for (int64_t i = 0; i < batch; ++i)
    multiply(i, pool);
}
