//===- ImporterErrorsTest.cpp - Every error path of the ONNX importer -----===//
//
// Each test feeds the importer one defect and checks that it fails (null
// module, no crash) with a message naming the stage and the culprit.
//
//===----------------------------------------------------------------------===//
#include "compiler/Importer/OnnxImporter.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <onnx/defs/parser.h>

#include <fstream>

namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class ImporterErrorsTest : public ::testing::Test {
protected:
  void SetUp() override {
    llvm::SmallString<128> dir;
    ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("kiln-importer-test", dir));
    dir_ = std::string(dir);
  }
  void TearDown() override { llvm::sys::fs::remove_directories(dir_); }

  std::string path(const std::string &name) const { return dir_ + "/" + name; }

  static onnx::ModelProto parse(const char *text) {
    onnx::ModelProto model;
    auto status = onnx::OnnxParser::Parse(model, text);
    EXPECT_TRUE(status.IsOK()) << status.ErrorMessage();
    return model;
  }

  std::string writeFile(const std::string &name, const std::string &bytes) {
    std::ofstream out(path(name), std::ios::binary);
    out << bytes;
    return path(name);
  }

  std::string writeModel(const std::string &name, const onnx::ModelProto &model) {
    return writeFile(name, model.SerializeAsString());
  }

  /// Imports `file`, expects failure, and returns the message.
  std::string importError(const std::string &file) {
    mlir::MLIRContext context;
    std::string error;
    auto module = kiln::importOnnxFile(context, file, kiln::ImportOptions(), error);
    EXPECT_FALSE(module) << "the import of " << file << " should have failed";
    EXPECT_FALSE(error.empty());
    return error;
  }

  std::string textError(const char *text) {
    mlir::MLIRContext context;
    std::string error;
    kiln::ImportOptions options;
    options.format = kiln::OnnxInputFormat::Text;
    auto module = kiln::importOnnxBuffer(context, text, "model.onnxtxt", dir_,
                                         options, error);
    EXPECT_FALSE(module) << "the import should have failed";
    return error;
  }

  std::string modelError(const onnx::ModelProto &model) {
    return importError(writeModel("model.onnx", model));
  }

  /// Like modelError, with onnx::checker off, so that the importer's own
  /// check meets a defect the checker would also refuse (or cannot judge).
  std::string uncheckedModelError(const onnx::ModelProto &model) {
    mlir::MLIRContext context;
    std::string error;
    kiln::ImportOptions options;
    options.runChecker = false;
    EXPECT_FALSE(kiln::importOnnxFile(context, writeModel("model.onnx", model), options, error))
        << "the import should have failed";
    return error;
  }

  std::string dir_;
};

constexpr const char *kMatMulModel = R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 4] x) => (float[2, 4] y) <float[4, 4] w = {1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0}> {
  y = MatMul(x, w)
}
)";

TEST_F(ImporterErrorsTest, MissingFile) {
  std::string error = importError(path("absent.onnx"));
  EXPECT_THAT(error, HasSubstr("absent.onnx: cannot read"));
}

TEST_F(ImporterErrorsTest, NotOnnx) {
  std::string error = importError(writeFile("garbage.onnx", "\xff\xff\xff this is no protobuf"));
  EXPECT_THAT(error, HasSubstr("garbage.onnx: not a valid ONNX model"));
}

TEST_F(ImporterErrorsTest, TruncatedFile) {
  std::string bytes = parse(kMatMulModel).SerializeAsString();
  // Cut inside the weight's raw bytes, the last field written.
  std::string error = importError(writeFile("truncated.onnx", bytes.substr(0, bytes.size() - 10)));
  EXPECT_THAT(error, HasSubstr("truncated.onnx: not a valid ONNX model"));
}

TEST_F(ImporterErrorsTest, EmptyFile) {
  std::string error = importError(writeFile("empty.onnx", ""));
  EXPECT_THAT(error, HasSubstr("it has no graph"));
}

TEST_F(ImporterErrorsTest, TextSyntaxError) {
  std::string error = textError("<ir_version: 8> g (float[2] x) => (float[2] y) { y = Relu(x ");
  EXPECT_THAT(error, HasSubstr("model.onnxtxt: cannot parse ONNX text"));
}

// Found by the importer's fuzzer: an initializer whose dims promise more
// than its data holds crashed ONNX shape inference, which reads it; kiln
// checks every tensor first.
TEST_F(ImporterErrorsTest, InitializerDimsOverflow) {
  onnx::ModelProto model = parse(kMatMulModel);
  model.mutable_graph()->mutable_initializer(0)->set_dims(0, INT64_MAX);
  std::string error = modelError(model);
  EXPECT_THAT(error, HasSubstr("invalid model: initializer 'w' has dims "
                               "[9223372036854775807, 4]: a dim is negative or their "
                               "product is out of range"));
}

TEST_F(ImporterErrorsTest, InitializerHoldsLessThanItsDims) {
  onnx::ModelProto model = parse(kMatMulModel);
  onnx::TensorProto *w = model.mutable_graph()->mutable_initializer(0);
  w->set_dims(0, 8);
  std::string error = modelError(model);
  EXPECT_THAT(error, HasSubstr("invalid model: initializer 'w' holds 16 values of type "
                               "FLOAT but its shape needs 32"));
}

// Found by the importer's fuzzer: without the checker, a node reading a
// value nothing produces crashed ONNX shape inference. Unchecked models
// skip it, and the import names the missing value.
TEST_F(ImporterErrorsTest, UncheckedUndefinedInput) {
  std::string error = uncheckedModelError(parse(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2] x) => (float[2] y) { t = Relu(x) y = Add(t, nowhere) }
)"));
  EXPECT_THAT(error, HasSubstr("input 'nowhere' is not produced by any earlier node"));
}

TEST_F(ImporterErrorsTest, ConstantOfShapeOfAScalar) {
  // Found by the fuzzer: a 0-D computed shape was read as a list (an
  // out-of-range ArrayRef index, a UBSan report).
  std::string error = uncheckedModelError(parse(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (int64 s) => (float[?] y) { y = ConstantOfShape(s) }
)"));
  EXPECT_THAT(error, HasSubstr("shape must be a 1-D tensor of known length, got 'tensor<i64>'"));
}

TEST_F(ImporterErrorsTest, InputDimsPastTheElementBound) {
  // Found by the fuzzer: a Flatten multiplied dims of INT64_MAX (signed
  // overflow, a UBSan report). Static shapes are bounded at 2^48 elements.
  std::string error = uncheckedModelError(parse(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[9223372036854775807, 9223372036854775807] x) => (float[?, ?] y) { y = Flatten(x) }
)"));
  EXPECT_THAT(error, HasSubstr("graph input 'x' has dims of more than 2^48 elements"));
}

TEST_F(ImporterErrorsTest, PadsPastTheElementBound) {
  std::string error = uncheckedModelError(parse(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 3] x) => (float[?, ?] y) {
  p = Constant <value = int64[4] {0, 9223372036854775807, 0, 9223372036854775807}> ()
  y = Pad(x, p)
}
)"));
  EXPECT_THAT(error, HasSubstr("do not fit dim 1 of size 3"));
}

TEST_F(ImporterErrorsTest, TopKWithOneOutputNamed) {
  // Found by the fuzzer: the indices' type was looked up by a name the node
  // does not have (a heap overflow in the protobuf). Unchecked, such a node
  // imports: nothing reads the indices.
  onnx::ModelProto model = parse(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 8] x) => (float[2, 3] v) {
  k = Constant <value = int64[1] {3}> ()
  v, i = TopK (x, k)
}
)");
  model.mutable_graph()->mutable_node(1)->mutable_output()->RemoveLast();
  mlir::MLIRContext context;
  std::string error;
  kiln::ImportOptions options;
  options.runChecker = false;
  EXPECT_TRUE(kiln::importOnnxFile(context, writeModel("model.onnx", model), options, error))
      << error;
}

TEST_F(ImporterErrorsTest, CheckerRejectsUndefinedInput) {
  std::string error = textError(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2] x) => (float[2] y) { y = Add(x, nowhere) }
)");
  EXPECT_THAT(error, HasSubstr("ONNX checker"));
  EXPECT_THAT(error, HasSubstr("nowhere"));
}

TEST_F(ImporterErrorsTest, OpsetTooNew) {
  onnx::ModelProto model = parse(kMatMulModel);
  model.mutable_opset_import(0)->set_version(22);
  std::string error = uncheckedModelError(model);
  EXPECT_THAT(error, HasSubstr("unsupported opset: the model uses opset 22"));
  EXPECT_THAT(error, HasSubstr("kiln supports opsets up to 21"));
}

TEST_F(ImporterErrorsTest, OpOlderThanItsMeaning) {
  // Softmax before opset 13 flattens its input to 2-D at `axis`; kiln reads
  // the newer meaning only, and names the op and both opsets.
  std::string error = textError(R"(
<ir_version: 7, opset_import: ["" : 11]>
g (float[2, 3] x) => (float[2, 3] y, float[2, 3] r) { y = Softmax(x)  r = Relu(x) }
)");
  EXPECT_THAT(error, HasSubstr("op 'Softmax' (opset 11): kiln reads Softmax from opset 13 on"));
  EXPECT_THAT(error, Not(HasSubstr("Relu")));
}

TEST_F(ImporterErrorsTest, NoDefaultDomain) {
  onnx::ModelProto model = parse(kMatMulModel);
  model.mutable_opset_import(0)->set_domain("com.example");
  model.mutable_opset_import(0)->set_version(1);
  model.mutable_graph()->mutable_node(0)->set_domain("com.example");
  std::string error = uncheckedModelError(model);
  EXPECT_THAT(error, HasSubstr("imports no opset of the default ONNX domain"));
}

TEST_F(ImporterErrorsTest, ListsEveryUnsupportedOp) {
  std::string error = textError(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1, 3, 8, 8] x, float[8, 1, 4] s) => (float[1, 3, 8, 8] y, float[1, 3, 8, 8] z, float[1, 3, 4, 4] p) {
  y = LRN <size = 3> (x)
  z = Relu(y)
  p = MaxPool <kernel_shape = [2, 2], strides = [2, 2]> (z)
}
)");
  EXPECT_THAT(error, HasSubstr("unsupported operators: 2 unsupported operators:"));
  EXPECT_THAT(error, HasSubstr("output 'y'>: op 'LRN' (opset 17)"));
  EXPECT_THAT(error, HasSubstr("output 'p'>: op 'MaxPool' (opset 17)"));
  EXPECT_THAT(error, ::testing::Not(HasSubstr("Relu")));
}

TEST_F(ImporterErrorsTest, UnsupportedOpIsNamedByNodeName) {
  onnx::ModelProto model = parse(kMatMulModel);
  auto *node = model.mutable_graph()->mutable_node(0);
  node->set_name("/encoder/layer.0/FusedMatMul");
  node->set_op_type("FusedMatMul");
  node->set_domain("com.microsoft");
  auto *opset = model.add_opset_import();
  opset->set_domain("com.microsoft");
  opset->set_version(1);
  std::string error = uncheckedModelError(model);
  EXPECT_THAT(error, HasSubstr("node '/encoder/layer.0/FusedMatMul': op "
                               "'com.microsoft.FusedMatMul' (opset 1)"));
}

TEST_F(ImporterErrorsTest, AttributeOfWrongKind) {
  onnx::ModelProto model = parse(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 3] x) => (float[2, 3] y) { y = Softmax <axis = 1> (x) }
)");
  auto *attr = model.mutable_graph()->mutable_node(0)->mutable_attribute(0);
  attr->set_type(onnx::AttributeProto::FLOAT);
  attr->clear_i();
  attr->set_f(1.5f);
  std::string error = uncheckedModelError(model);
  EXPECT_THAT(error, HasSubstr("Softmax: attribute 'axis' must be INT, got FLOAT"));
}

TEST_F(ImporterErrorsTest, AxisOutOfRange) {
  std::string error = textError(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 3] x) => (float[2, 3] y) { y = Softmax <axis = 5> (x) }
)");
  EXPECT_THAT(error, HasSubstr("Softmax: axis 5 is out of range for rank 2"));
}

TEST_F(ImporterErrorsTest, PermutationOfWrongLength) {
  std::string error = textError(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 3] x) => (float[3, 2] y) { y = Transpose <perm = [1, 0, 2]> (x) }
)");
  EXPECT_THAT(error, HasSubstr("attribute 'perm' has 3 entries but the input has rank 2"));
}

TEST_F(ImporterErrorsTest, UnsupportedElementType) {
  std::string error = textError(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (complex64[4] x) => (complex64[4] y) { y = Identity(x) }
)");
  EXPECT_THAT(error, HasSubstr("graph input 'x' has unsupported element type COMPLEX64"));
}

TEST_F(ImporterErrorsTest, CastToUnsupportedType) {
  std::string error = textError(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[4] x) => (string[4] y) { y = Cast <to = 8> (x) }
)");
  EXPECT_THAT(error, HasSubstr("Cast: cannot cast to unsupported type STRING"));
}

TEST_F(ImporterErrorsTest, InputWithoutShape) {
  onnx::ModelProto model = parse(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[4] x) => (float[4] y) { y = Relu(x) }
)");
  model.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->clear_shape();
  std::string error = uncheckedModelError(model);
  EXPECT_THAT(error, HasSubstr("graph input 'x' has no known rank"));
}

// Found by the importer's fuzzer: a Split without outputs divided its
// axis by zero parts. Unchecked, since the checker refuses it first.
TEST_F(ImporterErrorsTest, SplitWithoutOutputs) {
  onnx::ModelProto model = parse(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 4] x) => (float[2, 4] y) { a, b = Split <axis = 1> (x) y = Identity(x) }
)");
  model.mutable_graph()->mutable_node(0)->clear_output();
  std::string error = uncheckedModelError(model);
  EXPECT_THAT(error, HasSubstr("Split: needs at least one output"));
}

// Found by the importer's fuzzer: a shape input declared int64[2^31] made
// Expand build a result type of that rank (16 GB).
TEST_F(ImporterErrorsTest, ListOperandTooLong) {
  std::string error = uncheckedModelError(parse(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2] x, int64[2147483647] s) => (float[a] y) { y = Expand(x, s) }
)"));
  EXPECT_THAT(error, HasSubstr("Expand: the shape input has 2147483647 entries, more than "
                               "the 1024 kiln takes in a list"));
}

TEST_F(ImporterErrorsTest, ComputedPadAxesNeedTwoPadsEach) {
  // Computed axes are built out of other ops (ComputedAxes.h); their count
  // must still match the pads'.
  std::string error = textError(R"(
<ir_version: 8, opset_import: ["" : 18]>
g (float[2, 4] x, int64[3] pads, int64[1] axes) => (float[a, b] y) { y = Pad(x, pads, , axes) }
)");
  EXPECT_THAT(error, HasSubstr("Pad: pads has 3 entries for 1 axes (it needs two per axis)"));
}

TEST_F(ImporterErrorsTest, ComputedAxesNeedAStaticCount) {
  // Their count fixes the result's rank, so it must be static.
  std::string error = textError(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[4] x, int64[n] axes) => (float[1, 4] y) { y = Unsqueeze(x, axes) }
)");
  EXPECT_THAT(error, HasSubstr("Unsqueeze: axes must be a 1-D tensor of known length"));
}

TEST_F(ImporterErrorsTest, LayerNormStashTypeNotFloat) {
  // Unchecked: ONNX shape inference would refuse the int64 Mean first.
  std::string error = uncheckedModelError(parse(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 4] x, float[4] s) => (float[2, 4] y, float[2, 1] m) { y, m = LayerNormalization <stash_type = 7> (x, s) }
)"));
  EXPECT_THAT(error, HasSubstr("LayerNormalization: stash_type must be a float type, got INT64"));
}

TEST_F(ImporterErrorsTest, DropoutInTrainingMode) {
  std::string error = textError(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 4] x) => (float[2, 4] y) {
  ratio = Constant <value = float {0.5}> ()
  mode = Constant <value = bool {1}> ()
  y = Dropout(x, ratio, mode)
}
)");
  EXPECT_THAT(error, HasSubstr("Dropout: training_mode = true"));
}

TEST_F(ImporterErrorsTest, FlattenWithDynamicDimsOnBothSides) {
  std::string error = textError(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[a, b] x) => (float[a, b] y) { y = Flatten <axis = 1> (x) }
)");
  EXPECT_THAT(error, HasSubstr("both sides have dynamic dimensions"));
}

TEST_F(ImporterErrorsTest, UnevenSplit) {
  std::string error = textError(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 5] x) => (float[2, 2] a, float[2, 3] b) { a, b = Split <axis = 1> (x) }
)");
  EXPECT_THAT(error, HasSubstr("Split: axis of size 5 does not split evenly into 2 outputs"));
}

TEST_F(ImporterErrorsTest, VerifierNamesTheNode) {
  onnx::ModelProto model = parse(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 4] x, float[3, 4] w) => (float[2, 4] y) { y = MatMul(x, w) }
)");
  model.mutable_graph()->mutable_node(0)->set_name("proj");
  std::string error = modelError(model);
  EXPECT_THAT(error, HasSubstr("verification of the imported IR"));
  EXPECT_THAT(error, HasSubstr("node 'proj': 'kiln.matmul' op contraction sizes differ"));
}

TEST_F(ImporterErrorsTest, RawDataOfWrongSize) {
  onnx::ModelProto model = parse(kMatMulModel);
  auto *weight = model.mutable_graph()->mutable_initializer(0);
  weight->clear_float_data();
  weight->set_raw_data(std::string(12, '\0'));
  std::string error = uncheckedModelError(model);
  EXPECT_THAT(error, HasSubstr("invalid model: initializer 'w' holds 12 bytes of raw "
                               "data but its type FLOAT and shape need 64"));
}

/// The MatMul model with its weight moved to an external-data file.
onnx::ModelProto withExternalWeight(onnx::ModelProto model, const std::string &location,
                                    const std::string &offset, const std::string &length) {
  auto *weight = model.mutable_graph()->mutable_initializer(0);
  weight->clear_float_data();
  weight->set_data_location(onnx::TensorProto::EXTERNAL);
  auto add = [&](const char *key, const std::string &value) {
    if (value.empty())
      return;
    auto *entry = weight->add_external_data();
    entry->set_key(key);
    entry->set_value(value);
  };
  add("location", location);
  add("offset", offset);
  add("length", length);
  return model;
}

TEST_F(ImporterErrorsTest, ExternalDataLoads) {
  // The good case first, so that the failures below fail for their reason.
  writeFile("weights.bin", std::string(64 + 8, '\0'));
  onnx::ModelProto model = withExternalWeight(parse(kMatMulModel), "weights.bin", "8", "64");
  mlir::MLIRContext context;
  std::string error;
  kiln::ImportOptions options;
  options.inlineConstantLimit = 0;
  auto module = kiln::importOnnxFile(context, writeModel("m.onnx", model), options, error);
  EXPECT_TRUE(module) << error;
}

TEST_F(ImporterErrorsTest, MissingExternalDataFile) {
  onnx::ModelProto model = withExternalWeight(parse(kMatMulModel), "weights.bin", "", "");
  std::string error = uncheckedModelError(model);
  EXPECT_THAT(error, HasSubstr("tensor 'w': cannot open external data file"));
  EXPECT_THAT(error, HasSubstr("weights.bin"));
}

TEST_F(ImporterErrorsTest, ExternalDataPastEndOfFile) {
  writeFile("weights.bin", std::string(32, '\0'));
  onnx::ModelProto model = withExternalWeight(parse(kMatMulModel), "weights.bin", "16", "64");
  std::string error = modelError(model);
  EXPECT_THAT(error, HasSubstr("external data at offset 16 with length 64 runs past the "
                               "end of"));
  EXPECT_THAT(error, HasSubstr("(32 bytes)"));
}

TEST_F(ImporterErrorsTest, ExternalDataOutsideModelDirectory) {
  onnx::ModelProto model = withExternalWeight(parse(kMatMulModel), "../weights.bin", "", "");
  std::string error = uncheckedModelError(model);
  EXPECT_THAT(error, HasSubstr("must be a relative path inside the model's directory"));
}

TEST_F(ImporterErrorsTest, ExternalDataBadOffset) {
  writeFile("weights.bin", std::string(64, '\0'));
  onnx::ModelProto model = withExternalWeight(parse(kMatMulModel), "weights.bin", "12abc", "");
  std::string error = uncheckedModelError(model);
  EXPECT_THAT(error, HasSubstr("external_data field 'offset' is not a number: '12abc'"));
}

} // namespace
