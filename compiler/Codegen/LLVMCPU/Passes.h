//===- Passes.h - The CPU target's code generation passes ------*- C++ -*-===//
#ifndef KILN_COMPILER_CODEGEN_LLVMCPU_PASSES_H
#define KILN_COMPILER_CODEGEN_LLVMCPU_PASSES_H

#include "compiler/Codegen/Common/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace kiln {

#define GEN_PASS_DECL
#include "compiler/Codegen/LLVMCPU/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "compiler/Codegen/LLVMCPU/Passes.h.inc"

} // namespace kiln

#endif // KILN_COMPILER_CODEGEN_LLVMCPU_PASSES_H
