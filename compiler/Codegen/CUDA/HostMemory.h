//===- HostMemory.h - Which buffers the GPU target's host code owns -*- C++ -*-===//
#ifndef KILN_COMPILER_CODEGEN_CUDA_HOSTMEMORY_H
#define KILN_COMPILER_CODEGEN_CUDA_HOSTMEMORY_H

#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"

namespace kiln {

/// Whether `memref` is in host memory: on the host's stack or a global of
/// the host module (a constant), directly or through views. On the GPU
/// target every other buffer is device memory.
bool inHostMemory(mlir::Value memref);

/// The buffer operand whose values `op` reads on the host: a load's, or a
/// reshape's shape (read for the result's sizes); null for other ops.
mlir::OpOperand *bufferReadByHost(mlir::Operation *op);

} // namespace kiln

#endif // KILN_COMPILER_CODEGEN_CUDA_HOSTMEMORY_H
