//===- UkernelCalls.cpp - Calls from generated code into the runtime ------===//
#include "compiler/Codegen/LLVMCPU/UkernelCalls.h"
#include "compiler/Codegen/Common/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
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

UkernelBuffer readBuffer(OpBuilder &b, Location loc, Value tensor,
                         bool unitInnerStride) {
  auto type = cast<RankedTensorType>(tensor.getType());
  BaseMemRefType bufferType =
      bufferization::getMemRefTypeWithFullyDynamicLayout(type);
  if (unitInnerStride) {
    SmallVector<int64_t> strides(type.getRank(), ShapedType::kDynamic);
    strides.back() = 1;
    bufferType = MemRefType::get(
        type.getShape(), type.getElementType(),
        StridedLayoutAttr::get(b.getContext(), ShapedType::kDynamic, strides));
  }
  auto buffer = b.create<bufferization::ToMemrefOp>(loc, bufferType, tensor,
                                                    /*read_only=*/true);
  // One-shot bufferization takes a to_memref as the tensor's read: a later
  // op may then reuse the tensor's buffer in place. CSE would merge the
  // reads of one tensor by several calls (the Q, K and V products of one
  // norm) into the first, and the later calls would read a buffer already
  // overwritten. Naming the reader keeps each read where its call is.
  buffer->setAttr(kReadByAttrName, LocationAttr(loc));
  return describeBuffer(b, loc, buffer);
}

Value nullPointer(OpBuilder &b, Location loc) {
  return b.create<LLVM::ZeroOp>(loc, LLVM::LLVMPointerType::get(b.getContext()));
}

LogicalResult callWithParameterStruct(OpBuilder &b, Location loc, Operation *op,
                                      StringRef name, ArrayRef<Value> slots,
                                      int64_t expectedSlots) {
  if (static_cast<int64_t>(slots.size()) != expectedSlots)
    return op->emitOpError() << "fills " << slots.size() << " parameter slots of "
                             << name << ", kiln/abi/kernel_abi.h has " << expectedSlots;
  Type i64 = b.getI64Type();
  auto params = b.create<memref::AllocaOp>(
      loc, MemRefType::get({expectedSlots}, i64));
  params->setAttr(kUkernelParamsAttrName, b.getUnitAttr());
  for (auto [index, slot] : llvm::enumerate(slots)) {
    Value value = slot;
    if (isa<LLVM::LLVMPointerType>(value.getType()))
      value = b.create<LLVM::PtrToIntOp>(loc, i64, value);
    b.create<memref::StoreOp>(
        loc, value, params,
        ValueRange{b.create<arith::ConstantIndexOp>(loc, index)});
  }
  SmallVector<Value> arguments = {describeBuffer(b, loc, params).pointer};
  auto module = op->getParentOfType<ModuleOp>();
  b.create<func::CallOp>(loc, getOrDeclareUkernel(module, name, arguments),
                         arguments);
  return success();
}

} // namespace kiln
