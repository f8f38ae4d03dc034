// RUN: kiln-opt %s --split-input-file --kiln-fuse-activations | FileCheck %s

// Tests that GPT-2's gelu_new (0.5 * x first, the cube as pow(x, 3), the
// constants in f32) becomes kiln.gelu with the tanh approximation.

// CHECK-LABEL: func.func @gelu_tanh
//  CHECK-SAME: (%[[X:.+]]: tensor<?x?x256xf32>)
//       CHECK: %[[Y:.+]] = kiln.gelu %[[X]] {tanh_approximation} : tensor<?x?x256xf32>
//   CHECK-NOT: kiln.tanh
//       CHECK: return %[[Y]]
func.func @gelu_tanh(%x: tensor<?x?x256xf32>) -> tensor<?x?x256xf32> {
  %half = kiln.constant dense<0.5> : tensor<f32>
  %three = kiln.constant dense<3.0> : tensor<f32>
  %c = kiln.constant dense<4.471500e-02> : tensor<f32>
  %k = kiln.constant dense<0.797884583> : tensor<f32>
  %one = kiln.constant dense<1.0> : tensor<f32>
  %h = kiln.mul %x, %half : (tensor<?x?x256xf32>, tensor<f32>) -> tensor<?x?x256xf32>
  %cube = kiln.pow %x, %three : (tensor<?x?x256xf32>, tensor<f32>) -> tensor<?x?x256xf32>
  %sc = kiln.mul %cube, %c : (tensor<?x?x256xf32>, tensor<f32>) -> tensor<?x?x256xf32>
  %p = kiln.add %x, %sc : (tensor<?x?x256xf32>, tensor<?x?x256xf32>) -> tensor<?x?x256xf32>
  %s = kiln.mul %p, %k : (tensor<?x?x256xf32>, tensor<f32>) -> tensor<?x?x256xf32>
  %t = kiln.tanh %s : tensor<?x?x256xf32>
  %a = kiln.add %t, %one : (tensor<?x?x256xf32>, tensor<f32>) -> tensor<?x?x256xf32>
  %y = kiln.mul %h, %a : (tensor<?x?x256xf32>, tensor<?x?x256xf32>) -> tensor<?x?x256xf32>
  return %y : tensor<?x?x256xf32>
}

// -----

// Tests that torch's exact GELU export (x * (1 + erf(x / sqrt 2)), times 0.5
// last) becomes kiln.gelu without the approximation.

// CHECK-LABEL: func.func @gelu_erf
//  CHECK-SAME: (%[[X:.+]]: tensor<8x256xf32>)
//       CHECK: kiln.gelu %[[X]] : tensor<8x256xf32>
//   CHECK-NOT: kiln.erf
func.func @gelu_erf(%x: tensor<8x256xf32>) -> tensor<8x256xf32> {
  %sqrt2 = kiln.constant dense<1.41421354> : tensor<f32>
  %one = kiln.constant dense<1.0> : tensor<f32>
  %half = kiln.constant dense<0.5> : tensor<f32>
  %d = kiln.div %x, %sqrt2 : (tensor<8x256xf32>, tensor<f32>) -> tensor<8x256xf32>
  %e = kiln.erf %d : tensor<8x256xf32>
  %a = kiln.add %one, %e : (tensor<f32>, tensor<8x256xf32>) -> tensor<8x256xf32>
  %m = kiln.mul %x, %a : (tensor<8x256xf32>, tensor<8x256xf32>) -> tensor<8x256xf32>
  %y = kiln.mul %m, %half : (tensor<8x256xf32>, tensor<f32>) -> tensor<8x256xf32>
  return %y : tensor<8x256xf32>
}

// -----

// Tests that x * sigmoid(x) becomes kiln.silu in either operand order.

// CHECK-LABEL: func.func @silu
//  CHECK-SAME: (%[[X:.+]]: tensor<?x172xf32>)
//       CHECK: %[[A:.+]] = kiln.silu %[[X]] : tensor<?x172xf32>
//       CHECK: %[[B:.+]] = kiln.silu %[[X]] : tensor<?x172xf32>
//       CHECK: return %[[A]], %[[B]]
func.func @silu(%x: tensor<?x172xf32>) -> (tensor<?x172xf32>, tensor<?x172xf32>) {
  %s = kiln.sigmoid %x : tensor<?x172xf32>
  %a = kiln.mul %x, %s : (tensor<?x172xf32>, tensor<?x172xf32>) -> tensor<?x172xf32>
  %t = kiln.sigmoid %x : tensor<?x172xf32>
  %b = kiln.mul %t, %x : (tensor<?x172xf32>, tensor<?x172xf32>) -> tensor<?x172xf32>
  return %a, %b : tensor<?x172xf32>, tensor<?x172xf32>
}

// -----

// Tests that a different cubic coefficient is not GELU.

// CHECK-LABEL: func.func @gelu_wrong_constant
//   CHECK-NOT: kiln.gelu
func.func @gelu_wrong_constant(%x: tensor<256xf32>) -> tensor<256xf32> {
  %half = kiln.constant dense<0.5> : tensor<f32>
  %three = kiln.constant dense<3.0> : tensor<f32>
  %c = kiln.constant dense<4.4e-02> : tensor<f32>
  %k = kiln.constant dense<0.797884583> : tensor<f32>
  %one = kiln.constant dense<1.0> : tensor<f32>
  %h = kiln.mul %x, %half : (tensor<256xf32>, tensor<f32>) -> tensor<256xf32>
  %cube = kiln.pow %x, %three : (tensor<256xf32>, tensor<f32>) -> tensor<256xf32>
  %sc = kiln.mul %cube, %c : (tensor<256xf32>, tensor<f32>) -> tensor<256xf32>
  %p = kiln.add %x, %sc : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
  %s = kiln.mul %p, %k : (tensor<256xf32>, tensor<f32>) -> tensor<256xf32>
  %t = kiln.tanh %s : tensor<256xf32>
  %a = kiln.add %t, %one : (tensor<256xf32>, tensor<f32>) -> tensor<256xf32>
  %y = kiln.mul %h, %a : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
  return %y : tensor<256xf32>
}

// -----

// Tests that GELU does not fuse when the erf has another user.

// CHECK-LABEL: func.func @gelu_inner_used_twice
//   CHECK-NOT: kiln.gelu
func.func @gelu_inner_used_twice(%x: tensor<256xf32>) -> (tensor<256xf32>, tensor<256xf32>) {
  %sqrt2 = kiln.constant dense<1.41421354> : tensor<f32>
  %one = kiln.constant dense<1.0> : tensor<f32>
  %half = kiln.constant dense<0.5> : tensor<f32>
  %d = kiln.div %x, %sqrt2 : (tensor<256xf32>, tensor<f32>) -> tensor<256xf32>
  %e = kiln.erf %d : tensor<256xf32>
  %a = kiln.add %one, %e : (tensor<f32>, tensor<256xf32>) -> tensor<256xf32>
  %m = kiln.mul %x, %a : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
  %y = kiln.mul %m, %half : (tensor<256xf32>, tensor<f32>) -> tensor<256xf32>
  return %y, %e : tensor<256xf32>, tensor<256xf32>
}

// -----

// Tests that a 0.5 factor that broadcasts x to a larger shape is not GELU of
// x: kiln.gelu would keep x's shape.

// CHECK-LABEL: func.func @gelu_broadcast_factor
//   CHECK-NOT: kiln.gelu
func.func @gelu_broadcast_factor(%x: tensor<256xf32>) -> tensor<4x256xf32> {
  %sqrt2 = kiln.constant dense<1.41421354> : tensor<f32>
  %one = kiln.constant dense<1.0> : tensor<f32>
  %half = kiln.constant dense<0.5> : tensor<4x256xf32>
  %d = kiln.div %x, %sqrt2 : (tensor<256xf32>, tensor<f32>) -> tensor<256xf32>
  %e = kiln.erf %d : tensor<256xf32>
  %a = kiln.add %one, %e : (tensor<f32>, tensor<256xf32>) -> tensor<256xf32>
  %m = kiln.mul %x, %a : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
  %y = kiln.mul %m, %half : (tensor<256xf32>, tensor<4x256xf32>) -> tensor<4x256xf32>
  return %y : tensor<4x256xf32>
}

// -----

// Tests that x * sigmoid(y) is not SiLU.

// CHECK-LABEL: func.func @sigmoid_of_other_value
//   CHECK-NOT: kiln.silu
func.func @sigmoid_of_other_value(%x: tensor<172xf32>, %y: tensor<172xf32>) -> tensor<172xf32> {
  %s = kiln.sigmoid %y : tensor<172xf32>
  %m = kiln.mul %x, %s : (tensor<172xf32>, tensor<172xf32>) -> tensor<172xf32>
  return %m : tensor<172xf32>
}

// -----

// Tests that an erf of another value scaled by 1/sqrt(2) is not GELU of x
// (and that matching it does not trip over the product's other operand).

// CHECK-LABEL: func.func @erf_of_other_value
//   CHECK-NOT: kiln.gelu
func.func @erf_of_other_value(%x: tensor<256xf32>, %y: tensor<256xf32>) -> tensor<256xf32> {
  %r = kiln.constant dense<0.707106769> : tensor<f32>
  %one = kiln.constant dense<1.0> : tensor<f32>
  %half = kiln.constant dense<0.5> : tensor<f32>
  %d = kiln.mul %y, %r : (tensor<256xf32>, tensor<f32>) -> tensor<256xf32>
  %e = kiln.erf %d : tensor<256xf32>
  %a = kiln.add %one, %e : (tensor<f32>, tensor<256xf32>) -> tensor<256xf32>
  %m = kiln.mul %x, %a : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
  %o = kiln.mul %m, %half : (tensor<256xf32>, tensor<f32>) -> tensor<256xf32>
  return %o : tensor<256xf32>
}
