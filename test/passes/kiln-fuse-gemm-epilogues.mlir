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

// Tests that a packed linear (an importer may make one: ONNX Runtime's
// MatMulNBits) takes an epilogue and keeps its static N, which a packed
// weight needs: the fused op keeps the product's type and is cast to the
// add's, which lost N.

// CHECK-LABEL: func.func @fuse_into_packed
//       CHECK: %[[Y:.+]] = kiln.linear %{{.+}}, %{{.+}} residual %{{.+}} {packed} : (tensor<?x8xf32>, tensor<2x8x64xf32>, tensor<?x?xf32>) -> tensor<?x120xf32>
//       CHECK: %[[C:.+]] = tensor.cast %[[Y]] : tensor<?x120xf32> to tensor<?x?xf32>
//       CHECK: return %[[C]]
func.func @fuse_into_packed(%x: tensor<?x8xf32>, %w: tensor<2x8x64xf32>, %r: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %p = kiln.linear %x, %w {packed} : (tensor<?x8xf32>, tensor<2x8x64xf32>) -> tensor<?x120xf32>
  %y = kiln.add %p, %r : (tensor<?x120xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}

// -----

// Tests that a 4-bit packed linear keeps its scales, zero points and group
// size when its activation and residual fuse into it.

// CHECK-LABEL: func.func @fuse_into_uint4
//       CHECK: %[[G:.+]] = kiln.linear %{{.+}}, %{{.+}} scales %{{.+}} zero_points %{{.+}} activation silu {group_size = 32 : i64, packed}
//       CHECK: kiln.linear %{{.+}}, %{{.+}} scales %{{.+}} zero_points %{{.+}} gate %[[G]] residual %{{.+}} {group_size = 32 : i64, packed}
//   CHECK-NOT: kiln.silu
//   CHECK-NOT: kiln.mul
//   CHECK-NOT: kiln.add
func.func @fuse_into_uint4(%x: tensor<?x64xf32>, %w: tensor<1x64x32xui8>, %s: tensor<1x2x64xf32>, %z: tensor<1x2x64xui8>, %r: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %g = kiln.linear %x, %w scales %s zero_points %z {packed, group_size = 32 : i64} : (tensor<?x64xf32>, tensor<1x64x32xui8>, tensor<1x2x64xf32>, tensor<1x2x64xui8>) -> tensor<?x64xf32>
  %a = kiln.silu %g : tensor<?x64xf32>
  %u = kiln.linear %x, %w scales %s zero_points %z {packed, group_size = 32 : i64} : (tensor<?x64xf32>, tensor<1x64x32xui8>, tensor<1x2x64xf32>, tensor<1x2x64xui8>) -> tensor<?x64xf32>
  %m = kiln.mul %a, %u : (tensor<?x64xf32>, tensor<?x64xf32>) -> tensor<?x64xf32>
  %y = kiln.add %m, %r : (tensor<?x64xf32>, tensor<?x64xf32>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// Tests that a residual added behind the reshape that restores the rows is
// fused when the reshape's target is provably the residual's shape (its
// entries are the residual's dims and 64): the residual is reshaped to the
// product's [-1, 64] instead, and the reshape after the linear takes the
// sum's type.

// CHECK-LABEL: func.func @residual_behind_reshape
//  CHECK-SAME: (%[[H:.+]]: tensor<?x?x64xf32>, %[[X:.+]]: tensor<?x64xf32>, %[[W:.+]]: tensor<64x64xf32>, %[[B:.+]]: tensor<64xf32>)
//   CHECK-DAG: %[[FLAT:.+]] = kiln.constant dense<[-1, 64]> : tensor<2xi64>
//       CHECK: %[[SHAPE:.+]] = kiln.concat
//       CHECK: %[[R:.+]] = kiln.reshape %[[H]], %[[FLAT]] : (tensor<?x?x64xf32>, tensor<2xi64>) -> tensor<?x64xf32>
//       CHECK: %[[L:.+]] = kiln.linear %[[X]], %[[W]] bias %[[B]] residual %[[R]] : (tensor<?x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<?x64xf32>) -> tensor<?x64xf32>
//       CHECK: %[[Y:.+]] = kiln.reshape %[[L]], %[[SHAPE]] : (tensor<?x64xf32>, tensor<3xi64>) -> tensor<?x?x64xf32>
//   CHECK-NOT: kiln.add
//       CHECK: return %[[Y]]
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

// Tests Llama's MLP: SiLU on the gate product (no bias), the SwiGLU product
// with the up product as a gate in one of the two linears' epilogues, and
// the residual added to the down product, whose rows trace back through the
// RMSNorm to the residual itself. The bias may come first in the add.

// CHECK-LABEL: func.func @llama_mlp
//  CHECK-SAME: (%[[H:.+]]: tensor<?x?x64xf32>, %[[G:.+]]: tensor<64x172xf32>, %[[U:.+]]: tensor<64x172xf32>, %[[D:.+]]: tensor<172x64xf32>, %[[NORM:.+]]: tensor<64xf32>, %[[BD:.+]]: tensor<64xf32>)
//       CHECK: %[[X:.+]] = kiln.rms_norm %[[H]], %[[NORM]]
//       CHECK: %[[GATE:.+]] = kiln.linear %[[X]], %[[G]] activation silu : (tensor<?x?x64xf32>, tensor<64x172xf32>) -> tensor<?x?x172xf32>
//       CHECK: %[[M:.+]] = kiln.linear %[[X]], %[[U]] gate %[[GATE]] : (tensor<?x?x64xf32>, tensor<64x172xf32>, tensor<?x?x172xf32>) -> tensor<?x?x172xf32>
//   CHECK-NOT: kiln.mul
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

// Tests that a residual added straight to the product fuses whenever no
// static 1 would broadcast one side: two dynamic sizes from separate
// arguments are equal whenever the add runs (kiln's add fails at run time
// where a dynamic size would broadcast, and so does the linear's size
// check); the linear takes the sum's more static type, whose size its
// lowering checks. A static 1 against a dynamic size is not fused.

// CHECK-LABEL: func.func @residual_direct
//  CHECK-SAME: (%[[X:.+]]: tensor<?x?x64xf32>, %[[W:.+]]: tensor<64x64xf32>, %[[ONE:.+]]: tensor<1x?x64xf32>, %[[OTHER:.+]]: tensor<?x?x64xf32>, %[[FIXED:.+]]: tensor<2x?x64xf32>)
//       CHECK: %[[P:.+]] = kiln.matmul %[[X]], %[[W]]
//       CHECK: kiln.add %[[P]], %[[ONE]]
//       CHECK: kiln.linear %[[X]], %[[W]] residual %[[OTHER]] : (tensor<?x?x64xf32>, tensor<64x64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
//       CHECK: kiln.linear %[[X]], %[[W]] residual %[[FIXED]] : (tensor<?x?x64xf32>, tensor<64x64xf32>, tensor<2x?x64xf32>) -> tensor<2x?x64xf32>
func.func @residual_direct(%x: tensor<?x?x64xf32>, %w: tensor<64x64xf32>, %one: tensor<1x?x64xf32>, %other: tensor<?x?x64xf32>, %fixed: tensor<2x?x64xf32>)
    -> (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<2x?x64xf32>) {
  %p = kiln.matmul %x, %w : (tensor<?x?x64xf32>, tensor<64x64xf32>) -> tensor<?x?x64xf32>
  %a = kiln.add %p, %one : (tensor<?x?x64xf32>, tensor<1x?x64xf32>) -> tensor<?x?x64xf32>
  %q = kiln.matmul %x, %w : (tensor<?x?x64xf32>, tensor<64x64xf32>) -> tensor<?x?x64xf32>
  %b = kiln.add %q, %other : (tensor<?x?x64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  %t = kiln.matmul %x, %w : (tensor<?x?x64xf32>, tensor<64x64xf32>) -> tensor<?x?x64xf32>
  %c = kiln.add %fixed, %t : (tensor<2x?x64xf32>, tensor<?x?x64xf32>) -> tensor<2x?x64xf32>
  return %a, %b, %c : tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<2x?x64xf32>
}

// -----

// Tests that a residual behind a reshape is not fused unless its shape is
// provably the reshape's, which is read by element count: not when the
// reshape's entries are dims of another tensor, a -1, or computed, nor when
// the product has two dynamic dims (no [-1, N] target).

// CHECK-LABEL: func.func @residual_behind_reshape_unproven
//   CHECK-NOT: residual
func.func @residual_behind_reshape_unproven(%h: tensor<?x?x64xf32>, %g: tensor<?x?x64xf32>, %x: tensor<?x64xf32>,
                                            %x3: tensor<?x?x64xf32>, %w: tensor<64x64xf32>, %s3: tensor<3xi64>)
    -> (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>) {
  %c64 = kiln.constant dense<64> : tensor<1xi64>
  %m1 = kiln.constant dense<-1> : tensor<1xi64>
  %d0 = kiln.dim %g {index = 0 : i64} : tensor<?x?x64xf32> -> tensor<i64>
  %d1 = kiln.dim %g {index = 1 : i64} : tensor<?x?x64xf32> -> tensor<i64>
  %u0 = kiln.unsqueeze %d0 {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %u1 = kiln.unsqueeze %d1 {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %other = kiln.concat %u0, %u1, %c64 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  %p = kiln.matmul %x, %w : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  %r = kiln.reshape %p, %other : (tensor<?x64xf32>, tensor<3xi64>) -> tensor<?x?x64xf32>
  %a = kiln.add %h, %r : (tensor<?x?x64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  %e0 = kiln.dim %h {index = 0 : i64} : tensor<?x?x64xf32> -> tensor<i64>
  %v0 = kiln.unsqueeze %e0 {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %inferred = kiln.concat %v0, %m1, %c64 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  %q = kiln.matmul %x, %w : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  %rq = kiln.reshape %q, %inferred : (tensor<?x64xf32>, tensor<3xi64>) -> tensor<?x?x64xf32>
  %b = kiln.add %h, %rq : (tensor<?x?x64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  %t = kiln.matmul %x, %w : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  %rt = kiln.reshape %t, %s3 : (tensor<?x64xf32>, tensor<3xi64>) -> tensor<?x?x64xf32>
  %c = kiln.add %h, %rt : (tensor<?x?x64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  %f3 = kiln.constant dense<[0, 0, 64]> : tensor<3xi64>
  %u = kiln.matmul %x3, %w : (tensor<?x?x64xf32>, tensor<64x64xf32>) -> tensor<?x?x64xf32>
  %ru = kiln.reshape %u, %f3 : (tensor<?x?x64xf32>, tensor<3xi64>) -> tensor<?x?x64xf32>
  %d = kiln.add %x3, %ru : (tensor<?x?x64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  return %a, %b, %c, %d : tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>
}

// -----

// Tests that the dim tracing that proves a residual's shape behind a reshape
// follows transposes, split off its axis, attention's query dims, a
// broadcast whose operands agree, and tensor.cast: the reshape's entries
// are dims of the attention's merged heads, the residual is the sum of %h
// and a norm of it.

// CHECK-LABEL: func.func @traced_residual
//       CHECK: kiln.linear %{{.+}}, %{{.+}} residual %{{.+}} : (tensor<?x64xf32>, tensor<64x64xf32>, tensor<?x64xf32>) -> tensor<?x64xf32>
func.func @traced_residual(%h: tensor<?x?x64xf32>, %n: tensor<64xf32>, %x: tensor<?x64xf32>, %w: tensor<64x64xf32>) -> tensor<?x?x64xf32> {
  %norm = kiln.rms_norm %h, %n {axis = 2 : i64} : (tensor<?x?x64xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
  %sum = kiln.add %h, %norm : (tensor<?x?x64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  %residual = tensor.cast %sum : tensor<?x?x64xf32> to tensor<?x?x?xf32>
  %qkv:3 = kiln.split %norm {axis = 2 : i64, sizes = array<i64: 16, 16, 32>} : (tensor<?x?x64xf32>) -> (tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x32xf32>)
  %c1 = kiln.constant dense<1> : tensor<1xi64>
  %c16 = kiln.constant dense<16> : tensor<1xi64>
  %b0 = kiln.dim %qkv#0 {index = 0 : i64} : tensor<?x?x16xf32> -> tensor<i64>
  %t0 = kiln.dim %qkv#0 {index = 1 : i64} : tensor<?x?x16xf32> -> tensor<i64>
  %ub = kiln.unsqueeze %b0 {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %ut = kiln.unsqueeze %t0 {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %heads = kiln.concat %ub, %ut, %c1, %c16 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  %q4 = kiln.reshape %qkv#0, %heads : (tensor<?x?x16xf32>, tensor<4xi64>) -> tensor<?x?x1x16xf32>
  %q = kiln.transpose %q4 {permutation = array<i64: 0, 2, 1, 3>} : (tensor<?x?x1x16xf32>) -> tensor<?x1x?x16xf32>
  %o = kiln.attention %q, %q, %q {scale = 0.25 : f32} : (tensor<?x1x?x16xf32>, tensor<?x1x?x16xf32>, tensor<?x1x?x16xf32>) -> tensor<?x1x?x16xf32>
  %ot = kiln.transpose %o {permutation = array<i64: 0, 2, 1, 3>} : (tensor<?x1x?x16xf32>) -> tensor<?x?x1x16xf32>
  %ob = kiln.dim %ot {index = 0 : i64} : tensor<?x?x1x16xf32> -> tensor<i64>
  %os = kiln.dim %ot {index = 1 : i64} : tensor<?x?x1x16xf32> -> tensor<i64>
  %uob = kiln.unsqueeze %ob {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %uos = kiln.unsqueeze %os {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %c64 = kiln.constant dense<64> : tensor<1xi64>
  %merged = kiln.concat %uob, %uos, %c64 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  %p = kiln.matmul %x, %w : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  %r = kiln.reshape %p, %merged : (tensor<?x64xf32>, tensor<3xi64>) -> tensor<?x?x?xf32>
  %y = kiln.add %residual, %r : (tensor<?x?x?xf32>, tensor<?x?x?xf32>) -> tensor<?x?x64xf32>
  return %y : tensor<?x?x64xf32>
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

// -----

// Tests that proving the residuals' shapes behind reshapes stays linear in
// the graph on a deep stack. Each layer adds relu(h) to h (a diamond the
// trace enters on both sides) and reads the reshape's entries from that
// sum, so without the tracer's memo the work doubles per layer. All 16
// layers fuse.

// CHECK-LABEL: func.func @deep_stack
// CHECK-COUNT-16: kiln.linear %{{.+}}, %{{.+}} residual
func.func @deep_stack(%h0: tensor<?x?x64xf32>, %w: tensor<64x64xf32>) -> tensor<?x?x64xf32> {
  %flat = kiln.constant dense<[-1, 64]> : tensor<2xi64>
  %c64 = kiln.constant dense<64> : tensor<1xi64>
  %a0 = kiln.relu %h0 : tensor<?x?x64xf32>
  %g0 = kiln.add %h0, %a0 : (tensor<?x?x64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  %x0 = kiln.reshape %h0, %flat : (tensor<?x?x64xf32>, tensor<2xi64>) -> tensor<?x64xf32>
  %p0 = kiln.matmul %x0, %w : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  %b0 = kiln.dim %g0 {index = 0 : i64} : tensor<?x?x64xf32> -> tensor<i64>
  %t0 = kiln.dim %g0 {index = 1 : i64} : tensor<?x?x64xf32> -> tensor<i64>
  %ub0 = kiln.unsqueeze %b0 {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %ut0 = kiln.unsqueeze %t0 {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %s0 = kiln.concat %ub0, %ut0, %c64 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  %r0 = kiln.reshape %p0, %s0 : (tensor<?x64xf32>, tensor<3xi64>) -> tensor<?x?x64xf32>
  %h1 = kiln.add %g0, %r0 : (tensor<?x?x64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  %a1 = kiln.relu %h1 : tensor<?x?x64xf32>
  %g1 = kiln.add %h1, %a1 : (tensor<?x?x64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  %x1 = kiln.reshape %h1, %flat : (tensor<?x?x64xf32>, tensor<2xi64>) -> tensor<?x64xf32>
  %p1 = kiln.matmul %x1, %w : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  %b1 = kiln.dim %g1 {index = 0 : i64} : tensor<?x?x64xf32> -> tensor<i64>
  %t1 = kiln.dim %g1 {index = 1 : i64} : tensor<?x?x64xf32> -> tensor<i64>
  %ub1 = kiln.unsqueeze %b1 {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %ut1 = kiln.unsqueeze %t1 {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %s1 = kiln.concat %ub1, %ut1, %c64 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  %r1 = kiln.reshape %p1, %s1 : (tensor<?x64xf32>, tensor<3xi64>) -> tensor<?x?x64xf32>
  %h2 = kiln.add %g1, %r1 : (tensor<?x?x64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  %a2 = kiln.relu %h2 : tensor<?x?x64xf32>
  %g2 = kiln.add %h2, %a2 : (tensor<?x?x64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  %x2 = kiln.reshape %h2, %flat : (tensor<?x?x64xf32>, tensor<2xi64>) -> tensor<?x64xf32>
  %p2 = kiln.matmul %x2, %w : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  %b2 = kiln.dim %g2 {index = 0 : i64} : tensor<?x?x64xf32> -> tensor<i64>
  %t2 = kiln.dim %g2 {index = 1 : i64} : tensor<?x?x64xf32> -> tensor<i64>
  %ub2 = kiln.unsqueeze %b2 {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %ut2 = kiln.unsqueeze %t2 {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %s2 = kiln.concat %ub2, %ut2, %c64 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  %r2 = kiln.reshape %p2, %s2 : (tensor<?x64xf32>, tensor<3xi64>) -> tensor<?x?x64xf32>
  %h3 = kiln.add %g2, %r2 : (tensor<?x?x64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  %a3 = kiln.relu %h3 : tensor<?x?x64xf32>
  %g3 = kiln.add %h3, %a3 : (tensor<?x?x64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  %x3 = kiln.reshape %h3, %flat : (tensor<?x?x64xf32>, tensor<2xi64>) -> tensor<?x64xf32>
  %p3 = kiln.matmul %x3, %w : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  %b3 = kiln.dim %g3 {index = 0 : i64} : tensor<?x?x64xf32> -> tensor<i64>
  %t3 = kiln.dim %g3 {index = 1 : i64} : tensor<?x?x64xf32> -> tensor<i64>
  %ub3 = kiln.unsqueeze %b3 {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %ut3 = kiln.unsqueeze %t3 {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %s3 = kiln.concat %ub3, %ut3, %c64 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  %r3 = kiln.reshape %p3, %s3 : (tensor<?x64xf32>, tensor<3xi64>) -> tensor<?x?x64xf32>
  %h4 = kiln.add %g3, %r3 : (tensor<?x?x64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  %a4 = kiln.relu %h4 : tensor<?x?x64xf32>
  %g4 = kiln.add %h4, %a4 : (tensor<?x?x64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  %x4 = kiln.reshape %h4, %flat : (tensor<?x?x64xf32>, tensor<2xi64>) -> tensor<?x64xf32>
  %p4 = kiln.matmul %x4, %w : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  %b4 = kiln.dim %g4 {index = 0 : i64} : tensor<?x?x64xf32> -> tensor<i64>
  %t4 = kiln.dim %g4 {index = 1 : i64} : tensor<?x?x64xf32> -> tensor<i64>
  %ub4 = kiln.unsqueeze %b4 {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %ut4 = kiln.unsqueeze %t4 {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %s4 = kiln.concat %ub4, %ut4, %c64 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  %r4 = kiln.reshape %p4, %s4 : (tensor<?x64xf32>, tensor<3xi64>) -> tensor<?x?x64xf32>
  %h5 = kiln.add %g4, %r4 : (tensor<?x?x64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  %a5 = kiln.relu %h5 : tensor<?x?x64xf32>
  %g5 = kiln.add %h5, %a5 : (tensor<?x?x64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  %x5 = kiln.reshape %h5, %flat : (tensor<?x?x64xf32>, tensor<2xi64>) -> tensor<?x64xf32>
  %p5 = kiln.matmul %x5, %w : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  %b5 = kiln.dim %g5 {index = 0 : i64} : tensor<?x?x64xf32> -> tensor<i64>
  %t5 = kiln.dim %g5 {index = 1 : i64} : tensor<?x?x64xf32> -> tensor<i64>
  %ub5 = kiln.unsqueeze %b5 {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %ut5 = kiln.unsqueeze %t5 {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %s5 = kiln.concat %ub5, %ut5, %c64 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  %r5 = kiln.reshape %p5, %s5 : (tensor<?x64xf32>, tensor<3xi64>) -> tensor<?x?x64xf32>
  %h6 = kiln.add %g5, %r5 : (tensor<?x?x64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  %a6 = kiln.relu %h6 : tensor<?x?x64xf32>
  %g6 = kiln.add %h6, %a6 : (tensor<?x?x64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  %x6 = kiln.reshape %h6, %flat : (tensor<?x?x64xf32>, tensor<2xi64>) -> tensor<?x64xf32>
  %p6 = kiln.matmul %x6, %w : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  %b6 = kiln.dim %g6 {index = 0 : i64} : tensor<?x?x64xf32> -> tensor<i64>
  %t6 = kiln.dim %g6 {index = 1 : i64} : tensor<?x?x64xf32> -> tensor<i64>
  %ub6 = kiln.unsqueeze %b6 {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %ut6 = kiln.unsqueeze %t6 {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %s6 = kiln.concat %ub6, %ut6, %c64 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  %r6 = kiln.reshape %p6, %s6 : (tensor<?x64xf32>, tensor<3xi64>) -> tensor<?x?x64xf32>
  %h7 = kiln.add %g6, %r6 : (tensor<?x?x64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  %a7 = kiln.relu %h7 : tensor<?x?x64xf32>
  %g7 = kiln.add %h7, %a7 : (tensor<?x?x64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  %x7 = kiln.reshape %h7, %flat : (tensor<?x?x64xf32>, tensor<2xi64>) -> tensor<?x64xf32>
  %p7 = kiln.matmul %x7, %w : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  %b7 = kiln.dim %g7 {index = 0 : i64} : tensor<?x?x64xf32> -> tensor<i64>
  %t7 = kiln.dim %g7 {index = 1 : i64} : tensor<?x?x64xf32> -> tensor<i64>
  %ub7 = kiln.unsqueeze %b7 {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %ut7 = kiln.unsqueeze %t7 {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %s7 = kiln.concat %ub7, %ut7, %c64 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  %r7 = kiln.reshape %p7, %s7 : (tensor<?x64xf32>, tensor<3xi64>) -> tensor<?x?x64xf32>
  %h8 = kiln.add %g7, %r7 : (tensor<?x?x64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  %a8 = kiln.relu %h8 : tensor<?x?x64xf32>
  %g8 = kiln.add %h8, %a8 : (tensor<?x?x64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  %x8 = kiln.reshape %h8, %flat : (tensor<?x?x64xf32>, tensor<2xi64>) -> tensor<?x64xf32>
  %p8 = kiln.matmul %x8, %w : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  %b8 = kiln.dim %g8 {index = 0 : i64} : tensor<?x?x64xf32> -> tensor<i64>
  %t8 = kiln.dim %g8 {index = 1 : i64} : tensor<?x?x64xf32> -> tensor<i64>
  %ub8 = kiln.unsqueeze %b8 {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %ut8 = kiln.unsqueeze %t8 {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %s8 = kiln.concat %ub8, %ut8, %c64 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  %r8 = kiln.reshape %p8, %s8 : (tensor<?x64xf32>, tensor<3xi64>) -> tensor<?x?x64xf32>
  %h9 = kiln.add %g8, %r8 : (tensor<?x?x64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  %a9 = kiln.relu %h9 : tensor<?x?x64xf32>
  %g9 = kiln.add %h9, %a9 : (tensor<?x?x64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  %x9 = kiln.reshape %h9, %flat : (tensor<?x?x64xf32>, tensor<2xi64>) -> tensor<?x64xf32>
  %p9 = kiln.matmul %x9, %w : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  %b9 = kiln.dim %g9 {index = 0 : i64} : tensor<?x?x64xf32> -> tensor<i64>
  %t9 = kiln.dim %g9 {index = 1 : i64} : tensor<?x?x64xf32> -> tensor<i64>
  %ub9 = kiln.unsqueeze %b9 {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %ut9 = kiln.unsqueeze %t9 {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %s9 = kiln.concat %ub9, %ut9, %c64 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  %r9 = kiln.reshape %p9, %s9 : (tensor<?x64xf32>, tensor<3xi64>) -> tensor<?x?x64xf32>
  %h10 = kiln.add %g9, %r9 : (tensor<?x?x64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  %a10 = kiln.relu %h10 : tensor<?x?x64xf32>
  %g10 = kiln.add %h10, %a10 : (tensor<?x?x64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  %x10 = kiln.reshape %h10, %flat : (tensor<?x?x64xf32>, tensor<2xi64>) -> tensor<?x64xf32>
  %p10 = kiln.matmul %x10, %w : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  %b10 = kiln.dim %g10 {index = 0 : i64} : tensor<?x?x64xf32> -> tensor<i64>
  %t10 = kiln.dim %g10 {index = 1 : i64} : tensor<?x?x64xf32> -> tensor<i64>
  %ub10 = kiln.unsqueeze %b10 {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %ut10 = kiln.unsqueeze %t10 {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %s10 = kiln.concat %ub10, %ut10, %c64 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  %r10 = kiln.reshape %p10, %s10 : (tensor<?x64xf32>, tensor<3xi64>) -> tensor<?x?x64xf32>
  %h11 = kiln.add %g10, %r10 : (tensor<?x?x64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  %a11 = kiln.relu %h11 : tensor<?x?x64xf32>
  %g11 = kiln.add %h11, %a11 : (tensor<?x?x64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  %x11 = kiln.reshape %h11, %flat : (tensor<?x?x64xf32>, tensor<2xi64>) -> tensor<?x64xf32>
  %p11 = kiln.matmul %x11, %w : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  %b11 = kiln.dim %g11 {index = 0 : i64} : tensor<?x?x64xf32> -> tensor<i64>
  %t11 = kiln.dim %g11 {index = 1 : i64} : tensor<?x?x64xf32> -> tensor<i64>
  %ub11 = kiln.unsqueeze %b11 {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %ut11 = kiln.unsqueeze %t11 {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %s11 = kiln.concat %ub11, %ut11, %c64 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  %r11 = kiln.reshape %p11, %s11 : (tensor<?x64xf32>, tensor<3xi64>) -> tensor<?x?x64xf32>
  %h12 = kiln.add %g11, %r11 : (tensor<?x?x64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  %a12 = kiln.relu %h12 : tensor<?x?x64xf32>
  %g12 = kiln.add %h12, %a12 : (tensor<?x?x64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  %x12 = kiln.reshape %h12, %flat : (tensor<?x?x64xf32>, tensor<2xi64>) -> tensor<?x64xf32>
  %p12 = kiln.matmul %x12, %w : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  %b12 = kiln.dim %g12 {index = 0 : i64} : tensor<?x?x64xf32> -> tensor<i64>
  %t12 = kiln.dim %g12 {index = 1 : i64} : tensor<?x?x64xf32> -> tensor<i64>
  %ub12 = kiln.unsqueeze %b12 {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %ut12 = kiln.unsqueeze %t12 {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %s12 = kiln.concat %ub12, %ut12, %c64 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  %r12 = kiln.reshape %p12, %s12 : (tensor<?x64xf32>, tensor<3xi64>) -> tensor<?x?x64xf32>
  %h13 = kiln.add %g12, %r12 : (tensor<?x?x64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  %a13 = kiln.relu %h13 : tensor<?x?x64xf32>
  %g13 = kiln.add %h13, %a13 : (tensor<?x?x64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  %x13 = kiln.reshape %h13, %flat : (tensor<?x?x64xf32>, tensor<2xi64>) -> tensor<?x64xf32>
  %p13 = kiln.matmul %x13, %w : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  %b13 = kiln.dim %g13 {index = 0 : i64} : tensor<?x?x64xf32> -> tensor<i64>
  %t13 = kiln.dim %g13 {index = 1 : i64} : tensor<?x?x64xf32> -> tensor<i64>
  %ub13 = kiln.unsqueeze %b13 {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %ut13 = kiln.unsqueeze %t13 {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %s13 = kiln.concat %ub13, %ut13, %c64 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  %r13 = kiln.reshape %p13, %s13 : (tensor<?x64xf32>, tensor<3xi64>) -> tensor<?x?x64xf32>
  %h14 = kiln.add %g13, %r13 : (tensor<?x?x64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  %a14 = kiln.relu %h14 : tensor<?x?x64xf32>
  %g14 = kiln.add %h14, %a14 : (tensor<?x?x64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  %x14 = kiln.reshape %h14, %flat : (tensor<?x?x64xf32>, tensor<2xi64>) -> tensor<?x64xf32>
  %p14 = kiln.matmul %x14, %w : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  %b14 = kiln.dim %g14 {index = 0 : i64} : tensor<?x?x64xf32> -> tensor<i64>
  %t14 = kiln.dim %g14 {index = 1 : i64} : tensor<?x?x64xf32> -> tensor<i64>
  %ub14 = kiln.unsqueeze %b14 {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %ut14 = kiln.unsqueeze %t14 {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %s14 = kiln.concat %ub14, %ut14, %c64 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  %r14 = kiln.reshape %p14, %s14 : (tensor<?x64xf32>, tensor<3xi64>) -> tensor<?x?x64xf32>
  %h15 = kiln.add %g14, %r14 : (tensor<?x?x64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  %a15 = kiln.relu %h15 : tensor<?x?x64xf32>
  %g15 = kiln.add %h15, %a15 : (tensor<?x?x64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  %x15 = kiln.reshape %h15, %flat : (tensor<?x?x64xf32>, tensor<2xi64>) -> tensor<?x64xf32>
  %p15 = kiln.matmul %x15, %w : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  %b15 = kiln.dim %g15 {index = 0 : i64} : tensor<?x?x64xf32> -> tensor<i64>
  %t15 = kiln.dim %g15 {index = 1 : i64} : tensor<?x?x64xf32> -> tensor<i64>
  %ub15 = kiln.unsqueeze %b15 {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %ut15 = kiln.unsqueeze %t15 {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %s15 = kiln.concat %ub15, %ut15, %c64 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  %r15 = kiln.reshape %p15, %s15 : (tensor<?x64xf32>, tensor<3xi64>) -> tensor<?x?x64xf32>
  %h16 = kiln.add %g15, %r15 : (tensor<?x?x64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  return %h16 : tensor<?x?x64xf32>
}

// -----

// Tests the gate stage: after the activation and before the residual (a
// product times a gate, then plus a residual, is one linear), through the
// reshape that restores the rows; a gate that would broadcast (a static 1
// against the product's rows) or a gate after the residual stays outside.

// CHECK-LABEL: func.func @gate_stage
//  CHECK-SAME: (%[[X:.+]]: tensor<8x64xf32>, %[[W:.+]]: tensor<64x64xf32>, %[[G:.+]]: tensor<8x64xf32>, %[[R:.+]]: tensor<8x64xf32>, %[[ONE:.+]]: tensor<1x64xf32>)
//       CHECK: kiln.linear %[[X]], %[[W]] activation relu gate %[[G]] residual %[[R]] : (tensor<8x64xf32>, tensor<64x64xf32>, tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32>
//       CHECK: %[[P:.+]] = kiln.matmul %[[X]], %[[W]]
//       CHECK: kiln.mul %[[P]], %[[ONE]]
//       CHECK: %[[Q:.+]] = kiln.linear %[[X]], %[[W]] residual %[[R]]
//       CHECK: kiln.mul %[[Q]], %[[G]]
func.func @gate_stage(%x: tensor<8x64xf32>, %w: tensor<64x64xf32>, %g: tensor<8x64xf32>, %r: tensor<8x64xf32>, %one: tensor<1x64xf32>)
    -> (tensor<8x64xf32>, tensor<8x64xf32>, tensor<8x64xf32>) {
  %p = kiln.matmul %x, %w : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
  %a = kiln.relu %p : tensor<8x64xf32>
  %m = kiln.mul %g, %a : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32>
  %y = kiln.add %m, %r : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32>
  %q = kiln.matmul %x, %w : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
  %b = kiln.mul %q, %one : (tensor<8x64xf32>, tensor<1x64xf32>) -> tensor<8x64xf32>
  %t = kiln.matmul %x, %w : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
  %s = kiln.add %t, %r : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32>
  %c = kiln.mul %s, %g : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32>
  return %y, %b, %c : tensor<8x64xf32>, tensor<8x64xf32>, tensor<8x64xf32>
}
