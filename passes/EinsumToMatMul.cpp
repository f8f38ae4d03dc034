//===- EinsumToMatMul.cpp - The kiln-einsum-to-matmul pass ----------------===//
//
// A two-input einsum that contracts one letter is a batched matrix product
// written with letters: "bhqd,bhkd->bhqk" is Q · Kᵀ per (b, h). As
// kiln.einsum it would run as a scalar loop nest and hide the product from
// the passes after this one (attention fusion, GEMM epilogues, weight
// packing), so it becomes kiln.matmul, with kiln.transpose where the letters
// are not already in the order the product takes:
//
//   lhs [extra_a..., shared..., m, k] · rhs [extra_b..., shared..., k, n]
//   (or [..., n, k] read with transpose_b, where the second input lists n
//   first) -> [extra..., shared..., m, n]
//
// Letters are classified by meaning, not position: shared ones are in both
// inputs and the output (batch dims), k is in both inputs only (summed), m
// and n are in one input and the output. Of the letters only one input has,
// the latest it lists is its m (or n) and the rest stay leading batch dims
// of that input, which the product broadcasts over the other's; so only one
// input may have more than one. Anything else (no letter summed or several,
// a letter summed within one input, a diagonal, more or fewer than two
// inputs, integer elements) stays an einsum.
//
//===----------------------------------------------------------------------===//
#include "dialects/Kiln/IR/KilnOps.h"
#include "passes/Passes.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_KILNEINSUMTOMATMUL
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// How the letters of a two-input einsum map onto kiln.matmul's dims.
struct ProductLetters {
  std::string lhs, rhs, result; // the operands' and the product's order
  bool transposeB = false;
};

bool hasRepeatedLetter(llvm::StringRef term) {
  for (size_t i = 0; i < term.size(); ++i)
    if (term.find(term[i], i + 1) != llvm::StringRef::npos)
      return true;
  return false;
}

/// The product's letters for "a,b->out", or a reason it is no product.
FailureOr<ProductLetters> productLetters(llvm::StringRef a, llvm::StringRef b,
                                         llvm::StringRef out, std::string &why) {
  if (hasRepeatedLetter(a) || hasRepeatedLetter(b)) {
    why = "an input repeats a letter (a diagonal)";
    return failure();
  }
  std::string shared, summed, onlyA, onlyB;
  for (char c : a) {
    bool inB = b.contains(c), inOut = out.contains(c);
    if (!inB && !inOut) {
      why = std::string("letter '") + c + "' is summed within one input";
      return failure();
    }
    (inB ? (inOut ? shared : summed) : onlyA) += c;
  }
  for (char c : b) {
    if (a.contains(c))
      continue;
    if (!out.contains(c)) {
      why = std::string("letter '") + c + "' is summed within one input";
      return failure();
    }
    onlyB += c;
  }
  if (summed.size() != 1) {
    why = summed.empty() ? "no letter is summed" : "more than one letter is summed";
    return failure();
  }
  if (onlyA.empty() || onlyB.empty() || (onlyA.size() > 1 && onlyB.size() > 1)) {
    why = "each input needs a letter of its own, and only one may have several";
    return failure();
  }
  // The latest letter each input lists is its matrix dim, so that an input
  // already in product order needs no transpose.
  char m = onlyA.back(), n = onlyB.back(), k = summed[0];
  std::string extraA = onlyA.substr(0, onlyA.size() - 1);
  std::string extraB = onlyB.substr(0, onlyB.size() - 1);
  ProductLetters letters;
  letters.lhs = extraA + shared + m + k;
  // The second input keeps its own order of k and n (read with transpose_b
  // when n comes first): a transpose, if any, only brings the batch letters
  // forward, and attention's keys and values keep the [.., token, dim]
  // layout that attention fusion looks for.
  letters.transposeB = b.find(n) < b.find(k);
  letters.rhs = extraB + shared + (letters.transposeB ? std::string{n, k} : std::string{k, n});
  letters.result = extraA + extraB + shared + m + n;
  return letters;
}

/// Each letter's size: static where either input has it so.
llvm::DenseMap<char, int64_t> letterSizes(llvm::ArrayRef<std::string> terms,
                                          ValueRange inputs) {
  llvm::DenseMap<char, int64_t> sizes;
  for (auto [term, input] : llvm::zip(terms, inputs)) {
    ArrayRef<int64_t> shape = cast<RankedTensorType>(input.getType()).getShape();
    for (auto [c, dim] : llvm::zip(term, shape)) {
      auto [it, inserted] = sizes.try_emplace(c, dim);
      if (ShapedType::isDynamic(it->second))
        it->second = dim;
    }
  }
  return sizes;
}

struct EinsumAsMatMul : public OpRewritePattern<EinsumOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(EinsumOp op, PatternRewriter &rewriter) const override {
    std::string error;
    auto terms = parseEinsumEquation(op.getEquation(), error);
    if (failed(terms) || terms->inputs.size() != 2)
      return rewriter.notifyMatchFailure(op, "not an einsum of two inputs");
    auto resultType = cast<RankedTensorType>(op.getType());
    if (!isa<FloatType>(resultType.getElementType()))
      return rewriter.notifyMatchFailure(op, "integer elements");
    std::string why;
    auto letters = productLetters(terms->inputs[0], terms->inputs[1], terms->output, why);
    if (failed(letters))
      return rewriter.notifyMatchFailure(op, why);

    llvm::DenseMap<char, int64_t> sizes = letterSizes(terms->inputs, op.getInputs());
    auto typeOf = [&](llvm::StringRef order) {
      SmallVector<int64_t> shape;
      for (char c : order)
        shape.push_back(sizes.lookup(c));
      return RankedTensorType::get(shape, resultType.getElementType());
    };
    // `value`, whose dims are `from`'s letters, with its dims in `to`'s order.
    Location loc = op.getLoc();
    auto reorder = [&](Value value, llvm::StringRef from, llvm::StringRef to) -> Value {
      if (from == to)
        return value;
      SmallVector<int64_t> permutation;
      for (char c : to)
        permutation.push_back(from.find(c));
      // The last op takes the einsum's own type, which may know more dims.
      Type type = to == terms->output ? Type(resultType) : Type(typeOf(to));
      return rewriter.create<TransposeOp>(loc, type, value,
                                          rewriter.getDenseI64ArrayAttr(permutation));
    };
    Value lhs = reorder(op.getInputs()[0], terms->inputs[0], letters->lhs);
    Value rhs = reorder(op.getInputs()[1], terms->inputs[1], letters->rhs);
    Type productType = letters->result == terms->output ? Type(resultType)
                                                        : Type(typeOf(letters->result));
    auto product = rewriter.create<MatMulOp>(loc, productType, lhs, rhs, letters->transposeB);
    rewriter.replaceOp(op, reorder(product, letters->result, terms->output));
    return success();
  }
};

struct EinsumToMatMulPass : public impl::KilnEinsumToMatMulBase<EinsumToMatMulPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<EinsumAsMatMul>(&getContext());
    if (failed(applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
} // namespace kiln
