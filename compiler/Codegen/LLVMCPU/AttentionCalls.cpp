//===- AttentionCalls.cpp - kiln.attention as the CPU kernel's call -------===//
//
// kiln.attention has no linalg form worth generating: the point of fusing it
// is a streaming softmax that never materializes the scores, which the
// runtime's kiln_ukernel_attention implements. The op becomes a call on a
// parameter struct (kiln/abi/kernel_abi.h, filled slot by slot in a stack
// buffer) that points at its operands' buffers (bufferization.to_memref) and
// at fresh buffers that are its results (bufferization.to_tensor restrict):
// the output and, with a past, the presents that something reads.
// kiln.paged_attention becomes a call of kiln_ukernel_paged_attention in the
// same way.
//
//===----------------------------------------------------------------------===//
#include "compiler/Codegen/LLVMCPU/KernelCalls.h"
#include "compiler/Codegen/LLVMCPU/UkernelCalls.h"
#include "compiler/Conversion/KilnToLinalg/Patterns.h"
#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "kiln/abi/kernel_abi.h"

using namespace mlir;

namespace kiln {
namespace {

using namespace lowering;

/// Appends a buffer's pointer and its four strides, or a null pointer and
/// zeros when there is none.
void appendBuffer(OpBuilder &b, Location loc, const UkernelBuffer *buffer,
                  SmallVectorImpl<Value> &arguments) {
  if (!buffer) {
    arguments.push_back(nullPointer(b, loc));
    arguments.append(4, i64Constant(b, loc, 0));
    return;
  }
  arguments.push_back(buffer->pointer);
  arguments.append(buffer->strides);
}

/// Appends a mask operand's pointer and its four strides against the scores
/// [B, H, Tq, Tk]: aligned on the right, with stride 0 where the mask has a
/// missing or static size-1 dim that broadcasts. A null pointer when absent.
void appendMask(OpBuilder &b, Location loc, Value mask,
                SmallVectorImpl<Value> &arguments) {
  if (!mask) {
    appendBuffer(b, loc, nullptr, arguments);
    return;
  }
  Value zero = i64Constant(b, loc, 0);
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

/// The bits of a double, as a parameter struct's slot holds an f64 field.
Value doubleBits(OpBuilder &b, Location loc, APFloat number) {
  Value wide = b.create<arith::ConstantOp>(
      loc, b.getF64FloatAttr(number.convertToFloat()));
  return b.create<arith::BitcastOp>(loc, b.getI64Type(), wide);
}

/// Checks that each of the masks an attention op has broadcasts to its
/// scores; `operand` is the first mask's operand number.
template <typename AttentionLikeOp, typename Adaptor>
void checkMasks(OpBuilder &b, Location loc, AttentionLikeOp op, Adaptor adaptor,
                RankedTensorType scoresType, ArrayRef<OpFoldResult> scoreSizes,
                int64_t operand) {
  for (Value mask : {adaptor.getPositionBias(), adaptor.getKeep(), adaptor.getBias()})
    if (mask)
      checkBroadcast(b, loc, op, mask, scoresType, scoreSizes, operand++);
}

/// Appends the slots both parameter structs share, from position_bias to
/// scale: each mask with its strides, the masked value and the scale.
template <typename AttentionLikeOp, typename Adaptor>
void appendMasksAndScale(OpBuilder &b, Location loc, AttentionLikeOp op,
                         Adaptor adaptor, SmallVectorImpl<Value> &slots) {
  appendMask(b, loc, adaptor.getPositionBias(), slots);
  appendMask(b, loc, adaptor.getKeep(), slots);
  slots.push_back(doubleBits(b, loc, op.getMaskedValue()));
  appendMask(b, loc, adaptor.getBias(), slots);
  slots.push_back(doubleBits(b, loc, op.getScale()));
}

OpFoldResult addSizes(OpBuilder &b, Location loc, OpFoldResult x,
                      OpFoldResult y) {
  std::optional<int64_t> a = getConstantIntValue(x), c = getConstantIntValue(y);
  if (a && c)
    return b.getIndexAttr(*a + *c);
  return b
      .create<arith::AddIOp>(loc, getValueOrCreateConstantIndexOp(b, loc, x),
                             getValueOrCreateConstantIndexOp(b, loc, y))
      .getResult();
}

struct AttentionLowering : public OpConversionPattern<AttentionOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(AttentionOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto resultType = cast<RankedTensorType>(op.getResult().getType());
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
    // With a past, the keys are the past's rows then the new ones.
    OpFoldResult keyLength = k[2];
    Value pastKey = adaptor.getPast().empty() ? Value() : adaptor.getPast()[0];
    Value pastValue =
        adaptor.getPast().empty() ? Value() : adaptor.getPast()[1];
    if (pastKey) {
      SmallVector<OpFoldResult> pk = sizesOf(rewriter, loc, pastKey);
      SmallVector<OpFoldResult> pv = sizesOf(rewriter, loc, pastValue);
      checkSameSize(rewriter, loc, op, pk[0], k[0],
                    "the past key's batch size does not match the key's");
      checkSameSize(rewriter, loc, op, pk[1], k[1],
                    "the past key's head count does not match the key's");
      checkSameSize(rewriter, loc, op, pk[3], k[3],
                    "the past key's head size does not match the key's");
      checkSameSize(rewriter, loc, op, pv[0], v[0],
                    "the past value's batch size does not match the value's");
      checkSameSize(rewriter, loc, op, pv[1], v[1],
                    "the past value's head count does not match the value's");
      checkSameSize(rewriter, loc, op, pv[3], v[3],
                    "the past value's head size does not match the value's");
      checkSameSize(rewriter, loc, op, pv[2], pk[2],
                    "the past value's length does not match the past key's");
      keyLength = addSizes(rewriter, loc, pk[2], k[2]);
    }
    SmallVector<OpFoldResult> scoreSizes = {q[0], q[1], q[2], keyLength};
    int64_t staticKeyLength = ShapedType::kDynamic;
    if (std::optional<int64_t> length = getConstantIntValue(keyLength))
      staticKeyLength = *length;
    auto scoresType = RankedTensorType::get(
        {resultType.getDimSize(0), resultType.getDimSize(1),
         resultType.getDimSize(2), staticKeyLength},
        resultType.getElementType());
    checkMasks(rewriter, loc, op, adaptor, scoresType, scoreSizes,
               3 + adaptor.getPast().size());
    SmallVector<OpFoldResult> resultSizes = {q[0], q[1], q[2], v[3]};
    checkResultSizes(rewriter, loc, op, resultType, resultSizes);
    Value output = allocateBuffer(rewriter, loc, resultType, resultSizes);

    // The results' buffers, or a null buffer for a present that nothing
    // reads, which is then not written.
    SmallVector<Value> resultBuffers = {output};
    SmallVector<Value> results = {nullptr};
    std::optional<UkernelBuffer> presentBuffers[2];
    for (auto [index, present] : llvm::enumerate(op.getPresents())) {
      auto type = cast<RankedTensorType>(present.getType());
      const SmallVector<OpFoldResult> &rows = index == 0 ? k : v;
      SmallVector<OpFoldResult> sizes = {rows[0], rows[1], keyLength, rows[3]};
      checkResultSizes(rewriter, loc, op, type, sizes,
                       "result " + Twine(index + 1));
      if (present.use_empty()) {
        resultBuffers.push_back(nullptr);
        results.push_back(emptyTensor(rewriter, loc, type, sizes));
        continue;
      }
      Value buffer = allocateBuffer(rewriter, loc, type, sizes);
      presentBuffers[index] = describeBuffer(rewriter, loc, buffer);
      resultBuffers.push_back(buffer);
      results.push_back(nullptr);
    }

    UkernelBuffer qBuffer = readBuffer(rewriter, loc, query);
    UkernelBuffer kBuffer = readBuffer(rewriter, loc, key);
    UkernelBuffer vBuffer = readBuffer(rewriter, loc, value);
    std::optional<UkernelBuffer> pastKeyBuffer, pastValueBuffer;
    if (pastKey) {
      pastKeyBuffer = readBuffer(rewriter, loc, pastKey);
      pastValueBuffer = readBuffer(rewriter, loc, pastValue);
    }
    UkernelBuffer outBuffer = describeBuffer(rewriter, loc, output);
    // The slots of kiln_attention_params_t, in declaration order.
    SmallVector<Value> slots = {qBuffer.sizes[0],
                                qBuffer.sizes[1],
                                kBuffer.sizes[1],
                                qBuffer.sizes[2],
                                pastKey ? pastKeyBuffer->sizes[2]
                                        : i64Constant(rewriter, loc, 0),
                                kBuffer.sizes[2],
                                qBuffer.sizes[3],
                                vBuffer.sizes[3]};
    auto optional = [](std::optional<UkernelBuffer> &buffer) {
      return buffer ? &*buffer : nullptr;
    };
    for (const UkernelBuffer *buffer :
         {&qBuffer, optional(pastKeyBuffer), &kBuffer,
          optional(pastValueBuffer), &vBuffer})
      appendBuffer(rewriter, loc, buffer, slots);
    appendMasksAndScale(rewriter, loc, op, adaptor, slots);
    for (const UkernelBuffer *buffer :
         {&outBuffer, optional(presentBuffers[0]), optional(presentBuffers[1])})
      appendBuffer(rewriter, loc, buffer, slots);
    if (failed(callWithParameterStruct(rewriter, loc, op, kAttentionUkernel,
                                       slots, KILN_ATTENTION_SLOTS)))
      return failure();
    for (auto [buffer, result, type] :
         llvm::zip(resultBuffers, results, op.getResultTypes()))
      if (buffer)
        result = rewriter.create<bufferization::ToTensorOp>(
            loc, type, buffer, /*restrict=*/true, /*writable=*/true);
    rewriter.replaceOp(op, results);
    return success();
  }
};

struct PagedAttentionLowering : public OpConversionPattern<PagedAttentionOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(PagedAttentionOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto resultType = cast<RankedTensorType>(op.getResult().getType());
    if (!resultType.getElementType().isF32())
      return op.emitOpError("runs on f32 only in the CPU backend");
    Location loc = op.getLoc();
    Value query = adaptor.getQuery(), key = adaptor.getKey(),
          value = adaptor.getValue(), cache = adaptor.getCache(),
          tables = adaptor.getBlockTables(), lengths = adaptor.getPastLengths();
    SmallVector<OpFoldResult> q = sizesOf(rewriter, loc, query);
    SmallVector<OpFoldResult> k = sizesOf(rewriter, loc, key);
    SmallVector<OpFoldResult> v = sizesOf(rewriter, loc, value);
    checkSameSize(rewriter, loc, op, k[0], q[0],
                  "the key's batch size does not match the query's");
    checkSameSize(rewriter, loc, op, k[2], q[2],
                  "the new keys are not as many as the queries");
    for (int dim = 0; dim < 4; ++dim)
      checkSameSize(rewriter, loc, op, v[dim], k[dim],
                    "the value's shape does not match the key's");
    checkSameSize(rewriter, loc, op, sizesOf(rewriter, loc, tables)[0], q[0],
                  "the block tables' batch size does not match the query's");
    checkSameSize(rewriter, loc, op, sizesOf(rewriter, loc, lengths)[0], q[0],
                  "the past lengths' batch size does not match the query's");
    Value width = rewriter.create<tensor::ExtractOp>(loc, adaptor.getPastWidth());
    Value zero = i64Constant(rewriter, loc, 0);
    check(rewriter, loc, op,
          rewriter.create<arith::CmpIOp>(loc, arith::CmpIPredicate::sge, width, zero),
          "the padded past's width is negative");
    // The masks span the padded past and the new rows.
    OpFoldResult keyLength = rewriter
                                 .create<arith::AddIOp>(
                                     loc, rewriter.create<arith::IndexCastOp>(
                                              loc, rewriter.getIndexType(), width),
                                     getValueOrCreateConstantIndexOp(rewriter, loc, k[2]))
                                 .getResult();
    SmallVector<OpFoldResult> scoreSizes = {q[0], q[1], q[2], keyLength};
    auto scoresType = RankedTensorType::get(
        {resultType.getDimSize(0), resultType.getDimSize(1),
         resultType.getDimSize(2), ShapedType::kDynamic},
        resultType.getElementType());
    checkMasks(rewriter, loc, op, adaptor, scoresType, scoreSizes, 7);
    SmallVector<OpFoldResult> resultSizes = {q[0], q[1], q[2], v[3]};
    checkResultSizes(rewriter, loc, op, resultType, resultSizes);
    Value output = allocateBuffer(rewriter, loc, resultType, resultSizes);

    UkernelBuffer qBuffer = readBuffer(rewriter, loc, query);
    UkernelBuffer kBuffer = readBuffer(rewriter, loc, key);
    UkernelBuffer vBuffer = readBuffer(rewriter, loc, value);
    UkernelBuffer cacheBuffer = readBuffer(rewriter, loc, cache, /*unitInnerStride=*/true);
    UkernelBuffer tableBuffer = readBuffer(rewriter, loc, tables, /*unitInnerStride=*/true);
    UkernelBuffer lengthBuffer = readBuffer(rewriter, loc, lengths, /*unitInnerStride=*/true);
    UkernelBuffer outBuffer = describeBuffer(rewriter, loc, output);
    auto cacheType = cast<RankedTensorType>(cache.getType());

    // The slots of kiln_paged_attention_params_t, in declaration order.
    SmallVector<Value> slots = {qBuffer.sizes[0], qBuffer.sizes[1], kBuffer.sizes[1],
                                qBuffer.sizes[2], qBuffer.sizes[3], width};
    for (const UkernelBuffer *buffer : {&qBuffer, &kBuffer, &vBuffer})
      appendBuffer(rewriter, loc, buffer, slots);
    Type cacheElement = cacheType.getElementType();
    const kiln_dtype_t cacheDtype = cacheElement.isF16()    ? KILN_DTYPE_F16
                                    : cacheElement.isBF16() ? KILN_DTYPE_BF16
                                                            : KILN_DTYPE_F32;
    slots.append({cacheBuffer.pointer, i64Constant(rewriter, loc, cacheDtype),
                  cacheBuffer.sizes[0],
                  i64Constant(rewriter, loc, cacheType.getDimSize(1)),
                  i64Constant(rewriter, loc, op.getLayer()),
                  i64Constant(rewriter, loc, cacheType.getDimSize(4)),
                  tableBuffer.pointer, tableBuffer.strides[0], tableBuffer.sizes[1],
                  lengthBuffer.pointer});
    appendMasksAndScale(rewriter, loc, op, adaptor, slots);
    appendBuffer(rewriter, loc, &outBuffer, slots);
    if (failed(callWithParameterStruct(rewriter, loc, op, kPagedAttentionUkernel,
                                       slots, KILN_PAGED_ATTENTION_SLOTS)))
      return failure();
    rewriter.replaceOp(op, rewriter.create<bufferization::ToTensorOp>(
                               loc, resultType, output, /*restrict=*/true,
                               /*writable=*/true));
    return success();
  }
};

} // namespace

void populateAttentionCallPatterns(RewritePatternSet &patterns) {
  patterns.add<AttentionLowering, PagedAttentionLowering>(patterns.getContext());
}

} // namespace kiln
