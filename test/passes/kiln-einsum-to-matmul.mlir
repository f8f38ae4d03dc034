// RUN: kiln-opt %s --split-input-file --kiln-einsum-to-matmul | FileCheck %s
// RUN: kiln-opt %s --split-input-file --kiln-einsum-to-matmul --kiln-fuse-attention \
// RUN:   | FileCheck %s --check-prefix=ATTENTION

// Tests that attention's scores written as an einsum, heads before tokens,
// become a product by the keys read transposed, with no transpose op.

// CHECK-LABEL: func.func @scores
//  CHECK-SAME: (%[[Q:.+]]: tensor<?x4x?x16xf32>, %[[K:.+]]: tensor<?x4x?x16xf32>)
//   CHECK-NOT: kiln.transpose
//       CHECK: %[[S:.+]] = kiln.matmul %[[Q]], %[[K]] {transpose_b} : (tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>) -> tensor<?x4x?x?xf32>
//   CHECK-NOT: kiln.einsum
//       CHECK: return %[[S]]
func.func @scores(%q: tensor<?x4x?x16xf32>, %k: tensor<?x4x?x16xf32>) -> tensor<?x4x?x?xf32> {
  %s = kiln.einsum %q, %k {equation = "bhqd,bhkd->bhqk"} : (tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>) -> tensor<?x4x?x?xf32>
  return %s : tensor<?x4x?x?xf32>
}

// -----

// Tests that with tokens before heads both inputs are transposed to put
// the shared letters first, and the result comes out in the equation's order.

// CHECK-LABEL: func.func @scores_tokens_first
//  CHECK-SAME: (%[[Q:.+]]: tensor<2x8x4x16xf32>, %[[K:.+]]: tensor<2x?x4x16xf32>)
//       CHECK: %[[QT:.+]] = kiln.transpose %[[Q]] {permutation = array<i64: 0, 2, 1, 3>} : (tensor<2x8x4x16xf32>) -> tensor<2x4x8x16xf32>
//       CHECK: %[[KT:.+]] = kiln.transpose %[[K]] {permutation = array<i64: 0, 2, 1, 3>} : (tensor<2x?x4x16xf32>) -> tensor<2x4x?x16xf32>
//       CHECK: %[[S:.+]] = kiln.matmul %[[QT]], %[[KT]] {transpose_b} : (tensor<2x4x8x16xf32>, tensor<2x4x?x16xf32>) -> tensor<2x4x8x?xf32>
//       CHECK: return %[[S]]
func.func @scores_tokens_first(%q: tensor<2x8x4x16xf32>, %k: tensor<2x?x4x16xf32>) -> tensor<2x4x8x?xf32> {
  %s = kiln.einsum %q, %k {equation = "bqhd,bkhd->bhqk"} : (tensor<2x8x4x16xf32>, tensor<2x?x4x16xf32>) -> tensor<2x4x8x?xf32>
  return %s : tensor<2x4x8x?xf32>
}

// -----

// Tests that a product by a weight (extra leading letters on the first
// input only) becomes a plain product the weight broadcasts into.

// CHECK-LABEL: func.func @by_weight
//  CHECK-SAME: (%[[X:.+]]: tensor<?x?x64xf32>, %[[W:.+]]: tensor<64x256xf32>)
//   CHECK-NOT: kiln.transpose
//       CHECK: kiln.matmul %[[X]], %[[W]] : (tensor<?x?x64xf32>, tensor<64x256xf32>) -> tensor<?x?x256xf32>
func.func @by_weight(%x: tensor<?x?x64xf32>, %w: tensor<64x256xf32>) -> tensor<?x?x256xf32> {
  %y = kiln.einsum %x, %w {equation = "bnd,dh->bnh"} : (tensor<?x?x64xf32>, tensor<64x256xf32>) -> tensor<?x?x256xf32>
  return %y : tensor<?x?x256xf32>
}

// -----

// Tests that an output in another order than the product's is transposed
// into it, and keeps the einsum's type.

// CHECK-LABEL: func.func @output_order
//  CHECK-SAME: (%[[A:.+]]: tensor<3x5x7xf32>, %[[B:.+]]: tensor<3x7x2xf32>)
//       CHECK: %[[P:.+]] = kiln.matmul %[[A]], %[[B]] : (tensor<3x5x7xf32>, tensor<3x7x2xf32>) -> tensor<3x5x2xf32>
//       CHECK: %[[T:.+]] = kiln.transpose %[[P]] {permutation = array<i64: 0, 2, 1>} : (tensor<3x5x2xf32>) -> tensor<3x2x5xf32>
//       CHECK: return %[[T]]
func.func @output_order(%a: tensor<3x5x7xf32>, %b: tensor<3x7x2xf32>) -> tensor<3x2x5xf32> {
  %c = kiln.einsum %a, %b {equation = "bij,bjk->bki"} : (tensor<3x5x7xf32>, tensor<3x7x2xf32>) -> tensor<3x2x5xf32>
  return %c : tensor<3x2x5xf32>
}

// -----

// Tests the einsums that are no single product, which stay einsums: an
// outer product (nothing summed), a letter summed within one input, a
// diagonal, two summed letters, extra letters on both inputs, three inputs,
// and integer elements.

// CHECK-LABEL: func.func @not_products
//   CHECK-NOT: kiln.matmul
//       CHECK: kiln.einsum {{.*}} {equation = "i,j->ij"}
//       CHECK: kiln.einsum {{.*}} {equation = "bij,bjk->bk"}
//       CHECK: kiln.einsum {{.*}} {equation = "ii,ij->j"}
//       CHECK: kiln.einsum {{.*}} {equation = "ijk,jk->i"}
//       CHECK: kiln.einsum {{.*}} {equation = "bij,cjk->bcik"}
//       CHECK: kiln.einsum {{.*}} {equation = "ij,jk,kl->il"}
//       CHECK: kiln.einsum {{.*}} {equation = "ij,jk->ik"}
func.func @not_products(%v: tensor<4xf32>, %a: tensor<2x3x4xf32>, %b: tensor<2x4x5xf32>,
                        %sq: tensor<4x4xf32>, %m: tensor<4x5xf32>, %t: tensor<3x4x5xf32>,
                        %c: tensor<6x4x5xf32>, %n: tensor<5x2xf32>, %i: tensor<4x4xi64>)
    -> (tensor<4x4xf32>, tensor<2x5xf32>, tensor<4xf32>, tensor<3xf32>, tensor<2x6x3x5xf32>,
        tensor<4x2xf32>, tensor<4x4xi64>) {
  %outer = kiln.einsum %v, %v {equation = "i,j->ij"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4x4xf32>
  %alone = kiln.einsum %a, %b {equation = "bij,bjk->bk"} : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x5xf32>
  %diagonal = kiln.einsum %sq, %sq {equation = "ii,ij->j"} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4xf32>
  %two = kiln.einsum %t, %m {equation = "ijk,jk->i"} : (tensor<3x4x5xf32>, tensor<4x5xf32>) -> tensor<3xf32>
  %both = kiln.einsum %a, %c {equation = "bij,cjk->bcik"} : (tensor<2x3x4xf32>, tensor<6x4x5xf32>) -> tensor<2x6x3x5xf32>
  %three = kiln.einsum %sq, %m, %n {equation = "ij,jk,kl->il"} : (tensor<4x4xf32>, tensor<4x5xf32>, tensor<5x2xf32>) -> tensor<4x2xf32>
  %ints = kiln.einsum %i, %i {equation = "ij,jk->ik"} : (tensor<4x4xi64>, tensor<4x4xi64>) -> tensor<4x4xi64>
  return %outer, %alone, %diagonal, %two, %both, %three, %ints
      : tensor<4x4xf32>, tensor<2x5xf32>, tensor<4xf32>, tensor<3xf32>, tensor<2x6x3x5xf32>,
        tensor<4x2xf32>, tensor<4x4xi64>
}

// -----

// Tests that attention written with einsums over tokens-first tensors (as
// code that never transposes its heads writes it) fuses once its products
// are products: the values keep their [token, dim] order, so the second
// product reads them without transpose_b.

// CHECK-LABEL: func.func @einsum_attention
//  CHECK-SAME: %[[VIN:[a-z0-9]+]]: tensor<1x?x4x16xf32>) -> tensor<1x?x4x16xf32>
//       CHECK: %[[V:.+]] = kiln.transpose %[[VIN]] {permutation = array<i64: 0, 2, 1, 3>} : (tensor<1x?x4x16xf32>) -> tensor<1x4x?x16xf32>
//       CHECK: %[[O:.+]] = kiln.matmul %{{.+}}, %[[V]] : (tensor<1x4x?x?xf32>, tensor<1x4x?x16xf32>) -> tensor<1x4x?x16xf32>
//       CHECK: kiln.transpose %[[O]] {permutation = array<i64: 0, 2, 1, 3>} : (tensor<1x4x?x16xf32>) -> tensor<1x?x4x16xf32>
// ATTENTION-LABEL: func.func @einsum_attention
//       ATTENTION: kiln.attention
//   ATTENTION-NOT: kiln.softmax
//   ATTENTION-NOT: kiln.einsum
func.func @einsum_attention(%q: tensor<1x?x4x16xf32>, %k: tensor<1x?x4x16xf32>,
                            %v: tensor<1x?x4x16xf32>) -> tensor<1x?x4x16xf32> {
  %scale = kiln.constant dense<2.500000e-01> : tensor<f32>
  %s = kiln.einsum %q, %k {equation = "bqhd,bkhd->bhqk"} : (tensor<1x?x4x16xf32>, tensor<1x?x4x16xf32>) -> tensor<1x4x?x?xf32>
  %d = kiln.mul %s, %scale : (tensor<1x4x?x?xf32>, tensor<f32>) -> tensor<1x4x?x?xf32>
  %p = kiln.softmax %d {axis = 3 : i64} : tensor<1x4x?x?xf32>
  %o = kiln.einsum %p, %v {equation = "bhqk,bkhd->bqhd"} : (tensor<1x4x?x?xf32>, tensor<1x?x4x16xf32>) -> tensor<1x?x4x16xf32>
  return %o : tensor<1x?x4x16xf32>
}
