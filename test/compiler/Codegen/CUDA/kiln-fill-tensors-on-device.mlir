// RUN: kiln-opt %s --split-input-file --kiln-fill-tensors-on-device | FileCheck %s

// A tensor of host values that a kernel reads: filled by a linalg.generic
// that picks each element's value by its row-major position.

// CHECK-LABEL: func.func @two_by_two
// CHECK-SAME: (%[[A:.*]]: i64, %[[B:.*]]: i64, %[[C:.*]]: i64, %[[D:.*]]: i64)
// CHECK: %[[EMPTY:.*]] = tensor.empty() : tensor<2x2xi64>
// CHECK: %[[FILLED:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]{{.*}} outs(%[[EMPTY]] : tensor<2x2xi64>)
// CHECK-DAG: %[[ROW:.*]] = linalg.index 0
// CHECK-DAG: %[[COL:.*]] = linalg.index 1
// CHECK: arith.select %{{.*}}, %[[C]], %[[D]]
// CHECK: arith.select %{{.*}}, %[[B]], %{{.*}}
// CHECK: %[[VALUE:.*]] = arith.select %{{.*}}, %[[A]], %{{.*}}
// CHECK: linalg.yield %[[VALUE]] : i64
// CHECK-NOT: tensor.from_elements
// CHECK: return %[[FILLED]]
func.func @two_by_two(%a: i64, %b: i64, %c: i64, %d: i64) -> tensor<2x2xi64> {
  %t = tensor.from_elements %a, %b, %c, %d : tensor<2x2xi64>
  return %t : tensor<2x2xi64>
}

// -----

// A rank-0 tensor: one element, no select.

// CHECK-LABEL: func.func @scalar
// CHECK: linalg.generic {{.*}}iterator_types = []
// CHECK-NEXT: ^bb0(%{{.*}}: i64):
// CHECK-NEXT: linalg.yield %arg0 : i64
func.func @scalar(%a: i64) -> tensor<i64> {
  %t = tensor.from_elements %a : tensor<i64>
  return %t : tensor<i64>
}

// -----

// A reshape's target shape stays: it is host bookkeeping.

// CHECK-LABEL: func.func @shape
// CHECK: %[[SHAPE:.*]] = tensor.from_elements
// CHECK: tensor.reshape %{{.*}}(%[[SHAPE]])
// CHECK-NOT: linalg.generic
func.func @shape(%x: tensor<?xf32>, %n: index) -> tensor<?x64xf32> {
  %c64 = arith.constant 64 : index
  %shape = tensor.from_elements %n, %c64 : tensor<2xindex>
  %r = tensor.reshape %x(%shape) : (tensor<?xf32>, tensor<2xindex>) -> tensor<?x64xf32>
  return %r : tensor<?x64xf32>
}
