//===- MatMulOps.cpp - MatMul, Gemm and Einsum ----------------------------===//
#include "compiler/Importer/ImportContext.h"
#include "dialects/Kiln/IR/KilnOps.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;

namespace kiln {
namespace {

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
  auto product = ctx.matMul(node, a, b);
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
  auto product = ctx.matMul(node, lhs, *b, *transB != 0);
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

/// Rewrites an ONNX Einsum equation into kiln.einsum's explicit form for
/// inputs of `ranks`: spaces go, each ellipsis becomes letters the equation
/// does not use (right-aligned, as its dims broadcast), and an implicit
/// output becomes the ellipsis dims followed by the letters that appear
/// once, in alphabetical order (NumPy's rule).
FailureOr<std::string> explicitEinsum(ImportContext &ctx, const onnx::NodeProto &node,
                                      StringRef equation, ArrayRef<int64_t> ranks) {
  std::string text;
  for (char c : equation)
    if (c != ' ')
      text.push_back(c);
  StringRef lhs = text, output;
  bool explicitOutput = StringRef(text).contains("->");
  if (explicitOutput)
    std::tie(lhs, output) = StringRef(text).split("->");
  SmallVector<StringRef> terms;
  lhs.split(terms, ',');
  if (terms.size() != ranks.size())
    return ctx.error(node) << "equation \"" << equation << "\" has " << terms.size()
                           << " inputs but the node has " << ranks.size();
  // Letters for the ellipsis dims: ones the equation leaves unused.
  std::string spare;
  for (char c : StringRef("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"))
    if (text.find(c) == std::string::npos)
      spare.push_back(c);
  SmallVector<std::string> expanded;
  int64_t ellipsisDims = 0;
  for (auto [term, rank] : llvm::zip(terms, ranks)) {
    size_t at = term.find("...");
    int64_t letters = term.size() - (at == StringRef::npos ? 0 : 3);
    int64_t covered = at == StringRef::npos ? 0 : rank - letters;
    if (covered < 0 || (at == StringRef::npos && letters != rank))
      return ctx.error(node) << "term \"" << term << "\" does not fit an input of rank "
                             << rank;
    ellipsisDims = std::max(ellipsisDims, covered);
  }
  if (ellipsisDims > static_cast<int64_t>(spare.size()))
    return ctx.error(node) << "equation \"" << equation << "\" leaves too few letters for its ellipsis";
  std::string ellipsis = spare.substr(0, ellipsisDims);
  auto expand = [&](StringRef term, int64_t covered) {
    size_t at = term.find("...");
    if (at == StringRef::npos)
      return term.str();
    return (term.take_front(at) + ellipsis.substr(ellipsisDims - covered) +
            term.drop_front(at + 3))
        .str();
  };
  std::string result;
  for (auto [term, rank] : llvm::zip(terms, ranks)) {
    int64_t letters = term.size() - (term.contains("...") ? 3 : 0);
    result += (result.empty() ? "" : ",") + expand(term, rank - letters);
  }
  std::string out;
  if (explicitOutput) {
    out = expand(output, ellipsisDims);
  } else {
    std::string once;
    for (char c : lhs)
      if (llvm::isAlpha(c) && llvm::count(lhs, c) == 1)
        once.push_back(c);
    llvm::sort(once);
    out = ellipsis + once;
  }
  return result + "->" + out;
}

/// Einsum as kiln.einsum, with the result's dims from the letters' sizes.
LogicalResult importEinsum(ImportContext &ctx, const onnx::NodeProto &node) {
  auto equation = ctx.stringAttr(node, "equation", "");
  if (failed(equation))
    return failure();
  SmallVector<Value> inputs;
  SmallVector<int64_t> ranks;
  for (int i = 0; i < node.input_size(); ++i) {
    auto input = ctx.requiredInput(node, i);
    if (failed(input))
      return failure();
    inputs.push_back(*input);
    ranks.push_back(cast<RankedTensorType>(input->getType()).getRank());
  }
  if (inputs.empty())
    return ctx.error(node) << "needs at least one input";
  auto normalized = explicitEinsum(ctx, node, *equation, ranks);
  if (failed(normalized))
    return failure();
  std::string error;
  auto terms = parseEinsumEquation(*normalized, error);
  if (failed(terms))
    return ctx.error(node) << error;
  llvm::DenseMap<char, int64_t> sizes;
  for (auto [term, input] : llvm::zip(terms->inputs, inputs))
    for (auto [c, dim] : llvm::zip(term, cast<RankedTensorType>(input.getType()).getShape())) {
      auto [it, inserted] = sizes.try_emplace(c, dim);
      if (ShapedType::isDynamic(it->second))
        it->second = dim;
    }
  SmallVector<int64_t> shape;
  for (char c : terms->output)
    shape.push_back(sizes.lookup(c));
  OpBuilder &b = ctx.builder();
  auto resultType = ctx.resultType(node, 0, getElementTypeOrSelf(inputs.front()), shape);
  ctx.setOutput(node, 0, b.create<EinsumOp>(ctx.loc(node), resultType, inputs,
                                            b.getStringAttr(*normalized)));
  return success();
}

} // namespace

void registerMatMulImporters(OpImporterRegistry &registry) {
  registry.add("MatMul", importMatMul, 1);
  registry.add("Gemm", importGemm, 7);
  registry.add("Einsum", importEinsum, 12);
}

} // namespace kiln
