//===- LibdeviceToIntrinsics.cpp - The kiln-libdevice-to-intrinsics pass --===//
#include "compiler/Codegen/CUDA/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/PatternMatch.h"

#include <functional>

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_LIBDEVICETOINTRINSICS
#include "compiler/Codegen/CUDA/Passes.h.inc"

namespace {

using Replacement = std::function<Value(OpBuilder &, Location, ValueRange)>;

template <typename IntrinsicOp> Replacement intrinsic() {
  return [](OpBuilder &b, Location loc, ValueRange args) -> Value {
    return b.create<IntrinsicOp>(loc, args.front().getType(), args);
  };
}

Value remainder(OpBuilder &b, Location loc, ValueRange args) {
  return b.create<LLVM::FRemOp>(loc, args[0], args[1]);
}

Value reciprocalSquareRoot(OpBuilder &b, Location loc, ValueRange args) {
  Type type = args.front().getType();
  Value one = b.create<LLVM::ConstantOp>(loc, type, b.getFloatAttr(type, 1.0));
  return b.create<LLVM::FDivOp>(loc, one, b.create<LLVM::SqrtOp>(loc, type, args));
}

/// The libdevice functions kiln replaces, by their f32 name; the f64 one
/// is the same without the trailing `f`.
const llvm::StringMap<Replacement> &replacements() {
  static const llvm::StringMap<Replacement> table = [] {
    llvm::StringMap<Replacement> byF32Name = {
        {"__nv_sqrtf", intrinsic<LLVM::SqrtOp>()},
        {"__nv_fabsf", intrinsic<LLVM::FAbsOp>()},
        {"__nv_floorf", intrinsic<LLVM::FFloorOp>()},
        {"__nv_ceilf", intrinsic<LLVM::FCeilOp>()},
        {"__nv_truncf", intrinsic<LLVM::FTruncOp>()},
        {"__nv_rintf", intrinsic<LLVM::RintOp>()},
        {"__nv_roundf", intrinsic<LLVM::RoundOp>()},
        {"__nv_fmaf", intrinsic<LLVM::FMAOp>()},
        {"__nv_fminf", intrinsic<LLVM::MinNumOp>()},
        {"__nv_fmaxf", intrinsic<LLVM::MaxNumOp>()},
        {"__nv_copysignf", intrinsic<LLVM::CopySignOp>()},
        {"__nv_rsqrtf", reciprocalSquareRoot},
        {"__nv_fmodf", remainder},
    };
    llvm::StringMap<Replacement> both;
    for (const auto &entry : byF32Name) {
      both[entry.getKey()] = entry.getValue();
      both[entry.getKey().drop_back()] = entry.getValue();
    }
    return both;
  }();
  return table;
}

struct LibdeviceToIntrinsicsPass
    : public impl::LibdeviceToIntrinsicsBase<LibdeviceToIntrinsicsPass> {
  void runOnOperation() override {
    gpu::GPUModuleOp kernels = getOperation();
    IRRewriter rewriter(&getContext());
    kernels.walk([&](LLVM::CallOp call) {
      std::optional<StringRef> callee = call.getCallee();
      if (!callee)
        return;
      auto replacement = replacements().find(*callee);
      if (replacement == replacements().end())
        return;
      rewriter.setInsertionPoint(call);
      Value result = replacement->second(rewriter, call.getLoc(), call.getArgOperands());
      rewriter.replaceOp(call, result);
    });
    for (auto function : llvm::make_early_inc_range(kernels.getOps<LLVM::LLVMFuncOp>()))
      if (function.isExternal() && function.symbolKnownUseEmpty(kernels))
        function.erase();
  }
};

} // namespace
} // namespace kiln
