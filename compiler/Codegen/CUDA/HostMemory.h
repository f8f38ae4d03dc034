//===- HostMemory.h - Which buffers the GPU target's host code owns -*- C++ -*-===//
#ifndef KILN_COMPILER_CODEGEN_CUDA_HOSTMEMORY_H
#define KILN_COMPILER_CODEGEN_CUDA_HOSTMEMORY_H

#include "mlir/IR/Value.h"

namespace kiln {

/// Whether `memref` is in host memory: on the host's stack or a global of
/// the host module (a constant), directly or through views. On the GPU
/// target every other buffer is device memory.
bool inHostMemory(mlir::Value memref);

} // namespace kiln

#endif // KILN_COMPILER_CODEGEN_CUDA_HOSTMEMORY_H
