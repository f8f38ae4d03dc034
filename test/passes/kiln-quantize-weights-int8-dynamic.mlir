// RUN: kiln-opt %s --split-input-file --kiln-quantize-weights=quantize-inputs=true --mlir-print-elementsattrs-with-hex-if-larger=-1 | FileCheck %s
// RUN: kiln-opt %s --split-input-file --kiln-quantize-weights="quantize-inputs=true lm-head=true" | FileCheck %s --check-prefix=HEAD
// RUN: not kiln-opt %s --split-input-file --kiln-quantize-weights="bits=4 quantize-inputs=true" 2>&1 | FileCheck %s --check-prefix=BITS

// BITS: kiln-quantize-weights: quantize-inputs needs bits=8, got 4

// Tests that with quantize-inputs (W8A8) a packed weight becomes int8 values
// with one scale per column, whatever the group size, laid out in row
// quads, with the column sums, and that the linear quantizes its input.
// Column 0 holds 1, -4, 0.5 and 2: scale 4/127, values 32, -127, 16 and 64
// (63.5 rounds to even), sum -15; column 1 holds 3, 3, -2 and 0: scale
// 3/127, values 127, 127, -85 and 0, sum 169. In quads, a panel's first row
// of 64 bytes holds rows 0-3 of columns 0-15, 4 bytes a column.

// CHECK-LABEL: module attributes {kiln.quantization = {kept_f32 = [], lm_head = false, mode = "int8-dynamic", weights = [{columns = 64 : i64, name = "w", products = 1 : i64, relative_rms_error = {{.+}} : f64, rows = 4 : i64}]}}
// CHECK-LABEL: func.func @quantizes_values_and_inputs
//  CHECK-SAME: (%[[X:.+]]: tensor<?x4xf32>)
//       CHECK: %[[Q:.+]] = kiln.constant dense<{{\[\[\[}}32, -127, 16, 64, 127, 127, -85, 0{{((, 0){56})}}], [0{{((, 0){63})}}], [0{{((, 0){63})}}], [0{{((, 0){63})}}]]]> : tensor<1x4x64xi8>
//       CHECK: %[[S:.+]] = kiln.constant dense<{{\[\[\[}}0.0314960629, 0.0236220472{{((, 0.000000e\+00){62})}}]]]> : tensor<1x1x64xf32>
//       CHECK: %[[C:.+]] = kiln.constant dense<{{\[\[}}-15, 169{{((, 0){62})}}]]> : tensor<1x64xi32>
//       CHECK: kiln.linear %[[X]], %[[Q]] scales %[[S]] column_sums %[[C]] {group_size = 4 : i64, packed, quantize_input} : (tensor<?x4xf32>, tensor<1x4x64xi8>, tensor<1x1x64xf32>, tensor<1x64xi32>) -> tensor<?x64xf32>
func.func @quantizes_values_and_inputs(%x: tensor<?x4xf32>) -> tensor<?x64xf32> {
  %w = kiln.constant dense<[[[1.0, 3.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], [-4.0, 3.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], [0.5, -2.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], [2.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]]]> : tensor<1x4x64xf32> loc("w")
  %y = kiln.linear %x, %w {packed} : (tensor<?x4xf32>, tensor<1x4x64xf32>) -> tensor<?x64xf32>
  %z = kiln.add %y, %y : (tensor<?x64xf32>, tensor<?x64xf32>) -> tensor<?x64xf32>
  return %z : tensor<?x64xf32>
}

// -----

// Tests that a weight whose K is not a multiple of 4 stays f32, and that
// the report says why: its rows do not fill the quads of the dot products.

// CHECK-LABEL: module attributes {kiln.quantization = {kept_f32 = [{columns = 64 : i64, name = "odd", reason = "K is not a multiple of 4", rows = 3 : i64}], lm_head = false, mode = "int8-dynamic", weights = []}}
// CHECK-LABEL: func.func @odd_depth_stays_f32
//       CHECK: kiln.linear %{{.+}}, %{{.+}} {packed} : (tensor<?x3xf32>, tensor<1x3x64xf32>) -> tensor<?x64xf32>
func.func @odd_depth_stays_f32(%x: tensor<?x3xf32>) -> tensor<?x64xf32> {
  %w = kiln.constant dense<[[[1.0, 3.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], [-4.0, 3.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], [0.5, -2.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]]]> : tensor<1x3x64xf32> loc("odd")
  %y = kiln.linear %x, %w {packed} : (tensor<?x3xf32>, tensor<1x3x64xf32>) -> tensor<?x64xf32>
  %z = kiln.add %y, %y : (tensor<?x64xf32>, tensor<?x64xf32>) -> tensor<?x64xf32>
  return %z : tensor<?x64xf32>
}

// -----

// Tests that the product making the function's result (the LM head) keeps
// its f32 weight unless lm-head is set.

// CHECK-LABEL: func.func @lm_head
//       CHECK: kiln.linear %{{.+}}, %{{.+}} {packed} : (tensor<?x8xf32>, tensor<1x8x64xf32>)
//  HEAD-LABEL: func.func @lm_head
//        HEAD: kiln.linear %{{.+}}, %{{.+}} scales %{{.+}} column_sums %{{.+}} {group_size = 8 : i64, packed, quantize_input} : (tensor<?x8xf32>, tensor<1x8x64xi8>, tensor<1x1x64xf32>, tensor<1x64xi32>)
func.func @lm_head(%x: tensor<?x8xf32>) -> tensor<?x64xf32> {
  %w = kiln.constant dense<0.25> : tensor<1x8x64xf32>
  %y = kiln.linear %x, %w {packed} : (tensor<?x8xf32>, tensor<1x8x64xf32>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}
