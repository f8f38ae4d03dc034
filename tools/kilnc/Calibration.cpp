//===- Calibration.cpp - Running a model to quantize it and to judge it ---===//
#include "tools/kilnc/Calibration.h"

#include "kiln/abi/kernel_abi.h"
#include "kiln/runtime.hpp"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace kiln::calibration {
namespace {

/// The file name (without extension) that holds input `name` in a set.
std::string fileStem(std::string name) {
  std::replace(name.begin(), name.end(), '/', '_');
  return name;
}

/// Binds `set` to every input of `model`; every file must name an input.
bool bindSet(Session &session, const Model &model, const InputSet &set,
             std::string &error) {
  std::vector<std::string> stems;
  for (int32_t i = 0; i < model.inputCount(); ++i) {
    const std::string name = model.input(i).name;
    stems.push_back(fileStem(name));
    auto tensor = set.tensors.find(stems.back());
    if (tensor == set.tensors.end()) {
      error = "calibration set '" + set.path + "' has no file for input '" + name +
              "' (" + stems.back() + ".npy)";
      return false;
    }
    try {
      session.bindInput(i, tensor->second.dtype, tensor->second.shape,
                        tensor->second.data.data(), tensor->second.data.size());
    } catch (const Error &e) {
      error = "calibration set '" + set.path + "': " + e.what();
      return false;
    }
  }
  for (const auto &entry : set.tensors)
    if (std::find(stems.begin(), stems.end(), entry.first) == stems.end()) {
      error = "calibration set '" + set.path + "' has a file '" + entry.first +
              "', which names no input of the model";
      return false;
    }
  return true;
}

/// Runs `session` on `set`, turning a runtime error into `error`.
bool runSet(Session &session, const Model &model, const InputSet &set,
            std::string &error) {
  if (!bindSet(session, model, set, error))
    return false;
  try {
    session.run();
  } catch (const Error &e) {
    error = "running calibration set '" + set.path + "': " + e.what();
    return false;
  }
  return true;
}

/// Calls `visit` with each element of a product's input A (m rows of k,
/// lda apart).
template <typename Visit>
void forEachInput(const kiln_linear_params_t &p, Visit visit) {
  for (int64_t i = 0; i < p.m; ++i) {
    const float *row = p.a + i * p.lda;
    for (int64_t j = 0; j < p.k; ++j)
      visit(row[j]);
  }
}

/// The name of the product's weight, or null where the observer saw a
/// weight the model does not name (one computed at run time: -1).
const std::string *weightNameAt(const std::vector<std::string> &names, int32_t index) {
  return index >= 0 && index < static_cast<int32_t>(names.size()) ? &names[index] : nullptr;
}

constexpr int64_t kHistogramBins = 2048;

/// What calibration saw of one weight's products' inputs.
struct InputStatistics {
  float lo = std::numeric_limits<float>::infinity();
  float hi = -std::numeric_limits<float>::infinity();
  int64_t nonFinite = 0;
  std::vector<int64_t> histogram; ///< kHistogramBins over [lo, hi], pass 2

  int64_t bin(float value) const {
    if (!(hi > lo))
      return 0;
    const double position = (double(value) - lo) / (double(hi) - lo) * kHistogramBins;
    return std::clamp<int64_t>(static_cast<int64_t>(position), 0, kHistogramBins - 1);
  }
};

/// The observer of calibration runs: the first pass takes each input's
/// min and max, the second (percentile only) its histogram.
struct RangeObserver {
  const std::vector<std::string> *weightNames;
  std::map<std::string, InputStatistics> statistics;
  bool histogramPass = false;

  static void observe(void *self, const kiln_linear_params_s *params,
                      int32_t weightIndex, int32_t after) {
    auto &observer = *static_cast<RangeObserver *>(self);
    const std::string *name = weightNameAt(*observer.weightNames, weightIndex);
    if (after || !name)
      return;
    InputStatistics &stats = observer.statistics[*name];
    if (!observer.histogramPass) {
      forEachInput(*params, [&](float x) {
        if (!std::isfinite(x)) {
          ++stats.nonFinite;
          return;
        }
        stats.lo = std::min(stats.lo, x);
        stats.hi = std::max(stats.hi, x);
      });
      return;
    }
    stats.histogram.resize(kHistogramBins);
    forEachInput(*params, [&](float x) {
      if (std::isfinite(x))
        ++stats.histogram[stats.bin(x)];
    });
  }
};

/// The central `percent` % of the values counted in `stats.histogram`, by
/// bin edges.
std::pair<float, float> centralRange(const InputStatistics &stats, double percent) {
  int64_t total = 0;
  for (int64_t count : stats.histogram)
    total += count;
  const double tail = double(total) * (100.0 - percent) / 200.0;
  const double width = (double(stats.hi) - stats.lo) / kHistogramBins;
  int64_t low = 0, seen = 0;
  while (low < kHistogramBins - 1 && double(seen + stats.histogram[low]) <= tail)
    seen += stats.histogram[low++];
  int64_t high = kHistogramBins - 1;
  seen = 0;
  while (high > low && double(seen + stats.histogram[high]) <= tail)
    seen += stats.histogram[high--];
  return {static_cast<float>(stats.lo + low * width),
          static_cast<float>(stats.lo + (high + 1) * width)};
}

/// Where a product's f32 weight lies in the f32 build (one of its calls).
struct ReferenceWeight {
  const void *weight = nullptr;
  int64_t stride = 0, layout = 0, k = 0, n = 0;
};

/// What accuracy measurement has summed for one quantized product.
struct ProductError {
  double squaredError = 0, squaredReference = 0;
  int64_t rows = 0;
};

/// The observer of the accuracy runs, of both sessions. On the f32 build it
/// records where each weight lies; on the quantized build, before each
/// quantized product, it computes that product of the same input both
/// ways, without the epilogue (which only adds what both builds share),
/// into its own memory.
struct AccuracyObserver {
  const std::vector<std::string> *f32Names = nullptr, *quantizedNames = nullptr;
  std::map<std::string, ReferenceWeight> references;
  std::map<std::string, ProductError> errors;
  std::string missing; ///< a quantized product with no f32 twin
  std::vector<float> quantizedOut, referenceOut;

  static void recordReference(void *self, const kiln_linear_params_s *params,
                              int32_t weightIndex, int32_t after) {
    auto &observer = *static_cast<AccuracyObserver *>(self);
    const std::string *name = weightNameAt(*observer.f32Names, weightIndex);
    if (after || !name || params->weight_dtype != KILN_WEIGHT_F32)
      return;
    observer.references[*name] = {
        params->weight, params->weight_stride, params->weight_layout, params->k,
        params->n};
  }

  static void compareProduct(void *self, const kiln_linear_params_s *params,
                             int32_t weightIndex, int32_t after) {
    auto &observer = *static_cast<AccuracyObserver *>(self);
    const std::string *weight = weightNameAt(*observer.quantizedNames, weightIndex);
    if (after || !weight || params->weight_dtype == KILN_WEIGHT_F32)
      return;
    const std::string &name = *weight;
    auto reference = observer.references.find(name);
    if (reference == observer.references.end() || reference->second.k != params->k ||
        reference->second.n != params->n) {
      observer.missing = name;
      return;
    }
    const size_t size = static_cast<size_t>(params->m * params->n);
    observer.quantizedOut.resize(size);
    observer.referenceOut.resize(size);
    kiln_linear_params_t product = *params;
    product.bias = nullptr;
    product.activation = 0;
    product.gate = nullptr;
    product.ldg = 0;
    product.residual = nullptr;
    product.ldr = 0;
    product.out = observer.quantizedOut.data();
    product.ldc = params->n;
    kiln_ukernel_linear(&product);
    kiln_linear_params_t f32 = product;
    f32.weight = reference->second.weight;
    f32.weight_stride = reference->second.stride;
    f32.weight_layout = reference->second.layout;
    f32.weight_dtype = KILN_WEIGHT_F32;
    f32.scales = nullptr;
    f32.zero_points = nullptr;
    f32.column_sums = nullptr;
    f32.scales_stride = 0;
    f32.group_size = 0;
    f32.input_quantization = KILN_INPUT_F32;
    f32.input_scale = 0;
    f32.input_zero_point = 0;
    f32.out = observer.referenceOut.data();
    kiln_ukernel_linear(&f32);
    ProductError &error = observer.errors[name];
    for (size_t i = 0; i < size; ++i) {
      const double difference = double(observer.quantizedOut[i]) - observer.referenceOut[i];
      error.squaredError += difference * difference;
      error.squaredReference += double(observer.referenceOut[i]) * observer.referenceOut[i];
    }
    error.rows += params->m;
  }
};

/// Sets `session`'s observer, turning a runtime error into an exception.
void observe(Session &session, kiln_linear_observer_t observer, void *userData) {
  check(kiln_session_set_linear_observer(session.get(), observer, userData));
}

/// Compares output `index` of the two sessions into `report`.
void compareOutput(const kiln_tensor_t &f32, const kiln_tensor_t &quantized,
                   size_t index, AccuracyReport &report,
                   std::vector<std::pair<double, double>> &meanSums) {
  const auto *f = static_cast<const float *>(f32.data);
  const auto *q = static_cast<const float *>(quantized.data);
  const size_t count = f32.byte_size / sizeof(float);
  double maxDifference = 0, maxReference = 0;
  for (size_t i = 0; i < count; ++i) {
    const double difference = std::fabs(double(q[i]) - f[i]);
    maxDifference = std::max(maxDifference, difference);
    maxReference = std::max(maxReference, std::fabs(double(f[i])));
    meanSums[index].first += difference;
    meanSums[index].second += std::fabs(double(f[i]));
  }
  AccuracyReport::Output &output = report.outputs[index];
  if (maxReference > 0)
    output.maxRelativeError = std::max(output.maxRelativeError, maxDifference / maxReference);
  if (index != 0 || f32.rank < 1 || f32.shape[f32.rank - 1] < 2)
    return;
  // Top-1 over the first output's last axis: the next token's choice.
  const int64_t classes = f32.shape[f32.rank - 1];
  for (size_t row = 0; row + classes <= count; row += classes) {
    const float *fRow = f + row, *qRow = q + row;
    report.top1Agreements += std::max_element(fRow, fRow + classes) - fRow ==
                             std::max_element(qRow, qRow + classes) - qRow;
    ++report.positions;
  }
}

} // namespace

bool readInputSets(const std::string &dir, std::vector<InputSet> &sets,
                   std::string &error) {
  std::error_code ec;
  std::vector<std::string> setDirs;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec;
       it.increment(ec))
    if (llvm::sys::fs::is_directory(it->path()))
      setDirs.push_back(it->path());
  if (ec) {
    error = "--calibration " + dir + ": " + ec.message();
    return false;
  }
  if (setDirs.empty()) {
    error = "--calibration " + dir +
            ": no input sets (one subdirectory per set, with NAME.npy per input)";
    return false;
  }
  std::sort(setDirs.begin(), setDirs.end());
  for (const std::string &setDir : setDirs) {
    InputSet set;
    set.path = setDir;
    for (llvm::sys::fs::directory_iterator it(setDir, ec), end; it != end && !ec;
         it.increment(ec)) {
      llvm::StringRef extension = llvm::sys::path::extension(it->path());
      if (extension != ".npy" && extension != ".pb")
        continue;
      tools::HostTensor tensor;
      if (!tools::readTensorFile(it->path(), tensor, error))
        return false;
      if (!set.tensors.emplace(llvm::sys::path::stem(it->path()).str(), std::move(tensor))
               .second) {
        error = "calibration set '" + setDir + "' has two files for '" +
                llvm::sys::path::stem(it->path()).str() + "'";
        return false;
      }
    }
    if (ec) {
      error = "--calibration " + setDir + ": " + ec.message();
      return false;
    }
    sets.push_back(std::move(set));
  }
  return true;
}

bool calibrateInputRanges(const CompiledArtifact &f32, const std::vector<InputSet> &sets,
                          const RangeMethod &method, InputRanges &ranges,
                          std::string &error) {
  try {
    Instance instance;
    Model model(instance, f32.path);
    Session session(model);
    RangeObserver observer{&f32.weightNames, {}, false};
    observe(session, &RangeObserver::observe, &observer);
    for (int pass = 0; pass < (method.percentile ? 2 : 1); ++pass) {
      observer.histogramPass = pass == 1;
      for (const InputSet &set : sets)
        if (!runSet(session, model, set, error))
          return false;
    }
    for (const auto &[name, stats] : observer.statistics) {
      if (stats.nonFinite) {
        error = "calibration: the input of the products of weight '" + name + "' took " +
                std::to_string(stats.nonFinite) + " non-finite values";
        return false;
      }
      if (stats.lo > stats.hi) // only empty inputs: nothing to calibrate on
        continue;
      ranges[name] = method.percentile ? centralRange(stats, method.percentileValue)
                                       : std::make_pair(stats.lo, stats.hi);
    }
  } catch (const Error &e) {
    error = "calibration: " + std::string(e.what());
    return false;
  }
  return true;
}

bool measureAccuracy(const CompiledArtifact &f32, const CompiledArtifact &quantized,
                     const std::vector<InputSet> &sets, AccuracyReport &report,
                     std::string &error) {
  try {
    Instance instance;
    Model f32Model(instance, f32.path), quantizedModel(instance, quantized.path);
    Session f32Session(f32Model), quantizedSession(quantizedModel);
    AccuracyObserver observer;
    observer.f32Names = &f32.weightNames;
    observer.quantizedNames = &quantized.weightNames;
    observe(f32Session, &AccuracyObserver::recordReference, &observer);
    observe(quantizedSession, &AccuracyObserver::compareProduct, &observer);
    for (int32_t i = 0; i < f32Model.outputCount(); ++i)
      report.outputs.push_back({f32Model.output(i).name});
    std::vector<std::pair<double, double>> meanSums(report.outputs.size());
    for (const InputSet &set : sets) {
      if (!runSet(f32Session, f32Model, set, error))
        return false;
      if (!runSet(quantizedSession, quantizedModel, set, error))
        return false;
      if (!observer.missing.empty()) {
        error = "accuracy: the quantized product of weight '" + observer.missing +
                "' has no f32 product of the same shape to be compared with";
        return false;
      }
      for (size_t i = 0; i < report.outputs.size(); ++i) {
        const kiln_tensor_t f = f32Session.output(i), q = quantizedSession.output(i);
        if (f.dtype != KILN_DTYPE_F32 || q.dtype != KILN_DTYPE_F32 ||
            f.byte_size != q.byte_size)
          continue;
        compareOutput(f, q, i, report, meanSums);
      }
      ++report.sets;
    }
    for (size_t i = 0; i < report.outputs.size(); ++i)
      if (meanSums[i].second > 0)
        report.outputs[i].meanRelativeError = meanSums[i].first / meanSums[i].second;
    for (const auto &[name, sums] : observer.errors)
      report.products.push_back(
          {name, sums.squaredReference > 0 ? std::sqrt(sums.squaredError / sums.squaredReference)
                                           : 0.0,
           sums.rows});
    std::stable_sort(report.products.begin(), report.products.end(),
                     [](const auto &a, const auto &b) {
                       return a.relativeRmsError > b.relativeRmsError;
                     });
  } catch (const Error &e) {
    error = "accuracy: " + std::string(e.what());
    return false;
  }
  return true;
}

llvm::json::Object AccuracyReport::toJson() const {
  llvm::json::Array outputArray, productArray;
  for (const Output &output : outputs)
    outputArray.push_back(llvm::json::Object{
        {"name", output.name},
        {"max_relative_error", output.maxRelativeError},
        {"mean_relative_error", output.meanRelativeError}});
  for (const Product &product : products)
    productArray.push_back(llvm::json::Object{{"weight", product.weight},
                                              {"relative_rms_error", product.relativeRmsError},
                                              {"rows", product.rows}});
  return llvm::json::Object{{"sets", sets},
                            {"positions", positions},
                            {"top1_agreement", top1Agreement()},
                            {"outputs", std::move(outputArray)},
                            {"products", std::move(productArray)}};
}

bool AccuracyBudget::parse(const std::string &text, std::string &error) {
  llvm::SmallVector<llvm::StringRef> bounds;
  llvm::StringRef(text).split(bounds, ',', -1, /*KeepEmpty=*/false);
  if (bounds.empty()) {
    error = "--accuracy-budget is empty";
    return false;
  }
  for (llvm::StringRef bound : bounds) {
    bound = bound.trim();
    double value = 0;
    auto read = [&](llvm::StringRef prefix, std::optional<Bound> &into) {
      if (!bound.starts_with(prefix))
        return false;
      llvm::StringRef number = bound.drop_front(prefix.size()).trim();
      if (number.getAsDouble(value) || !(value >= 0)) {
        error = "--accuracy-budget " + bound.str() + ": expected a number >= 0";
        return true;
      }
      into = Bound{value, number.str()};
      return true;
    };
    error.clear();
    if (!read("top1>=", minTop1) && !read("max-rel<=", maxRelative) &&
        !read("mean-rel<=", meanRelative)) {
      error = "--accuracy-budget " + bound.str() +
              ": expected top1>=X, max-rel<=X or mean-rel<=X";
      return false;
    }
    if (!error.empty())
      return false;
  }
  return true;
}

std::string AccuracyBudget::violation(const AccuracyReport &report) const {
  std::string exceeded;
  auto add = [&](const std::string &what) {
    exceeded += (exceeded.empty() ? "" : "; ") + what;
  };
  if (minTop1 && !report.positions)
    add("the budget bounds top-1 agreement, but the first output holds no "
        "f32 scores over a last axis to agree on");
  else if (minTop1 && report.top1Agreement() < minTop1->value)
    add(llvm::formatv("top-1 agreement with f32 is {0:F4} over {1} positions, "
                      "below the budget's {2}",
                      report.top1Agreement(), report.positions, minTop1->text)
            .str());
  for (const AccuracyReport::Output &output : report.outputs) {
    if (maxRelative && output.maxRelativeError > maxRelative->value)
      add(llvm::formatv("output '{0}' max relative error {1:E2} exceeds {2}", output.name,
                        output.maxRelativeError, maxRelative->text)
              .str());
    if (meanRelative && output.meanRelativeError > meanRelative->value)
      add(llvm::formatv("output '{0}' mean relative error {1:E2} exceeds {2}", output.name,
                        output.meanRelativeError, meanRelative->text)
              .str());
  }
  if (exceeded.empty())
    return "";
  std::string worst;
  for (size_t i = 0; i < std::min<size_t>(3, report.products.size()); ++i)
    worst += llvm::formatv("{0}'{1}' {2:E2}", i ? ", " : "", report.products[i].weight,
                           report.products[i].relativeRmsError)
                 .str();
  if (!worst.empty())
    exceeded += "; the products with the largest error against f32 (relative RMS): " + worst;
  return exceeded;
}

} // namespace kiln::calibration
