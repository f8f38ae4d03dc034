// RUN: kiln-opt %s --split-input-file --kiln-allocate-on-device | FileCheck %s

// The host code's heap buffers (a result, one freed before the end) are
// device memory; its stack, the host's own bookkeeping, stays.

// CHECK-LABEL: func.func @heap_on_device
// CHECK-SAME: (%[[N:.*]]: index)
// CHECK: %[[SHAPE:.*]] = memref.alloca() : memref<2xindex>
// CHECK: %[[OUT:.*]] = gpu.alloc (%[[N]]) : memref<?x64xf32>
// CHECK: %[[TEMP:.*]] = gpu.alloc () : memref<64xf32>
// CHECK: gpu.dealloc %[[TEMP]] : memref<64xf32>
// CHECK-NOT: memref.alloc(
// CHECK-NOT: memref.dealloc
// CHECK: return %[[OUT]]
func.func @heap_on_device(%n: index) -> memref<?x64xf32> {
  %shape = memref.alloca() : memref<2xindex>
  %out = memref.alloc(%n) {alignment = 64 : i64} : memref<?x64xf32>
  %temp = memref.alloc() {alignment = 64 : i64} : memref<64xf32>
  memref.dealloc %temp : memref<64xf32>
  return %out : memref<?x64xf32>
}

// -----

// A kernel's own buffers are not the host's: a gpu.func is no func.func.

// CHECK-LABEL: gpu.func @kernel
// CHECK: memref.alloc() : memref<4xf32>
// CHECK-NOT: gpu.alloc
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @kernel() kernel {
      %scratch = memref.alloc() : memref<4xf32>
      gpu.return
    }
  }
}
