// RUN: kiln-opt %s --split-input-file --verify-diagnostics

//===----------------------------------------------------------------------===//
// ODS type constraints
//===----------------------------------------------------------------------===//

// Tests that a float-only unary op rejects an integer tensor.
func.func @exp_integer(%x: tensor<4xi64>) -> tensor<4xi64> {
  // expected-error @+1 {{'kiln.exp' op operand #0 must be ranked tensor of float values, but got 'tensor<4xi64>'}}
  %y = kiln.exp %x : tensor<4xi64>
  return %y : tensor<4xi64>
}

// -----

// Tests that the numeric unary ops reject i1 tensors.
func.func @neg_bool(%x: tensor<4xi1>) -> tensor<4xi1> {
  // expected-error @+1 {{'kiln.neg' op operand #0 must be ranked tensor of float or integer values, but got 'tensor<4xi1>'}}
  %y = kiln.neg %x : tensor<4xi1>
  return %y : tensor<4xi1>
}

// -----

// Tests that integer widths outside the kiln element types are rejected.
func.func @neg_i2(%x: tensor<4xi2>) -> tensor<4xi2> {
  // expected-error @+1 {{'kiln.neg' op operand #0 must be ranked tensor of float or integer values, but got 'tensor<4xi2>'}}
  %y = kiln.neg %x : tensor<4xi2>
  return %y : tensor<4xi2>
}

// -----

// Tests that not only takes i1 tensors.
func.func @not_float(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'kiln.not' op operand #0 must be ranked tensor of 1-bit signless integer values, but got 'tensor<4xf32>'}}
  %y = kiln.not %x : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// Tests that compare yields an i1 tensor.
func.func @compare_result_not_i1(%x: tensor<4xf32>) -> tensor<4xi32> {
  // expected-error @+1 {{'kiln.compare' op result #0 must be ranked tensor of 1-bit signless integer values, but got 'tensor<4xi32>'}}
  %y = kiln.compare eq, %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi32>
  return %y : tensor<4xi32>
}

// -----

// Tests that compare operands share their element type.
func.func @compare_element_mismatch(%x: tensor<4xf32>, %z: tensor<4xi32>) -> tensor<4xi1> {
  // expected-error @+1 {{'kiln.compare' op failed to verify that all of {lhs, rhs} have same element type}}
  %y = kiln.compare lt, %x, %z : (tensor<4xf32>, tensor<4xi32>) -> tensor<4xi1>
  return %y : tensor<4xi1>
}

// -----

// Tests that the condition of where is an i1 tensor.
func.func @where_condition_not_i1(%c: tensor<4xf32>, %x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'kiln.where' op operand #0 must be ranked tensor of 1-bit signless integer values, but got 'tensor<4xf32>'}}
  %y = kiln.where %c, %x, %x : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// Tests that the branches of where share the result's element type.
func.func @where_element_mismatch(%c: tensor<4xi1>, %x: tensor<4xf32>, %z: tensor<4xf16>) -> tensor<4xf32> {
  // expected-error @+1 {{'kiln.where' op failed to verify that all of {on_true, on_false, result} have same element type}}
  %y = kiln.where %c, %x, %z : (tensor<4xi1>, tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// Tests that an arithmetic op rejects operands of different element types.
func.func @add_element_mismatch(%x: tensor<4xf32>, %z: tensor<4xf16>) -> tensor<4xf32> {
  // expected-error @+1 {{'kiln.add' op failed to verify that all of {lhs, rhs, result} have same element type}}
  %y = kiln.add %x, %z : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// Tests that binary operands must broadcast against each other.
func.func @add_not_broadcastable(%x: tensor<?x4xf32>, %z: tensor<3xf32>) -> tensor<?x4xf32> {
  // expected-error @+1 {{'kiln.add' op operands don't have broadcast-compatible shapes}}
  %y = kiln.add %x, %z : (tensor<?x4xf32>, tensor<3xf32>) -> tensor<?x4xf32>
  return %y : tensor<?x4xf32>
}

// -----

// Tests that the result of a binary op has the broadcast shape.
func.func @mul_wrong_result_shape(%x: tensor<4xf32>, %z: tensor<4xf32>) -> tensor<5xf32> {
  // expected-error @+1 {{'kiln.mul' op result type '5' not broadcast compatible with broadcasted operands's shapes '4'}}
  %y = kiln.mul %x, %z : (tensor<4xf32>, tensor<4xf32>) -> tensor<5xf32>
  return %y : tensor<5xf32>
}

// -----

// Tests that the logical ops only take i1 tensors.
func.func @and_integer(%x: tensor<4xi8>) -> tensor<4xi8> {
  // expected-error @+1 {{'kiln.and' op operand #0 must be ranked tensor of 1-bit signless integer values, but got 'tensor<4xi8>'}}
  %y = kiln.and %x, %x : (tensor<4xi8>, tensor<4xi8>) -> tensor<4xi8>
  return %y : tensor<4xi8>
}

// -----

// Tests that cast keeps the shape.
func.func @cast_shape_change(%x: tensor<4xf32>) -> tensor<3xf16> {
  // expected-error @+1 {{'kiln.cast' op requires the same shape for all operands and results}}
  %y = kiln.cast %x : tensor<4xf32> to tensor<3xf16>
  return %y : tensor<3xf16>
}

// -----

// Tests that the shape operand of reshape is a 1-D i64 tensor.
func.func @reshape_shape_not_1d(%x: tensor<4xf32>, %s: tensor<2x2xi64>) -> tensor<2x2xf32> {
  // expected-error @+1 {{'kiln.reshape' op operand #1 must be 1D tensor of 64-bit signless integer values, but got 'tensor<2x2xi64>'}}
  %y = kiln.reshape %x, %s : (tensor<4xf32>, tensor<2x2xi64>) -> tensor<2x2xf32>
  return %y : tensor<2x2xf32>
}

// -----

// Tests that concat needs at least one input.
func.func @concat_no_inputs() -> tensor<2xf32> {
  // expected-error @+1 {{'kiln.concat' op expected 1 or more operands, but found 0}}
  %y = kiln.concat {axis = 0 : i64} : () -> tensor<2xf32>
  return %y : tensor<2xf32>
}

//===----------------------------------------------------------------------===//
// Elementwise verifiers
//===----------------------------------------------------------------------===//

// -----

// Tests that clamp bounds are 0-d tensors.
func.func @clamp_bound_not_scalar(%x: tensor<?x64xf32>, %lo: tensor<64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{'kiln.clamp' op bounds must be 0-d tensors, got 'tensor<64xf32>'}}
  %y = kiln.clamp %x min %lo : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// Tests that clamp bounds have the input's element type.
func.func @clamp_bound_element_type(%x: tensor<?x64xf32>, %hi: tensor<f16>) -> tensor<?x64xf32> {
  // expected-error @+1 {{'kiln.clamp' op bound element type 'f16' differs from the input's 'f32'}}
  %y = kiln.clamp %x max %hi : (tensor<?x64xf32>, tensor<f16>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// Tests that the result of clamp has the input's shape.
func.func @clamp_result_shape(%x: tensor<?x64xf32>) -> tensor<?x32xf32> {
  // expected-error @+1 {{'kiln.clamp' op result type 'tensor<?x32xf32>' does not match the expected shape [?, 64]}}
  %y = kiln.clamp %x : (tensor<?x64xf32>) -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}

//===----------------------------------------------------------------------===//
// Contractions, normalizations and reductions
//===----------------------------------------------------------------------===//

// -----

// Tests that matmul operands have rank 2 or more.
func.func @matmul_rank_1(%x: tensor<64xf32>, %w: tensor<64x8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'kiln.matmul' op operands must have rank 2 or more, got 'tensor<64xf32>' and 'tensor<64x8xf32>'}}
  %y = kiln.matmul %x, %w : (tensor<64xf32>, tensor<64x8xf32>) -> tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

// Tests that the contraction dimensions of matmul agree.
func.func @matmul_k_mismatch(%x: tensor<?x64xf32>, %w: tensor<32x8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{'kiln.matmul' op contraction sizes differ: lhs has K = 64, rhs has K = 32}}
  %y = kiln.matmul %x, %w : (tensor<?x64xf32>, tensor<32x8xf32>) -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// -----

// Tests that with transpose_b the contraction dimension of rhs is its last.
func.func @matmul_transpose_b_k_mismatch(%q: tensor<?x?x16xf32>, %k: tensor<?x16x32xf32>) -> tensor<?x?x16xf32> {
  // expected-error @+1 {{'kiln.matmul' op contraction sizes differ: lhs has K = 16, rhs has K = 32}}
  %y = kiln.matmul %q, %k {transpose_b} : (tensor<?x?x16xf32>, tensor<?x16x32xf32>) -> tensor<?x?x16xf32>
  return %y : tensor<?x?x16xf32>
}

// -----

// Tests that the batch dimensions of matmul broadcast.
func.func @matmul_batch_mismatch(%a: tensor<2x3x8x16xf32>, %b: tensor<4x16x4xf32>) -> tensor<2x3x8x4xf32> {
  // expected-error @+1 {{'kiln.matmul' op batch dimensions [2, 3] and [4] do not broadcast}}
  %y = kiln.matmul %a, %b : (tensor<2x3x8x16xf32>, tensor<4x16x4xf32>) -> tensor<2x3x8x4xf32>
  return %y : tensor<2x3x8x4xf32>
}

// -----

// Tests that the result of matmul has the [batch..., M, N] shape.
func.func @matmul_result_shape(%x: tensor<?x?x64xf32>, %w: tensor<64x256xf32>) -> tensor<?x?x64xf32> {
  // expected-error @+1 {{'kiln.matmul' op result type 'tensor<?x?x64xf32>' does not match the expected shape [?, ?, 256]}}
  %y = kiln.matmul %x, %w : (tensor<?x?x64xf32>, tensor<64x256xf32>) -> tensor<?x?x64xf32>
  return %y : tensor<?x?x64xf32>
}

// -----

// Tests that softmax rejects an axis past the rank.
func.func @softmax_axis_out_of_range(%x: tensor<?x4x?x?xf32>) -> tensor<?x4x?x?xf32> {
  // expected-error @+1 {{'kiln.softmax' op axis 4 is out of range for rank 4 (axes are normalized: 0 <= axis < rank)}}
  %y = kiln.softmax %x {axis = 4 : i64} : tensor<?x4x?x?xf32>
  return %y : tensor<?x4x?x?xf32>
}

// -----

// Tests that log_softmax rejects a negative (unnormalized) axis.
func.func @log_softmax_negative_axis(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'kiln.log_softmax' op axis -1 is out of range for rank 2 (axes are normalized: 0 <= axis < rank)}}
  %y = kiln.log_softmax %x {axis = -1 : i64} : tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

// Tests that layer_norm checks its axis.
func.func @layer_norm_axis(%x: tensor<?x?x64xf32>, %g: tensor<64xf32>) -> tensor<?x?x64xf32> {
  // expected-error @+1 {{'kiln.layer_norm' op axis 3 is out of range for rank 3 (axes are normalized: 0 <= axis < rank)}}
  %y = kiln.layer_norm %x, %g {axis = 3 : i64} : (tensor<?x?x64xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
  return %y : tensor<?x?x64xf32>
}

// -----

// Tests that the layer_norm scale does not have more axes than are normalized.
func.func @layer_norm_scale_rank(%x: tensor<?x?x64xf32>, %g: tensor<1x64xf32>) -> tensor<?x?x64xf32> {
  // expected-error @+1 {{'kiln.layer_norm' op scale has rank 2 but only 1 axes are normalized}}
  %y = kiln.layer_norm %x, %g {axis = 2 : i64} : (tensor<?x?x64xf32>, tensor<1x64xf32>) -> tensor<?x?x64xf32>
  return %y : tensor<?x?x64xf32>
}

// -----

// Tests that the layer_norm scale broadcasts to the normalized shape.
func.func @layer_norm_scale_shape(%x: tensor<?x?x64xf32>, %g: tensor<32xf32>) -> tensor<?x?x64xf32> {
  // expected-error @+1 {{'kiln.layer_norm' op scale shape [32] does not broadcast to the normalized shape [64]}}
  %y = kiln.layer_norm %x, %g {axis = 2 : i64} : (tensor<?x?x64xf32>, tensor<32xf32>) -> tensor<?x?x64xf32>
  return %y : tensor<?x?x64xf32>
}

// -----

// Tests that a layer_norm scale may not stretch a normalized dimension of
// size 1 (it would change the result shape).
func.func @layer_norm_scale_stretches(%x: tensor<?x4x1xf32>, %g: tensor<4x8xf32>) -> tensor<?x4x1xf32> {
  // expected-error @+1 {{'kiln.layer_norm' op scale shape [4, 8] does not broadcast to the normalized shape [4, 1]}}
  %y = kiln.layer_norm %x, %g {axis = 1 : i64} : (tensor<?x4x1xf32>, tensor<4x8xf32>) -> tensor<?x4x1xf32>
  return %y : tensor<?x4x1xf32>
}

// -----

// Tests that the layer_norm bias broadcasts to the normalized shape.
func.func @layer_norm_bias_shape(%x: tensor<?x?x64xf32>, %g: tensor<64xf32>, %b: tensor<63xf32>) -> tensor<?x?x64xf32> {
  // expected-error @+1 {{'kiln.layer_norm' op bias shape [63] does not broadcast to the normalized shape [64]}}
  %y = kiln.layer_norm %x, %g, %b {axis = 2 : i64} : (tensor<?x?x64xf32>, tensor<64xf32>, tensor<63xf32>) -> tensor<?x?x64xf32>
  return %y : tensor<?x?x64xf32>
}

// -----

// Tests that the layer_norm bias does not have more axes than are normalized.
func.func @layer_norm_bias_rank(%x: tensor<?x?x64xf32>, %g: tensor<64xf32>, %b: tensor<?x?x64xf32>) -> tensor<?x?x64xf32> {
  // expected-error @+1 {{'kiln.layer_norm' op bias has rank 3 but only 1 axes are normalized}}
  %y = kiln.layer_norm %x, %g, %b {axis = 2 : i64} : (tensor<?x?x64xf32>, tensor<64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  return %y : tensor<?x?x64xf32>
}

// -----

// Tests that layer_norm keeps the input type.
func.func @layer_norm_result_type(%x: tensor<?x?x64xf32>, %g: tensor<64xf32>) -> tensor<?x?x64xf16> {
  // expected-error @+1 {{'kiln.layer_norm' op failed to verify that all of {input, scale, result} have same element type}}
  %y = kiln.layer_norm %x, %g {axis = 2 : i64} : (tensor<?x?x64xf32>, tensor<64xf32>) -> tensor<?x?x64xf16>
  return %y : tensor<?x?x64xf16>
}

// -----

// Tests that rms_norm checks its axis.
func.func @rms_norm_axis(%x: tensor<?x64xf32>, %w: tensor<64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{'kiln.rms_norm' op axis -1 is out of range for rank 2 (axes are normalized: 0 <= axis < rank)}}
  %y = kiln.rms_norm %x, %w {axis = -1 : i64} : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// Tests that the rms_norm scale broadcasts to the normalized shape.
func.func @rms_norm_scale_shape(%x: tensor<?x?x64xf32>, %w: tensor<?x128xf32>) -> tensor<?x?x64xf32> {
  // expected-error @+1 {{'kiln.rms_norm' op scale shape [?, 128] does not broadcast to the normalized shape [?, 64]}}
  %y = kiln.rms_norm %x, %w {axis = 1 : i64} : (tensor<?x?x64xf32>, tensor<?x128xf32>) -> tensor<?x?x64xf32>
  return %y : tensor<?x?x64xf32>
}

// -----

// Tests that a reduction rejects an out-of-range axis.
func.func @reduce_axis_out_of_range(%x: tensor<?x?x64xf32>) -> tensor<?x?x1xf32> {
  // expected-error @+1 {{'kiln.reduce_sum' op axis 3 is out of range for rank 3 (axes are normalized: 0 <= axis < rank)}}
  %y = kiln.reduce_sum %x {axes = array<i64: 3>} : (tensor<?x?x64xf32>) -> tensor<?x?x1xf32>
  return %y : tensor<?x?x1xf32>
}

// -----

// Tests that reduction axes are sorted.
func.func @reduce_axes_unsorted(%x: tensor<?x?x64xf32>) -> tensor<?xf32> {
  // expected-error @+1 {{'kiln.reduce_mean' op axes [2, 0] must be sorted and unique}}
  %y = kiln.reduce_mean %x {axes = array<i64: 2, 0>, keep_dims = false} : (tensor<?x?x64xf32>) -> tensor<?xf32>
  return %y : tensor<?xf32>
}

// -----

// Tests that reduction axes are unique.
func.func @reduce_axes_duplicate(%x: tensor<?x?x64xf32>) -> tensor<?x1x64xf32> {
  // expected-error @+1 {{'kiln.reduce_max' op axes [1, 1] must be sorted and unique}}
  %y = kiln.reduce_max %x {axes = array<i64: 1, 1>} : (tensor<?x?x64xf32>) -> tensor<?x1x64xf32>
  return %y : tensor<?x1x64xf32>
}

// -----

// Tests that a reduction keeping its dims yields size-1 dimensions.
func.func @reduce_result_keep_dims(%x: tensor<?x?x64xf32>) -> tensor<?x?xf32> {
  // expected-error @+1 {{'kiln.reduce_sum' op result type 'tensor<?x?xf32>' does not match the expected shape [?, ?, 1]}}
  %y = kiln.reduce_sum %x {axes = array<i64: 2>} : (tensor<?x?x64xf32>) -> tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}

// -----

// Tests that a reduction without keep_dims drops the reduced dimensions.
func.func @reduce_result_drop_dims(%x: tensor<2x3x4xi32>) -> tensor<2x3xi32> {
  // expected-error @+1 {{'kiln.reduce_max' op result type 'tensor<2x3xi32>' does not match the expected shape [2, 4]}}
  %y = kiln.reduce_max %x {axes = array<i64: 1>, keep_dims = false} : (tensor<2x3x4xi32>) -> tensor<2x3xi32>
  return %y : tensor<2x3xi32>
}

//===----------------------------------------------------------------------===//
// Data movement and shape ops
//===----------------------------------------------------------------------===//

// -----

// Tests that the reshape shape operand has one entry per result dimension.
func.func @reshape_shape_length(%x: tensor<?x?x64xf32>, %s: tensor<3xi64>) -> tensor<?x?x4x16xf32> {
  // expected-error @+1 {{'kiln.reshape' op shape has 3 entries but the result rank is 4}}
  %y = kiln.reshape %x, %s : (tensor<?x?x64xf32>, tensor<3xi64>) -> tensor<?x?x4x16xf32>
  return %y : tensor<?x?x4x16xf32>
}

// -----

// Tests that a static reshape keeps the element count.
func.func @reshape_element_count(%x: tensor<2x3xf32>, %s: tensor<2xi64>) -> tensor<3x3xf32> {
  // expected-error @+1 {{'kiln.reshape' op cannot reshape 6 elements into 'tensor<3x3xf32>' (9 elements)}}
  %y = kiln.reshape %x, %s : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<3x3xf32>
  return %y : tensor<3x3xf32>
}

// -----

// Tests that the permutation has one entry per input dimension.
func.func @transpose_perm_length(%x: tensor<?x?x4x16xf32>) -> tensor<?x4x?xf32> {
  // expected-error @+1 {{'kiln.transpose' op permutation [0, 2, 1] has 3 entries but the input has rank 4}}
  %y = kiln.transpose %x {permutation = array<i64: 0, 2, 1>} : (tensor<?x?x4x16xf32>) -> tensor<?x4x?xf32>
  return %y : tensor<?x4x?xf32>
}

// -----

// Tests that the permutation may not repeat an axis.
func.func @transpose_not_permutation(%x: tensor<2x3x4xf32>) -> tensor<2x2x4xf32> {
  // expected-error @+1 {{'kiln.transpose' op [0, 0, 2] is not a permutation of 0..2}}
  %y = kiln.transpose %x {permutation = array<i64: 0, 0, 2>} : (tensor<2x3x4xf32>) -> tensor<2x2x4xf32>
  return %y : tensor<2x2x4xf32>
}

// -----

// Tests that the permutation entries are in range.
func.func @transpose_perm_out_of_range(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // expected-error @+1 {{'kiln.transpose' op [2, 0] is not a permutation of 0..1}}
  %y = kiln.transpose %x {permutation = array<i64: 2, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %y : tensor<3x2xf32>
}

// -----

// Tests that the transpose result has the permuted shape.
func.func @transpose_result_shape(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'kiln.transpose' op result type 'tensor<2x3xf32>' does not match the expected shape [3, 2]}}
  %y = kiln.transpose %x {permutation = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

// Tests that squeeze only removes dimensions of size 1.
func.func @squeeze_not_one(%x: tensor<?x2x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{'kiln.squeeze' op cannot squeeze axis 1 of size 2}}
  %y = kiln.squeeze %x {axes = array<i64: 1>} : (tensor<?x2x64xf32>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// Tests that squeeze checks its axes against the input rank.
func.func @squeeze_axis_out_of_range(%x: tensor<?x1xf32>) -> tensor<?x1xf32> {
  // expected-error @+1 {{'kiln.squeeze' op axis 2 is out of range for rank 2 (axes are normalized: 0 <= axis < rank)}}
  %y = kiln.squeeze %x {axes = array<i64: 2>} : (tensor<?x1xf32>) -> tensor<?x1xf32>
  return %y : tensor<?x1xf32>
}

// -----

// Tests that the squeeze result drops the squeezed dimensions.
func.func @squeeze_result_shape(%x: tensor<?x1x64xf32>) -> tensor<?x1x64xf32> {
  // expected-error @+1 {{'kiln.squeeze' op result type 'tensor<?x1x64xf32>' does not match the expected shape [?, 64]}}
  %y = kiln.squeeze %x {axes = array<i64: 1>} : (tensor<?x1x64xf32>) -> tensor<?x1x64xf32>
  return %y : tensor<?x1x64xf32>
}

// -----

// Tests that unsqueeze axes are normalized against the result rank.
func.func @unsqueeze_axis_out_of_range(%x: tensor<?x?xi64>) -> tensor<?x?x1xi64> {
  // expected-error @+1 {{'kiln.unsqueeze' op axis 3 is out of range for rank 3 (axes are normalized: 0 <= axis < rank)}}
  %y = kiln.unsqueeze %x {axes = array<i64: 3>} : (tensor<?x?xi64>) -> tensor<?x?x1xi64>
  return %y : tensor<?x?x1xi64>
}

// -----

// Tests that unsqueeze axes are sorted.
func.func @unsqueeze_axes_unsorted(%x: tensor<?x?xi64>) -> tensor<?x1x1x?xi64> {
  // expected-error @+1 {{'kiln.unsqueeze' op axes [2, 1] must be sorted and unique}}
  %y = kiln.unsqueeze %x {axes = array<i64: 2, 1>} : (tensor<?x?xi64>) -> tensor<?x1x1x?xi64>
  return %y : tensor<?x1x1x?xi64>
}

// -----

// Tests that the unsqueeze result has size-1 dimensions at the axes.
func.func @unsqueeze_result_shape(%x: tensor<2x3xi64>) -> tensor<2x1x3xi64> {
  // expected-error @+1 {{'kiln.unsqueeze' op result type 'tensor<2x1x3xi64>' does not match the expected shape [1, 2, 3]}}
  %y = kiln.unsqueeze %x {axes = array<i64: 0>} : (tensor<2x3xi64>) -> tensor<2x1x3xi64>
  return %y : tensor<2x1x3xi64>
}

// -----

// Tests that concat checks its axis.
func.func @concat_axis(%a: tensor<2x3xf32>) -> tensor<2x6xf32> {
  // expected-error @+1 {{'kiln.concat' op axis 2 is out of range for rank 2 (axes are normalized: 0 <= axis < rank)}}
  %y = kiln.concat %a, %a {axis = 2 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>
  return %y : tensor<2x6xf32>
}

// -----

// Tests that concat inputs have the same rank.
func.func @concat_rank_mismatch(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x6xf32> {
  // expected-error @+1 {{'kiln.concat' op inputs have different ranks: 2 and 1}}
  %y = kiln.concat %a, %b {axis = 1 : i64} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x6xf32>
  return %y : tensor<2x6xf32>
}

// -----

// Tests that concat inputs agree outside the concatenation axis.
func.func @concat_dim_mismatch(%past: tensor<?x4x?x16xf32>, %new: tensor<?x2x1x16xf32>) -> tensor<?x4x?x16xf32> {
  // expected-error @+1 {{'kiln.concat' op inputs differ in dimension 1 (4 vs 2), which is not the concatenation axis}}
  %y = kiln.concat %past, %new {axis = 2 : i64} : (tensor<?x4x?x16xf32>, tensor<?x2x1x16xf32>) -> tensor<?x4x?x16xf32>
  return %y : tensor<?x4x?x16xf32>
}

// -----

// Tests that a static concat result is the sum along the axis.
func.func @concat_result_shape(%a: tensor<2x3xi8>, %b: tensor<2x5xi8>) -> tensor<2x9xi8> {
  // expected-error @+1 {{'kiln.concat' op result type 'tensor<2x9xi8>' does not match the expected shape [2, 8]}}
  %y = kiln.concat %a, %b {axis = 1 : i64} : (tensor<2x3xi8>, tensor<2x5xi8>) -> tensor<2x9xi8>
  return %y : tensor<2x9xi8>
}

// -----

// Tests that concat inputs share the element type.
func.func @concat_element_mismatch(%a: tensor<2x3xf32>, %b: tensor<2x3xf16>) -> tensor<2x6xf32> {
  // expected-error @+1 {{'kiln.concat' op requires the same element type for all operands and results}}
  %y = kiln.concat %a, %b {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x3xf16>) -> tensor<2x6xf32>
  return %y : tensor<2x6xf32>
}

// -----

// Tests that split checks its axis.
func.func @split_axis(%x: tensor<?x192xf32>) -> (tensor<?x96xf32>, tensor<?x96xf32>) {
  // expected-error @+1 {{'kiln.split' op axis 2 is out of range for rank 2 (axes are normalized: 0 <= axis < rank)}}
  %a, %b = kiln.split %x {axis = 2 : i64, sizes = array<i64: 96, 96>} : (tensor<?x192xf32>) -> (tensor<?x96xf32>, tensor<?x96xf32>)
  return %a, %b : tensor<?x96xf32>, tensor<?x96xf32>
}

// -----

// Tests that split has one size per result.
func.func @split_size_count(%x: tensor<?x192xf32>) -> (tensor<?x96xf32>, tensor<?x96xf32>) {
  // expected-error @+1 {{'kiln.split' op has 3 sizes but 2 results}}
  %a, %b = kiln.split %x {axis = 1 : i64, sizes = array<i64: 64, 64, 64>} : (tensor<?x192xf32>) -> (tensor<?x96xf32>, tensor<?x96xf32>)
  return %a, %b : tensor<?x96xf32>, tensor<?x96xf32>
}

// -----

// Tests that split sizes are non-negative.
func.func @split_negative_size(%x: tensor<?x?xf32>) -> (tensor<?x?xf32>, tensor<?x?xf32>) {
  // expected-error @+1 {{'kiln.split' op split sizes must be non-negative, got -1}}
  %a, %b = kiln.split %x {axis = 1 : i64, sizes = array<i64: 4, -1>} : (tensor<?x?xf32>) -> (tensor<?x?xf32>, tensor<?x?xf32>)
  return %a, %b : tensor<?x?xf32>, tensor<?x?xf32>
}

// -----

// Tests that split sizes add up to the split dimension.
func.func @split_sizes_sum(%x: tensor<?x?x192xf32>) -> (tensor<?x?x64xf32>, tensor<?x?x64xf32>) {
  // expected-error @+1 {{'kiln.split' op split sizes add up to 128 but the axis has size 192}}
  %a, %b = kiln.split %x {axis = 2 : i64, sizes = array<i64: 64, 64>} : (tensor<?x?x192xf32>) -> (tensor<?x?x64xf32>, tensor<?x?x64xf32>)
  return %a, %b : tensor<?x?x64xf32>, tensor<?x?x64xf32>
}

// -----

// Tests that split's results keep the input's element type.
func.func @split_element_type(%x: tensor<4x6xf32>) -> (tensor<4x3xf32>, tensor<4x3xi64>) {
  // expected-error @+1 {{'kiln.split' op results must have the input's element type 'f32', got 'tensor<4x3xi64>'}}
  %a, %b = kiln.split %x {axis = 1 : i64, sizes = array<i64: 3, 3>} : (tensor<4x6xf32>) -> (tensor<4x3xf32>, tensor<4x3xi64>)
  return %a, %b : tensor<4x3xf32>, tensor<4x3xi64>
}

// -----

// Tests that a size known only at run time needs the computed sizes.
func.func @split_dynamic_size(%x: tensor<4x6xf32>) -> (tensor<4x?xf32>, tensor<4x2xf32>) {
  // expected-error @+1 {{'kiln.split' op has a size known only at run time but no computed sizes}}
  %a, %b = kiln.split %x {axis = 1 : i64, sizes = array<i64: -9223372036854775808, 2>} : (tensor<4x6xf32>) -> (tensor<4x?xf32>, tensor<4x2xf32>)
  return %a, %b : tensor<4x?xf32>, tensor<4x2xf32>
}

// -----

// Tests that the computed sizes have one entry per result.
func.func @split_computed_length(%x: tensor<4x6xf32>, %n: tensor<3xi64>) -> (tensor<4x?xf32>, tensor<4x?xf32>) {
  // expected-error @+1 {{'kiln.split' op has 3 computed sizes but 2 results}}
  %a, %b = kiln.split %x sizes %n {axis = 1 : i64, sizes = array<i64: -9223372036854775808, -9223372036854775808>} : (tensor<4x6xf32>, tensor<3xi64>) -> (tensor<4x?xf32>, tensor<4x?xf32>)
  return %a, %b : tensor<4x?xf32>, tensor<4x?xf32>
}

// -----

// Tests that each split result has its size along the axis.
func.func @split_result_shape(%x: tensor<?x192xf32>) -> (tensor<?x64xf32>, tensor<?x64xf32>) {
  // expected-error @+1 {{'kiln.split' op result type 'tensor<?x64xf32>' does not match the expected shape [?, 128]}}
  %a, %b = kiln.split %x {axis = 1 : i64, sizes = array<i64: 64, 128>} : (tensor<?x192xf32>) -> (tensor<?x64xf32>, tensor<?x64xf32>)
  return %a, %b : tensor<?x64xf32>, tensor<?x64xf32>
}

// -----

// Tests that slice axes are unique.
func.func @slice_axes_duplicate(%x: tensor<4x4xf32>, %s: tensor<2xi64>) -> tensor<?x4xf32> {
  // expected-error @+1 {{'kiln.slice' op axes [0, 0] must be unique}}
  %y = kiln.slice %x[%s : %s : %s] {axes = array<i64: 0, 0>} : (tensor<4x4xf32>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<?x4xf32>
  return %y : tensor<?x4xf32>
}

// -----

// Tests that slice axes are in range, reported once.
func.func @slice_axis_out_of_range(%x: tensor<4x4xf32>, %s: tensor<1xi64>) -> tensor<4x4xf32> {
  // expected-error @+1 {{'kiln.slice' op axis 2 is out of range for rank 2 (axes are normalized: 0 <= axis < rank)}}
  %y = kiln.slice %x[%s : %s : %s] {axes = array<i64: 2>} : (tensor<4x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4x4xf32>
  return %y : tensor<4x4xf32>
}

// -----

// Tests that starts has one entry per sliced axis.
func.func @slice_starts_length(%x: tensor<4x4xf32>, %s: tensor<2xi64>, %e: tensor<1xi64>) -> tensor<?x4xf32> {
  // expected-error @+1 {{'kiln.slice' op starts has 2 entries but the number of axes is 1}}
  %y = kiln.slice %x[%s : %e : %e] {axes = array<i64: 0>} : (tensor<4x4xf32>, tensor<2xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x4xf32>
  return %y : tensor<?x4xf32>
}

// -----

// Tests that ends has one entry per sliced axis.
func.func @slice_ends_length(%x: tensor<4x4xf32>, %s: tensor<1xi64>, %e: tensor<3xi64>) -> tensor<?x4xf32> {
  // expected-error @+1 {{'kiln.slice' op ends has 3 entries but the number of axes is 1}}
  %y = kiln.slice %x[%s : %e : %s] {axes = array<i64: 0>} : (tensor<4x4xf32>, tensor<1xi64>, tensor<3xi64>, tensor<1xi64>) -> tensor<?x4xf32>
  return %y : tensor<?x4xf32>
}

// -----

// Tests that steps has one entry per sliced axis.
func.func @slice_steps_length(%x: tensor<4x4xf32>, %s: tensor<2xi64>, %st: tensor<1xi64>) -> tensor<?x?xf32> {
  // expected-error @+1 {{'kiln.slice' op steps has 1 entries but the number of axes is 2}}
  %y = kiln.slice %x[%s : %s : %st] {axes = array<i64: 0, 1>} : (tensor<4x4xf32>, tensor<2xi64>, tensor<2xi64>, tensor<1xi64>) -> tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}

// -----

// Tests that slice keeps the dimensions it does not slice.
func.func @slice_result_shape(%x: tensor<1x1x256x256xi1>, %s: tensor<1xi64>) -> tensor<1x1x?x128xi1> {
  // expected-error @+1 {{'kiln.slice' op result type 'tensor<1x1x?x128xi1>' does not match the expected shape [1, 1, ?, 256]}}
  %y = kiln.slice %x[%s : %s : %s] {axes = array<i64: 2>} : (tensor<1x1x256x256xi1>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x?x128xi1>
  return %y : tensor<1x1x?x128xi1>
}

// -----

// Tests that gather checks its axis.
func.func @gather_axis(%t: tensor<256x64xf32>, %i: tensor<?xi64>) -> tensor<256x?xf32> {
  // expected-error @+1 {{'kiln.gather' op axis 2 is out of range for rank 2 (axes are normalized: 0 <= axis < rank)}}
  %y = kiln.gather %t[%i] {axis = 2 : i64} : (tensor<256x64xf32>, tensor<?xi64>) -> tensor<256x?xf32>
  return %y : tensor<256x?xf32>
}

// -----

// Tests that the gather result has rank data.rank - 1 + indices.rank.
func.func @gather_result_rank(%t: tensor<256x64xf32>, %i: tensor<?x?xi64>) -> tensor<?x64xf32> {
  // expected-error @+1 {{'kiln.gather' op result type 'tensor<?x64xf32>' does not match the expected shape [?, ?, 64]}}
  %y = kiln.gather %t[%i] {axis = 0 : i64} : (tensor<256x64xf32>, tensor<?x?xi64>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// Tests that gather indices are i64 or i32.
func.func @gather_float_indices(%t: tensor<256x64xf32>, %i: tensor<?xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{'kiln.gather' op operand #1 must be ranked tensor of 64-bit signless integer or 32-bit signless integer values, but got 'tensor<?xf32>'}}
  %y = kiln.gather %t[%i] {axis = 0 : i64} : (tensor<256x64xf32>, tensor<?xf32>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// Tests that the expand result rank is max(input rank, shape length).
func.func @expand_rank(%x: tensor<1x1x?x16xf32>, %s: tensor<4xi64>) -> tensor<?x?x16xf32> {
  // expected-error @+1 {{'kiln.expand' op result rank 3 is not max(input rank 4, shape length 4)}}
  %y = kiln.expand %x, %s : (tensor<1x1x?x16xf32>, tensor<4xi64>) -> tensor<?x?x16xf32>
  return %y : tensor<?x?x16xf32>
}

// -----

// Tests that expand only stretches dimensions of size 1.
func.func @expand_static_dim(%x: tensor<3x16xf32>, %s: tensor<2xi64>) -> tensor<4x16xf32> {
  // expected-error @+1 {{'kiln.expand' op input dimension of size 3 cannot expand to 4}}
  %y = kiln.expand %x, %s : (tensor<3x16xf32>, tensor<2xi64>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

// Tests that tile keeps the input rank.
func.func @tile_rank(%x: tensor<2x3xf32>, %r: tensor<2xi64>) -> tensor<4x3x1xf32> {
  // expected-error @+1 {{'kiln.tile' op result rank 3 differs from input rank 2}}
  %y = kiln.tile %x, %r : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<4x3x1xf32>
  return %y : tensor<4x3x1xf32>
}

// -----

// Tests that tile has one repeat per input dimension.
func.func @tile_repeats_length(%x: tensor<2x3xf32>, %r: tensor<3xi64>) -> tensor<4x3xf32> {
  // expected-error @+1 {{'kiln.tile' op repeats has 3 entries but the input rank is 2}}
  %y = kiln.tile %x, %r : (tensor<2x3xf32>, tensor<3xi64>) -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}

// -----

// Tests that trilu needs at least a matrix.
func.func @trilu_rank_1(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'kiln.trilu' op input must have rank 2 or more, got 'tensor<8xf32>'}}
  %y = kiln.trilu %x {upper} : tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

// Tests that the range operands are 0-d tensors.
func.func @range_not_scalar(%start: tensor<i64>, %limit: tensor<1xi64>, %delta: tensor<i64>) -> tensor<?xi64> {
  // expected-error @+1 {{'kiln.range' op start, limit and delta must be 0-d tensors, got 'tensor<1xi64>'}}
  %y = kiln.range %start, %limit, %delta : (tensor<i64>, tensor<1xi64>, tensor<i64>) -> tensor<?xi64>
  return %y : tensor<?xi64>
}

// -----

// Tests that the range operands share the result's element type.
func.func @range_element_mismatch(%start: tensor<i64>, %limit: tensor<i32>, %delta: tensor<i64>) -> tensor<?xi64> {
  // expected-error @+1 {{'kiln.range' op failed to verify that all of {start, limit, delta, result} have same element type}}
  %y = kiln.range %start, %limit, %delta : (tensor<i64>, tensor<i32>, tensor<i64>) -> tensor<?xi64>
  return %y : tensor<?xi64>
}

// -----

// Tests that shape_of yields one entry per input dimension.
func.func @shape_of_length(%x: tensor<?x?x64xf32>) -> tensor<2xi64> {
  // expected-error @+1 {{'kiln.shape_of' op result has 2 entries but the input rank is 3}}
  %s = kiln.shape_of %x : tensor<?x?x64xf32> -> tensor<2xi64>
  return %s : tensor<2xi64>
}

// -----

// Tests that shape_of yields i64 entries.
func.func @shape_of_i32(%x: tensor<?x?x64xf32>) -> tensor<3xi32> {
  // expected-error @+1 {{'kiln.shape_of' op result #0 must be 1D tensor of 64-bit signless integer values, but got 'tensor<3xi32>'}}
  %s = kiln.shape_of %x : tensor<?x?x64xf32> -> tensor<3xi32>
  return %s : tensor<3xi32>
}

// -----

// Tests that dim checks its index against the rank.
func.func @dim_index(%x: tensor<?x?x64xf32>) -> tensor<i64> {
  // expected-error @+1 {{'kiln.dim' op index 3 is out of range for rank 3 (axes are normalized: 0 <= axis < rank)}}
  %d = kiln.dim %x {index = 3 : i64} : tensor<?x?x64xf32> -> tensor<i64>
  return %d : tensor<i64>
}

// -----

// Tests that size yields a 0-d i64 tensor.
func.func @size_not_scalar(%x: tensor<?x64xf32>) -> tensor<1xi64> {
  // expected-error @+1 {{'kiln.size' op result #0 must be 0D tensor of 64-bit signless integer values, but got 'tensor<1xi64>'}}
  %n = kiln.size %x : tensor<?x64xf32> -> tensor<1xi64>
  return %n : tensor<1xi64>
}

// -----

// Tests that a constant's value has the result type.
func.func @constant_type_mismatch() -> tensor<2xf32> {
  // expected-error @+1 {{'kiln.constant' op failed to verify that all of {value, result} have same type}}
  %c = "kiln.constant"() <{value = dense<1.0> : tensor<3xf32>}> : () -> tensor<2xf32>
  return %c : tensor<2xf32>
}

//===----------------------------------------------------------------------===//
// kiln.dims and kiln.name
//===----------------------------------------------------------------------===//

// -----

// Tests that kiln.dims names every dimension of the argument.
// expected-error @+1 {{'kiln.dims' on argument #0 has 1 names but the value is 'tensor<?x?xi64>'}}
func.func @dims_length(%ids: tensor<?x?xi64> {kiln.dims = ["batch"]}) {
  return
}

// -----

// Tests that kiln.dims on a result is checked against the result type.
// expected-error @+1 {{'kiln.dims' on result #0 has 3 names but the value is 'tensor<?x256xf32>'}}
func.func @dims_result_length(%x: tensor<?x256xf32>) -> (tensor<?x256xf32> {kiln.dims = ["batch", "", ""]}) {
  return %x : tensor<?x256xf32>
}

// -----

// Tests that kiln.dims only names dynamic dimensions.
// expected-error @+1 {{'kiln.dims' on argument #1 names static dimension of size 64 'hidden'}}
func.func @dims_static(%a: tensor<f32>, %x: tensor<?x64xf32> {kiln.dims = ["batch", "hidden"]}) {
  return
}

// -----

// Tests that kiln.dims is an array of strings.
// expected-error @+1 {{'kiln.dims' on argument #0 must be an array of strings}}
func.func @dims_not_strings(%x: tensor<?x64xf32> {kiln.dims = [1, ""]}) {
  return
}

// -----

// Tests that kiln.dims must be an array.
// expected-error @+1 {{'kiln.dims' on result #0 must be an array of strings}}
func.func @dims_not_array(%x: tensor<?xf32>) -> (tensor<?xf32> {kiln.dims = "batch"}) {
  return %x : tensor<?xf32>
}

// -----

// Tests that kiln.dims needs a ranked tensor.
// expected-error @+1 {{'kiln.dims' on argument #0 has 0 names but the value is 'i64'}}
func.func @dims_not_tensor(%n: i64 {kiln.dims = []}) {
  return
}

// -----

// Tests that kiln.name is a string.
// expected-error @+1 {{'kiln.name' on argument #0 must be a string}}
func.func @name_not_string(%x: tensor<?xf32> {kiln.name = 3 : i64}) {
  return
}

// -----

// Tests that an unknown kiln attribute on an argument is rejected. (The
// verifier streams the attribute name as a StringAttr, hence the quotes.)
// expected-error @+1 {{unknown kiln attribute 'kiln.dim' on argument #0}}
func.func @unknown_arg_attribute(%x: tensor<?xf32> {kiln.dim = ["batch"]}) {
  return
}

// -----

// Tests that an unknown kiln attribute on a result is rejected.
// expected-error @+1 {{unknown kiln attribute 'kiln.names' on result #0}}
func.func @unknown_result_attribute(%x: tensor<?xf32>) -> (tensor<?xf32> {kiln.names = "y"}) {
  return %x : tensor<?xf32>
}

// -----

// Tests that a slice cannot grow a dimension.
func.func @slice_result_grows(%x: tensor<4x4xf32>, %s: tensor<1xi64>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'kiln.slice' op result dimension 0 of size 8 exceeds the input's 4}}
  %y = kiln.slice %x[%s : %s : %s] {axes = array<i64: 0>} : (tensor<4x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

// -----

// Tests that a tiled dimension is a multiple of the input's.
func.func @tile_not_multiple(%x: tensor<2x3xf32>, %r: tensor<2xi64>) -> tensor<5x3xf32> {
  // expected-error @+1 {{'kiln.tile' op result dimension 0 of size 5 is not a multiple of the input's 2}}
  %y = kiln.tile %x, %r : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<5x3xf32>
  return %y : tensor<5x3xf32>
}

// -----

// Tests that expand checks ranks even when the shape's length is dynamic.
func.func @expand_rank_below_input(%x: tensor<2x3x4xf32>, %s: tensor<?xi64>) -> tensor<5xf32> {
  // expected-error @+1 {{'kiln.expand' op result rank 1 is below the input rank 3}}
  %y = kiln.expand %x, %s : (tensor<2x3x4xf32>, tensor<?xi64>) -> tensor<5xf32>
  return %y : tensor<5xf32>
}

// -----

// Tests that layer_norm's bias has the input's element type.
func.func @layer_norm_bias_type(%x: tensor<2x4xf32>, %g: tensor<4xf32>, %b: tensor<4xf16>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'kiln.layer_norm' op bias element type 'f16' differs from the input's 'f32'}}
  %y = kiln.layer_norm %x, %g, %b {axis = 1 : i64} : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf16>) -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

// -----

// Tests that kiln attributes on a declaration's arguments are verified too.
// expected-error @+1 {{'kiln.dims' on argument #0 must be an array of strings}}
func.func private @declaration(%x: tensor<?x3xf32> {kiln.dims = [1, 2]})

// -----

// Tests that attention operands have rank 4.
func.func @attention_rank(%q: tensor<4x8x16xf32>, %k: tensor<1x4x8x16xf32>, %v: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{'kiln.attention' op query, key, value and result must have rank 4, got 'tensor<4x8x16xf32>'}}
  %o = kiln.attention %q, %k, %v {scale = 1.0 : f32} : (tensor<4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  return %o : tensor<1x4x8x16xf32>
}

// -----

// Tests that the query and key head sizes must agree.
func.func @attention_head_size(%q: tensor<1x4x8x16xf32>, %k: tensor<1x4x8x32xf32>, %v: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{'kiln.attention' op query and key head sizes differ: 16 and 32}}
  %o = kiln.attention %q, %k, %v {scale = 1.0 : f32} : (tensor<1x4x8x16xf32>, tensor<1x4x8x32xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  return %o : tensor<1x4x8x16xf32>
}

// -----

// Tests that the key and value lengths must agree.
func.func @attention_lengths(%q: tensor<1x4x8x16xf32>, %k: tensor<1x4x8x16xf32>, %v: tensor<1x4x9x16xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{'kiln.attention' op key and value lengths differ: 8 and 9}}
  %o = kiln.attention %q, %k, %v {scale = 1.0 : f32} : (tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x9x16xf32>) -> tensor<1x4x8x16xf32>
  return %o : tensor<1x4x8x16xf32>
}

// -----

// Tests that the query heads must be a multiple of the key/value heads.
func.func @attention_groups(%q: tensor<1x4x8x16xf32>, %k: tensor<1x3x8x16xf32>, %v: tensor<1x3x8x16xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{'kiln.attention' op the 4 query heads are not a multiple of the 3 key/value heads}}
  %o = kiln.attention %q, %k, %v {scale = 1.0 : f32} : (tensor<1x4x8x16xf32>, tensor<1x3x8x16xf32>, tensor<1x3x8x16xf32>) -> tensor<1x4x8x16xf32>
  return %o : tensor<1x4x8x16xf32>
}

// -----

// Tests that a mask must broadcast to the scores [B, H, Tq, Tk].
func.func @attention_mask_shape(%q: tensor<1x4x8x16xf32>, %k: tensor<1x4x6x16xf32>, %v: tensor<1x4x6x16xf32>, %m: tensor<1x1x8x8xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{'kiln.attention' op bias shape [1, 1, 8, 8] does not broadcast to the scores' shape [1, 4, 8, 6]}}
  %o = kiln.attention %q, %k, %v bias %m {scale = 1.0 : f32} : (tensor<1x4x8x16xf32>, tensor<1x4x6x16xf32>, tensor<1x4x6x16xf32>, tensor<1x1x8x8xf32>) -> tensor<1x4x8x16xf32>
  return %o : tensor<1x4x8x16xf32>
}

// -----

// Tests that a position bias must broadcast to the scores too.
func.func @attention_position_bias_shape(%q: tensor<1x4x8x16xf32>, %k: tensor<1x4x6x16xf32>, %v: tensor<1x4x6x16xf32>, %p: tensor<1x8x1x6xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{'kiln.attention' op position_bias shape [1, 8, 1, 6] does not broadcast to the scores' shape [1, 4, 8, 6]}}
  %o = kiln.attention %q, %k, %v position_bias %p {scale = 1.0 : f32} : (tensor<1x4x8x16xf32>, tensor<1x4x6x16xf32>, tensor<1x4x6x16xf32>, tensor<1x8x1x6xf32>) -> tensor<1x4x8x16xf32>
  return %o : tensor<1x4x8x16xf32>
}

// -----

// Tests that a past is a key and a value, with a present for each.
func.func @attention_past_count(%q: tensor<1x4x1x16xf32>, %k: tensor<1x4x1x16xf32>, %pk: tensor<1x4x5x16xf32>) -> tensor<1x4x1x16xf32> {
  // expected-error @+1 {{'kiln.attention' op past takes a key and a value and gives two presents, got 1 past operands and 1 presents}}
  %o, %p = kiln.attention %q, %k, %k past %pk {scale = 1.0 : f32} : (tensor<1x4x1x16xf32>, tensor<1x4x1x16xf32>, tensor<1x4x1x16xf32>, tensor<1x4x5x16xf32>) -> (tensor<1x4x1x16xf32>, tensor<1x4x6x16xf32>)
  return %o : tensor<1x4x1x16xf32>
}

// -----

// Tests that presents need a past.
func.func @attention_presents_without_past(%q: tensor<1x4x1x16xf32>) -> tensor<1x4x1x16xf32> {
  // expected-error @+1 {{'kiln.attention' op has 2 presents but no past}}
  %o, %p:2 = kiln.attention %q, %q, %q {scale = 1.0 : f32} : (tensor<1x4x1x16xf32>, tensor<1x4x1x16xf32>, tensor<1x4x1x16xf32>) -> (tensor<1x4x1x16xf32>, tensor<1x4x1x16xf32>, tensor<1x4x1x16xf32>)
  return %o : tensor<1x4x1x16xf32>
}

// -----

// Tests that the past key has the new keys' head size.
func.func @attention_past_head_size(%q: tensor<1x4x1x16xf32>, %k: tensor<1x4x1x16xf32>, %pk: tensor<1x4x5x8xf32>) -> tensor<1x4x1x16xf32> {
  // expected-error @+1 {{'kiln.attention' op past key and key head sizes differ: 8 and 16}}
  %o, %p:2 = kiln.attention %q, %k, %k past %pk, %pk {scale = 1.0 : f32} : (tensor<1x4x1x16xf32>, tensor<1x4x1x16xf32>, tensor<1x4x1x16xf32>, tensor<1x4x5x8xf32>, tensor<1x4x5x8xf32>) -> (tensor<1x4x1x16xf32>, tensor<1x4x6x16xf32>, tensor<1x4x6x16xf32>)
  return %o : tensor<1x4x1x16xf32>
}

// -----

// Tests that the past has the query's element type.
func.func @attention_past_type(%q: tensor<1x4x1x16xf32>, %pk: tensor<1x4x5x16xf16>) -> tensor<1x4x1x16xf32> {
  // expected-error @+1 {{'kiln.attention' op a past or present element type 'f16' differs from the input's 'f32'}}
  %o, %p:2 = kiln.attention %q, %q, %q past %pk, %pk {scale = 1.0 : f32} : (tensor<1x4x1x16xf32>, tensor<1x4x1x16xf32>, tensor<1x4x1x16xf32>, tensor<1x4x5x16xf16>, tensor<1x4x5x16xf16>) -> (tensor<1x4x1x16xf32>, tensor<1x4x6x16xf32>, tensor<1x4x6x16xf32>)
  return %o : tensor<1x4x1x16xf32>
}

// -----

// Tests that the past key and value have the same length.
func.func @attention_past_lengths(%q: tensor<1x4x1x16xf32>, %pk: tensor<1x4x5x16xf32>, %pv: tensor<1x4x4x16xf32>) -> tensor<1x4x1x16xf32> {
  // expected-error @+1 {{'kiln.attention' op past key and value lengths differ: 5 and 4}}
  %o, %p:2 = kiln.attention %q, %q, %q past %pk, %pv {scale = 1.0 : f32} : (tensor<1x4x1x16xf32>, tensor<1x4x1x16xf32>, tensor<1x4x1x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x4x16xf32>) -> (tensor<1x4x1x16xf32>, tensor<1x4x6x16xf32>, tensor<1x4x5x16xf32>)
  return %o : tensor<1x4x1x16xf32>
}

// -----

// Tests that a present holds the past's rows and the new ones.
func.func @attention_present_length(%q: tensor<1x4x1x16xf32>, %k: tensor<1x4x1x16xf32>, %pk: tensor<1x4x5x16xf32>) -> tensor<1x4x1x16xf32> {
  // expected-error @+1 {{'kiln.attention' op present key type 'tensor<1x4x5x16xf32>' does not match the expected shape [1, 4, 6, 16]}}
  %o, %p:2 = kiln.attention %q, %k, %k past %pk, %pk {scale = 1.0 : f32} : (tensor<1x4x1x16xf32>, tensor<1x4x1x16xf32>, tensor<1x4x1x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>) -> (tensor<1x4x1x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x6x16xf32>)
  return %o : tensor<1x4x1x16xf32>
}

// -----

// Tests that masks broadcast to the scores over the past's and the new keys.
func.func @attention_past_mask(%q: tensor<1x4x1x16xf32>, %k: tensor<1x4x1x16xf32>, %pk: tensor<1x4x5x16xf32>, %m: tensor<1x1x1x5xf32>) -> tensor<1x4x1x16xf32> {
  // expected-error @+1 {{'kiln.attention' op bias shape [1, 1, 1, 5] does not broadcast to the scores' shape [1, 4, 1, 6]}}
  %o, %p:2 = kiln.attention %q, %k, %k past %pk, %pk bias %m {scale = 1.0 : f32} : (tensor<1x4x1x16xf32>, tensor<1x4x1x16xf32>, tensor<1x4x1x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x1x1x5xf32>) -> (tensor<1x4x1x16xf32>, tensor<1x4x6x16xf32>, tensor<1x4x6x16xf32>)
  return %o : tensor<1x4x1x16xf32>
}

// -----

// Tests that the result is [B, H, Tq, Dv].
func.func @attention_result(%q: tensor<1x4x8x16xf32>, %k: tensor<1x4x6x16xf32>, %v: tensor<1x4x6x32xf32>) -> tensor<1x4x8x16xf32> {
  // expected-error @+1 {{'kiln.attention' op result type 'tensor<1x4x8x16xf32>' does not match the expected shape [1, 4, 8, 32]}}
  %o = kiln.attention %q, %k, %v {scale = 1.0 : f32} : (tensor<1x4x8x16xf32>, tensor<1x4x6x16xf32>, tensor<1x4x6x32xf32>) -> tensor<1x4x8x16xf32>
  return %o : tensor<1x4x8x16xf32>
}

// -----

// Tests that linear needs a 2-D weight.
func.func @linear_weight_rank(%x: tensor<4x8xf32>, %w: tensor<1x8x16xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{'kiln.linear' op needs an input of rank 2 or more and a 2-D weight, got 'tensor<4x8xf32>' and 'tensor<1x8x16xf32>'}}
  %y = kiln.linear %x, %w : (tensor<4x8xf32>, tensor<1x8x16xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

// Tests that a packed weight is 3-D.
func.func @linear_packed_rank(%x: tensor<4x8xf32>, %w: tensor<8x64xf32>) -> tensor<4x64xf32> {
  // expected-error @+1 {{'kiln.linear' op needs an input of rank 2 or more and a 3-D packed weight, got 'tensor<4x8xf32>' and 'tensor<8x64xf32>'}}
  %y = kiln.linear %x, %w {packed} : (tensor<4x8xf32>, tensor<8x64xf32>) -> tensor<4x64xf32>
  return %y : tensor<4x64xf32>
}

// -----

// Tests that a packed weight holds ceil(N/64) panels of 64 columns, N from
// the result: 100 columns take 2 panels, not 3.
func.func @linear_packed_panels(%x: tensor<4x8xf32>, %w: tensor<3x8x64xf32>) -> tensor<4x100xf32> {
  // expected-error @+1 {{'kiln.linear' op a packed weight for N columns must be [ceil(N/64), K, 64] with N the result's static last dim, got 'tensor<3x8x64xf32>' for 'tensor<4x100xf32>'}}
  %y = kiln.linear %x, %w {packed} : (tensor<4x8xf32>, tensor<3x8x64xf32>) -> tensor<4x100xf32>
  return %y : tensor<4x100xf32>
}

// -----

// Tests that an int8 weight needs scales.
func.func @linear_int8_without_scales(%x: tensor<4x8xf32>, %w: tensor<1x8x64xi8>) -> tensor<4x64xf32> {
  // expected-error @+1 {{'kiln.linear' op the weight's element type 'i8' is not the result's 'f32' (a quantized weight needs scales)}}
  %y = kiln.linear %x, %w {packed} : (tensor<4x8xf32>, tensor<1x8x64xi8>) -> tensor<4x64xf32>
  return %y : tensor<4x64xf32>
}

// -----

// Tests that scales need an int8 weight.
func.func @linear_scales_f32_weight(%x: tensor<4x8xf32>, %w: tensor<1x8x64xf32>, %s: tensor<1x1x64xf32>) -> tensor<4x64xf32> {
  // expected-error @+1 {{'kiln.linear' op a weight with scales must be packed i8 values with a positive group_size, got 'tensor<1x8x64xf32>'}}
  %y = kiln.linear %x, %w scales %s {packed, group_size = 8 : i64} : (tensor<4x8xf32>, tensor<1x8x64xf32>, tensor<1x1x64xf32>) -> tensor<4x64xf32>
  return %y : tensor<4x64xf32>
}

// -----

// Tests that an int8 weight must be packed.
func.func @linear_int8_unpacked(%x: tensor<4x8xf32>, %w: tensor<8x64xi8>, %s: tensor<1x64xf32>) -> tensor<4x64xf32> {
  // expected-error @+1 {{'kiln.linear' op a weight with scales must be packed i8 values with a positive group_size, got 'tensor<8x64xi8>'}}
  %y = kiln.linear %x, %w scales %s {group_size = 8 : i64} : (tensor<4x8xf32>, tensor<8x64xi8>, tensor<1x64xf32>) -> tensor<4x64xf32>
  return %y : tensor<4x64xf32>
}

// -----

// Tests that an int8 weight needs a positive group size.
func.func @linear_int8_group_zero(%x: tensor<4x8xf32>, %w: tensor<1x8x64xi8>, %s: tensor<1x1x64xf32>) -> tensor<4x64xf32> {
  // expected-error @+1 {{'kiln.linear' op a weight with scales must be packed i8 values with a positive group_size, got 'tensor<1x8x64xi8>'}}
  %y = kiln.linear %x, %w scales %s {packed, group_size = 0 : i64} : (tensor<4x8xf32>, tensor<1x8x64xi8>, tensor<1x1x64xf32>) -> tensor<4x64xf32>
  return %y : tensor<4x64xf32>
}

// -----

// Tests that the scales are panels of ceil(K / group_size) rows: 8 rows in
// groups of 3 take 3 rows of scales, not 2.
func.func @linear_int8_scales_shape(%x: tensor<4x8xf32>, %w: tensor<1x8x64xi8>, %s: tensor<1x2x64xf32>) -> tensor<4x64xf32> {
  // expected-error @+1 {{'kiln.linear' op scales for groups of 3 rows must be [1, 3, 64] of 'f32', got 'tensor<1x2x64xf32>'}}
  %y = kiln.linear %x, %w scales %s {packed, group_size = 3 : i64} : (tensor<4x8xf32>, tensor<1x8x64xi8>, tensor<1x2x64xf32>) -> tensor<4x64xf32>
  return %y : tensor<4x64xf32>
}

// -----

// Tests that a 4-bit weight's panels are 32 bytes wide: two columns a byte.
func.func @linear_uint4_panel_width(%x: tensor<4x8xf32>, %w: tensor<1x8x64xui8>, %s: tensor<1x1x64xf32>, %z: tensor<1x1x64xui8>) -> tensor<4x64xf32> {
  // expected-error @+1 {{'kiln.linear' op a packed weight for N columns must be [ceil(N/64), K, 32] with N the result's static last dim, got 'tensor<1x8x64xui8>' for 'tensor<4x64xf32>'}}
  %y = kiln.linear %x, %w scales %s zero_points %z {packed, group_size = 8 : i64} : (tensor<4x8xf32>, tensor<1x8x64xui8>, tensor<1x1x64xf32>, tensor<1x1x64xui8>) -> tensor<4x64xf32>
  return %y : tensor<4x64xf32>
}

// -----

// Tests that zero points go with 4-bit values in ui8, not int8 values.
func.func @linear_zero_points_int8(%x: tensor<4x8xf32>, %w: tensor<1x8x32xi8>, %s: tensor<1x1x64xf32>, %z: tensor<1x1x64xui8>) -> tensor<4x64xf32> {
  // expected-error @+1 {{'kiln.linear' op a weight with scales must be packed ui8 pairs of 4-bit values (it has zero points) with a positive group_size, got 'tensor<1x8x32xi8>'}}
  %y = kiln.linear %x, %w scales %s zero_points %z {packed, group_size = 8 : i64} : (tensor<4x8xf32>, tensor<1x8x32xi8>, tensor<1x1x64xf32>, tensor<1x1x64xui8>) -> tensor<4x64xf32>
  return %y : tensor<4x64xf32>
}

// -----

// Tests that 4-bit values need zero points.
func.func @linear_uint4_without_zero_points(%x: tensor<4x8xf32>, %w: tensor<1x8x64xui8>, %s: tensor<1x1x64xf32>) -> tensor<4x64xf32> {
  // expected-error @+1 {{'kiln.linear' op a weight with scales must be packed i8 values with a positive group_size, got 'tensor<1x8x64xui8>'}}
  %y = kiln.linear %x, %w scales %s {packed, group_size = 8 : i64} : (tensor<4x8xf32>, tensor<1x8x64xui8>, tensor<1x1x64xf32>) -> tensor<4x64xf32>
  return %y : tensor<4x64xf32>
}

// -----

// Tests that the zero points have the scales' shape.
func.func @linear_zero_points_shape(%x: tensor<4x8xf32>, %w: tensor<1x8x32xui8>, %s: tensor<1x2x64xf32>, %z: tensor<1x1x64xui8>) -> tensor<4x64xf32> {
  // expected-error @+1 {{'kiln.linear' op zero points 'tensor<1x1x64xui8>' must have the scales' shape [1, 2, 64]}}
  %y = kiln.linear %x, %w scales %s zero_points %z {packed, group_size = 4 : i64} : (tensor<4x8xf32>, tensor<1x8x32xui8>, tensor<1x2x64xf32>, tensor<1x1x64xui8>) -> tensor<4x64xf32>
  return %y : tensor<4x64xf32>
}

// -----

// Tests that zero points mean nothing without scales.
func.func @linear_zero_points_without_scales(%x: tensor<4x8xf32>, %w: tensor<1x8x32xui8>, %z: tensor<1x1x64xui8>) -> tensor<4x64xf32> {
  // expected-error @+1 {{'kiln.linear' op zero_points needs scales}}
  %y = kiln.linear %x, %w zero_points %z {packed} : (tensor<4x8xf32>, tensor<1x8x32xui8>, tensor<1x1x64xui8>) -> tensor<4x64xf32>
  return %y : tensor<4x64xf32>
}

// -----

// Tests that a quantized input needs the column sums its zero points
// multiply.
func.func @linear_quantize_input_without_sums(%x: tensor<4x8xf32>, %w: tensor<1x8x64xi8>, %s: tensor<1x1x64xf32>) -> tensor<4x64xf32> {
  // expected-error @+1 {{'kiln.linear' op quantize_input needs int8 values without zero points, and column_sums}}
  %y = kiln.linear %x, %w scales %s {packed, group_size = 8 : i64, quantize_input} : (tensor<4x8xf32>, tensor<1x8x64xi8>, tensor<1x1x64xf32>) -> tensor<4x64xf32>
  return %y : tensor<4x64xf32>
}

// -----

// Tests that column sums mean nothing unless the input is quantized.
func.func @linear_sums_without_quantize_input(%x: tensor<4x8xf32>, %w: tensor<1x8x64xi8>, %s: tensor<1x1x64xf32>, %c: tensor<1x64xi32>) -> tensor<4x64xf32> {
  // expected-error @+1 {{'kiln.linear' op column_sums needs quantize_input}}
  %y = kiln.linear %x, %w scales %s column_sums %c {packed, group_size = 8 : i64} : (tensor<4x8xf32>, tensor<1x8x64xi8>, tensor<1x1x64xf32>, tensor<1x64xi32>) -> tensor<4x64xf32>
  return %y : tensor<4x64xf32>
}

// -----

// Tests that a quantized input needs K in whole quads of rows.
func.func @linear_quantize_input_odd_depth(%x: tensor<4x6xf32>, %w: tensor<1x6x64xi8>, %s: tensor<1x1x64xf32>, %c: tensor<1x64xi32>) -> tensor<4x64xf32> {
  // expected-error @+1 {{'kiln.linear' op quantize_input needs a static K that is a multiple of 4 and at most 65536, and one scale per column (group_size >= K), got K = 6 and group_size 6}}
  %y = kiln.linear %x, %w scales %s column_sums %c {packed, group_size = 6 : i64, quantize_input} : (tensor<4x6xf32>, tensor<1x6x64xi8>, tensor<1x1x64xf32>, tensor<1x64xi32>) -> tensor<4x64xf32>
  return %y : tensor<4x64xf32>
}

// -----

// Tests that a static input quantization needs both its scale and its
// zero point, and quantize_input.
func.func @linear_input_scale_alone(%x: tensor<4x8xf32>, %w: tensor<1x8x64xi8>, %s: tensor<1x1x64xf32>, %c: tensor<1x64xi32>) -> tensor<4x64xf32> {
  // expected-error @+1 {{'kiln.linear' op input_scale and input_zero_point come together, with quantize_input}}
  %y = kiln.linear %x, %w scales %s column_sums %c {packed, group_size = 8 : i64, quantize_input, input_scale = 0.5 : f32} : (tensor<4x8xf32>, tensor<1x8x64xi8>, tensor<1x1x64xf32>, tensor<1x64xi32>) -> tensor<4x64xf32>
  return %y : tensor<4x64xf32>
}

// -----

func.func @linear_input_scale_without_quantize_input(%x: tensor<4x8xf32>, %w: tensor<1x8x64xi8>, %s: tensor<1x1x64xf32>) -> tensor<4x64xf32> {
  // expected-error @+1 {{'kiln.linear' op input_scale and input_zero_point come together, with quantize_input}}
  %y = kiln.linear %x, %w scales %s {packed, group_size = 8 : i64, input_scale = 0.5 : f32, input_zero_point = 3 : i64} : (tensor<4x8xf32>, tensor<1x8x64xi8>, tensor<1x1x64xf32>) -> tensor<4x64xf32>
  return %y : tensor<4x64xf32>
}

// -----

// Tests that a static input quantization's zero point is a uint8 value and
// its scale positive.
func.func @linear_input_zero_point_range(%x: tensor<4x8xf32>, %w: tensor<1x8x64xi8>, %s: tensor<1x1x64xf32>, %c: tensor<1x64xi32>) -> tensor<4x64xf32> {
  // expected-error @+1 {{'kiln.linear' op a static input quantization needs a finite positive input_scale and an input_zero_point in [0, 255], got 5.000000e-01 and 256}}
  %y = kiln.linear %x, %w scales %s column_sums %c {packed, group_size = 8 : i64, quantize_input, input_scale = 0.5 : f32, input_zero_point = 256 : i64} : (tensor<4x8xf32>, tensor<1x8x64xi8>, tensor<1x1x64xf32>, tensor<1x64xi32>) -> tensor<4x64xf32>
  return %y : tensor<4x64xf32>
}

// -----

func.func @linear_input_scale_sign(%x: tensor<4x8xf32>, %w: tensor<1x8x64xi8>, %s: tensor<1x1x64xf32>, %c: tensor<1x64xi32>) -> tensor<4x64xf32> {
  // expected-error @+1 {{'kiln.linear' op a static input quantization needs a finite positive input_scale and an input_zero_point in [0, 255], got -5.000000e-01 and 0}}
  %y = kiln.linear %x, %w scales %s column_sums %c {packed, group_size = 8 : i64, quantize_input, input_scale = -0.5 : f32, input_zero_point = 0 : i64} : (tensor<4x8xf32>, tensor<1x8x64xi8>, tensor<1x1x64xf32>, tensor<1x64xi32>) -> tensor<4x64xf32>
  return %y : tensor<4x64xf32>
}

// -----

// Tests that a range over the whole input is a dynamic quantization: not
// with a static scale.
func.func @linear_tensor_range_with_static_scale(%x: tensor<4x8xf32>, %w: tensor<1x8x64xi8>, %s: tensor<1x1x64xf32>, %c: tensor<1x64xi32>) -> tensor<4x64xf32> {
  // expected-error @+1 {{'kiln.linear' op input_tensor_range needs quantize_input, and no static input_scale}}
  %y = kiln.linear %x, %w scales %s column_sums %c {packed, group_size = 8 : i64, quantize_input, input_tensor_range, input_scale = 0.5 : f32, input_zero_point = 3 : i64} : (tensor<4x8xf32>, tensor<1x8x64xi8>, tensor<1x1x64xf32>, tensor<1x64xi32>) -> tensor<4x64xf32>
  return %y : tensor<4x64xf32>
}

// -----

// Tests that matmul_integer multiplies by a 2-D rhs of the lhs's K, with
// one rhs zero point or one per column.
func.func @matmul_integer_depth(%a: tensor<4x8xi8>, %b: tensor<6x3xi8>, %z: tensor<i8>) -> tensor<4x3xi32> {
  // expected-error @+1 {{'kiln.matmul_integer' op contraction sizes differ: lhs has K = 8, rhs has K = 6}}
  %y = kiln.matmul_integer %a, %b, %z, %z : (tensor<4x8xi8>, tensor<6x3xi8>, tensor<i8>, tensor<i8>) -> tensor<4x3xi32>
  return %y : tensor<4x3xi32>
}

// -----

func.func @matmul_integer_zero_points(%a: tensor<4x8xi8>, %b: tensor<8x3xi8>, %z: tensor<i8>, %bz: tensor<4xi8>) -> tensor<4x3xi32> {
  // expected-error @+1 {{'kiln.matmul_integer' op rhs_zero_point must be one value or one per column [3], got 'tensor<4xi8>'}}
  %y = kiln.matmul_integer %a, %b, %z, %bz : (tensor<4x8xi8>, tensor<8x3xi8>, tensor<i8>, tensor<4xi8>) -> tensor<4x3xi32>
  return %y : tensor<4x3xi32>
}

// -----

// Tests that quantize keeps its input's shape, and that its scale and zero
// point share one shape that broadcasts into the input's.
func.func @quantize_result_shape(%x: tensor<4x8xf32>, %s: tensor<f32>, %z: tensor<i8>) -> tensor<4x4xi8> {
  // expected-error @+1 {{'kiln.quantize' op}}
  %q = kiln.quantize %x, %s, %z : (tensor<4x8xf32>, tensor<f32>, tensor<i8>) -> tensor<4x4xi8>
  return %q : tensor<4x4xi8>
}

// -----

func.func @quantize_zero_point_shape(%x: tensor<4x8xf32>, %s: tensor<8xf32>, %z: tensor<i8>) -> tensor<4x8xi8> {
  // expected-error @+1 {{'kiln.quantize' op the zero point 'tensor<i8>' must have the scale's shape [8]}}
  %q = kiln.quantize %x, %s, %z : (tensor<4x8xf32>, tensor<8xf32>, tensor<i8>) -> tensor<4x8xi8>
  return %q : tensor<4x8xi8>
}

// -----

func.func @dequantize_scale_broadcast(%x: tensor<4x8xi8>, %s: tensor<4xf32>, %z: tensor<4xi8>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'kiln.dequantize' op the scale's shape [4] does not broadcast into the input's [4, 8]}}
  %y = kiln.dequantize %x, %s, %z : (tensor<4x8xi8>, tensor<4xf32>, tensor<4xi8>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// Tests that a quantized input needs one scale per column: its products
// are summed in integers over all of K.
func.func @linear_quantize_input_groups(%x: tensor<4x8xf32>, %w: tensor<1x8x64xi8>, %s: tensor<1x2x64xf32>, %c: tensor<1x64xi32>) -> tensor<4x64xf32> {
  // expected-error @+1 {{'kiln.linear' op quantize_input needs a static K that is a multiple of 4 and at most 65536, and one scale per column (group_size >= K), got K = 8 and group_size 4}}
  %y = kiln.linear %x, %w scales %s column_sums %c {packed, group_size = 4 : i64, quantize_input} : (tensor<4x8xf32>, tensor<1x8x64xi8>, tensor<1x2x64xf32>, tensor<1x64xi32>) -> tensor<4x64xf32>
  return %y : tensor<4x64xf32>
}

// -----

// Tests that the column sums are one per column of each panel.
func.func @linear_column_sums_shape(%x: tensor<4x8xf32>, %w: tensor<1x8x64xi8>, %s: tensor<1x1x64xf32>, %c: tensor<2x64xi32>) -> tensor<4x64xf32> {
  // expected-error @+1 {{'kiln.linear' op column_sums must be [1, 64], got 'tensor<2x64xi32>'}}
  %y = kiln.linear %x, %w scales %s column_sums %c {packed, group_size = 8 : i64, quantize_input} : (tensor<4x8xf32>, tensor<1x8x64xi8>, tensor<1x1x64xf32>, tensor<2x64xi32>) -> tensor<4x64xf32>
  return %y : tensor<4x64xf32>
}

// -----

// Tests that quantize_input needs a quantized weight.
func.func @linear_quantize_input_without_scales(%x: tensor<4x8xf32>, %w: tensor<1x8x64xf32>) -> tensor<4x64xf32> {
  // expected-error @+1 {{'kiln.linear' op quantize_input and column_sums need scales}}
  %y = kiln.linear %x, %w {packed, quantize_input} : (tensor<4x8xf32>, tensor<1x8x64xf32>) -> tensor<4x64xf32>
  return %y : tensor<4x64xf32>
}

// -----

// Tests that a group size means nothing without scales.
func.func @linear_group_without_scales(%x: tensor<4x8xf32>, %w: tensor<1x8x64xf32>) -> tensor<4x64xf32> {
  // expected-error @+1 {{'kiln.linear' op group_size needs scales}}
  %y = kiln.linear %x, %w {packed, group_size = 8 : i64} : (tensor<4x8xf32>, tensor<1x8x64xf32>) -> tensor<4x64xf32>
  return %y : tensor<4x64xf32>
}

// -----

// Tests that a packed weight needs a static N.
func.func @linear_packed_dynamic_n(%x: tensor<4x8xf32>, %w: tensor<2x8x64xf32>) -> tensor<4x?xf32> {
  // expected-error @+1 {{'kiln.linear' op a packed weight for N columns must be [ceil(N/64), K, 64] with N the result's static last dim, got 'tensor<2x8x64xf32>' for 'tensor<4x?xf32>'}}
  %y = kiln.linear %x, %w {packed} : (tensor<4x8xf32>, tensor<2x8x64xf32>) -> tensor<4x?xf32>
  return %y : tensor<4x?xf32>
}

// -----

// Tests that a packed weight needs a result with a last dim to take N from.
func.func @linear_packed_rank0_result(%x: tensor<4x8xf32>, %w: tensor<1x8x64xf32>) -> tensor<f32> {
  // expected-error @+1 {{'kiln.linear' op a packed weight for N columns must be [ceil(N/64), K, 64] with N the result's static last dim, got 'tensor<1x8x64xf32>' for 'tensor<f32>'}}
  %y = kiln.linear %x, %w {packed} : (tensor<4x8xf32>, tensor<1x8x64xf32>) -> tensor<f32>
  return %y : tensor<f32>
}

// -----

// Tests that panels 32 wide are refused.
func.func @linear_packed_width(%x: tensor<4x8xf32>, %w: tensor<1x8x32xf32>) -> tensor<4x32xf32> {
  // expected-error @+1 {{'kiln.linear' op a packed weight for N columns must be [ceil(N/64), K, 64] with N the result's static last dim, got 'tensor<1x8x32xf32>' for 'tensor<4x32xf32>'}}
  %y = kiln.linear %x, %w {packed} : (tensor<4x8xf32>, tensor<1x8x32xf32>) -> tensor<4x32xf32>
  return %y : tensor<4x32xf32>
}

// -----

// Tests that a packed weight is not also transposed.
func.func @linear_packed_transposed(%x: tensor<4x8xf32>, %w: tensor<1x8x64xf32>) -> tensor<4x64xf32> {
  // expected-error @+1 {{'kiln.linear' op a packed weight cannot also be transposed}}
  %y = kiln.linear %x, %w {packed, transpose_b} : (tensor<4x8xf32>, tensor<1x8x64xf32>) -> tensor<4x64xf32>
  return %y : tensor<4x64xf32>
}

// -----

// Tests that a packed weight's K must be the input's.
func.func @linear_packed_contraction(%x: tensor<4x8xf32>, %w: tensor<1x16x64xf32>) -> tensor<4x64xf32> {
  // expected-error @+1 {{'kiln.linear' op contraction sizes differ: input has K = 8, weight has K = 16}}
  %y = kiln.linear %x, %w {packed} : (tensor<4x8xf32>, tensor<1x16x64xf32>) -> tensor<4x64xf32>
  return %y : tensor<4x64xf32>
}

// -----

// Tests that linear's contraction sizes must agree, the weight read as [N, K]
// with transpose_b.
func.func @linear_contraction(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'kiln.linear' op contraction sizes differ: input has K = 8, weight has K = 16}}
  %y = kiln.linear %x, %w {transpose_b} : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// Tests that linear's result keeps the input's rows and takes the weight's
// columns.
func.func @linear_result(%x: tensor<2x4x8xf32>, %w: tensor<8x16xf32>) -> tensor<2x4x8xf32> {
  // expected-error @+1 {{'kiln.linear' op result type 'tensor<2x4x8xf32>' does not match the expected shape [2, 4, 16]}}
  %y = kiln.linear %x, %w : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}

// -----

// Tests that linear's bias has one value per column: [1, N] is refused.
func.func @linear_bias(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<1x16xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{'kiln.linear' op bias must have shape [16], got 'tensor<1x16xf32>'}}
  %y = kiln.linear %x, %w bias %b : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<1x16xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

// Tests that linear's residual has the result's shape: it does not broadcast.
func.func @linear_residual(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %r: tensor<1x16xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{'kiln.linear' op residual 'tensor<1x16xf32>' does not have the result's shape [4, 16] ('tensor<4x16xf32>')}}
  %y = kiln.linear %x, %w residual %r : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<1x16xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

// Tests that linear's activation is one of the known ones.
func.func @linear_activation(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{custom op 'kiln.linear' expected string or keyword containing one of the following enum values for attribute 'activation' [relu, gelu, gelu_tanh, silu]}}
  %y = kiln.linear %x, %w activation tanh : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

// Tests that rotary needs a static, positive last dim, and cos and sin an
// even one no wider.
func.func @rotary_odd(%x: tensor<2x7xf32>, %cs: tensor<2x7xf32>) -> tensor<2x7xf32> {
  // expected-error @+1 {{'kiln.rotary' op cos and sin need a static, even, positive last dim of at most the input's 7, got 'tensor<2x7xf32>'}}
  %y = kiln.rotary %x, %cs, %cs : (tensor<2x7xf32>, tensor<2x7xf32>, tensor<2x7xf32>) -> tensor<2x7xf32>
  return %y : tensor<2x7xf32>
}

// -----

func.func @rotary_empty(%x: tensor<2x0xf32>) -> tensor<2x0xf32> {
  // expected-error @+1 {{'kiln.rotary' op needs a static, positive last dim, got 'tensor<2x0xf32>'}}
  %y = kiln.rotary %x, %x, %x : (tensor<2x0xf32>, tensor<2x0xf32>, tensor<2x0xf32>) -> tensor<2x0xf32>
  return %y : tensor<2x0xf32>
}

// -----

// Tests that rotary's cos and sin do not broadcast along the last axis.
func.func @rotary_cos(%x: tensor<2x8xf32>, %cos: tensor<2x1xf32>, %sin: tensor<2x8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'kiln.rotary' op cos and sin need a static, even, positive last dim of at most the input's 8, got 'tensor<2x1xf32>'}}
  %y = kiln.rotary %x, %cos, %sin : (tensor<2x8xf32>, tensor<2x1xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

// Tests that a partial rotary's cos is no wider than the input.
func.func @rotary_wide_cos(%x: tensor<2x8xf32>, %cs: tensor<2x10xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'kiln.rotary' op cos and sin need a static, even, positive last dim of at most the input's 8, got 'tensor<2x10xf32>'}}
  %y = kiln.rotary %x, %cs, %cs : (tensor<2x8xf32>, tensor<2x10xf32>, tensor<2x10xf32>) -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

// Tests that cos and sin rotate as many elements.
func.func @rotary_sin_width(%x: tensor<2x8xf32>, %cos: tensor<2x4xf32>, %sin: tensor<2x8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'kiln.rotary' op cos and sin must rotate as many elements, got 'tensor<2x4xf32>' and 'tensor<2x8xf32>'}}
  %y = kiln.rotary %x, %cos, %sin : (tensor<2x8xf32>, tensor<2x4xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

// Tests that the result keeps the input's last dim, even when partial.
func.func @rotary_result_width(%x: tensor<2x8xf32>, %cs: tensor<2x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'kiln.rotary' op the result must have the input's last dim 8, got 'tensor<2x4xf32>'}}
  %y = kiln.rotary %x, %cs, %cs : (tensor<2x8xf32>, tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

// -----

// Tests that the other dims broadcast as in NumPy, and make the result's.
func.func @rotary_broadcast(%x: tensor<2x8xf32>, %cs: tensor<3x4xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'kiln.rotary' op operands 'tensor<2x8xf32>', 'tensor<3x4xf32>' and 'tensor<3x4xf32>' do not broadcast}}
  %y = kiln.rotary %x, %cs, %cs : (tensor<2x8xf32>, tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

func.func @rotary_result_shape(%x: tensor<2x8xf32>, %cs: tensor<1x4xf32>) -> tensor<5x8xf32> {
  // expected-error @+1 {{'kiln.rotary' op the result 'tensor<5x8xf32>' is not the operands' broadcast shape [2] and last dim 8}}
  %y = kiln.rotary %x, %cs, %cs : (tensor<2x8xf32>, tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<5x8xf32>
  return %y : tensor<5x8xf32>
}

// -----

// Tests that linear's residual is checked against the declared result type
// too, not only against the shape the input implies.
func.func @linear_residual_declared(%x: tensor<?x8xf32>, %w: tensor<8x16xf32>, %r: tensor<9x16xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{'kiln.linear' op residual 'tensor<9x16xf32>' does not have the result's shape [?, 16] ('tensor<4x16xf32>')}}
  %y = kiln.linear %x, %w residual %r : (tensor<?x8xf32>, tensor<8x16xf32>, tensor<9x16xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

// Tests that linear's bias and residual have the result's element type.
func.func @linear_bias_type(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf16>) -> tensor<4x16xf32> {
  // expected-error @+1 {{'kiln.linear' op bias, gate and residual must have the result's element type 'f32', got 'tensor<16xf16>'}}
  %y = kiln.linear %x, %w bias %b : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<16xf16>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

// Tests that linear's gate has the result's shape: it does not broadcast.
func.func @linear_gate(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %g: tensor<4x1xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{'kiln.linear' op gate 'tensor<4x1xf32>' does not have the result's shape [4, 16] ('tensor<4x16xf32>')}}
  %y = kiln.linear %x, %w gate %g : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<4x1xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

// Tests that argmax's result drops (or keeps as 1) exactly its axis.
func.func @argmax_shape(%x: tensor<4x8xf32>) -> tensor<8xi64> {
  // expected-error @+1 {{'kiln.argmax' op result type 'tensor<8xi64>' does not match the expected shape [4]}}
  %y = kiln.argmax %x {axis = 1 : i64, keep_dims = false} : (tensor<4x8xf32>) -> tensor<8xi64>
  return %y : tensor<8xi64>
}

// -----

// Tests that top_k cannot pick more elements than its axis holds.
func.func @top_k_too_many(%x: tensor<4x8xf32>, %k: tensor<1xi64>) -> (tensor<4x9xf32>, tensor<4x9xi64>) {
  // expected-error @+1 {{'kiln.top_k' op k = 9 exceeds the axis size 8}}
  %v, %i = kiln.top_k %x, %k {axis = 1 : i64, largest} : (tensor<4x8xf32>, tensor<1xi64>) -> (tensor<4x9xf32>, tensor<4x9xi64>)
  return %v, %i : tensor<4x9xf32>, tensor<4x9xi64>
}

// -----

// Tests that pad takes two pads per dimension.
func.func @pad_length(%x: tensor<4x8xf32>, %p: tensor<3xi64>) -> tensor<?x?xf32> {
  // expected-error @+1 {{'kiln.pad' op pads has 3 entries but twice the rank is 4}}
  %y = kiln.pad constant %x, %p : (tensor<4x8xf32>, tensor<3xi64>) -> tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}

// -----

// Tests that only constant mode takes a fill value.
func.func @pad_value_mode(%x: tensor<4x8xf32>, %p: tensor<4xi64>, %v: tensor<f32>) -> tensor<?x?xf32> {
  // expected-error @+1 {{'kiln.pad' op only constant mode takes a value}}
  %y = kiln.pad edge %x, %p value %v : (tensor<4x8xf32>, tensor<4xi64>, tensor<f32>) -> tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}

// -----

// Tests that scatter_nd's updates have the indices' outer dims followed by
// the data's dims after the index tuple.
func.func @scatter_nd_updates(%d: tensor<4x8x16xf32>, %i: tensor<2x1xi64>, %u: tensor<2x16xf32>) -> tensor<4x8x16xf32> {
  // expected-error @+1 {{'kiln.scatter_nd' op updates type 'tensor<2x16xf32>' does not match the expected shape [2, 8, 16]}}
  %y = kiln.scatter_nd none %d[%i], %u : (tensor<4x8x16xf32>, tensor<2x1xi64>, tensor<2x16xf32>) -> tensor<4x8x16xf32>
  return %y : tensor<4x8x16xf32>
}

// -----

// Tests that scatter_elements' indices and updates have one shape.
func.func @scatter_elements_shapes(%d: tensor<4x8xf32>, %i: tensor<4x2xi64>, %u: tensor<4x3xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'kiln.scatter_elements' op updates 'tensor<4x3xf32>' and indices 'tensor<4x2xi64>' must have one shape}}
  %y = kiln.scatter_elements add %d[%i], %u {axis = 1 : i64} : (tensor<4x8xf32>, tensor<4x2xi64>, tensor<4x3xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// Tests that einsum's letters agree on their sizes.
func.func @einsum_sizes(%a: tensor<3x4xf32>, %b: tensor<5x6xf32>) -> tensor<3x6xf32> {
  // expected-error @+1 {{'kiln.einsum' op letter 'j' has sizes 4 and 5}}
  %y = kiln.einsum %a, %b {equation = "ij,jk->ik"} : (tensor<3x4xf32>, tensor<5x6xf32>) -> tensor<3x6xf32>
  return %y : tensor<3x6xf32>
}

// -----

// Tests that einsum's equation is explicit and of letters only.
func.func @einsum_ellipsis(%a: tensor<3x4xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{'kiln.einsum' op equation "...j->i" has '.'; kiln.einsum takes letters only}}
  %y = kiln.einsum %a {equation = "...j->i"} : (tensor<3x4xf32>) -> tensor<3xf32>
  return %y : tensor<3xf32>
}

// -----

// Tests that every output letter comes from an input.
func.func @einsum_output_letter(%a: tensor<3x4xf32>) -> tensor<3x5xf32> {
  // expected-error @+1 {{'kiln.einsum' op output letter 'k' is in no input}}
  %y = kiln.einsum %a {equation = "ij->ik"} : (tensor<3x4xf32>) -> tensor<3x5xf32>
  return %y : tensor<3x5xf32>
}

// -----

// Tests that paged_attention's layer is one of the cache's.
func.func @paged_attention_layer(%q: tensor<1x4x1x16xf32>, %k: tensor<1x2x1x16xf32>, %pool: tensor<?x2x2x2x8x16xf32>,
                                 %tables: tensor<1x?xi64>, %lengths: tensor<1xi64>, %width: tensor<i64>) -> tensor<1x4x1x16xf32> {
  // expected-error @+1 {{'kiln.paged_attention' op layer 2 is not one of the cache's 2 layers}}
  %o = kiln.paged_attention %q, %k, %k cache %pool tables %tables lengths %lengths width %width {layer = 2 : i64, scale = 1.0 : f32}
      : (tensor<1x4x1x16xf32>, tensor<1x2x1x16xf32>, tensor<1x2x1x16xf32>, tensor<?x2x2x2x8x16xf32>, tensor<1x?xi64>, tensor<1xi64>, tensor<i64>) -> tensor<1x4x1x16xf32>
  return %o : tensor<1x4x1x16xf32>
}

// -----

// Tests that the cache holds the query's element type, or 16 bits for an
// f32 query: not f64.
func.func @paged_attention_cache_type(%q: tensor<1x4x1x16xf32>, %k: tensor<1x2x1x16xf32>, %pool: tensor<?x2x2x2x8x16xf64>,
                                      %tables: tensor<1x?xi64>, %lengths: tensor<1xi64>, %width: tensor<i64>) -> tensor<1x4x1x16xf32> {
  // expected-error @+1 {{'kiln.paged_attention' op the cache holds the query's element type, or f16 or bf16 for an f32 query; got 'f64' for 'f32'}}
  %o = kiln.paged_attention %q, %k, %k cache %pool tables %tables lengths %lengths width %width {layer = 0 : i64, scale = 1.0 : f32}
      : (tensor<1x4x1x16xf32>, tensor<1x2x1x16xf32>, tensor<1x2x1x16xf32>, tensor<?x2x2x2x8x16xf64>, tensor<1x?xi64>, tensor<1xi64>, tensor<i64>) -> tensor<1x4x1x16xf32>
  return %o : tensor<1x4x1x16xf32>
}

// -----

// Tests that a negative layer is none of the cache's either.
func.func @paged_attention_negative_layer(%q: tensor<1x4x1x16xf32>, %k: tensor<1x2x1x16xf32>, %pool: tensor<?x2x2x2x8x16xf32>,
                                          %tables: tensor<1x?xi64>, %lengths: tensor<1xi64>, %width: tensor<i64>) -> tensor<1x4x1x16xf32> {
  // expected-error @+1 {{'kiln.paged_attention' op layer -1 is not one of the cache's 2 layers}}
  %o = kiln.paged_attention %q, %k, %k cache %pool tables %tables lengths %lengths width %width {layer = -1 : i64, scale = 1.0 : f32}
      : (tensor<1x4x1x16xf32>, tensor<1x2x1x16xf32>, tensor<1x2x1x16xf32>, tensor<?x2x2x2x8x16xf32>, tensor<1x?xi64>, tensor<1xi64>, tensor<i64>) -> tensor<1x4x1x16xf32>
  return %o : tensor<1x4x1x16xf32>
}

// -----

// Tests that the cache's heads are the key's.
func.func @paged_attention_heads(%q: tensor<1x4x1x16xf32>, %k: tensor<1x2x1x16xf32>, %pool: tensor<?x2x2x4x8x16xf32>,
                                 %tables: tensor<1x?xi64>, %lengths: tensor<1xi64>, %width: tensor<i64>) -> tensor<1x4x1x16xf32> {
  // expected-error @+1 {{'kiln.paged_attention' op the cache's and the key's head counts differ: 4 and 2}}
  %o = kiln.paged_attention %q, %k, %k cache %pool tables %tables lengths %lengths width %width {layer = 0 : i64, scale = 1.0 : f32}
      : (tensor<1x4x1x16xf32>, tensor<1x2x1x16xf32>, tensor<1x2x1x16xf32>, tensor<?x2x2x4x8x16xf32>, tensor<1x?xi64>, tensor<1xi64>, tensor<i64>) -> tensor<1x4x1x16xf32>
  return %o : tensor<1x4x1x16xf32>
}
