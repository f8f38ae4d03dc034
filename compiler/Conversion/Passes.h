//===- Passes.h - Kiln conversion passes ------------------------*- C++ -*-===//
#ifndef KILN_COMPILER_CONVERSION_PASSES_H
#define KILN_COMPILER_CONVERSION_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"

namespace kiln {

#define GEN_PASS_DECL
#include "compiler/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "compiler/Conversion/Passes.h.inc"

} // namespace kiln

#endif // KILN_COMPILER_CONVERSION_PASSES_H
