// RUN: kiln-opt %s --split-input-file --mlir-print-local-scope --kiln-convert-to-linalg --canonicalize | FileCheck %s

// The lowerings of einsum and argmax (linalg.generics) and of the scatters
// and top_k (scf.for nests over tensors), checked after canonicalization.

// Tests that einsum loops over its letters: the output's parallel, the
// summed ones reductions, each input read through its letters.

// CHECK-LABEL: func.func @einsum_matmul
//       CHECK: linalg.fill
//       CHECK: linalg.generic
//  CHECK-SAME: indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>]
//  CHECK-SAME: iterator_types = ["parallel", "parallel", "reduction"]
//       CHECK: arith.mulf
//       CHECK: arith.addf
func.func @einsum_matmul(%a: tensor<3x4xf32>, %b: tensor<4x5xf32>) -> tensor<3x5xf32> {
  %y = kiln.einsum %a, %b {equation = "ij,jk->ik"} : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
  return %y : tensor<3x5xf32>
}

// -----

// Tests that an einsum to a scalar (an inner product) reduces every letter.

// CHECK-LABEL: func.func @einsum_inner
//       CHECK: linalg.generic
//  CHECK-SAME: indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>]
//  CHECK-SAME: iterator_types = ["reduction"]
func.func @einsum_inner(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<f32> {
  %y = kiln.einsum %a, %b {equation = "i,i->"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<f32>
  return %y : tensor<f32>
}

// -----

// Tests that argmax reduces into a value and an index, starting from index
// -1, and returns the index.

// CHECK-LABEL: func.func @argmax
//       CHECK: %[[NONE:.+]] = arith.constant -1 : i64
//       CHECK: %[[IDX:.+]] = linalg.fill ins(%[[NONE]] : i64)
//       CHECK: %[[R:.+]]:2 = linalg.generic
//  CHECK-SAME: iterator_types = ["parallel", "reduction"]
//  CHECK-SAME: outs(%{{.+}}, %[[IDX]] : tensor<4xf32>, tensor<4xi64>)
//       CHECK: arith.cmpf ogt
//       CHECK: return %[[R]]#1
func.func @argmax(%x: tensor<4x8xf32>) -> tensor<4xi64> {
  %y = kiln.argmax %x {axis = 1 : i64, keep_dims = false} : (tensor<4x8xf32>) -> tensor<4xi64>
  return %y : tensor<4xi64>
}

// -----

// Tests that scatter_nd loops over the updates, reads each index tuple,
// checks it, and combines the update with the element it lands on.

// CHECK-LABEL: func.func @scatter_nd_add
//  CHECK-SAME: (%[[D:.+]]: tensor<4x8xf32>, %[[I:.+]]: tensor<2x1xi64>, %[[U:.+]]: tensor<2x8xf32>)
//       CHECK: scf.for %[[R:.+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[T0:.+]] = %[[D]])
//       CHECK: scf.for %[[C:.+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[T1:.+]] = %[[T0]])
//       CHECK: tensor.extract %[[I]][%[[R]], %{{.+}}]
//       CHECK: cf.assert %{{.+}}, "kiln.scatter_nd: an index is out of range for data dim 0"
//       CHECK: %[[UPDATE:.+]] = tensor.extract %[[U]][%[[R]], %[[C]]]
//       CHECK: %[[OLD:.+]] = tensor.extract %[[T1]][%[[AT:.+]], %[[C]]]
//       CHECK: %[[SUM:.+]] = arith.addf %[[OLD]], %[[UPDATE]]
//       CHECK: tensor.insert %[[SUM]] into %[[T1]][%[[AT]], %[[C]]]
func.func @scatter_nd_add(%d: tensor<4x8xf32>, %i: tensor<2x1xi64>, %u: tensor<2x8xf32>) -> tensor<4x8xf32> {
  %y = kiln.scatter_nd add %d[%i], %u : (tensor<4x8xf32>, tensor<2x1xi64>, tensor<2x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// Tests that top_k checks k, then for each row makes k scans of the axis,
// inserting each pick into both results.

// CHECK-LABEL: func.func @top_k
//       CHECK: cf.assert %{{.+}}, "kiln.top_k: k is negative or exceeds the axis size"
//       CHECK: scf.for
//       CHECK: scf.for {{.+}} iter_args
//       CHECK: scf.for {{.+}} iter_args
//       CHECK: tensor.extract
//       CHECK: scf.yield
//       CHECK: tensor.insert
//       CHECK: tensor.insert
func.func @top_k(%x: tensor<4x8xf32>, %k: tensor<1xi64>) -> (tensor<4x?xf32>, tensor<4x?xi64>) {
  %v, %i = kiln.top_k %x, %k {axis = 1 : i64, largest} : (tensor<4x8xf32>, tensor<1xi64>) -> (tensor<4x?xf32>, tensor<4x?xi64>)
  return %v, %i : tensor<4x?xf32>, tensor<4x?xi64>
}
