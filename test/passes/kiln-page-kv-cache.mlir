// RUN: kiln-opt %s --kiln-page-kv-cache=block-size=8 | FileCheck %s
// RUN: kiln-opt %s --kiln-page-kv-cache="block-size=8 kv-dtype=f16" | FileCheck %s --check-prefix=F16
// RUN: kiln-opt %s --kiln-page-kv-cache="block-size=8 kv-dtype=bf16" | FileCheck %s --check-prefix=BF16
// The cases where it does not fire are in kiln-page-kv-cache-errors.mlir.

// Tests that a decoder layer with the optimum KV interface (its past absorbed
// into the attention, the presents returned) gets the paged one: the past
// inputs give way to kv_cache [blocks, 1 layer, 2, 2 heads, 8, 16],
// block_tables and past_lengths; the attention becomes a paged_attention
// of layer 0 whose padded past is dim(attention_mask, 1) - dim(input_ids,
// 1), which also replaces the read of the past's length (and the input's
// batch the read of its batch); the presents become the new rows.

// CHECK-LABEL: func.func @main
//  CHECK-SAME: (%[[IDS:[^:]+]]: tensor<?x?xi64> {kiln.dims = ["batch", "sequence"], kiln.name = "input_ids"}
//  CHECK-SAME: %[[MASK:[^:]+]]: tensor<?x?xi64> {kiln.dims = ["batch", "total_sequence"], kiln.name = "attention_mask"}
//  CHECK-SAME: %[[Q:[^:]+]]: tensor<?x4x?x16xf32>, %[[K:[^:]+]]: tensor<?x2x?x16xf32>, %[[V:[^:]+]]: tensor<?x2x?x16xf32>
//  CHECK-SAME: %[[POOL:[^:]+]]: tensor<?x1x2x2x8x16xf32> {kiln.dims = ["kv_blocks", "", "", "", "", ""], kiln.name = "kv_cache"}
//  CHECK-SAME: %[[TABLES:[^:]+]]: tensor<?x?xi64> {kiln.dims = ["batch", "kv_table"], kiln.name = "block_tables"}
//  CHECK-SAME: %[[LENGTHS:[^:]+]]: tensor<?xi64> {kiln.dims = ["batch"], kiln.name = "past_lengths"})
//  CHECK-SAME: {kiln.dims = ["batch", "", "sequence", ""], kiln.name = "new_key_values.0.key"}
//  CHECK-SAME: {kiln.dims = ["batch", "", "sequence", ""], kiln.name = "new_key_values.0.value"}
//   CHECK-DAG: %[[TOTAL:.+]] = kiln.dim %[[MASK]] {index = 1 : i64}
//   CHECK-DAG: %[[NEW:.+]] = kiln.dim %[[IDS]] {index = 1 : i64}
//       CHECK: %[[WIDTH:.+]] = kiln.sub %[[TOTAL]], %[[NEW]]
//       CHECK: %[[BATCH:.+]] = kiln.dim %[[IDS]] {index = 0 : i64}
//       CHECK: %[[O:.+]] = kiln.paged_attention %[[Q]], %[[K]], %[[V]] cache %[[POOL]] tables %[[TABLES]] lengths %[[LENGTHS]] width %[[WIDTH]]
//  CHECK-SAME: layer = 0 : i64
//   CHECK-NOT: kiln.attention
//       CHECK: return %[[O]], %[[K]], %[[V]], %[[WIDTH]], %[[BATCH]]

// Tests that kv-dtype sets the pool's element type, which the paged
// attention reads as it is (the new rows stay f32).
//      F16: tensor<?x1x2x2x8x16xf16> {kiln.dims = ["kv_blocks", "", "", "", "", ""], kiln.name = "kv_cache"}
//      F16: kiln.paged_attention {{.*}} : (tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x1x2x2x8x16xf16>
//      BF16: kiln.paged_attention {{.*}} : (tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x1x2x2x8x16xbf16>
func.func @main(%ids: tensor<?x?xi64> {kiln.dims = ["batch", "sequence"], kiln.name = "input_ids"},
                %mask: tensor<?x?xi64> {kiln.dims = ["batch", "total_sequence"], kiln.name = "attention_mask"},
                %q: tensor<?x4x?x16xf32>, %k: tensor<?x2x?x16xf32>, %v: tensor<?x2x?x16xf32>,
                %pk: tensor<?x2x?x16xf32> {kiln.dims = ["batch", "", "past_sequence", ""], kiln.name = "past_key_values.0.key"},
                %pv: tensor<?x2x?x16xf32> {kiln.dims = ["batch", "", "past_sequence", ""], kiln.name = "past_key_values.0.value"})
    -> (tensor<?x4x?x16xf32>,
        tensor<?x2x?x16xf32> {kiln.dims = ["batch", "", "total_sequence", ""], kiln.name = "present.0.key"},
        tensor<?x2x?x16xf32> {kiln.dims = ["batch", "", "total_sequence", ""], kiln.name = "present.0.value"},
        tensor<i64>, tensor<i64>) {
  %o, %presents:2 = kiln.attention %q, %k, %v past %pk, %pv {scale = 2.500000e-01 : f32}
      : (tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>)
      -> (tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>)
  %p = kiln.dim %pk {index = 2 : i64} : tensor<?x2x?x16xf32> -> tensor<i64>
  %b = kiln.dim %pv {index = 0 : i64} : tensor<?x2x?x16xf32> -> tensor<i64>
  return %o, %presents#0, %presents#1, %p, %b : tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<i64>, tensor<i64>
}
