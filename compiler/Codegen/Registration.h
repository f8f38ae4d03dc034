//===- Registration.h - Code generation for kiln-opt and kilnc -*- C++ -*-===//
//
// What the tools register of code generation: every room's passes and
// pipelines, and the dialects and translations they need.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_COMPILER_CODEGEN_REGISTRATION_H
#define KILN_COMPILER_CODEGEN_REGISTRATION_H

#include "mlir/IR/DialectRegistry.h"

namespace kiln {

/// The passes of Common/ and of each target's room, for kiln-opt.
void registerKilnCodegenPasses();

/// The pipelines as kiln-opt pipelines: kiln-lower-to-tensors (every target)
/// kiln-lower-to-llvm-cpu and kiln-lower-to-cuda.
void registerKilnPipelines();

/// Every dialect, interface model and LLVM translation that code generation
/// needs.
void registerCodegenDialects(mlir::DialectRegistry &registry);

} // namespace kiln

#endif // KILN_COMPILER_CODEGEN_REGISTRATION_H
