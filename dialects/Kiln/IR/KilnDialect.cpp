//===- KilnDialect.cpp - The kiln dialect ---------------------------------===//
#include "dialects/Kiln/IR/KilnDialect.h"
#include "dialects/Kiln/IR/KilnOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;
using namespace kiln;

#include "dialects/Kiln/IR/KilnDialect.cpp.inc"

void KilnDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/Kiln/IR/KilnOps.cpp.inc"
      >();
}

Operation *KilnDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                            Type type, Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return builder.create<ConstantOp>(loc, type, elements);
}

/// Checks a `kiln.dims`, `kiln.name`, `kiln.dim_max` or `kiln.dim_min`
/// attribute placed on a value of `type`.
static LogicalResult verifyValueAttribute(Operation *op, NamedAttribute attr,
                                          Type type, StringRef what) {
  if (attr.getName() == KilnDialect::kDimMaxAttrName ||
      attr.getName() == KilnDialect::kDimMinAttrName) {
    auto sizes = dyn_cast<DenseI64ArrayAttr>(attr.getValue());
    auto shaped = dyn_cast<ShapedType>(type);
    if (!sizes || !shaped || !shaped.hasRank() ||
        shaped.getRank() != sizes.size() ||
        llvm::any_of(sizes.asArrayRef(), [](int64_t size) { return size < 0; }))
      return op->emitError() << "'" << attr.getName().getValue() << "' on "
                             << what << " must be one non-negative size per "
                             << "dimension of " << type;
    return success();
  }
  if (attr.getName() == KilnDialect::kNameAttrName) {
    if (!isa<StringAttr>(attr.getValue()))
      return op->emitError() << "'" << KilnDialect::kNameAttrName << "' on "
                             << what << " must be a string";
    return success();
  }
  if (attr.getName() != KilnDialect::kDimsAttrName)
    return op->emitError() << "unknown kiln attribute '"
                           << attr.getName().getValue() << "' on " << what;
  auto names = dyn_cast<ArrayAttr>(attr.getValue());
  if (!names || !llvm::all_of(names, [](Attribute a) { return isa<StringAttr>(a); }))
    return op->emitError() << "'" << KilnDialect::kDimsAttrName << "' on "
                           << what << " must be an array of strings";
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || tensor.getRank() != static_cast<int64_t>(names.size()))
    return op->emitError() << "'" << KilnDialect::kDimsAttrName << "' on "
                           << what << " has " << names.size()
                           << " names but the value is " << type;
  for (auto [dim, name] : llvm::zip(tensor.getShape(), names))
    if (!ShapedType::isDynamic(dim) && !cast<StringAttr>(name).getValue().empty())
      return op->emitError() << "'" << KilnDialect::kDimsAttrName << "' on "
                             << what << " names static dimension of size "
                             << dim << " '" << cast<StringAttr>(name).getValue()
                             << "'";
  return success();
}

LogicalResult KilnDialect::verifyRegionArgAttribute(Operation *op,
                                                    unsigned regionIndex,
                                                    unsigned argIndex,
                                                    NamedAttribute attr) {
  // Read the type from the signature, which declarations have too.
  auto function = dyn_cast<FunctionOpInterface>(op);
  Type type = function ? function.getArgumentTypes()[argIndex]
                       : op->getRegion(regionIndex).getArgument(argIndex).getType();
  return verifyValueAttribute(op, attr, type,
                              "argument #" + std::to_string(argIndex));
}

LogicalResult KilnDialect::verifyRegionResultAttribute(Operation *op,
                                                       unsigned regionIndex,
                                                       unsigned resultIndex,
                                                       NamedAttribute attr) {
  auto func = dyn_cast<func::FuncOp>(op);
  if (!func)
    return op->emitError() << "kiln result attributes belong on func.func";
  return verifyValueAttribute(op, attr, func.getResultTypes()[resultIndex],
                              "result #" + std::to_string(resultIndex));
}

static SmallVector<std::string> dimNames(DictionaryAttr attrs) {
  SmallVector<std::string> names;
  if (!attrs)
    return names;
  if (auto array = attrs.getAs<ArrayAttr>(KilnDialect::kDimsAttrName))
    for (Attribute name : array)
      names.push_back(cast<StringAttr>(name).getValue().str());
  return names;
}

SmallVector<std::string> kiln::getArgumentDimNames(func::FuncOp func,
                                                   unsigned index) {
  return dimNames(func.getArgAttrDict(index));
}

SmallVector<std::string> kiln::getResultDimNames(func::FuncOp func,
                                                 unsigned index) {
  return dimNames(func.getResultAttrDict(index));
}

std::string kiln::onnxNodeName(Location loc) {
  std::string name;
  loc->walk([&](Location inner) {
    if (auto named = dyn_cast<NameLoc>(inner)) {
      name = named.getName().str();
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return name;
}
