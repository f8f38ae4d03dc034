// RUN: kiln-opt %s --split-input-file --kiln-pack-weights | FileCheck %s
// RUN: kiln-opt %s --split-input-file --kiln-pack-weights=max-padding-percent=10000 --mlir-print-elementsattrs-with-hex-if-larger=-1 | FileCheck %s --check-prefix=VALUES

// Tests that a product by a constant [K, N] weight reads it packed: panels of
// 64 columns, each K rows, zeros past N, and that the matmul becomes a linear
// without an epilogue. By default N = 3 would be 61 columns of padding, far
// over 25% of N, so the weight stays as it is.

// CHECK-LABEL: func.func @packs_matmul_weight
//       CHECK: kiln.matmul
//   CHECK-NOT: {packed}

// VALUES-LABEL: func.func @packs_matmul_weight
//  VALUES-SAME: (%[[X:.+]]: tensor<?x2xf32>)
//       VALUES: %[[W:.+]] = kiln.constant dense<{{\[\[\[}}1.000000e+00, 2.000000e+00, 3.000000e+00{{((, 0.000000e\+00){61})}}], [4.000000e+00, 5.000000e+00, 6.000000e+00{{((, 0.000000e\+00){61})}}]]]> : tensor<1x2x64xf32>
//       VALUES: %[[Y:.+]] = kiln.linear %[[X]], %[[W]] {packed} : (tensor<?x2xf32>, tensor<1x2x64xf32>) -> tensor<?x3xf32>
//   VALUES-NOT: kiln.matmul
//       VALUES: return %[[Y]]
func.func @packs_matmul_weight(%x: tensor<?x2xf32>) -> tensor<?x3xf32> {
  %w = kiln.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %y = kiln.matmul %x, %w : (tensor<?x2xf32>, tensor<2x3xf32>) -> tensor<?x3xf32>
  return %y : tensor<?x3xf32>
}

// -----

// Tests that a weight stored [N, K] (transpose_b) is transposed into the
// same panels.

// VALUES-LABEL: func.func @packs_transposed_weight
//       VALUES: %[[W:.+]] = kiln.constant dense<{{\[\[\[}}1.000000e+00, 2.000000e+00, 3.000000e+00{{((, 0.000000e\+00){61})}}], [4.000000e+00, 5.000000e+00, 6.000000e+00{{((, 0.000000e\+00){61})}}]]]> : tensor<1x2x64xf32>
//       VALUES: kiln.linear %{{.+}}, %[[W]] {packed} : (tensor<4x2xf32>, tensor<1x2x64xf32>) -> tensor<4x3xf32>
func.func @packs_transposed_weight(%x: tensor<4x2xf32>) -> tensor<4x3xf32> {
  %w = kiln.constant dense<[[1.0, 4.0], [2.0, 5.0], [3.0, 6.0]]> : tensor<3x2xf32>
  %y = kiln.matmul %x, %w {transpose_b} : (tensor<4x2xf32>, tensor<3x2xf32>) -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}

// -----

// Tests that columns past the first 64 go to a second panel, which holds
// the two remaining columns of each row and zeros.

// VALUES-LABEL: func.func @packs_two_panels
//       VALUES: kiln.constant dense<{{\[\[\[}}1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00, 5.000000e+00, 6.000000e+00, 7.000000e+00, 8.000000e+00, 9.000000e+00, 1.000000e+01, 1.100000e+01, 1.200000e+01, 1.300000e+01, 1.400000e+01, 1.500000e+01, 1.600000e+01, 1.700000e+01, 1.800000e+01, 1.900000e+01, 2.000000e+01, 2.100000e+01, 2.200000e+01, 2.300000e+01, 2.400000e+01, 2.500000e+01, 2.600000e+01, 2.700000e+01, 2.800000e+01, 2.900000e+01, 3.000000e+01, 3.100000e+01, 3.200000e+01, 3.300000e+01, 3.400000e+01, 3.500000e+01, 3.600000e+01, 3.700000e+01, 3.800000e+01, 3.900000e+01, 4.000000e+01, 4.100000e+01, 4.200000e+01, 4.300000e+01, 4.400000e+01, 4.500000e+01, 4.600000e+01, 4.700000e+01, 4.800000e+01, 4.900000e+01, 5.000000e+01, 5.100000e+01, 5.200000e+01, 5.300000e+01, 5.400000e+01, 5.500000e+01, 5.600000e+01, 5.700000e+01, 5.800000e+01, 5.900000e+01, 6.000000e+01, 6.100000e+01, 6.200000e+01, 6.300000e+01, 6.400000e+01], [6.700000e+01, 6.800000e+01, 6.900000e+01, 7.000000e+01, 7.100000e+01, 7.200000e+01, 7.300000e+01, 7.400000e+01, 7.500000e+01, 7.600000e+01, 7.700000e+01, 7.800000e+01, 7.900000e+01, 8.000000e+01, 8.100000e+01, 8.200000e+01, 8.300000e+01, 8.400000e+01, 8.500000e+01, 8.600000e+01, 8.700000e+01, 8.800000e+01, 8.900000e+01, 9.000000e+01, 9.100000e+01, 9.200000e+01, 9.300000e+01, 9.400000e+01, 9.500000e+01, 9.600000e+01, 9.700000e+01, 9.800000e+01, 9.900000e+01, 1.000000e+02, 1.010000e+02, 1.020000e+02, 1.030000e+02, 1.040000e+02, 1.050000e+02, 1.060000e+02, 1.070000e+02, 1.080000e+02, 1.090000e+02, 1.100000e+02, 1.110000e+02, 1.120000e+02, 1.130000e+02, 1.140000e+02, 1.150000e+02, 1.160000e+02, 1.170000e+02, 1.180000e+02, 1.190000e+02, 1.200000e+02, 1.210000e+02, 1.220000e+02, 1.230000e+02, 1.240000e+02, 1.250000e+02, 1.260000e+02, 1.270000e+02, 1.280000e+02, 1.290000e+02, 1.300000e+02]], {{\[\[}}6.500000e+01, 6.600000e+01{{((, 0.000000e\+00){62})}}], [1.310000e+02, 1.320000e+02{{((, 0.000000e\+00){62})}}]]]> : tensor<2x2x64xf32>
func.func @packs_two_panels(%x: tensor<?x2xf32>) -> tensor<?x66xf32> {
  %w = kiln.constant dense<[[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0, 20.0, 21.0, 22.0, 23.0, 24.0, 25.0, 26.0, 27.0, 28.0, 29.0, 30.0, 31.0, 32.0, 33.0, 34.0, 35.0, 36.0, 37.0, 38.0, 39.0, 40.0, 41.0, 42.0, 43.0, 44.0, 45.0, 46.0, 47.0, 48.0, 49.0, 50.0, 51.0, 52.0, 53.0, 54.0, 55.0, 56.0, 57.0, 58.0, 59.0, 60.0, 61.0, 62.0, 63.0, 64.0, 65.0, 66.0], [67.0, 68.0, 69.0, 70.0, 71.0, 72.0, 73.0, 74.0, 75.0, 76.0, 77.0, 78.0, 79.0, 80.0, 81.0, 82.0, 83.0, 84.0, 85.0, 86.0, 87.0, 88.0, 89.0, 90.0, 91.0, 92.0, 93.0, 94.0, 95.0, 96.0, 97.0, 98.0, 99.0, 100.0, 101.0, 102.0, 103.0, 104.0, 105.0, 106.0, 107.0, 108.0, 109.0, 110.0, 111.0, 112.0, 113.0, 114.0, 115.0, 116.0, 117.0, 118.0, 119.0, 120.0, 121.0, 122.0, 123.0, 124.0, 125.0, 126.0, 127.0, 128.0, 129.0, 130.0, 131.0, 132.0]]> : tensor<2x66xf32>
  %y = kiln.matmul %x, %w : (tensor<?x2xf32>, tensor<2x66xf32>) -> tensor<?x66xf32>
  return %y : tensor<?x66xf32>
}

// -----

// Tests that a linear's weight stored [N, K] is transposed into the panels
// and the linear loses transpose_b.

// VALUES-LABEL: func.func @packs_transposed_linear
//       VALUES: %[[W:.+]] = kiln.constant dense<{{\[\[\[}}1.000000e+00, 2.000000e+00, 3.000000e+00{{((, 0.000000e\+00){61})}}], [4.000000e+00, 5.000000e+00, 6.000000e+00{{((, 0.000000e\+00){61})}}]]]> : tensor<1x2x64xf32>
//       VALUES: kiln.linear %{{.+}}, %[[W]] activation relu {packed} : (tensor<4x2xf32>, tensor<1x2x64xf32>) -> tensor<4x3xf32>
func.func @packs_transposed_linear(%x: tensor<4x2xf32>) -> tensor<4x3xf32> {
  %w = kiln.constant dense<[[1.0, 4.0], [2.0, 5.0], [3.0, 6.0]]> : tensor<3x2xf32>
  %y = kiln.linear %x, %w activation relu {transpose_b} : (tensor<4x2xf32>, tensor<3x2xf32>) -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}

// -----

// Tests that a weight whose blob holds no data is left alone.

// VALUES-LABEL: func.func @no_pack_without_data
//       VALUES: kiln.matmul
//   VALUES-NOT: {packed}
func.func @no_pack_without_data(%x: tensor<?x2xf32>) -> tensor<?x3xf32> {
  %w = kiln.constant dense_resource<absent> : tensor<2x3xf32>
  %y = kiln.matmul %x, %w : (tensor<?x2xf32>, tensor<2x3xf32>) -> tensor<?x3xf32>
  return %y : tensor<?x3xf32>
}

// -----

// Tests that a weight in a resource blob (how the importer keeps large
// weights) is packed into a new blob, and the old one is no longer used.

// VALUES-LABEL: func.func @packs_resource_weight
//       VALUES: %[[W:.+]] = kiln.constant dense_resource<w_packed> : tensor<1x2x64xf32>
//       VALUES: kiln.linear %{{.+}}, %[[W]] {packed}
//   VALUES-NOT: dense_resource<w>
//       VALUES: w_packed: "0x400000000000803F0000004000004040{{((00000000){61})}}000080400000A0400000C040{{((00000000){61})}}"
func.func @packs_resource_weight(%x: tensor<?x2xf32>) -> tensor<?x3xf32> {
  %w = kiln.constant dense_resource<w> : tensor<2x3xf32>
  %y = kiln.matmul %x, %w : (tensor<?x2xf32>, tensor<2x3xf32>) -> tensor<?x3xf32>
  return %y : tensor<?x3xf32>
}
{-#
  dialect_resources: {
    builtin: {
      w: "0x040000000000803F0000004000004040000080400000A0400000C040"
    }
  }
#-}

// -----

// Tests that a linear keeps its epilogue on the packed weight, that two
// products by one weight share one packed copy, and that a batched input
// (rows flattened by the lowering) is fine.

// CHECK-LABEL: func.func @keeps_epilogues_and_shares
//  CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<?x?x8xf32>, %[[B:[a-zA-Z0-9_]+]]: tensor<64xf32>, %[[R:[a-zA-Z0-9_]+]]: tensor<?x?x64xf32>)
//       CHECK: %[[W:.+]] = kiln.constant dense<{{.+}}> : tensor<1x8x64xf32>
//   CHECK-NOT: kiln.constant
//       CHECK: %[[A:.+]] = kiln.linear %[[X]], %[[W]] bias %[[B]] activation gelu residual %[[R]] {packed} : (tensor<?x?x8xf32>, tensor<1x8x64xf32>, tensor<64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
//       CHECK: %[[P:.+]] = kiln.linear %[[X]], %[[W]] {packed} : (tensor<?x?x8xf32>, tensor<1x8x64xf32>) -> tensor<?x?x64xf32>
func.func @keeps_epilogues_and_shares(%x: tensor<?x?x8xf32>, %b: tensor<64xf32>, %r: tensor<?x?x64xf32>) -> (tensor<?x?x64xf32>, tensor<?x?x64xf32>) {
  %w = kiln.constant dense<0.5> : tensor<8x64xf32>
  %a = kiln.linear %x, %w bias %b activation gelu residual %r : (tensor<?x?x8xf32>, tensor<8x64xf32>, tensor<64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  %p = kiln.matmul %x, %w : (tensor<?x?x8xf32>, tensor<8x64xf32>) -> tensor<?x?x64xf32>
  return %a, %p : tensor<?x?x64xf32>, tensor<?x?x64xf32>
}

// -----

// Tests that a product whose result type lost N gets it back on the packed
// linear (which needs a static N), cast to the type its users expect.

// CHECK-LABEL: func.func @restores_static_n
//       CHECK: %[[Y:.+]] = kiln.linear %{{.+}}, %{{.+}} {packed} : (tensor<?x8xf32>, tensor<2x8x64xf32>) -> tensor<?x120xf32>
//       CHECK: %[[C:.+]] = tensor.cast %[[Y]] : tensor<?x120xf32> to tensor<?x?xf32>
//       CHECK: return %[[C]]
func.func @restores_static_n(%x: tensor<?x8xf32>) -> tensor<?x?xf32> {
  %w = kiln.constant dense<1.0> : tensor<8x120xf32>
  %y = kiln.matmul %x, %w : (tensor<?x8xf32>, tensor<8x120xf32>) -> tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}

// -----

// Tests that N = 240 (16 columns of padding, 7%) is packed, and N = 72 (56
// columns, 78%) is not.

// CHECK-LABEL: func.func @padding_bound
//       CHECK: kiln.linear %{{.+}}, %{{.+}} {packed} : (tensor<?x8xf32>, tensor<4x8x64xf32>) -> tensor<?x240xf32>
//       CHECK: kiln.matmul %{{.+}}, %{{.+}} : (tensor<?x8xf32>, tensor<8x72xf32>) -> tensor<?x72xf32>
func.func @padding_bound(%x: tensor<?x8xf32>) -> (tensor<?x240xf32>, tensor<?x72xf32>) {
  %w240 = kiln.constant dense<1.0> : tensor<8x240xf32>
  %w72 = kiln.constant dense<1.0> : tensor<8x72xf32>
  %a = kiln.matmul %x, %w240 : (tensor<?x8xf32>, tensor<8x240xf32>) -> tensor<?x240xf32>
  %b = kiln.matmul %x, %w72 : (tensor<?x8xf32>, tensor<8x72xf32>) -> tensor<?x72xf32>
  return %a, %b : tensor<?x240xf32>, tensor<?x72xf32>
}

// -----

// Tests that a weight another kind of op also reads (a tied embedding table
// that a gather uses) is not packed, which would store it twice.

// CHECK-LABEL: func.func @no_pack_other_user
//       CHECK: %[[W:.+]] = kiln.constant dense<1.000000e+00> : tensor<64x64xf32>
//       CHECK: kiln.gather %[[W]]
//       CHECK: kiln.matmul %{{.+}}, %[[W]] :
//   CHECK-NOT: {packed}
func.func @no_pack_other_user(%ids: tensor<?xi64>, %x: tensor<?x64xf32>) -> (tensor<?x64xf32>, tensor<?x64xf32>) {
  %w = kiln.constant dense<1.0> : tensor<64x64xf32>
  %e = kiln.gather %w[%ids] {axis = 0 : i64} : (tensor<64x64xf32>, tensor<?xi64>) -> tensor<?x64xf32>
  %y = kiln.matmul %x, %w : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  return %e, %y : tensor<?x64xf32>, tensor<?x64xf32>
}

// -----

// Tests that a weight read both ways round (as [K, N] and as [N, K]) is not
// packed: each product would need its own copy.

// CHECK-LABEL: func.func @no_pack_mixed_transposition
//       CHECK: kiln.matmul %{{.+}}, %{{.+}} :
//       CHECK: kiln.matmul %{{.+}}, %{{.+}} {transpose_b}
//   CHECK-NOT: {packed}
func.func @no_pack_mixed_transposition(%x: tensor<?x64xf32>) -> (tensor<?x64xf32>, tensor<?x64xf32>) {
  %w = kiln.constant dense<1.0> : tensor<64x64xf32>
  %a = kiln.matmul %x, %w : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  %b = kiln.matmul %x, %w {transpose_b} : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  return %a, %b : tensor<?x64xf32>, tensor<?x64xf32>
}

// -----

// Tests that a constant on the left of a product, a weight that is not a
// constant and an f16 weight are left alone.

// CHECK-LABEL: func.func @no_pack_others
//   CHECK-NOT: {packed}
//   CHECK-NOT: kiln.linear
func.func @no_pack_others(%x: tensor<64x?xf32>, %xt: tensor<?x64xf32>, %wa: tensor<64x64xf32>, %h: tensor<?x64xf16>)
    -> (tensor<64x?xf32>, tensor<?x64xf32>, tensor<?x64xf16>) {
  %w = kiln.constant dense<1.0> : tensor<64x64xf32>
  %a = kiln.matmul %w, %x : (tensor<64x64xf32>, tensor<64x?xf32>) -> tensor<64x?xf32>
  %b = kiln.matmul %xt, %wa : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  %w16 = kiln.constant dense<1.0> : tensor<64x64xf16>
  %d = kiln.matmul %h, %w16 : (tensor<?x64xf16>, tensor<64x64xf16>) -> tensor<?x64xf16>
  return %a, %b, %d : tensor<64x?xf32>, tensor<?x64xf32>, tensor<?x64xf16>
}
