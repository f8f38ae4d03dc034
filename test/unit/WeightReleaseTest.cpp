//===- WeightReleaseTest.cpp - Packed weights give their originals back ---===//
//
// A model's weights must be in kilnc's memory once, not twice: when
// kiln-pack-weights replaces a weight by its packed copy, the bytes the
// importer took from the parsed model are freed. A weight something else
// still reads keeps its bytes. The packed copy lives in kilnc's scratch
// file, out of its memory except while something reads it.
//
//===----------------------------------------------------------------------===//
#include "compiler/Importer/ImportContext.h"
#include "dialects/Kiln/IR/KilnOps.h"
#include "passes/Passes.h"
#include "passes/WeightBlobs.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <deque>
#include <fstream>
#include <vector>

namespace {

/// A [k, n] f32 initializer holding its values as raw data.
onnx::TensorProto rawWeight(const std::string &name, int64_t k, int64_t n) {
  onnx::TensorProto tensor;
  tensor.set_name(name);
  tensor.set_data_type(onnx::TensorProto::FLOAT);
  tensor.add_dims(k);
  tensor.add_dims(n);
  std::vector<float> values(k * n);
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = static_cast<float>(i % 7);
  tensor.set_raw_data(values.data(), values.size() * sizeof(float));
  return tensor;
}

class WeightReleaseTest : public ::testing::Test {
protected:
  void SetUp() override { kiln::registerImporterDialects(context_); }

  /// A weight for the next kiln.constant of `packWeights`' IR.
  onnx::TensorProto &addWeight(const std::string &name, int64_t k = 64, int64_t n = 64) {
    return weights_.emplace_back(rawWeight(name, k, n));
  }

  /// Parses `ir`, gives its kiln.constants, in order, the values loaded from
  /// the added weights as the importer loads initializers, and runs the pass.
  void packWeights(const char *ir) {
    // As for an importer's model: the blobs view the tensors' bytes, which
    // `keepAlive` stands for owning.
    kiln::WeightLoader loader(".", /*keepAlive=*/std::make_shared<int>(0),
                              /*inlineLimit=*/16);
    module_ = mlir::parseSourceString<mlir::ModuleOp>(ir, &context_);
    ASSERT_TRUE(module_);
    size_t next = 0;
    module_->walk([&](kiln::ConstantOp constant) {
      ASSERT_LT(next, weights_.size());
      std::string error;
      auto value = loader.loadReleasable(weights_[next++], &context_, error);
      ASSERT_TRUE(mlir::succeeded(value)) << error;
      ASSERT_TRUE(mlir::isa<mlir::DenseResourceElementsAttr>(*value));
      constant.setValueAttr(*value);
    });
    mlir::PassManager pm(&context_);
    pm.addPass(kiln::createKilnPackWeights());
    ASSERT_TRUE(mlir::succeeded(pm.run(*module_)));
  }

  // The weights outlive the context, whose blobs free their bytes when it
  // goes.
  std::deque<onnx::TensorProto> weights_;
  mlir::MLIRContext context_;
  mlir::OwningOpRef<mlir::ModuleOp> module_;
};

TEST_F(WeightReleaseTest, PackedWeightFreesTheModelsCopy) {
  onnx::TensorProto &weight = addWeight("w");
  packWeights(R"mlir(
    func.func @f(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
      %w = kiln.constant dense<0.0> : tensor<64x64xf32>
      %y = kiln.matmul %x, %w : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
      return %y : tensor<?x64xf32>
    })mlir");
  int packed = 0;
  module_->walk([&](kiln::LinearOp linear) { packed += linear.getPacked(); });
  EXPECT_EQ(packed, 1);
  EXPECT_TRUE(weight.raw_data().empty());
  EXPECT_EQ(weight.raw_data().capacity(), std::string().capacity());
}

TEST_F(WeightReleaseTest, WeightStillReadKeepsItsBytes) {
  // `w` is packed for its product but a gather also reads it, so it is left
  // alone; `v` is packed and freed.
  onnx::TensorProto &tied = addWeight("w");
  onnx::TensorProto &other = addWeight("v");
  packWeights(R"mlir(
    func.func @f(%ids: tensor<?xi64>, %x: tensor<?x64xf32>) -> (tensor<?x64xf32>, tensor<?x64xf32>) {
      %w = kiln.constant dense<0.0> : tensor<64x64xf32>
      %v = kiln.constant dense<0.0> : tensor<64x64xf32>
      %e = kiln.gather %w[%ids] {axis = 0 : i64} : (tensor<64x64xf32>, tensor<?xi64>) -> tensor<?x64xf32>
      %h = kiln.matmul %x, %w : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
      %y = kiln.matmul %h, %v : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
      return %e, %y : tensor<?x64xf32>, tensor<?x64xf32>
    })mlir");
  EXPECT_EQ(tied.raw_data(), rawWeight("w", 64, 64).raw_data());
  EXPECT_TRUE(other.raw_data().empty());
}

/// How many bytes of the mapping that holds `address` are resident in this
/// process, from /proc/self/smaps; -1 when no mapping holds it.
int64_t residentBytes(const void *address) {
  std::ifstream smaps("/proc/self/smaps");
  auto target = reinterpret_cast<uintptr_t>(address);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    // A mapping's first line is its address range, BEGIN-END in hex; the
    // lines after it are its fields.
    unsigned long begin, end;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &begin, &end) == 2) {
      inside = begin <= target && target < end;
      continue;
    }
    long kilobytes;
    if (inside && std::sscanf(line.c_str(), "Rss: %ld kB", &kilobytes) == 1)
      return kilobytes * 1024;
  }
  return -1;
}

TEST_F(WeightReleaseTest, PackedWeightIsOutOfMemoryUntilRead) {
  constexpr int64_t k = 256, n = 256;
  addWeight("w", k, n);
  packWeights(R"mlir(
    func.func @f(%x: tensor<?x256xf32>) -> tensor<?x256xf32> {
      %w = kiln.constant dense<0.0> : tensor<256x256xf32>
      %y = kiln.matmul %x, %w : (tensor<?x256xf32>, tensor<256x256xf32>) -> tensor<?x256xf32>
      return %y : tensor<?x256xf32>
    })mlir");
  std::vector<kiln::ConstantOp> constants;
  module_->walk([&](kiln::ConstantOp constant) { constants.push_back(constant); });
  ASSERT_EQ(constants.size(), 1u);
  auto packed = mlir::cast<mlir::DenseResourceElementsAttr>(constants[0].getValue());
  mlir::ArrayRef<char> bytes = packed.getRawHandle().getBlob()->getData();
  ASSERT_EQ(bytes.size(), k * n * sizeof(float));
  EXPECT_EQ(residentBytes(bytes.data()), 0);

  // Read back, the panels hold the weight's columns, 64 to a panel, row by
  // row; the pages are mapped while read, and gone once dropped.
  const auto *values = reinterpret_cast<const float *>(bytes.data());
  constexpr int64_t width = kiln::LinearOp::kPanelWidth;
  for (int64_t panel = 0; panel < n / width; ++panel)
    for (int64_t row = 0; row < k; ++row)
      for (int64_t column = 0; column < width; ++column)
        ASSERT_EQ(values[(panel * k + row) * width + column],
                  static_cast<float>((row * n + panel * width + column) % 7))
            << "panel " << panel << ", row " << row << ", column " << column;
  EXPECT_EQ(residentBytes(bytes.data()), static_cast<int64_t>(bytes.size()));
  kiln::dropScratchPages(bytes);
  EXPECT_EQ(residentBytes(bytes.data()), 0);
}

} // namespace
