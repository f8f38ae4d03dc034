// RUN: not kiln-opt %s --split-input-file --kiln-quantize-weights=quantize-inputs=true 2>&1 | FileCheck %s

// The weights' locations are their names only, as an importer gives them,
// so the errors are checked by text rather than by -verify-diagnostics.

// Tests that a product whose weight has no calibrated range is refused,
// naming the weight: calibration never saw its input.

// CHECK: error: loc("w"): kiln-quantize-weights: no calibrated input range [lo, hi] for the products of weight 'w'

module attributes {kiln.calibrated_input_ranges = {other = array<f32: -1.0, 1.0>}} {
func.func @missing_range(%x: tensor<?x4xf32>) -> tensor<?x64xf32> {
  %w = kiln.constant dense<0.5> : tensor<1x4x64xf32> loc("w")
  %y = kiln.linear %x, %w {packed} : (tensor<?x4xf32>, tensor<1x4x64xf32>) -> tensor<?x64xf32>
  %z = kiln.add %y, %y : (tensor<?x64xf32>, tensor<?x64xf32>) -> tensor<?x64xf32>
  return %z : tensor<?x64xf32>
}
}

// -----

// Tests that a range whose ends are out of order is refused.

// CHECK: error: loc("w"): kiln-quantize-weights: no calibrated input range [lo, hi] for the products of weight 'w'

module attributes {kiln.calibrated_input_ranges = {w = array<f32: 2.0, 1.0>}} {
func.func @reversed_range(%x: tensor<?x4xf32>) -> tensor<?x64xf32> {
  %w = kiln.constant dense<0.5> : tensor<1x4x64xf32> loc("w")
  %y = kiln.linear %x, %w {packed} : (tensor<?x4xf32>, tensor<1x4x64xf32>) -> tensor<?x64xf32>
  %z = kiln.add %y, %y : (tensor<?x64xf32>, tensor<?x64xf32>) -> tensor<?x64xf32>
  return %z : tensor<?x64xf32>
}
}
