//===- Passes.h - Code generation passes of every target -------*- C++ -*-===//
//
// The passes every target's lowering shares, and what the targets' passes
// agree on: the module attributes the compiler reads back, the entry and
// trap symbols, and the runtime's element types.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_COMPILER_CODEGEN_COMMON_PASSES_H
#define KILN_COMPILER_CODEGEN_COMMON_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "kiln/runtime.h"

namespace kiln {

/// Module attribute listing the weights, in entry-argument order.
constexpr llvm::StringLiteral kWeightsAttrName = "kiln.weights";
/// Module attribute listing each weight's name (weightName), in the same
/// order: how kilnc's calibration knows a product's weight across compiles.
constexpr llvm::StringLiteral kWeightNamesAttrName = "kiln.weight_names";
/// Module attribute that kiln-plan-memory leaves for the compiler's report
/// and manifest: arena_bytes, buffer_bytes, buffers and heap (see Passes.td).
constexpr llvm::StringLiteral kMemoryPlanAttrName = "kiln.memory_plan";
/// The symbol the runtime calls.
constexpr llvm::StringLiteral kEntrySymbol = "kiln_entry";
/// The runtime's handler of failed run-time checks; it does not return.
constexpr llvm::StringLiteral kTrapFunction = "kiln_rt_trap";
/// The runtime's kernels are named kiln_ukernel_*: they use the buffers they
/// are given only during the call, which memory planning relies on.
constexpr llvm::StringLiteral kUkernelPrefix = "kiln_ukernel_";
/// Marks the memref.alloca that holds a kernel's parameter struct
/// (kiln/abi/kernel_abi.h): the buffers' addresses stored into it are the
/// call's operands, used only during the call, so memory planning follows
/// them through it to the call.
constexpr llvm::StringLiteral kUkernelParamsAttrName = "kiln.ukernel_params";

/// The runtime's element type for `type`; KILN_DTYPE_INVALID when the runtime
/// cannot pass it.
kiln_dtype_t runtimeDtype(mlir::Type type);

#define GEN_PASS_DECL
#include "compiler/Codegen/Common/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "compiler/Codegen/Common/Passes.h.inc"

} // namespace kiln

#endif // KILN_COMPILER_CODEGEN_COMMON_PASSES_H
