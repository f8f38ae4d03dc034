//===- LinalgToUkernels.cpp - The kiln-linalg-to-ukernels pass ------------===//
#include "compiler/Codegen/LLVMCPU/Passes.h"
#include "compiler/Codegen/LLVMCPU/UkernelCalls.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_LINALGTOUKERNELS
#include "compiler/Codegen/LLVMCPU/Passes.h.inc"

namespace {

bool hasUnitInnerStride(Value buffer) {
  auto type = dyn_cast<MemRefType>(buffer.getType());
  if (!type || !type.getElementType().isF32())
    return false;
  SmallVector<int64_t> strides;
  int64_t offset;
  return succeeded(getStridesAndOffset(type, strides, offset)) &&
         strides.back() == 1;
}

/// The linalg.fill of zero that `op` accumulates into, when overwriting
/// instead is safe: `output` is a fresh allocation, and apart from that fill
/// nothing uses it, or a view of it, before `op` in its block.
linalg::FillOp zeroFillBefore(Operation *op, Value output) {
  if (!output.getDefiningOp<memref::AllocOp>())
    return nullptr;
  linalg::FillOp fill;
  for (Operation *user : output.getUsers()) {
    if (user == op)
      continue;
    if (user->getBlock() != op->getBlock())
      return nullptr;
    if (op->isBeforeInBlock(user))
      continue;
    auto candidate = dyn_cast<linalg::FillOp>(user);
    if (fill || !candidate || candidate.getOutputs()[0] != output ||
        !matchPattern(candidate.getInputs()[0], m_AnyZeroFloat()))
      return nullptr;
    fill = candidate;
  }
  return fill;
}

struct LinalgToUkernelsPass
    : public impl::LinalgToUkernelsBase<LinalgToUkernelsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<linalg::LinalgOp> matmuls;
    module.walk([&](linalg::LinalgOp op) {
      if (isa<linalg::MatmulOp, linalg::MatmulTransposeBOp, linalg::BatchMatmulOp,
              linalg::BatchMatmulTransposeBOp>(op) &&
          op.hasPureBufferSemantics())
        matmuls.push_back(op);
    });
    for (linalg::LinalgOp op : matmuls)
      rewrite(module, op);
  }

  void rewrite(ModuleOp module, linalg::LinalgOp op) {
    Value a = op.getDpsInputs()[0], b = op.getDpsInputs()[1];
    Value c = op.getDpsInits()[0];
    if (!hasUnitInnerStride(a) || !hasUnitInnerStride(b) || !hasUnitInnerStride(c))
      return;
    // linalg.matmul adds to C. After a zero fill that nothing else can see,
    // the kernel overwrites C instead and the fill goes.
    linalg::FillOp fill = zeroFillBefore(op, c);
    bool batched = isa<linalg::BatchMatmulOp, linalg::BatchMatmulTransposeBOp>(op);
    bool transposeB = isa<linalg::MatmulTransposeBOp, linalg::BatchMatmulTransposeBOp>(op);

    OpBuilder builder(op);
    Location loc = op.getLoc();
    UkernelBuffer lhs = describeBuffer(builder, loc, a);
    UkernelBuffer rhs = describeBuffer(builder, loc, b);
    UkernelBuffer out = describeBuffer(builder, loc, c);
    Value zero = builder.create<arith::ConstantIntOp>(loc, 0, 64);
    Value one = builder.create<arith::ConstantIntOp>(loc, 1, 64);
    unsigned rowDim = batched ? 1 : 0;
    auto batchStride = [&](UkernelBuffer &operand) {
      return batched ? operand.strides[0] : zero;
    };
    Value m = out.sizes[rowDim], n = out.sizes[rowDim + 1];
    Value k = lhs.sizes[rowDim + 1];
    SmallVector<Value> arguments = {
        batched ? out.sizes[0] : one, m, n, k,
        lhs.pointer, batchStride(lhs), lhs.strides[rowDim],
        rhs.pointer, batchStride(rhs), rhs.strides[rowDim],
        builder.create<arith::ConstantIntOp>(loc, transposeB, 64),
        out.pointer, batchStride(out), out.strides[rowDim],
        builder.create<arith::ConstantIntOp>(loc, fill ? 0 : 1, 64)};
    builder.create<func::CallOp>(loc, getOrDeclareUkernel(module, kSgemmUkernel, arguments),
                                 arguments);
    op->erase();
    if (fill)
      fill->erase();
  }
};

} // namespace
} // namespace kiln
