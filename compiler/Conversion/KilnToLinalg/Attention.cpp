//===- Attention.cpp - kiln.attention to the attention microkernel --------===//
//
// kiln.attention has no linalg form worth generating: the point of fusing it
// is a streaming softmax that never materializes the scores, which the
// runtime's kiln_ukernel_attention implements. The op becomes a call on its
// operands' buffers (bufferization.to_memref) writing a fresh buffer that is
// the result (bufferization.to_tensor restrict).
//
//===----------------------------------------------------------------------===//
#include "compiler/Conversion/KilnToLinalg/Patterns.h"
#include "compiler/Conversion/UkernelCalls.h"
#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;

namespace kiln {
namespace {

using namespace lowering;

Value i64Constant(OpBuilder &b, Location loc, int64_t value) {
  return b.create<arith::ConstantIntOp>(loc, value, 64);
}

/// Appends a mask operand's pointer and its four strides against the scores
/// [B, H, Tq, Tk]: aligned on the right, with stride 0 where the mask has a
/// missing or static size-1 dim that broadcasts. A null pointer when absent.
void appendMask(OpBuilder &b, Location loc, Value mask,
                SmallVectorImpl<Value> &arguments) {
  Value zero = i64Constant(b, loc, 0);
  if (!mask) {
    arguments.push_back(nullPointer(b, loc));
    arguments.append(4, zero);
    return;
  }
  auto type = cast<RankedTensorType>(mask.getType());
  UkernelBuffer buffer = readBuffer(b, loc, mask);
  arguments.push_back(buffer.pointer);
  int64_t offset = 4 - type.getRank();
  for (int64_t dim = 0; dim < 4; ++dim) {
    int64_t maskDim = dim - offset;
    bool broadcast = maskDim < 0 || type.getDimSize(maskDim) == 1;
    arguments.push_back(broadcast ? zero : buffer.strides[maskDim]);
  }
}

struct AttentionLowering : public OpConversionPattern<AttentionOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(AttentionOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto resultType = cast<RankedTensorType>(op.getType());
    if (!resultType.getElementType().isF32())
      return op.emitOpError("runs on f32 only in the CPU backend");
    Location loc = op.getLoc();
    Value query = adaptor.getQuery(), key = adaptor.getKey(),
          value = adaptor.getValue();
    SmallVector<OpFoldResult> q = sizesOf(rewriter, loc, query);
    SmallVector<OpFoldResult> k = sizesOf(rewriter, loc, key);
    SmallVector<OpFoldResult> v = sizesOf(rewriter, loc, value);
    checkSameSize(rewriter, loc, op, k[0], q[0],
                  "the key's batch size does not match the query's");
    checkSameSize(rewriter, loc, op, v[0], q[0],
                  "the value's batch size does not match the query's");
    checkSameSize(rewriter, loc, op, v[1], k[1],
                  "the value's head count does not match the key's");
    checkSameSize(rewriter, loc, op, v[2], k[2],
                  "the value's length does not match the key's");
    checkSameSize(rewriter, loc, op, k[3], q[3],
                  "the key's head size does not match the query's");
    if (!getConstantIntValue(q[1]) || !getConstantIntValue(k[1])) {
      // The verifier checked static head counts; dynamic ones are checked here.
      Value queryHeads = getValueOrCreateConstantIndexOp(rewriter, loc, q[1]);
      Value keyHeads = getValueOrCreateConstantIndexOp(rewriter, loc, k[1]);
      Value zero = rewriter.create<arith::ConstantIndexOp>(loc, 0);
      Value one = rewriter.create<arith::ConstantIndexOp>(loc, 1);
      Value divisor = rewriter.create<arith::MaxUIOp>(loc, keyHeads, one);
      Value grouped = rewriter.create<arith::AndIOp>(
          loc,
          rewriter.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ne,
                                         keyHeads, zero),
          rewriter.create<arith::CmpIOp>(
              loc, arith::CmpIPredicate::eq,
              rewriter.create<arith::RemUIOp>(loc, queryHeads, divisor), zero));
      check(rewriter, loc, op, grouped,
            "the query heads are not a multiple of the key/value heads");
    }
    SmallVector<OpFoldResult> scoreSizes = {q[0], q[1], q[2], k[2]};
    auto scoresType = RankedTensorType::get(
        {resultType.getDimSize(0), resultType.getDimSize(1),
         resultType.getDimSize(2),
         cast<RankedTensorType>(key.getType()).getDimSize(2)},
        resultType.getElementType());
    if (Value keep = adaptor.getKeep())
      checkBroadcast(rewriter, loc, op, keep, scoresType, scoreSizes, 3);
    if (Value bias = adaptor.getBias())
      checkBroadcast(rewriter, loc, op, bias, scoresType, scoreSizes,
                     adaptor.getKeep() ? 4 : 3);
    SmallVector<OpFoldResult> resultSizes = {q[0], q[1], q[2], v[3]};
    checkResultSizes(rewriter, loc, op, resultType, resultSizes);

    Value output = allocateBuffer(rewriter, loc, resultType, resultSizes);

    UkernelBuffer qBuffer = readBuffer(rewriter, loc, query);
    UkernelBuffer kBuffer = readBuffer(rewriter, loc, key);
    UkernelBuffer vBuffer = readBuffer(rewriter, loc, value);
    UkernelBuffer outBuffer = describeBuffer(rewriter, loc, output);
    SmallVector<Value> arguments = {
        qBuffer.sizes[0], qBuffer.sizes[1], kBuffer.sizes[1], qBuffer.sizes[2],
        kBuffer.sizes[2], qBuffer.sizes[3], vBuffer.sizes[3]};
    for (UkernelBuffer *buffer : {&qBuffer, &kBuffer, &vBuffer}) {
      arguments.push_back(buffer->pointer);
      arguments.append(buffer->strides);
    }
    appendMask(rewriter, loc, adaptor.getKeep(), arguments);
    arguments.push_back(rewriter.create<arith::ConstantOp>(
        loc, rewriter.getF32FloatAttr(op.getMaskedValue().convertToFloat())));
    appendMask(rewriter, loc, adaptor.getBias(), arguments);
    arguments.push_back(rewriter.create<arith::ConstantOp>(
        loc, rewriter.getF32FloatAttr(op.getScale().convertToFloat())));
    arguments.push_back(outBuffer.pointer);
    arguments.append(outBuffer.strides);

    auto module = op->getParentOfType<ModuleOp>();
    rewriter.create<func::CallOp>(
        loc, getOrDeclareUkernel(module, kAttentionUkernel, arguments),
        arguments);
    rewriter.replaceOpWithNewOp<bufferization::ToTensorOp>(
        op, resultType, output, /*restrict=*/true, /*writable=*/true);
    return success();
  }
};

} // namespace

void populateAttentionLoweringPatterns(RewritePatternSet &patterns) {
  patterns.add<AttentionLowering>(patterns.getContext());
}

} // namespace kiln
