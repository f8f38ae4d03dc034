//===- PrepareEntryPoint.cpp - The kiln-prepare-entry-point pass ----------===//
#include "compiler/Codegen/Common/Passes.h"
#include "dialects/Kiln/IR/KilnOps.h"
#include "passes/WeightBlobs.h"
#include "kiln/abi/artifact_format.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_PREPAREENTRYPOINT
#include "compiler/Codegen/Common/Passes.h.inc"

kiln_dtype_t runtimeDtype(Type type) {
  if (type.isF32()) return KILN_DTYPE_F32;
  if (type.isF16()) return KILN_DTYPE_F16;
  if (type.isBF16()) return KILN_DTYPE_BF16;
  if (type.isF64()) return KILN_DTYPE_F64;
  if (type.isUnsignedInteger(64)) return KILN_DTYPE_U64;
  if (type.isUnsignedInteger(32)) return KILN_DTYPE_U32;
  if (type.isUnsignedInteger(16)) return KILN_DTYPE_U16;
  if (type.isUnsignedInteger(8)) return KILN_DTYPE_U8;
  if (type.isInteger(64)) return KILN_DTYPE_I64;
  if (type.isInteger(32)) return KILN_DTYPE_I32;
  if (type.isInteger(16)) return KILN_DTYPE_I16;
  if (type.isInteger(8)) return KILN_DTYPE_I8;
  if (type.isInteger(1)) return KILN_DTYPE_BOOL;
  return KILN_DTYPE_INVALID;
}

namespace {

struct PrepareEntryPointPass
    : public impl::PrepareEntryPointBase<PrepareEntryPointPass> {
  using PrepareEntryPointBase::PrepareEntryPointBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto func = module.lookupSymbol<func::FuncOp>(functionName);
    if (!func || func.isExternal()) {
      module.emitError() << "no entry function '" << functionName << "'";
      return signalPassFailure();
    }
    unsigned numInputs = func.getNumArguments();
    outlineWeights(module, func);
    if (failed(emitSignature(module, func, numInputs)))
      return signalPassFailure();

    MLIRContext *ctx = &getContext();
    Builder b(ctx);
    NamedAttribute readOnly(
        b.getStringAttr(bufferization::BufferizationDialect::kWritableAttrName),
        b.getBoolAttr(false));
    for (unsigned i = 0; i < func.getNumArguments(); ++i) {
      SmallVector<NamedAttribute> attrs = {readOnly};
      for (StringRef bound : {KilnDialect::kDimMaxAttrName, KilnDialect::kDimMinAttrName})
        if (Attribute sizes = func.getArgAttr(i, bound))
          attrs.emplace_back(b.getStringAttr(bound), sizes);
      func.setArgAttrs(i, b.getDictionaryAttr(attrs));
    }
    for (unsigned i = 0; i < func.getNumResults(); ++i)
      func.setResultAttrs(i, b.getDictionaryAttr({}));
    func->setAttr(LLVM::LLVMDialect::getEmitCWrapperAttrName(), b.getUnitAttr());
  }

  /// Exports kiln_signature (see kiln/abi/artifact_format.h): what the code expects of
  /// its arguments and results.
  LogicalResult emitSignature(ModuleOp module, func::FuncOp func,
                              unsigned numInputs) {
    SmallVector<int64_t> words = {
        artifact::kSignatureVersion, numInputs,
        func.getNumArguments() - numInputs, func.getNumResults()};
    SmallVector<Type> types(func.getArgumentTypes());
    llvm::append_range(types, func.getResultTypes());
    for (Type type : types) {
      auto tensor = dyn_cast<RankedTensorType>(type);
      if (!tensor || runtimeDtype(tensor.getElementType()) == KILN_DTYPE_INVALID)
        return func.emitError() << "the runtime cannot pass a value of type "
                                << type;
      words.push_back(runtimeDtype(tensor.getElementType()));
      words.push_back(tensor.getRank());
      for (int64_t size : tensor.getShape())
        words.push_back(ShapedType::isDynamic(size) ? -1 : size);
    }
    OpBuilder builder = OpBuilder::atBlockEnd(module.getBody());
    auto i64 = builder.getI64Type();
    builder.create<LLVM::GlobalOp>(
        module.getLoc(), LLVM::LLVMArrayType::get(i64, words.size()),
        /*isConstant=*/true, LLVM::Linkage::External, artifact::kSignatureSymbol,
        DenseIntElementsAttr::get(
            RankedTensorType::get({(int64_t)words.size()}, i64), words));
    return success();
  }

  void outlineWeights(ModuleOp module, func::FuncOp func) {
    SmallVector<ConstantOp> large;
    func.walk([&](ConstantOp constant) {
      ElementsAttr value = constant.getValue();
      auto dense = dyn_cast<DenseElementsAttr>(value);
      if (value.getNumElements() > minElements && !(dense && dense.isSplat()))
        large.push_back(constant);
    });
    SmallVector<Attribute> weights, names;
    DenseMap<Attribute, BlockArgument> arguments;
    for (ConstantOp constant : large) {
      Attribute value = constant.getValue();
      auto [it, inserted] = arguments.try_emplace(value);
      if (inserted) {
        unsigned index = func.getNumArguments();
        func.insertArgument(index, constant.getType(), DictionaryAttr(),
                            constant.getLoc());
        it->second = func.getArgument(index);
        weights.push_back(value);
        names.push_back(StringAttr::get(&getContext(), weightName(constant.getLoc())));
      }
      constant.replaceAllUsesWith(it->second);
      constant.erase();
    }
    module->setAttr(kWeightsAttrName, ArrayAttr::get(&getContext(), weights));
    module->setAttr(kWeightNamesAttrName, ArrayAttr::get(&getContext(), names));
  }
};

} // namespace
} // namespace kiln
