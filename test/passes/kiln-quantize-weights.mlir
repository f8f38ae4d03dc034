// RUN: kiln-opt %s --split-input-file --kiln-quantize-weights=group-size=2 --mlir-print-elementsattrs-with-hex-if-larger=-1 | FileCheck %s
// RUN: kiln-opt %s --split-input-file --kiln-quantize-weights="group-size=2 lm-head=true" | FileCheck %s --check-prefix=HEAD

// Tests that a packed weight becomes int8 values and a scale per column and
// group of rows (here groups of 2 of its 3 rows): column 0 holds 1, -4 and
// 0.5, so its first group's scale is 4/127 (1 -> 32, -4 -> -127) and its
// second 0.5/127 (0.5 -> 127); column 1 holds 3, 3 and -2; the other
// columns are zeros, with zero scales. The report records the weight.

// CHECK-LABEL: module attributes {kiln.quantization = {group_size = 2 : i64, lm_head = false, mode = "int8-weight", weights = [{columns = 64 : i64, name = "w", products = 1 : i64, relative_rms_error = {{.+}} : f64, rows = 3 : i64}]}}
// CHECK-LABEL: func.func @quantizes_values
//  CHECK-SAME: (%[[X:.+]]: tensor<?x3xf32>)
//       CHECK: %[[Q:.+]] = kiln.constant dense<{{\[\[\[}}32, 127{{((, 0){62})}}], [-127, 127{{((, 0){62})}}], [127, -127{{((, 0){62})}}]]]> : tensor<1x3x64xi8>
//       CHECK: %[[S:.+]] = kiln.constant dense<{{\[\[\[}}0.0314960629, 0.0236220472{{((, 0.000000e\+00){62})}}], [0.00393700786, 0.0157480314{{((, 0.000000e\+00){62})}}]]]> : tensor<1x2x64xf32>
//   CHECK-NOT: tensor<1x3x64xf32>
//       CHECK: %[[Y:.+]] = kiln.linear %[[X]], %[[Q]] scales %[[S]] {group_size = 2 : i64, packed} : (tensor<?x3xf32>, tensor<1x3x64xi8>, tensor<1x2x64xf32>) -> tensor<?x64xf32>
//       CHECK: kiln.add %[[Y]], %[[Y]]
func.func @quantizes_values(%x: tensor<?x3xf32>) -> tensor<?x64xf32> {
  %w = kiln.constant dense<[[[1.0, 3.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], [-4.0, 3.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], [0.5, -2.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]]]> : tensor<1x3x64xf32> loc("w")
  %y = kiln.linear %x, %w {packed} : (tensor<?x3xf32>, tensor<1x3x64xf32>) -> tensor<?x64xf32>
  %z = kiln.add %y, %y : (tensor<?x64xf32>, tensor<?x64xf32>) -> tensor<?x64xf32>
  return %z : tensor<?x64xf32>
}

// -----

// Tests that a weight shared by two products is quantized once and both
// read it, each keeping its epilogue.

// CHECK-LABEL: func.func @shared_weight
//       CHECK: %[[Q:.+]] = kiln.constant {{.+}} : tensor<2x4x64xi8>
//       CHECK: %[[S:.+]] = kiln.constant {{.+}} : tensor<2x2x64xf32>
//       CHECK: kiln.linear %{{.+}}, %[[Q]] scales %[[S]] activation silu {group_size = 2 : i64, packed}
//       CHECK: kiln.linear %{{.+}}, %[[Q]] scales %[[S]] bias %{{.+}} {group_size = 2 : i64, packed}
func.func @shared_weight(%x: tensor<?x4xf32>, %b: tensor<100xf32>) -> tensor<?x100xf32> {
  %w = kiln.constant dense<0.5> : tensor<2x4x64xf32>
  %g = kiln.linear %x, %w activation silu {packed} : (tensor<?x4xf32>, tensor<2x4x64xf32>) -> tensor<?x100xf32>
  %y = kiln.linear %x, %w bias %b {packed} : (tensor<?x4xf32>, tensor<2x4x64xf32>, tensor<100xf32>) -> tensor<?x100xf32>
  %z = kiln.mul %g, %y : (tensor<?x100xf32>, tensor<?x100xf32>) -> tensor<?x100xf32>
  return %z : tensor<?x100xf32>
}

// -----

// Tests that the product making the function's result, through a reshape
// (the LM head), keeps its f32 weight unless lm-head is set.

// CHECK-LABEL: func.func @lm_head
//       CHECK: kiln.linear %{{.+}}, %{{.+}} {packed} : (tensor<?x4xf32>, tensor<1x4x64xf32>)
//  HEAD-LABEL: func.func @lm_head
//       HEAD: kiln.linear %{{.+}}, %{{.+}} scales %{{.+}} {group_size = 2 : i64, packed} : (tensor<?x4xf32>, tensor<1x4x64xi8>, tensor<1x2x64xf32>)
func.func @lm_head(%x: tensor<?x4xf32>, %shape: tensor<3xi64>) -> tensor<?x?x64xf32> {
  %w = kiln.constant dense<0.25> : tensor<1x4x64xf32>
  %y = kiln.linear %x, %w {packed} : (tensor<?x4xf32>, tensor<1x4x64xf32>) -> tensor<?x64xf32>
  %r = kiln.reshape %y, %shape : (tensor<?x64xf32>, tensor<3xi64>) -> tensor<?x?x64xf32>
  return %r : tensor<?x?x64xf32>
}

// -----

// Tests what stays f32: a weight that an unpacked product reads, a packed
// weight that another op also reads, and a weight computed at run time.

// CHECK-LABEL: func.func @not_quantized
//   CHECK-NOT: scales
//   CHECK-NOT: xi8>
func.func @not_quantized(%x: tensor<?x4xf32>, %computed: tensor<1x4x64xf32>) -> (tensor<?x64xf32>, tensor<?x64xf32>, tensor<1x4x64xf32>, tensor<?x64xf32>) {
  %unpacked = kiln.constant dense<1.0> : tensor<4x64xf32>
  %a = kiln.linear %x, %unpacked : (tensor<?x4xf32>, tensor<4x64xf32>) -> tensor<?x64xf32>
  %shared = kiln.constant dense<2.0> : tensor<1x4x64xf32>
  %b = kiln.linear %x, %shared {packed} : (tensor<?x4xf32>, tensor<1x4x64xf32>) -> tensor<?x64xf32>
  %c = kiln.add %shared, %shared : (tensor<1x4x64xf32>, tensor<1x4x64xf32>) -> tensor<1x4x64xf32>
  %d = kiln.linear %x, %computed {packed} : (tensor<?x4xf32>, tensor<1x4x64xf32>) -> tensor<?x64xf32>
  %e = kiln.add %a, %b : (tensor<?x64xf32>, tensor<?x64xf32>) -> tensor<?x64xf32>
  %f = kiln.add %d, %d : (tensor<?x64xf32>, tensor<?x64xf32>) -> tensor<?x64xf32>
  return %e, %e, %c, %f : tensor<?x64xf32>, tensor<?x64xf32>, tensor<1x4x64xf32>, tensor<?x64xf32>
}
