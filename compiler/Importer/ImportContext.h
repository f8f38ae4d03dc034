//===- ImportContext.h - State shared by the op importers -------*- C++ -*-===//
//
// One ImportContext lives while a graph is imported. It maps ONNX value names
// to MLIR values and gives the per-op importers typed access to attributes,
// constant inputs and inferred types, each failing with a diagnostic that
// names the node.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_COMPILER_IMPORTER_IMPORTCONTEXT_H
#define KILN_COMPILER_IMPORTER_IMPORTCONTEXT_H

#include "compiler/Importer/OnnxImporter.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <onnx/onnx_pb.h>

#include <optional>

namespace kiln {

class WeightLoader;

/// Maps an ONNX TensorProto data type to an MLIR element type; null for a
/// type kiln does not support.
mlir::Type convertElementType(mlir::MLIRContext *context, int32_t onnxType);
/// The ONNX name of a TensorProto data type, for diagnostics.
std::string onnxTypeName(int32_t onnxType);

class ImportContext {
public:
  ImportContext(mlir::OpBuilder &builder, llvm::StringRef sourceName,
                WeightLoader &weights, int64_t opset);

  mlir::OpBuilder &builder() { return builder_; }
  mlir::MLIRContext *context() { return builder_.getContext(); }
  WeightLoader &weights() { return weights_; }
  /// The model's opset of the default domain: importers of ops whose
  /// signature changed between opsets read it.
  int64_t opset() const { return opset_; }

  /// Location of `node`: its name (or its first output's) in the model file.
  mlir::Location loc(const onnx::NodeProto &node);
  /// Starts an error about `node`; the diagnostic handler names the node.
  mlir::InFlightDiagnostic error(const onnx::NodeProto &node);

  /// Records the ONNX type of a value, from graph inputs/outputs/value_info.
  void setValueInfo(const onnx::ValueInfoProto &info);
  void bind(llvm::StringRef name, mlir::Value value) { values_[name] = value; }
  mlir::Value lookup(llvm::StringRef name) const { return values_.lookup(name); }

  /// Input `index` of `node`, or null when it is absent or empty.
  mlir::Value input(const onnx::NodeProto &node, int index);
  /// Input `index` of `node`, failing with a diagnostic when absent.
  mlir::FailureOr<mlir::Value> requiredInput(const onnx::NodeProto &node,
                                             int index);
  /// Inputs 0 .. count-1 of `node`, all required.
  mlir::FailureOr<llvm::SmallVector<mlir::Value>>
  requiredInputs(const onnx::NodeProto &node, int count);
  bool hasOutput(const onnx::NodeProto &node, int index) const {
    return index < node.output_size() && !node.output(index).empty();
  }
  /// Whether output `index` of `node` is read: by a node or as a graph
  /// output. Exporters name outputs nothing reads (LayerNormalization's
  /// training statistics).
  bool isOutputUsed(const onnx::NodeProto &node, int index) const {
    return hasOutput(node, index) && usedValues_.count(node.output(index));
  }
  /// Records that the value `name` is read.
  void markUsed(llvm::StringRef name) { usedValues_.insert(name); }
  /// Records that the value `name` (already bound) is a uint8 quantization
  /// held as int8 lowered by 128 (QuantizedOps.cpp). DequantizeLinear,
  /// MatMulInteger and QLinearMatMul read it so, which lets it fold into
  /// an int8 product; any other reader, and the graph's outputs, read the
  /// uint8 value it stands for (bindUint8View).
  void markLoweredUint8(llvm::StringRef name) {
    loweredUint8_[name] = {values_.lookup(name), {}};
  }
  bool isLoweredUint8(llvm::StringRef name) const { return loweredUint8_.count(name); }
  /// Binds `name`, a lowered uint8, to the view its next reader takes: the
  /// int8 that holds it (`lowered`), or the uint8 value, built once at
  /// `loc` as the int8's bits plus 128.
  void bindUint8View(llvm::StringRef name, bool lowered, mlir::Location loc);
  /// The 8-bit `value` as `element` (i8 or ui8) with 128 added, wrapping:
  /// a uint8 as the int8 that holds it lowered by 128, and back.
  mlir::Value flipUint8Offset(mlir::Location loc, mlir::Value value, mlir::Type element);
  void setOutput(const onnx::NodeProto &node, int index, mlir::Value value);

  /// The type of output `index`: `shape` (kDynamic where unknown) refined by
  /// whatever ONNX shape inference knows.
  mlir::RankedTensorType resultType(const onnx::NodeProto &node, int index,
                                    mlir::Type elementType,
                                    llvm::ArrayRef<int64_t> shape);
  /// The NumPy broadcast of the operands' shapes as a tensor of `elementType`.
  mlir::FailureOr<mlir::RankedTensorType>
  broadcastType(const onnx::NodeProto &node, int index, mlir::Type elementType,
                mlir::ValueRange operands);
  /// kiln.matmul of two operands of rank >= 2 (by rhs's transpose with
  /// `transposeB`), their batch dims broadcast as NumPy's matmul does.
  mlir::FailureOr<mlir::Value> matMul(const onnx::NodeProto &node, mlir::Value lhs,
                                      mlir::Value rhs, bool transposeB = false);

  /// Converts an ONNX TypeProto; fails unless it is a ranked tensor of a
  /// supported element type. `what` names the value in the diagnostic.
  mlir::FailureOr<mlir::RankedTensorType>
  convertType(const onnx::TypeProto &type, mlir::Location loc,
              llvm::StringRef what);

  // Attributes. A present attribute of the wrong kind is an error; an absent
  // one yields the default (or nullopt for the optional forms).
  const onnx::AttributeProto *findAttr(const onnx::NodeProto &node,
                                       llvm::StringRef name);
  mlir::FailureOr<int64_t> intAttr(const onnx::NodeProto &node,
                                   llvm::StringRef name, int64_t defaultValue);
  mlir::FailureOr<float> floatAttr(const onnx::NodeProto &node,
                                   llvm::StringRef name, float defaultValue);
  mlir::FailureOr<std::string> stringAttr(const onnx::NodeProto &node,
                                          llvm::StringRef name,
                                          llvm::StringRef defaultValue);
  mlir::FailureOr<std::optional<llvm::SmallVector<int64_t>>>
  intsAttr(const onnx::NodeProto &node, llvm::StringRef name);

  /// The integer values of input `index` when it is a constant; an error
  /// naming `what` and saying `why` kiln needs it at compile time when it is
  /// not.
  mlir::FailureOr<llvm::SmallVector<int64_t>>
  constantInts(const onnx::NodeProto &node, int index, llvm::StringRef what,
               llvm::StringRef why);
  /// A list of integers that ONNX moved from attribute `name` to input
  /// `index` in opset `inputSince` (Squeeze's axes in 13, ReduceMean's in
  /// 18): read from where the model's opset puts it; nullopt when absent.
  mlir::FailureOr<std::optional<llvm::SmallVector<int64_t>>>
  intsAttrOrConstantInput(const onnx::NodeProto &node, int index,
                          llvm::StringRef name, int64_t inputSince,
                          llvm::StringRef why);
  /// The length of `list`, which must be a 1-D tensor of static length (a
  /// shape, or a list of starts); an error naming `what` otherwise.
  mlir::FailureOr<int64_t> staticLength(const onnx::NodeProto &node,
                                        mlir::Value list, llvm::StringRef what);
  /// True when input `index` is present and produced by a kiln.constant.
  bool isConstantInput(const onnx::NodeProto &node, int index);
  /// True when input `index` is present, an input in this model's opset
  /// (it became one in `inputSince`), and not a constant: computed at run
  /// time.
  bool isComputedInput(const onnx::NodeProto &node, int index, int64_t inputSince = 0);

  /// Normalizes `axis` against `rank` (ONNX allows -rank..rank-1).
  mlir::FailureOr<int64_t> normalizeAxis(const onnx::NodeProto &node,
                                         int64_t axis, int64_t rank);
  /// Normalizes, sorts and deduplicates a list of axes.
  mlir::FailureOr<llvm::SmallVector<int64_t>>
  normalizeAxes(const onnx::NodeProto &node, llvm::ArrayRef<int64_t> axes,
                int64_t rank);

  // Small constants the decompositions need.
  mlir::Value i64List(mlir::Location loc, llvm::ArrayRef<int64_t> values);
  mlir::Value scalar(mlir::Location loc, mlir::Type elementType, double value);
  /// The int64 positions 0 .. length-1 laid along `axis` of a tensor of
  /// `rank` whose other dims are 1: what an index along that axis is
  /// compared with to build one-hot rows (OneHot, Hardmax, EyeLike).
  /// `length` is an int64 scalar tensor; `staticLength` its value where
  /// known at compile time.
  mlir::Value positionsAlong(mlir::Location loc, mlir::Value length,
                             std::optional<int64_t> staticLength, int64_t axis,
                             int64_t rank);
  /// positionsAlong for the length of dim `dim` of `tensor`.
  mlir::Value positionsOfDim(mlir::Location loc, mlir::Value tensor, int64_t dim,
                             int64_t axis, int64_t rank);

private:
  mlir::OpBuilder &builder_;
  std::string sourceName_;
  WeightLoader &weights_;
  int64_t opset_;
  llvm::StringMap<mlir::Value> values_;
  llvm::StringSet<> usedValues_;
  struct Uint8Views {
    mlir::Value lowered, restored;
  };
  llvm::StringMap<Uint8Views> loweredUint8_;
  llvm::StringMap<onnx::TypeProto> valueInfo_;
};

/// The most elements a tensor with a static shape may have at import
/// (2^48: 1 PiB of f32). Within it, the sums and products of a node's static
/// sizes cannot overflow int64; past it, a model's dims are a mistake (or a
/// fuzzer's), and are refused by name.
constexpr int64_t kMaxStaticElements = int64_t(1) << 48;

/// The most entries a list operand (a shape, axes, starts, split sizes) may
/// have. A shape's length becomes a rank, and every rank is a type held in
/// memory: an input declared int64[2^31] once made Expand allocate 16 GB.
constexpr int64_t kMaxListLength = 1024;

/// Whether the static dims of `shape` hold at most kMaxStaticElements
/// elements (dynamic dims count as 1).
bool staticElementsFit(llvm::ArrayRef<int64_t> shape);

/// Imports one ONNX node; binds its outputs through ctx.setOutput.
using OpImporter = mlir::LogicalResult (*)(ImportContext &ctx,
                                           const onnx::NodeProto &node);

/// An op importer and the oldest opset whose version of the op it reads:
/// the one from which the op's meaning, for every model the ONNX checker
/// accepts, is what the importer builds. Older versions differ in meaning
/// (Softmax before 13 flattens to 2-D) or in form (Add before 7 broadcasts
/// by attribute), and are refused by name.
struct OpImporterEntry {
  OpImporter importer = nullptr;
  int64_t oldestOpset = 0;
};

/// The op importers by ONNX op type: "Add" in the default domain,
/// "com.microsoft.MatMulNBits" in another, the opset then that domain's.
class OpImporterRegistry {
public:
  OpImporterRegistry();
  void add(llvm::StringRef opType, OpImporter importer, int64_t oldestOpset) {
    importers_[opType] = {importer, oldestOpset};
  }
  /// Null importer when kiln does not know the op; `domain` is "" for the
  /// default one.
  OpImporterEntry lookup(llvm::StringRef domain, llvm::StringRef opType) const {
    return importers_.lookup(domain.empty() ? opType.str()
                                            : (domain + "." + opType).str());
  }

private:
  llvm::StringMap<OpImporterEntry> importers_;
};

// One registration function per op family, each in its own file.
void registerElementwiseImporters(OpImporterRegistry &registry);
void registerMatMulImporters(OpImporterRegistry &registry);
void registerNormalizationImporters(OpImporterRegistry &registry);
void registerQuantizedImporters(OpImporterRegistry &registry);
void registerReductionImporters(OpImporterRegistry &registry);
void registerShapeImporters(OpImporterRegistry &registry);
void registerTensorImporters(OpImporterRegistry &registry);

/// Checks what the ONNX library (1.12) trusts in a tensor without checking:
/// non-negative dims whose product does not overflow, and, for data held in
/// the model, as many values (or raw bytes) as the shape needs. ONNX shape
/// inference reads initializers and Constant values and crashes on one whose
/// dims promise more than it holds. External data is checked when loaded.
/// `name` names the tensor in `error`.
mlir::LogicalResult validateTensor(const onnx::TensorProto &tensor,
                                   llvm::StringRef name, std::string &error);

/// Converts an ONNX tensor (initializer or Constant attribute) to the value
/// of a kiln.constant. Large tensors reference their bytes without copying:
/// `keepAlive` owns those bytes (the parsed model), and external-data files
/// are memory-mapped relative to `baseDir`.
class WeightLoader {
public:
  WeightLoader(std::string baseDir, std::shared_ptr<const void> keepAlive,
               int64_t inlineLimit);
  ~WeightLoader();
  /// Loads `tensor` as an ElementsAttr, called `name` in messages and in
  /// its resource key (the tensor's own name when empty).
  mlir::FailureOr<mlir::ElementsAttr> load(const onnx::TensorProto &tensor,
                                           mlir::MLIRContext *context,
                                           std::string &error,
                                           llvm::StringRef name = "");
  /// Like `load`, but a `dense_resource` blob made from the tensor's raw data
  /// gives its bytes back when the compiler drops it (a weight replaced by
  /// its packed copy): the model's copy is freed, an external file's pages
  /// are returned to the page cache. Only for a tensor loaded once, since
  /// its raw data is gone afterwards.
  mlir::FailureOr<mlir::ElementsAttr> loadReleasable(onnx::TensorProto &tensor,
                                                     mlir::MLIRContext *context,
                                                     std::string &error);

private:
  mlir::FailureOr<mlir::ElementsAttr> load(const onnx::TensorProto &tensor,
                                           mlir::MLIRContext *context,
                                           std::string &error, llvm::StringRef name,
                                           std::string *releasableRawData);

  struct MappedFiles;
  std::string baseDir_;
  std::shared_ptr<const void> keepAlive_;
  int64_t inlineLimit_;
  std::shared_ptr<MappedFiles> files_;
};

} // namespace kiln

#endif // KILN_COMPILER_IMPORTER_IMPORTCONTEXT_H
