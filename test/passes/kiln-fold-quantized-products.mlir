// RUN: kiln-opt %s --split-input-file --kiln-fold-quantized-products --mlir-print-elementsattrs-with-hex-if-larger=-1 | FileCheck %s

// Tests that a product of a quantized activation (one scale and zero point,
// quantized and dequantized again) by a dequantized int8 weight with a
// scale per column becomes an int8 linear that quantizes its input with the
// activation's own parameters: the int8 zero point -3 is the runtime's
// uint8 125. The weight's values land in row quads (a column's rows 0-3 in
// 4 bytes), with the column sums 1 + 3 - 5 + 7 = 6 and -2 + 4 + 6 - 127 =
// -119, and the scales [0.5, 0.25] as a panel row; the quantize and the
// dequantizes are gone.

// CHECK-LABEL: func.func @folds_per_column_weight
//  CHECK-SAME: (%[[X:.+]]: tensor<?x4xf32>)
//   CHECK-NOT: kiln.quantize
//   CHECK-NOT: kiln.dequantize
//       CHECK: %[[Q:.+]] = kiln.constant dense<{{\[\[\[}}1, 3, -5, 7, -2, 4, 6, -127{{((, 0){56})}}], [0{{((, 0){63})}}], [0{{((, 0){63})}}], [0{{((, 0){63})}}]]]> : tensor<1x4x64xi8>
//       CHECK: %[[S:.+]] = kiln.constant dense<{{\[\[\[}}5.000000e-01, 2.500000e-01{{((, 0.000000e\+00){62})}}]]]> : tensor<1x1x64xf32>
//       CHECK: %[[C:.+]] = kiln.constant dense<{{\[\[}}6, -119{{((, 0){62})}}]]> : tensor<1x64xi32>
//       CHECK: %[[Y:.+]] = kiln.linear %[[X]], %[[Q]] scales %[[S]] column_sums %[[C]] {group_size = 4 : i64, input_scale = 5.000000e-02 : f32, input_zero_point = 125 : i64, packed, quantize_input} : (tensor<?x4xf32>, tensor<1x4x64xi8>, tensor<1x1x64xf32>, tensor<1x64xi32>) -> tensor<?x2xf32>
//   CHECK-NOT: kiln.quantize
//   CHECK-NOT: kiln.dequantize
//       CHECK: return %[[Y]]
func.func @folds_per_column_weight(%x: tensor<?x4xf32>) -> tensor<?x2xf32> {
  %s = kiln.constant dense<0.05> : tensor<f32>
  %z = kiln.constant dense<-3> : tensor<i8>
  %q = kiln.quantize %x, %s, %z : (tensor<?x4xf32>, tensor<f32>, tensor<i8>) -> tensor<?x4xi8>
  %a = kiln.dequantize %q, %s, %z : (tensor<?x4xi8>, tensor<f32>, tensor<i8>) -> tensor<?x4xf32>
  %wq = kiln.constant dense<[[1, -2], [3, 4], [-5, 6], [7, -127]]> : tensor<4x2xi8>
  %ws = kiln.constant dense<[0.5, 0.25]> : tensor<2xf32>
  %wz = kiln.constant dense<0> : tensor<2xi8>
  %w = kiln.dequantize %wq, %ws, %wz : (tensor<4x2xi8>, tensor<2xf32>, tensor<2xi8>) -> tensor<4x2xf32>
  %y = kiln.matmul %a, %w : (tensor<?x4xf32>, tensor<4x2xf32>) -> tensor<?x2xf32>
  return %y : tensor<?x2xf32>
}

// -----

// Tests that a weight read transposed ([N, K], a Gemm's transB) with one
// scale for the whole tensor folds too: every column gets that scale, and a
// rank-3 input keeps its rows.

// CHECK-LABEL: func.func @folds_transposed_per_tensor_weight
//       CHECK: %[[Q:.+]] = kiln.constant dense<{{\[\[\[}}1, 3, -5, 7, -2, 4, 6, -127{{((, 0){56})}}]
//       CHECK: %[[S:.+]] = kiln.constant dense<{{\[\[\[}}5.000000e-01, 5.000000e-01{{((, 0.000000e\+00){62})}}]]]>
//       CHECK: kiln.linear %arg0, %[[Q]] scales %[[S]] column_sums %{{.+}} {group_size = 4 : i64, input_scale = 2.500000e-01 : f32, input_zero_point = 0 : i64, packed, quantize_input} : (tensor<2x?x4xf32>, tensor<1x4x64xi8>, tensor<1x1x64xf32>, tensor<1x64xi32>) -> tensor<2x?x2xf32>
func.func @folds_transposed_per_tensor_weight(%x: tensor<2x?x4xf32>) -> tensor<2x?x2xf32> {
  %s = kiln.constant dense<0.25> : tensor<f32>
  %z = kiln.constant dense<-128> : tensor<i8>
  %q = kiln.quantize %x, %s, %z : (tensor<2x?x4xf32>, tensor<f32>, tensor<i8>) -> tensor<2x?x4xi8>
  %a = kiln.dequantize %q, %s, %z : (tensor<2x?x4xi8>, tensor<f32>, tensor<i8>) -> tensor<2x?x4xf32>
  %wq = kiln.constant dense<[[1, 3, -5, 7], [-2, 4, 6, -127]]> : tensor<2x4xi8>
  %ws = kiln.constant dense<0.5> : tensor<f32>
  %wz = kiln.constant dense<0> : tensor<i8>
  %w = kiln.dequantize %wq, %ws, %wz : (tensor<2x4xi8>, tensor<f32>, tensor<i8>) -> tensor<2x4xf32>
  %y = kiln.matmul %a, %w {transpose_b} : (tensor<2x?x4xf32>, tensor<2x4xf32>) -> tensor<2x?x2xf32>
  return %y : tensor<2x?x2xf32>
}

// -----

// Tests that a product whose K is not a multiple of 4 does not fold: the
// activation's quantize and dequantize stay, to run as written, and the
// weight's dequantize is computed into an f32 constant.

// CHECK-LABEL: func.func @odd_depth_runs_as_written
//       CHECK: %[[Q:.+]] = kiln.quantize %arg0
//       CHECK: %[[A:.+]] = kiln.dequantize %[[Q]]
//       CHECK: %[[W:.+]] = kiln.constant dense<{{\[\[}}5.000000e-01, -1.000000e+00], [1.500000e+00, 2.000000e+00], [-2.500000e+00, 3.000000e+00]]> : tensor<3x2xf32>
//       CHECK: kiln.matmul %[[A]], %[[W]]
//   CHECK-NOT: kiln.linear
func.func @odd_depth_runs_as_written(%x: tensor<?x3xf32>) -> tensor<?x2xf32> {
  %s = kiln.constant dense<0.05> : tensor<f32>
  %z = kiln.constant dense<0> : tensor<i8>
  %q = kiln.quantize %x, %s, %z : (tensor<?x3xf32>, tensor<f32>, tensor<i8>) -> tensor<?x3xi8>
  %a = kiln.dequantize %q, %s, %z : (tensor<?x3xi8>, tensor<f32>, tensor<i8>) -> tensor<?x3xf32>
  %wq = kiln.constant dense<[[1, -2], [3, 4], [-5, 6]]> : tensor<3x2xi8>
  %ws = kiln.constant dense<0.5> : tensor<f32>
  %wz = kiln.constant dense<0> : tensor<i8>
  %w = kiln.dequantize %wq, %ws, %wz : (tensor<3x2xi8>, tensor<f32>, tensor<i8>) -> tensor<3x2xf32>
  %y = kiln.matmul %a, %w : (tensor<?x3xf32>, tensor<3x2xf32>) -> tensor<?x2xf32>
  return %y : tensor<?x2xf32>
}

// -----

// Tests what does not fold: an activation dequantized with another scale
// than it was quantized with, a weight with a non-zero zero point, and a
// weight with a scale per row (K), which no int8 sum can factor out. Each
// weight's dequantize is computed, its scale and zero point broadcast as
// the op says: per row here, (value - zero point) * scale.

// CHECK-LABEL: func.func @mismatches_run_as_written
//       CHECK: kiln.quantize
//       CHECK: %[[A:.+]] = kiln.dequantize
//       CHECK: %[[OTHER:.+]] = kiln.dequantize
//       CHECK: %[[W:.+]] = kiln.constant dense<{{\[\[}}5.000000e-01, 1.000000e+00], [1.500000e+00, 2.000000e+00], [2.500000e+00, 3.000000e+00], [3.500000e+00, 4.000000e+00]]> : tensor<4x2xf32>
//       CHECK: kiln.matmul %[[OTHER]], %[[W]]
//       CHECK: %[[WZ:.+]] = kiln.constant dense<{{\[\[}}0.000000e+00, 5.000000e-01], [1.000000e+00, 1.500000e+00], [2.000000e+00, 2.500000e+00], [3.000000e+00, 3.500000e+00]]> : tensor<4x2xf32>
//       CHECK: kiln.matmul %[[A]], %[[WZ]]
//       CHECK: %[[WR:.+]] = kiln.constant dense<{{\[\[}}1.000000e+00, 2.000000e+00], [4.000000e+00, 6.000000e+00], [1.500000e+01, 1.800000e+01], [3.200000e+01, 3.600000e+01]]> : tensor<4x2xf32>
//       CHECK: kiln.matmul %[[A]], %[[WR]]
//   CHECK-NOT: kiln.linear
func.func @mismatches_run_as_written(%x: tensor<?x4xf32>) -> (tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x2xf32>) {
  %s = kiln.constant dense<0.05> : tensor<f32>
  %s2 = kiln.constant dense<0.1> : tensor<f32>
  %z = kiln.constant dense<0> : tensor<i8>
  %q = kiln.quantize %x, %s, %z : (tensor<?x4xf32>, tensor<f32>, tensor<i8>) -> tensor<?x4xi8>
  %a = kiln.dequantize %q, %s, %z : (tensor<?x4xi8>, tensor<f32>, tensor<i8>) -> tensor<?x4xf32>
  %other = kiln.dequantize %q, %s2, %z : (tensor<?x4xi8>, tensor<f32>, tensor<i8>) -> tensor<?x4xf32>
  %wq = kiln.constant dense<[[1, 2], [3, 4], [5, 6], [7, 8]]> : tensor<4x2xi8>
  %ws = kiln.constant dense<0.5> : tensor<f32>
  %w = kiln.dequantize %wq, %ws, %z : (tensor<4x2xi8>, tensor<f32>, tensor<i8>) -> tensor<4x2xf32>
  %y1 = kiln.matmul %other, %w : (tensor<?x4xf32>, tensor<4x2xf32>) -> tensor<?x2xf32>
  %wz = kiln.constant dense<1> : tensor<i8>
  %wzp = kiln.dequantize %wq, %ws, %wz : (tensor<4x2xi8>, tensor<f32>, tensor<i8>) -> tensor<4x2xf32>
  %y2 = kiln.matmul %a, %wzp : (tensor<?x4xf32>, tensor<4x2xf32>) -> tensor<?x2xf32>
  %rs = kiln.constant dense<[[1.0], [2.0], [3.0], [4.0]]> : tensor<4x1xf32>
  %rz = kiln.constant dense<[[0], [1], [0], [-1]]> : tensor<4x1xi8>
  %wr = kiln.dequantize %wq, %rs, %rz : (tensor<4x2xi8>, tensor<4x1xf32>, tensor<4x1xi8>) -> tensor<4x2xf32>
  %y3 = kiln.matmul %a, %wr : (tensor<?x4xf32>, tensor<4x2xf32>) -> tensor<?x2xf32>
  return %y1, %y2, %y3 : tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x2xf32>
}

// -----

// Tests that ONNX Runtime's dynamic product, cast<f32>(matmul_integer(q, W,
// z, 0)) times s * scale_W with q, s and z one dynamic_quantize's, becomes
// an int8 linear that quantizes its input by the whole input's range at run
// time; the scale product may come either way round, and the weight's scale
// per column.

// CHECK-LABEL: func.func @folds_dynamic_product
//  CHECK-SAME: (%[[X:.+]]: tensor<?x4xf32>)
//   CHECK-NOT: kiln.dynamic_quantize
//       CHECK: %[[Q:.+]] = kiln.constant dense<{{\[\[\[}}1, 3, -5, 7, -2, 4, 6, -127{{((, 0){56})}}]
//       CHECK: %[[S:.+]] = kiln.constant dense<{{\[\[\[}}5.000000e-01, 2.500000e-01{{((, 0.000000e\+00){62})}}]]]>
//       CHECK: %[[C:.+]] = kiln.constant dense<{{\[\[}}6, -119{{((, 0){62})}}]]>
//       CHECK: %[[Y:.+]] = kiln.linear %[[X]], %[[Q]] scales %[[S]] column_sums %[[C]] {group_size = 4 : i64, input_tensor_range, packed, quantize_input} : (tensor<?x4xf32>, tensor<1x4x64xi8>, tensor<1x1x64xf32>, tensor<1x64xi32>) -> tensor<?x2xf32>
//   CHECK-NOT: kiln.matmul_integer
//       CHECK: return %[[Y]]
func.func @folds_dynamic_product(%x: tensor<?x4xf32>) -> tensor<?x2xf32> {
  %q, %s, %z = kiln.dynamic_quantize %x : tensor<?x4xf32> -> tensor<?x4xi8>, tensor<f32>, tensor<i8>
  %wq = kiln.constant dense<[[1, -2], [3, 4], [-5, 6], [7, -127]]> : tensor<4x2xi8>
  %wz = kiln.constant dense<0> : tensor<i8>
  %p = kiln.matmul_integer %q, %wq, %z, %wz : (tensor<?x4xi8>, tensor<4x2xi8>, tensor<i8>, tensor<i8>) -> tensor<?x2xi32>
  %f = kiln.cast %p : tensor<?x2xi32> to tensor<?x2xf32>
  %ws = kiln.constant dense<[0.5, 0.25]> : tensor<2xf32>
  %scales = kiln.mul %ws, %s : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
  %y = kiln.mul %f, %scales : (tensor<?x2xf32>, tensor<2xf32>) -> tensor<?x2xf32>
  return %y : tensor<?x2xf32>
}

// -----

// Tests what of the dynamic product does not fold: a zero point that is
// not the dynamic_quantize's, and a scale product without its scale. The
// products run as written.

// CHECK-LABEL: func.func @dynamic_mismatches_run_as_written
//   CHECK-NOT: kiln.linear
//       CHECK: kiln.dynamic_quantize
//       CHECK: kiln.matmul_integer
//       CHECK: kiln.matmul_integer
//   CHECK-NOT: kiln.linear
func.func @dynamic_mismatches_run_as_written(%x: tensor<?x4xf32>) -> (tensor<?x2xf32>, tensor<?x2xf32>) {
  %q, %s, %z = kiln.dynamic_quantize %x : tensor<?x4xf32> -> tensor<?x4xi8>, tensor<f32>, tensor<i8>
  %wq = kiln.constant dense<[[1, -2], [3, 4], [-5, 6], [7, -127]]> : tensor<4x2xi8>
  %wz = kiln.constant dense<0> : tensor<i8>
  %other = kiln.constant dense<3> : tensor<i8>
  %p = kiln.matmul_integer %q, %wq, %other, %wz : (tensor<?x4xi8>, tensor<4x2xi8>, tensor<i8>, tensor<i8>) -> tensor<?x2xi32>
  %f = kiln.cast %p : tensor<?x2xi32> to tensor<?x2xf32>
  %ws = kiln.constant dense<0.5> : tensor<f32>
  %scales = kiln.mul %s, %ws : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %y = kiln.mul %f, %scales : (tensor<?x2xf32>, tensor<f32>) -> tensor<?x2xf32>
  %p2 = kiln.matmul_integer %q, %wq, %z, %wz : (tensor<?x4xi8>, tensor<4x2xi8>, tensor<i8>, tensor<i8>) -> tensor<?x2xi32>
  %f2 = kiln.cast %p2 : tensor<?x2xi32> to tensor<?x2xf32>
  %y2 = kiln.mul %f2, %ws : (tensor<?x2xf32>, tensor<f32>) -> tensor<?x2xf32>
  return %y, %y2 : tensor<?x2xf32>, tensor<?x2xf32>
}
