//===- Passes.h - The CUDA target's code generation passes -----*- C++ -*-===//
#ifndef KILN_COMPILER_CODEGEN_CUDA_PASSES_H
#define KILN_COMPILER_CODEGEN_CUDA_PASSES_H

#include "compiler/Codegen/Common/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace kiln {

#define GEN_PASS_DECL
#include "compiler/Codegen/CUDA/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "compiler/Codegen/CUDA/Passes.h.inc"

} // namespace kiln

#endif // KILN_COMPILER_CODEGEN_CUDA_PASSES_H
