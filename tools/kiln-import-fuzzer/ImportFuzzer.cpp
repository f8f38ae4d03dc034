//===- ImportFuzzer.cpp - libFuzzer target for the ONNX importer ----------===//
//
// Feeds each input to importOnnxBuffer as a binary ModelProto in a fresh
// MLIRContext. The importer must answer every input with a module or an
// error message: a crash, a sanitizer report, a hang or a leak is a bug.
//
// Byte mutations of a protobuf mostly break its framing, so the custom
// mutator also edits parsed models where the importer makes decisions: op
// types, attribute values, tensor dims and data types, input names, the
// opset. Inputs that do not parse get libFuzzer's byte mutations.
//
//===----------------------------------------------------------------------===//
#include "compiler/Importer/OnnxImporter.h"

#include "mlir/IR/MLIRContext.h"

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>

extern "C" size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t maxSize);

namespace {

/// Op types whose importers take the edits below: the supported ops and a
/// few that are not.
constexpr const char *kOpTypes[] = {
    "Add",       "Mul",        "MatMul",  "Gemm",       "Reshape",   "Transpose",
    "Squeeze",   "Unsqueeze",  "Concat",  "Split",      "Slice",     "Gather",
    "Expand",    "Tile",       "Softmax", "LayerNormalization", "ReduceMean",
    "ReduceSum", "Where",      "Cast",    "Trilu",      "Range",     "CumSum",
    "GatherElements", "GatherND", "IsNaN", "IsInf",     "Gelu",      "Shape",
    "ConstantOfShape", "Constant", "Erf", "Pow",        "Flatten",   "Conv",
    "Pad",       "ScatterND",  "ScatterElements", "Einsum", "TopK",  "ArgMax",
    "Mod",       "Sign",       "Round",   "Dropout"};

void mutateModel(onnx::ModelProto &model, std::mt19937 &rng) {
  auto pick = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
  auto anyInt = [&]() {
    constexpr int64_t kValues[] = {-2, -1, 0, 1, 2, 3, 7, 64, INT32_MAX, INT64_MAX, INT64_MIN};
    return kValues[pick(std::size(kValues))];
  };
  onnx::GraphProto *graph = model.mutable_graph();
  switch (pick(7)) {
  case 0: // another op type
    if (graph->node_size())
      graph->mutable_node(pick(graph->node_size()))
          ->set_op_type(kOpTypes[pick(std::size(kOpTypes))]);
    return;
  case 1: { // an attribute's integer
    if (!graph->node_size())
      return;
    onnx::NodeProto *node = graph->mutable_node(pick(graph->node_size()));
    if (!node->attribute_size())
      return;
    onnx::AttributeProto *attr = node->mutable_attribute(pick(node->attribute_size()));
    if (attr->ints_size())
      attr->set_ints(pick(attr->ints_size()), anyInt());
    else
      attr->set_i(anyInt());
    return;
  }
  case 2: { // a graph input's dim or data type
    if (!graph->input_size())
      return;
    auto *tensor = graph->mutable_input(pick(graph->input_size()))
                       ->mutable_type()->mutable_tensor_type();
    if (pick(2) && tensor->shape().dim_size())
      tensor->mutable_shape()->mutable_dim(pick(tensor->shape().dim_size()))
          ->set_dim_value(anyInt());
    else
      tensor->set_elem_type(static_cast<int32_t>(pick(25)));
    return;
  }
  case 3: { // an initializer's dims or data type
    if (!graph->initializer_size())
      return;
    onnx::TensorProto *init = graph->mutable_initializer(pick(graph->initializer_size()));
    if (pick(2) && init->dims_size())
      init->set_dims(pick(init->dims_size()), anyInt());
    else
      init->set_data_type(static_cast<int32_t>(pick(25)));
    return;
  }
  case 4: { // a node reads another value, or none
    if (!graph->node_size())
      return;
    onnx::NodeProto *node = graph->mutable_node(pick(graph->node_size()));
    if (!node->input_size())
      return;
    const onnx::NodeProto &other = graph->node(pick(graph->node_size()));
    node->set_input(pick(node->input_size()),
                    other.output_size() && pick(4) ? other.output(0) : "");
    return;
  }
  case 5: // another opset
    if (model.opset_import_size())
      model.mutable_opset_import(0)->set_version(static_cast<int64_t>(pick(24)));
    return;
  default: // a node goes
    if (graph->node_size())
      graph->mutable_node()->DeleteSubrange(static_cast<int>(pick(graph->node_size())), 1);
    return;
  }
}

} // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t maxSize,
                                          unsigned int seed) {
  onnx::ModelProto model;
  std::mt19937 rng(seed);
  if (seed % 4 == 0 || !model.ParseFromArray(data, static_cast<int>(size)))
    return LLVMFuzzerMutate(data, size, maxSize);
  mutateModel(model, rng);
  std::string bytes;
  if (!model.SerializeToString(&bytes) || bytes.size() > maxSize)
    return LLVMFuzzerMutate(data, size, maxSize);
  std::memcpy(data, bytes.data(), bytes.size());
  return bytes.size();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // With the ONNX checker, and without it (kilnc --skip-onnx-checker), where
  // the importer's own checks meet every malformed node.
  for (bool runChecker : {true, false}) {
    // A fresh context per input: uniqued attributes and weight blobs would
    // otherwise pile up over millions of inputs.
    mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
    kiln::ImportOptions options;
    options.runChecker = runChecker;
    std::string error;
    // External-data paths resolve against a directory that does not exist,
    // so a fuzzed location reads nothing from the machine.
    auto module = kiln::importOnnxBuffer(
        context, llvm::StringRef(reinterpret_cast<const char *>(data), size),
        "fuzz.onnx", "/nonexistent-kiln-fuzz-dir", options, error);
    if (!module && error.empty())
      __builtin_trap(); // a failure must say why
  }
  return 0;
}
