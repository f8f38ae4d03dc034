// RUN: kiln-opt %s --split-input-file --kiln-fuse-attention | FileCheck %s

// Tests that GPT-2's attention (K transposed, scores divided by sqrt(d), a
// causal where and an additive padding mask) becomes one kiln.attention with
// both masks, scale 1/4 and the where's fill, and that nothing of the chain
// is left.

// CHECK-LABEL: func.func @gpt2_attention
//  CHECK-SAME: (%[[Q:.+]]: tensor<?x4x?x16xf32>, %[[K:.+]]: tensor<?x4x?x16xf32>, %[[V:.+]]: tensor<?x4x?x16xf32>, %[[KEEP:.+]]: tensor<1x1x?x?xi1>, %[[MASK:.+]]: tensor<?x1x1x?xf32>)
//       CHECK: %[[O:.+]] = kiln.attention %[[Q]], %[[K]], %[[V]] keep %[[KEEP]] bias %[[MASK]]
//  CHECK-SAME: masked_value = -3.40282347E+38 : f32, scale = 2.500000e-01 : f32
//  CHECK-NOT: kiln.softmax
//  CHECK-NOT: kiln.transpose
//       CHECK: return %[[O]]
func.func @gpt2_attention(%q: tensor<?x4x?x16xf32>, %k: tensor<?x4x?x16xf32>, %v: tensor<?x4x?x16xf32>,
                          %keep: tensor<1x1x?x?xi1>, %mask: tensor<?x1x1x?xf32>) -> tensor<?x4x?x16xf32> {
  %kt = kiln.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : (tensor<?x4x?x16xf32>) -> tensor<?x4x16x?xf32>
  %s = kiln.matmul %q, %kt : (tensor<?x4x?x16xf32>, tensor<?x4x16x?xf32>) -> tensor<?x4x?x?xf32>
  %c4 = kiln.constant dense<4.0> : tensor<f32>
  %d = kiln.div %s, %c4 : (tensor<?x4x?x?xf32>, tensor<f32>) -> tensor<?x4x?x?xf32>
  %min = kiln.constant dense<-3.40282347E+38> : tensor<f32>
  %w = kiln.where %keep, %d, %min : (tensor<1x1x?x?xi1>, tensor<?x4x?x?xf32>, tensor<f32>) -> tensor<?x4x?x?xf32>
  %a = kiln.add %w, %mask : (tensor<?x4x?x?xf32>, tensor<?x1x1x?xf32>) -> tensor<?x4x?x?xf32>
  %p = kiln.softmax %a {axis = 3 : i64} : tensor<?x4x?x?xf32>
  %o = kiln.matmul %p, %v : (tensor<?x4x?x?xf32>, tensor<?x4x?x16xf32>) -> tensor<?x4x?x16xf32>
  return %o : tensor<?x4x?x16xf32>
}

// -----

// Tests that the mask may be the left operand of the add, the scale a
// multiplication by a constant on either side, and K read through
// transpose_b; without a where, masked_value stays at its default.

// CHECK-LABEL: func.func @mask_first_scale_by_mul
//  CHECK-SAME: (%[[Q:.+]]: tensor<2x4x8x16xf32>, %[[K:.+]]: tensor<2x4x8x16xf32>, %[[V:.+]]: tensor<2x4x8x32xf32>, %[[MASK:.+]]: tensor<2x1x8x8xf32>)
//       CHECK: kiln.attention %[[Q]], %[[K]], %[[V]] bias %[[MASK]] {scale = 1.250000e-01 : f32}
//  CHECK-SAME: -> tensor<2x4x8x32xf32>
//   CHECK-NOT: kiln.softmax
func.func @mask_first_scale_by_mul(%q: tensor<2x4x8x16xf32>, %k: tensor<2x4x8x16xf32>, %v: tensor<2x4x8x32xf32>,
                                   %mask: tensor<2x1x8x8xf32>) -> tensor<2x4x8x32xf32> {
  %s = kiln.matmul %q, %k {transpose_b} : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x8xf32>
  %c = kiln.constant dense<0.125> : tensor<1xf32>
  %d = kiln.mul %c, %s : (tensor<1xf32>, tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  %a = kiln.add %mask, %d : (tensor<2x1x8x8xf32>, tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  %p = kiln.softmax %a {axis = 3 : i64} : tensor<2x4x8x8xf32>
  %o = kiln.matmul %p, %v : (tensor<2x4x8x8xf32>, tensor<2x4x8x32xf32>) -> tensor<2x4x8x32xf32>
  return %o : tensor<2x4x8x32xf32>
}

// -----

// Tests GPT-J's order, which masks the scores before it scales them: the
// scale applies to the where's fill too, so masked_value is the fill over
// sqrt(d). A scale under the where multiplies the product's as before.

// CHECK-LABEL: func.func @scale_after_mask
//  CHECK-SAME: (%[[Q:.+]]: tensor<?x4x?x16xf32>, %[[K:.+]]: tensor<?x4x?x16xf32>, %[[V:.+]]: tensor<?x4x?x16xf32>, %[[KEEP:.+]]: tensor<?x?xi1>, %[[MASK:.+]]: tensor<?x1x1x?xf32>)
//       CHECK: %[[KEEP4:.+]] = kiln.unsqueeze %[[KEEP]] {axes = array<i64: 0, 1>}
//       CHECK: %[[O:.+]] = kiln.attention %[[Q]], %[[K]], %[[V]] keep %[[KEEP4]] bias %[[MASK]]
//  CHECK-SAME: masked_value = -8.50705867E+37 : f32, scale = 1.250000e-01 : f32
//  CHECK-NOT: kiln.softmax
//       CHECK: return %[[O]]
func.func @scale_after_mask(%q: tensor<?x4x?x16xf32>, %k: tensor<?x4x?x16xf32>, %v: tensor<?x4x?x16xf32>,
                            %keep: tensor<?x?xi1>, %mask: tensor<?x1x1x?xf32>) -> tensor<?x4x?x16xf32> {
  %kt = kiln.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : (tensor<?x4x?x16xf32>) -> tensor<?x4x16x?xf32>
  %s = kiln.matmul %q, %kt : (tensor<?x4x?x16xf32>, tensor<?x4x16x?xf32>) -> tensor<?x4x?x?xf32>
  %half = kiln.constant dense<0.5> : tensor<f32>
  %h = kiln.mul %s, %half : (tensor<?x4x?x?xf32>, tensor<f32>) -> tensor<?x4x?x?xf32>
  %min = kiln.constant dense<-3.40282347E+38> : tensor<f32>
  %w = kiln.where %keep, %h, %min : (tensor<?x?xi1>, tensor<?x4x?x?xf32>, tensor<f32>) -> tensor<?x4x?x?xf32>
  %c4 = kiln.constant dense<4.0> : tensor<f32>
  %d = kiln.div %w, %c4 : (tensor<?x4x?x?xf32>, tensor<f32>) -> tensor<?x4x?x?xf32>
  %a = kiln.add %d, %mask : (tensor<?x4x?x?xf32>, tensor<?x1x1x?xf32>) -> tensor<?x4x?x?xf32>
  %p = kiln.softmax %a {axis = 3 : i64} : tensor<?x4x?x?xf32>
  %o = kiln.matmul %p, %v : (tensor<?x4x?x?xf32>, tensor<?x4x?x16xf32>) -> tensor<?x4x?x16xf32>
  return %o : tensor<?x4x?x16xf32>
}

// -----

// Tests that a scale above the where is not taken when something else reads
// the masked scores: the where, kept for that reader, would be computed
// twice.

// CHECK-LABEL: func.func @masked_scores_read_twice
//       CHECK: kiln.where
//       CHECK: kiln.softmax
//   CHECK-NOT: kiln.attention
func.func @masked_scores_read_twice(%q: tensor<1x4x8x16xf32>, %k: tensor<1x4x8x16xf32>, %v: tensor<1x4x8x16xf32>,
                                    %keep: tensor<8x8xi1>) -> (tensor<1x4x8x16xf32>, tensor<1x4x8x8xf32>) {
  %s = kiln.matmul %q, %k {transpose_b} : (tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x8x8xf32>
  %min = kiln.constant dense<-3.40282347E+38> : tensor<f32>
  %w = kiln.where %keep, %s, %min : (tensor<8x8xi1>, tensor<1x4x8x8xf32>, tensor<f32>) -> tensor<1x4x8x8xf32>
  %c4 = kiln.constant dense<4.0> : tensor<f32>
  %d = kiln.div %w, %c4 : (tensor<1x4x8x8xf32>, tensor<f32>) -> tensor<1x4x8x8xf32>
  %p = kiln.softmax %d {axis = 3 : i64} : tensor<1x4x8x8xf32>
  %o = kiln.matmul %p, %v : (tensor<1x4x8x8xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  return %o, %w : tensor<1x4x8x16xf32>, tensor<1x4x8x8xf32>
}

// -----

// Tests BERT's form, where K goes from [B, T, H, D] straight to [B, H, D, T]:
// the fused op reads K through a transpose to [B, H, T, D].

// CHECK-LABEL: func.func @bert_key_permutation
//  CHECK-SAME: (%[[Q:.+]]: tensor<?x4x?x16xf32>, %[[KRAW:.+]]: tensor<?x?x4x16xf32>, %[[V:.+]]: tensor<?x4x?x16xf32>)
//       CHECK: %[[K:.+]] = kiln.transpose %[[KRAW]] {permutation = array<i64: 0, 2, 1, 3>} : (tensor<?x?x4x16xf32>) -> tensor<?x4x?x16xf32>
//       CHECK: kiln.attention %[[Q]], %[[K]], %[[V]] {scale = 2.500000e-01 : f32}
func.func @bert_key_permutation(%q: tensor<?x4x?x16xf32>, %k: tensor<?x?x4x16xf32>, %v: tensor<?x4x?x16xf32>) -> tensor<?x4x?x16xf32> {
  %kt = kiln.transpose %k {permutation = array<i64: 0, 2, 3, 1>} : (tensor<?x?x4x16xf32>) -> tensor<?x4x16x?xf32>
  %s = kiln.matmul %q, %kt : (tensor<?x4x?x16xf32>, tensor<?x4x16x?xf32>) -> tensor<?x4x?x?xf32>
  %c4 = kiln.constant dense<4.0> : tensor<f32>
  %d = kiln.div %s, %c4 : (tensor<?x4x?x?xf32>, tensor<f32>) -> tensor<?x4x?x?xf32>
  %p = kiln.softmax %d {axis = 3 : i64} : tensor<?x4x?x?xf32>
  %o = kiln.matmul %p, %v : (tensor<?x4x?x?xf32>, tensor<?x4x?x16xf32>) -> tensor<?x4x?x16xf32>
  return %o : tensor<?x4x?x16xf32>
}

// -----

// Tests that nothing fuses when the scores have another user: fusing would
// have to compute them twice.

// CHECK-LABEL: func.func @scores_used_twice
//   CHECK-NOT: kiln.attention
//       CHECK: kiln.softmax
func.func @scores_used_twice(%q: tensor<1x4x8x16xf32>, %k: tensor<1x4x8x16xf32>, %v: tensor<1x4x8x16xf32>)
    -> (tensor<1x4x8x16xf32>, tensor<1x4x8x8xf32>) {
  %s = kiln.matmul %q, %k {transpose_b} : (tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x8x8xf32>
  %p = kiln.softmax %s {axis = 3 : i64} : tensor<1x4x8x8xf32>
  %o = kiln.matmul %p, %v : (tensor<1x4x8x8xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  return %o, %s : tensor<1x4x8x16xf32>, tensor<1x4x8x8xf32>
}

// -----

// Tests that nothing fuses when the probabilities have another user.

// CHECK-LABEL: func.func @probabilities_used_twice
//   CHECK-NOT: kiln.attention
func.func @probabilities_used_twice(%q: tensor<1x4x8x16xf32>, %k: tensor<1x4x8x16xf32>, %v: tensor<1x4x8x16xf32>)
    -> (tensor<1x4x8x16xf32>, tensor<1x4x8x8xf32>) {
  %s = kiln.matmul %q, %k {transpose_b} : (tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x8x8xf32>
  %p = kiln.softmax %s {axis = 3 : i64} : tensor<1x4x8x8xf32>
  %o = kiln.matmul %p, %v : (tensor<1x4x8x8xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  return %o, %p : tensor<1x4x8x16xf32>, tensor<1x4x8x8xf32>
}

// -----

// Tests that a mask that broadcasts the scores to a larger shape (here a
// batch of 2 against scores of batch 1) does not fuse.

// CHECK-LABEL: func.func @mask_grows_scores
//   CHECK-NOT: kiln.attention
func.func @mask_grows_scores(%q: tensor<1x4x8x16xf32>, %k: tensor<1x4x8x16xf32>, %v: tensor<1x4x8x16xf32>,
                             %mask: tensor<2x1x8x8xf32>) -> tensor<2x4x8x16xf32> {
  %s = kiln.matmul %q, %k {transpose_b} : (tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x8x8xf32>
  %a = kiln.add %s, %mask : (tensor<1x4x8x8xf32>, tensor<2x1x8x8xf32>) -> tensor<2x4x8x8xf32>
  %p = kiln.softmax %a {axis = 3 : i64} : tensor<2x4x8x8xf32>
  %o = kiln.matmul %p, %v : (tensor<2x4x8x8xf32>, tensor<1x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  return %o : tensor<2x4x8x16xf32>
}

// -----

// Tests that f16 attention does not fuse: the fused kernel is f32 only.

// CHECK-LABEL: func.func @f16
//   CHECK-NOT: kiln.attention
func.func @f16(%q: tensor<1x4x8x16xf16>, %k: tensor<1x4x8x16xf16>, %v: tensor<1x4x8x16xf16>) -> tensor<1x4x8x16xf16> {
  %s = kiln.matmul %q, %k {transpose_b} : (tensor<1x4x8x16xf16>, tensor<1x4x8x16xf16>) -> tensor<1x4x8x8xf16>
  %p = kiln.softmax %s {axis = 3 : i64} : tensor<1x4x8x8xf16>
  %o = kiln.matmul %p, %v : (tensor<1x4x8x8xf16>, tensor<1x4x8x16xf16>) -> tensor<1x4x8x16xf16>
  return %o : tensor<1x4x8x16xf16>
}

// -----

// Tests that a scale that is not a constant does not fuse.

// CHECK-LABEL: func.func @scale_not_constant
//   CHECK-NOT: kiln.attention
func.func @scale_not_constant(%q: tensor<1x4x8x16xf32>, %k: tensor<1x4x8x16xf32>, %v: tensor<1x4x8x16xf32>,
                              %c: tensor<f32>) -> tensor<1x4x8x16xf32> {
  %s = kiln.matmul %q, %k {transpose_b} : (tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x8x8xf32>
  %d = kiln.div %s, %c : (tensor<1x4x8x8xf32>, tensor<f32>) -> tensor<1x4x8x8xf32>
  %p = kiln.softmax %d {axis = 3 : i64} : tensor<1x4x8x8xf32>
  %o = kiln.matmul %p, %v : (tensor<1x4x8x8xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  return %o : tensor<1x4x8x16xf32>
}

// -----

// Tests that a static batch of 1 in K against a dynamic one in Q, which the
// unfused product broadcasts, does not fuse.

// CHECK-LABEL: func.func @key_batch_broadcasts
//   CHECK-NOT: kiln.attention
func.func @key_batch_broadcasts(%q: tensor<?x4x8x16xf32>, %k: tensor<1x4x8x16xf32>, %v: tensor<?x4x8x16xf32>) -> tensor<?x4x8x16xf32> {
  %s = kiln.matmul %q, %k {transpose_b} : (tensor<?x4x8x16xf32>, tensor<1x4x8x16xf32>) -> tensor<?x4x8x8xf32>
  %p = kiln.softmax %s {axis = 3 : i64} : tensor<?x4x8x8xf32>
  %o = kiln.matmul %p, %v : (tensor<?x4x8x8xf32>, tensor<?x4x8x16xf32>) -> tensor<?x4x8x16xf32>
  return %o : tensor<?x4x8x16xf32>
}

// -----

// Tests that a softmax over another axis than the keys does not fuse.

// CHECK-LABEL: func.func @softmax_over_queries
//   CHECK-NOT: kiln.attention
func.func @softmax_over_queries(%q: tensor<1x4x8x16xf32>, %k: tensor<1x4x8x16xf32>, %v: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  %s = kiln.matmul %q, %k {transpose_b} : (tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x8x8xf32>
  %p = kiln.softmax %s {axis = 2 : i64} : tensor<1x4x8x8xf32>
  %o = kiln.matmul %p, %v : (tensor<1x4x8x8xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  return %o : tensor<1x4x8x16xf32>
}

// -----

// Tests that grouped-query attention's repeat_kv of K and V (Llama's export
// after kiln-fold-constants: unsqueeze, expand to [B, 2, 2, T, 16] through
// ONNX Expand's where(shape == -1, 1, shape), reshape to [B, 4, T, 16]) is
// absorbed: the attention reads the 2 key/value heads.

// CHECK-LABEL: func.func @grouped_query
//  CHECK-SAME: (%[[Q:.+]]: tensor<?x4x?x16xf32>, %[[K:.+]]: tensor<?x2x?x16xf32>, %[[V:.+]]: tensor<?x2x?x16xf32>)
//       CHECK: kiln.attention %[[Q]], %[[K]], %[[V]] {scale = 2.500000e-01 : f32}
//  CHECK-SAME: (tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) -> tensor<?x4x?x16xf32>
//   CHECK-NOT: kiln.expand
func.func @grouped_query(%q: tensor<?x4x?x16xf32>, %k: tensor<?x2x?x16xf32>, %v: tensor<?x2x?x16xf32>) -> tensor<?x4x?x16xf32> {
  %c2 = kiln.constant dense<2> : tensor<1xi64>
  %c4 = kiln.constant dense<4> : tensor<1xi64>
  %c16 = kiln.constant dense<16> : tensor<1xi64>
  %minus1 = kiln.constant dense<-1> : tensor<5xi64>
  %ones = kiln.constant dense<1> : tensor<5xi64>
  %kb = kiln.dim %k {index = 0 : i64} : tensor<?x2x?x16xf32> -> tensor<i64>
  %klen = kiln.dim %k {index = 2 : i64} : tensor<?x2x?x16xf32> -> tensor<i64>
  %kbu = kiln.unsqueeze %kb {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %ktu = kiln.unsqueeze %klen {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %ks5 = kiln.concat %kbu, %c2, %c2, %ktu, %c16 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<5xi64>
  %kneg = kiln.compare eq, %ks5, %minus1 : (tensor<5xi64>, tensor<5xi64>) -> tensor<5xi1>
  %ks5b = kiln.where %kneg, %ones, %ks5 : (tensor<5xi1>, tensor<5xi64>, tensor<5xi64>) -> tensor<5xi64>
  %ku = kiln.unsqueeze %k {axes = array<i64: 2>} : (tensor<?x2x?x16xf32>) -> tensor<?x2x1x?x16xf32>
  %ke = kiln.expand %ku, %ks5b : (tensor<?x2x1x?x16xf32>, tensor<5xi64>) -> tensor<?x2x?x?x16xf32>
  %ks4 = kiln.concat %kbu, %c4, %ktu, %c16 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  %kr = kiln.reshape %ke, %ks4 : (tensor<?x2x?x?x16xf32>, tensor<4xi64>) -> tensor<?x4x?x16xf32>
  %vb = kiln.dim %v {index = 0 : i64} : tensor<?x2x?x16xf32> -> tensor<i64>
  %vt = kiln.dim %v {index = 2 : i64} : tensor<?x2x?x16xf32> -> tensor<i64>
  %vbu = kiln.unsqueeze %vb {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %vtu = kiln.unsqueeze %vt {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %vs5 = kiln.concat %vbu, %c2, %c2, %vtu, %c16 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<5xi64>
  %vneg = kiln.compare eq, %vs5, %minus1 : (tensor<5xi64>, tensor<5xi64>) -> tensor<5xi1>
  %vs5b = kiln.where %vneg, %ones, %vs5 : (tensor<5xi1>, tensor<5xi64>, tensor<5xi64>) -> tensor<5xi64>
  %vu = kiln.unsqueeze %v {axes = array<i64: 2>} : (tensor<?x2x?x16xf32>) -> tensor<?x2x1x?x16xf32>
  %ve = kiln.expand %vu, %vs5b : (tensor<?x2x1x?x16xf32>, tensor<5xi64>) -> tensor<?x2x?x?x16xf32>
  %vs4 = kiln.concat %vbu, %c4, %vtu, %c16 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  %vr = kiln.reshape %ve, %vs4 : (tensor<?x2x?x?x16xf32>, tensor<4xi64>) -> tensor<?x4x?x16xf32>
  %kt = kiln.transpose %kr {permutation = array<i64: 0, 1, 3, 2>} : (tensor<?x4x?x16xf32>) -> tensor<?x4x16x?xf32>
  %s = kiln.matmul %q, %kt : (tensor<?x4x?x16xf32>, tensor<?x4x16x?xf32>) -> tensor<?x4x?x?xf32>
  %c = kiln.constant dense<4.0> : tensor<f32>
  %d = kiln.div %s, %c : (tensor<?x4x?x?xf32>, tensor<f32>) -> tensor<?x4x?x?xf32>
  %p = kiln.softmax %d {axis = 3 : i64} : tensor<?x4x?x?xf32>
  %o = kiln.matmul %p, %vr : (tensor<?x4x?x?xf32>, tensor<?x4x?x16xf32>) -> tensor<?x4x?x16xf32>
  return %o : tensor<?x4x?x16xf32>
}

// -----

// Tests that the repeats stay when the expanded batch size is not provably
// K's and V's own (here it is the query's batch, which may differ at run time
// only if the graph is wrong, but nothing here proves it equal).

// CHECK-LABEL: func.func @repeat_of_unknown_batch
//       CHECK: kiln.attention %{{.+}}, %{{.+}}, %{{.+}} {scale = 2.500000e-01 : f32}
//  CHECK-SAME: (tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>) -> tensor<?x4x?x16xf32>
func.func @repeat_of_unknown_batch(%q: tensor<?x4x?x16xf32>, %k: tensor<?x2x?x16xf32>, %v: tensor<?x2x?x16xf32>) -> tensor<?x4x?x16xf32> {
  %c2 = kiln.constant dense<2> : tensor<1xi64>
  %c4 = kiln.constant dense<4> : tensor<1xi64>
  %c16 = kiln.constant dense<16> : tensor<1xi64>
  %minus1 = kiln.constant dense<-1> : tensor<5xi64>
  %ones = kiln.constant dense<1> : tensor<5xi64>
  %kb = kiln.dim %q {index = 0 : i64} : tensor<?x4x?x16xf32> -> tensor<i64>
  %klen = kiln.dim %k {index = 2 : i64} : tensor<?x2x?x16xf32> -> tensor<i64>
  %kbu = kiln.unsqueeze %kb {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %ktu = kiln.unsqueeze %klen {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %ks5 = kiln.concat %kbu, %c2, %c2, %ktu, %c16 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<5xi64>
  %kneg = kiln.compare eq, %ks5, %minus1 : (tensor<5xi64>, tensor<5xi64>) -> tensor<5xi1>
  %ks5b = kiln.where %kneg, %ones, %ks5 : (tensor<5xi1>, tensor<5xi64>, tensor<5xi64>) -> tensor<5xi64>
  %ku = kiln.unsqueeze %k {axes = array<i64: 2>} : (tensor<?x2x?x16xf32>) -> tensor<?x2x1x?x16xf32>
  %ke = kiln.expand %ku, %ks5b : (tensor<?x2x1x?x16xf32>, tensor<5xi64>) -> tensor<?x2x?x?x16xf32>
  %ks4 = kiln.concat %kbu, %c4, %ktu, %c16 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  %kr = kiln.reshape %ke, %ks4 : (tensor<?x2x?x?x16xf32>, tensor<4xi64>) -> tensor<?x4x?x16xf32>
  %vb = kiln.dim %v {index = 0 : i64} : tensor<?x2x?x16xf32> -> tensor<i64>
  %vt = kiln.dim %v {index = 2 : i64} : tensor<?x2x?x16xf32> -> tensor<i64>
  %vbu = kiln.unsqueeze %vb {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %vtu = kiln.unsqueeze %vt {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %vs5 = kiln.concat %vbu, %c2, %c2, %vtu, %c16 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<5xi64>
  %vneg = kiln.compare eq, %vs5, %minus1 : (tensor<5xi64>, tensor<5xi64>) -> tensor<5xi1>
  %vs5b = kiln.where %vneg, %ones, %vs5 : (tensor<5xi1>, tensor<5xi64>, tensor<5xi64>) -> tensor<5xi64>
  %vu = kiln.unsqueeze %v {axes = array<i64: 2>} : (tensor<?x2x?x16xf32>) -> tensor<?x2x1x?x16xf32>
  %ve = kiln.expand %vu, %vs5b : (tensor<?x2x1x?x16xf32>, tensor<5xi64>) -> tensor<?x2x?x?x16xf32>
  %vs4 = kiln.concat %vbu, %c4, %vtu, %c16 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  %vr = kiln.reshape %ve, %vs4 : (tensor<?x2x?x?x16xf32>, tensor<4xi64>) -> tensor<?x4x?x16xf32>
  %kt = kiln.transpose %kr {permutation = array<i64: 0, 1, 3, 2>} : (tensor<?x4x?x16xf32>) -> tensor<?x4x16x?xf32>
  %s = kiln.matmul %q, %kt : (tensor<?x4x?x16xf32>, tensor<?x4x16x?xf32>) -> tensor<?x4x?x?xf32>
  %c = kiln.constant dense<4.0> : tensor<f32>
  %d = kiln.div %s, %c : (tensor<?x4x?x?xf32>, tensor<f32>) -> tensor<?x4x?x?xf32>
  %p = kiln.softmax %d {axis = 3 : i64} : tensor<?x4x?x?xf32>
  %o = kiln.matmul %p, %vr : (tensor<?x4x?x?xf32>, tensor<?x4x?x16xf32>) -> tensor<?x4x?x16xf32>
  return %o : tensor<?x4x?x16xf32>
}

// -----

// Tests that only V being repeated is not absorbed: K and V must have the
// same heads.

// CHECK-LABEL: func.func @only_value_repeated
//       CHECK: kiln.attention %{{.+}}, %{{.+}}, %{{.+}} {scale = 2.500000e-01 : f32}
//  CHECK-SAME: (tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>) -> tensor<?x4x?x16xf32>
func.func @only_value_repeated(%q: tensor<?x4x?x16xf32>, %kr: tensor<?x4x?x16xf32>, %v: tensor<?x2x?x16xf32>) -> tensor<?x4x?x16xf32> {
  %c2 = kiln.constant dense<2> : tensor<1xi64>
  %c4 = kiln.constant dense<4> : tensor<1xi64>
  %c16 = kiln.constant dense<16> : tensor<1xi64>
  %minus1 = kiln.constant dense<-1> : tensor<5xi64>
  %ones = kiln.constant dense<1> : tensor<5xi64>
  %vb = kiln.dim %v {index = 0 : i64} : tensor<?x2x?x16xf32> -> tensor<i64>
  %vt = kiln.dim %v {index = 2 : i64} : tensor<?x2x?x16xf32> -> tensor<i64>
  %vbu = kiln.unsqueeze %vb {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %vtu = kiln.unsqueeze %vt {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %vs5 = kiln.concat %vbu, %c2, %c2, %vtu, %c16 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<5xi64>
  %vneg = kiln.compare eq, %vs5, %minus1 : (tensor<5xi64>, tensor<5xi64>) -> tensor<5xi1>
  %vs5b = kiln.where %vneg, %ones, %vs5 : (tensor<5xi1>, tensor<5xi64>, tensor<5xi64>) -> tensor<5xi64>
  %vu = kiln.unsqueeze %v {axes = array<i64: 2>} : (tensor<?x2x?x16xf32>) -> tensor<?x2x1x?x16xf32>
  %ve = kiln.expand %vu, %vs5b : (tensor<?x2x1x?x16xf32>, tensor<5xi64>) -> tensor<?x2x?x?x16xf32>
  %vs4 = kiln.concat %vbu, %c4, %vtu, %c16 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  %vr = kiln.reshape %ve, %vs4 : (tensor<?x2x?x?x16xf32>, tensor<4xi64>) -> tensor<?x4x?x16xf32>
  %kt = kiln.transpose %kr {permutation = array<i64: 0, 1, 3, 2>} : (tensor<?x4x?x16xf32>) -> tensor<?x4x16x?xf32>
  %s = kiln.matmul %q, %kt : (tensor<?x4x?x16xf32>, tensor<?x4x16x?xf32>) -> tensor<?x4x?x?xf32>
  %c = kiln.constant dense<4.0> : tensor<f32>
  %d = kiln.div %s, %c : (tensor<?x4x?x?xf32>, tensor<f32>) -> tensor<?x4x?x?xf32>
  %p = kiln.softmax %d {axis = 3 : i64} : tensor<?x4x?x?xf32>
  %o = kiln.matmul %p, %vr : (tensor<?x4x?x?xf32>, tensor<?x4x?x16xf32>) -> tensor<?x4x?x16xf32>
  return %o : tensor<?x4x?x16xf32>
}

// -----

// Tests that the repeats stay when neither the query nor the result has a
// static head count: the unfused product checks that the query has exactly
// the 4 repeated heads, which the fused op (a multiple of 2) would not.

// CHECK-LABEL: func.func @query_heads_unknown
//       CHECK: kiln.attention
//  CHECK-SAME: (tensor<?x?x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>) -> tensor<?x?x?x16xf32>
func.func @query_heads_unknown(%q: tensor<?x?x?x16xf32>, %k: tensor<?x2x?x16xf32>, %v: tensor<?x2x?x16xf32>) -> tensor<?x?x?x16xf32> {
  %c2 = kiln.constant dense<2> : tensor<1xi64>
  %c4 = kiln.constant dense<4> : tensor<1xi64>
  %c16 = kiln.constant dense<16> : tensor<1xi64>
  %minus1 = kiln.constant dense<-1> : tensor<5xi64>
  %ones = kiln.constant dense<1> : tensor<5xi64>
  %kb = kiln.dim %k {index = 0 : i64} : tensor<?x2x?x16xf32> -> tensor<i64>
  %klen = kiln.dim %k {index = 2 : i64} : tensor<?x2x?x16xf32> -> tensor<i64>
  %kbu = kiln.unsqueeze %kb {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %ktu = kiln.unsqueeze %klen {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %ks5 = kiln.concat %kbu, %c2, %c2, %ktu, %c16 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<5xi64>
  %kneg = kiln.compare eq, %ks5, %minus1 : (tensor<5xi64>, tensor<5xi64>) -> tensor<5xi1>
  %ks5b = kiln.where %kneg, %ones, %ks5 : (tensor<5xi1>, tensor<5xi64>, tensor<5xi64>) -> tensor<5xi64>
  %ku = kiln.unsqueeze %k {axes = array<i64: 2>} : (tensor<?x2x?x16xf32>) -> tensor<?x2x1x?x16xf32>
  %ke = kiln.expand %ku, %ks5b : (tensor<?x2x1x?x16xf32>, tensor<5xi64>) -> tensor<?x2x?x?x16xf32>
  %ks4 = kiln.concat %kbu, %c4, %ktu, %c16 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  %kr = kiln.reshape %ke, %ks4 : (tensor<?x2x?x?x16xf32>, tensor<4xi64>) -> tensor<?x4x?x16xf32>
  %vb = kiln.dim %v {index = 0 : i64} : tensor<?x2x?x16xf32> -> tensor<i64>
  %vt = kiln.dim %v {index = 2 : i64} : tensor<?x2x?x16xf32> -> tensor<i64>
  %vbu = kiln.unsqueeze %vb {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %vtu = kiln.unsqueeze %vt {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %vs5 = kiln.concat %vbu, %c2, %c2, %vtu, %c16 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<5xi64>
  %vneg = kiln.compare eq, %vs5, %minus1 : (tensor<5xi64>, tensor<5xi64>) -> tensor<5xi1>
  %vs5b = kiln.where %vneg, %ones, %vs5 : (tensor<5xi1>, tensor<5xi64>, tensor<5xi64>) -> tensor<5xi64>
  %vu = kiln.unsqueeze %v {axes = array<i64: 2>} : (tensor<?x2x?x16xf32>) -> tensor<?x2x1x?x16xf32>
  %ve = kiln.expand %vu, %vs5b : (tensor<?x2x1x?x16xf32>, tensor<5xi64>) -> tensor<?x2x?x?x16xf32>
  %vs4 = kiln.concat %vbu, %c4, %vtu, %c16 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  %vr = kiln.reshape %ve, %vs4 : (tensor<?x2x?x?x16xf32>, tensor<4xi64>) -> tensor<?x4x?x16xf32>
  %kt = kiln.transpose %kr {permutation = array<i64: 0, 1, 3, 2>} : (tensor<?x4x?x16xf32>) -> tensor<?x4x16x?xf32>
  %s = kiln.matmul %q, %kt : (tensor<?x?x?x16xf32>, tensor<?x4x16x?xf32>) -> tensor<?x?x?x?xf32>
  %c = kiln.constant dense<4.0> : tensor<f32>
  %d = kiln.div %s, %c : (tensor<?x?x?x?xf32>, tensor<f32>) -> tensor<?x?x?x?xf32>
  %p = kiln.softmax %d {axis = 3 : i64} : tensor<?x?x?x?xf32>
  %o = kiln.matmul %p, %vr : (tensor<?x?x?x?xf32>, tensor<?x4x?x16xf32>) -> tensor<?x?x?x16xf32>
  return %o : tensor<?x?x?x16xf32>
}

// -----

// Tests that a decode step's KV cache append, concat(past, new) along the
// length for K and V, is absorbed: the attention reads the past and the new
// rows, its presents replace the concats (here returned, as the graph's
// present outputs are), and a read of the cache's length before the
// attention becomes the sum of the past's and the new rows' lengths (the
// latter static, so a constant).

// CHECK-LABEL: func.func @kv_cache_append
//  CHECK-SAME: (%[[Q:.+]]: tensor<?x4x1x16xf32>, %[[K:.+]]: tensor<?x4x1x16xf32>, %[[V:.+]]: tensor<?x4x1x16xf32>, %[[PK:.+]]: tensor<?x4x?x16xf32>, %[[PV:.+]]: tensor<?x4x?x16xf32>)
//   CHECK-DAG: %[[PLEN:.+]] = kiln.dim %[[PK]] {index = 2 : i64}
//   CHECK-DAG: %[[KLEN:.+]] = kiln.constant dense<1> : tensor<i64>
//       CHECK: %[[LEN:.+]] = kiln.add %[[PLEN]], %[[KLEN]]
//       CHECK: %[[O:.+]], %[[P:.+]]:2 = kiln.attention %[[Q]], %[[K]], %[[V]] past %[[PK]], %[[PV]] {scale = 2.500000e-01 : f32}
//  CHECK-SAME: -> (tensor<?x4x1x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>)
//   CHECK-NOT: kiln.concat
//       CHECK: return %[[O]], %[[P]]#0, %[[P]]#1, %[[LEN]]
func.func @kv_cache_append(%q: tensor<?x4x1x16xf32>, %k: tensor<?x4x1x16xf32>, %v: tensor<?x4x1x16xf32>,
                           %pk: tensor<?x4x?x16xf32>, %pv: tensor<?x4x?x16xf32>)
    -> (tensor<?x4x1x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<i64>) {
  %kc = kiln.concat %pk, %k {axis = 2 : i64} : (tensor<?x4x?x16xf32>, tensor<?x4x1x16xf32>) -> tensor<?x4x?x16xf32>
  %vc = kiln.concat %pv, %v {axis = 2 : i64} : (tensor<?x4x?x16xf32>, tensor<?x4x1x16xf32>) -> tensor<?x4x?x16xf32>
  %len = kiln.dim %kc {index = 2 : i64} : tensor<?x4x?x16xf32> -> tensor<i64>
  %kt = kiln.transpose %kc {permutation = array<i64: 0, 1, 3, 2>} : (tensor<?x4x?x16xf32>) -> tensor<?x4x16x?xf32>
  %s = kiln.matmul %q, %kt : (tensor<?x4x1x16xf32>, tensor<?x4x16x?xf32>) -> tensor<?x4x1x?xf32>
  %c4 = kiln.constant dense<4.0> : tensor<f32>
  %d = kiln.div %s, %c4 : (tensor<?x4x1x?xf32>, tensor<f32>) -> tensor<?x4x1x?xf32>
  %p = kiln.softmax %d {axis = 3 : i64} : tensor<?x4x1x?xf32>
  %o = kiln.matmul %p, %vc : (tensor<?x4x1x?xf32>, tensor<?x4x?x16xf32>) -> tensor<?x4x1x16xf32>
  return %o, %kc, %vc, %len : tensor<?x4x1x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<i64>
}

// -----

// Tests that a cache concat whose contents something reads before the
// attention stays: the present would come too late for that reader.

// CHECK-LABEL: func.func @cache_read_before_attention
//       CHECK: kiln.concat
//       CHECK: kiln.attention %{{.+}}, %{{.+}}, %{{.+}} {scale = 2.500000e-01 : f32}
func.func @cache_read_before_attention(%q: tensor<1x4x1x16xf32>, %k: tensor<1x4x1x16xf32>, %v: tensor<1x4x1x16xf32>,
                                       %pk: tensor<1x4x7x16xf32>, %pv: tensor<1x4x7x16xf32>)
    -> (tensor<1x4x1x16xf32>, tensor<1x4x8x16xf32>) {
  %kc = kiln.concat %pk, %k {axis = 2 : i64} : (tensor<1x4x7x16xf32>, tensor<1x4x1x16xf32>) -> tensor<1x4x8x16xf32>
  %vc = kiln.concat %pv, %v {axis = 2 : i64} : (tensor<1x4x7x16xf32>, tensor<1x4x1x16xf32>) -> tensor<1x4x8x16xf32>
  %twice = kiln.add %kc, %kc : (tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  %o = kiln.attention %q, %kc, %vc {scale = 0.25 : f32}
      : (tensor<1x4x1x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x1x16xf32>
  return %o, %twice : tensor<1x4x1x16xf32>, tensor<1x4x8x16xf32>
}

// -----

// Tests that concats that are no cache append stay: along the heads, of
// three parts, and for K alone (K and V must both be appended to).

// CHECK-LABEL: func.func @not_cache_appends
//   CHECK-NOT: past
//       CHECK: return
func.func @not_cache_appends(%q: tensor<1x4x1x16xf32>, %k: tensor<1x4x1x16xf32>, %v: tensor<1x4x1x16xf32>,
                             %pk: tensor<1x4x7x16xf32>, %pv: tensor<1x4x7x16xf32>, %v8: tensor<1x4x8x16xf32>,
                             %k2: tensor<1x2x8x16xf32>, %v2: tensor<1x2x8x16xf32>)
    -> (tensor<1x4x1x16xf32>, tensor<1x4x1x16xf32>, tensor<1x4x1x16xf32>) {
  %kh = kiln.concat %k2, %k2 {axis = 1 : i64} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x4x8x16xf32>
  %vh = kiln.concat %v2, %v2 {axis = 1 : i64} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x4x8x16xf32>
  %heads = kiln.attention %q, %kh, %vh {scale = 0.25 : f32}
      : (tensor<1x4x1x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x1x16xf32>
  %k3 = kiln.concat %pk, %k, %k {axis = 2 : i64} : (tensor<1x4x7x16xf32>, tensor<1x4x1x16xf32>, tensor<1x4x1x16xf32>) -> tensor<1x4x9x16xf32>
  %v3 = kiln.concat %pv, %v, %v {axis = 2 : i64} : (tensor<1x4x7x16xf32>, tensor<1x4x1x16xf32>, tensor<1x4x1x16xf32>) -> tensor<1x4x9x16xf32>
  %three = kiln.attention %q, %k3, %v3 {scale = 0.25 : f32}
      : (tensor<1x4x1x16xf32>, tensor<1x4x9x16xf32>, tensor<1x4x9x16xf32>) -> tensor<1x4x1x16xf32>
  %kc = kiln.concat %pk, %k {axis = 2 : i64} : (tensor<1x4x7x16xf32>, tensor<1x4x1x16xf32>) -> tensor<1x4x8x16xf32>
  %keyOnly = kiln.attention %q, %kc, %v8 {scale = 0.25 : f32}
      : (tensor<1x4x1x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x1x16xf32>
  return %heads, %three, %keyOnly : tensor<1x4x1x16xf32>, tensor<1x4x1x16xf32>, tensor<1x4x1x16xf32>
}

// -----

// Tests that the past key and value may be told apart only by name: graph
// inputs whose dims share a kiln.dims name have one size at run time, so
// the two concats provably split at the same row.

// CHECK-LABEL: func.func @named_past_lengths
//       CHECK: kiln.attention %{{.+}}, %{{.+}}, %{{.+}} past %{{.+}}, %{{.+}} {scale = 2.500000e-01 : f32}
func.func @named_past_lengths(%q: tensor<1x4x?x16xf32>, %k: tensor<1x4x?x16xf32>, %v: tensor<1x4x?x16xf32>,
                              %pk: tensor<1x4x?x16xf32> {kiln.dims = ["", "", "past", ""]},
                              %pv: tensor<1x4x?x16xf32> {kiln.dims = ["", "", "past", ""]})
    -> (tensor<1x4x?x16xf32>, tensor<1x4x?x16xf32>, tensor<1x4x?x16xf32>) {
  %kc = kiln.concat %pk, %k {axis = 2 : i64} : (tensor<1x4x?x16xf32>, tensor<1x4x?x16xf32>) -> tensor<1x4x?x16xf32>
  %vc = kiln.concat %pv, %v {axis = 2 : i64} : (tensor<1x4x?x16xf32>, tensor<1x4x?x16xf32>) -> tensor<1x4x?x16xf32>
  %o = kiln.attention %q, %kc, %vc {scale = 0.25 : f32}
      : (tensor<1x4x?x16xf32>, tensor<1x4x?x16xf32>, tensor<1x4x?x16xf32>) -> tensor<1x4x?x16xf32>
  return %o, %kc, %vc : tensor<1x4x?x16xf32>, tensor<1x4x?x16xf32>, tensor<1x4x?x16xf32>
}

// -----

// Tests that concats that split K and V at different rows stay (as many
// keys as values, but not past for past), as do unnamed past lengths that
// nothing proves equal, and a concat that the attention also reads as the
// query.

// CHECK-LABEL: func.func @splits_not_provably_alike
//   CHECK-NOT: past
//       CHECK: return
func.func @splits_not_provably_alike(%q: tensor<1x4x1x16xf32>, %k: tensor<1x4x1x16xf32>, %v2: tensor<1x4x2x16xf32>,
                                     %pk: tensor<1x4x7x16xf32>, %pv: tensor<1x4x6x16xf32>,
                                     %dk: tensor<1x4x?x16xf32>, %dv: tensor<1x4x?x16xf32>,
                                     %pdk: tensor<1x4x?x16xf32>, %pdv: tensor<1x4x?x16xf32>, %q8: tensor<1x4x8x16xf32>)
    -> (tensor<1x4x1x16xf32>, tensor<1x4x1x16xf32>, tensor<1x4x8x16xf32>) {
  %kc = kiln.concat %pk, %k {axis = 2 : i64} : (tensor<1x4x7x16xf32>, tensor<1x4x1x16xf32>) -> tensor<1x4x8x16xf32>
  %vc = kiln.concat %pv, %v2 {axis = 2 : i64} : (tensor<1x4x6x16xf32>, tensor<1x4x2x16xf32>) -> tensor<1x4x8x16xf32>
  %split = kiln.attention %q, %kc, %vc {scale = 0.25 : f32}
      : (tensor<1x4x1x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x1x16xf32>
  %dkc = kiln.concat %pdk, %dk {axis = 2 : i64} : (tensor<1x4x?x16xf32>, tensor<1x4x?x16xf32>) -> tensor<1x4x?x16xf32>
  %dvc = kiln.concat %pdv, %dv {axis = 2 : i64} : (tensor<1x4x?x16xf32>, tensor<1x4x?x16xf32>) -> tensor<1x4x?x16xf32>
  %unnamed = kiln.attention %q, %dkc, %dvc {scale = 0.25 : f32}
      : (tensor<1x4x1x16xf32>, tensor<1x4x?x16xf32>, tensor<1x4x?x16xf32>) -> tensor<1x4x1x16xf32>
  %kq = kiln.concat %pk, %k {axis = 2 : i64} : (tensor<1x4x7x16xf32>, tensor<1x4x1x16xf32>) -> tensor<1x4x8x16xf32>
  %vq = kiln.concat %pk, %k {axis = 2 : i64} : (tensor<1x4x7x16xf32>, tensor<1x4x1x16xf32>) -> tensor<1x4x8x16xf32>
  %selfQuery = kiln.attention %kq, %kq, %vq {scale = 0.25 : f32}
      : (tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  return %split, %unnamed, %selfQuery : tensor<1x4x1x16xf32>, tensor<1x4x1x16xf32>, tensor<1x4x8x16xf32>
}

// -----

// Tests torch's SDPA export: the scale split as sqrt(scale) on Q and on Kᵀ,
// a boolean mask turned into a -inf bias, and the NaN guard
// where(isnan(p), 0, p) on the weights. The op's output gets the guard
// instead (a fully masked row is NaN in the kernel as in the softmax).

// CHECK-LABEL: func.func @sdpa_export
//  CHECK-SAME: (%[[Q:.+]]: tensor<?x4x?x16xf32>, %[[K:.+]]: tensor<?x4x?x16xf32>, %[[V:.+]]: tensor<?x4x?x16xf32>, %[[BIAS:.+]]: tensor<?x1x?x?xf32>)
//       CHECK: %[[ZERO:.+]] = kiln.constant dense<0.000000e+00> : tensor<f32>
//       CHECK: %[[O:.+]] = kiln.attention %[[Q]], %[[K]], %[[V]] bias %[[BIAS]] {scale = 2.500000e-01 : f32}
//       CHECK: %[[NAN:.+]] = kiln.compare ne, %[[O]], %[[O]]
//       CHECK: %[[G:.+]] = kiln.where %[[NAN]], %[[ZERO]], %[[O]]
//   CHECK-NOT: kiln.softmax
//   CHECK-NOT: kiln.mul
//       CHECK: return %[[G]]
func.func @sdpa_export(%q: tensor<?x4x?x16xf32>, %k: tensor<?x4x?x16xf32>, %v: tensor<?x4x?x16xf32>,
                       %bias: tensor<?x1x?x?xf32>) -> tensor<?x4x?x16xf32> {
  %half = kiln.constant dense<0.5> : tensor<f32>
  %qs = kiln.mul %q, %half : (tensor<?x4x?x16xf32>, tensor<f32>) -> tensor<?x4x?x16xf32>
  %kt = kiln.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : (tensor<?x4x?x16xf32>) -> tensor<?x4x16x?xf32>
  %ks = kiln.mul %kt, %half : (tensor<?x4x16x?xf32>, tensor<f32>) -> tensor<?x4x16x?xf32>
  %s = kiln.matmul %qs, %ks : (tensor<?x4x?x16xf32>, tensor<?x4x16x?xf32>) -> tensor<?x4x?x?xf32>
  %a = kiln.add %s, %bias : (tensor<?x4x?x?xf32>, tensor<?x1x?x?xf32>) -> tensor<?x4x?x?xf32>
  %p = kiln.softmax %a {axis = 3 : i64} : tensor<?x4x?x?xf32>
  %nan = kiln.compare ne, %p, %p : (tensor<?x4x?x?xf32>, tensor<?x4x?x?xf32>) -> tensor<?x4x?x?xi1>
  %zero = kiln.constant dense<0.0> : tensor<f32>
  %g = kiln.where %nan, %zero, %p : (tensor<?x4x?x?xi1>, tensor<f32>, tensor<?x4x?x?xf32>) -> tensor<?x4x?x?xf32>
  %o = kiln.matmul %g, %v : (tensor<?x4x?x?xf32>, tensor<?x4x?x16xf32>) -> tensor<?x4x?x16xf32>
  return %o : tensor<?x4x?x16xf32>
}

// -----

// Tests that a where on the weights that is not the NaN guard (it fills 1,
// or compares against something else) stops the fusion.

// CHECK-LABEL: func.func @not_nan_guards
//   CHECK-NOT: kiln.attention
//       CHECK: kiln.softmax
//       CHECK: kiln.softmax
func.func @not_nan_guards(%q: tensor<1x4x8x16xf32>, %k: tensor<1x4x8x16xf32>, %v: tensor<1x4x8x16xf32>,
                          %other: tensor<1x4x8x8xf32>) -> (tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>) {
  %s = kiln.matmul %q, %k {transpose_b} : (tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x8x8xf32>
  %p = kiln.softmax %s {axis = 3 : i64} : tensor<1x4x8x8xf32>
  %nan = kiln.compare ne, %p, %p : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xi1>
  %one = kiln.constant dense<1.0> : tensor<f32>
  %g = kiln.where %nan, %one, %p : (tensor<1x4x8x8xi1>, tensor<f32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %o = kiln.matmul %g, %v : (tensor<1x4x8x8xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  %s2 = kiln.matmul %q, %k {transpose_b} : (tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x8x8xf32>
  %p2 = kiln.softmax %s2 {axis = 3 : i64} : tensor<1x4x8x8xf32>
  %ne = kiln.compare ne, %p2, %other : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xi1>
  %zero = kiln.constant dense<0.0> : tensor<f32>
  %g2 = kiln.where %ne, %zero, %p2 : (tensor<1x4x8x8xi1>, tensor<f32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %o2 = kiln.matmul %g2, %v : (tensor<1x4x8x8xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  return %o, %o2 : tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>
}

// -----

// Tests the dynamo exporter's Kᵀ: the heads folded into the batch, the last
// two dims swapped in 3-D, and the heads split out again. The key is read
// as it was before the folding.

// CHECK-LABEL: func.func @key_transposed_through_3d
//  CHECK-SAME: (%[[Q:.+]]: tensor<?x4x?x16xf32>, %[[K:.+]]: tensor<?x4x?x16xf32>, %[[V:.+]]: tensor<?x4x?x16xf32>)
//       CHECK: kiln.attention %[[Q]], %[[K]], %[[V]] {scale = 2.500000e-01 : f32}
//   CHECK-NOT: kiln.softmax
func.func @key_transposed_through_3d(%q: tensor<?x4x?x16xf32>, %k: tensor<?x4x?x16xf32>, %v: tensor<?x4x?x16xf32>) -> tensor<?x4x?x16xf32> {
  %shape = kiln.shape_of %k : tensor<?x4x?x16xf32> -> tensor<4xi64>
  %c0 = kiln.constant dense<0> : tensor<1xi64>
  %c1 = kiln.constant dense<1> : tensor<1xi64>
  %c2 = kiln.constant dense<2> : tensor<1xi64>
  %c3 = kiln.constant dense<3> : tensor<1xi64>
  %c4 = kiln.constant dense<4> : tensor<1xi64>
  %minus1 = kiln.constant dense<-1> : tensor<1xi64>
  %lengths = kiln.slice %shape[%c2 : %c3 : %c1] {axes = array<i64: 0>} : (tensor<4xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %depth = kiln.slice %shape[%c3 : %c4 : %c1] {axes = array<i64: 0>} : (tensor<4xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %heads = kiln.slice %shape[%c0 : %c2 : %c1] {axes = array<i64: 0>} : (tensor<4xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
  %flat = kiln.concat %minus1, %lengths, %depth {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  %k3 = kiln.reshape %k, %flat : (tensor<?x4x?x16xf32>, tensor<3xi64>) -> tensor<?x?x16xf32>
  %kt3 = kiln.transpose %k3 {permutation = array<i64: 0, 2, 1>} : (tensor<?x?x16xf32>) -> tensor<?x16x?xf32>
  %split = kiln.concat %heads, %depth, %lengths {axis = 0 : i64} : (tensor<2xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  %kt = kiln.reshape %kt3, %split : (tensor<?x16x?xf32>, tensor<4xi64>) -> tensor<?x4x16x?xf32>
  %s = kiln.matmul %q, %kt : (tensor<?x4x?x16xf32>, tensor<?x4x16x?xf32>) -> tensor<?x4x?x?xf32>
  %quarter = kiln.constant dense<0.25> : tensor<f32>
  %d = kiln.mul %s, %quarter : (tensor<?x4x?x?xf32>, tensor<f32>) -> tensor<?x4x?x?xf32>
  %p = kiln.softmax %d {axis = 3 : i64} : tensor<?x4x?x?xf32>
  %o = kiln.matmul %p, %v : (tensor<?x4x?x?xf32>, tensor<?x4x?x16xf32>) -> tensor<?x4x?x16xf32>
  return %o : tensor<?x4x?x16xf32>
}

// -----

// Tests that a 3-D round trip that splits the heads out differently from
// how they were folded in ([2, 4] to [8, 1]) is not taken for Kᵀ.

// CHECK-LABEL: func.func @flattened_key_split_differently
//   CHECK-NOT: kiln.attention
//       CHECK: kiln.softmax
func.func @flattened_key_split_differently(%q: tensor<8x1x?x16xf32>, %k: tensor<2x4x?x16xf32>, %v: tensor<8x1x?x16xf32>) -> tensor<8x1x?x16xf32> {
  %shape = kiln.shape_of %k : tensor<2x4x?x16xf32> -> tensor<4xi64>
  %c1 = kiln.constant dense<1> : tensor<1xi64>
  %c2 = kiln.constant dense<2> : tensor<1xi64>
  %c3 = kiln.constant dense<3> : tensor<1xi64>
  %c4 = kiln.constant dense<4> : tensor<1xi64>
  %c8 = kiln.constant dense<8> : tensor<1xi64>
  %minus1 = kiln.constant dense<-1> : tensor<1xi64>
  %lengths = kiln.slice %shape[%c2 : %c3 : %c1] {axes = array<i64: 0>} : (tensor<4xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %depth = kiln.slice %shape[%c3 : %c4 : %c1] {axes = array<i64: 0>} : (tensor<4xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %flat = kiln.concat %minus1, %lengths, %depth {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  %k3 = kiln.reshape %k, %flat : (tensor<2x4x?x16xf32>, tensor<3xi64>) -> tensor<8x?x16xf32>
  %kt3 = kiln.transpose %k3 {permutation = array<i64: 0, 2, 1>} : (tensor<8x?x16xf32>) -> tensor<8x16x?xf32>
  %split = kiln.concat %c8, %c1, %depth, %lengths {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  %kt = kiln.reshape %kt3, %split : (tensor<8x16x?xf32>, tensor<4xi64>) -> tensor<8x1x16x?xf32>
  %s = kiln.matmul %q, %kt : (tensor<8x1x?x16xf32>, tensor<8x1x16x?xf32>) -> tensor<8x1x?x?xf32>
  %p = kiln.softmax %s {axis = 3 : i64} : tensor<8x1x?x?xf32>
  %o = kiln.matmul %p, %v : (tensor<8x1x?x?xf32>, tensor<8x1x?x16xf32>) -> tensor<8x1x?x16xf32>
  return %o : tensor<8x1x?x16xf32>
}

// -----

// Tests nn.MultiheadAttention's batched attention over [B·H, T, D]: the
// scale divides Q, Kᵀ is K's [Tk, B·H, D] permuted to [B·H, D, Tk]. The op
// runs it as one batch entry of B·H heads: 3-D operands get a leading 1,
// the result loses it.

// CHECK-LABEL: func.func @batched_attention
//  CHECK-SAME: (%[[Q:.+]]: tensor<?x?x16xf32>, %[[KRAW:.+]]: tensor<?x?x16xf32>, %[[V:.+]]: tensor<?x?x16xf32>)
//       CHECK: %[[K:.+]] = kiln.transpose %[[KRAW]] {permutation = array<i64: 1, 0, 2>}
//       CHECK: %[[Q4:.+]] = kiln.unsqueeze %[[Q]] {axes = array<i64: 0>} : (tensor<?x?x16xf32>) -> tensor<1x?x?x16xf32>
//       CHECK: %[[K4:.+]] = kiln.unsqueeze %[[K]] {axes = array<i64: 0>}
//       CHECK: %[[V4:.+]] = kiln.unsqueeze %[[V]] {axes = array<i64: 0>}
//       CHECK: %[[O:.+]] = kiln.attention %[[Q4]], %[[K4]], %[[V4]] {scale = 2.500000e-01 : f32} : {{.*}} -> tensor<1x?x?x16xf32>
//       CHECK: %[[R:.+]] = kiln.squeeze %[[O]] {axes = array<i64: 0>} : (tensor<1x?x?x16xf32>) -> tensor<?x?x16xf32>
//   CHECK-NOT: kiln.softmax
//       CHECK: return %[[R]]
func.func @batched_attention(%q: tensor<?x?x16xf32>, %k: tensor<?x?x16xf32>, %v: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
  %c4 = kiln.constant dense<4.0> : tensor<f32>
  %qs = kiln.div %q, %c4 : (tensor<?x?x16xf32>, tensor<f32>) -> tensor<?x?x16xf32>
  %kt = kiln.transpose %k {permutation = array<i64: 1, 2, 0>} : (tensor<?x?x16xf32>) -> tensor<?x16x?xf32>
  %s = kiln.matmul %qs, %kt : (tensor<?x?x16xf32>, tensor<?x16x?xf32>) -> tensor<?x?x?xf32>
  %p = kiln.softmax %s {axis = 2 : i64} : tensor<?x?x?xf32>
  %o = kiln.matmul %p, %v : (tensor<?x?x?xf32>, tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
  return %o : tensor<?x?x16xf32>
}

// -----

// Tests that batched attention whose softmax is not over the keys (axis 1 of
// the 3-D scores) is left alone.

// CHECK-LABEL: func.func @batched_softmax_over_queries
//   CHECK-NOT: kiln.attention
//       CHECK: kiln.softmax
func.func @batched_softmax_over_queries(%q: tensor<4x8x16xf32>, %k: tensor<4x8x16xf32>, %v: tensor<4x8x16xf32>) -> tensor<4x8x16xf32> {
  %s = kiln.matmul %q, %k {transpose_b} : (tensor<4x8x16xf32>, tensor<4x8x16xf32>) -> tensor<4x8x8xf32>
  %p = kiln.softmax %s {axis = 1 : i64} : tensor<4x8x8xf32>
  %o = kiln.matmul %p, %v : (tensor<4x8x8xf32>, tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
  return %o : tensor<4x8x16xf32>
}

// -----

// Tests that a bias added to the scaled product beneath the where (BLOOM's
// masked_fill of ALiBi-biased scores) becomes the op's position_bias,
// applied before the keep mask, and that a padding mask above the where
// stays its bias.

// CHECK-LABEL: func.func @position_bias_beneath_mask
//  CHECK-SAME: (%[[Q:.+]]: tensor<?x4x?x16xf32>, %[[K:.+]]: tensor<?x4x?x16xf32>, %[[V:.+]]: tensor<?x4x?x16xf32>, %[[ALIBI:.+]]: tensor<?x4x1x?xf32>, %[[KEEP:.+]]: tensor<1x1x?x?xi1>, %[[MASK:.+]]: tensor<?x1x1x?xf32>)
//       CHECK: %[[O:.+]] = kiln.attention %[[Q]], %[[K]], %[[V]] position_bias %[[ALIBI]] keep %[[KEEP]] bias %[[MASK]]
//  CHECK-SAME: masked_value = -3.40282347E+38 : f32, scale = 2.500000e-01 : f32
//   CHECK-NOT: kiln.softmax
//       CHECK: return %[[O]]
func.func @position_bias_beneath_mask(%q: tensor<?x4x?x16xf32>, %k: tensor<?x4x?x16xf32>, %v: tensor<?x4x?x16xf32>,
                                      %alibi: tensor<?x4x1x?xf32>, %keep: tensor<1x1x?x?xi1>,
                                      %mask: tensor<?x1x1x?xf32>) -> tensor<?x4x?x16xf32> {
  %kt = kiln.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : (tensor<?x4x?x16xf32>) -> tensor<?x4x16x?xf32>
  %s = kiln.matmul %q, %kt : (tensor<?x4x?x16xf32>, tensor<?x4x16x?xf32>) -> tensor<?x4x?x?xf32>
  %c = kiln.constant dense<0.25> : tensor<f32>
  %scaled = kiln.mul %s, %c : (tensor<?x4x?x?xf32>, tensor<f32>) -> tensor<?x4x?x?xf32>
  %biased = kiln.add %scaled, %alibi : (tensor<?x4x?x?xf32>, tensor<?x4x1x?xf32>) -> tensor<?x4x?x?xf32>
  %min = kiln.constant dense<-3.40282347E+38> : tensor<f32>
  %w = kiln.where %keep, %biased, %min : (tensor<1x1x?x?xi1>, tensor<?x4x?x?xf32>, tensor<f32>) -> tensor<?x4x?x?xf32>
  %a = kiln.add %w, %mask : (tensor<?x4x?x?xf32>, tensor<?x1x1x?xf32>) -> tensor<?x4x?x?xf32>
  %p = kiln.softmax %a {axis = 3 : i64} : tensor<?x4x?x?xf32>
  %o = kiln.matmul %p, %v : (tensor<?x4x?x?xf32>, tensor<?x4x?x16xf32>) -> tensor<?x4x?x16xf32>
  return %o : tensor<?x4x?x16xf32>
}

// -----

// Tests that a scale above the position bias's add (Falcon's
// (scores + alibi) · inv_norm_factor) scales the bias too: the op gets the
// bias times 0.25, and the product's own scale times it.

// CHECK-LABEL: func.func @position_bias_scaled_above
//  CHECK-SAME: (%[[Q:.+]]: tensor<2x4x8x16xf32>, %[[K:.+]]: tensor<2x4x8x16xf32>, %[[V:.+]]: tensor<2x4x8x16xf32>, %[[ALIBI:.+]]: tensor<2x4x1x8xf32>, %[[MASK:.+]]: tensor<2x1x8x8xf32>)
//       CHECK: %[[QUARTER:.+]] = kiln.constant dense<2.500000e-01> : tensor<f32>
//       CHECK: %[[SCALED:.+]] = kiln.mul %[[ALIBI]], %[[QUARTER]] : (tensor<2x4x1x8xf32>, tensor<f32>) -> tensor<2x4x1x8xf32>
//       CHECK: %[[O:.+]] = kiln.attention %[[Q]], %[[K]], %[[V]] position_bias %[[SCALED]] bias %[[MASK]]
//  CHECK-SAME: scale = 1.250000e-01 : f32
//       CHECK: return %[[O]]
func.func @position_bias_scaled_above(%q: tensor<2x4x8x16xf32>, %k: tensor<2x4x8x16xf32>, %v: tensor<2x4x8x16xf32>,
                                      %alibi: tensor<2x4x1x8xf32>, %mask: tensor<2x1x8x8xf32>) -> tensor<2x4x8x16xf32> {
  %s = kiln.matmul %q, %k {transpose_b} : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x8xf32>
  %half = kiln.constant dense<0.5> : tensor<f32>
  %h = kiln.mul %s, %half : (tensor<2x4x8x8xf32>, tensor<f32>) -> tensor<2x4x8x8xf32>
  %biased = kiln.add %h, %alibi : (tensor<2x4x8x8xf32>, tensor<2x4x1x8xf32>) -> tensor<2x4x8x8xf32>
  %c4 = kiln.constant dense<4.0> : tensor<f32>
  %d = kiln.div %biased, %c4 : (tensor<2x4x8x8xf32>, tensor<f32>) -> tensor<2x4x8x8xf32>
  %a = kiln.add %d, %mask : (tensor<2x4x8x8xf32>, tensor<2x1x8x8xf32>) -> tensor<2x4x8x8xf32>
  %p = kiln.softmax %a {axis = 3 : i64} : tensor<2x4x8x8xf32>
  %o = kiln.matmul %p, %v : (tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  return %o : tensor<2x4x8x16xf32>
}

// -----

// Tests that a position bias whose add broadcasts the product (to the
// bias's batch of 2) is not fused: the fused op would drop that broadcast.

// CHECK-LABEL: func.func @position_bias_grows_scores
//   CHECK-NOT: kiln.attention
//       CHECK: kiln.softmax
func.func @position_bias_grows_scores(%q: tensor<1x4x8x16xf32>, %k: tensor<1x4x8x16xf32>, %v: tensor<2x4x8x16xf32>,
                                      %alibi: tensor<2x4x1x8xf32>) -> tensor<2x4x8x16xf32> {
  %s = kiln.matmul %q, %k {transpose_b} : (tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x8x8xf32>
  %biased = kiln.add %s, %alibi : (tensor<1x4x8x8xf32>, tensor<2x4x1x8xf32>) -> tensor<2x4x8x8xf32>
  %p = kiln.softmax %biased {axis = 3 : i64} : tensor<2x4x8x8xf32>
  %o = kiln.matmul %p, %v : (tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  return %o : tensor<2x4x8x16xf32>
}

// -----

// Tests BLOOM's attention: the products run on the heads folded into the
// batch ([B·4, T, 16], reshaped from the [B, 4, T, 16] query, key and
// value), the ALiBi bias [B·4, 1, Tk] is added to the scaled product, the
// sum is unfolded to [B, 4, Tq, Tk] for the padding mask and the softmax,
// and the weights are folded again for the product by V. The fused op runs
// on the [B, 4, T, 16] tensors, the bias unfolded to [B, 4, 1, Tk] by a new
// reshape, and its result is folded back to the [B·4, Tq, 16] that the
// product gave.

// CHECK-LABEL: func.func @folded_heads
//  CHECK-SAME: (%[[Q:.+]]: tensor<?x4x?x16xf32>, %[[K:.+]]: tensor<?x4x?x16xf32>, %[[V:.+]]: tensor<?x4x?x16xf32>, %[[ALIBI:.+]]: tensor<?x1x?xf32>, %[[MASK:.+]]: tensor<?x1x?x?xf32>)
//   CHECK-DAG: %[[MINUS1:.+]] = kiln.constant dense<-1> : tensor<1xi64>
//   CHECK-DAG: %[[HEADS:.+]] = kiln.constant dense<4> : tensor<1xi64>
//   CHECK-DAG: %[[ONE:.+]] = kiln.constant dense<1> : tensor<1xi64>
//       CHECK: %[[TK:.+]] = kiln.dim %[[ALIBI]] {index = 2 : i64}
//       CHECK: %[[TKU:.+]] = kiln.unsqueeze %[[TK]]
//       CHECK: %[[SHAPE:.+]] = kiln.concat %[[MINUS1]], %[[HEADS]], %[[ONE]], %[[TKU]] {axis = 0 : i64}
//       CHECK: %[[ALIBI4:.+]] = kiln.reshape %[[ALIBI]], %[[SHAPE]] : (tensor<?x1x?xf32>, tensor<4xi64>) -> tensor<?x4x1x?xf32>
//       CHECK: %[[O:.+]] = kiln.attention %[[Q]], %[[K]], %[[V]] position_bias %[[ALIBI4]] bias %[[MASK]] {scale = 2.500000e-01 : f32}
//       CHECK: %[[B:.+]] = kiln.dim %[[O]] {index = 0 : i64}
//       CHECK: %[[BH:.+]] = kiln.mul %[[B]], %{{.+}} : (tensor<i64>, tensor<i64>) -> tensor<i64>
//       CHECK: %[[BHU:.+]] = kiln.unsqueeze %[[BH]]
//       CHECK: %[[T:.+]] = kiln.dim %[[O]] {index = 2 : i64}
//       CHECK: %[[TU:.+]] = kiln.unsqueeze %[[T]]
//       CHECK: %[[FOLD:.+]] = kiln.concat %[[BHU]], %[[TU]], %{{.+}} {axis = 0 : i64}
//       CHECK: %[[O3:.+]] = kiln.reshape %[[O]], %[[FOLD]] : (tensor<?x4x?x16xf32>, tensor<3xi64>) -> tensor<?x?x16xf32>
//   CHECK-NOT: kiln.softmax
//   CHECK-NOT: kiln.matmul
//       CHECK: return %[[O3]]
func.func @folded_heads(%q: tensor<?x4x?x16xf32>, %k: tensor<?x4x?x16xf32>, %v: tensor<?x4x?x16xf32>,
                        %alibi: tensor<?x1x?xf32>, %mask: tensor<?x1x?x?xf32>) -> tensor<?x?x16xf32> {
  %four = kiln.constant dense<4> : tensor<i64>
  %heads = kiln.constant dense<4> : tensor<1xi64>
  %sixteen = kiln.constant dense<16> : tensor<1xi64>
  %minus1 = kiln.constant dense<-1> : tensor<1xi64>
  // [B·4, T, 16] of each of Q, K and V, from its own dims.
  %qb = kiln.dim %q {index = 0 : i64} : tensor<?x4x?x16xf32> -> tensor<i64>
  %qbh = kiln.mul %qb, %four : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %qbhu = kiln.unsqueeze %qbh {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %qt = kiln.dim %q {index = 2 : i64} : tensor<?x4x?x16xf32> -> tensor<i64>
  %qtu = kiln.unsqueeze %qt {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %qshape = kiln.concat %qbhu, %qtu, %sixteen {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  %q3 = kiln.reshape %q, %qshape : (tensor<?x4x?x16xf32>, tensor<3xi64>) -> tensor<?x?x16xf32>
  %kb = kiln.dim %k {index = 0 : i64} : tensor<?x4x?x16xf32> -> tensor<i64>
  %kbh = kiln.mul %kb, %four : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %kbhu = kiln.unsqueeze %kbh {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %kt = kiln.dim %k {index = 2 : i64} : tensor<?x4x?x16xf32> -> tensor<i64>
  %ktu = kiln.unsqueeze %kt {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %kshape = kiln.concat %kbhu, %ktu, %sixteen {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  %k3 = kiln.reshape %k, %kshape : (tensor<?x4x?x16xf32>, tensor<3xi64>) -> tensor<?x?x16xf32>
  %vb = kiln.dim %v {index = 0 : i64} : tensor<?x4x?x16xf32> -> tensor<i64>
  %vbh = kiln.mul %vb, %four : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %vbhu = kiln.unsqueeze %vbh {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %vt = kiln.dim %v {index = 2 : i64} : tensor<?x4x?x16xf32> -> tensor<i64>
  %vtu = kiln.unsqueeze %vt {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %vshape = kiln.concat %vbhu, %vtu, %sixteen {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  %v3 = kiln.reshape %v, %vshape : (tensor<?x4x?x16xf32>, tensor<3xi64>) -> tensor<?x?x16xf32>
  // baddbmm: alibi + 0.25 · Q·Kᵀ on the folded heads.
  %k3t = kiln.transpose %k3 {permutation = array<i64: 0, 2, 1>} : (tensor<?x?x16xf32>) -> tensor<?x16x?xf32>
  %s = kiln.matmul %q3, %k3t : (tensor<?x?x16xf32>, tensor<?x16x?xf32>) -> tensor<?x?x?xf32>
  %c = kiln.constant dense<0.25> : tensor<f32>
  %scaled = kiln.mul %s, %c : (tensor<?x?x?xf32>, tensor<f32>) -> tensor<?x?x?xf32>
  %one = kiln.constant dense<1.0> : tensor<f32>
  %beta = kiln.mul %alibi, %one : (tensor<?x1x?xf32>, tensor<f32>) -> tensor<?x1x?xf32>
  %biased = kiln.add %scaled, %beta : (tensor<?x?x?xf32>, tensor<?x1x?xf32>) -> tensor<?x?x?xf32>
  // view(B, 4, Tq, -1), with the -1 written out as kiln-fold-constants does.
  %qbu = kiln.unsqueeze %qb {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %tk = kiln.dim %biased {index = 2 : i64} : tensor<?x?x?xf32> -> tensor<i64>
  %tku = kiln.unsqueeze %tk {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %unfold = kiln.concat %qbu, %heads, %qtu, %tku {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  %s4 = kiln.reshape %biased, %unfold : (tensor<?x?x?xf32>, tensor<4xi64>) -> tensor<?x4x?x?xf32>
  %a = kiln.add %s4, %mask : (tensor<?x4x?x?xf32>, tensor<?x1x?x?xf32>) -> tensor<?x4x?x?xf32>
  %p = kiln.softmax %a {axis = 3 : i64} : tensor<?x4x?x?xf32>
  // view(B·4, Tq, -1)
  %fold = kiln.concat %qbhu, %qtu, %minus1 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  %p3 = kiln.reshape %p, %fold : (tensor<?x4x?x?xf32>, tensor<3xi64>) -> tensor<?x?x?xf32>
  %o = kiln.matmul %p3, %v3 : (tensor<?x?x?xf32>, tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
  return %o : tensor<?x?x16xf32>
}

// -----

// Tests that weights folded back by shape entries that do not keep the
// scores' dims are not fused: B·4 is provably the batch times the heads,
// but the key length stands where the query length was, which deals the
// weights out to other rows.

// CHECK-LABEL: func.func @folded_heads_weights_regrouped
//       CHECK: kiln.softmax
//   CHECK-NOT: kiln.attention
func.func @folded_heads_weights_regrouped(%q3: tensor<?x?x16xf32>, %k3: tensor<?x?x16xf32>, %v3: tensor<?x?x16xf32>,
                                          %batch: tensor<?xi64>) -> tensor<?x?x16xf32> {
  %b = kiln.dim %batch {index = 0 : i64} : tensor<?xi64> -> tensor<i64>
  %four = kiln.constant dense<4> : tensor<i64>
  %heads = kiln.constant dense<4> : tensor<1xi64>
  %minus1 = kiln.constant dense<-1> : tensor<1xi64>
  %k3t = kiln.transpose %k3 {permutation = array<i64: 0, 2, 1>} : (tensor<?x?x16xf32>) -> tensor<?x16x?xf32>
  %s = kiln.matmul %q3, %k3t : (tensor<?x?x16xf32>, tensor<?x16x?xf32>) -> tensor<?x?x?xf32>
  %bu = kiln.unsqueeze %b {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %tqd = kiln.dim %s {index = 1 : i64} : tensor<?x?x?xf32> -> tensor<i64>
  %tqu = kiln.unsqueeze %tqd {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %tkd = kiln.dim %s {index = 2 : i64} : tensor<?x?x?xf32> -> tensor<i64>
  %tku = kiln.unsqueeze %tkd {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %unfold = kiln.concat %bu, %heads, %tqu, %tku {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  %s4 = kiln.reshape %s, %unfold : (tensor<?x?x?xf32>, tensor<4xi64>) -> tensor<?x4x?x?xf32>
  %p = kiln.softmax %s4 {axis = 3 : i64} : tensor<?x4x?x?xf32>
  %bh = kiln.mul %b, %four : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %bhu = kiln.unsqueeze %bh {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %fold = kiln.concat %bhu, %tku, %minus1 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  %p3 = kiln.reshape %p, %fold : (tensor<?x4x?x?xf32>, tensor<3xi64>) -> tensor<?x?x?xf32>
  %o = kiln.matmul %p3, %v3 : (tensor<?x?x?xf32>, tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
  return %o : tensor<?x?x16xf32>
}

// -----

// Tests masked_fill's orientation, where(masked, fill, scores) (MPT, and
// BLOOM before transformers 4.45): the op keeps where the condition does
// not hold. MPT's ALiBi bias is added before the fill.

// CHECK-LABEL: func.func @masked_fill
//  CHECK-SAME: (%[[Q:.+]]: tensor<?x4x?x16xf32>, %[[K:.+]]: tensor<?x4x?x16xf32>, %[[V:.+]]: tensor<?x4x?x16xf32>, %[[ALIBI:.+]]: tensor<1x4x1x?xf32>, %[[MASKED:.+]]: tensor<?x1x?x?xi1>)
//       CHECK: %[[KEEP:.+]] = kiln.not %[[MASKED]] : tensor<?x1x?x?xi1>
//       CHECK: %[[O:.+]] = kiln.attention %[[Q]], %[[K]], %[[V]] position_bias %[[ALIBI]] keep %[[KEEP]]
//  CHECK-SAME: masked_value = -3.40282347E+38 : f32, scale = 2.500000e-01 : f32
//       CHECK: return %[[O]]
func.func @masked_fill(%q: tensor<?x4x?x16xf32>, %k: tensor<?x4x?x16xf32>, %v: tensor<?x4x?x16xf32>,
                       %alibi: tensor<1x4x1x?xf32>, %masked: tensor<?x1x?x?xi1>) -> tensor<?x4x?x16xf32> {
  %s = kiln.matmul %q, %k {transpose_b} : (tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>) -> tensor<?x4x?x?xf32>
  %c = kiln.constant dense<0.25> : tensor<f32>
  %scaled = kiln.mul %s, %c : (tensor<?x4x?x?xf32>, tensor<f32>) -> tensor<?x4x?x?xf32>
  %biased = kiln.add %scaled, %alibi : (tensor<?x4x?x?xf32>, tensor<1x4x1x?xf32>) -> tensor<?x4x?x?xf32>
  %min = kiln.constant dense<-3.40282347E+38> : tensor<f32>
  %w = kiln.where %masked, %min, %biased : (tensor<?x1x?x?xi1>, tensor<f32>, tensor<?x4x?x?xf32>) -> tensor<?x4x?x?xf32>
  %p = kiln.softmax %w {axis = 3 : i64} : tensor<?x4x?x?xf32>
  %o = kiln.matmul %p, %v : (tensor<?x4x?x?xf32>, tensor<?x4x?x16xf32>) -> tensor<?x4x?x16xf32>
  return %o : tensor<?x4x?x16xf32>
}

// -----

// Tests that products on a static batch of folded heads that is not a whole
// number of [B, 4] groups (6) are not fused: the unfused reshape fails at
// run time, and no unfolded type could hold the six.

// CHECK-LABEL: func.func @folded_heads_partial_group
//   CHECK-NOT: kiln.attention
//       CHECK: kiln.softmax
func.func @folded_heads_partial_group(%q3: tensor<6x?x16xf32>, %k3: tensor<6x?x16xf32>, %v3: tensor<6x?x16xf32>,
                                      %batch: tensor<?xi64>) -> tensor<6x?x16xf32> {
  %b = kiln.dim %batch {index = 0 : i64} : tensor<?xi64> -> tensor<i64>
  %four = kiln.constant dense<4> : tensor<i64>
  %heads = kiln.constant dense<4> : tensor<1xi64>
  %minus1 = kiln.constant dense<-1> : tensor<1xi64>
  %k3t = kiln.transpose %k3 {permutation = array<i64: 0, 2, 1>} : (tensor<6x?x16xf32>) -> tensor<6x16x?xf32>
  %s = kiln.matmul %q3, %k3t : (tensor<6x?x16xf32>, tensor<6x16x?xf32>) -> tensor<6x?x?xf32>
  %bu = kiln.unsqueeze %b {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %tqd = kiln.dim %s {index = 1 : i64} : tensor<6x?x?xf32> -> tensor<i64>
  %tqu = kiln.unsqueeze %tqd {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %tkd = kiln.dim %s {index = 2 : i64} : tensor<6x?x?xf32> -> tensor<i64>
  %tku = kiln.unsqueeze %tkd {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %unfold = kiln.concat %bu, %heads, %tqu, %tku {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  %s4 = kiln.reshape %s, %unfold : (tensor<6x?x?xf32>, tensor<4xi64>) -> tensor<?x4x?x?xf32>
  %p = kiln.softmax %s4 {axis = 3 : i64} : tensor<?x4x?x?xf32>
  %bh = kiln.mul %b, %four : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %bhu = kiln.unsqueeze %bh {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %fold = kiln.concat %bhu, %tqu, %minus1 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  %p3 = kiln.reshape %p, %fold : (tensor<?x4x?x?xf32>, tensor<3xi64>) -> tensor<?x?x?xf32>
  %o = kiln.matmul %p3, %v3 : (tensor<?x?x?xf32>, tensor<6x?x16xf32>) -> tensor<6x?x16xf32>
  return %o : tensor<6x?x16xf32>
}
