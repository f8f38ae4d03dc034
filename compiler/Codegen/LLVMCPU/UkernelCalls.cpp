//===- UkernelCalls.cpp - Calls from generated code into the runtime ------===//
#include "compiler/Codegen/LLVMCPU/UkernelCalls.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;

namespace kiln {

UkernelBuffer describeBuffer(OpBuilder &b, Location loc, Value buffer) {
  auto type = cast<MemRefType>(buffer.getType());
  int64_t elementBytes =
      std::max<int64_t>(1, type.getElementType().getIntOrFloatBitWidth() / 8);
  auto toI64 = [&](Value index) -> Value {
    return b.create<arith::IndexCastOp>(loc, b.getI64Type(), index);
  };
  auto metadata = b.create<memref::ExtractStridedMetadataOp>(loc, buffer);
  Value base = toI64(alignedPointerOf(b, loc, buffer));
  Value offsetBytes = b.create<arith::MulIOp>(
      loc, toI64(metadata.getOffset()),
      b.create<arith::ConstantIntOp>(loc, elementBytes, 64));
  Value address = b.create<arith::AddIOp>(loc, base, offsetBytes);
  UkernelBuffer result;
  result.pointer = b.create<LLVM::IntToPtrOp>(
      loc, LLVM::LLVMPointerType::get(b.getContext()), address);
  for (Value size : metadata.getSizes())
    result.sizes.push_back(toI64(size));
  for (Value stride : metadata.getStrides())
    result.strides.push_back(toI64(stride));
  return result;
}

func::FuncOp getOrDeclareUkernel(ModuleOp module, StringRef name,
                                 ValueRange arguments) {
  if (auto existing = module.lookupSymbol<func::FuncOp>(name))
    return existing;
  OpBuilder builder = OpBuilder::atBlockEnd(module.getBody());
  auto type = builder.getFunctionType(TypeRange(arguments), {});
  auto declaration = builder.create<func::FuncOp>(module.getLoc(), name, type);
  declaration.setPrivate();
  return declaration;
}

} // namespace kiln
