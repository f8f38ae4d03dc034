// RUN: kiln-opt %s --split-input-file --kiln-keep-shapes-on-host | FileCheck %s

// A reshape's target shape, written by the host: on its stack.

// CHECK-LABEL: func.func @shape
// CHECK: %[[SHAPE:.*]] = memref.alloca() {alignment = 64 : i64} : memref<2xindex>
// CHECK: memref.store %{{.*}}, %[[SHAPE]]
// CHECK: memref.reshape %{{.*}}(%[[SHAPE]])
// CHECK-NOT: memref.dealloc
func.func @shape(%x: memref<?xf32>, %n: index) -> memref<?x64xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %shape = memref.alloc() {alignment = 64 : i64} : memref<2xindex>
  memref.store %n, %shape[%c0] : memref<2xindex>
  memref.store %c64, %shape[%c1] : memref<2xindex>
  %r = memref.reshape %x(%shape) : (memref<?xf32>, memref<2xindex>) -> memref<?x64xf32>
  memref.dealloc %shape : memref<2xindex>
  return %r : memref<?x64xf32>
}

// -----

// Not a shape: an index buffer that is also read (by a kernel, later), and
// a buffer of data reshaped.

// CHECK-LABEL: func.func @not_only_a_shape
// CHECK: memref.alloc() : memref<2xindex>
// CHECK: memref.alloc() : memref<2xi64>
// CHECK-NOT: memref.alloca
func.func @not_only_a_shape(%x: memref<?xf32>, %n: index, %shape: memref<2xindex>) -> (index, memref<?x2xi64>) {
  %c0 = arith.constant 0 : index
  %indices = memref.alloc() : memref<2xindex>
  memref.store %n, %indices[%c0] : memref<2xindex>
  %read = memref.load %indices[%c0] : memref<2xindex>
  %data = memref.alloc() : memref<2xi64>
  %r = memref.reshape %data(%shape) : (memref<2xi64>, memref<2xindex>) -> memref<?x2xi64>
  return %read, %r : index, memref<?x2xi64>
}
