//===- LinearCalls.cpp - kiln.linear as the CPU kernel's call -------------===//
//
// kiln.linear, a product by a weight with its epilogue, runs as the
// runtime's kiln_ukernel_linear: the op becomes a call on a parameter struct
// (kiln_linear_params_t, kiln/abi/kernel_abi.h) holding its operands'
// buffers (bufferization.to_memref), writing a fresh buffer that is its
// result (bufferization.to_tensor restrict). The input's leading dims are
// the product's rows.
//
//===----------------------------------------------------------------------===//
#include "compiler/Codegen/LLVMCPU/KernelCalls.h"
#include "compiler/Codegen/LLVMCPU/UkernelCalls.h"
#include "compiler/Conversion/KilnToLinalg/Patterns.h"
#include "dialects/Kiln/IR/KilnOps.h"
#include "kiln/abi/kernel_abi.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "llvm/ADT/bit.h"

using namespace mlir;

namespace kiln {
namespace {

using namespace lowering;

struct LinearLowering : public OpConversionPattern<LinearOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(LinearOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto resultType = cast<RankedTensorType>(op.getType());
    Type elementType = resultType.getElementType();
    if (!elementType.isF32())
      return op.emitOpError("runs on f32 only in the CPU backend");
    Location loc = op.getLoc();
    Value input = adaptor.getInput(), weight = adaptor.getWeight();
    SmallVector<OpFoldResult> inputSizes = sizesOf(rewriter, loc, input);
    SmallVector<OpFoldResult> weightSizes = sizesOf(rewriter, loc, weight);
    OpFoldResult k = inputSizes.back();
    // The weight's sizes in its layout: [K, N], [N, K], or packed
    // [ceil(N/64), K, 64] with N the result's static last dim.
    WeightLayout layout = op.getPacked()       ? WeightLayout::Panels
                          : op.getTransposeB() ? WeightLayout::Transposed
                                               : WeightLayout::RowMajor;
    OpFoldResult weightK =
        weightSizes[layout == WeightLayout::RowMajor ? 0 : 1];
    OpFoldResult n =
        layout == WeightLayout::Panels
            ? rewriter.getIndexAttr(resultType.getShape().back())
            : weightSizes[layout == WeightLayout::RowMajor ? 1 : 0];
    checkSameSize(rewriter, loc, op, weightK, k,
                  "the operands' contraction sizes differ");
    RowsProduct flat =
        flattenRows(rewriter, loc, op, input, inputSizes, n, resultType);
    OpFoldResult rows = flat.rows;
    UkernelBuffer lhs = readBuffer(rewriter, loc, flat.flatInput, true);
    UkernelBuffer rhs = readBuffer(rewriter, loc, weight, true);
    // The microkernels step through a panel's rows (64 elements, or 32
    // bytes of 4-bit pairs) at a time; the panels themselves may lie any
    // stride apart.
    auto checkPanelRows = [&](const UkernelBuffer &panels, int64_t rowElements,
                              StringRef what) {
      check(rewriter, loc, op,
            rewriter.create<arith::CmpIOp>(
                loc, arith::CmpIPredicate::eq, panels.strides[1],
                i64Constant(rewriter, loc, rowElements)),
            "the packed " + what + " rows are not " + Twine(rowElements) +
                " elements apart");
    };
    if (layout == WeightLayout::Panels)
      checkPanelRows(rhs, op.panelRowElements(), "weight's");
    // A quantized weight's scales (and zero points), panels of one row per
    // group; the zero points lie as the scales do.
    Value scales = nullPointer(rewriter, loc), zeroPoints = scales,
          columnSums = scales, scalesStride, groupSize;
    if (op.isQuantized()) {
      UkernelBuffer scaleBuffer = readBuffer(rewriter, loc, adaptor.getScales(), true);
      checkPanelRows(scaleBuffer, LinearOp::kPanelWidth, "scales'");
      scales = scaleBuffer.pointer;
      scalesStride = scaleBuffer.strides[0];
      groupSize = i64Constant(rewriter, loc, *op.getGroupSize());
      if (op.isUint4()) {
        UkernelBuffer zeroPointBuffer =
            readBuffer(rewriter, loc, adaptor.getZeroPoints(), true);
        check(rewriter, loc, op,
              rewriter.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq,
                                             zeroPointBuffer.strides[0], scalesStride),
              "the zero points are not laid out as the scales are");
        checkPanelRows(zeroPointBuffer, LinearOp::kPanelWidth, "zero points'");
        zeroPoints = zeroPointBuffer.pointer;
      }
      if (op.getQuantizeInput()) {
        // Read with a contiguous last dim: each panel's 64 sums in a row.
        UkernelBuffer sums = readBuffer(rewriter, loc, adaptor.getColumnSums(), true);
        check(rewriter, loc, op,
              rewriter.create<arith::CmpIOp>(
                  loc, arith::CmpIPredicate::eq, sums.strides[0],
                  i64Constant(rewriter, loc, LinearOp::kPanelWidth)),
              "the column sums' panels are not side by side");
        columnSums = sums.pointer;
      }
    } else {
      scalesStride = groupSize = i64Constant(rewriter, loc, 0);
    }
    Value bias;
    if (Value biasTensor = adaptor.getBias()) {
      checkSameSize(rewriter, loc, op, sizesOf(rewriter, loc, biasTensor)[0], n,
                    "the bias does not have one value per column");
      bias = readBuffer(rewriter, loc, biasTensor, true).pointer;
    } else {
      bias = nullPointer(rewriter, loc);
    }
    // The gate and the residual: the result's shape, read as [rows, N]
    // (pointer and row stride), or a null pointer and stride 0.
    RankedTensorType flatType = tensorType({rows, n}, elementType);
    auto readRows = [&](Value tensor, StringRef name) -> std::pair<Value, Value> {
      if (!tensor)
        return {nullPointer(rewriter, loc),
                rewriter.create<arith::ConstantIntOp>(loc, 0, 64)};
      for (auto [dim, sizes] : llvm::enumerate(llvm::zip_equal(
               sizesOf(rewriter, loc, tensor), flat.resultSizes)))
        checkSameSize(rewriter, loc, op, std::get<0>(sizes), std::get<1>(sizes),
                      "the " + name + "'s dim " + Twine(dim) +
                          " differs from the result's");
      Value flatTensor = reshapeRows(rewriter, loc, tensor, flatType, {rows, n});
      UkernelBuffer buffer = readBuffer(rewriter, loc, flatTensor, true);
      return {buffer.pointer, buffer.strides[0]};
    };
    auto [gate, gateStride] = readRows(adaptor.getGate(), "gate");
    auto [residual, residualStride] = readRows(adaptor.getResidual(), "residual");

    Value output = allocateBuffer(rewriter, loc, flatType, {rows, n});
    UkernelBuffer out = describeBuffer(rewriter, loc, output);
    int64_t activation =
        op.getActivation() ? static_cast<int64_t>(*op.getActivation()) : 0;
    kiln_weight_dtype_t weightDtype = !op.isQuantized()       ? KILN_WEIGHT_F32
                                      : op.isUint4()          ? KILN_WEIGHT_U4
                                      : op.getQuantizeInput() ? KILN_WEIGHT_I8_ROW_QUADS
                                                              : KILN_WEIGHT_I8;
    kiln_input_quantization_t inputQuantization =
        !op.getQuantizeInput()     ? KILN_INPUT_F32
        : op.getInputScaleAttr()   ? KILN_INPUT_U8_STATIC
        : op.getInputTensorRange() ? KILN_INPUT_U8_DYNAMIC_TENSOR
                                   : KILN_INPUT_U8_DYNAMIC_ROWS;
    // A static quantization's scale is a double slot: its bits, as i64.
    const double inputScale =
        op.getInputScaleAttr() ? op.getInputScaleAttr().getValueAsDouble() : 0.0;
    const int64_t inputZeroPoint =
        op.getInputZeroPointAttr() ? op.getInputZeroPointAttr().getInt() : 0;
    // The slots of kiln_linear_params_t, in declaration order.
    SmallVector<Value> slots = {
        out.sizes[0],
        out.sizes[1],
        lhs.sizes[1],
        lhs.pointer,
        lhs.strides[0],
        rhs.pointer,
        rhs.strides[0],
        i64Constant(rewriter, loc, static_cast<int64_t>(layout)),
        i64Constant(rewriter, loc, weightDtype),
        scales,
        zeroPoints,
        columnSums,
        scalesStride,
        groupSize,
        i64Constant(rewriter, loc, inputQuantization),
        i64Constant(rewriter, loc, llvm::bit_cast<int64_t>(inputScale)),
        i64Constant(rewriter, loc, inputZeroPoint),
        bias,
        i64Constant(rewriter, loc, activation),
        gate,
        gateStride,
        residual,
        residualStride,
        out.pointer,
        out.strides[0]};
    if (failed(callWithParameterStruct(rewriter, loc, op, kLinearUkernel, slots,
                                       KILN_LINEAR_SLOTS)))
      return failure();
    Value product = rewriter.create<bufferization::ToTensorOp>(
        loc, flatType, output, /*restrict=*/true, /*writable=*/true);
    rewriter.replaceOp(op, reshapeRows(rewriter, loc, product, resultType,
                                       flat.resultSizes));
    return success();
  }
};

} // namespace

void populateLinearCallPatterns(RewritePatternSet &patterns) {
  patterns.add<LinearLowering>(patterns.getContext());
}

} // namespace kiln
