//===- ImportContext.cpp - State shared by the op importers ---------------===//
#include "compiler/Importer/ImportContext.h"

#include "dialects/Kiln/IR/KilnOps.h"
#include "mlir/Dialect/Traits.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;

namespace kiln {

Type convertElementType(MLIRContext *context, int32_t onnxType) {
  Builder b(context);
  switch (onnxType) {
  case onnx::TensorProto::FLOAT: return b.getF32Type();
  case onnx::TensorProto::FLOAT16: return b.getF16Type();
  case onnx::TensorProto::BFLOAT16: return b.getBF16Type();
  case onnx::TensorProto::DOUBLE: return b.getF64Type();
  case onnx::TensorProto::INT64: return b.getI64Type();
  case onnx::TensorProto::INT32: return b.getI32Type();
  case onnx::TensorProto::INT16: return b.getI16Type();
  case onnx::TensorProto::INT8: return b.getI8Type();
  case onnx::TensorProto::UINT64: return b.getIntegerType(64, /*isSigned=*/false);
  case onnx::TensorProto::UINT32: return b.getIntegerType(32, /*isSigned=*/false);
  case onnx::TensorProto::UINT16: return b.getIntegerType(16, /*isSigned=*/false);
  case onnx::TensorProto::UINT8: return b.getIntegerType(8, /*isSigned=*/false);
  case onnx::TensorProto::BOOL: return b.getI1Type();
  default: return {};
  }
}

std::string onnxTypeName(int32_t onnxType) {
  if (onnx::TensorProto::DataType_IsValid(onnxType))
    return onnx::TensorProto::DataType_Name(
        static_cast<onnx::TensorProto::DataType>(onnxType));
  return "data type " + std::to_string(onnxType);
}

OpImporterRegistry::OpImporterRegistry() {
  registerElementwiseImporters(*this);
  registerMatMulImporters(*this);
  registerNormalizationImporters(*this);
  registerQuantizedImporters(*this);
  registerReductionImporters(*this);
  registerShapeImporters(*this);
  registerTensorImporters(*this);
}

ImportContext::ImportContext(OpBuilder &builder, StringRef sourceName,
                             WeightLoader &weights, int64_t opset)
    : builder_(builder), sourceName_(sourceName.str()), weights_(weights),
      opset_(opset) {}

Location ImportContext::loc(const onnx::NodeProto &node) {
  std::string name = node.name();
  if (name.empty())
    name = "<" + node.op_type() + " producing '" +
           (node.output_size() ? node.output(0) : std::string()) + "'>";
  return NameLoc::get(builder_.getStringAttr(name),
                      FileLineColLoc::get(context(), sourceName_, 0, 0));
}

InFlightDiagnostic ImportContext::error(const onnx::NodeProto &node) {
  return emitError(loc(node)) << node.op_type() << ": ";
}

void ImportContext::setValueInfo(const onnx::ValueInfoProto &info) {
  if (info.has_type())
    valueInfo_[info.name()] = info.type();
}

Value ImportContext::input(const onnx::NodeProto &node, int index) {
  if (index >= node.input_size() || node.input(index).empty())
    return {};
  return values_.lookup(node.input(index));
}

FailureOr<Value> ImportContext::requiredInput(const onnx::NodeProto &node,
                                              int index) {
  if (index >= node.input_size() || node.input(index).empty())
    return error(node) << "missing required input #" << index;
  Value value = values_.lookup(node.input(index));
  if (!value)
    return error(node) << "input '" << node.input(index)
                       << "' is not produced by any earlier node, graph input "
                          "or initializer";
  return value;
}

FailureOr<SmallVector<Value>>
ImportContext::requiredInputs(const onnx::NodeProto &node, int count) {
  SmallVector<Value> values;
  for (int i = 0; i < count; ++i) {
    auto value = requiredInput(node, i);
    if (failed(value))
      return failure();
    values.push_back(*value);
  }
  return values;
}

void ImportContext::bindUint8View(StringRef name, bool lowered, Location loc) {
  Uint8Views &views = loweredUint8_[name];
  if (!lowered && !views.restored)
    views.restored = flipUint8Offset(loc, views.lowered,
                                     builder_.getIntegerType(8, /*isSigned=*/false));
  values_[name] = lowered ? views.lowered : views.restored;
}

Value ImportContext::flipUint8Offset(Location loc, Value value, Type element) {
  auto type = cast<RankedTensorType>(value.getType()).clone(element);
  // The cast keeps the bits (same width); 128 added modulo 256 is 128
  // taken away.
  Value bits = builder_.create<CastOp>(loc, type, value);
  auto offsetType = RankedTensorType::get({}, element);
  Value offset = builder_.create<ConstantOp>(
      loc, offsetType, DenseElementsAttr::get(offsetType, APInt(8, 128)));
  return builder_.create<AddOp>(loc, type, bits, offset);
}

void ImportContext::setOutput(const onnx::NodeProto &node, int index,
                              Value value) {
  if (hasOutput(node, index))
    values_[node.output(index)] = value;
}

bool staticElementsFit(ArrayRef<int64_t> shape) {
  int64_t count = 1;
  for (int64_t dim : shape) {
    if (ShapedType::isDynamic(dim))
      continue;
    if (dim < 0 || llvm::MulOverflow(count, dim, count) || count > kMaxStaticElements)
      return false;
  }
  return true;
}

FailureOr<RankedTensorType>
ImportContext::convertType(const onnx::TypeProto &type, Location loc,
                           StringRef what) {
  if (!type.has_tensor_type())
    return emitError(loc) << what << " is not a tensor";
  const auto &tensor = type.tensor_type();
  Type element = convertElementType(context(), tensor.elem_type());
  if (!element)
    return emitError(loc) << what << " has unsupported element type "
                          << onnxTypeName(tensor.elem_type());
  if (!tensor.has_shape())
    return emitError(loc) << what
                          << " has no known rank (ONNX shape inference could "
                             "not infer it)";
  SmallVector<int64_t> shape;
  for (const auto &dim : tensor.shape().dim())
    shape.push_back(dim.has_dim_value() && dim.dim_value() >= 0
                        ? dim.dim_value()
                        : ShapedType::kDynamic);
  if (!staticElementsFit(shape))
    return emitError(loc) << what << " has dims of more than 2^48 elements";
  return RankedTensorType::get(shape, element);
}

RankedTensorType ImportContext::resultType(const onnx::NodeProto &node,
                                           int index, Type elementType,
                                           ArrayRef<int64_t> shape) {
  SmallVector<int64_t> refined(shape);
  // A node may name fewer outputs than its op has (TopK's indices, say);
  // the unnamed ones have no declared type.
  if (index >= node.output_size())
    return RankedTensorType::get(refined, elementType);
  auto it = valueInfo_.find(node.output(index));
  if (it != valueInfo_.end() && it->second.has_tensor_type() &&
      it->second.tensor_type().has_shape()) {
    const auto &dims = it->second.tensor_type().shape().dim();
    SmallVector<int64_t> declared(refined);
    if (dims.size() == static_cast<int>(refined.size()))
      for (auto [i, dim] : llvm::enumerate(declared))
        if (ShapedType::isDynamic(dim) && dims[i].has_dim_value() &&
            dims[i].dim_value() >= 0)
          dim = dims[i].dim_value();
    // Declared dims past the bound are ignored; the computed ones are
    // checked when the node is done.
    if (staticElementsFit(declared))
      refined = declared;
  }
  return RankedTensorType::get(refined, elementType);
}

FailureOr<RankedTensorType>
ImportContext::broadcastType(const onnx::NodeProto &node, int index,
                             Type elementType, ValueRange operands) {
  SmallVector<int64_t> shape;
  for (Value operand : operands) {
    SmallVector<int64_t> next;
    auto operandShape = cast<RankedTensorType>(operand.getType()).getShape();
    if (!OpTrait::util::getBroadcastedShape(shape, operandShape, next))
      return error(node) << "operand shapes do not broadcast: "
                         << operand.getType();
    shape = std::move(next);
  }
  return resultType(node, index, elementType, shape);
}

FailureOr<Value> ImportContext::matMul(const onnx::NodeProto &node, Value lhs, Value rhs,
                                       bool transposeB) {
  ArrayRef<int64_t> a = cast<RankedTensorType>(lhs.getType()).getShape();
  ArrayRef<int64_t> b = cast<RankedTensorType>(rhs.getType()).getShape();
  SmallVector<int64_t> shape;
  if (!OpTrait::util::getBroadcastedShape(a.drop_back(2), b.drop_back(2), shape))
    return error(node) << "batch dimensions of " << lhs.getType() << " and " << rhs.getType()
                       << " do not broadcast";
  shape.push_back(a[a.size() - 2]);
  shape.push_back(transposeB ? b[b.size() - 2] : b.back());
  auto type = RankedTensorType::get(shape, getElementTypeOrSelf(lhs));
  auto op = builder_.create<MatMulOp>(loc(node), type, lhs, rhs);
  op.setTransposeB(transposeB);
  return op.getResult();
}

const onnx::AttributeProto *ImportContext::findAttr(const onnx::NodeProto &node,
                                                    StringRef name) {
  for (const auto &attr : node.attribute())
    if (attr.name() == name)
      return &attr;
  return nullptr;
}

static std::string attrTypeName(const onnx::AttributeProto &attr) {
  return onnx::AttributeProto::AttributeType_Name(attr.type());
}

FailureOr<int64_t> ImportContext::intAttr(const onnx::NodeProto &node,
                                          StringRef name, int64_t defaultValue) {
  const auto *attr = findAttr(node, name);
  if (!attr)
    return defaultValue;
  if (attr->type() != onnx::AttributeProto::INT)
    return error(node) << "attribute '" << name << "' must be INT, got "
                       << attrTypeName(*attr);
  return attr->i();
}

FailureOr<float> ImportContext::floatAttr(const onnx::NodeProto &node,
                                          StringRef name, float defaultValue) {
  const auto *attr = findAttr(node, name);
  if (!attr)
    return defaultValue;
  if (attr->type() != onnx::AttributeProto::FLOAT)
    return error(node) << "attribute '" << name << "' must be FLOAT, got "
                       << attrTypeName(*attr);
  return attr->f();
}

FailureOr<std::string> ImportContext::stringAttr(const onnx::NodeProto &node,
                                                StringRef name,
                                                StringRef defaultValue) {
  const auto *attr = findAttr(node, name);
  if (!attr)
    return defaultValue.str();
  if (attr->type() != onnx::AttributeProto::STRING)
    return error(node) << "attribute '" << name << "' must be STRING, got "
                       << attrTypeName(*attr);
  return attr->s();
}

FailureOr<std::optional<SmallVector<int64_t>>>
ImportContext::intsAttr(const onnx::NodeProto &node, StringRef name) {
  const auto *attr = findAttr(node, name);
  if (!attr)
    return std::optional<SmallVector<int64_t>>();
  if (attr->type() != onnx::AttributeProto::INTS)
    return error(node) << "attribute '" << name << "' must be INTS, got "
                       << attrTypeName(*attr);
  return std::optional<SmallVector<int64_t>>(
      SmallVector<int64_t>(attr->ints().begin(), attr->ints().end()));
}

FailureOr<int64_t> ImportContext::staticLength(const onnx::NodeProto &node,
                                              Value list, StringRef what) {
  auto type = cast<RankedTensorType>(list.getType());
  if (type.getRank() != 1 || type.isDynamicDim(0))
    return error(node) << what << " must be a 1-D tensor of known length, got "
                       << type;
  if (type.getDimSize(0) > kMaxListLength)
    return error(node) << what << " has " << type.getDimSize(0)
                       << " entries, more than the " << kMaxListLength
                       << " kiln takes in a list";
  return type.getDimSize(0);
}

bool ImportContext::isConstantInput(const onnx::NodeProto &node, int index) {
  Value value = input(node, index);
  return value && value.getDefiningOp<ConstantOp>();
}

bool ImportContext::isComputedInput(const onnx::NodeProto &node, int index,
                                    int64_t inputSince) {
  return opset_ >= inputSince && input(node, index) && !isConstantInput(node, index);
}

FailureOr<std::optional<SmallVector<int64_t>>>
ImportContext::intsAttrOrConstantInput(const onnx::NodeProto &node, int index,
                                       StringRef name, int64_t inputSince,
                                       StringRef why) {
  if (opset_ < inputSince)
    return intsAttr(node, name);
  if (!input(node, index))
    return std::optional<SmallVector<int64_t>>();
  auto values = constantInts(node, index, name, why);
  if (failed(values))
    return failure();
  return std::optional<SmallVector<int64_t>>(std::move(*values));
}

FailureOr<SmallVector<int64_t>>
ImportContext::constantInts(const onnx::NodeProto &node, int index,
                            StringRef what, StringRef why) {
  Value value = input(node, index);
  auto constant = value ? value.getDefiningOp<ConstantOp>() : ConstantOp();
  if (!constant)
    return error(node) << what << " (input #" << index
                       << ") must be a constant: " << why;
  ElementsAttr attr = constant.getValue();
  if (!isa<IntegerType>(attr.getElementType()))
    return error(node) << what << " must hold integers, got "
                       << attr.getElementType();
  SmallVector<int64_t> values;
  if (auto dense = dyn_cast<DenseIntElementsAttr>(attr)) {
    for (const APInt &v : dense.getValues<APInt>())
      values.push_back(v.getSExtValue());
  } else if (auto resource = dyn_cast<DenseI64ResourceElementsAttr>(attr)) {
    auto data = resource.tryGetAsArrayRef();
    if (!data)
      return error(node) << what << " has no data";
    values.assign(data->begin(), data->end());
  } else if (auto resource = dyn_cast<DenseI32ResourceElementsAttr>(attr)) {
    auto data = resource.tryGetAsArrayRef();
    if (!data)
      return error(node) << what << " has no data";
    values.assign(data->begin(), data->end());
  } else {
    return error(node) << what << " has an unsupported constant encoding";
  }
  return values;
}

FailureOr<int64_t> ImportContext::normalizeAxis(const onnx::NodeProto &node,
                                                int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return error(node) << "axis " << axis << " is out of range for rank "
                       << rank;
  return axis < 0 ? axis + rank : axis;
}

FailureOr<SmallVector<int64_t>>
ImportContext::normalizeAxes(const onnx::NodeProto &node, ArrayRef<int64_t> axes,
                             int64_t rank) {
  SmallVector<int64_t> result;
  for (int64_t axis : axes) {
    auto normalized = normalizeAxis(node, axis, rank);
    if (failed(normalized))
      return failure();
    result.push_back(*normalized);
  }
  llvm::sort(result);
  if (std::adjacent_find(result.begin(), result.end()) != result.end())
    return error(node) << "axes list the same axis twice";
  return result;
}

Value ImportContext::i64List(Location loc, ArrayRef<int64_t> values) {
  auto type = RankedTensorType::get({static_cast<int64_t>(values.size())},
                                    builder_.getI64Type());
  return builder_.create<ConstantOp>(loc, type,
                                     DenseIntElementsAttr::get(type, values));
}

Value ImportContext::positionsAlong(Location loc, Value length,
                                    std::optional<int64_t> staticLength, int64_t axis,
                                    int64_t rank) {
  Type i64 = builder_.getI64Type();
  int64_t size = staticLength.value_or(ShapedType::kDynamic);
  Value positions = builder_.create<RangeOp>(loc, RankedTensorType::get({size}, i64),
                                             scalar(loc, i64, 0), length, scalar(loc, i64, 1));
  SmallVector<int64_t> otherAxes, shape(rank, 1);
  for (int64_t i = 0; i < rank; ++i)
    if (i != axis)
      otherAxes.push_back(i);
  shape[axis] = size;
  return builder_.create<UnsqueezeOp>(loc, RankedTensorType::get(shape, i64), positions,
                                      builder_.getDenseI64ArrayAttr(otherAxes));
}

Value ImportContext::positionsOfDim(Location loc, Value tensor, int64_t dim, int64_t axis,
                                    int64_t rank) {
  int64_t size = cast<RankedTensorType>(tensor.getType()).getDimSize(dim);
  std::optional<int64_t> staticSize;
  if (!ShapedType::isDynamic(size))
    staticSize = size;
  Value length = builder_.create<DimOp>(loc, RankedTensorType::get({}, builder_.getI64Type()),
                                        tensor, builder_.getI64IntegerAttr(dim));
  return positionsAlong(loc, length, staticSize, axis, rank);
}

Value ImportContext::scalar(Location loc, Type elementType, double value) {
  auto type = RankedTensorType::get({}, elementType);
  Attribute attr;
  if (auto floatType = dyn_cast<FloatType>(elementType)) {
    APFloat f(value);
    bool lost;
    f.convert(floatType.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
    attr = DenseElementsAttr::get(type, f);
  } else {
    attr = DenseElementsAttr::get(
        type, APInt(elementType.getIntOrFloatBitWidth(),
                    static_cast<int64_t>(value), /*isSigned=*/true));
  }
  return builder_.create<ConstantOp>(loc, type, cast<ElementsAttr>(attr));
}

} // namespace kiln
