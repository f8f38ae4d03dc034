// RUN: kiln-opt %s --split-input-file --kiln-lower-to-tensors | FileCheck %s
// RUN: kiln-opt %s --split-input-file --kiln-convert-to-linalg --canonicalize | FileCheck %s --check-prefix=UNFUSED

// Tests that the tensor lowering pipeline fuses a chain of elementwise ops
// into the reduction that consumes it: the add and the broadcast multiply
// are computed inside the sum's loop, and nothing else is left.

// CHECK-LABEL: func.func @main
//       CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%arg0, %arg1, %arg2 : tensor<?x64xf32>, tensor<?x64xf32>, tensor<64xf32>)
//  CHECK-NEXT: ^bb0(%[[X:.+]]: f32, %[[Y:.+]]: f32, %[[S:.+]]: f32, %[[ACC:.+]]: f32):
//  CHECK-NEXT: %[[A:.+]] = arith.addf %[[X]], %[[Y]] : f32
//  CHECK-NEXT: %[[M:.+]] = arith.mulf %[[A]], %[[S]] : f32
//  CHECK-NEXT: %[[R:.+]] = arith.addf %[[ACC]], %[[M]] fastmath<reassoc> : f32
//  CHECK-NEXT: linalg.yield %[[R]] : f32
//   CHECK-NOT: linalg.generic
//       CHECK: return

// Without the fusion (the lowering alone), each op is a loop of its own.
// UNFUSED-COUNT-3: linalg.generic
//       UNFUSED: return
func.func @main(%x: tensor<?x64xf32>, %y: tensor<?x64xf32>, %s: tensor<64xf32>) -> tensor<?x1xf32> {
  %a = kiln.add %x, %y : (tensor<?x64xf32>, tensor<?x64xf32>) -> tensor<?x64xf32>
  %m = kiln.mul %a, %s : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
  %r = kiln.reduce_sum %m {axes = array<i64: 1>, keep_dims = true} : (tensor<?x64xf32>) -> tensor<?x1xf32>
  return %r : tensor<?x1xf32>
}

// -----

// Tests that an RMS norm becomes two loops: the square is computed inside
// the mean's reduction, and the division, epsilon and reciprocal square
// root (one value per row, broadcast) inside the scaling loop.

// CHECK-LABEL: func.func @main
//       CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%arg0 : tensor<?x64xf32>)
//       CHECK: arith.mulf %[[IN:.+]], %[[IN]] : f32
//       CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]} ins(%arg0, %{{.+}}, %arg1 : tensor<?x64xf32>, tensor<?x1xf32>, tensor<64xf32>)
//       CHECK: arith.divf
//  CHECK-NEXT: arith.addf
//  CHECK-NEXT: math.rsqrt
//  CHECK-NEXT: arith.mulf
//  CHECK-NEXT: arith.mulf
//   CHECK-NOT: linalg.generic
//       CHECK: return

// UNFUSED-COUNT-7: linalg.generic
//       UNFUSED: return
func.func @main(%x: tensor<?x64xf32>, %w: tensor<64xf32>) -> tensor<?x64xf32> {
  %y = kiln.rms_norm %x, %w {axis = 1 : i64, epsilon = 1.0e-05 : f32} : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// Tests that a value with two consumers, each able to absorb it, is
// computed in both (kiln-duplicate-elementwise-producers copies it first):
// the add is inside the reduction and inside the negation, and no loop
// writes it.

// CHECK-LABEL: func.func @main
//       CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%arg0, %arg1 : tensor<?x64xf32>, tensor<?x64xf32>)
//  CHECK-NEXT: ^bb0
//  CHECK-NEXT: arith.addf
//       CHECK: linalg.generic {{.*}} ins(%arg0, %arg1 : tensor<?x64xf32>, tensor<?x64xf32>)
//  CHECK-NEXT: ^bb0
//  CHECK-NEXT: arith.addf
//  CHECK-NEXT: arith.negf
//   CHECK-NOT: linalg.generic
//       CHECK: return
func.func @main(%x: tensor<?x64xf32>, %y: tensor<?x64xf32>) -> (tensor<?x1xf32>, tensor<?x64xf32>) {
  %a = kiln.add %x, %y : (tensor<?x64xf32>, tensor<?x64xf32>) -> tensor<?x64xf32>
  %r = kiln.reduce_sum %a {axes = array<i64: 1>, keep_dims = true} : (tensor<?x64xf32>) -> tensor<?x1xf32>
  %n = kiln.neg %a : tensor<?x64xf32>
  return %r, %n : tensor<?x1xf32>, tensor<?x64xf32>
}
