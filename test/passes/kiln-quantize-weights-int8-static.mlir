// RUN: kiln-opt %s --split-input-file --kiln-quantize-weights=quantize-inputs=true | FileCheck %s
// RUN: not kiln-opt %s --split-input-file --kiln-quantize-weights=quantize-inputs=false 2>&1 | FileCheck %s --check-prefix=WEIGHT-ONLY

// Tests that calibrated input ranges (kilnc --quantize=int8 --calibration)
// give each W8A8 product a fixed input quantization, and that the pass
// consumes the module attribute. [-1, 3] is 4 wide: scale 4/255, and 0
// lands on round(1 / (4/255)) = round(63.75) = 64.

// WEIGHT-ONLY: kiln-quantize-weights: calibrated input ranges need quantize-inputs

//   CHECK-NOT: kiln.calibrated_input_ranges
// CHECK-LABEL: module attributes {kiln.quantization = {kept_f32 = [], lm_head = false, mode = "int8", weights = [{columns = 64 : i64, input_scale = 0.0156862754 : f32, input_zero_point = 64 : i64, name = "w", products = 1 : i64, relative_rms_error = {{.+}} : f64, rows = 4 : i64}]}}
// CHECK-LABEL: func.func @fixed_input_quantization
//       CHECK: kiln.linear %{{.+}}, %{{.+}} scales %{{.+}} column_sums %{{.+}} {group_size = 4 : i64, input_scale = 0.0156862754 : f32, input_zero_point = 64 : i64, packed, quantize_input} : (tensor<?x4xf32>, tensor<1x4x64xi8>, tensor<1x1x64xf32>, tensor<1x64xi32>) -> tensor<?x64xf32>
module attributes {kiln.calibrated_input_ranges = {w = array<f32: -1.0, 3.0>}} {
func.func @fixed_input_quantization(%x: tensor<?x4xf32>) -> tensor<?x64xf32> {
  %w = kiln.constant dense<0.5> : tensor<1x4x64xf32> loc("w")
  %y = kiln.linear %x, %w {packed} : (tensor<?x4xf32>, tensor<1x4x64xf32>) -> tensor<?x64xf32>
  %z = kiln.add %y, %y : (tensor<?x64xf32>, tensor<?x64xf32>) -> tensor<?x64xf32>
  return %z : tensor<?x64xf32>
}
}

// -----

// Tests that a range that never went below 0 is widened to include it: its
// zero point is 0 and its 255 steps span [0, hi]. An input that was always
// 0 gets scale 1 (any positive scale represents it exactly).

// CHECK-LABEL: func.func @ranges_include_zero
//       CHECK: kiln.linear {{.+}} {group_size = 4 : i64, input_scale = 0.00784313772 : f32, input_zero_point = 0 : i64, packed, quantize_input}
//       CHECK: kiln.linear {{.+}} {group_size = 4 : i64, input_scale = 1.000000e+00 : f32, input_zero_point = 0 : i64, packed, quantize_input}
module attributes {kiln.calibrated_input_ranges = {positive = array<f32: 0.5, 2.0>, zeros = array<f32: 0.0, 0.0>}} {
func.func @ranges_include_zero(%x: tensor<?x4xf32>) -> tensor<?x64xf32> {
  %a = kiln.constant dense<0.5> : tensor<1x4x64xf32> loc("positive")
  %b = kiln.constant dense<0.25> : tensor<1x4x64xf32> loc("zeros")
  %y = kiln.linear %x, %a {packed} : (tensor<?x4xf32>, tensor<1x4x64xf32>) -> tensor<?x64xf32>
  %z = kiln.linear %x, %b {packed} : (tensor<?x4xf32>, tensor<1x4x64xf32>) -> tensor<?x64xf32>
  %s = kiln.add %y, %z : (tensor<?x64xf32>, tensor<?x64xf32>) -> tensor<?x64xf32>
  return %s : tensor<?x64xf32>
}
}

// -----

// Tests that a weight whose K is not a multiple of 4 stays f32 and needs no
// range, and that without calibrated ranges the inputs are quantized per
// row at run time (int8-dynamic).

// CHECK-LABEL: module attributes {kiln.quantization = {kept_f32 = [{columns = 64 : i64, name = "odd", reason = "K is not a multiple of 4", rows = 3 : i64}], lm_head = false, mode = "int8", weights = []}}
// CHECK-LABEL: func.func @odd_depth_needs_no_range
//       CHECK: kiln.linear %{{.+}}, %{{.+}} {packed} : (tensor<?x3xf32>, tensor<1x3x64xf32>) -> tensor<?x64xf32>
module attributes {kiln.calibrated_input_ranges = {}} {
func.func @odd_depth_needs_no_range(%x: tensor<?x3xf32>) -> tensor<?x64xf32> {
  %w = kiln.constant dense<0.5> : tensor<1x3x64xf32> loc("odd")
  %y = kiln.linear %x, %w {packed} : (tensor<?x3xf32>, tensor<1x3x64xf32>) -> tensor<?x64xf32>
  %z = kiln.add %y, %y : (tensor<?x64xf32>, tensor<?x64xf32>) -> tensor<?x64xf32>
  return %z : tensor<?x64xf32>
}
}
