//===- FillTensorsOnDevice.cpp - The kiln-fill-tensors-on-device pass -----===//
#include "compiler/Codegen/CUDA/Passes.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_FILLTENSORSONDEVICE
#include "compiler/Codegen/CUDA/Passes.h.inc"

namespace {

/// Whether `tensor` is read only as the shape operand of tensor.reshape.
bool onlyAReshapeShape(tensor::FromElementsOp tensor) {
  return llvm::all_of(tensor->getUses(), [](OpOperand &use) {
    auto reshape = dyn_cast<tensor::ReshapeOp>(use.getOwner());
    return reshape && use.get() == reshape.getShape();
  });
}

/// A linalg.generic over `tensor`'s shape whose element at row-major
/// position p is the from_elements' operand p.
Value fillByIndex(OpBuilder &b, tensor::FromElementsOp tensor) {
  Location loc = tensor.getLoc();
  auto type = cast<RankedTensorType>(tensor.getType());
  Value empty = b.create<tensor::EmptyOp>(loc, type.getShape(), type.getElementType());
  SmallVector<utils::IteratorType> iterators(type.getRank(), utils::IteratorType::parallel);
  AffineMap identity = b.getMultiDimIdentityMap(type.getRank());
  auto fill = b.create<linalg::GenericOp>(
      loc, TypeRange{type}, ValueRange{}, ValueRange{empty}, ArrayRef<AffineMap>{identity},
      iterators, [&](OpBuilder &body, Location at, ValueRange) {
        ValueRange elements = tensor.getElements();
        Value value = elements.back();
        if (elements.size() > 1) {
          // The row-major position of this element.
          Value position;
          for (int64_t dim = 0; dim < type.getRank(); ++dim) {
            Value index = body.create<linalg::IndexOp>(at, dim);
            Value size = body.create<arith::ConstantIndexOp>(at, type.getDimSize(dim));
            position = position ? body.create<arith::AddIOp>(
                                      at, body.create<arith::MulIOp>(at, position, size), index)
                                : index;
          }
          for (int64_t p = elements.size() - 2; p >= 0; --p) {
            Value isP = body.create<arith::CmpIOp>(
                at, arith::CmpIPredicate::eq, position,
                body.create<arith::ConstantIndexOp>(at, p));
            value = body.create<arith::SelectOp>(at, isP, elements[p], value);
          }
        }
        body.create<linalg::YieldOp>(at, value);
      });
  return fill.getResult(0);
}

struct FillTensorsOnDevicePass
    : public impl::FillTensorsOnDeviceBase<FillTensorsOnDevicePass> {
  void runOnOperation() override {
    SmallVector<tensor::FromElementsOp> tensors;
    getOperation().walk([&](tensor::FromElementsOp tensor) {
      if (!onlyAReshapeShape(tensor))
        tensors.push_back(tensor);
    });
    IRRewriter rewriter(&getContext());
    for (tensor::FromElementsOp tensor : tensors) {
      rewriter.setInsertionPoint(tensor);
      rewriter.replaceOp(tensor, fillByIndex(rewriter, tensor));
    }
  }
};

} // namespace
} // namespace kiln
