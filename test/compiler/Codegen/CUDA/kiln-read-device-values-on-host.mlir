// RUN: kiln-opt %s --split-input-file --kiln-read-device-values-on-host | FileCheck %s

// The host reads a value and a shape from device buffers: it copies each
// into its stack first, once per block, and reads the copy. A kernel's
// read (inside a parallel loop) and the host's own buffers stay as they are.

// CHECK-LABEL: func.func @host_reads
// CHECK-SAME: (%[[K:.*]]: memref<i64>, %[[SHAPE:.*]]: memref<?xindex>, %[[X:.*]]: memref<?xf32>, %[[OWN:.*]]: index)
// CHECK: %[[KHOST:.*]] = memref.alloca() : memref<i64>
// CHECK: gpu.memcpy %[[KHOST]], %[[K]] : memref<i64>, memref<i64>
// CHECK: memref.load %[[KHOST]][]
// CHECK-NOT: gpu.memcpy %{{.*}}, %[[K]]
// CHECK: memref.load %[[KHOST]][]
// CHECK: %[[N:.*]] = memref.dim %[[SHAPE]], %c0
// CHECK: %[[SHOST:.*]] = memref.alloca(%[[N]]) : memref<?xindex>
// CHECK: gpu.memcpy %[[SHOST]], %[[SHAPE]]
// CHECK: memref.reshape %[[X]](%[[SHOST]])
// CHECK: scf.parallel
// CHECK:   memref.load %[[K]][]
// CHECK: %[[STACK:.*]] = memref.alloca() : memref<i64>
// CHECK-NOT: gpu.memcpy
// CHECK: memref.load %[[STACK]][]
func.func @host_reads(%k: memref<i64>, %shape: memref<?xindex>, %x: memref<?xf32>, %own: index) -> (i64, i64, memref<*xf32>, i64) {
  %a = memref.load %k[] : memref<i64>
  %b = memref.load %k[] : memref<i64>
  %r = memref.reshape %x(%shape) : (memref<?xf32>, memref<?xindex>) -> memref<*xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.parallel (%i) = (%c0) to (%c1) step (%c1) {
    %inside = memref.load %k[] : memref<i64>
    memref.store %inside, %k[] : memref<i64>
  }
  %stack = memref.alloca() : memref<i64>
  %s = memref.load %stack[] : memref<i64>
  return %a, %b, %r, %s : i64, i64, memref<*xf32>, i64
}
