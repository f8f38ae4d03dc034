// RUN: kiln-opt %s --split-input-file | FileCheck %s
// RUN: kiln-opt %s --split-input-file | kiln-opt --split-input-file | FileCheck %s
// RUN: kiln-opt %s --split-input-file --mlir-print-op-generic | kiln-opt --split-input-file | FileCheck %s

// Tests that the kiln.dims and kiln.name attributes on function arguments and
// results round-trip, with "" for the static dimensions.

// CHECK-LABEL: func.func @value_attributes
// CHECK-SAME: (%[[IDS:[a-zA-Z0-9_]+]]: tensor<?x?xi64> {kiln.dims = ["batch", "sequence"], kiln.name = "input_ids"},
// CHECK-SAME: %[[MASK:[a-zA-Z0-9_]+]]: tensor<?x1x?x16xi1> {kiln.dims = ["batch", "", "sequence", ""], kiln.name = "mask"},
// CHECK-SAME: %{{.*}}: tensor<4xf32> {kiln.name = "bias"})
// CHECK-SAME: -> (tensor<?x?xi64> {kiln.dims = ["batch", "sequence"], kiln.name = "ids_out"}, tensor<?x1x?x16xi1>)
// CHECK: return %[[IDS]], %[[MASK]] : tensor<?x?xi64>, tensor<?x1x?x16xi1>
func.func @value_attributes(
    %ids: tensor<?x?xi64> {kiln.dims = ["batch", "sequence"], kiln.name = "input_ids"},
    %mask: tensor<?x1x?x16xi1> {kiln.dims = ["batch", "", "sequence", ""], kiln.name = "mask"},
    %bias: tensor<4xf32> {kiln.name = "bias"})
    -> (tensor<?x?xi64> {kiln.dims = ["batch", "sequence"], kiln.name = "ids_out"},
        tensor<?x1x?x16xi1>) {
  return %ids, %mask : tensor<?x?xi64>, tensor<?x1x?x16xi1>
}

// -----

// Tests that every float-only unary op round-trips, across the float element
// types and with dynamic dimensions.

// CHECK-LABEL: func.func @unary_float
// CHECK-SAME: (%[[A:[a-zA-Z0-9_]+]]: tensor<?x128xf32>, %[[B:[a-zA-Z0-9_]+]]: tensor<2x?xf16>, %[[C:[a-zA-Z0-9_]+]]: tensor<?xbf16>, %[[D:[a-zA-Z0-9_]+]]: tensor<f64>)
// CHECK: %[[EXP:[a-zA-Z0-9_]+]] = kiln.exp %[[A]] : tensor<?x128xf32>
// CHECK: %[[LOG:[a-zA-Z0-9_]+]] = kiln.log %[[EXP]] : tensor<?x128xf32>
// CHECK: %[[SQRT:[a-zA-Z0-9_]+]] = kiln.sqrt %[[LOG]] : tensor<?x128xf32>
// CHECK: %[[RSQRT:[a-zA-Z0-9_]+]] = kiln.rsqrt %[[SQRT]] : tensor<?x128xf32>
// CHECK: %[[RECIP:[a-zA-Z0-9_]+]] = kiln.reciprocal %[[RSQRT]] : tensor<?x128xf32>
// CHECK: %[[ERF:[a-zA-Z0-9_]+]] = kiln.erf %[[B]] : tensor<2x?xf16>
// CHECK: %[[TANH:[a-zA-Z0-9_]+]] = kiln.tanh %[[ERF]] : tensor<2x?xf16>
// CHECK: %[[SIGMOID:[a-zA-Z0-9_]+]] = kiln.sigmoid %[[C]] : tensor<?xbf16>
// CHECK: %[[SILU:[a-zA-Z0-9_]+]] = kiln.silu %[[SIGMOID]] : tensor<?xbf16>
// CHECK: %[[COS:[a-zA-Z0-9_]+]] = kiln.cos %[[D]] : tensor<f64>
// CHECK: %[[SIN:[a-zA-Z0-9_]+]] = kiln.sin %[[COS]] : tensor<f64>
// CHECK: return %[[RECIP]], %[[TANH]], %[[SILU]], %[[SIN]]
func.func @unary_float(%a: tensor<?x128xf32>, %b: tensor<2x?xf16>, %c: tensor<?xbf16>, %d: tensor<f64>)
    -> (tensor<?x128xf32>, tensor<2x?xf16>, tensor<?xbf16>, tensor<f64>) {
  %exp = kiln.exp %a : tensor<?x128xf32>
  %log = kiln.log %exp : tensor<?x128xf32>
  %sqrt = kiln.sqrt %log : tensor<?x128xf32>
  %rsqrt = kiln.rsqrt %sqrt : tensor<?x128xf32>
  %recip = kiln.reciprocal %rsqrt : tensor<?x128xf32>
  %erf = kiln.erf %b : tensor<2x?xf16>
  %tanh = kiln.tanh %erf : tensor<2x?xf16>
  %sigmoid = kiln.sigmoid %c : tensor<?xbf16>
  %silu = kiln.silu %sigmoid : tensor<?xbf16>
  %cos = kiln.cos %d : tensor<f64>
  %sin = kiln.sin %cos : tensor<f64>
  return %recip, %tanh, %silu, %sin : tensor<?x128xf32>, tensor<2x?xf16>, tensor<?xbf16>, tensor<f64>
}

// -----

// Tests that the trigonometric and hyperbolic ops round-trip.

// CHECK-LABEL: func.func @unary_trigonometric
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<?x8xf32>)
// CHECK: %[[TAN:[a-zA-Z0-9_]+]] = kiln.tan %[[X]] : tensor<?x8xf32>
// CHECK: %[[ASIN:[a-zA-Z0-9_]+]] = kiln.asin %[[TAN]] : tensor<?x8xf32>
// CHECK: %[[ACOS:[a-zA-Z0-9_]+]] = kiln.acos %[[ASIN]] : tensor<?x8xf32>
// CHECK: %[[ATAN:[a-zA-Z0-9_]+]] = kiln.atan %[[ACOS]] : tensor<?x8xf32>
// CHECK: %[[SINH:[a-zA-Z0-9_]+]] = kiln.sinh %[[ATAN]] : tensor<?x8xf32>
// CHECK: %[[COSH:[a-zA-Z0-9_]+]] = kiln.cosh %[[SINH]] : tensor<?x8xf32>
// CHECK: %[[ASINH:[a-zA-Z0-9_]+]] = kiln.asinh %[[COSH]] : tensor<?x8xf32>
// CHECK: %[[ACOSH:[a-zA-Z0-9_]+]] = kiln.acosh %[[ASINH]] : tensor<?x8xf32>
// CHECK: %[[ATANH:[a-zA-Z0-9_]+]] = kiln.atanh %[[ACOSH]] : tensor<?x8xf32>
// CHECK: return %[[ATANH]]
func.func @unary_trigonometric(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %tan = kiln.tan %x : tensor<?x8xf32>
  %asin = kiln.asin %tan : tensor<?x8xf32>
  %acos = kiln.acos %asin : tensor<?x8xf32>
  %atan = kiln.atan %acos : tensor<?x8xf32>
  %sinh = kiln.sinh %atan : tensor<?x8xf32>
  %cosh = kiln.cosh %sinh : tensor<?x8xf32>
  %asinh = kiln.asinh %cosh : tensor<?x8xf32>
  %acosh = kiln.acosh %asinh : tensor<?x8xf32>
  %atanh = kiln.atanh %acosh : tensor<?x8xf32>
  return %atanh : tensor<?x8xf32>
}

// -----

// Tests that the exact GELU prints without an attribute and the tanh
// approximation keeps its unit attribute.

// CHECK-LABEL: func.func @gelu
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<?x?x3072xf32>)
// CHECK: %[[EXACT:[a-zA-Z0-9_]+]] = kiln.gelu %[[X]] : tensor<?x?x3072xf32>
// CHECK: %[[TANH:[a-zA-Z0-9_]+]] = kiln.gelu %[[EXACT]] {tanh_approximation} : tensor<?x?x3072xf32>
// CHECK: return %[[TANH]]
func.func @gelu(%x: tensor<?x?x3072xf32>) -> tensor<?x?x3072xf32> {
  %exact = kiln.gelu %x : tensor<?x?x3072xf32>
  %tanh = kiln.gelu %exact {tanh_approximation} : tensor<?x?x3072xf32>
  return %tanh : tensor<?x?x3072xf32>
}

// -----

// Tests that neg, abs and relu accept both float and integer tensors, and that
// not works on i1.

// CHECK-LABEL: func.func @unary_numeric
// CHECK-SAME: (%[[F:[a-zA-Z0-9_]+]]: tensor<?x4xf32>, %[[I32:[a-zA-Z0-9_]+]]: tensor<8xi32>, %[[I8:[a-zA-Z0-9_]+]]: tensor<?xi8>, %[[I4:[a-zA-Z0-9_]+]]: tensor<2x2xi4>, %[[B:[a-zA-Z0-9_]+]]: tensor<?x?xi1>)
// CHECK-DAG: %{{.*}} = kiln.neg %[[F]] : tensor<?x4xf32>
// CHECK-DAG: %{{.*}} = kiln.neg %[[I32]] : tensor<8xi32>
// CHECK-DAG: %{{.*}} = kiln.abs %[[I8]] : tensor<?xi8>
// CHECK-DAG: %{{.*}} = kiln.relu %[[I4]] : tensor<2x2xi4>
// CHECK-DAG: %{{.*}} = kiln.not %[[B]] : tensor<?x?xi1>
func.func @unary_numeric(%f: tensor<?x4xf32>, %i32: tensor<8xi32>, %i8: tensor<?xi8>,
                         %i4: tensor<2x2xi4>, %b: tensor<?x?xi1>)
    -> (tensor<?x4xf32>, tensor<8xi32>, tensor<?xi8>, tensor<2x2xi4>, tensor<?x?xi1>) {
  %0 = kiln.neg %f : tensor<?x4xf32>
  %1 = kiln.neg %i32 : tensor<8xi32>
  %2 = kiln.abs %i8 : tensor<?xi8>
  %3 = kiln.relu %i4 : tensor<2x2xi4>
  %4 = kiln.not %b : tensor<?x?xi1>
  return %0, %1, %2, %3, %4 : tensor<?x4xf32>, tensor<8xi32>, tensor<?xi8>, tensor<2x2xi4>, tensor<?x?xi1>
}

// -----

// Tests that the arithmetic binary ops round-trip with broadcasting operands.

// CHECK-LABEL: func.func @arithmetic
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<?x128xf32>, %[[Y:[a-zA-Z0-9_]+]]: tensor<128xf32>, %[[S:[a-zA-Z0-9_]+]]: tensor<f32>, %[[I:[a-zA-Z0-9_]+]]: tensor<?x1xi64>, %[[J:[a-zA-Z0-9_]+]]: tensor<1x8xi64>)
// CHECK: %[[ADD:[a-zA-Z0-9_]+]] = kiln.add %[[X]], %[[Y]] : (tensor<?x128xf32>, tensor<128xf32>) -> tensor<?x128xf32>
// CHECK: %[[SUB:[a-zA-Z0-9_]+]] = kiln.sub %[[ADD]], %[[S]] : (tensor<?x128xf32>, tensor<f32>) -> tensor<?x128xf32>
// CHECK: %[[MUL:[a-zA-Z0-9_]+]] = kiln.mul %[[S]], %[[SUB]] : (tensor<f32>, tensor<?x128xf32>) -> tensor<?x128xf32>
// CHECK: %[[DIV:[a-zA-Z0-9_]+]] = kiln.div %[[MUL]], %[[X]] : (tensor<?x128xf32>, tensor<?x128xf32>) -> tensor<?x128xf32>
// CHECK: %[[POW:[a-zA-Z0-9_]+]] = kiln.pow %[[DIV]], %[[S]] : (tensor<?x128xf32>, tensor<f32>) -> tensor<?x128xf32>
// CHECK: %[[MAX:[a-zA-Z0-9_]+]] = kiln.max %[[I]], %[[J]] : (tensor<?x1xi64>, tensor<1x8xi64>) -> tensor<?x8xi64>
// CHECK: %[[MIN:[a-zA-Z0-9_]+]] = kiln.min %[[MAX]], %[[J]] : (tensor<?x8xi64>, tensor<1x8xi64>) -> tensor<?x8xi64>
// CHECK: return %[[POW]], %[[MIN]]
func.func @arithmetic(%x: tensor<?x128xf32>, %y: tensor<128xf32>, %s: tensor<f32>,
                      %i: tensor<?x1xi64>, %j: tensor<1x8xi64>) -> (tensor<?x128xf32>, tensor<?x8xi64>) {
  %add = kiln.add %x, %y : (tensor<?x128xf32>, tensor<128xf32>) -> tensor<?x128xf32>
  %sub = kiln.sub %add, %s : (tensor<?x128xf32>, tensor<f32>) -> tensor<?x128xf32>
  %mul = kiln.mul %s, %sub : (tensor<f32>, tensor<?x128xf32>) -> tensor<?x128xf32>
  %div = kiln.div %mul, %x : (tensor<?x128xf32>, tensor<?x128xf32>) -> tensor<?x128xf32>
  %pow = kiln.pow %div, %s : (tensor<?x128xf32>, tensor<f32>) -> tensor<?x128xf32>
  %max = kiln.max %i, %j : (tensor<?x1xi64>, tensor<1x8xi64>) -> tensor<?x8xi64>
  %min = kiln.min %max, %j : (tensor<?x8xi64>, tensor<1x8xi64>) -> tensor<?x8xi64>
  return %pow, %min : tensor<?x128xf32>, tensor<?x8xi64>
}

// -----

// Tests that the logical binary ops round-trip on i1 tensors.

// CHECK-LABEL: func.func @logical
// CHECK-SAME: (%[[A:[a-zA-Z0-9_]+]]: tensor<?x?xi1>, %[[B:[a-zA-Z0-9_]+]]: tensor<1x?xi1>)
// CHECK: %[[AND:[a-zA-Z0-9_]+]] = kiln.and %[[A]], %[[B]] : (tensor<?x?xi1>, tensor<1x?xi1>) -> tensor<?x?xi1>
// CHECK: %[[OR:[a-zA-Z0-9_]+]] = kiln.or %[[AND]], %[[A]] : (tensor<?x?xi1>, tensor<?x?xi1>) -> tensor<?x?xi1>
// CHECK: %[[XOR:[a-zA-Z0-9_]+]] = kiln.xor %[[OR]], %[[B]] : (tensor<?x?xi1>, tensor<1x?xi1>) -> tensor<?x?xi1>
// CHECK: return %[[XOR]]
func.func @logical(%a: tensor<?x?xi1>, %b: tensor<1x?xi1>) -> tensor<?x?xi1> {
  %and = kiln.and %a, %b : (tensor<?x?xi1>, tensor<1x?xi1>) -> tensor<?x?xi1>
  %or = kiln.or %and, %a : (tensor<?x?xi1>, tensor<?x?xi1>) -> tensor<?x?xi1>
  %xor = kiln.xor %or, %b : (tensor<?x?xi1>, tensor<1x?xi1>) -> tensor<?x?xi1>
  return %xor : tensor<?x?xi1>
}

// -----

// Tests that compare round-trips with each of its six predicates.

// CHECK-LABEL: func.func @compare
// CHECK-SAME: (%[[A:[a-zA-Z0-9_]+]]: tensor<?x8xi64>, %[[B:[a-zA-Z0-9_]+]]: tensor<i64>, %[[F:[a-zA-Z0-9_]+]]: tensor<4xf16>)
// CHECK: kiln.compare eq, %[[A]], %[[B]] : (tensor<?x8xi64>, tensor<i64>) -> tensor<?x8xi1>
// CHECK: kiln.compare ne, %[[A]], %[[B]] : (tensor<?x8xi64>, tensor<i64>) -> tensor<?x8xi1>
// CHECK: kiln.compare lt, %[[A]], %[[B]] : (tensor<?x8xi64>, tensor<i64>) -> tensor<?x8xi1>
// CHECK: kiln.compare le, %[[B]], %[[A]] : (tensor<i64>, tensor<?x8xi64>) -> tensor<?x8xi1>
// CHECK: kiln.compare gt, %[[F]], %[[F]] : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xi1>
// CHECK: kiln.compare ge, %[[F]], %[[F]] : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xi1>
func.func @compare(%a: tensor<?x8xi64>, %b: tensor<i64>, %f: tensor<4xf16>)
    -> (tensor<?x8xi1>, tensor<?x8xi1>, tensor<?x8xi1>, tensor<?x8xi1>, tensor<4xi1>, tensor<4xi1>) {
  %eq = kiln.compare eq, %a, %b : (tensor<?x8xi64>, tensor<i64>) -> tensor<?x8xi1>
  %ne = kiln.compare ne, %a, %b : (tensor<?x8xi64>, tensor<i64>) -> tensor<?x8xi1>
  %lt = kiln.compare lt, %a, %b : (tensor<?x8xi64>, tensor<i64>) -> tensor<?x8xi1>
  %le = kiln.compare le, %b, %a : (tensor<i64>, tensor<?x8xi64>) -> tensor<?x8xi1>
  %gt = kiln.compare gt, %f, %f : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xi1>
  %ge = kiln.compare ge, %f, %f : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xi1>
  return %eq, %ne, %lt, %le, %gt, %ge
      : tensor<?x8xi1>, tensor<?x8xi1>, tensor<?x8xi1>, tensor<?x8xi1>, tensor<4xi1>, tensor<4xi1>
}

// -----

// Tests that where round-trips with three operands that broadcast.

// CHECK-LABEL: func.func @where
// CHECK-SAME: (%[[MASK:[a-zA-Z0-9_]+]]: tensor<1x1x?x?xi1>, %[[SCORES:[a-zA-Z0-9_]+]]: tensor<?x4x?x?xf32>, %[[NEG:[a-zA-Z0-9_]+]]: tensor<f32>)
// CHECK: %[[Y:[a-zA-Z0-9_]+]] = kiln.where %[[MASK]], %[[SCORES]], %[[NEG]] : (tensor<1x1x?x?xi1>, tensor<?x4x?x?xf32>, tensor<f32>) -> tensor<?x4x?x?xf32>
// CHECK: return %[[Y]]
func.func @where(%mask: tensor<1x1x?x?xi1>, %scores: tensor<?x4x?x?xf32>, %neg: tensor<f32>)
    -> tensor<?x4x?x?xf32> {
  %y = kiln.where %mask, %scores, %neg
      : (tensor<1x1x?x?xi1>, tensor<?x4x?x?xf32>, tensor<f32>) -> tensor<?x4x?x?xf32>
  return %y : tensor<?x4x?x?xf32>
}

// -----

// Tests that clamp round-trips with both bounds, with one of them and with
// none.

// CHECK-LABEL: func.func @clamp
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<?x64xf32>, %[[LO:[a-zA-Z0-9_]+]]: tensor<f32>, %[[HI:[a-zA-Z0-9_]+]]: tensor<f32>, %[[I:[a-zA-Z0-9_]+]]: tensor<8xi32>, %[[IHI:[a-zA-Z0-9_]+]]: tensor<i32>)
// CHECK: %[[BOTH:[a-zA-Z0-9_]+]] = kiln.clamp %[[X]] min %[[LO]] max %[[HI]] : (tensor<?x64xf32>, tensor<f32>, tensor<f32>) -> tensor<?x64xf32>
// CHECK: %[[MIN:[a-zA-Z0-9_]+]] = kiln.clamp %[[BOTH]] min %[[LO]] : (tensor<?x64xf32>, tensor<f32>) -> tensor<?x64xf32>
// CHECK: %[[MAX:[a-zA-Z0-9_]+]] = kiln.clamp %[[I]] max %[[IHI]] : (tensor<8xi32>, tensor<i32>) -> tensor<8xi32>
// CHECK: %[[NONE:[a-zA-Z0-9_]+]] = kiln.clamp %[[MIN]] : (tensor<?x64xf32>) -> tensor<?x64xf32>
// CHECK: return %[[NONE]], %[[MAX]]
func.func @clamp(%x: tensor<?x64xf32>, %lo: tensor<f32>, %hi: tensor<f32>, %i: tensor<8xi32>,
                 %ihi: tensor<i32>) -> (tensor<?x64xf32>, tensor<8xi32>) {
  %both = kiln.clamp %x min %lo max %hi : (tensor<?x64xf32>, tensor<f32>, tensor<f32>) -> tensor<?x64xf32>
  %min = kiln.clamp %both min %lo : (tensor<?x64xf32>, tensor<f32>) -> tensor<?x64xf32>
  %max = kiln.clamp %i max %ihi : (tensor<8xi32>, tensor<i32>) -> tensor<8xi32>
  %none = kiln.clamp %min : (tensor<?x64xf32>) -> tensor<?x64xf32>
  return %none, %max : tensor<?x64xf32>, tensor<8xi32>
}

// -----

// Tests that cast round-trips between element types, i1 and i4 included.

// CHECK-LABEL: func.func @cast
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<?x?xi64>, %[[B:[a-zA-Z0-9_]+]]: tensor<4xi1>)
// CHECK: %[[F:[a-zA-Z0-9_]+]] = kiln.cast %[[X]] : tensor<?x?xi64> to tensor<?x?xf32>
// CHECK: %[[H:[a-zA-Z0-9_]+]] = kiln.cast %[[F]] : tensor<?x?xf32> to tensor<?x?xbf16>
// CHECK: %[[I4:[a-zA-Z0-9_]+]] = kiln.cast %[[B]] : tensor<4xi1> to tensor<4xi4>
// CHECK: %[[BACK:[a-zA-Z0-9_]+]] = kiln.cast %[[I4]] : tensor<4xi4> to tensor<4xi1>
// CHECK: return %[[H]], %[[BACK]]
func.func @cast(%x: tensor<?x?xi64>, %b: tensor<4xi1>) -> (tensor<?x?xbf16>, tensor<4xi1>) {
  %f = kiln.cast %x : tensor<?x?xi64> to tensor<?x?xf32>
  %h = kiln.cast %f : tensor<?x?xf32> to tensor<?x?xbf16>
  %i4 = kiln.cast %b : tensor<4xi1> to tensor<4xi4>
  %back = kiln.cast %i4 : tensor<4xi4> to tensor<4xi1>
  return %h, %back : tensor<?x?xbf16>, tensor<4xi1>
}

// -----

// Tests that matmul round-trips plain, with transpose_b, and with batch
// dimensions that broadcast.

// CHECK-LABEL: func.func @matmul
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<?x?x64xf32>, %[[W:[a-zA-Z0-9_]+]]: tensor<64x256xf32>, %[[Q:[a-zA-Z0-9_]+]]: tensor<?x4x?x16xf32>, %[[K:[a-zA-Z0-9_]+]]: tensor<?x4x?x16xf32>, %[[A:[a-zA-Z0-9_]+]]: tensor<2x1x8x16xi8>, %[[B:[a-zA-Z0-9_]+]]: tensor<3x16x4xi8>)
// CHECK: %[[Y:[a-zA-Z0-9_]+]] = kiln.matmul %[[X]], %[[W]] : (tensor<?x?x64xf32>, tensor<64x256xf32>) -> tensor<?x?x256xf32>
// CHECK: %[[S:[a-zA-Z0-9_]+]] = kiln.matmul %[[Q]], %[[K]] {transpose_b} : (tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>) -> tensor<?x4x?x?xf32>
// CHECK: %[[P:[a-zA-Z0-9_]+]] = kiln.matmul %[[A]], %[[B]] : (tensor<2x1x8x16xi8>, tensor<3x16x4xi8>) -> tensor<2x3x8x4xi8>
// CHECK: return %[[Y]], %[[S]], %[[P]]
func.func @matmul(%x: tensor<?x?x64xf32>, %w: tensor<64x256xf32>, %q: tensor<?x4x?x16xf32>,
                  %k: tensor<?x4x?x16xf32>, %a: tensor<2x1x8x16xi8>, %b: tensor<3x16x4xi8>)
    -> (tensor<?x?x256xf32>, tensor<?x4x?x?xf32>, tensor<2x3x8x4xi8>) {
  %y = kiln.matmul %x, %w : (tensor<?x?x64xf32>, tensor<64x256xf32>) -> tensor<?x?x256xf32>
  %s = kiln.matmul %q, %k {transpose_b} : (tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>) -> tensor<?x4x?x?xf32>
  %p = kiln.matmul %a, %b : (tensor<2x1x8x16xi8>, tensor<3x16x4xi8>) -> tensor<2x3x8x4xi8>
  return %y, %s, %p : tensor<?x?x256xf32>, tensor<?x4x?x?xf32>, tensor<2x3x8x4xi8>
}

// -----

// Tests that softmax and log_softmax round-trip with their axis.

// CHECK-LABEL: func.func @softmax
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<?x4x?x?xf32>, %[[H:[a-zA-Z0-9_]+]]: tensor<2x8xf16>)
// CHECK: %[[S:[a-zA-Z0-9_]+]] = kiln.softmax %[[X]] {axis = 3 : i64} : tensor<?x4x?x?xf32>
// CHECK: %[[L:[a-zA-Z0-9_]+]] = kiln.log_softmax %[[H]] {axis = 0 : i64} : tensor<2x8xf16>
// CHECK: return %[[S]], %[[L]]
func.func @softmax(%x: tensor<?x4x?x?xf32>, %h: tensor<2x8xf16>) -> (tensor<?x4x?x?xf32>, tensor<2x8xf16>) {
  %s = kiln.softmax %x {axis = 3 : i64} : tensor<?x4x?x?xf32>
  %l = kiln.log_softmax %h {axis = 0 : i64} : tensor<2x8xf16>
  return %s, %l : tensor<?x4x?x?xf32>, tensor<2x8xf16>
}

// -----

// Tests that layer_norm round-trips with and without bias, that its default
// epsilon is elided, and that rms_norm keeps a non-default epsilon.

// CHECK-LABEL: func.func @norms
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<?x?x64xf32>, %[[G:[a-zA-Z0-9_]+]]: tensor<64xf32>, %[[B:[a-zA-Z0-9_]+]]: tensor<64xf32>, %[[Y:[a-zA-Z0-9_]+]]: tensor<2x?x8xbf16>, %[[W:[a-zA-Z0-9_]+]]: tensor<?x8xbf16>)
// CHECK: %[[LN:[a-zA-Z0-9_]+]] = kiln.layer_norm %[[X]], %[[G]], %[[B]] {axis = 2 : i64} : (tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
// CHECK: %[[LN2:[a-zA-Z0-9_]+]] = kiln.layer_norm %[[LN]], %[[G]] {axis = 2 : i64, epsilon = 9.99999997E-7 : f32} : (tensor<?x?x64xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
// CHECK: %[[RMS:[a-zA-Z0-9_]+]] = kiln.rms_norm %[[Y]], %[[W]] {axis = 1 : i64, epsilon = 9.99999974E-6 : f32} : (tensor<2x?x8xbf16>, tensor<?x8xbf16>) -> tensor<2x?x8xbf16>
// CHECK: %[[RMS2:[a-zA-Z0-9_]+]] = kiln.rms_norm %[[RMS]], %[[W]] {axis = 1 : i64} : (tensor<2x?x8xbf16>, tensor<?x8xbf16>) -> tensor<2x?x8xbf16>
// CHECK: return %[[LN2]], %[[RMS2]]
func.func @norms(%x: tensor<?x?x64xf32>, %g: tensor<64xf32>, %b: tensor<64xf32>,
                 %y: tensor<2x?x8xbf16>, %w: tensor<?x8xbf16>) -> (tensor<?x?x64xf32>, tensor<2x?x8xbf16>) {
  %ln = kiln.layer_norm %x, %g, %b {axis = 2 : i64, epsilon = 1.0e-05 : f32}
      : (tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
  %ln2 = kiln.layer_norm %ln, %g {axis = 2 : i64, epsilon = 1.0e-06 : f32}
      : (tensor<?x?x64xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
  %rms = kiln.rms_norm %y, %w {axis = 1 : i64, epsilon = 1.0e-05 : f32}
      : (tensor<2x?x8xbf16>, tensor<?x8xbf16>) -> tensor<2x?x8xbf16>
  %rms2 = kiln.rms_norm %rms, %w {axis = 1 : i64}
      : (tensor<2x?x8xbf16>, tensor<?x8xbf16>) -> tensor<2x?x8xbf16>
  return %ln2, %rms2 : tensor<?x?x64xf32>, tensor<2x?x8xbf16>
}

// -----

// Tests that the reductions round-trip with and without keep_dims (the
// default, true, is elided).

// CHECK-LABEL: func.func @reductions
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<?x?x64xf32>, %[[I:[a-zA-Z0-9_]+]]: tensor<2x3x4xi32>)
// CHECK: %[[SUM:[a-zA-Z0-9_]+]] = kiln.reduce_sum %[[X]] {axes = array<i64: 2>} : (tensor<?x?x64xf32>) -> tensor<?x?x1xf32>
// CHECK: %[[MEAN:[a-zA-Z0-9_]+]] = kiln.reduce_mean %[[X]] {axes = array<i64: 0, 2>, keep_dims = false} : (tensor<?x?x64xf32>) -> tensor<?xf32>
// CHECK: %[[MAX:[a-zA-Z0-9_]+]] = kiln.reduce_max %[[I]] {axes = array<i64: 1>, keep_dims = false} : (tensor<2x3x4xi32>) -> tensor<2x4xi32>
// CHECK: return %[[SUM]], %[[MEAN]], %[[MAX]]
func.func @reductions(%x: tensor<?x?x64xf32>, %i: tensor<2x3x4xi32>)
    -> (tensor<?x?x1xf32>, tensor<?xf32>, tensor<2x4xi32>) {
  %sum = kiln.reduce_sum %x {axes = array<i64: 2>, keep_dims = true} : (tensor<?x?x64xf32>) -> tensor<?x?x1xf32>
  %mean = kiln.reduce_mean %x {axes = array<i64: 0, 2>, keep_dims = false} : (tensor<?x?x64xf32>) -> tensor<?xf32>
  %max = kiln.reduce_max %i {axes = array<i64: 1>, keep_dims = false} : (tensor<2x3x4xi32>) -> tensor<2x4xi32>
  return %sum, %mean, %max : tensor<?x?x1xf32>, tensor<?xf32>, tensor<2x4xi32>
}

// -----

// Tests that reshape, transpose, squeeze and unsqueeze round-trip.

// CHECK-LABEL: func.func @reshape_transpose
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<?x?x64xf32>, %[[SHAPE:[a-zA-Z0-9_]+]]: tensor<4xi64>, %[[Y:[a-zA-Z0-9_]+]]: tensor<?x1x64xf16>, %[[I:[a-zA-Z0-9_]+]]: tensor<?x?xi64>)
// CHECK: %[[R:[a-zA-Z0-9_]+]] = kiln.reshape %[[X]], %[[SHAPE]] : (tensor<?x?x64xf32>, tensor<4xi64>) -> tensor<?x?x4x16xf32>
// CHECK: %[[T:[a-zA-Z0-9_]+]] = kiln.transpose %[[R]] {permutation = array<i64: 0, 2, 1, 3>} : (tensor<?x?x4x16xf32>) -> tensor<?x4x?x16xf32>
// CHECK: %[[S:[a-zA-Z0-9_]+]] = kiln.squeeze %[[Y]] {axes = array<i64: 1>} : (tensor<?x1x64xf16>) -> tensor<?x64xf16>
// CHECK: %[[U:[a-zA-Z0-9_]+]] = kiln.unsqueeze %[[I]] {axes = array<i64: 1, 2>} : (tensor<?x?xi64>) -> tensor<?x1x1x?xi64>
// CHECK: return %[[T]], %[[S]], %[[U]]
func.func @reshape_transpose(%x: tensor<?x?x64xf32>, %shape: tensor<4xi64>, %y: tensor<?x1x64xf16>,
                             %i: tensor<?x?xi64>) -> (tensor<?x4x?x16xf32>, tensor<?x64xf16>, tensor<?x1x1x?xi64>) {
  %r = kiln.reshape %x, %shape : (tensor<?x?x64xf32>, tensor<4xi64>) -> tensor<?x?x4x16xf32>
  %t = kiln.transpose %r {permutation = array<i64: 0, 2, 1, 3>} : (tensor<?x?x4x16xf32>) -> tensor<?x4x?x16xf32>
  %s = kiln.squeeze %y {axes = array<i64: 1>} : (tensor<?x1x64xf16>) -> tensor<?x64xf16>
  %u = kiln.unsqueeze %i {axes = array<i64: 1, 2>} : (tensor<?x?xi64>) -> tensor<?x1x1x?xi64>
  return %t, %s, %u : tensor<?x4x?x16xf32>, tensor<?x64xf16>, tensor<?x1x1x?xi64>
}

// -----

// Tests that concat and split round-trip, split with several results.

// CHECK-LABEL: func.func @concat_split
// CHECK-SAME: (%[[PAST:[a-zA-Z0-9_]+]]: tensor<?x4x?x16xf32>, %[[NEW:[a-zA-Z0-9_]+]]: tensor<?x4x1x16xf32>, %[[QKV:[a-zA-Z0-9_]+]]: tensor<?x?x192xf32>, %[[A:[a-zA-Z0-9_]+]]: tensor<2x3xi8>, %[[B:[a-zA-Z0-9_]+]]: tensor<2x5xi8>)
// CHECK: %[[KV:[a-zA-Z0-9_]+]] = kiln.concat %[[PAST]], %[[NEW]] {axis = 2 : i64} : (tensor<?x4x?x16xf32>, tensor<?x4x1x16xf32>) -> tensor<?x4x?x16xf32>
// CHECK: %[[AB:[a-zA-Z0-9_]+]] = kiln.concat %[[A]], %[[B]], %[[A]] {axis = 1 : i64} : (tensor<2x3xi8>, tensor<2x5xi8>, tensor<2x3xi8>) -> tensor<2x11xi8>
// CHECK: %[[SPLIT:[a-zA-Z0-9_]+]]:3 = kiln.split %[[QKV]] {axis = 2 : i64, sizes = array<i64: 64, 64, 64>} : (tensor<?x?x192xf32>) -> (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>)
// CHECK: return %[[KV]], %[[AB]], %[[SPLIT]]#0, %[[SPLIT]]#2
func.func @concat_split(%past: tensor<?x4x?x16xf32>, %new: tensor<?x4x1x16xf32>, %qkv: tensor<?x?x192xf32>,
                        %a: tensor<2x3xi8>, %b: tensor<2x5xi8>)
    -> (tensor<?x4x?x16xf32>, tensor<2x11xi8>, tensor<?x?x64xf32>, tensor<?x?x64xf32>) {
  %kv = kiln.concat %past, %new {axis = 2 : i64} : (tensor<?x4x?x16xf32>, tensor<?x4x1x16xf32>) -> tensor<?x4x?x16xf32>
  %ab = kiln.concat %a, %b, %a {axis = 1 : i64} : (tensor<2x3xi8>, tensor<2x5xi8>, tensor<2x3xi8>) -> tensor<2x11xi8>
  %q, %k, %v = kiln.split %qkv {axis = 2 : i64, sizes = array<i64: 64, 64, 64>}
      : (tensor<?x?x192xf32>) -> (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>)
  return %kv, %ab, %q, %v : tensor<?x4x?x16xf32>, tensor<2x11xi8>, tensor<?x?x64xf32>, tensor<?x?x64xf32>
}

// -----

// Tests that split round-trips with sizes computed at run time: the operand
// after `sizes`, and kDynamic where the attribute does not know a size.

// CHECK-LABEL: func.func @split_computed
// CHECK: kiln.split %{{.+}} sizes %{{.+}} {axis = 1 : i64, sizes = array<i64: -9223372036854775808, 2>} : (tensor<4x6xf32>, tensor<2xi64>) -> (tensor<4x?xf32>, tensor<4x2xf32>)
func.func @split_computed(%x: tensor<4x6xf32>, %n: tensor<2xi64>) -> (tensor<4x?xf32>, tensor<4x2xf32>) {
  %a, %b = kiln.split %x sizes %n {axis = 1 : i64, sizes = array<i64: -9223372036854775808, 2>}
      : (tensor<4x6xf32>, tensor<2xi64>) -> (tensor<4x?xf32>, tensor<4x2xf32>)
  return %a, %b : tensor<4x?xf32>, tensor<4x2xf32>
}

// -----

// Tests that slice and gather round-trip with their bracketed operands.

// CHECK-LABEL: func.func @slice_gather
// CHECK-SAME: (%[[MASK:[a-zA-Z0-9_]+]]: tensor<1x1x256x256xi1>, %[[ST:[a-zA-Z0-9_]+]]: tensor<1xi64>, %[[EN:[a-zA-Z0-9_]+]]: tensor<1xi64>, %[[SP:[a-zA-Z0-9_]+]]: tensor<1xi64>, %[[TABLE:[a-zA-Z0-9_]+]]: tensor<256x64xf32>, %[[IDS:[a-zA-Z0-9_]+]]: tensor<?x?xi64>, %[[IDX:[a-zA-Z0-9_]+]]: tensor<3xi32>)
// CHECK: %[[S:[a-zA-Z0-9_]+]] = kiln.slice %[[MASK]][%[[ST]] : %[[EN]] : %[[SP]]] {axes = array<i64: 2>} : (tensor<1x1x256x256xi1>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x?x256xi1>
// CHECK: %[[E:[a-zA-Z0-9_]+]] = kiln.gather %[[TABLE]][%[[IDS]]] {axis = 0 : i64} : (tensor<256x64xf32>, tensor<?x?xi64>) -> tensor<?x?x64xf32>
// CHECK: %[[G:[a-zA-Z0-9_]+]] = kiln.gather %[[TABLE]][%[[IDX]]] {axis = 1 : i64} : (tensor<256x64xf32>, tensor<3xi32>) -> tensor<256x3xf32>
// CHECK: return %[[S]], %[[E]], %[[G]]
func.func @slice_gather(%mask: tensor<1x1x256x256xi1>, %starts: tensor<1xi64>, %ends: tensor<1xi64>,
                        %steps: tensor<1xi64>, %table: tensor<256x64xf32>, %ids: tensor<?x?xi64>,
                        %idx: tensor<3xi32>) -> (tensor<1x1x?x256xi1>, tensor<?x?x64xf32>, tensor<256x3xf32>) {
  %s = kiln.slice %mask[%starts : %ends : %steps] {axes = array<i64: 2>}
      : (tensor<1x1x256x256xi1>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x?x256xi1>
  %e = kiln.gather %table[%ids] {axis = 0 : i64} : (tensor<256x64xf32>, tensor<?x?xi64>) -> tensor<?x?x64xf32>
  %g = kiln.gather %table[%idx] {axis = 1 : i64} : (tensor<256x64xf32>, tensor<3xi32>) -> tensor<256x3xf32>
  return %s, %e, %g : tensor<1x1x?x256xi1>, tensor<?x?x64xf32>, tensor<256x3xf32>
}

// -----

// Tests that expand, tile and trilu round-trip; trilu keeps k and upper
// unless they are the defaults.

// CHECK-LABEL: func.func @expand_tile_trilu
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<1x1x?x16xf32>, %[[SHAPE:[a-zA-Z0-9_]+]]: tensor<4xi64>, %[[T:[a-zA-Z0-9_]+]]: tensor<2x3xf64>, %[[REP:[a-zA-Z0-9_]+]]: tensor<2xi64>, %[[ONES:[a-zA-Z0-9_]+]]: tensor<?x?xf32>)
// CHECK: %[[E:[a-zA-Z0-9_]+]] = kiln.expand %[[X]], %[[SHAPE]] : (tensor<1x1x?x16xf32>, tensor<4xi64>) -> tensor<?x2x?x16xf32>
// CHECK: %[[TI:[a-zA-Z0-9_]+]] = kiln.tile %[[T]], %[[REP]] : (tensor<2x3xf64>, tensor<2xi64>) -> tensor<4x3xf64>
// CHECK: %[[U:[a-zA-Z0-9_]+]] = kiln.trilu %[[ONES]] {k = 1 : i64, upper} : tensor<?x?xf32>
// CHECK: %[[L:[a-zA-Z0-9_]+]] = kiln.trilu %[[U]] : tensor<?x?xf32>
// CHECK: return %[[E]], %[[TI]], %[[L]]
func.func @expand_tile_trilu(%x: tensor<1x1x?x16xf32>, %shape: tensor<4xi64>, %t: tensor<2x3xf64>,
                             %repeats: tensor<2xi64>, %ones: tensor<?x?xf32>)
    -> (tensor<?x2x?x16xf32>, tensor<4x3xf64>, tensor<?x?xf32>) {
  %e = kiln.expand %x, %shape : (tensor<1x1x?x16xf32>, tensor<4xi64>) -> tensor<?x2x?x16xf32>
  %ti = kiln.tile %t, %repeats : (tensor<2x3xf64>, tensor<2xi64>) -> tensor<4x3xf64>
  %u = kiln.trilu %ones {k = 1 : i64, upper} : tensor<?x?xf32>
  %l = kiln.trilu %u {k = 0 : i64} : tensor<?x?xf32>
  return %e, %ti, %l : tensor<?x2x?x16xf32>, tensor<4x3xf64>, tensor<?x?xf32>
}

// -----

// Tests that range round-trips with integer and float operands.

// CHECK-LABEL: func.func @range
// CHECK-SAME: (%[[ZERO:[a-zA-Z0-9_]+]]: tensor<i64>, %[[LEN:[a-zA-Z0-9_]+]]: tensor<i64>, %[[ONE:[a-zA-Z0-9_]+]]: tensor<i64>, %[[F:[a-zA-Z0-9_]+]]: tensor<f32>)
// CHECK: %[[POS:[a-zA-Z0-9_]+]] = kiln.range %[[ZERO]], %[[LEN]], %[[ONE]] : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
// CHECK: %[[FR:[a-zA-Z0-9_]+]] = kiln.range %[[F]], %[[F]], %[[F]] : (tensor<f32>, tensor<f32>, tensor<f32>) -> tensor<0xf32>
// CHECK: return %[[POS]], %[[FR]]
func.func @range(%zero: tensor<i64>, %len: tensor<i64>, %one: tensor<i64>, %f: tensor<f32>)
    -> (tensor<?xi64>, tensor<0xf32>) {
  %pos = kiln.range %zero, %len, %one : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %fr = kiln.range %f, %f, %f : (tensor<f32>, tensor<f32>, tensor<f32>) -> tensor<0xf32>
  return %pos, %fr : tensor<?xi64>, tensor<0xf32>
}

// -----

// Tests that dense constants of several element types round-trip.

// CHECK-LABEL: func.func @constant_dense
// CHECK-DAG: kiln.constant dense<[0, 0, 4, 16]> : tensor<4xi64>
// CHECK-DAG: kiln.constant dense<-1.000000e+00> : tensor<f32>
// CHECK-DAG: kiln.constant dense<[true, false]> : tensor<2xi1>
// CHECK-DAG: kiln.constant dense<{{\[}}[1, 2], [3, 4]]> : tensor<2x2xi32>
// CHECK-DAG: kiln.constant dense<5.000000e-01> : tensor<3xf16>
func.func @constant_dense() -> (tensor<4xi64>, tensor<f32>, tensor<2xi1>, tensor<2x2xi32>, tensor<3xf16>) {
  %shape = kiln.constant dense<[0, 0, 4, 16]> : tensor<4xi64>
  %neg = kiln.constant dense<-1.0> : tensor<f32>
  %bools = kiln.constant dense<[true, false]> : tensor<2xi1>
  %ints = kiln.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi32>
  %half = kiln.constant dense<0.5> : tensor<3xf16>
  return %shape, %neg, %bools, %ints, %half : tensor<4xi64>, tensor<f32>, tensor<2xi1>, tensor<2x2xi32>, tensor<3xf16>
}

// -----

// Tests that a dense_resource constant round-trips and keeps its blob in the
// file's resource section.

// CHECK-LABEL: func.func @constant_resource
// CHECK: %[[W:[a-zA-Z0-9_]+]] = kiln.constant dense_resource<wte> : tensor<2x2xf32>
// CHECK: return %[[W]]
// CHECK: dialect_resources: {
// CHECK-NEXT: builtin: {
// CHECK-NEXT: wte: "0x040000000000803F0000004000004040000080C0"
func.func @constant_resource() -> tensor<2x2xf32> {
  %w = kiln.constant dense_resource<wte> : tensor<2x2xf32>
  return %w : tensor<2x2xf32>
}

{-#
  dialect_resources: {
    builtin: {
      wte: "0x040000000000803F0000004000004040000080C0"
    }
  }
#-}

// -----

// Tests that the shape queries round-trip on dynamic shapes.

// CHECK-LABEL: func.func @shape_queries
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<?x?x64xf32>)
// CHECK: %[[S:[a-zA-Z0-9_]+]] = kiln.shape_of %[[X]] : tensor<?x?x64xf32> -> tensor<3xi64>
// CHECK: %[[D:[a-zA-Z0-9_]+]] = kiln.dim %[[X]] {index = 1 : i64} : tensor<?x?x64xf32> -> tensor<i64>
// CHECK: %[[N:[a-zA-Z0-9_]+]] = kiln.size %[[X]] : tensor<?x?x64xf32> -> tensor<i64>
// CHECK: return %[[S]], %[[D]], %[[N]]
func.func @shape_queries(%x: tensor<?x?x64xf32>) -> (tensor<3xi64>, tensor<i64>, tensor<i64>) {
  %s = kiln.shape_of %x : tensor<?x?x64xf32> -> tensor<3xi64>
  %d = kiln.dim %x {index = 1 : i64} : tensor<?x?x64xf32> -> tensor<i64>
  %n = kiln.size %x : tensor<?x?x64xf32> -> tensor<i64>
  return %s, %d, %n : tensor<3xi64>, tensor<i64>, tensor<i64>
}

// -----

// Tests that attention round-trips with both masks, with none (masked_value
// at its default is elided), and with grouped-query heads (4 over 2).

// CHECK-LABEL: func.func @attention
// CHECK-SAME: (%[[Q:[a-zA-Z0-9_]+]]: tensor<?x4x?x16xf32>, %[[K:[a-zA-Z0-9_]+]]: tensor<?x2x?x16xf32>, %[[V:[a-zA-Z0-9_]+]]: tensor<?x2x?x8xf32>, %[[KEEP:[a-zA-Z0-9_]+]]: tensor<1x1x?x?xi1>, %[[MASK:[a-zA-Z0-9_]+]]: tensor<?x1x1x?xf32>)
// CHECK: %[[A:[a-zA-Z0-9_]+]] = kiln.attention %[[Q]], %[[K]], %[[V]] keep %[[KEEP]] bias %[[MASK]] {masked_value = -1.000000e+04 : f32, scale = 2.500000e-01 : f32} : (tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x8xf32>, tensor<1x1x?x?xi1>, tensor<?x1x1x?xf32>) -> tensor<?x4x?x8xf32>
// CHECK: %[[B:[a-zA-Z0-9_]+]] = kiln.attention %[[Q]], %[[K]], %[[V]] {scale = 1.000000e+00 : f32} : (tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x8xf32>) -> tensor<?x4x?x8xf32>
// CHECK: return %[[A]], %[[B]]
func.func @attention(%q: tensor<?x4x?x16xf32>, %k: tensor<?x2x?x16xf32>, %v: tensor<?x2x?x8xf32>,
                     %keep: tensor<1x1x?x?xi1>, %mask: tensor<?x1x1x?xf32>) -> (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) {
  %a = kiln.attention %q, %k, %v keep %keep bias %mask {scale = 0.25 : f32, masked_value = -1.0e4 : f32}
      : (tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x8xf32>, tensor<1x1x?x?xi1>, tensor<?x1x1x?xf32>) -> tensor<?x4x?x8xf32>
  %b = kiln.attention %q, %k, %v {scale = 1.0 : f32, masked_value = 0.0 : f32}
      : (tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x8xf32>) -> tensor<?x4x?x8xf32>
  return %a, %b : tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>
}

// -----

// Tests that attention with a past round-trips with its two presents: the
// past's 5 rows and the new 3 make presents and scores of 8 keys.

// CHECK-LABEL: func.func @attention_past
// CHECK-SAME: (%[[Q:[a-zA-Z0-9_]+]]: tensor<1x4x3x16xf32>, %[[K:[a-zA-Z0-9_]+]]: tensor<1x2x3x16xf32>, %[[V:[a-zA-Z0-9_]+]]: tensor<1x2x3x8xf32>, %[[PK:[a-zA-Z0-9_]+]]: tensor<1x2x5x16xf32>, %[[PV:[a-zA-Z0-9_]+]]: tensor<1x2x5x8xf32>, %[[MASK:[a-zA-Z0-9_]+]]: tensor<1x1x3x8xf32>)
// CHECK: %[[O:[a-zA-Z0-9_]+]], %[[P:[a-zA-Z0-9_]+]]:2 = kiln.attention %[[Q]], %[[K]], %[[V]] past %[[PK]], %[[PV]] bias %[[MASK]] {scale = 2.500000e-01 : f32} : (tensor<1x4x3x16xf32>, tensor<1x2x3x16xf32>, tensor<1x2x3x8xf32>, tensor<1x2x5x16xf32>, tensor<1x2x5x8xf32>, tensor<1x1x3x8xf32>) -> (tensor<1x4x3x8xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x8xf32>)
// CHECK: return %[[O]], %[[P]]#0, %[[P]]#1
func.func @attention_past(%q: tensor<1x4x3x16xf32>, %k: tensor<1x2x3x16xf32>, %v: tensor<1x2x3x8xf32>,
                          %pk: tensor<1x2x5x16xf32>, %pv: tensor<1x2x5x8xf32>, %mask: tensor<1x1x3x8xf32>)
    -> (tensor<1x4x3x8xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x8xf32>) {
  %o, %p:2 = kiln.attention %q, %k, %v past %pk, %pv bias %mask {scale = 0.25 : f32}
      : (tensor<1x4x3x16xf32>, tensor<1x2x3x16xf32>, tensor<1x2x3x8xf32>, tensor<1x2x5x16xf32>, tensor<1x2x5x8xf32>, tensor<1x1x3x8xf32>)
      -> (tensor<1x4x3x8xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x8xf32>)
  return %o, %p#0, %p#1 : tensor<1x4x3x8xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x8xf32>
}

// -----

// Tests that linear round-trips with its whole epilogue, with none, and with
// a transposed weight, each activation and a gate.

// CHECK-LABEL: func.func @linear
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<?x?x64xf32>, %[[W:[a-zA-Z0-9_]+]]: tensor<64x256xf32>, %[[WT:[a-zA-Z0-9_]+]]: tensor<256x64xf32>, %[[B:[a-zA-Z0-9_]+]]: tensor<256xf32>, %[[R:[a-zA-Z0-9_]+]]: tensor<?x?x256xf32>)
// CHECK: kiln.linear %[[X]], %[[W]] bias %[[B]] activation gelu_tanh residual %[[R]] : (tensor<?x?x64xf32>, tensor<64x256xf32>, tensor<256xf32>, tensor<?x?x256xf32>) -> tensor<?x?x256xf32>
// CHECK: kiln.linear %[[X]], %[[W]] : (tensor<?x?x64xf32>, tensor<64x256xf32>) -> tensor<?x?x256xf32>
// CHECK: kiln.linear %[[X]], %[[WT]] activation relu {transpose_b} : (tensor<?x?x64xf32>, tensor<256x64xf32>) -> tensor<?x?x256xf32>
// CHECK: kiln.linear %[[X]], %[[W]] activation gelu residual %[[R]] : (tensor<?x?x64xf32>, tensor<64x256xf32>, tensor<?x?x256xf32>) -> tensor<?x?x256xf32>
// CHECK: kiln.linear %[[X]], %[[W]] bias %[[B]] activation silu : (tensor<?x?x64xf32>, tensor<64x256xf32>, tensor<256xf32>) -> tensor<?x?x256xf32>
// CHECK: kiln.linear %[[X]], %[[W]] activation silu gate %[[R]] residual %[[R]] : (tensor<?x?x64xf32>, tensor<64x256xf32>, tensor<?x?x256xf32>, tensor<?x?x256xf32>) -> tensor<?x?x256xf32>
func.func @linear(%x: tensor<?x?x64xf32>, %w: tensor<64x256xf32>, %wt: tensor<256x64xf32>,
                  %b: tensor<256xf32>, %r: tensor<?x?x256xf32>)
    -> (tensor<?x?x256xf32>, tensor<?x?x256xf32>, tensor<?x?x256xf32>, tensor<?x?x256xf32>, tensor<?x?x256xf32>, tensor<?x?x256xf32>) {
  %a = kiln.linear %x, %w bias %b activation gelu_tanh residual %r
      : (tensor<?x?x64xf32>, tensor<64x256xf32>, tensor<256xf32>, tensor<?x?x256xf32>) -> tensor<?x?x256xf32>
  %p = kiln.linear %x, %w : (tensor<?x?x64xf32>, tensor<64x256xf32>) -> tensor<?x?x256xf32>
  %t = kiln.linear %x, %wt activation relu {transpose_b} : (tensor<?x?x64xf32>, tensor<256x64xf32>) -> tensor<?x?x256xf32>
  %g = kiln.linear %x, %w activation gelu residual %r
      : (tensor<?x?x64xf32>, tensor<64x256xf32>, tensor<?x?x256xf32>) -> tensor<?x?x256xf32>
  %s = kiln.linear %x, %w bias %b activation silu
      : (tensor<?x?x64xf32>, tensor<64x256xf32>, tensor<256xf32>) -> tensor<?x?x256xf32>
  %u = kiln.linear %x, %w activation silu gate %r residual %r
      : (tensor<?x?x64xf32>, tensor<64x256xf32>, tensor<?x?x256xf32>, tensor<?x?x256xf32>) -> tensor<?x?x256xf32>
  return %a, %p, %t, %g, %s, %u : tensor<?x?x256xf32>, tensor<?x?x256xf32>, tensor<?x?x256xf32>, tensor<?x?x256xf32>, tensor<?x?x256xf32>, tensor<?x?x256xf32>
}

// -----

// Tests that linear round-trips with a packed weight: 172 columns in 3
// panels of 64.

// CHECK-LABEL: func.func @linear_packed
// CHECK: kiln.linear %{{.+}}, %{{.+}} bias %{{.+}} activation silu {packed} : (tensor<?x64xf32>, tensor<3x64x64xf32>, tensor<172xf32>) -> tensor<?x172xf32>
func.func @linear_packed(%x: tensor<?x64xf32>, %w: tensor<3x64x64xf32>, %b: tensor<172xf32>) -> tensor<?x172xf32> {
  %y = kiln.linear %x, %w bias %b activation silu {packed} : (tensor<?x64xf32>, tensor<3x64x64xf32>, tensor<172xf32>) -> tensor<?x172xf32>
  return %y : tensor<?x172xf32>
}

// -----

// Tests that linear round-trips with an int8 weight and its scales: 300
// rows in groups of 128 take 3 rows of scales per panel.

// CHECK-LABEL: func.func @linear_int8
// CHECK: kiln.linear %{{.+}}, %{{.+}} scales %{{.+}} bias %{{.+}} {group_size = 128 : i64, packed} : (tensor<?x300xf32>, tensor<2x300x64xi8>, tensor<2x3x64xf32>, tensor<100xf32>) -> tensor<?x100xf32>
func.func @linear_int8(%x: tensor<?x300xf32>, %w: tensor<2x300x64xi8>, %s: tensor<2x3x64xf32>, %b: tensor<100xf32>) -> tensor<?x100xf32> {
  %y = kiln.linear %x, %w scales %s bias %b {packed, group_size = 128 : i64} : (tensor<?x300xf32>, tensor<2x300x64xi8>, tensor<2x3x64xf32>, tensor<100xf32>) -> tensor<?x100xf32>
  return %y : tensor<?x100xf32>
}

// -----

// Tests that linear round-trips with a 4-bit weight (two columns a byte),
// its scales and its zero points.

// CHECK-LABEL: func.func @linear_uint4
// CHECK: kiln.linear %{{.+}}, %{{.+}} scales %{{.+}} zero_points %{{.+}} activation silu {group_size = 128 : i64, packed} : (tensor<?x300xf32>, tensor<2x300x32xui8>, tensor<2x3x64xf32>, tensor<2x3x64xui8>) -> tensor<?x100xf32>
func.func @linear_uint4(%x: tensor<?x300xf32>, %w: tensor<2x300x32xui8>, %s: tensor<2x3x64xf32>, %z: tensor<2x3x64xui8>) -> tensor<?x100xf32> {
  %y = kiln.linear %x, %w scales %s zero_points %z activation silu {packed, group_size = 128 : i64} : (tensor<?x300xf32>, tensor<2x300x32xui8>, tensor<2x3x64xf32>, tensor<2x3x64xui8>) -> tensor<?x100xf32>
  return %y : tensor<?x100xf32>
}

// -----

// Tests that linear round-trips with a quantized input: int8 values in row
// quads, a scale per column and the column sums.

// CHECK-LABEL: func.func @linear_quantize_input
// CHECK: kiln.linear %{{.+}}, %{{.+}} scales %{{.+}} column_sums %{{.+}} bias %{{.+}} {group_size = 300 : i64, packed, quantize_input} : (tensor<?x300xf32>, tensor<2x300x64xi8>, tensor<2x1x64xf32>, tensor<2x64xi32>, tensor<100xf32>) -> tensor<?x100xf32>
func.func @linear_quantize_input(%x: tensor<?x300xf32>, %w: tensor<2x300x64xi8>, %s: tensor<2x1x64xf32>, %c: tensor<2x64xi32>, %b: tensor<100xf32>) -> tensor<?x100xf32> {
  %y = kiln.linear %x, %w scales %s column_sums %c bias %b {packed, group_size = 300 : i64, quantize_input} : (tensor<?x300xf32>, tensor<2x300x64xi8>, tensor<2x1x64xf32>, tensor<2x64xi32>, tensor<100xf32>) -> tensor<?x100xf32>
  return %y : tensor<?x100xf32>
}

// -----

// Tests that linear round-trips with a static input quantization, and
// quantize and dequantize with parameters per tensor and per axis.

// CHECK-LABEL: func.func @static_quantization
// CHECK: kiln.linear %{{.+}}, %{{.+}} scales %{{.+}} column_sums %{{.+}} {group_size = 300 : i64, input_scale = 2.500000e-01 : f32, input_zero_point = 128 : i64, packed, quantize_input} : (tensor<?x300xf32>, tensor<2x300x64xi8>, tensor<2x1x64xf32>, tensor<2x64xi32>) -> tensor<?x100xf32>
// CHECK: kiln.quantize %{{.+}}, %{{.+}}, %{{.+}} : (tensor<?x300xf32>, tensor<f32>, tensor<i8>) -> tensor<?x300xi8>
// CHECK: kiln.dequantize %{{.+}}, %{{.+}}, %{{.+}} : (tensor<300x100xi8>, tensor<100xf32>, tensor<100xi8>) -> tensor<300x100xf32>
func.func @static_quantization(%x: tensor<?x300xf32>, %w: tensor<2x300x64xi8>, %s: tensor<2x1x64xf32>, %c: tensor<2x64xi32>, %xs: tensor<f32>, %xz: tensor<i8>, %wq: tensor<300x100xi8>, %ws: tensor<100xf32>, %wz: tensor<100xi8>) -> (tensor<?x100xf32>, tensor<?x300xi8>, tensor<300x100xf32>) {
  %y = kiln.linear %x, %w scales %s column_sums %c {packed, group_size = 300 : i64, quantize_input, input_scale = 0.25 : f32, input_zero_point = 128 : i64} : (tensor<?x300xf32>, tensor<2x300x64xi8>, tensor<2x1x64xf32>, tensor<2x64xi32>) -> tensor<?x100xf32>
  %q = kiln.quantize %x, %xs, %xz : (tensor<?x300xf32>, tensor<f32>, tensor<i8>) -> tensor<?x300xi8>
  %d = kiln.dequantize %wq, %ws, %wz : (tensor<300x100xi8>, tensor<100xf32>, tensor<100xi8>) -> tensor<300x100xf32>
  return %y, %q, %d : tensor<?x100xf32>, tensor<?x300xi8>, tensor<300x100xf32>
}

// -----

// Tests that dynamic_quantize and matmul_integer round-trip, and linear
// with an input quantized by the whole input's range.

// CHECK-LABEL: func.func @dynamic_quantization
// CHECK: %[[Q:.+]], %{{.+}}, %[[Z:.+]] = kiln.dynamic_quantize %{{.+}} : tensor<?x300xf32> -> tensor<?x300xi8>, tensor<f32>, tensor<i8>
// CHECK: kiln.matmul_integer %[[Q]], %{{.+}}, %[[Z]], %{{.+}} : (tensor<?x300xi8>, tensor<300x100xi8>, tensor<i8>, tensor<100xi8>) -> tensor<?x100xi32>
// CHECK: kiln.linear %{{.+}} {group_size = 300 : i64, input_tensor_range, packed, quantize_input}
func.func @dynamic_quantization(%x: tensor<?x300xf32>, %wq: tensor<300x100xi8>, %wz: tensor<100xi8>, %w: tensor<2x300x64xi8>, %s: tensor<2x1x64xf32>, %c: tensor<2x64xi32>) -> (tensor<?x100xi32>, tensor<?x100xf32>) {
  %q, %scale, %z = kiln.dynamic_quantize %x : tensor<?x300xf32> -> tensor<?x300xi8>, tensor<f32>, tensor<i8>
  %p = kiln.matmul_integer %q, %wq, %z, %wz : (tensor<?x300xi8>, tensor<300x100xi8>, tensor<i8>, tensor<100xi8>) -> tensor<?x100xi32>
  %y = kiln.linear %x, %w scales %s column_sums %c {packed, group_size = 300 : i64, quantize_input, input_tensor_range} : (tensor<?x300xf32>, tensor<2x300x64xi8>, tensor<2x1x64xf32>, tensor<2x64xi32>) -> tensor<?x100xf32>
  return %p, %y : tensor<?x100xi32>, tensor<?x100xf32>
}

// -----

// Tests that rotary round-trips with cos and sin broadcast over the heads.

// CHECK-LABEL: func.func @rotary
// CHECK: kiln.rotary %{{.+}}, %{{.+}}, %{{.+}} : (tensor<?x4x?x16xf32>, tensor<?x1x?x16xf32>, tensor<?x1x?x16xf32>) -> tensor<?x4x?x16xf32>
func.func @rotary(%x: tensor<?x4x?x16xf32>, %cos: tensor<?x1x?x16xf32>, %sin: tensor<?x1x?x16xf32>) -> tensor<?x4x?x16xf32> {
  %y = kiln.rotary %x, %cos, %sin : (tensor<?x4x?x16xf32>, tensor<?x1x?x16xf32>, tensor<?x1x?x16xf32>) -> tensor<?x4x?x16xf32>
  return %y : tensor<?x4x?x16xf32>
}

// -----

// Tests that an interleaved rotary (GPT-J's pairs) round-trips.

// CHECK-LABEL: func.func @rotary_interleaved
// CHECK: kiln.rotary %{{.+}}, %{{.+}}, %{{.+}} {interleaved} : (tensor<?x?x4x16xf32>, tensor<?x?x1x16xf32>, tensor<?x?x1x16xf32>) -> tensor<?x?x4x16xf32>
func.func @rotary_interleaved(%x: tensor<?x?x4x16xf32>, %cos: tensor<?x?x1x16xf32>, %sin: tensor<?x?x1x16xf32>) -> tensor<?x?x4x16xf32> {
  %y = kiln.rotary %x, %cos, %sin {interleaved} : (tensor<?x?x4x16xf32>, tensor<?x?x1x16xf32>, tensor<?x?x1x16xf32>) -> tensor<?x?x4x16xf32>
  return %y : tensor<?x?x4x16xf32>
}

// -----

// Tests that a partial rotary (cos and sin 8 wide on a 16-wide input)
// round-trips.

// CHECK-LABEL: func.func @rotary_partial
// CHECK: kiln.rotary %{{.+}}, %{{.+}}, %{{.+}} : (tensor<?x4x?x16xf32>, tensor<?x1x?x8xf32>, tensor<?x1x?x8xf32>) -> tensor<?x4x?x16xf32>
func.func @rotary_partial(%x: tensor<?x4x?x16xf32>, %cos: tensor<?x1x?x8xf32>, %sin: tensor<?x1x?x8xf32>) -> tensor<?x4x?x16xf32> {
  %y = kiln.rotary %x, %cos, %sin : (tensor<?x4x?x16xf32>, tensor<?x1x?x8xf32>, tensor<?x1x?x8xf32>) -> tensor<?x4x?x16xf32>
  return %y : tensor<?x4x?x16xf32>
}

// -----

// Tests that attention and paged_attention round-trip with a position bias.

// CHECK-LABEL: func.func @attention_position_bias
// CHECK: kiln.attention %{{.+}}, %{{.+}}, %{{.+}} position_bias %{{.+}} keep %{{.+}} {scale = 2.500000e-01 : f32}
// CHECK: kiln.paged_attention %{{.+}}, %{{.+}}, %{{.+}} cache %{{.+}} tables %{{.+}} lengths %{{.+}} width %{{.+}} position_bias %{{.+}} {layer = 0 : i64, scale = 2.500000e-01 : f32}
func.func @attention_position_bias(%q: tensor<?x4x?x16xf32>, %k: tensor<?x4x?x16xf32>, %v: tensor<?x4x?x16xf32>,
                                   %alibi: tensor<?x4x1x?xf32>, %keep: tensor<1x1x?x?xi1>,
                                   %pool: tensor<?x1x2x4x8x16xf32>, %tables: tensor<?x?xi64>, %lengths: tensor<?xi64>,
                                   %width: tensor<i64>) -> (tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>) {
  %a = kiln.attention %q, %k, %v position_bias %alibi keep %keep {scale = 0.25 : f32, masked_value = 0.0 : f32}
      : (tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x1x?xf32>, tensor<1x1x?x?xi1>) -> tensor<?x4x?x16xf32>
  %b = kiln.paged_attention %q, %k, %v cache %pool tables %tables lengths %lengths width %width position_bias %alibi {layer = 0 : i64, scale = 2.500000e-01 : f32}
      : (tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x1x2x4x8x16xf32>, tensor<?x?xi64>, tensor<?xi64>, tensor<i64>, tensor<?x4x1x?xf32>) -> tensor<?x4x?x16xf32>
  return %a, %b : tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>
}

// -----

// Tests that paged_attention round-trips with its pool, tables, lengths,
// padded past width and a bias.

// CHECK-LABEL: func.func @paged_attention
// CHECK: kiln.paged_attention %{{.+}}, %{{.+}}, %{{.+}} cache %{{.+}} tables %{{.+}} lengths %{{.+}} width %{{.+}} bias %{{.+}} {layer = 1 : i64, scale = 2.500000e-01 : f32}
func.func @paged_attention(%q: tensor<?x4x?x16xf32>, %k: tensor<?x2x?x16xf32>, %v: tensor<?x2x?x16xf32>,
                           %pool: tensor<?x2x2x2x8x16xf32>, %tables: tensor<?x?xi64>, %lengths: tensor<?xi64>,
                           %width: tensor<i64>, %mask: tensor<?x1x?x?xf32>) -> tensor<?x4x?x16xf32> {
  %o = kiln.paged_attention %q, %k, %v cache %pool tables %tables lengths %lengths width %width bias %mask {layer = 1 : i64, scale = 2.500000e-01 : f32}
      : (tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x2x2x8x16xf32>, tensor<?x?xi64>, tensor<?xi64>, tensor<i64>, tensor<?x1x?x?xf32>) -> tensor<?x4x?x16xf32>
  return %o : tensor<?x4x?x16xf32>
}

// -----

// Tests that assert round-trips with its message.

// CHECK-LABEL: func.func @assert
// CHECK: kiln.assert %{{.+}}, "the axis is out of range" : tensor<i1>
func.func @assert(%ok: tensor<i1>) {
  kiln.assert %ok, "the axis is out of range" : tensor<i1>
  return
}
