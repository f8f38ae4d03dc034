//===- PageKvCache.cpp - The generation engine's paged KV interface -------===//
//
// kiln-page-kv-cache (Passes.td). The past inputs of a decoder become reads
// of the engine's block pool, and its presents the new rows only, so that a
// step neither gathers the cache into dense tensors nor copies it into new
// presents.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/Kiln/IR/KilnOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"

namespace kiln {
#define GEN_PASS_DEF_KILNPAGEKVCACHE
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

constexpr llvm::StringLiteral kName = "kiln.name", kDims = "kiln.dims";

/// "PREFIX N.key" or "PREFIX N.value": N, with kv 0 or 1; -1 otherwise.
int64_t layerOf(StringRef name, StringRef prefix, int &kv) {
  if (!name.consume_front(prefix))
    return -1;
  for (kv = 0; kv < 2; ++kv) {
    StringRef digits = name;
    int64_t layer;
    if (digits.consume_back(kv ? ".value" : ".key") && !digits.getAsInteger(10, layer))
      return layer;
  }
  return -1;
}

struct PageKvCachePass : public impl::KilnPageKvCacheBase<PageKvCachePass> {
  using Base::Base;

  void runOnOperation() override {
    auto main = getOperation().lookupSymbol<func::FuncOp>("main");
    if (!main) {
      getOperation().emitError("kiln-page-kv-cache: the module has no @main");
      return signalPassFailure();
    }
    if (failed(rewrite(main)))
      signalPassFailure();
  }

  LogicalResult rewrite(func::FuncOp main) {
    auto fail = [&](const Twine &message) {
      return main.emitError("kiln-page-kv-cache: ") << message;
    };
    if (blockSize < 1)
      return fail("the block size must be at least 1");
    MLIRContext *context = main.getContext();
    Type poolElement = llvm::StringSwitch<Type>(kvDtype)
                           .Case("f32", Float32Type::get(context))
                           .Case("f16", Float16Type::get(context))
                           .Case("bf16", BFloat16Type::get(context))
                           .Default(Type());
    if (!poolElement)
      return fail("the KV dtype must be f32, f16 or bf16, not '" + Twine(kvDtype) + "'");
    Block &body = main.getBody().front();
    auto returnOp = cast<func::ReturnOp>(body.getTerminator());

    // The inputs it reads and the past inputs it replaces.
    Value inputIds, attentionMask;
    ArrayAttr inputIdsDims;
    SmallVector<std::array<int64_t, 2>> pastArgs; // [layer] -> arg per kv
    llvm::BitVector pastMask(main.getNumArguments());
    for (unsigned i = 0; i < main.getNumArguments(); ++i) {
      auto name = main.getArgAttrOfType<StringAttr>(i, kName);
      if (!name)
        continue;
      if (name.getValue() == "input_ids") {
        inputIds = main.getArgument(i);
        inputIdsDims = main.getArgAttrOfType<ArrayAttr>(i, kDims);
      } else if (name.getValue() == "attention_mask") {
        attentionMask = main.getArgument(i);
      }
      int kv = 0;
      int64_t layer = layerOf(name.getValue(), "past_key_values.", kv);
      if (layer < 0)
        continue;
      if ((int64_t)pastArgs.size() <= layer)
        pastArgs.resize(layer + 1, {-1, -1});
      pastArgs[layer][kv] = i;
      pastMask.set(i);
    }
    if (!inputIds || !attentionMask)
      return fail("the model needs inputs input_ids and attention_mask (their "
                  "widths give the padded past's)");
    if (pastArgs.empty())
      return fail("the model has no past_key_values.N.key/.value inputs");
    for (auto [layer, args] : llvm::enumerate(pastArgs))
      if (args[0] < 0 || args[1] < 0)
        return fail("past_key_values." + Twine(layer) + ".key or .value is missing");

    // Each layer's attention, found through its past.
    const int64_t numLayers = (int64_t)pastArgs.size();
    SmallVector<AttentionOp> attentions(numLayers);
    for (int64_t layer = 0; layer < numLayers; ++layer)
      for (int kv = 0; kv < 2; ++kv) {
        BlockArgument past = main.getArgument(pastArgs[layer][kv]);
        std::string what =
            "past_key_values." + std::to_string(layer) + (kv ? ".value" : ".key");
        for (OpOperand &use : past.getUses()) {
          Operation *user = use.getOwner();
          if (auto dim = dyn_cast<DimOp>(user)) {
            if (dim.getIndex() == 0 || dim.getIndex() == 2)
              continue;
          } else if (auto attention = dyn_cast<AttentionOp>(user)) {
            if (!attention.getPast().empty() && attention.getPast()[kv] == past &&
                (!attentions[layer] || attentions[layer] == attention)) {
              attentions[layer] = attention;
              continue;
            }
          }
          return fail(what + " is read by '" + user->getName().getStringRef() +
                      "': only its layer's fused attention and reads of its "
                      "batch and length can take a paged cache");
        }
        if (!attentions[layer])
          return fail(what + " is not the past of a fused attention (is "
                      "fuse-attention on?)");
      }

    // Every present feeds the outputs only; note which outputs.
    SmallVector<std::array<int64_t, 2>> presentResults(numLayers, {-1, -1});
    for (int64_t layer = 0; layer < numLayers; ++layer)
      for (int kv = 0; kv < 2; ++kv)
        for (OpOperand &use : attentions[layer].getPresents()[kv].getUses()) {
          if (use.getOwner() != returnOp)
            return fail("the present of layer " + Twine(layer) + " is read by '" +
                        use.getOwner()->getName().getStringRef() +
                        "', not only returned");
          presentResults[layer][kv] = use.getOperandNumber();
        }

    // The pool and the tables, as new inputs.
    auto pastType = cast<RankedTensorType>(main.getArgument(pastArgs[0][0]).getType());
    const int64_t kvHeads = pastType.getDimSize(1), headDim = pastType.getDimSize(3);
    if (ShapedType::isDynamic(kvHeads) || ShapedType::isDynamic(headDim))
      return fail("the past's head count and head size must be static, got ")
             << pastType;
    if (!pastType.getElementType().isF32())
      return fail("the past must be f32 to be paged, got ") << pastType;
    OpBuilder builder(context);
    Type i64 = builder.getI64Type();
    const int64_t dynamic = ShapedType::kDynamic;
    auto dimsAttr = [&](ArrayRef<StringRef> names) {
      SmallVector<Attribute> attrs;
      for (StringRef name : names)
        attrs.push_back(builder.getStringAttr(name));
      return builder.getArrayAttr(attrs);
    };
    StringRef batchName = "batch", sequenceName = "sequence";
    if (inputIdsDims && inputIdsDims.size() == 2) {
      batchName = cast<StringAttr>(inputIdsDims[0]).getValue();
      sequenceName = cast<StringAttr>(inputIdsDims[1]).getValue();
    }
    auto argAttrs = [&](StringRef name, ArrayAttr dims) {
      return builder.getDictionaryAttr(
          {builder.getNamedAttr(kName, builder.getStringAttr(name)),
           builder.getNamedAttr(kDims, dims)});
    };
    Location loc = main.getLoc();
    unsigned first = main.getNumArguments();
    (void)main.insertArgument(
        first,
        RankedTensorType::get({dynamic, numLayers, 2, kvHeads, blockSize, headDim},
                              poolElement),
        argAttrs("kv_cache", dimsAttr({"kv_blocks", "", "", "", "", ""})), loc);
    (void)main.insertArgument(first + 1, RankedTensorType::get({dynamic, dynamic}, i64),
                              argAttrs("block_tables", dimsAttr({batchName, "kv_table"})),
                              loc);
    (void)main.insertArgument(first + 2, RankedTensorType::get({dynamic}, i64),
                              argAttrs("past_lengths", dimsAttr({batchName})), loc);
    Value pool = main.getArgument(first), tables = main.getArgument(first + 1),
          lengths = main.getArgument(first + 2);

    // The padded past's width, at the top of the body.
    builder.setInsertionPointToStart(&body);
    auto scalar = RankedTensorType::get({}, i64);
    Value total = builder.create<DimOp>(loc, scalar, attentionMask, 1);
    Value fresh = builder.create<DimOp>(loc, scalar, inputIds, 1);
    Value width = builder.create<SubOp>(loc, scalar, total, fresh);
    Value batch = builder.create<DimOp>(loc, scalar, inputIds, 0);

    for (int64_t layer = 0; layer < numLayers; ++layer) {
      for (int kv = 0; kv < 2; ++kv)
        for (OpOperand &use :
             llvm::make_early_inc_range(main.getArgument(pastArgs[layer][kv]).getUses()))
          if (auto dim = dyn_cast<DimOp>(use.getOwner())) {
            dim.replaceAllUsesWith(dim.getIndex() == 0 ? batch : width);
            dim.erase();
          }
      AttentionOp attention = attentions[layer];
      builder.setInsertionPoint(attention);
      auto paged = builder.create<PagedAttentionOp>(
          attention.getLoc(), attention.getResult().getType(), attention.getQuery(),
          attention.getKey(), attention.getValue(), pool, tables, lengths, width,
          attention.getPositionBias(), attention.getKeep(), attention.getBias(),
          builder.getI64IntegerAttr(layer),
          attention.getScaleAttr(), attention.getMaskedValueAttr());
      attention.getResult().replaceAllUsesWith(paged.getResult());
      // The outputs: the new rows instead of the presents.
      for (int kv = 0; kv < 2; ++kv) {
        Value rows = kv ? attention.getValue() : attention.getKey();
        int64_t result = presentResults[layer][kv];
        if (result < 0)
          continue;
        returnOp.setOperand(result, rows);
        main.setResultAttrs(
            result, argAttrs(("new_key_values." + Twine(layer) + (kv ? ".value" : ".key")).str(),
                             dimsAttr({batchName, "", sequenceName, ""})));
      }
      attention.erase();
    }
    pastMask.resize(main.getNumArguments()); // the new inputs stay
    (void)main.eraseArguments(pastMask);
    main.setType(FunctionType::get(context, body.getArgumentTypes(),
                                   returnOp.getOperandTypes()));
    return success();
  }
};

} // namespace
} // namespace kiln
