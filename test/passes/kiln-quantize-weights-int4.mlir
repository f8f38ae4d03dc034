// RUN: kiln-opt %s --split-input-file --kiln-quantize-weights="bits=4 group-size=2" --mlir-print-elementsattrs-with-hex-if-larger=-1 | FileCheck %s
// RUN: not kiln-opt %s --split-input-file --kiln-quantize-weights="bits=3" 2>&1 | FileCheck %s --check-prefix=BITS

// BITS: kiln-quantize-weights: bits must be 8 or 4, got 3

// Tests that with bits=4 a packed weight becomes 4-bit values two to a
// byte, with a scale and a zero point per column and group of rows (here
// groups of 2 of its 3 rows). Each group's range, widened to include 0,
// is cut into 15 steps: column 0 holds 1, -4 and 0.5, so its first group
// spans [-4, 1] (scale 1/3, zero point 12: 1 -> 15, -4 -> 0) and its
// second [0, 0.5] (scale 1/30, zero point 0: 0.5 -> 15); column 1 holds 3,
// 3 and -2 (scales 0.2 and 2/15, zero points 0 and 15). Column 32 (2, -1,
// 3: scales 0.2, zero points 5 and 0, values 15, 0, 15) and column 33
// (0.4, 1, 0: scale 1/15, values 6 and 15; then all zeros, scale 0) share
// the bytes of columns 0 and 1, in their high 4 bits: row 0 is bytes
// 15 | 15 << 4 = 255 and 15 | 6 << 4 = 111. The report names the mode.

// CHECK-LABEL: module attributes {kiln.quantization = {group_size = 2 : i64, lm_head = false, mode = "int4-weight", weights = [{columns = 64 : i64, name = "w", products = 1 : i64, relative_rms_error = {{.+}} : f64, rows = 3 : i64}]}}
// CHECK-LABEL: func.func @quantizes_values
//  CHECK-SAME: (%[[X:.+]]: tensor<?x3xf32>)
//       CHECK: %[[Q:.+]] = kiln.constant dense<{{\[\[\[}}255, 111{{((, 0){30})}}], [0, 255{{((, 0){30})}}], [255{{((, 0){31})}}]]]> : tensor<1x3x32xui8>
//       CHECK: %[[S:.+]] = kiln.constant dense<{{\[\[\[}}0.333333343, 2.000000e-01{{((, 0.000000e\+00){30})}}, 2.000000e-01, 0.0666666701{{((, 0.000000e\+00){30})}}], [0.0333333351, 0.13333334{{((, 0.000000e\+00){30})}}, 2.000000e-01{{((, 0.000000e\+00){31})}}]]]> : tensor<1x2x64xf32>
//       CHECK: %[[Z:.+]] = kiln.constant dense<{{\[\[\[}}12{{((, 0){31})}}, 5{{((, 0){31})}}], [0, 15{{((, 0){62})}}]]]> : tensor<1x2x64xui8>
//   CHECK-NOT: tensor<1x3x64xf32>
//       CHECK: %[[Y:.+]] = kiln.linear %[[X]], %[[Q]] scales %[[S]] zero_points %[[Z]] {group_size = 2 : i64, packed} : (tensor<?x3xf32>, tensor<1x3x32xui8>, tensor<1x2x64xf32>, tensor<1x2x64xui8>) -> tensor<?x64xf32>
//       CHECK: kiln.add %[[Y]], %[[Y]]
func.func @quantizes_values(%x: tensor<?x3xf32>) -> tensor<?x64xf32> {
  %w = kiln.constant dense<[[[1.0, 3.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 2.0, 0.4, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], [-4.0, 3.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], [0.5, -2.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 3.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]]]> : tensor<1x3x64xf32> loc("w")
  %y = kiln.linear %x, %w {packed} : (tensor<?x3xf32>, tensor<1x3x64xf32>) -> tensor<?x64xf32>
  %z = kiln.add %y, %y : (tensor<?x64xf32>, tensor<?x64xf32>) -> tensor<?x64xf32>
  return %z : tensor<?x64xf32>
}

// -----

// Tests that the LM head (the product making the result through a
// reshape) keeps its f32 weight, as with int8.

// CHECK-LABEL: func.func @lm_head
//       CHECK: kiln.linear %{{.+}}, %{{.+}} {packed} : (tensor<?x4xf32>, tensor<1x4x64xf32>)
func.func @lm_head(%x: tensor<?x4xf32>, %shape: tensor<3xi64>) -> tensor<?x?x64xf32> {
  %w = kiln.constant dense<0.25> : tensor<1x4x64xf32>
  %y = kiln.linear %x, %w {packed} : (tensor<?x4xf32>, tensor<1x4x64xf32>) -> tensor<?x64xf32>
  %r = kiln.reshape %y, %shape : (tensor<?x64xf32>, tensor<3xi64>) -> tensor<?x?x64xf32>
  return %r : tensor<?x?x64xf32>
}
