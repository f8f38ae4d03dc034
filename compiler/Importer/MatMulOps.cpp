//===- MatMulOps.cpp - MatMul and Gemm ------------------------------------===//
#include "compiler/Importer/ImportContext.h"
#include "dialects/Kiln/IR/KilnOps.h"
#include "mlir/Dialect/Traits.h"

using namespace mlir;

namespace kiln {
namespace {

/// kiln.matmul of two operands of rank >= 2.
FailureOr<Value> buildMatMul(ImportContext &ctx, const onnx::NodeProto &node,
                             Value lhs, Value rhs, bool transposeB) {
  ArrayRef<int64_t> a = cast<RankedTensorType>(lhs.getType()).getShape();
  ArrayRef<int64_t> b = cast<RankedTensorType>(rhs.getType()).getShape();
  SmallVector<int64_t> shape;
  if (!OpTrait::util::getBroadcastedShape(a.drop_back(2), b.drop_back(2), shape))
    return ctx.error(node) << "batch dimensions of " << lhs.getType() << " and "
                           << rhs.getType() << " do not broadcast";
  shape.push_back(a[a.size() - 2]);
  shape.push_back(transposeB ? b[b.size() - 2] : b.back());
  auto type = RankedTensorType::get(shape, getElementTypeOrSelf(lhs));
  auto op = ctx.builder().create<MatMulOp>(ctx.loc(node), type, lhs, rhs);
  op.setTransposeB(transposeB);
  return op.getResult();
}

Value unsqueeze(ImportContext &ctx, const onnx::NodeProto &node, Value x,
                int64_t axis) {
  auto type = cast<RankedTensorType>(x.getType());
  SmallVector<int64_t> shape(type.getShape());
  shape.insert(shape.begin() + axis, 1);
  return ctx.builder().create<UnsqueezeOp>(
      ctx.loc(node), type.clone(shape), x,
      ctx.builder().getDenseI64ArrayAttr({axis}));
}

Value squeeze(ImportContext &ctx, const onnx::NodeProto &node, Value x,
              int64_t axis) {
  auto type = cast<RankedTensorType>(x.getType());
  SmallVector<int64_t> shape(type.getShape());
  shape.erase(shape.begin() + axis);
  return ctx.builder().create<SqueezeOp>(ctx.loc(node), type.clone(shape), x,
                                         ctx.builder().getDenseI64ArrayAttr({axis}));
}

/// NumPy matmul: a 1-D operand is promoted to a matrix and the added
/// dimension removed from the result.
LogicalResult importMatMul(ImportContext &ctx, const onnx::NodeProto &node) {
  auto operands = ctx.requiredInputs(node, 2);
  if (failed(operands))
    return failure();
  Value lhs = (*operands)[0], rhs = (*operands)[1];
  int64_t lhsRank = cast<RankedTensorType>(lhs.getType()).getRank();
  int64_t rhsRank = cast<RankedTensorType>(rhs.getType()).getRank();
  if (lhsRank == 0 || rhsRank == 0)
    return ctx.error(node) << "operands must have rank 1 or more";
  Value a = lhsRank == 1 ? unsqueeze(ctx, node, lhs, 0) : lhs;
  Value b = rhsRank == 1 ? unsqueeze(ctx, node, rhs, 1) : rhs;
  auto product = buildMatMul(ctx, node, a, b, /*transposeB=*/false);
  if (failed(product))
    return failure();
  Value result = *product;
  int64_t rank = cast<RankedTensorType>(result.getType()).getRank();
  if (rhsRank == 1)
    result = squeeze(ctx, node, result, rank - 1);
  if (lhsRank == 1)
    result = squeeze(ctx, node, result, rank - 2);
  ctx.setOutput(node, 0, result);
  return success();
}

/// Y = alpha * A' * B' + beta * C.
LogicalResult importGemm(ImportContext &ctx, const onnx::NodeProto &node) {
  auto a = ctx.requiredInput(node, 0);
  auto b = ctx.requiredInput(node, 1);
  auto alpha = ctx.floatAttr(node, "alpha", 1.0f);
  auto beta = ctx.floatAttr(node, "beta", 1.0f);
  auto transA = ctx.intAttr(node, "transA", 0);
  auto transB = ctx.intAttr(node, "transB", 0);
  if (failed(a) || failed(b) || failed(alpha) || failed(beta) ||
      failed(transA) || failed(transB))
    return failure();
  for (Value operand : {*a, *b})
    if (cast<RankedTensorType>(operand.getType()).getRank() != 2)
      return ctx.error(node) << "A and B must be matrices, got "
                             << operand.getType();
  OpBuilder &builder = ctx.builder();
  Location loc = ctx.loc(node);
  Value lhs = *a;
  if (*transA) {
    auto type = cast<RankedTensorType>(lhs.getType());
    lhs = builder.create<TransposeOp>(
        loc, type.clone({type.getDimSize(1), type.getDimSize(0)}), lhs,
        builder.getDenseI64ArrayAttr({1, 0}));
  }
  auto product = buildMatMul(ctx, node, lhs, *b, *transB != 0);
  if (failed(product))
    return failure();
  Value result = *product;
  Type element = getElementTypeOrSelf(result);
  if (*alpha != 1.0f)
    result = builder.create<MulOp>(loc, result.getType(), result,
                                   ctx.scalar(loc, element, *alpha));
  if (Value c = ctx.input(node, 2)) {
    if (*beta != 1.0f)
      c = builder.create<MulOp>(loc, c.getType(), c, ctx.scalar(loc, element, *beta));
    auto type = ctx.broadcastType(node, 0, element, {result, c});
    if (failed(type))
      return failure();
    result = builder.create<AddOp>(loc, *type, result, c);
  }
  ctx.setOutput(node, 0, result);
  return success();
}

} // namespace

void registerMatMulImporters(OpImporterRegistry &registry) {
  registry.add("MatMul", importMatMul, 1);
  registry.add("Gemm", importGemm, 7);
}

} // namespace kiln
