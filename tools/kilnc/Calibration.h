//===- Calibration.h - Running a model to quantize it and to judge it -----===//
//
// `kilnc --calibration DIR` runs the model it compiles. Static W8A8
// (`--quantize=int8`) needs the range each product's input takes; every
// quantized build can be judged against f32 on the same inputs. Both run
// artifacts in this process with the runtime, and watch the products
// through a linear observer (kiln_session_set_linear_observer), which names
// each product by its weight: weights keep their ONNX initializer's name
// through every compile (ArtifactWeight::name), so a product of the f32
// build and its quantized twin are matched by name.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_TOOLS_KILNC_CALIBRATION_H
#define KILN_TOOLS_KILNC_CALIBRATION_H

#include "tools/common/TensorFile.h"

#include "llvm/Support/JSON.h"

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kiln::calibration {

/// One calibration input set: a tensor for every input of the model.
struct InputSet {
  std::string path; ///< the set's directory, for messages
  std::map<std::string, tools::HostTensor> tensors; ///< by input name
};

/// Reads DIR: one subdirectory per set (in name order), each holding one
/// file per model input named after it (`/` written as `_`), `.npy` or
/// ONNX `.pb`. Which inputs the model has is checked when a set is bound.
bool readInputSets(const std::string &dir, std::vector<InputSet> &sets,
                   std::string &error);

/// How an input's range is chosen from the values calibration saw.
struct RangeMethod {
  /// Percentile: the central `percentile` % of the values (a histogram of
  /// 2048 bins over their whole range, in a second pass); else min-max.
  bool percentile = false;
  double percentileValue = 99.99;
};

/// The range [lo, hi] that each weight's products' inputs took, by weight
/// name.
using InputRanges = std::map<std::string, std::pair<float, float>>;

/// A compiled artifact on disk and its weights' names (manifest order).
struct CompiledArtifact {
  std::string path;
  std::vector<std::string> weightNames;
};

/// Runs the f32 artifact on every set and returns, for each product with a
/// weight of the model, the range of its input.
bool calibrateInputRanges(const CompiledArtifact &f32, const std::vector<InputSet> &sets,
                          const RangeMethod &method, InputRanges &ranges,
                          std::string &error);

/// How far a quantized build is from the f32 build on the calibration sets.
struct AccuracyReport {
  struct Product {
    std::string weight;
    /// ‖Q − F‖ / ‖F‖ over every call: Q the quantized product of an input
    /// (without its epilogue), F the f32 product of the same input.
    double relativeRmsError = 0;
    int64_t rows = 0; ///< the rows of input it was measured on
  };
  struct Output {
    std::string name;
    /// max |q − f| / max |f| (the largest over the sets), and
    /// Σ|q − f| / Σ|f| over every set.
    double maxRelativeError = 0, meanRelativeError = 0;
  };
  int64_t sets = 0;
  /// Positions of the first output (the logits) whose argmax over its last
  /// axis agrees, out of `positions`.
  int64_t positions = 0, top1Agreements = 0;
  std::vector<Output> outputs;   ///< the f32 outputs, in manifest order
  std::vector<Product> products; ///< the quantized products, worst first

  double top1Agreement() const {
    return positions ? double(top1Agreements) / double(positions) : 1.0;
  }
  llvm::json::Object toJson() const;
};

/// Runs both artifacts on every set and compares them: each quantized
/// product against its f32 weight on the same input, and the outputs.
bool measureAccuracy(const CompiledArtifact &f32, const CompiledArtifact &quantized,
                     const std::vector<InputSet> &sets, AccuracyReport &report,
                     std::string &error);

/// `--accuracy-budget`: bounds a quantized build must keep, from
/// "top1>=0.99,max-rel<=0.05,mean-rel<=0.01" (any of them).
struct AccuracyBudget {
  /// A bound, and its number as written (for messages).
  struct Bound {
    double value = 0;
    std::string text;
  };
  std::optional<Bound> minTop1, maxRelative, meanRelative;

  bool parse(const std::string &text, std::string &error);
  /// What `report` exceeds, naming the worst products; "" when within.
  std::string violation(const AccuracyReport &report) const;
};

} // namespace kiln::calibration

#endif // KILN_TOOLS_KILNC_CALIBRATION_H
