// RUN: kiln-opt %s --split-input-file --kiln-fuse-normalizations | FileCheck %s

// Tests that an opset-14 LayerNorm export (pow, sqrt, div, then gamma and
// beta) becomes one kiln.layer_norm with the bias. The epsilon, 1e-5 in f32,
// is the op's default and so not printed.

// CHECK-LABEL: func.func @layer_norm_export
//  CHECK-SAME: (%[[X:.+]]: tensor<?x?x64xf32>, %[[G:.+]]: tensor<64xf32>, %[[B:.+]]: tensor<64xf32>)
//       CHECK: %[[Y:.+]] = kiln.layer_norm %[[X]], %[[G]], %[[B]] {axis = 2 : i64} :
//   CHECK-NOT: kiln.reduce_mean
//       CHECK: return %[[Y]]
func.func @layer_norm_export(%x: tensor<?x?x64xf32>, %gamma: tensor<64xf32>, %beta: tensor<64xf32>) -> tensor<?x?x64xf32> {
  %mean = kiln.reduce_mean %x {axes = array<i64: 2>} : (tensor<?x?x64xf32>) -> tensor<?x?x1xf32>
  %d = kiln.sub %x, %mean : (tensor<?x?x64xf32>, tensor<?x?x1xf32>) -> tensor<?x?x64xf32>
  %two = kiln.constant dense<2.0> : tensor<f32>
  %sq = kiln.pow %d, %two : (tensor<?x?x64xf32>, tensor<f32>) -> tensor<?x?x64xf32>
  %var = kiln.reduce_mean %sq {axes = array<i64: 2>} : (tensor<?x?x64xf32>) -> tensor<?x?x1xf32>
  %eps = kiln.constant dense<9.99999974E-6> : tensor<f32>
  %ve = kiln.add %var, %eps : (tensor<?x?x1xf32>, tensor<f32>) -> tensor<?x?x1xf32>
  %std = kiln.sqrt %ve : tensor<?x?x1xf32>
  %n = kiln.div %d, %std : (tensor<?x?x64xf32>, tensor<?x?x1xf32>) -> tensor<?x?x64xf32>
  %s = kiln.mul %n, %gamma : (tensor<?x?x64xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
  %y = kiln.add %s, %beta : (tensor<?x?x64xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
  return %y : tensor<?x?x64xf32>
}

// -----

// Tests the other spellings: d * d for the square, epsilon on the left, a
// multiplication by rsqrt, gamma on the left, no beta, and two trailing axes.

// CHECK-LABEL: func.func @layer_norm_rsqrt_two_axes
//  CHECK-SAME: (%[[X:.+]]: tensor<2x8x4x16xf32>, %[[G:.+]]: tensor<4x16xf32>)
//       CHECK: kiln.layer_norm %[[X]], %[[G]] {axis = 2 : i64, epsilon = 1.000000e-03 : f32} : (tensor<2x8x4x16xf32>, tensor<4x16xf32>) -> tensor<2x8x4x16xf32>
func.func @layer_norm_rsqrt_two_axes(%x: tensor<2x8x4x16xf32>, %gamma: tensor<4x16xf32>) -> tensor<2x8x4x16xf32> {
  %mean = kiln.reduce_mean %x {axes = array<i64: 2, 3>} : (tensor<2x8x4x16xf32>) -> tensor<2x8x1x1xf32>
  %d = kiln.sub %x, %mean : (tensor<2x8x4x16xf32>, tensor<2x8x1x1xf32>) -> tensor<2x8x4x16xf32>
  %sq = kiln.mul %d, %d : (tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>) -> tensor<2x8x4x16xf32>
  %var = kiln.reduce_mean %sq {axes = array<i64: 2, 3>} : (tensor<2x8x4x16xf32>) -> tensor<2x8x1x1xf32>
  %eps = kiln.constant dense<1.0e-3> : tensor<1xf32>
  %ve = kiln.add %eps, %var : (tensor<1xf32>, tensor<2x8x1x1xf32>) -> tensor<2x8x1x1xf32>
  %inv = kiln.rsqrt %ve : tensor<2x8x1x1xf32>
  %n = kiln.mul %d, %inv : (tensor<2x8x4x16xf32>, tensor<2x8x1x1xf32>) -> tensor<2x8x4x16xf32>
  %y = kiln.mul %gamma, %n : (tensor<4x16xf32>, tensor<2x8x4x16xf32>) -> tensor<2x8x4x16xf32>
  return %y : tensor<2x8x4x16xf32>
}

// -----

// Tests that Llama's RMSNorm export (pow, sqrt, 1 / sqrt, x * inverse, then
// weight * ...) becomes one kiln.rms_norm.

// CHECK-LABEL: func.func @rms_norm_export
//  CHECK-SAME: (%[[X:.+]]: tensor<?x?x64xf32>, %[[W:.+]]: tensor<64xf32>)
//       CHECK: %[[Y:.+]] = kiln.rms_norm %[[X]], %[[W]] {axis = 2 : i64, epsilon = 9.99999974E-6 : f32}
//   CHECK-NOT: kiln.sqrt
//       CHECK: return %[[Y]], %[[X]]
func.func @rms_norm_export(%x: tensor<?x?x64xf32>, %w: tensor<64xf32>) -> (tensor<?x?x64xf32>, tensor<?x?x64xf32>) {
  %two = kiln.constant dense<2.0> : tensor<f32>
  %sq = kiln.pow %x, %two : (tensor<?x?x64xf32>, tensor<f32>) -> tensor<?x?x64xf32>
  %ms = kiln.reduce_mean %sq {axes = array<i64: 2>} : (tensor<?x?x64xf32>) -> tensor<?x?x1xf32>
  %eps = kiln.constant dense<9.99999974E-6> : tensor<f32>
  %me = kiln.add %ms, %eps : (tensor<?x?x1xf32>, tensor<f32>) -> tensor<?x?x1xf32>
  %rms = kiln.sqrt %me : tensor<?x?x1xf32>
  %one = kiln.constant dense<1.0> : tensor<f32>
  %inv = kiln.div %one, %rms : (tensor<f32>, tensor<?x?x1xf32>) -> tensor<?x?x1xf32>
  %n = kiln.mul %x, %inv : (tensor<?x?x64xf32>, tensor<?x?x1xf32>) -> tensor<?x?x64xf32>
  %y = kiln.mul %w, %n : (tensor<64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  return %y, %x : tensor<?x?x64xf32>, tensor<?x?x64xf32>
}

// -----

// Tests that a mean over a leading axis is not a normalization of the
// trailing axes, and does not fuse.

// CHECK-LABEL: func.func @not_trailing_axis
//   CHECK-NOT: kiln.rms_norm
func.func @not_trailing_axis(%x: tensor<4x64xf32>, %w: tensor<64xf32>) -> tensor<4x64xf32> {
  %sq = kiln.mul %x, %x : (tensor<4x64xf32>, tensor<4x64xf32>) -> tensor<4x64xf32>
  %ms = kiln.reduce_mean %sq {axes = array<i64: 0>} : (tensor<4x64xf32>) -> tensor<1x64xf32>
  %eps = kiln.constant dense<1.0e-6> : tensor<f32>
  %me = kiln.add %ms, %eps : (tensor<1x64xf32>, tensor<f32>) -> tensor<1x64xf32>
  %inv = kiln.rsqrt %me : tensor<1x64xf32>
  %n = kiln.mul %x, %inv : (tensor<4x64xf32>, tensor<1x64xf32>) -> tensor<4x64xf32>
  %y = kiln.mul %n, %w : (tensor<4x64xf32>, tensor<64xf32>) -> tensor<4x64xf32>
  return %y : tensor<4x64xf32>
}

// -----

// Tests that LayerNorm does not fuse when the centered value has a third
// user; the variance part alone is still an RMSNorm of the centered value.

// CHECK-LABEL: func.func @centered_used_elsewhere
//   CHECK-NOT: kiln.layer_norm
//       CHECK: %[[D:.+]] = kiln.sub
//       CHECK: kiln.rms_norm %[[D]]
func.func @centered_used_elsewhere(%x: tensor<4x64xf32>, %g: tensor<64xf32>) -> (tensor<4x64xf32>, tensor<4x64xf32>) {
  %mean = kiln.reduce_mean %x {axes = array<i64: 1>} : (tensor<4x64xf32>) -> tensor<4x1xf32>
  %d = kiln.sub %x, %mean : (tensor<4x64xf32>, tensor<4x1xf32>) -> tensor<4x64xf32>
  %sq = kiln.mul %d, %d : (tensor<4x64xf32>, tensor<4x64xf32>) -> tensor<4x64xf32>
  %var = kiln.reduce_mean %sq {axes = array<i64: 1>} : (tensor<4x64xf32>) -> tensor<4x1xf32>
  %eps = kiln.constant dense<1.0e-5> : tensor<f32>
  %ve = kiln.add %var, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %std = kiln.sqrt %ve : tensor<4x1xf32>
  %n = kiln.div %d, %std : (tensor<4x64xf32>, tensor<4x1xf32>) -> tensor<4x64xf32>
  %y = kiln.mul %n, %g : (tensor<4x64xf32>, tensor<64xf32>) -> tensor<4x64xf32>
  return %y, %d : tensor<4x64xf32>, tensor<4x64xf32>
}

// -----

// Tests that an epsilon that is not a constant does not fuse.

// CHECK-LABEL: func.func @epsilon_not_constant
//   CHECK-NOT: kiln.rms_norm
func.func @epsilon_not_constant(%x: tensor<4x64xf32>, %w: tensor<64xf32>, %eps: tensor<f32>) -> tensor<4x64xf32> {
  %sq = kiln.mul %x, %x : (tensor<4x64xf32>, tensor<4x64xf32>) -> tensor<4x64xf32>
  %ms = kiln.reduce_mean %sq {axes = array<i64: 1>} : (tensor<4x64xf32>) -> tensor<4x1xf32>
  %me = kiln.add %ms, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %inv = kiln.rsqrt %me : tensor<4x1xf32>
  %n = kiln.mul %x, %inv : (tensor<4x64xf32>, tensor<4x1xf32>) -> tensor<4x64xf32>
  %y = kiln.mul %n, %w : (tensor<4x64xf32>, tensor<64xf32>) -> tensor<4x64xf32>
  return %y : tensor<4x64xf32>
}

// -----

// Tests that a scale that varies along a non-normalized axis (one per row
// here) is not a norm's gamma, and does not fuse.

// CHECK-LABEL: func.func @scale_per_row
//   CHECK-NOT: kiln.rms_norm
func.func @scale_per_row(%x: tensor<4x64xf32>, %w: tensor<4x64xf32>) -> tensor<4x64xf32> {
  %sq = kiln.mul %x, %x : (tensor<4x64xf32>, tensor<4x64xf32>) -> tensor<4x64xf32>
  %ms = kiln.reduce_mean %sq {axes = array<i64: 1>} : (tensor<4x64xf32>) -> tensor<4x1xf32>
  %eps = kiln.constant dense<1.0e-6> : tensor<f32>
  %me = kiln.add %ms, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %inv = kiln.rsqrt %me : tensor<4x1xf32>
  %n = kiln.mul %x, %inv : (tensor<4x64xf32>, tensor<4x1xf32>) -> tensor<4x64xf32>
  %y = kiln.mul %n, %w : (tensor<4x64xf32>, tensor<4x64xf32>) -> tensor<4x64xf32>
  return %y : tensor<4x64xf32>
}
