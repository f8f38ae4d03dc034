// RUN: kiln-opt %s --split-input-file --kiln-fuse-rotary-embeddings | FileCheck %s

// Tests that Llama's rotary embedding (HF's rotate_half: the second half
// from 8 to INT64_MAX, negated, then the first half) becomes kiln.rotary,
// with cos and sin broadcast over the heads.

// CHECK-LABEL: func.func @llama
//  CHECK-SAME: (%[[X:.+]]: tensor<?x4x?x16xf32>, %[[COS:.+]]: tensor<?x1x?x16xf32>, %[[SIN:.+]]: tensor<?x1x?x16xf32>)
//       CHECK: %[[Y:.+]] = kiln.rotary %[[X]], %[[COS]], %[[SIN]] : (tensor<?x4x?x16xf32>, tensor<?x1x?x16xf32>, tensor<?x1x?x16xf32>) -> tensor<?x4x?x16xf32>
//   CHECK-NOT: kiln.slice
//   CHECK-NOT: kiln.concat
//       CHECK: return %[[Y]]
func.func @llama(%x: tensor<?x4x?x16xf32>, %cos: tensor<?x1x?x16xf32>, %sin: tensor<?x1x?x16xf32>) -> tensor<?x4x?x16xf32> {
  %c0 = kiln.constant dense<0> : tensor<1xi64>
  %c1 = kiln.constant dense<1> : tensor<1xi64>
  %c8 = kiln.constant dense<8> : tensor<1xi64>
  %end = kiln.constant dense<9223372036854775807> : tensor<1xi64>
  %a = kiln.mul %x, %cos : (tensor<?x4x?x16xf32>, tensor<?x1x?x16xf32>) -> tensor<?x4x?x16xf32>
  %x2 = kiln.slice %x[%c8 : %end : %c1] {axes = array<i64: 3>} : (tensor<?x4x?x16xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x4x?x?xf32>
  %n = kiln.neg %x2 : tensor<?x4x?x?xf32>
  %x1 = kiln.slice %x[%c0 : %c8 : %c1] {axes = array<i64: 3>} : (tensor<?x4x?x16xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x4x?x?xf32>
  %r = kiln.concat %n, %x1 {axis = 3 : i64} : (tensor<?x4x?x?xf32>, tensor<?x4x?x?xf32>) -> tensor<?x4x?x?xf32>
  %b = kiln.mul %r, %sin : (tensor<?x4x?x?xf32>, tensor<?x1x?x16xf32>) -> tensor<?x4x?x16xf32>
  %y = kiln.add %a, %b : (tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>) -> tensor<?x4x?x16xf32>
  return %y : tensor<?x4x?x16xf32>
}

// -----

// Tests the other operand orders (cos * x, sin * rotated, the sin term
// first in the sum) and halves written with negative indices (-4 to the end,
// -8 to -4), on a 3-D input.

// CHECK-LABEL: func.func @commuted
//  CHECK-SAME: (%[[X:.+]]: tensor<2x5x8xf32>, %[[COS:.+]]: tensor<5x8xf32>, %[[SIN:.+]]: tensor<5x8xf32>)
//       CHECK: kiln.rotary %[[X]], %[[COS]], %[[SIN]] : (tensor<2x5x8xf32>, tensor<5x8xf32>, tensor<5x8xf32>) -> tensor<2x5x8xf32>
func.func @commuted(%x: tensor<2x5x8xf32>, %cos: tensor<5x8xf32>, %sin: tensor<5x8xf32>) -> tensor<2x5x8xf32> {
  %m8 = kiln.constant dense<-8> : tensor<1xi64>
  %m4 = kiln.constant dense<-4> : tensor<1xi64>
  %one = kiln.constant dense<1> : tensor<1xi64>
  %big = kiln.constant dense<100> : tensor<1xi64>
  %a = kiln.mul %cos, %x : (tensor<5x8xf32>, tensor<2x5x8xf32>) -> tensor<2x5x8xf32>
  %x2 = kiln.slice %x[%m4 : %big : %one] {axes = array<i64: 2>} : (tensor<2x5x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2x5x4xf32>
  %n = kiln.neg %x2 : tensor<2x5x4xf32>
  %x1 = kiln.slice %x[%m8 : %m4 : %one] {axes = array<i64: 2>} : (tensor<2x5x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2x5x4xf32>
  %r = kiln.concat %n, %x1 {axis = 2 : i64} : (tensor<2x5x4xf32>, tensor<2x5x4xf32>) -> tensor<2x5x8xf32>
  %b = kiln.mul %sin, %r : (tensor<5x8xf32>, tensor<2x5x8xf32>) -> tensor<2x5x8xf32>
  %y = kiln.add %b, %a : (tensor<2x5x8xf32>, tensor<2x5x8xf32>) -> tensor<2x5x8xf32>
  return %y : tensor<2x5x8xf32>
}

// -----

// Tests that other functions of the halves do not fuse: the halves swapped
// (concat(x1, -x2)), GPT-J's interleaved pairs (step 2), halves of another
// tensor than the one multiplied by cos, and a cos that broadcasts along the
// last axis.

// CHECK-LABEL: func.func @not_rotate_half
//   CHECK-NOT: kiln.rotary
func.func @not_rotate_half(%x: tensor<2x8xf32>, %z: tensor<2x8xf32>, %cos: tensor<2x8xf32>, %cos1: tensor<2x1xf32>, %sin: tensor<2x8xf32>)
    -> (tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>) {
  %c0 = kiln.constant dense<0> : tensor<1xi64>
  %c1 = kiln.constant dense<1> : tensor<1xi64>
  %c2 = kiln.constant dense<2> : tensor<1xi64>
  %c4 = kiln.constant dense<4> : tensor<1xi64>
  %c8 = kiln.constant dense<8> : tensor<1xi64>

  // Swapped halves.
  %a0 = kiln.mul %x, %cos : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %s0 = kiln.slice %x[%c4 : %c8 : %c1] {axes = array<i64: 1>} : (tensor<2x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2x4xf32>
  %n0 = kiln.neg %s0 : tensor<2x4xf32>
  %f0 = kiln.slice %x[%c0 : %c4 : %c1] {axes = array<i64: 1>} : (tensor<2x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2x4xf32>
  %r0 = kiln.concat %f0, %n0 {axis = 1 : i64} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x8xf32>
  %b0 = kiln.mul %r0, %sin : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %y0 = kiln.add %a0, %b0 : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>

  // Interleaved pairs: odd and even elements.
  %a1 = kiln.mul %x, %cos : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %s1 = kiln.slice %x[%c1 : %c8 : %c2] {axes = array<i64: 1>} : (tensor<2x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2x4xf32>
  %n1 = kiln.neg %s1 : tensor<2x4xf32>
  %f1 = kiln.slice %x[%c0 : %c8 : %c2] {axes = array<i64: 1>} : (tensor<2x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2x4xf32>
  %r1 = kiln.concat %n1, %f1 {axis = 1 : i64} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x8xf32>
  %b1 = kiln.mul %r1, %sin : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %y1 = kiln.add %a1, %b1 : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>

  // Halves of %z, cos times %x.
  %a2 = kiln.mul %x, %cos : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %s2 = kiln.slice %z[%c4 : %c8 : %c1] {axes = array<i64: 1>} : (tensor<2x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2x4xf32>
  %n2 = kiln.neg %s2 : tensor<2x4xf32>
  %f2 = kiln.slice %z[%c0 : %c4 : %c1] {axes = array<i64: 1>} : (tensor<2x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2x4xf32>
  %r2 = kiln.concat %n2, %f2 {axis = 1 : i64} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x8xf32>
  %b2 = kiln.mul %r2, %sin : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %y2 = kiln.add %a2, %b2 : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>

  // A cos of last dim 1.
  %a3 = kiln.mul %x, %cos1 : (tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32>
  %s3 = kiln.slice %x[%c4 : %c8 : %c1] {axes = array<i64: 1>} : (tensor<2x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2x4xf32>
  %n3 = kiln.neg %s3 : tensor<2x4xf32>
  %f3 = kiln.slice %x[%c0 : %c4 : %c1] {axes = array<i64: 1>} : (tensor<2x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2x4xf32>
  %r3 = kiln.concat %n3, %f3 {axis = 1 : i64} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x8xf32>
  %b3 = kiln.mul %r3, %sin : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %y3 = kiln.add %a3, %b3 : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return %y0, %y1, %y2, %y3 : tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>
}

// -----

// Tests that nothing fuses when an intermediate has another user: here the
// rotated half is also returned.

// CHECK-LABEL: func.func @rotated_used_twice
//   CHECK-NOT: kiln.rotary
func.func @rotated_used_twice(%x: tensor<2x8xf32>, %cos: tensor<2x8xf32>, %sin: tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>) {
  %c0 = kiln.constant dense<0> : tensor<1xi64>
  %c1 = kiln.constant dense<1> : tensor<1xi64>
  %c4 = kiln.constant dense<4> : tensor<1xi64>
  %c8 = kiln.constant dense<8> : tensor<1xi64>
  %a = kiln.mul %x, %cos : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %s = kiln.slice %x[%c4 : %c8 : %c1] {axes = array<i64: 1>} : (tensor<2x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2x4xf32>
  %n = kiln.neg %s : tensor<2x4xf32>
  %f = kiln.slice %x[%c0 : %c4 : %c1] {axes = array<i64: 1>} : (tensor<2x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2x4xf32>
  %r = kiln.concat %n, %f {axis = 1 : i64} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x8xf32>
  %b = kiln.mul %r, %sin : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %y = kiln.add %a, %b : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return %y, %r : tensor<2x8xf32>, tensor<2x8xf32>
}

// -----

// Tests that more functions that are not the rotary embedding do not fuse:
// the first half negated instead of the second, halves of another axis than
// the last, an integer sum (kiln.rotary is a float op), and a sum whose
// declared last dim is dynamic (kiln.rotary's result has the rotated one).

// CHECK-LABEL: func.func @not_rotary
//   CHECK-NOT: kiln.rotary
func.func @not_rotary(%x: tensor<2x8xf32>, %cos: tensor<2x8xf32>, %sin: tensor<2x8xf32>,
                      %xt: tensor<8x2xf32>, %ct: tensor<8x2xf32>,
                      %xi: tensor<2x8xi64>, %ci: tensor<2x8xi64>)
    -> (tensor<2x8xf32>, tensor<8x2xf32>, tensor<2x8xi64>, tensor<2x?xf32>) {
  %c0 = kiln.constant dense<0> : tensor<1xi64>
  %c1 = kiln.constant dense<1> : tensor<1xi64>
  %c4 = kiln.constant dense<4> : tensor<1xi64>
  %c8 = kiln.constant dense<8> : tensor<1xi64>

  // -x[:4] first, then x[4:].
  %a0 = kiln.mul %x, %cos : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %f0 = kiln.slice %x[%c0 : %c4 : %c1] {axes = array<i64: 1>} : (tensor<2x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2x4xf32>
  %n0 = kiln.neg %f0 : tensor<2x4xf32>
  %s0 = kiln.slice %x[%c4 : %c8 : %c1] {axes = array<i64: 1>} : (tensor<2x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2x4xf32>
  %r0 = kiln.concat %n0, %s0 {axis = 1 : i64} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x8xf32>
  %b0 = kiln.mul %r0, %sin : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %y0 = kiln.add %a0, %b0 : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>

  // Halves of axis 0 of an 8x2 input.
  %a1 = kiln.mul %xt, %ct : (tensor<8x2xf32>, tensor<8x2xf32>) -> tensor<8x2xf32>
  %s1 = kiln.slice %xt[%c4 : %c8 : %c1] {axes = array<i64: 0>} : (tensor<8x2xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4x2xf32>
  %n1 = kiln.neg %s1 : tensor<4x2xf32>
  %f1 = kiln.slice %xt[%c0 : %c4 : %c1] {axes = array<i64: 0>} : (tensor<8x2xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4x2xf32>
  %r1 = kiln.concat %n1, %f1 {axis = 0 : i64} : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<8x2xf32>
  %b1 = kiln.mul %r1, %ct : (tensor<8x2xf32>, tensor<8x2xf32>) -> tensor<8x2xf32>
  %y1 = kiln.add %a1, %b1 : (tensor<8x2xf32>, tensor<8x2xf32>) -> tensor<8x2xf32>

  // Integers.
  %a2 = kiln.mul %xi, %ci : (tensor<2x8xi64>, tensor<2x8xi64>) -> tensor<2x8xi64>
  %s2 = kiln.slice %xi[%c4 : %c8 : %c1] {axes = array<i64: 1>} : (tensor<2x8xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2x4xi64>
  %n2 = kiln.neg %s2 : tensor<2x4xi64>
  %f2 = kiln.slice %xi[%c0 : %c4 : %c1] {axes = array<i64: 1>} : (tensor<2x8xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2x4xi64>
  %r2 = kiln.concat %n2, %f2 {axis = 1 : i64} : (tensor<2x4xi64>, tensor<2x4xi64>) -> tensor<2x8xi64>
  %b2 = kiln.mul %r2, %ci : (tensor<2x8xi64>, tensor<2x8xi64>) -> tensor<2x8xi64>
  %y2 = kiln.add %a2, %b2 : (tensor<2x8xi64>, tensor<2x8xi64>) -> tensor<2x8xi64>

  // A sum declared 2x?.
  %a3 = kiln.mul %x, %cos : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x?xf32>
  %s3 = kiln.slice %x[%c4 : %c8 : %c1] {axes = array<i64: 1>} : (tensor<2x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2x4xf32>
  %n3 = kiln.neg %s3 : tensor<2x4xf32>
  %f3 = kiln.slice %x[%c0 : %c4 : %c1] {axes = array<i64: 1>} : (tensor<2x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2x4xf32>
  %r3 = kiln.concat %n3, %f3 {axis = 1 : i64} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x8xf32>
  %b3 = kiln.mul %r3, %sin : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x?xf32>
  %y3 = kiln.add %a3, %b3 : (tensor<2x?xf32>, tensor<2x?xf32>) -> tensor<2x?xf32>
  return %y0, %y1, %y2, %y3 : tensor<2x8xf32>, tensor<8x2xf32>, tensor<2x8xi64>, tensor<2x?xf32>
}

// -----

// Tests GPT-NeoX's partial rotary (rotary_pct 0.5 of 16): the decomposed
// rotary of x[..., :8] (its halves 4 wide), concatenated with x[..., 8:],
// becomes one kiln.rotary of x with 8-wide cos and sin. No slice of x and
// no concat remain.

// CHECK-LABEL: func.func @partial
//  CHECK-SAME: (%[[X:.+]]: tensor<?x4x?x16xf32>, %[[COS:.+]]: tensor<?x1x?x8xf32>, %[[SIN:.+]]: tensor<?x1x?x8xf32>)
//       CHECK: %[[Y:.+]] = kiln.rotary %[[X]], %[[COS]], %[[SIN]] : (tensor<?x4x?x16xf32>, tensor<?x1x?x8xf32>, tensor<?x1x?x8xf32>) -> tensor<?x4x?x16xf32>
//   CHECK-NOT: kiln.slice
//   CHECK-NOT: kiln.concat
//       CHECK: return %[[Y]]
func.func @partial(%x: tensor<?x4x?x16xf32>, %cos: tensor<?x1x?x8xf32>, %sin: tensor<?x1x?x8xf32>) -> tensor<?x4x?x16xf32> {
  %c0 = kiln.constant dense<0> : tensor<1xi64>
  %c1 = kiln.constant dense<1> : tensor<1xi64>
  %c4 = kiln.constant dense<4> : tensor<1xi64>
  %c8 = kiln.constant dense<8> : tensor<1xi64>
  %end = kiln.constant dense<9223372036854775807> : tensor<1xi64>
  %rot = kiln.slice %x[%c0 : %c8 : %c1] {axes = array<i64: 3>} : (tensor<?x4x?x16xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x4x?x8xf32>
  %pass = kiln.slice %x[%c8 : %end : %c1] {axes = array<i64: 3>} : (tensor<?x4x?x16xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x4x?x8xf32>
  %a = kiln.mul %rot, %cos : (tensor<?x4x?x8xf32>, tensor<?x1x?x8xf32>) -> tensor<?x4x?x8xf32>
  %x2 = kiln.slice %rot[%c4 : %end : %c1] {axes = array<i64: 3>} : (tensor<?x4x?x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x4x?x4xf32>
  %n = kiln.neg %x2 : tensor<?x4x?x4xf32>
  %x1 = kiln.slice %rot[%c0 : %c4 : %c1] {axes = array<i64: 3>} : (tensor<?x4x?x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x4x?x4xf32>
  %r = kiln.concat %n, %x1 {axis = 3 : i64} : (tensor<?x4x?x4xf32>, tensor<?x4x?x4xf32>) -> tensor<?x4x?x8xf32>
  %b = kiln.mul %r, %sin : (tensor<?x4x?x8xf32>, tensor<?x1x?x8xf32>) -> tensor<?x4x?x8xf32>
  %y8 = kiln.add %a, %b : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
  %y = kiln.concat %y8, %pass {axis = 3 : i64} : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x16xf32>
  return %y : tensor<?x4x?x16xf32>
}

// -----

// Tests that a concat next to a rotary is absorbed only when it puts back
// exactly the rest of the rotated tensor: the rest put first, a rest that
// skips elements (x[..., 10:]), the rest of another tensor, a rotated slice
// that does not start at 0, and a rotated slice that is also returned stay
// a rotary of a slice and a concat.

// CHECK-LABEL: func.func @partial_not_rest
//   CHECK-COUNT-5: kiln.rotary %{{.+}}, %{{.+}}, %{{.+}} : (tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
//   CHECK-NOT: kiln.rotary
func.func @partial_not_rest(%x: tensor<2x16xf32>, %z: tensor<2x16xf32>, %cos: tensor<2x8xf32>, %sin: tensor<2x8xf32>)
    -> (tensor<2x16xf32>, tensor<2x14xf32>, tensor<2x16xf32>, tensor<2x16xf32>, tensor<2x16xf32>, tensor<2x8xf32>) {
  %c0 = kiln.constant dense<0> : tensor<1xi64>
  %c1 = kiln.constant dense<1> : tensor<1xi64>
  %c2 = kiln.constant dense<2> : tensor<1xi64>
  %c8 = kiln.constant dense<8> : tensor<1xi64>
  %c10 = kiln.constant dense<10> : tensor<1xi64>
  %c16 = kiln.constant dense<16> : tensor<1xi64>

  // The rest first.
  %r0 = kiln.slice %x[%c0 : %c8 : %c1] {axes = array<i64: 1>} : (tensor<2x16xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2x8xf32>
  %p0 = kiln.slice %x[%c8 : %c16 : %c1] {axes = array<i64: 1>} : (tensor<2x16xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2x8xf32>
  %q0 = kiln.rotary %r0, %cos, %sin : (tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %y0 = kiln.concat %p0, %q0 {axis = 1 : i64} : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x16xf32>

  // A rest that skips x[..., 8:10].
  %r1 = kiln.slice %x[%c0 : %c8 : %c1] {axes = array<i64: 1>} : (tensor<2x16xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2x8xf32>
  %p1 = kiln.slice %x[%c10 : %c16 : %c1] {axes = array<i64: 1>} : (tensor<2x16xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2x6xf32>
  %q1 = kiln.rotary %r1, %cos, %sin : (tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %y1 = kiln.concat %q1, %p1 {axis = 1 : i64} : (tensor<2x8xf32>, tensor<2x6xf32>) -> tensor<2x14xf32>

  // The rest of %z.
  %r2 = kiln.slice %x[%c0 : %c8 : %c1] {axes = array<i64: 1>} : (tensor<2x16xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2x8xf32>
  %p2 = kiln.slice %z[%c8 : %c16 : %c1] {axes = array<i64: 1>} : (tensor<2x16xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2x8xf32>
  %q2 = kiln.rotary %r2, %cos, %sin : (tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %y2 = kiln.concat %q2, %p2 {axis = 1 : i64} : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x16xf32>

  // The rotated slice is x[..., 2:10], the rest x[..., 8:].
  %r3 = kiln.slice %x[%c2 : %c10 : %c1] {axes = array<i64: 1>} : (tensor<2x16xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2x8xf32>
  %p3 = kiln.slice %x[%c8 : %c16 : %c1] {axes = array<i64: 1>} : (tensor<2x16xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2x8xf32>
  %q3 = kiln.rotary %r3, %cos, %sin : (tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %y3 = kiln.concat %q3, %p3 {axis = 1 : i64} : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x16xf32>

  // The rotated slice has another user.
  %r4 = kiln.slice %x[%c0 : %c8 : %c1] {axes = array<i64: 1>} : (tensor<2x16xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2x8xf32>
  %p4 = kiln.slice %x[%c8 : %c16 : %c1] {axes = array<i64: 1>} : (tensor<2x16xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2x8xf32>
  %q4 = kiln.rotary %r4, %cos, %sin : (tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %y4 = kiln.concat %q4, %p4 {axis = 1 : i64} : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x16xf32>
  return %y0, %y1, %y2, %y3, %y4, %r4 : tensor<2x16xf32>, tensor<2x14xf32>, tensor<2x16xf32>, tensor<2x16xf32>, tensor<2x16xf32>, tensor<2x8xf32>
}

// -----

// Tests GPT-J's rotate_every_two, torch.stack((-x[..., 1::2], x[..., ::2]),
// -1) flattened back (its shape read from the stacked pairs' dims), as one
// interleaved kiln.rotary; nothing of the pairs is left.

// CHECK-LABEL: func.func @gptj
//  CHECK-SAME: (%[[X:.+]]: tensor<?x?x4x8xf32>, %[[COS:.+]]: tensor<?x?x1x8xf32>, %[[SIN:.+]]: tensor<?x?x1x8xf32>)
//       CHECK: %[[Y:.+]] = kiln.rotary %[[X]], %[[COS]], %[[SIN]] {interleaved}
//   CHECK-NOT: kiln.concat
//       CHECK: return %[[Y]]
func.func @gptj(%x: tensor<?x?x4x8xf32>, %cos: tensor<?x?x1x8xf32>, %sin: tensor<?x?x1x8xf32>) -> tensor<?x?x4x8xf32> {
  %c0 = kiln.constant dense<0> : tensor<1xi64>
  %c1 = kiln.constant dense<1> : tensor<1xi64>
  %c2 = kiln.constant dense<2> : tensor<1xi64>
  %c4 = kiln.constant dense<4> : tensor<1xi64>
  %end = kiln.constant dense<9223372036854775807> : tensor<1xi64>
  %c8 = kiln.constant dense<8> : tensor<i64>
  %xc = kiln.mul %x, %cos : (tensor<?x?x4x8xf32>, tensor<?x?x1x8xf32>) -> tensor<?x?x4x8xf32>
  %even = kiln.slice %x[%c0 : %end : %c2] {axes = array<i64: 3>} : (tensor<?x?x4x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x?x4x4xf32>
  %odd = kiln.slice %x[%c1 : %end : %c2] {axes = array<i64: 3>} : (tensor<?x?x4x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x?x4x4xf32>
  %neg = kiln.neg %odd : tensor<?x?x4x4xf32>
  %a = kiln.unsqueeze %neg {axes = array<i64: 4>} : (tensor<?x?x4x4xf32>) -> tensor<?x?x4x4x1xf32>
  %b = kiln.unsqueeze %even {axes = array<i64: 4>} : (tensor<?x?x4x4xf32>) -> tensor<?x?x4x4x1xf32>
  %pairs = kiln.concat %a, %b {axis = 4 : i64} : (tensor<?x?x4x4x1xf32>, tensor<?x?x4x4x1xf32>) -> tensor<?x?x4x4x2xf32>
  %d0 = kiln.dim %pairs {index = 0 : i64} : tensor<?x?x4x4x2xf32> -> tensor<i64>
  %e0 = kiln.unsqueeze %d0 {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %d1 = kiln.dim %pairs {index = 1 : i64} : tensor<?x?x4x4x2xf32> -> tensor<i64>
  %e1 = kiln.unsqueeze %d1 {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %e3 = kiln.unsqueeze %c8 {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %shape = kiln.concat %e0, %e1, %c4, %e3 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  %r = kiln.reshape %pairs, %shape : (tensor<?x?x4x4x2xf32>, tensor<4xi64>) -> tensor<?x?x4x8xf32>
  %rs = kiln.mul %r, %sin : (tensor<?x?x4x8xf32>, tensor<?x?x1x8xf32>) -> tensor<?x?x4x8xf32>
  %y = kiln.add %xc, %rs : (tensor<?x?x4x8xf32>, tensor<?x?x4x8xf32>) -> tensor<?x?x4x8xf32>
  return %y : tensor<?x?x4x8xf32>
}

// -----

// Tests that the pairs in the other order (the even elements negated) are
// not GPT-J's rotation and do not fuse.

// CHECK-LABEL: func.func @not_rotate_every_two
//   CHECK-NOT: kiln.rotary
func.func @not_rotate_every_two(%x: tensor<?x?x4x8xf32>, %cos: tensor<?x?x1x8xf32>, %sin: tensor<?x?x1x8xf32>) -> tensor<?x?x4x8xf32> {
  %c0 = kiln.constant dense<0> : tensor<1xi64>
  %c1 = kiln.constant dense<1> : tensor<1xi64>
  %c2 = kiln.constant dense<2> : tensor<1xi64>
  %c4 = kiln.constant dense<4> : tensor<1xi64>
  %end = kiln.constant dense<9223372036854775807> : tensor<1xi64>
  %c8 = kiln.constant dense<8> : tensor<i64>
  %xc = kiln.mul %x, %cos : (tensor<?x?x4x8xf32>, tensor<?x?x1x8xf32>) -> tensor<?x?x4x8xf32>
  %even = kiln.slice %x[%c0 : %end : %c2] {axes = array<i64: 3>} : (tensor<?x?x4x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x?x4x4xf32>
  %odd = kiln.slice %x[%c1 : %end : %c2] {axes = array<i64: 3>} : (tensor<?x?x4x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x?x4x4xf32>
  %neg = kiln.neg %even : tensor<?x?x4x4xf32>
  %a = kiln.unsqueeze %neg {axes = array<i64: 4>} : (tensor<?x?x4x4xf32>) -> tensor<?x?x4x4x1xf32>
  %b = kiln.unsqueeze %odd {axes = array<i64: 4>} : (tensor<?x?x4x4xf32>) -> tensor<?x?x4x4x1xf32>
  %pairs = kiln.concat %a, %b {axis = 4 : i64} : (tensor<?x?x4x4x1xf32>, tensor<?x?x4x4x1xf32>) -> tensor<?x?x4x4x2xf32>
  %d0 = kiln.dim %pairs {index = 0 : i64} : tensor<?x?x4x4x2xf32> -> tensor<i64>
  %e0 = kiln.unsqueeze %d0 {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %d1 = kiln.dim %pairs {index = 1 : i64} : tensor<?x?x4x4x2xf32> -> tensor<i64>
  %e1 = kiln.unsqueeze %d1 {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %e3 = kiln.unsqueeze %c8 {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %shape = kiln.concat %e0, %e1, %c4, %e3 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  %r = kiln.reshape %pairs, %shape : (tensor<?x?x4x4x2xf32>, tensor<4xi64>) -> tensor<?x?x4x8xf32>
  %rs = kiln.mul %r, %sin : (tensor<?x?x4x8xf32>, tensor<?x?x1x8xf32>) -> tensor<?x?x4x8xf32>
  %y = kiln.add %xc, %rs : (tensor<?x?x4x8xf32>, tensor<?x?x4x8xf32>) -> tensor<?x?x4x8xf32>
  return %y : tensor<?x?x4x8xf32>
}

// -----

// Tests that pairs read by something other than the flatten and its shape
// (here returned) do not fuse.

// CHECK-LABEL: func.func @pairs_read_elsewhere
//   CHECK-NOT: kiln.rotary
func.func @pairs_read_elsewhere(%x: tensor<?x?x4x8xf32>, %cos: tensor<?x?x1x8xf32>, %sin: tensor<?x?x1x8xf32>) -> (tensor<?x?x4x8xf32>, tensor<?x?x4x4x2xf32>) {
  %c0 = kiln.constant dense<0> : tensor<1xi64>
  %c1 = kiln.constant dense<1> : tensor<1xi64>
  %c2 = kiln.constant dense<2> : tensor<1xi64>
  %c4 = kiln.constant dense<4> : tensor<1xi64>
  %end = kiln.constant dense<9223372036854775807> : tensor<1xi64>
  %c8 = kiln.constant dense<8> : tensor<i64>
  %xc = kiln.mul %x, %cos : (tensor<?x?x4x8xf32>, tensor<?x?x1x8xf32>) -> tensor<?x?x4x8xf32>
  %even = kiln.slice %x[%c0 : %end : %c2] {axes = array<i64: 3>} : (tensor<?x?x4x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x?x4x4xf32>
  %odd = kiln.slice %x[%c1 : %end : %c2] {axes = array<i64: 3>} : (tensor<?x?x4x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x?x4x4xf32>
  %neg = kiln.neg %odd : tensor<?x?x4x4xf32>
  %a = kiln.unsqueeze %neg {axes = array<i64: 4>} : (tensor<?x?x4x4xf32>) -> tensor<?x?x4x4x1xf32>
  %b = kiln.unsqueeze %even {axes = array<i64: 4>} : (tensor<?x?x4x4xf32>) -> tensor<?x?x4x4x1xf32>
  %pairs = kiln.concat %a, %b {axis = 4 : i64} : (tensor<?x?x4x4x1xf32>, tensor<?x?x4x4x1xf32>) -> tensor<?x?x4x4x2xf32>
  %d0 = kiln.dim %pairs {index = 0 : i64} : tensor<?x?x4x4x2xf32> -> tensor<i64>
  %e0 = kiln.unsqueeze %d0 {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %d1 = kiln.dim %pairs {index = 1 : i64} : tensor<?x?x4x4x2xf32> -> tensor<i64>
  %e1 = kiln.unsqueeze %d1 {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %e3 = kiln.unsqueeze %c8 {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %shape = kiln.concat %e0, %e1, %c4, %e3 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  %r = kiln.reshape %pairs, %shape : (tensor<?x?x4x4x2xf32>, tensor<4xi64>) -> tensor<?x?x4x8xf32>
  %rs = kiln.mul %r, %sin : (tensor<?x?x4x8xf32>, tensor<?x?x1x8xf32>) -> tensor<?x?x4x8xf32>
  %y = kiln.add %xc, %rs : (tensor<?x?x4x8xf32>, tensor<?x?x4x8xf32>) -> tensor<?x?x4x8xf32>
  return %y, %pairs : tensor<?x?x4x8xf32>, tensor<?x?x4x4x2xf32>
}
