// RUN: kiln-opt %s --split-input-file --kiln-fuse-gemm-epilogues | FileCheck %s

// Tests that GPT-2's MLP-in (Conv1D: rows flattened, bias added, rows
// restored, tanh GELU) becomes one linear with bias and activation; the GELU
// moves before the reshape that restores the rows.

// CHECK-LABEL: func.func @bias_gelu_behind_reshape
//  CHECK-SAME: (%[[X:.+]]: tensor<?x64xf32>, %[[W:.+]]: tensor<64x256xf32>, %[[B:.+]]: tensor<256xf32>, %[[S:.+]]: tensor<3xi64>)
//       CHECK: %[[L:.+]] = kiln.linear %[[X]], %[[W]] bias %[[B]] activation gelu_tanh : (tensor<?x64xf32>, tensor<64x256xf32>, tensor<256xf32>) -> tensor<?x256xf32>
//       CHECK: %[[Y:.+]] = kiln.reshape %[[L]], %[[S]] : (tensor<?x256xf32>, tensor<3xi64>) -> tensor<?x?x?xf32>
//   CHECK-NOT: kiln.gelu
//       CHECK: return %[[Y]]
func.func @bias_gelu_behind_reshape(%x: tensor<?x64xf32>, %w: tensor<64x256xf32>, %b: tensor<256xf32>, %s: tensor<3xi64>) -> tensor<?x?x?xf32> {
  %p = kiln.matmul %x, %w : (tensor<?x64xf32>, tensor<64x256xf32>) -> tensor<?x256xf32>
  %a = kiln.add %p, %b : (tensor<?x256xf32>, tensor<256xf32>) -> tensor<?x256xf32>
  %r = kiln.reshape %a, %s : (tensor<?x256xf32>, tensor<3xi64>) -> tensor<?x?x?xf32>
  %g = kiln.gelu %r {tanh_approximation} : tensor<?x?x?xf32>
  return %g : tensor<?x?x?xf32>
}

// -----

// Tests that a residual added behind the reshape that restores the rows is
// fused when the reshape's target is provably the residual's shape (its
// entries are the residual's dims and 64): the residual is reshaped to the
// product's [-1, 64] instead, and the sum keeps its type through a cast.

// CHECK-LABEL: func.func @residual_behind_reshape
//  CHECK-SAME: (%[[H:.+]]: tensor<?x?x64xf32>, %[[X:.+]]: tensor<?x64xf32>, %[[W:.+]]: tensor<64x64xf32>, %[[B:.+]]: tensor<64xf32>)
//   CHECK-DAG: %[[FLAT:.+]] = kiln.constant dense<[-1, 64]> : tensor<2xi64>
//       CHECK: %[[SHAPE:.+]] = kiln.concat
//       CHECK: %[[R:.+]] = kiln.reshape %[[H]], %[[FLAT]] : (tensor<?x?x64xf32>, tensor<2xi64>) -> tensor<?x64xf32>
//       CHECK: %[[L:.+]] = kiln.linear %[[X]], %[[W]] bias %[[B]] residual %[[R]] : (tensor<?x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<?x64xf32>) -> tensor<?x64xf32>
//       CHECK: %[[Y:.+]] = kiln.reshape %[[L]], %[[SHAPE]] : (tensor<?x64xf32>, tensor<3xi64>) -> tensor<?x?x?xf32>
//       CHECK: %[[C:.+]] = tensor.cast %[[Y]] : tensor<?x?x?xf32> to tensor<?x?x64xf32>
//   CHECK-NOT: kiln.add
//       CHECK: return %[[C]]
func.func @residual_behind_reshape(%h: tensor<?x?x64xf32>, %x: tensor<?x64xf32>, %w: tensor<64x64xf32>, %b: tensor<64xf32>) -> tensor<?x?x64xf32> {
  %c64 = kiln.constant dense<64> : tensor<1xi64>
  %d0 = kiln.dim %h {index = 0 : i64} : tensor<?x?x64xf32> -> tensor<i64>
  %d1 = kiln.dim %h {index = 1 : i64} : tensor<?x?x64xf32> -> tensor<i64>
  %u0 = kiln.unsqueeze %d0 {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %u1 = kiln.unsqueeze %d1 {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %s = kiln.concat %u0, %u1, %c64 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  %p = kiln.matmul %x, %w : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  %a = kiln.add %p, %b : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
  %r = kiln.reshape %a, %s : (tensor<?x64xf32>, tensor<3xi64>) -> tensor<?x?x?xf32>
  %y = kiln.add %h, %r : (tensor<?x?x64xf32>, tensor<?x?x?xf32>) -> tensor<?x?x64xf32>
  return %y : tensor<?x?x64xf32>
}

// -----

// Tests Llama's MLP: SiLU on the gate product (no bias), and the residual
// added to the down product, whose rows trace back through the RMSNorm to
// the residual itself. The bias may come first in the add.

// CHECK-LABEL: func.func @llama_mlp
//  CHECK-SAME: (%[[H:.+]]: tensor<?x?x64xf32>, %[[G:.+]]: tensor<64x172xf32>, %[[U:.+]]: tensor<64x172xf32>, %[[D:.+]]: tensor<172x64xf32>, %[[NORM:.+]]: tensor<64xf32>, %[[BD:.+]]: tensor<64xf32>)
//       CHECK: %[[X:.+]] = kiln.rms_norm %[[H]], %[[NORM]]
//       CHECK: %[[GATE:.+]] = kiln.linear %[[X]], %[[G]] activation silu : (tensor<?x?x64xf32>, tensor<64x172xf32>) -> tensor<?x?x172xf32>
//       CHECK: %[[UP:.+]] = kiln.matmul %[[X]], %[[U]]
//       CHECK: %[[M:.+]] = kiln.mul %[[GATE]], %[[UP]]
//       CHECK: %[[Y:.+]] = kiln.linear %[[M]], %[[D]] bias %[[BD]] residual %[[H]] : (tensor<?x?x172xf32>, tensor<172x64xf32>, tensor<64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
//       CHECK: return %[[Y]]
func.func @llama_mlp(%h: tensor<?x?x64xf32>, %g: tensor<64x172xf32>, %u: tensor<64x172xf32>, %d: tensor<172x64xf32>, %norm: tensor<64xf32>, %bd: tensor<64xf32>) -> tensor<?x?x64xf32> {
  %x = kiln.rms_norm %h, %norm {axis = 2 : i64} : (tensor<?x?x64xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
  %gp = kiln.matmul %x, %g : (tensor<?x?x64xf32>, tensor<64x172xf32>) -> tensor<?x?x172xf32>
  %gate = kiln.silu %gp : tensor<?x?x172xf32>
  %up = kiln.matmul %x, %u : (tensor<?x?x64xf32>, tensor<64x172xf32>) -> tensor<?x?x172xf32>
  %m = kiln.mul %gate, %up : (tensor<?x?x172xf32>, tensor<?x?x172xf32>) -> tensor<?x?x172xf32>
  %dp = kiln.matmul %m, %d : (tensor<?x?x172xf32>, tensor<172x64xf32>) -> tensor<?x?x64xf32>
  %db = kiln.add %bd, %dp : (tensor<64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  %y = kiln.add %db, %h : (tensor<?x?x64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  return %y : tensor<?x?x64xf32>
}

// -----

// Tests the other activations (ReLU, exact GELU) and a weight stored [N, K]
// (transpose_b), which the linear keeps.

// CHECK-LABEL: func.func @activations
//       CHECK: kiln.linear %{{.+}}, %{{.+}} bias %{{.+}} activation relu {transpose_b} : (tensor<8x64xf32>, tensor<32x64xf32>, tensor<32xf32>) -> tensor<8x32xf32>
//       CHECK: kiln.linear %{{.+}}, %{{.+}} activation gelu : (tensor<8x64xf32>, tensor<64x32xf32>) -> tensor<8x32xf32>
//   CHECK-NOT: kiln.relu
//   CHECK-NOT: kiln.gelu
func.func @activations(%x: tensor<8x64xf32>, %wt: tensor<32x64xf32>, %w: tensor<64x32xf32>, %b: tensor<32xf32>) -> (tensor<8x32xf32>, tensor<8x32xf32>) {
  %p = kiln.matmul %x, %wt {transpose_b} : (tensor<8x64xf32>, tensor<32x64xf32>) -> tensor<8x32xf32>
  %a = kiln.add %p, %b : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  %r = kiln.relu %a : tensor<8x32xf32>
  %q = kiln.matmul %x, %w : (tensor<8x64xf32>, tensor<64x32xf32>) -> tensor<8x32xf32>
  %g = kiln.gelu %q : tensor<8x32xf32>
  return %r, %g : tensor<8x32xf32>, tensor<8x32xf32>
}

// -----

// Tests that nothing fuses where an intermediate has another user: the
// product, the biased sum, and the reshape behind which the activation sits.

// CHECK-LABEL: func.func @other_users
//   CHECK-NOT: kiln.linear
func.func @other_users(%x: tensor<?x64xf32>, %w: tensor<64x256xf32>, %b: tensor<256xf32>, %s: tensor<3xi64>)
    -> (tensor<?x256xf32>, tensor<?x256xf32>, tensor<?x256xf32>, tensor<?x?x?xf32>, tensor<?x?x?xf32>) {
  %p = kiln.matmul %x, %w : (tensor<?x64xf32>, tensor<64x256xf32>) -> tensor<?x256xf32>
  %a = kiln.add %p, %b : (tensor<?x256xf32>, tensor<256xf32>) -> tensor<?x256xf32>
  %q = kiln.matmul %x, %w : (tensor<?x64xf32>, tensor<64x256xf32>) -> tensor<?x256xf32>
  %g = kiln.gelu %q : tensor<?x256xf32>
  %t = kiln.matmul %x, %w : (tensor<?x64xf32>, tensor<64x256xf32>) -> tensor<?x256xf32>
  %r = kiln.reshape %t, %s : (tensor<?x256xf32>, tensor<3xi64>) -> tensor<?x?x?xf32>
  %h = kiln.silu %r : tensor<?x?x?xf32>
  return %p, %g, %q, %h, %r : tensor<?x256xf32>, tensor<?x256xf32>, tensor<?x256xf32>, tensor<?x?x?xf32>, tensor<?x?x?xf32>
}

// -----

// Tests that a bias that is not one value per column ([1, N], or [1] that
// would broadcast) is not fused, nor is a product by a batch of weights
// (3-D), nor an f16 product.

// CHECK-LABEL: func.func @not_a_bias
//   CHECK-NOT: kiln.linear
func.func @not_a_bias(%x: tensor<8x64xf32>, %w: tensor<64x32xf32>, %b2: tensor<1x32xf32>, %b1: tensor<1xf32>,
                      %xb: tensor<2x8x64xf32>, %wb: tensor<2x64x32xf32>, %bb: tensor<32xf32>,
                      %xh: tensor<8x64xf16>, %wh: tensor<64x32xf16>, %bh: tensor<32xf16>)
    -> (tensor<8x32xf32>, tensor<8x32xf32>, tensor<2x8x32xf32>, tensor<8x32xf16>) {
  %p = kiln.matmul %x, %w : (tensor<8x64xf32>, tensor<64x32xf32>) -> tensor<8x32xf32>
  %a = kiln.add %p, %b2 : (tensor<8x32xf32>, tensor<1x32xf32>) -> tensor<8x32xf32>
  %q = kiln.matmul %x, %w : (tensor<8x64xf32>, tensor<64x32xf32>) -> tensor<8x32xf32>
  %c = kiln.add %q, %b1 : (tensor<8x32xf32>, tensor<1xf32>) -> tensor<8x32xf32>
  %pb = kiln.matmul %xb, %wb : (tensor<2x8x64xf32>, tensor<2x64x32xf32>) -> tensor<2x8x32xf32>
  %ab = kiln.add %pb, %bb : (tensor<2x8x32xf32>, tensor<32xf32>) -> tensor<2x8x32xf32>
  %ph = kiln.matmul %xh, %wh : (tensor<8x64xf16>, tensor<64x32xf16>) -> tensor<8x32xf16>
  %ah = kiln.add %ph, %bh : (tensor<8x32xf16>, tensor<32xf16>) -> tensor<8x32xf16>
  return %a, %c, %ab, %ah : tensor<8x32xf32>, tensor<8x32xf32>, tensor<2x8x32xf32>, tensor<8x32xf16>
}

// -----

// Tests that a residual is not fused where either side could broadcast: a
// static 1 against a dynamic size, and two dynamic sizes that trace to
// different sources (separate arguments).

// CHECK-LABEL: func.func @residual_broadcasts
//   CHECK-NOT: residual
func.func @residual_broadcasts(%x: tensor<?x?x64xf32>, %w: tensor<64x64xf32>, %one: tensor<1x?x64xf32>, %other: tensor<?x?x64xf32>)
    -> (tensor<?x?x64xf32>, tensor<?x?x64xf32>) {
  %p = kiln.matmul %x, %w : (tensor<?x?x64xf32>, tensor<64x64xf32>) -> tensor<?x?x64xf32>
  %a = kiln.add %p, %one : (tensor<?x?x64xf32>, tensor<1x?x64xf32>) -> tensor<?x?x64xf32>
  %q = kiln.matmul %x, %w : (tensor<?x?x64xf32>, tensor<64x64xf32>) -> tensor<?x?x64xf32>
  %b = kiln.add %q, %other : (tensor<?x?x64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  return %a, %b : tensor<?x?x64xf32>, tensor<?x?x64xf32>
}

// -----

// Tests that the stages fuse only in the epilogue's order: an activation
// after the residual add, or a bias after the activation, stays outside.

// CHECK-LABEL: func.func @stage_order
//  CHECK-SAME: (%[[X:.+]]: tensor<8x64xf32>, %[[W:.+]]: tensor<64x64xf32>, %[[B:.+]]: tensor<64xf32>)
//       CHECK: %[[R:.+]] = kiln.linear %[[X]], %[[W]] residual %[[X]]
//       CHECK: kiln.gelu %[[R]]
//       CHECK: %[[A:.+]] = kiln.linear %[[X]], %[[W]] activation silu :
//       CHECK: kiln.add %[[A]], %[[B]]
func.func @stage_order(%x: tensor<8x64xf32>, %w: tensor<64x64xf32>, %b: tensor<64xf32>) -> (tensor<8x64xf32>, tensor<8x64xf32>) {
  %p = kiln.matmul %x, %w : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
  %r = kiln.add %p, %x : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32>
  %g = kiln.gelu %r : tensor<8x64xf32>
  %q = kiln.matmul %x, %w : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
  %s = kiln.silu %q : tensor<8x64xf32>
  %a = kiln.add %s, %b : (tensor<8x64xf32>, tensor<64xf32>) -> tensor<8x64xf32>
  return %g, %a : tensor<8x64xf32>, tensor<8x64xf32>
}
