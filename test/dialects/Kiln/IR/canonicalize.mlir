// RUN: kiln-opt %s --split-input-file --canonicalize | FileCheck %s

// Tests that a cast to the operand's own type folds away.

// CHECK-LABEL: func.func @cast_same_type
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<?x8xf32>)
// CHECK-NOT: kiln.cast
// CHECK: return %[[X]] : tensor<?x8xf32>
func.func @cast_same_type(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %y = kiln.cast %x : tensor<?x8xf32> to tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// -----

// Tests that a cast that changes the element type, or refines a dynamic
// dimension, is kept.

// CHECK-LABEL: func.func @cast_kept
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<?x8xf32>)
// CHECK: %[[H:.*]] = kiln.cast %[[X]] : tensor<?x8xf32> to tensor<?x8xf16>
// CHECK: %[[S:.*]] = kiln.cast %[[X]] : tensor<?x8xf32> to tensor<4x8xf32>
// CHECK: return %[[H]], %[[S]]
func.func @cast_kept(%x: tensor<?x8xf32>) -> (tensor<?x8xf16>, tensor<4x8xf32>) {
  %h = kiln.cast %x : tensor<?x8xf32> to tensor<?x8xf16>
  %s = kiln.cast %x : tensor<?x8xf32> to tensor<4x8xf32>
  return %h, %s : tensor<?x8xf16>, tensor<4x8xf32>
}

// -----

// Tests that an identity transpose folds away, also on dynamic shapes.

// CHECK-LABEL: func.func @transpose_identity
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<?x4x?xf32>)
// CHECK-NOT: kiln.transpose
// CHECK: return %[[X]] : tensor<?x4x?xf32>
func.func @transpose_identity(%x: tensor<?x4x?xf32>) -> tensor<?x4x?xf32> {
  %y = kiln.transpose %x {permutation = array<i64: 0, 1, 2>} : (tensor<?x4x?xf32>) -> tensor<?x4x?xf32>
  return %y : tensor<?x4x?xf32>
}

// -----

// Tests that a real permutation is kept even when it maps the type onto
// itself.

// CHECK-LABEL: func.func @transpose_permutation_kept
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<4x4xf32>)
// CHECK: %[[T:.*]] = kiln.transpose %[[X]] {permutation = array<i64: 1, 0>} : (tensor<4x4xf32>) -> tensor<4x4xf32>
// CHECK: return %[[T]]
func.func @transpose_permutation_kept(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %y = kiln.transpose %x {permutation = array<i64: 1, 0>} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  return %y : tensor<4x4xf32>
}

// -----

// Tests that an identity transpose that refines the type is kept.

// CHECK-LABEL: func.func @transpose_identity_refines
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<?x4xf32>)
// CHECK: %[[T:.*]] = kiln.transpose %[[X]] {permutation = array<i64: 0, 1>} : (tensor<?x4xf32>) -> tensor<3x4xf32>
// CHECK: return %[[T]]
func.func @transpose_identity_refines(%x: tensor<?x4xf32>) -> tensor<3x4xf32> {
  %y = kiln.transpose %x {permutation = array<i64: 0, 1>} : (tensor<?x4xf32>) -> tensor<3x4xf32>
  return %y : tensor<3x4xf32>
}

// -----

// Tests that a reshape between equal static types folds away.

// CHECK-LABEL: func.func @reshape_same_static
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<2x3xf32>, %{{.*}}: tensor<2xi64>)
// CHECK-NOT: kiln.reshape
// CHECK: return %[[X]] : tensor<2x3xf32>
func.func @reshape_same_static(%x: tensor<2x3xf32>, %shape: tensor<2xi64>) -> tensor<2x3xf32> {
  %y = kiln.reshape %x, %shape : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

// Tests that a reshape is kept when the shape changes or is dynamic: ?x?
// to ?x? may still move elements (2x3 to 3x2).

// CHECK-LABEL: func.func @reshape_kept
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<2x3xf32>, %[[S:[a-zA-Z0-9_]+]]: tensor<2xi64>, %[[D:[a-zA-Z0-9_]+]]: tensor<?x?xf32>)
// CHECK: %[[R:.*]] = kiln.reshape %[[X]], %[[S]] : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<3x2xf32>
// CHECK: %[[RD:.*]] = kiln.reshape %[[D]], %[[S]] : (tensor<?x?xf32>, tensor<2xi64>) -> tensor<?x?xf32>
// CHECK: return %[[R]], %[[RD]]
func.func @reshape_kept(%x: tensor<2x3xf32>, %shape: tensor<2xi64>, %d: tensor<?x?xf32>)
    -> (tensor<3x2xf32>, tensor<?x?xf32>) {
  %r = kiln.reshape %x, %shape : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<3x2xf32>
  %rd = kiln.reshape %d, %shape : (tensor<?x?xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  return %r, %rd : tensor<3x2xf32>, tensor<?x?xf32>
}

// -----

// Tests that an expand to the input's own static type folds away.

// CHECK-LABEL: func.func @expand_same_static
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<2x16xi8>, %{{.*}}: tensor<2xi64>)
// CHECK-NOT: kiln.expand
// CHECK: return %[[X]] : tensor<2x16xi8>
func.func @expand_same_static(%x: tensor<2x16xi8>, %shape: tensor<2xi64>) -> tensor<2x16xi8> {
  %y = kiln.expand %x, %shape : (tensor<2x16xi8>, tensor<2xi64>) -> tensor<2x16xi8>
  return %y : tensor<2x16xi8>
}

// -----

// Tests that an expand of a dynamic shape is kept even with equal types (a
// runtime 1 may still stretch), as is one that changes the shape.

// CHECK-LABEL: func.func @expand_kept
// CHECK-SAME: (%[[D:[a-zA-Z0-9_]+]]: tensor<?x16xf32>, %[[X:[a-zA-Z0-9_]+]]: tensor<1x16xf32>, %[[S:[a-zA-Z0-9_]+]]: tensor<2xi64>)
// CHECK: %[[ED:.*]] = kiln.expand %[[D]], %[[S]] : (tensor<?x16xf32>, tensor<2xi64>) -> tensor<?x16xf32>
// CHECK: %[[EX:.*]] = kiln.expand %[[X]], %[[S]] : (tensor<1x16xf32>, tensor<2xi64>) -> tensor<4x16xf32>
// CHECK: return %[[ED]], %[[EX]]
func.func @expand_kept(%d: tensor<?x16xf32>, %x: tensor<1x16xf32>, %shape: tensor<2xi64>)
    -> (tensor<?x16xf32>, tensor<4x16xf32>) {
  %ed = kiln.expand %d, %shape : (tensor<?x16xf32>, tensor<2xi64>) -> tensor<?x16xf32>
  %ex = kiln.expand %x, %shape : (tensor<1x16xf32>, tensor<2xi64>) -> tensor<4x16xf32>
  return %ed, %ex : tensor<?x16xf32>, tensor<4x16xf32>
}

// -----

// Tests that squeeze and unsqueeze with no axes fold away.

// CHECK-LABEL: func.func @squeeze_unsqueeze_empty
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<?x1x64xf16>)
// CHECK-NOT: kiln.squeeze
// CHECK-NOT: kiln.unsqueeze
// CHECK: return %[[X]], %[[X]] : tensor<?x1x64xf16>, tensor<?x1x64xf16>
func.func @squeeze_unsqueeze_empty(%x: tensor<?x1x64xf16>) -> (tensor<?x1x64xf16>, tensor<?x1x64xf16>) {
  %s = kiln.squeeze %x {axes = array<i64>} : (tensor<?x1x64xf16>) -> tensor<?x1x64xf16>
  %u = kiln.unsqueeze %x {axes = array<i64>} : (tensor<?x1x64xf16>) -> tensor<?x1x64xf16>
  return %s, %u : tensor<?x1x64xf16>, tensor<?x1x64xf16>
}

// -----

// Tests that squeeze and unsqueeze with axes are kept.

// CHECK-LABEL: func.func @squeeze_unsqueeze_kept
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<?x1x64xf16>)
// CHECK: %[[S:.*]] = kiln.squeeze %[[X]] {axes = array<i64: 1>} : (tensor<?x1x64xf16>) -> tensor<?x64xf16>
// CHECK: %[[U:.*]] = kiln.unsqueeze %[[S]] {axes = array<i64: 1>} : (tensor<?x64xf16>) -> tensor<?x1x64xf16>
// CHECK: return %[[U]]
func.func @squeeze_unsqueeze_kept(%x: tensor<?x1x64xf16>) -> tensor<?x1x64xf16> {
  %s = kiln.squeeze %x {axes = array<i64: 1>} : (tensor<?x1x64xf16>) -> tensor<?x64xf16>
  %u = kiln.unsqueeze %s {axes = array<i64: 1>} : (tensor<?x64xf16>) -> tensor<?x1x64xf16>
  return %u : tensor<?x1x64xf16>
}

// -----

// Tests that a concat of a single input folds away.

// CHECK-LABEL: func.func @concat_single
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<?x4x?x16xbf16>)
// CHECK-NOT: kiln.concat
// CHECK: return %[[X]] : tensor<?x4x?x16xbf16>
func.func @concat_single(%x: tensor<?x4x?x16xbf16>) -> tensor<?x4x?x16xbf16> {
  %y = kiln.concat %x {axis = 2 : i64} : (tensor<?x4x?x16xbf16>) -> tensor<?x4x?x16xbf16>
  return %y : tensor<?x4x?x16xbf16>
}

// -----

// Tests that a concat of two inputs is kept, as is a single-input concat that
// refines the type.

// CHECK-LABEL: func.func @concat_kept
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<?x4xf32>)
// CHECK: %[[C:.*]] = kiln.concat %[[X]], %[[X]] {axis = 0 : i64} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
// CHECK: %[[R:.*]] = kiln.concat %[[X]] {axis = 0 : i64} : (tensor<?x4xf32>) -> tensor<2x4xf32>
// CHECK: return %[[C]], %[[R]]
func.func @concat_kept(%x: tensor<?x4xf32>) -> (tensor<?x4xf32>, tensor<2x4xf32>) {
  %c = kiln.concat %x, %x {axis = 0 : i64} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %r = kiln.concat %x {axis = 0 : i64} : (tensor<?x4xf32>) -> tensor<2x4xf32>
  return %c, %r : tensor<?x4xf32>, tensor<2x4xf32>
}

// -----

// Tests that each reduction over no axes folds away, whatever keep_dims says.

// CHECK-LABEL: func.func @reduce_empty_axes
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<?x?x64xf32>, %[[I:[a-zA-Z0-9_]+]]: tensor<2x3xi32>)
// CHECK-NOT: kiln.reduce
// CHECK: return %[[X]], %[[X]], %[[I]] : tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<2x3xi32>
func.func @reduce_empty_axes(%x: tensor<?x?x64xf32>, %i: tensor<2x3xi32>)
    -> (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<2x3xi32>) {
  %sum = kiln.reduce_sum %x {axes = array<i64>} : (tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  %mean = kiln.reduce_mean %x {axes = array<i64>, keep_dims = false} : (tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  %max = kiln.reduce_max %i {axes = array<i64>} : (tensor<2x3xi32>) -> tensor<2x3xi32>
  return %sum, %mean, %max : tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<2x3xi32>
}

// -----

// Tests that reductions over real axes are kept, including one over a
// dimension of size 1 that keeps the type.

// CHECK-LABEL: func.func @reduce_kept
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<?x1xf32>)
// CHECK: %[[SUM:.*]] = kiln.reduce_sum %[[X]] {axes = array<i64: 1>} : (tensor<?x1xf32>) -> tensor<?x1xf32>
// CHECK: %[[MEAN:.*]] = kiln.reduce_mean %[[X]] {axes = array<i64: 0>} : (tensor<?x1xf32>) -> tensor<1x1xf32>
// CHECK: %[[MAX:.*]] = kiln.reduce_max %[[X]] {axes = array<i64: 1>, keep_dims = false} : (tensor<?x1xf32>) -> tensor<?xf32>
// CHECK: return %[[SUM]], %[[MEAN]], %[[MAX]]
func.func @reduce_kept(%x: tensor<?x1xf32>) -> (tensor<?x1xf32>, tensor<1x1xf32>, tensor<?xf32>) {
  %sum = kiln.reduce_sum %x {axes = array<i64: 1>} : (tensor<?x1xf32>) -> tensor<?x1xf32>
  %mean = kiln.reduce_mean %x {axes = array<i64: 0>} : (tensor<?x1xf32>) -> tensor<1x1xf32>
  %max = kiln.reduce_max %x {axes = array<i64: 1>, keep_dims = false} : (tensor<?x1xf32>) -> tensor<?xf32>
  return %sum, %mean, %max : tensor<?x1xf32>, tensor<1x1xf32>, tensor<?xf32>
}

// -----

// Tests that shape_of, dim and size of a static shape fold to kiln.constant.

// CHECK-LABEL: func.func @shape_queries_static
// CHECK-DAG: %[[SHAPE:.*]] = kiln.constant dense<[2, 3, 64]> : tensor<3xi64>
// CHECK-DAG: %[[DIM:.*]] = kiln.constant dense<3> : tensor<i64>
// CHECK-DAG: %[[SIZE:.*]] = kiln.constant dense<384> : tensor<i64>
// CHECK-DAG: %[[ONE:.*]] = kiln.constant dense<1> : tensor<i64>
// CHECK-NOT: kiln.shape_of
// CHECK-NOT: kiln.dim
// CHECK-NOT: kiln.size
// CHECK: return %[[SHAPE]], %[[DIM]], %[[SIZE]], %[[ONE]]
func.func @shape_queries_static(%x: tensor<2x3x64xf32>, %s: tensor<f16>)
    -> (tensor<3xi64>, tensor<i64>, tensor<i64>, tensor<i64>) {
  %shape = kiln.shape_of %x : tensor<2x3x64xf32> -> tensor<3xi64>
  %dim = kiln.dim %x {index = 1 : i64} : tensor<2x3x64xf32> -> tensor<i64>
  %size = kiln.size %x : tensor<2x3x64xf32> -> tensor<i64>
  %one = kiln.size %s : tensor<f16> -> tensor<i64>
  return %shape, %dim, %size, %one : tensor<3xi64>, tensor<i64>, tensor<i64>, tensor<i64>
}

// -----

// Tests that dim folds for a static dimension of a partly dynamic shape, but
// shape_of, size and dim of the dynamic dimension are kept.

// CHECK-LABEL: func.func @shape_queries_dynamic
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<?x64xf32>)
// CHECK-DAG: %[[HIDDEN:.*]] = kiln.constant dense<64> : tensor<i64>
// CHECK-DAG: %[[SHAPE:.*]] = kiln.shape_of %[[X]] : tensor<?x64xf32> -> tensor<2xi64>
// CHECK-DAG: %[[BATCH:.*]] = kiln.dim %[[X]] {index = 0 : i64} : tensor<?x64xf32> -> tensor<i64>
// CHECK-DAG: %[[SIZE:.*]] = kiln.size %[[X]] : tensor<?x64xf32> -> tensor<i64>
// CHECK: return %[[SHAPE]], %[[BATCH]], %[[HIDDEN]], %[[SIZE]]
func.func @shape_queries_dynamic(%x: tensor<?x64xf32>) -> (tensor<2xi64>, tensor<i64>, tensor<i64>, tensor<i64>) {
  %shape = kiln.shape_of %x : tensor<?x64xf32> -> tensor<2xi64>
  %batch = kiln.dim %x {index = 0 : i64} : tensor<?x64xf32> -> tensor<i64>
  %hidden = kiln.dim %x {index = 1 : i64} : tensor<?x64xf32> -> tensor<i64>
  %size = kiln.size %x : tensor<?x64xf32> -> tensor<i64>
  return %shape, %batch, %hidden, %size : tensor<2xi64>, tensor<i64>, tensor<i64>, tensor<i64>
}

// -----

// Tests that equal constants are merged into one and unused ones are erased.

// CHECK-LABEL: func.func @constants
// CHECK: %[[C:.*]] = kiln.constant dense<[0, 0, 4, 16]> : tensor<4xi64>
// CHECK-NOT: kiln.constant
// CHECK: return %[[C]], %[[C]] : tensor<4xi64>, tensor<4xi64>
func.func @constants() -> (tensor<4xi64>, tensor<4xi64>) {
  %a = kiln.constant dense<[0, 0, 4, 16]> : tensor<4xi64>
  %unused = kiln.constant dense<1.0> : tensor<8xf32>
  %b = kiln.constant dense<[0, 0, 4, 16]> : tensor<4xi64>
  return %a, %b : tensor<4xi64>, tensor<4xi64>
}

// -----

// Tests that a chain of no-op folds collapses to the function argument and
// that a folded shape_of feeds the op that uses it.

// CHECK-LABEL: func.func @fold_chain
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<2x8xf32>)
// CHECK-DAG: %[[SHAPE:.*]] = kiln.constant dense<[2, 8]> : tensor<2xi64>
// CHECK-DAG: %[[FLAT:.*]] = kiln.constant dense<16> : tensor<1xi64>
// CHECK: %[[R:.*]] = kiln.reshape %[[X]], %[[FLAT]] : (tensor<2x8xf32>, tensor<1xi64>) -> tensor<16xf32>
// CHECK-NOT: kiln.
// CHECK: return %[[X]], %[[R]], %[[SHAPE]]
func.func @fold_chain(%x: tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<16xf32>, tensor<2xi64>) {
  %shape = kiln.shape_of %x : tensor<2x8xf32> -> tensor<2xi64>
  %t = kiln.transpose %x {permutation = array<i64: 0, 1>} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %r = kiln.reshape %t, %shape : (tensor<2x8xf32>, tensor<2xi64>) -> tensor<2x8xf32>
  %c = kiln.cast %r : tensor<2x8xf32> to tensor<2x8xf32>
  %flat_shape = kiln.constant dense<[16]> : tensor<1xi64>
  %flat = kiln.reshape %c, %flat_shape : (tensor<2x8xf32>, tensor<1xi64>) -> tensor<16xf32>
  %s = kiln.shape_of %c : tensor<2x8xf32> -> tensor<2xi64>
  return %c, %flat, %s : tensor<2x8xf32>, tensor<16xf32>, tensor<2xi64>
}

// -----

// Tests that shape_of does not fold into a constant of dynamic type.
// CHECK-LABEL: func.func @shape_of_dynamic_result
func.func @shape_of_dynamic_result(%x: tensor<2x3xf32>) -> tensor<?xi64> {
  // CHECK: kiln.shape_of %{{.*}} : tensor<2x3xf32> -> tensor<?xi64>
  %s = kiln.shape_of %x : tensor<2x3xf32> -> tensor<?xi64>
  return %s : tensor<?xi64>
}

// -----

// Tests that concat drops inputs that are statically empty along its axis
// (a rotary embedding over the whole head concatenates an empty
// pass-through), and becomes its one remaining input.

// CHECK-LABEL: func.func @concat_of_empty_parts
//  CHECK-SAME: (%[[X:.+]]: tensor<?x4x?x16xf32>, %[[E:.+]]: tensor<?x4x?x0xf32>, %[[Y:.+]]: tensor<?x4x?x8xf32>)
//       CHECK: %[[C:.+]] = kiln.concat %[[X]], %[[Y]] {axis = 3 : i64} : (tensor<?x4x?x16xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x24xf32>
//       CHECK: return %[[X]], %[[C]]
func.func @concat_of_empty_parts(%x: tensor<?x4x?x16xf32>, %e: tensor<?x4x?x0xf32>, %y: tensor<?x4x?x8xf32>)
    -> (tensor<?x4x?x16xf32>, tensor<?x4x?x24xf32>) {
  %a = kiln.concat %x, %e {axis = 3 : i64} : (tensor<?x4x?x16xf32>, tensor<?x4x?x0xf32>) -> tensor<?x4x?x16xf32>
  %b = kiln.concat %x, %e, %y {axis = 3 : i64} : (tensor<?x4x?x16xf32>, tensor<?x4x?x0xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x24xf32>
  return %a, %b : tensor<?x4x?x16xf32>, tensor<?x4x?x24xf32>
}
