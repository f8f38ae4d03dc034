// RUN: kiln-opt %s --split-input-file --mlir-print-local-scope --kiln-lower-to-cpu-kernels --kiln-convert-to-linalg | FileCheck %s

// The output is checked as the pass leaves it, before any canonicalization:
// affine maps are printed inline (--mlir-print-local-scope) and constants
// appear where the patterns create them.

//===----------------------------------------------------------------------===//
// Elementwise: unary
//===----------------------------------------------------------------------===//

// Tests that a unary op becomes one parallel linalg.generic over a fresh
// tensor.empty whose dynamic size is read from the operand.

// CHECK-LABEL: func.func @unary_exp
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<?x4xf32>)
// CHECK: %[[C0:.+]] = arith.constant 0 : index
// CHECK: %[[D0:.+]] = tensor.dim %[[X]], %[[C0]] : tensor<?x4xf32>
// CHECK: %[[EMPTY:.+]] = tensor.empty(%[[D0]]) : tensor<?x4xf32>
// CHECK: %[[R:.+]] = linalg.generic
// CHECK-SAME: indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>]
// CHECK-SAME: iterator_types = ["parallel", "parallel"]
// CHECK-SAME: ins(%[[X]] : tensor<?x4xf32>) outs(%[[EMPTY]] : tensor<?x4xf32>)
// CHECK: ^bb0(%[[IN:.+]]: f32, %{{.+}}: f32):
// CHECK: %[[E:.+]] = math.exp %[[IN]] : f32
// CHECK: linalg.yield %[[E]] : f32
// CHECK: return %[[R]]
func.func @unary_exp(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %y = kiln.exp %x : tensor<?x4xf32>
  return %y : tensor<?x4xf32>
}

// -----

// Tests that asin and acos become atan2 of the value and sqrt((1 - x)(1 + x)),
// whose approximation holds near ±1 where math.asin's and math.acos's do not,
// in that order and swapped.

// CHECK-LABEL: func.func @unary_asin_acos
// CHECK: ^bb0(%[[X0:.+]]: f32, %{{.+}}: f32):
// CHECK: %[[ONE:.+]] = arith.constant 1.000000e+00 : f32
// CHECK: %[[BELOW:.+]] = arith.subf %[[ONE]], %[[X0]] : f32
// CHECK: %[[ABOVE:.+]] = arith.addf %[[ONE]], %[[X0]] : f32
// CHECK: %[[PRODUCT:.+]] = arith.mulf %[[BELOW]], %[[ABOVE]] : f32
// CHECK: %[[COSINE:.+]] = math.sqrt %[[PRODUCT]] : f32
// CHECK: %[[ASIN:.+]] = math.atan2 %[[X0]], %[[COSINE]] : f32
// CHECK: linalg.yield %[[ASIN]] : f32
// CHECK: ^bb0(%[[X1:.+]]: f32, %{{.+}}: f32):
// CHECK: %[[COSINE1:.+]] = math.sqrt
// CHECK: %[[ACOS:.+]] = math.atan2 %[[COSINE1]], %[[X1]] : f32
// CHECK: linalg.yield %[[ACOS]] : f32
func.func @unary_asin_acos(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %asin = kiln.asin %x : tensor<8xf32>
  %acos = kiln.acos %x : tensor<8xf32>
  return %asin, %acos : tensor<8xf32>, tensor<8xf32>
}

// -----

// Tests that the float unary ops that are more than one math op get the
// right scalar bodies: neg, relu, reciprocal, sigmoid and silu.

// CHECK-LABEL: func.func @unary_float_bodies
// CHECK: linalg.generic
// CHECK: ^bb0(%[[IN0:.+]]: f32, %{{.+}}: f32):
// CHECK-NEXT: %[[NEG:.+]] = arith.negf %[[IN0]] : f32
// CHECK-NEXT: linalg.yield %[[NEG]]
// CHECK: linalg.generic
// CHECK: ^bb0(%[[IN1:.+]]: f32, %{{.+}}: f32):
// CHECK-NEXT: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: %[[RELU:.+]] = arith.maximumf %[[IN1]], %[[ZERO]] : f32
// CHECK-NEXT: linalg.yield %[[RELU]]
// CHECK: linalg.generic
// CHECK: ^bb0(%[[IN2:.+]]: f32, %{{.+}}: f32):
// CHECK-NEXT: %[[ONE:.+]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT: %[[RCP:.+]] = arith.divf %[[ONE]], %[[IN2]] : f32
// CHECK-NEXT: linalg.yield %[[RCP]]
// CHECK: linalg.generic
// CHECK: ^bb0(%[[IN3:.+]]: f32, %{{.+}}: f32):
// CHECK-NEXT: %[[ONE3:.+]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT: %[[N3:.+]] = arith.negf %[[IN3]] : f32
// CHECK-NEXT: %[[E3:.+]] = math.exp %[[N3]] : f32
// CHECK-NEXT: %[[D3:.+]] = arith.addf %[[ONE3]], %[[E3]] : f32
// CHECK-NEXT: %[[S3:.+]] = arith.divf %[[ONE3]], %[[D3]] : f32
// CHECK-NEXT: linalg.yield %[[S3]]
// CHECK: linalg.generic
// CHECK: ^bb0(%[[IN4:.+]]: f32, %{{.+}}: f32):
// CHECK: %[[S4:.+]] = arith.divf
// CHECK-NEXT: %[[SILU:.+]] = arith.mulf %[[IN4]], %[[S4]] : f32
// CHECK-NEXT: linalg.yield %[[SILU]]
func.func @unary_float_bodies(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %0 = kiln.neg %x : tensor<8xf32>
  %1 = kiln.relu %x : tensor<8xf32>
  %2 = kiln.reciprocal %x : tensor<8xf32>
  %3 = kiln.sigmoid %x : tensor<8xf32>
  %4 = kiln.silu %x : tensor<8xf32>
  return %0, %1, %2, %3, %4 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// Tests that the numeric unary ops on integers use integer arithmetic:
// neg is 0 - x, relu a signed max, abs math.absi.

// CHECK-LABEL: func.func @unary_integer
// CHECK: linalg.generic
// CHECK: ^bb0(%[[IN0:.+]]: i32, %{{.+}}: i32):
// CHECK-NEXT: %[[Z0:.+]] = arith.constant 0 : i32
// CHECK-NEXT: %[[NEG:.+]] = arith.subi %[[Z0]], %[[IN0]] : i32
// CHECK-NEXT: linalg.yield %[[NEG]]
// CHECK: linalg.generic
// CHECK: ^bb0(%[[IN1:.+]]: i32, %{{.+}}: i32):
// CHECK-NEXT: %[[Z1:.+]] = arith.constant 0 : i32
// CHECK-NEXT: %[[RELU:.+]] = arith.maxsi %[[IN1]], %[[Z1]] : i32
// CHECK-NEXT: linalg.yield %[[RELU]]
// CHECK: linalg.generic
// CHECK: ^bb0(%[[IN2:.+]]: i32, %{{.+}}: i32):
// CHECK-NEXT: %[[ABS:.+]] = math.absi %[[IN2]] : i32
// CHECK-NEXT: linalg.yield %[[ABS]]
func.func @unary_integer(%x: tensor<4xi32>) -> (tensor<4xi32>, tensor<4xi32>, tensor<4xi32>) {
  %0 = kiln.neg %x : tensor<4xi32>
  %1 = kiln.relu %x : tensor<4xi32>
  %2 = kiln.abs %x : tensor<4xi32>
  return %0, %1, %2 : tensor<4xi32>, tensor<4xi32>, tensor<4xi32>
}

// -----

// Tests that not is an xor with true.

// CHECK-LABEL: func.func @not
// CHECK: linalg.generic
// CHECK: ^bb0(%[[IN:.+]]: i1, %{{.+}}: i1):
// CHECK-NEXT: %[[TRUE:.+]] = arith.constant true
// CHECK-NEXT: %[[R:.+]] = arith.xori %[[IN]], %[[TRUE]] : i1
// CHECK-NEXT: linalg.yield %[[R]] : i1
func.func @not(%x: tensor<?xi1>) -> tensor<?xi1> {
  %y = kiln.not %x : tensor<?xi1>
  return %y : tensor<?xi1>
}

// -----

//===----------------------------------------------------------------------===//
// Elementwise: binary ops and broadcasting
//===----------------------------------------------------------------------===//

// Tests that static size-1 dimensions that stretch read index 0, that the
// operands align on the right, and that a dynamic result size comes from the
// one operand that has that dimension dynamic (no arith.maxui needed).

// CHECK-LABEL: func.func @binary_static_broadcast
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<?x1x4xf32>, %[[B:[a-zA-Z0-9_]+]]: tensor<3x1xf32>)
// CHECK: %[[D0:.+]] = tensor.dim %[[X]], %{{.+}} : tensor<?x1x4xf32>
// CHECK-NOT: arith.maxui
// CHECK: %[[EMPTY:.+]] = tensor.empty(%[[D0]]) : tensor<?x3x4xf32>
// CHECK: linalg.generic
// CHECK-SAME: indexing_maps = [affine_map<(d0, d1, d2) -> (d0, 0, d2)>, affine_map<(d0, d1, d2) -> (d1, 0)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>]
// CHECK-SAME: iterator_types = ["parallel", "parallel", "parallel"]
// CHECK-SAME: ins(%[[X]], %[[B]] : tensor<?x1x4xf32>, tensor<3x1xf32>) outs(%[[EMPTY]] : tensor<?x3x4xf32>)
// CHECK: ^bb0(%[[L:.+]]: f32, %[[R:.+]]: f32, %{{.+}}: f32):
// CHECK-NEXT: %[[SUM:.+]] = arith.addf %[[L]], %[[R]] : f32
// CHECK-NEXT: linalg.yield %[[SUM]] : f32
func.func @binary_static_broadcast(%x: tensor<?x1x4xf32>, %b: tensor<3x1xf32>) -> tensor<?x3x4xf32> {
  %y = kiln.add %x, %b : (tensor<?x1x4xf32>, tensor<3x1xf32>) -> tensor<?x3x4xf32>
  return %y : tensor<?x3x4xf32>
}

// -----

// Tests that a dimension that both operands have dynamic is read from both
// with tensor.dim and combined with arith.maxui, and that both read it with
// the identity map (dynamic dimensions are assumed not to broadcast).

// CHECK-LABEL: func.func @binary_dynamic
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<?x?xf32>, %[[Y:[a-zA-Z0-9_]+]]: tensor<?x?xf32>)
// CHECK-DAG: %[[X0:.+]] = tensor.dim %[[X]], %[[C0:[a-zA-Z0-9_]+]] : tensor<?x?xf32>
// CHECK-DAG: %[[Y0:.+]] = tensor.dim %[[Y]], %[[C0B:[a-zA-Z0-9_]+]] : tensor<?x?xf32>
// CHECK-DAG: %[[X1:.+]] = tensor.dim %[[X]], %[[C1:[a-zA-Z0-9_]+]] : tensor<?x?xf32>
// CHECK-DAG: %[[Y1:.+]] = tensor.dim %[[Y]], %[[C1B:[a-zA-Z0-9_]+]] : tensor<?x?xf32>
// CHECK-DAG: %[[M0:.+]] = arith.maxui %[[X0]], %[[Y0]] : index
// CHECK-DAG: %[[M1:.+]] = arith.maxui %[[X1]], %[[Y1]] : index
// CHECK: %[[EMPTY:.+]] = tensor.empty(%[[M0]], %[[M1]]) : tensor<?x?xf32>
// CHECK: linalg.generic
// CHECK-SAME: indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>]
// CHECK-SAME: outs(%[[EMPTY]] : tensor<?x?xf32>)
// CHECK: arith.mulf
func.func @binary_dynamic(%x: tensor<?x?xf32>, %y: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %z = kiln.mul %x, %y : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  return %z : tensor<?x?xf32>
}

// -----

// Tests that a static size-1 dimension against a dynamic one reads index 0
// and does not contribute to the result size, and that a 0-d operand reads
// with the empty map.

// CHECK-LABEL: func.func @binary_broadcast_against_dynamic
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<?x64xf32>, %[[B:[a-zA-Z0-9_]+]]: tensor<1x64xf32>, %[[S:[a-zA-Z0-9_]+]]: tensor<f32>)
// CHECK: %[[D0:.+]] = tensor.dim %[[X]], %{{.+}} : tensor<?x64xf32>
// CHECK-NOT: arith.maxui
// CHECK: %[[E0:.+]] = tensor.empty(%[[D0]]) : tensor<?x64xf32>
// CHECK: linalg.generic
// CHECK-SAME: indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (0, d1)>, affine_map<(d0, d1) -> (d0, d1)>]
// CHECK-SAME: ins(%[[X]], %[[B]] : tensor<?x64xf32>, tensor<1x64xf32>)
// CHECK: arith.subf
// CHECK: linalg.generic
// CHECK-SAME: indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>, affine_map<(d0, d1) -> (d0, d1)>]
// CHECK-SAME: ins(%[[X]], %[[S]] : tensor<?x64xf32>, tensor<f32>)
// CHECK: arith.divf
func.func @binary_broadcast_against_dynamic(%x: tensor<?x64xf32>, %b: tensor<1x64xf32>, %s: tensor<f32>) -> (tensor<?x64xf32>, tensor<?x64xf32>) {
  %0 = kiln.sub %x, %b : (tensor<?x64xf32>, tensor<1x64xf32>) -> tensor<?x64xf32>
  %1 = kiln.div %x, %s : (tensor<?x64xf32>, tensor<f32>) -> tensor<?x64xf32>
  return %0, %1 : tensor<?x64xf32>, tensor<?x64xf32>
}

// -----

// Tests that a static size-1 dimension that is also size 1 in the result is
// read with its own dimension, not the constant 0.

// CHECK-LABEL: func.func @binary_unit_result_dim
// CHECK: linalg.generic
// CHECK-SAME: indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>]
func.func @binary_unit_result_dim(%x: tensor<1x8xf32>, %y: tensor<1x8xf32>) -> tensor<1x8xf32> {
  %z = kiln.add %x, %y : (tensor<1x8xf32>, tensor<1x8xf32>) -> tensor<1x8xf32>
  return %z : tensor<1x8xf32>
}

// -----

// Tests that a dynamic result dimension whose operands are all static takes
// the static size that is not 1 (4 here, not the broadcast 1 of the other
// operand).

// CHECK-LABEL: func.func @elementwise_static_operands_dynamic_result
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<4xf32>, %[[Y:[a-zA-Z0-9_]+]]: tensor<1xf32>)
// CHECK: %[[C4:.+]] = arith.constant 4 : index
// CHECK: %[[EMPTY:.+]] = tensor.empty(%[[C4]]) : tensor<?xf32>
// CHECK: %[[R:.+]] = linalg.generic
// CHECK-SAME: indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (0)>, affine_map<(d0) -> (d0)>]
// CHECK-SAME: ins(%[[X]], %[[Y]] : tensor<4xf32>, tensor<1xf32>) outs(%[[EMPTY]] : tensor<?xf32>)
// CHECK: arith.addf
// CHECK: return %[[R]]
func.func @elementwise_static_operands_dynamic_result(%x: tensor<4xf32>, %y: tensor<1xf32>) -> tensor<?xf32> {
  %z = kiln.add %x, %y : (tensor<4xf32>, tensor<1xf32>) -> tensor<?xf32>
  return %z : tensor<?xf32>
}

// -----

// Tests that a static operand size that is not 1 wins over a dynamic one in
// the same dimension: the result size is the constant 3 (printed %c3), with
// no arith.maxui and not the dynamic operand's tensor.dim.

// CHECK-LABEL: func.func @elementwise_static_beats_dynamic
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<?x4xf32>, %[[Y:[a-zA-Z0-9_]+]]: tensor<3x4xf32>)
// CHECK-NOT: arith.maxui
// CHECK: %[[EMPTY:.+]] = tensor.empty(%c3{{(_[0-9]+)?}}) : tensor<?x4xf32>
// CHECK: linalg.generic
// CHECK-SAME: indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>]
// CHECK-SAME: ins(%[[X]], %[[Y]] : tensor<?x4xf32>, tensor<3x4xf32>) outs(%[[EMPTY]] : tensor<?x4xf32>)
func.func @elementwise_static_beats_dynamic(%x: tensor<?x4xf32>, %y: tensor<3x4xf32>) -> tensor<?x4xf32> {
  %z = kiln.add %x, %y : (tensor<?x4xf32>, tensor<3x4xf32>) -> tensor<?x4xf32>
  return %z : tensor<?x4xf32>
}

// -----

// Tests that a dynamic result dimension whose operand sizes are all static 1
// is 1, and that one where a static 4 meets a static 1 is 4.

// CHECK-LABEL: func.func @elementwise_static_unit_sizes
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<1x4xf32>, %[[Y:[a-zA-Z0-9_]+]]: tensor<1xf32>)
// CHECK: %[[C1:.+]] = arith.constant 1 : index
// CHECK: %[[C4:.+]] = arith.constant 4 : index
// CHECK: %[[EMPTY:.+]] = tensor.empty(%[[C1]], %[[C4]]) : tensor<?x?xf32>
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[X]], %[[Y]] : tensor<1x4xf32>, tensor<1xf32>) outs(%[[EMPTY]] : tensor<?x?xf32>)
func.func @elementwise_static_unit_sizes(%x: tensor<1x4xf32>, %y: tensor<1xf32>) -> tensor<?x?xf32> {
  %z = kiln.add %x, %y : (tensor<1x4xf32>, tensor<1xf32>) -> tensor<?x?xf32>
  return %z : tensor<?x?xf32>
}

// -----

// Tests that the arithmetic ops pick the float or the signed integer form.

// CHECK-LABEL: func.func @binary_float_ops
// CHECK: arith.subf
// CHECK: arith.divf
// CHECK: math.powf
// CHECK: arith.maximumf
// CHECK: arith.minimumf
func.func @binary_float_ops(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %0 = kiln.sub %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = kiln.div %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %2 = kiln.pow %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %3 = kiln.max %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %4 = kiln.min %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0, %1, %2, %3, %4 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// Tests that integer arithmetic is signed.

// CHECK-LABEL: func.func @binary_integer_ops
// CHECK: arith.addi
// CHECK: arith.subi
// CHECK: arith.muli
// CHECK: arith.divsi
// CHECK: math.ipowi
// CHECK: arith.maxsi
// CHECK: arith.minsi
func.func @binary_integer_ops(%x: tensor<4xi64>, %y: tensor<4xi64>) -> (tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) {
  %0 = kiln.add %x, %y : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  %1 = kiln.sub %x, %y : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  %2 = kiln.mul %x, %y : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  %3 = kiln.div %x, %y : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  %4 = kiln.pow %x, %y : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  %5 = kiln.max %x, %y : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  %6 = kiln.min %x, %y : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  return %0, %1, %2, %3, %4, %5, %6 : tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>
}

// -----

// Tests that ONNX's unsigned types pick the unsigned arith ops (division,
// remainder, max, min, order comparisons, casts to and from float and to
// wider integers, abs as the identity), and that every type is signless
// once the pass is done: the function's, the bodies' and the constants'.

// CHECK-LABEL: func.func @unsigned_integer_ops
// CHECK-SAME: (%{{.+}}: tensor<4xi8>, %{{.+}}: tensor<4xi8>, %{{.+}}: tensor<4xf32>)
// CHECK-SAME: -> (tensor<4xi8>, tensor<4xi8>, tensor<4xi8>, tensor<4xi8>, tensor<4xi1>, tensor<4xf32>, tensor<4xi32>, tensor<4xi8>, tensor<4xi8>, tensor<4xi8>, tensor<4xi8>, tensor<4xi8>)
// CHECK-NOT: ui8
// CHECK: arith.divui
// CHECK: arith.remui
// CHECK: arith.maxui
// CHECK: arith.minui
// CHECK: arith.cmpi ult
// CHECK: arith.uitofp %{{.+}} : i8 to f32
// CHECK: arith.extui %{{.+}} : i8 to i32
// CHECK: arith.fptoui %{{.+}} : f32 to i8
// CHECK: ^bb0(%[[ABS_IN:.+]]: i8, %{{.+}}: i8):
// CHECK-NEXT: linalg.yield %[[ABS_IN]] : i8
// CHECK: arith.constant 0 : i8
// CHECK-NEXT: arith.maxui
// CHECK: arith.constant dense<[-56, 1, -1, 0]> : tensor<4xi8>
// CHECK-NOT: ui8
func.func @unsigned_integer_ops(%x: tensor<4xui8>, %y: tensor<4xui8>, %f: tensor<4xf32>)
    -> (tensor<4xui8>, tensor<4xui8>, tensor<4xui8>, tensor<4xui8>, tensor<4xi1>, tensor<4xf32>, tensor<4xi32>, tensor<4xui8>, tensor<4xui8>, tensor<4xui8>, tensor<4xui8>, tensor<4xui8>) {
  %0 = kiln.div %x, %y : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  %1 = kiln.mod %x, %y : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  %2 = kiln.max %x, %y : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  %3 = kiln.min %x, %y : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  %4 = kiln.compare lt, %x, %y : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xi1>
  %5 = kiln.cast %x : tensor<4xui8> to tensor<4xf32>
  %6 = kiln.cast %x : tensor<4xui8> to tensor<4xi32>
  %7 = kiln.cast %f : tensor<4xf32> to tensor<4xui8>
  %8 = kiln.abs %x : tensor<4xui8>
  %9 = kiln.relu %x : tensor<4xui8>
  %10 = kiln.constant dense<[200, 1, 255, 0]> : tensor<4xui8>
  %11 = kiln.add %x, %10 : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11
      : tensor<4xui8>, tensor<4xui8>, tensor<4xui8>, tensor<4xui8>, tensor<4xi1>, tensor<4xf32>, tensor<4xi32>, tensor<4xui8>, tensor<4xui8>, tensor<4xui8>, tensor<4xui8>, tensor<4xui8>
}

// -----

// Tests that the logical ops are the i1 bitwise ops.

// CHECK-LABEL: func.func @binary_logical_ops
// CHECK: arith.andi %{{.+}}, %{{.+}} : i1
// CHECK: arith.ori %{{.+}}, %{{.+}} : i1
// CHECK: arith.xori %{{.+}}, %{{.+}} : i1
func.func @binary_logical_ops(%x: tensor<4xi1>, %y: tensor<4xi1>) -> (tensor<4xi1>, tensor<4xi1>, tensor<4xi1>) {
  %0 = kiln.and %x, %y : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  %1 = kiln.or %x, %y : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  %2 = kiln.xor %x, %y : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  return %0, %1, %2 : tensor<4xi1>, tensor<4xi1>, tensor<4xi1>
}

// -----

//===----------------------------------------------------------------------===//
// Elementwise: compare, where, clamp, cast, gelu
//===----------------------------------------------------------------------===//

// Tests that float compares are ordered (ne is unordered, so NaN != x),
// i1 compares unsigned (false < true) and the other integers signed, and
// that the result is an i1 tensor.

// CHECK-LABEL: func.func @compare
// CHECK: %[[E0:.+]] = tensor.empty() : tensor<4xi1>
// CHECK: linalg.generic
// CHECK-SAME: outs(%[[E0]] : tensor<4xi1>)
// CHECK: ^bb0(%[[A:.+]]: f32, %[[B:.+]]: f32, %{{.+}}: i1):
// CHECK-NEXT: %[[LT:.+]] = arith.cmpf olt, %[[A]], %[[B]] : f32
// CHECK-NEXT: linalg.yield %[[LT]] : i1
// CHECK: arith.cmpf une, %{{.+}}, %{{.+}} : f32
// CHECK: arith.cmpf oeq, %{{.+}}, %{{.+}} : f32
// CHECK: arith.cmpi ugt, %{{.+}}, %{{.+}} : i1
// CHECK: arith.cmpi ule, %{{.+}}, %{{.+}} : i1
// CHECK: linalg.generic
// CHECK-SAME: indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>]
// CHECK: arith.cmpi sge, %{{.+}}, %{{.+}} : i64
// CHECK: arith.cmpi slt, %{{.+}}, %{{.+}} : i64
func.func @compare(%x: tensor<4xf32>, %y: tensor<4xf32>, %a: tensor<4xi1>, %b: tensor<4xi1>, %i: tensor<4xi64>, %j: tensor<i64>)
    -> (tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>) {
  %0 = kiln.compare lt, %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  %1 = kiln.compare ne, %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  %2 = kiln.compare eq, %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  %3 = kiln.compare gt, %a, %b : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  %4 = kiln.compare le, %a, %b : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  %5 = kiln.compare ge, %i, %j : (tensor<4xi64>, tensor<i64>) -> tensor<4xi1>
  %6 = kiln.compare lt, %i, %j : (tensor<4xi64>, tensor<i64>) -> tensor<4xi1>
  return %0, %1, %2, %3, %4, %5, %6 : tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>
}

// -----

// Tests that where is an arith.select with all three operands broadcast.

// CHECK-LABEL: func.func @where
// CHECK-SAME: (%[[C:[a-zA-Z0-9_]+]]: tensor<1x?xi1>, %[[X:[a-zA-Z0-9_]+]]: tensor<?x?xf32>, %[[Y:[a-zA-Z0-9_]+]]: tensor<f32>)
// CHECK-DAG: %[[X0:.+]] = tensor.dim %[[X]], %{{.+}} : tensor<?x?xf32>
// CHECK-DAG: %[[C1:.+]] = tensor.dim %[[C]], %{{.+}} : tensor<1x?xi1>
// CHECK-DAG: %[[X1:.+]] = tensor.dim %[[X]], %{{.+}} : tensor<?x?xf32>
// CHECK: %[[M1:.+]] = arith.maxui %[[C1]], %[[X1]] : index
// CHECK: %[[EMPTY:.+]] = tensor.empty(%[[X0]], %[[M1]]) : tensor<?x?xf32>
// CHECK: linalg.generic
// CHECK-SAME: indexing_maps = [affine_map<(d0, d1) -> (0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>, affine_map<(d0, d1) -> (d0, d1)>]
// CHECK-SAME: ins(%[[C]], %[[X]], %[[Y]] : tensor<1x?xi1>, tensor<?x?xf32>, tensor<f32>) outs(%[[EMPTY]] : tensor<?x?xf32>)
// CHECK: ^bb0(%[[CI:.+]]: i1, %[[XI:.+]]: f32, %[[YI:.+]]: f32, %{{.+}}: f32):
// CHECK-NEXT: %[[SEL:.+]] = arith.select %[[CI]], %[[XI]], %[[YI]] : f32
// CHECK-NEXT: linalg.yield %[[SEL]] : f32
func.func @where(%c: tensor<1x?xi1>, %x: tensor<?x?xf32>, %y: tensor<f32>) -> tensor<?x?xf32> {
  %z = kiln.where %c, %x, %y : (tensor<1x?xi1>, tensor<?x?xf32>, tensor<f32>) -> tensor<?x?xf32>
  return %z : tensor<?x?xf32>
}

// -----

// Tests that clamp is max with the lower bound, then min with the upper
// bound, that a missing bound is skipped (the remaining bound is the second
// operand of the generic), and that integer clamps are signed.

// CHECK-LABEL: func.func @clamp
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<4xf32>, %[[LO:[a-zA-Z0-9_]+]]: tensor<f32>, %[[HI:[a-zA-Z0-9_]+]]: tensor<f32>, %[[I:[a-zA-Z0-9_]+]]: tensor<4xi64>, %[[ILO:[a-zA-Z0-9_]+]]: tensor<i64>)
// CHECK: linalg.generic
// CHECK-SAME: indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>, affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>]
// CHECK-SAME: ins(%[[X]], %[[LO]], %[[HI]] : tensor<4xf32>, tensor<f32>, tensor<f32>)
// CHECK: ^bb0(%[[V:.+]]: f32, %[[L:.+]]: f32, %[[H:.+]]: f32, %{{.+}}: f32):
// CHECK-NEXT: %[[MAX:.+]] = arith.maximumf %[[V]], %[[L]] : f32
// CHECK-NEXT: %[[MIN:.+]] = arith.minimumf %[[MAX]], %[[H]] : f32
// CHECK-NEXT: linalg.yield %[[MIN]] : f32
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[X]], %[[HI]] : tensor<4xf32>, tensor<f32>)
// CHECK: ^bb0(%[[V2:.+]]: f32, %[[H2:.+]]: f32, %{{.+}}: f32):
// CHECK-NEXT: %[[MIN2:.+]] = arith.minimumf %[[V2]], %[[H2]] : f32
// CHECK-NEXT: linalg.yield %[[MIN2]] : f32
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[I]], %[[ILO]] : tensor<4xi64>, tensor<i64>)
// CHECK: ^bb0(%[[V3:.+]]: i64, %[[L3:.+]]: i64, %{{.+}}: i64):
// CHECK-NEXT: %[[MAX3:.+]] = arith.maxsi %[[V3]], %[[L3]] : i64
// CHECK-NEXT: linalg.yield %[[MAX3]] : i64
func.func @clamp(%x: tensor<4xf32>, %lo: tensor<f32>, %hi: tensor<f32>, %i: tensor<4xi64>, %ilo: tensor<i64>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xi64>) {
  %0 = kiln.clamp %x min %lo max %hi : (tensor<4xf32>, tensor<f32>, tensor<f32>) -> tensor<4xf32>
  %1 = kiln.clamp %x max %hi : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %2 = kiln.clamp %i min %ilo : (tensor<4xi64>, tensor<i64>) -> tensor<4xi64>
  return %0, %1, %2 : tensor<4xf32>, tensor<4xf32>, tensor<4xi64>
}

// -----

// Tests that cast follows the kiln rules: to i1 is "!= 0" (une for floats),
// from i1 is unsigned (true is 1), other integers are signed, floats
// truncate toward zero, and f16 <-> bf16 goes through f32.

// CHECK-LABEL: func.func @cast
// CHECK: ^bb0(%[[F0:.+]]: f32, %{{.+}}: i1):
// CHECK-NEXT: %[[Z0:.+]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: %[[B0:.+]] = arith.cmpf une, %[[F0]], %[[Z0]] : f32
// CHECK-NEXT: linalg.yield %[[B0]] : i1
// CHECK: ^bb0(%[[I1:.+]]: i64, %{{.+}}: i1):
// CHECK-NEXT: %[[Z1:.+]] = arith.constant 0 : i64
// CHECK-NEXT: %[[B1:.+]] = arith.cmpi ne, %[[I1]], %[[Z1]] : i64
// CHECK-NEXT: linalg.yield %[[B1]] : i1
// CHECK: ^bb0(%[[I2:.+]]: i1, %{{.+}}: f32):
// CHECK-NEXT: %[[R2:.+]] = arith.uitofp %[[I2]] : i1 to f32
// CHECK-NEXT: linalg.yield %[[R2]] : f32
// CHECK: ^bb0(%[[I3:.+]]: i1, %{{.+}}: i64):
// CHECK-NEXT: %[[R3:.+]] = arith.extui %[[I3]] : i1 to i64
// CHECK-NEXT: linalg.yield %[[R3]] : i64
// CHECK: ^bb0(%[[I4:.+]]: i64, %{{.+}}: i32):
// CHECK-NEXT: %[[R4:.+]] = arith.trunci %[[I4]] : i64 to i32
// CHECK: ^bb0(%[[I5:.+]]: i8, %{{.+}}: i64):
// CHECK-NEXT: %[[R5:.+]] = arith.extsi %[[I5]] : i8 to i64
// CHECK: ^bb0(%[[I6:.+]]: i64, %{{.+}}: f32):
// CHECK-NEXT: %[[R6:.+]] = arith.sitofp %[[I6]] : i64 to f32
// CHECK: ^bb0(%[[I7:.+]]: f32, %{{.+}}: i64):
// CHECK-NEXT: %[[R7:.+]] = arith.fptosi %[[I7]] : f32 to i64
// CHECK: ^bb0(%[[I8:.+]]: f32, %{{.+}}: f16):
// CHECK-NEXT: %[[R8:.+]] = arith.truncf %[[I8]] : f32 to f16
// CHECK: ^bb0(%[[I9:.+]]: f16, %{{.+}}: f32):
// CHECK-NEXT: %[[R9:.+]] = arith.extf %[[I9]] : f16 to f32
// CHECK: ^bb0(%[[I10:.+]]: f16, %{{.+}}: bf16):
// CHECK-NEXT: %[[W10:.+]] = arith.extf %[[I10]] : f16 to f32
// CHECK-NEXT: %[[R10:.+]] = arith.truncf %[[W10]] : f32 to bf16
// CHECK-NEXT: linalg.yield %[[R10]] : bf16
func.func @cast(%f: tensor<4xf32>, %b: tensor<4xi1>, %i: tensor<4xi64>, %h: tensor<4xf16>, %i8: tensor<4xi8>)
    -> (tensor<4xi1>, tensor<4xi1>, tensor<4xf32>, tensor<4xi64>, tensor<4xi32>, tensor<4xi64>, tensor<4xf32>, tensor<4xi64>, tensor<4xf16>, tensor<4xf32>, tensor<4xbf16>) {
  %0 = kiln.cast %f : tensor<4xf32> to tensor<4xi1>
  %1 = kiln.cast %i : tensor<4xi64> to tensor<4xi1>
  %2 = kiln.cast %b : tensor<4xi1> to tensor<4xf32>
  %3 = kiln.cast %b : tensor<4xi1> to tensor<4xi64>
  %4 = kiln.cast %i : tensor<4xi64> to tensor<4xi32>
  %5 = kiln.cast %i8 : tensor<4xi8> to tensor<4xi64>
  %6 = kiln.cast %i : tensor<4xi64> to tensor<4xf32>
  %7 = kiln.cast %f : tensor<4xf32> to tensor<4xi64>
  %8 = kiln.cast %f : tensor<4xf32> to tensor<4xf16>
  %9 = kiln.cast %h : tensor<4xf16> to tensor<4xf32>
  %10 = kiln.cast %h : tensor<4xf16> to tensor<4xbf16>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10
      : tensor<4xi1>, tensor<4xi1>, tensor<4xf32>, tensor<4xi64>, tensor<4xi32>, tensor<4xi64>, tensor<4xf32>, tensor<4xi64>, tensor<4xf16>, tensor<4xf32>, tensor<4xbf16>
}

// -----

// Tests that exact GELU is 0.5 * x * (1 + erf(x / sqrt(2))) and the tanh
// form 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))).

// CHECK-LABEL: func.func @gelu
// CHECK: ^bb0(%[[X:.+]]: f32, %{{.+}}: f32):
// CHECK-DAG: %[[HALF:.+]] = arith.constant 5.000000e-01 : f32
// CHECK-DAG: %[[ONE:.+]] = arith.constant 1.000000e+00 : f32
// CHECK-DAG: %[[RSQRT2:.+]] = arith.constant 0.707106769 : f32
// CHECK: %[[SCALED:.+]] = arith.mulf %[[X]], %[[RSQRT2]] : f32
// CHECK: %[[ERF:.+]] = math.erf %[[SCALED]] : f32
// CHECK: %[[HALFX:.+]] = arith.mulf %[[HALF]], %[[X]] : f32
// CHECK: %[[SUM:.+]] = arith.addf %[[ONE]], %[[ERF]] : f32
// CHECK: %[[R:.+]] = arith.mulf %[[HALFX]], %[[SUM]] : f32
// CHECK: linalg.yield %[[R]] : f32
// CHECK: ^bb0(%[[T:.+]]: f32, %{{.+}}: f32):
// CHECK-DAG: %[[THALF:.+]] = arith.constant 5.000000e-01 : f32
// CHECK-DAG: %[[TONE:.+]] = arith.constant 1.000000e+00 : f32
// CHECK-DAG: %[[SQ:.+]] = arith.mulf %[[T]], %[[T]] : f32
// CHECK-DAG: %[[CUBE:.+]] = arith.mulf %[[T]], %[[SQ]] : f32
// CHECK-DAG: %[[COEF:.+]] = arith.constant 4.471500e-02 : f32
// CHECK-DAG: %[[TERM:.+]] = arith.mulf %[[COEF]], %[[CUBE]] : f32
// CHECK-DAG: %[[CUBIC:.+]] = arith.addf %[[T]], %[[TERM]] : f32
// CHECK-DAG: %[[SQRT2PI:.+]] = arith.constant 0.797884583 : f32
// CHECK: %[[INNER:.+]] = arith.mulf %[[SQRT2PI]], %[[CUBIC]] : f32
// CHECK: %[[TANH:.+]] = math.tanh %[[INNER]] : f32
// CHECK: %[[THALFX:.+]] = arith.mulf %[[THALF]], %[[T]] : f32
// CHECK: %[[TSUM:.+]] = arith.addf %[[TONE]], %[[TANH]] : f32
// CHECK: %[[TR:.+]] = arith.mulf %[[THALFX]], %[[TSUM]] : f32
// CHECK: linalg.yield %[[TR]] : f32
// CHECK-NOT: math.erf
func.func @gelu(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = kiln.gelu %x : tensor<4xf32>
  %1 = kiln.gelu %x {tanh_approximation} : tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}

// -----

//===----------------------------------------------------------------------===//
// MatMul
//===----------------------------------------------------------------------===//

// Tests that with a 2-D right operand the left operand's batch dimensions
// fold into M: one linalg.matmul on [B*S, K] x [K, N] into a zero-filled
// [B*S, N], reshaped back to [B, S, N].

// CHECK-LABEL: func.func @matmul_2d_rhs
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<?x?x64xf32>, %[[W:[a-zA-Z0-9_]+]]: tensor<64x256xf32>)
// CHECK-DAG: %[[D0:.+]] = tensor.dim %[[X]], %{{.+}} : tensor<?x?x64xf32>
// CHECK-DAG: %[[D1:.+]] = tensor.dim %[[X]], %{{.+}} : tensor<?x?x64xf32>
// CHECK: %[[ROWS:.+]] = arith.muli %[[D0]], %[[D1]] : index
// CHECK: %[[C64:.+]] = arith.constant 64 : index
// CHECK: %[[FLAT_SHAPE:.+]] = tensor.from_elements %[[ROWS]], %[[C64]] : tensor<2xindex>
// CHECK: %[[FLAT:.+]] = tensor.reshape %[[X]](%[[FLAT_SHAPE]]) : (tensor<?x?x64xf32>, tensor<2xindex>) -> tensor<?x64xf32>
// CHECK: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[EMPTY:.+]] = tensor.empty(%[[ROWS]]) : tensor<?x256xf32>
// CHECK: %[[FILL:.+]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[EMPTY]] : tensor<?x256xf32>) -> tensor<?x256xf32>
// CHECK: %[[MM:.+]] = linalg.matmul ins(%[[FLAT]], %[[W]] : tensor<?x64xf32>, tensor<64x256xf32>) outs(%[[FILL]] : tensor<?x256xf32>) -> tensor<?x256xf32>
// CHECK: %[[C256:.+]] = arith.constant 256 : index
// CHECK: %[[SHAPE:.+]] = tensor.from_elements %[[D0]], %[[D1]], %[[C256]] : tensor<3xindex>
// CHECK: %[[R:.+]] = tensor.reshape %[[MM]](%[[SHAPE]]) : (tensor<?x256xf32>, tensor<3xindex>) -> tensor<?x?x256xf32>
// CHECK: return %[[R]]
func.func @matmul_2d_rhs(%x: tensor<?x?x64xf32>, %w: tensor<64x256xf32>) -> tensor<?x?x256xf32> {
  %y = kiln.matmul %x, %w : (tensor<?x?x64xf32>, tensor<64x256xf32>) -> tensor<?x?x256xf32>
  return %y : tensor<?x?x256xf32>
}

// -----

// Tests that transpose_b with a 2-D right operand is linalg.matmul_transpose_b
// (N is the right operand's first dimension), and that static 2-D operands
// need no reshapes.

// CHECK-LABEL: func.func @matmul_transpose_b
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<8x64xf32>, %[[W:[a-zA-Z0-9_]+]]: tensor<256x64xf32>)
// CHECK-NOT: tensor.reshape
// CHECK: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[EMPTY:.+]] = tensor.empty() : tensor<8x256xf32>
// CHECK: %[[FILL:.+]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[EMPTY]] : tensor<8x256xf32>)
// CHECK: %[[MM:.+]] = linalg.matmul_transpose_b ins(%[[X]], %[[W]] : tensor<8x64xf32>, tensor<256x64xf32>) outs(%[[FILL]] : tensor<8x256xf32>)
// CHECK-NOT: tensor.reshape
// CHECK: return %[[MM]]
func.func @matmul_transpose_b(%x: tensor<8x64xf32>, %w: tensor<256x64xf32>) -> tensor<8x256xf32> {
  %y = kiln.matmul %x, %w {transpose_b} : (tensor<8x64xf32>, tensor<256x64xf32>) -> tensor<8x256xf32>
  return %y : tensor<8x256xf32>
}

// -----

// Tests that integer products fill with an integer zero.

// CHECK-LABEL: func.func @matmul_integer
// CHECK: %[[ZERO:.+]] = arith.constant 0 : i64
// CHECK: %[[FILL:.+]] = linalg.fill ins(%[[ZERO]] : i64) outs(%{{.+}} : tensor<3x5xi64>)
// CHECK: linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<3x8xi64>, tensor<8x5xi64>) outs(%[[FILL]] : tensor<3x5xi64>)
func.func @matmul_integer(%a: tensor<3x8xi64>, %b: tensor<8x5xi64>) -> tensor<3x5xi64> {
  %s = kiln.matmul %a, %b : (tensor<3x8xi64>, tensor<8x5xi64>) -> tensor<3x5xi64>
  return %s : tensor<3x5xi64>
}

// -----

// Tests that with a batched right operand both operands are flattened to
// [batch, rows, cols] (the batch is the product of the broadcast batch sizes,
// a dynamic one the arith.maxui of the operands') and multiplied with
// linalg.batch_matmul_transpose_b, then reshaped back to rank 4.

// CHECK-LABEL: func.func @batch_matmul_transpose_b
// CHECK-SAME: (%[[Q:[a-zA-Z0-9_]+]]: tensor<?x4x?x16xf32>, %[[K:[a-zA-Z0-9_]+]]: tensor<?x4x?x16xf32>)
// CHECK-DAG: %[[Q0:.+]] = tensor.dim %[[Q]], %[[C0:[a-zA-Z0-9_]+]] : tensor<?x4x?x16xf32>
// CHECK-DAG: %[[M:.+]] = tensor.dim %[[Q]], %[[C2:[a-zA-Z0-9_]+]] : tensor<?x4x?x16xf32>
// CHECK-DAG: %[[K0:.+]] = tensor.dim %[[K]], %[[C0B:[a-zA-Z0-9_]+]] : tensor<?x4x?x16xf32>
// CHECK-DAG: %[[N:.+]] = tensor.dim %[[K]], %[[C2B:[a-zA-Z0-9_]+]] : tensor<?x4x?x16xf32>
// CHECK: %[[B0:.+]] = arith.maxui %[[Q0]], %[[K0]] : index
// CHECK: %[[BQ:.+]] = arith.muli %[[B0]], %{{.+}} : index
// CHECK: %[[QSHAPE:.+]] = tensor.from_elements %[[BQ]], %[[M]], %{{.+}} : tensor<3xindex>
// CHECK: %[[QFLAT:.+]] = tensor.reshape %[[Q]](%[[QSHAPE]]) : (tensor<?x4x?x16xf32>, tensor<3xindex>) -> tensor<?x?x16xf32>
// CHECK: %[[BK:.+]] = arith.muli %[[B0]], %{{.+}} : index
// CHECK: %[[KSHAPE:.+]] = tensor.from_elements %[[BK]], %[[N]], %{{.+}} : tensor<3xindex>
// CHECK: %[[KFLAT:.+]] = tensor.reshape %[[K]](%[[KSHAPE]]) : (tensor<?x4x?x16xf32>, tensor<3xindex>) -> tensor<?x?x16xf32>
// CHECK: %[[B:.+]] = arith.muli %[[B0]], %{{.+}} : index
// CHECK: %[[EMPTY:.+]] = tensor.empty(%[[B]], %[[M]], %[[N]]) : tensor<?x?x?xf32>
// CHECK: %[[FILL:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%[[EMPTY]] : tensor<?x?x?xf32>)
// CHECK: %[[BMM:.+]] = linalg.batch_matmul_transpose_b ins(%[[QFLAT]], %[[KFLAT]] : tensor<?x?x16xf32>, tensor<?x?x16xf32>) outs(%[[FILL]] : tensor<?x?x?xf32>)
// CHECK: %[[C4:.+]] = arith.constant 4 : index
// CHECK: %[[SHAPE:.+]] = tensor.from_elements %[[B0]], %[[C4]], %[[M]], %[[N]] : tensor<4xindex>
// CHECK: %[[R:.+]] = tensor.reshape %[[BMM]](%[[SHAPE]]) : (tensor<?x?x?xf32>, tensor<4xindex>) -> tensor<?x4x?x?xf32>
// CHECK: return %[[R]]
func.func @batch_matmul_transpose_b(%q: tensor<?x4x?x16xf32>, %k: tensor<?x4x?x16xf32>) -> tensor<?x4x?x?xf32> {
  %s = kiln.matmul %q, %k {transpose_b} : (tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>) -> tensor<?x4x?x?xf32>
  return %s : tensor<?x4x?x?xf32>
}

// -----

// Tests that a size-1 batch dimension is broadcast with a copying generic
// that reads batch index 0, and an operand that already has the result's
// batch is used as is, by a linalg.batch_matmul.

// CHECK-LABEL: func.func @batch_matmul_broadcast_batch
// CHECK-SAME: (%[[A:[a-zA-Z0-9_]+]]: tensor<1x3x8xf32>, %[[B:[a-zA-Z0-9_]+]]: tensor<2x8x5xf32>)
// CHECK: %[[AE:.+]] = tensor.empty() : tensor<2x3x8xf32>
// CHECK: %[[AB:.+]] = linalg.generic
// CHECK-SAME: indexing_maps = [affine_map<(d0, d1, d2) -> (0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>]
// CHECK-SAME: ins(%[[A]] : tensor<1x3x8xf32>) outs(%[[AE]] : tensor<2x3x8xf32>)
// CHECK: ^bb0(%[[IN:.+]]: f32, %{{.+}}: f32):
// CHECK-NEXT: linalg.yield %[[IN]] : f32
// CHECK: %[[FILL:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<2x3x5xf32>)
// CHECK: %[[BMM:.+]] = linalg.batch_matmul ins(%[[AB]], %[[B]] : tensor<2x3x8xf32>, tensor<2x8x5xf32>) outs(%[[FILL]] : tensor<2x3x5xf32>)
// CHECK-NOT: tensor.reshape
// CHECK: return %[[BMM]]
func.func @batch_matmul_broadcast_batch(%a: tensor<1x3x8xf32>, %b: tensor<2x8x5xf32>) -> tensor<2x3x5xf32> {
  %s = kiln.matmul %a, %b : (tensor<1x3x8xf32>, tensor<2x8x5xf32>) -> tensor<2x3x5xf32>
  return %s : tensor<2x3x5xf32>
}

// -----

// Tests that a 2-D left operand against a batched right operand is
// broadcast over the batch (aligned on the right).

// CHECK-LABEL: func.func @batch_matmul_2d_lhs
// CHECK-SAME: (%[[A:[a-zA-Z0-9_]+]]: tensor<3x8xf32>, %[[B:[a-zA-Z0-9_]+]]: tensor<2x8x5xf32>)
// CHECK: %[[AB:.+]] = linalg.generic
// CHECK-SAME: indexing_maps = [affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>]
// CHECK-SAME: ins(%[[A]] : tensor<3x8xf32>) outs(%{{.+}} : tensor<2x3x8xf32>)
// CHECK: linalg.batch_matmul ins(%[[AB]], %[[B]] : tensor<2x3x8xf32>, tensor<2x8x5xf32>)
func.func @batch_matmul_2d_lhs(%a: tensor<3x8xf32>, %b: tensor<2x8x5xf32>) -> tensor<2x3x5xf32> {
  %s = kiln.matmul %a, %b : (tensor<3x8xf32>, tensor<2x8x5xf32>) -> tensor<2x3x5xf32>
  return %s : tensor<2x3x5xf32>
}

// -----

// Tests that a dynamic result batch size whose operands are static takes the
// operands' batch size: the operands are used as they are (no broadcasting
// copy), the product is a static 2x3x5 linalg.batch_matmul, and the reshape
// to the dynamic result type reads batch size 2.

// CHECK-LABEL: func.func @batch_matmul_static_operands_dynamic_batch
// CHECK-SAME: (%[[A:[a-zA-Z0-9_]+]]: tensor<2x3x8xf32>, %[[B:[a-zA-Z0-9_]+]]: tensor<2x8x5xf32>)
// CHECK-NOT: linalg.generic
// CHECK: %[[EMPTY:.+]] = tensor.empty() : tensor<2x3x5xf32>
// CHECK: %[[FILL:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%[[EMPTY]] : tensor<2x3x5xf32>)
// CHECK: %[[BMM:.+]] = linalg.batch_matmul ins(%[[A]], %[[B]] : tensor<2x3x8xf32>, tensor<2x8x5xf32>) outs(%[[FILL]] : tensor<2x3x5xf32>)
// CHECK: %[[C2:.+]] = arith.constant 2 : index
// CHECK: %[[SHAPE:.+]] = tensor.from_elements %[[C2]], %{{.+}}, %{{.+}} : tensor<3xindex>
// CHECK: %[[R:.+]] = tensor.reshape %[[BMM]](%[[SHAPE]]) : (tensor<2x3x5xf32>, tensor<3xindex>) -> tensor<?x3x5xf32>
// CHECK: return %[[R]]
func.func @batch_matmul_static_operands_dynamic_batch(%a: tensor<2x3x8xf32>, %b: tensor<2x8x5xf32>) -> tensor<?x3x5xf32> {
  %s = kiln.matmul %a, %b : (tensor<2x3x8xf32>, tensor<2x8x5xf32>) -> tensor<?x3x5xf32>
  return %s : tensor<?x3x5xf32>
}

// -----

// Tests that a static batch size that is not 1 wins over the other operand's
// dynamic one: the dynamic operand is copied into the static batch, with no
// arith.maxui.

// CHECK-LABEL: func.func @batch_matmul_static_beats_dynamic_batch
// CHECK-SAME: (%[[A:[a-zA-Z0-9_]+]]: tensor<?x3x8xf32>, %[[B:[a-zA-Z0-9_]+]]: tensor<2x8x5xf32>)
// CHECK-NOT: arith.maxui
// CHECK: %[[AE:.+]] = tensor.empty() : tensor<2x3x8xf32>
// CHECK: %[[AB:.+]] = linalg.generic
// CHECK-SAME: ins(%[[A]] : tensor<?x3x8xf32>) outs(%[[AE]] : tensor<2x3x8xf32>)
// CHECK-NOT: arith.maxui
// CHECK: %[[BMM:.+]] = linalg.batch_matmul ins(%[[AB]], %[[B]] : tensor<2x3x8xf32>, tensor<2x8x5xf32>) outs(%{{.+}} : tensor<2x3x5xf32>)
// CHECK: %[[SHAPE:.+]] = tensor.from_elements %c2{{(_[0-9]+)?}}, %{{.+}}, %{{.+}} : tensor<3xindex>
// CHECK: tensor.reshape %[[BMM]](%[[SHAPE]]) : (tensor<2x3x5xf32>, tensor<3xindex>) -> tensor<?x3x5xf32>
func.func @batch_matmul_static_beats_dynamic_batch(%a: tensor<?x3x8xf32>, %b: tensor<2x8x5xf32>) -> tensor<?x3x5xf32> {
  %s = kiln.matmul %a, %b : (tensor<?x3x8xf32>, tensor<2x8x5xf32>) -> tensor<?x3x5xf32>
  return %s : tensor<?x3x5xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

// Tests that reduce_sum with keep_dims reduces into a zero-filled tensor of
// the kept dimensions and reshapes that back with the reduced axis as 1.

// CHECK-LABEL: func.func @reduce_sum_keep_dims
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<?x?x64xf32>)
// CHECK: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG: %[[D0:.+]] = tensor.dim %[[X]], %{{.+}} : tensor<?x?x64xf32>
// CHECK-DAG: %[[D1:.+]] = tensor.dim %[[X]], %{{.+}} : tensor<?x?x64xf32>
// CHECK: %[[EMPTY:.+]] = tensor.empty(%[[D0]], %[[D1]]) : tensor<?x?xf32>
// CHECK: %[[FILL:.+]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[EMPTY]] : tensor<?x?xf32>)
// CHECK: %[[SUM:.+]] = linalg.generic
// CHECK-SAME: indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>]
// CHECK-SAME: iterator_types = ["parallel", "parallel", "reduction"]
// CHECK-SAME: ins(%[[X]] : tensor<?x?x64xf32>) outs(%[[FILL]] : tensor<?x?xf32>)
// CHECK: ^bb0(%[[IN:.+]]: f32, %[[ACC:.+]]: f32):
// CHECK-NEXT: %[[ADD:.+]] = arith.addf %[[ACC]], %[[IN]] fastmath<reassoc> : f32
// CHECK-NEXT: linalg.yield %[[ADD]] : f32
// CHECK: %[[C1:.+]] = arith.constant 1 : index
// CHECK: %[[SHAPE:.+]] = tensor.from_elements %[[D0]], %[[D1]], %[[C1]] : tensor<3xindex>
// CHECK: %[[R:.+]] = tensor.reshape %[[SUM]](%[[SHAPE]]) : (tensor<?x?xf32>, tensor<3xindex>) -> tensor<?x?x1xf32>
// CHECK: return %[[R]]
func.func @reduce_sum_keep_dims(%x: tensor<?x?x64xf32>) -> tensor<?x?x1xf32> {
  %m = kiln.reduce_sum %x {axes = array<i64: 2>, keep_dims = true} : (tensor<?x?x64xf32>) -> tensor<?x?x1xf32>
  return %m : tensor<?x?x1xf32>
}

// -----

// Tests that without keep_dims the reduced axes are dropped (no reshape),
// over several axes at once, with integer accumulation.

// CHECK-LABEL: func.func @reduce_sum_drop_dims
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<?x8x64xi64>)
// CHECK: %[[ZERO:.+]] = arith.constant 0 : i64
// CHECK: %[[EMPTY:.+]] = tensor.empty() : tensor<8xi64>
// CHECK: %[[FILL:.+]] = linalg.fill ins(%[[ZERO]] : i64) outs(%[[EMPTY]] : tensor<8xi64>)
// CHECK: %[[SUM:.+]] = linalg.generic
// CHECK-SAME: indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d1)>]
// CHECK-SAME: iterator_types = ["reduction", "parallel", "reduction"]
// CHECK-SAME: ins(%[[X]] : tensor<?x8x64xi64>) outs(%[[FILL]] : tensor<8xi64>)
// CHECK: arith.addi
// CHECK-NOT: tensor.reshape
// CHECK: return %[[SUM]]
func.func @reduce_sum_drop_dims(%x: tensor<?x8x64xi64>) -> tensor<8xi64> {
  %m = kiln.reduce_sum %x {axes = array<i64: 0, 2>, keep_dims = false} : (tensor<?x8x64xi64>) -> tensor<8xi64>
  return %m : tensor<8xi64>
}

// -----

// Tests that reduce_mean divides the sum by the number of reduced elements
// (read with tensor.dim) in a second generic that writes a NEW tensor.empty,
// not the sum's own buffer.

// CHECK-LABEL: func.func @reduce_mean
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<?x64xf32>)
// CHECK: %[[SUM:.+]] = linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "reduction"]
// CHECK: arith.addf
// CHECK: %[[N:.+]] = tensor.dim %[[X]], %[[C1:.+]] : tensor<?x64xf32>
// CHECK: %[[COUNT:.+]] = arith.muli %{{.+}}, %[[N]] : index
// CHECK: %[[COUNT_I64:.+]] = arith.index_cast %[[COUNT]] : index to i64
// CHECK: %[[DIVISOR:.+]] = arith.sitofp %[[COUNT_I64]] : i64 to f32
// CHECK: %[[D0:.+]] = tensor.dim %[[SUM]], %{{.+}} : tensor<?xf32>
// CHECK: %[[EMPTY:.+]] = tensor.empty(%[[D0]]) : tensor<?xf32>
// CHECK: %[[MEAN:.+]] = linalg.generic
// CHECK-SAME: indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>]
// CHECK-SAME: iterator_types = ["parallel"]
// CHECK-SAME: ins(%[[SUM]] : tensor<?xf32>) outs(%[[EMPTY]] : tensor<?xf32>)
// CHECK: ^bb0(%[[IN:.+]]: f32, %{{.+}}: f32):
// CHECK-NEXT: %[[Q:.+]] = arith.divf %[[IN]], %[[DIVISOR]] : f32
// CHECK-NEXT: linalg.yield %[[Q]] : f32
// CHECK: return %[[MEAN]]
func.func @reduce_mean(%x: tensor<?x64xf32>) -> tensor<?xf32> {
  %m = kiln.reduce_mean %x {axes = array<i64: 1>, keep_dims = false} : (tensor<?x64xf32>) -> tensor<?xf32>
  return %m : tensor<?xf32>
}

// -----

// Tests that with keep_dims the mean divides the reshaped sum, again into a
// new tensor, and that an integer mean truncates the count and divides signed.

// CHECK-LABEL: func.func @reduce_mean_keep_dims_integer
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<4x64xi32>)
// CHECK: %[[SUM:.+]] = linalg.generic
// CHECK: %[[KEPT:.+]] = tensor.reshape %[[SUM]](%{{.+}}) : (tensor<4xi32>, tensor<2xindex>) -> tensor<4x1xi32>
// CHECK: %[[COUNT:.+]] = arith.index_cast %{{.+}} : index to i64
// CHECK: %[[DIVISOR:.+]] = arith.trunci %[[COUNT]] : i64 to i32
// CHECK: %[[EMPTY:.+]] = tensor.empty() : tensor<4x1xi32>
// CHECK: %[[MEAN:.+]] = linalg.generic
// CHECK-SAME: ins(%[[KEPT]] : tensor<4x1xi32>) outs(%[[EMPTY]] : tensor<4x1xi32>)
// CHECK: arith.divsi %{{.+}}, %[[DIVISOR]] : i32
// CHECK: return %[[MEAN]]
func.func @reduce_mean_keep_dims_integer(%x: tensor<4x64xi32>) -> tensor<4x1xi32> {
  %m = kiln.reduce_mean %x {axes = array<i64: 1>, keep_dims = true} : (tensor<4x64xi32>) -> tensor<4x1xi32>
  return %m : tensor<4x1xi32>
}

// -----

// Tests that reduce_max starts from -inf for floats and from the smallest
// value for integers.

// CHECK-LABEL: func.func @reduce_max
// CHECK: %[[NEG_INF:.+]] = arith.constant 0xFF800000 : f32
// CHECK: %[[FILL:.+]] = linalg.fill ins(%[[NEG_INF]] : f32) outs(%{{.+}} : tensor<4xf32>)
// CHECK: linalg.generic
// CHECK-SAME: outs(%[[FILL]] : tensor<4xf32>)
// CHECK: ^bb0(%[[IN:.+]]: f32, %[[ACC:.+]]: f32):
// CHECK-NEXT: %[[MAX:.+]] = arith.maximumf %[[ACC]], %[[IN]] fastmath<reassoc> : f32
// CHECK: tensor.reshape %{{.+}} : (tensor<4xf32>, tensor<2xindex>) -> tensor<4x1xf32>
// CHECK: %[[IMIN:.+]] = arith.constant -2147483648 : i32
// CHECK: %[[IFILL:.+]] = linalg.fill ins(%[[IMIN]] : i32) outs(%{{.+}} : tensor<4xi32>)
// CHECK: linalg.generic
// CHECK-SAME: outs(%[[IFILL]] : tensor<4xi32>)
// CHECK: ^bb0(%[[IIN:.+]]: i32, %[[IACC:.+]]: i32):
// CHECK-NEXT: arith.maxsi %[[IACC]], %[[IIN]] : i32
func.func @reduce_max(%x: tensor<4x64xf32>, %i: tensor<4x64xi32>) -> (tensor<4x1xf32>, tensor<4x1xi32>) {
  %m = kiln.reduce_max %x {axes = array<i64: 1>} : (tensor<4x64xf32>) -> tensor<4x1xf32>
  %n = kiln.reduce_max %i {axes = array<i64: 1>} : (tensor<4x64xi32>) -> tensor<4x1xi32>
  return %m, %n : tensor<4x1xf32>, tensor<4x1xi32>
}

// -----

// Tests that reduce_min starts from +inf for floats and from the largest
// value for integers (255 for ui8, whose minimum is unsigned), and
// reduce_prod from 1.

// CHECK-LABEL: func.func @reduce_min_prod
// CHECK: %[[INF:.+]] = arith.constant 0x7F800000 : f32
// CHECK: linalg.fill ins(%[[INF]] : f32)
// CHECK: ^bb0(%[[IN:.+]]: f32, %[[ACC:.+]]: f32):
// CHECK-NEXT: arith.minimumf %[[ACC]], %[[IN]] fastmath<reassoc> : f32
// CHECK: %[[UMAX:.+]] = arith.constant -1 : i8
// CHECK: linalg.fill ins(%[[UMAX]] : i8)
// CHECK: ^bb0(%[[UIN:.+]]: i8, %[[UACC:.+]]: i8):
// CHECK-NEXT: arith.minui %[[UACC]], %[[UIN]] : i8
// CHECK: %[[ONE:.+]] = arith.constant 1.000000e+00 : f32
// CHECK: linalg.fill ins(%[[ONE]] : f32)
// CHECK: ^bb0(%[[PIN:.+]]: f32, %[[PACC:.+]]: f32):
// CHECK-NEXT: arith.mulf %[[PACC]], %[[PIN]] fastmath<reassoc> : f32
func.func @reduce_min_prod(%x: tensor<4x64xf32>, %u: tensor<4x64xui8>) -> (tensor<4xf32>, tensor<4xui8>, tensor<4xf32>) {
  %m = kiln.reduce_min %x {axes = array<i64: 1>, keep_dims = false} : (tensor<4x64xf32>) -> tensor<4xf32>
  %n = kiln.reduce_min %u {axes = array<i64: 1>, keep_dims = false} : (tensor<4x64xui8>) -> tensor<4xui8>
  %p = kiln.reduce_prod %x {axes = array<i64: 1>, keep_dims = false} : (tensor<4x64xf32>) -> tensor<4xf32>
  return %m, %n, %p : tensor<4xf32>, tensor<4xui8>, tensor<4xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Softmax and normalizations (decomposed into kiln ops, then lowered)
//===----------------------------------------------------------------------===//

// Tests that softmax is exp(x - max) / sum(exp(x - max)) along the axis: a
// max reduction, a broadcast subtraction, exp, a sum reduction and a
// broadcast division, with the kept-dims reductions read at index 0.

// CHECK-LABEL: func.func @softmax
// CHECK-NOT: = kiln.
// CHECK: linalg.fill ins(%{{.+}} : f32)
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel", "parallel", "reduction"]
// CHECK: arith.maximumf
// CHECK: %[[MAX:.+]] = tensor.reshape %{{.+}} -> tensor<?x4x?x1xf32>
// CHECK: %[[SHIFTED:.+]] = linalg.generic
// CHECK-SAME: affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, 0)>
// CHECK-SAME: ins(%{{.+}}, %[[MAX]] : tensor<?x4x?x?xf32>, tensor<?x4x?x1xf32>)
// CHECK: arith.subf
// CHECK: %[[EXP:.+]] = linalg.generic
// CHECK-SAME: ins(%[[SHIFTED]] : tensor<?x4x?x?xf32>)
// CHECK: math.exp
// CHECK: linalg.fill
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel", "parallel", "reduction"]
// CHECK-SAME: ins(%[[EXP]] : tensor<?x4x?x?xf32>)
// CHECK: arith.addf
// CHECK: %[[SUM:.+]] = tensor.reshape %{{.+}} -> tensor<?x4x?x1xf32>
// CHECK: %[[R:.+]] = linalg.generic
// CHECK-SAME: ins(%[[EXP]], %[[SUM]] : tensor<?x4x?x?xf32>, tensor<?x4x?x1xf32>)
// CHECK: arith.divf
// CHECK: return %[[R]]
func.func @softmax(%x: tensor<?x4x?x?xf32>) -> tensor<?x4x?x?xf32> {
  %y = kiln.softmax %x {axis = 3 : i64} : tensor<?x4x?x?xf32>
  return %y : tensor<?x4x?x?xf32>
}

// -----

// Tests that log_softmax is (x - max) - log(sum(exp(x - max))).

// CHECK-LABEL: func.func @log_softmax
// CHECK-NOT: = kiln.
// CHECK: arith.maximumf
// CHECK: %[[SHIFTED:.+]] = linalg.generic
// CHECK: arith.subf
// CHECK: %[[EXP:.+]] = linalg.generic
// CHECK-SAME: ins(%[[SHIFTED]] : tensor<2x8xf32>)
// CHECK: math.exp
// CHECK: arith.addf
// CHECK: %[[SUM:.+]] = tensor.reshape %{{.+}} -> tensor<2x1xf32>
// CHECK: %[[LOG:.+]] = linalg.generic
// CHECK-SAME: ins(%[[SUM]] : tensor<2x1xf32>)
// CHECK: math.log
// CHECK: %[[R:.+]] = linalg.generic
// CHECK-SAME: ins(%[[SHIFTED]], %[[LOG]] : tensor<2x8xf32>, tensor<2x1xf32>)
// CHECK: arith.subf
// CHECK: return %[[R]]
func.func @log_softmax(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %y = kiln.log_softmax %x {axis = 1 : i64} : tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

// Tests that layer_norm is (x - mean) * rsqrt(mean((x - mean)^2) + eps)
// * scale + bias over the trailing axes, with epsilon as a 0-d constant.

// CHECK-LABEL: func.func @layer_norm
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<?x?x64xf32>, %[[G:[a-zA-Z0-9_]+]]: tensor<64xf32>, %[[B:[a-zA-Z0-9_]+]]: tensor<64xf32>)
// CHECK-NOT: = kiln.
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[X]] : tensor<?x?x64xf32>)
// CHECK: arith.addf
// CHECK: %[[MEAN:.+]] = linalg.generic
// CHECK: arith.divf
// CHECK: %[[CENTERED:.+]] = linalg.generic
// CHECK-SAME: ins(%[[X]], %[[MEAN]] : tensor<?x?x64xf32>, tensor<?x?x1xf32>)
// CHECK: arith.subf
// CHECK: %[[SQUARED:.+]] = linalg.generic
// CHECK-SAME: ins(%[[CENTERED]], %[[CENTERED]] :
// CHECK: arith.mulf
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[SQUARED]] : tensor<?x?x64xf32>)
// CHECK: arith.addf
// CHECK: %[[VAR:.+]] = linalg.generic
// CHECK: arith.divf
// CHECK: %[[EPS:.+]] = arith.constant dense<9.99999974E-6> : tensor<f32>
// CHECK: %[[VAR_EPS:.+]] = linalg.generic
// CHECK-SAME: ins(%[[VAR]], %[[EPS]] : tensor<?x?x1xf32>, tensor<f32>)
// CHECK: arith.addf
// CHECK: %[[INV:.+]] = linalg.generic
// CHECK-SAME: ins(%[[VAR_EPS]] : tensor<?x?x1xf32>)
// CHECK: math.rsqrt
// CHECK: %[[NORMED:.+]] = linalg.generic
// CHECK-SAME: ins(%[[CENTERED]], %[[INV]] : tensor<?x?x64xf32>, tensor<?x?x1xf32>)
// CHECK: arith.mulf
// CHECK: %[[SCALED:.+]] = linalg.generic
// CHECK-SAME: ins(%[[NORMED]], %[[G]] : tensor<?x?x64xf32>, tensor<64xf32>)
// CHECK: arith.mulf
// CHECK: %[[R:.+]] = linalg.generic
// CHECK-SAME: ins(%[[SCALED]], %[[B]] : tensor<?x?x64xf32>, tensor<64xf32>)
// CHECK: arith.addf
// CHECK: return %[[R]]
func.func @layer_norm(%x: tensor<?x?x64xf32>, %g: tensor<64xf32>, %b: tensor<64xf32>) -> tensor<?x?x64xf32> {
  %y = kiln.layer_norm %x, %g, %b {axis = 2 : i64, epsilon = 1.0e-05 : f32} : (tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
  return %y : tensor<?x?x64xf32>
}

// -----

// Tests that layer_norm without a bias ends with the scale multiplication.

// CHECK-LABEL: func.func @layer_norm_no_bias
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<2x8xf32>, %[[G:[a-zA-Z0-9_]+]]: tensor<8xf32>)
// CHECK: math.rsqrt
// CHECK: %[[NORMED:.+]] = linalg.generic
// CHECK-SAME: ins(%{{.+}}, %{{.+}} : tensor<2x8xf32>, tensor<2x1xf32>)
// CHECK: arith.mulf
// CHECK: %[[R:.+]] = linalg.generic
// CHECK-SAME: ins(%[[NORMED]], %[[G]] : tensor<2x8xf32>, tensor<8xf32>)
// CHECK: arith.mulf
// CHECK-NOT: linalg.generic
// CHECK: return %[[R]]
func.func @layer_norm_no_bias(%x: tensor<2x8xf32>, %g: tensor<8xf32>) -> tensor<2x8xf32> {
  %y = kiln.layer_norm %x, %g {axis = 1 : i64} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

// Tests that rms_norm is x * rsqrt(mean(x^2) + eps) * scale. No kiln op is
// left ("= kiln." rather than "kiln.": the run-time checks' messages name
// the decomposed ops, e.g. "kiln.mul: operand 0 dim 0 ..."), and the checks
// of the decomposed ops carry the rms_norm's node name.

// CHECK-LABEL: func.func @rms_norm
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<?x?x64xf32>, %[[W:[a-zA-Z0-9_]+]]: tensor<64xf32>)
// CHECK-NOT: = kiln.
// CHECK: cf.assert %{{.+}}, "node 'RMSNorm_1' (kiln.mul): operand 0 dim 1 does not match the result's size (dynamic sizes do not broadcast)"
// CHECK: %[[SQUARED:.+]] = linalg.generic
// CHECK-SAME: ins(%[[X]], %[[X]] : tensor<?x?x64xf32>, tensor<?x?x64xf32>)
// CHECK: arith.mulf
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel", "reduction"]
// CHECK-SAME: ins(%[[SQUARED]] : tensor<?x?x64xf32>)
// CHECK: arith.addf
// CHECK: %[[MEAN:.+]] = linalg.generic
// CHECK: arith.divf
// CHECK: %[[EPS:.+]] = arith.constant dense<9.99999997E-7> : tensor<f32>
// CHECK: %[[SUM:.+]] = linalg.generic
// CHECK-SAME: ins(%[[MEAN]], %[[EPS]] : tensor<?x?x1xf32>, tensor<f32>)
// CHECK: arith.addf
// CHECK: %[[INV:.+]] = linalg.generic
// CHECK: math.rsqrt
// CHECK: %[[NORMED:.+]] = linalg.generic
// CHECK-SAME: ins(%[[X]], %[[INV]] : tensor<?x?x64xf32>, tensor<?x?x1xf32>)
// CHECK: arith.mulf
// CHECK: %[[R:.+]] = linalg.generic
// CHECK-SAME: ins(%[[NORMED]], %[[W]] : tensor<?x?x64xf32>, tensor<64xf32>)
// CHECK: arith.mulf
// CHECK: return %[[R]]
func.func @rms_norm(%x: tensor<?x?x64xf32>, %w: tensor<64xf32>) -> tensor<?x?x64xf32> {
  %y = kiln.rms_norm %x, %w {axis = 2 : i64, epsilon = 1.0e-06 : f32} : (tensor<?x?x64xf32>, tensor<64xf32>) -> tensor<?x?x64xf32> loc("RMSNorm_1")
  return %y : tensor<?x?x64xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Shape and data movement
//===----------------------------------------------------------------------===//

// Tests that the ONNX reshape rules apply to the dynamic result dimensions:
// a requested 0 copies the input's size at that index, a -1 is the element count divided
// by the product of the other sizes (a -1 counts as 1 there, and a zero
// divisor as 1). The static result dimensions come from the type. The
// element count of the resolved shape (the -1 replaced by the inferred size)
// is checked at run time against the input's, before the reshape.

// CHECK-LABEL: func.func @reshape
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<?x?x64xf32>, %[[S:[a-zA-Z0-9_]+]]: tensor<4xi64>)
// CHECK-DAG: %[[D0:.+]] = tensor.dim %[[X]], %[[C0:[a-zA-Z0-9_]+]] : tensor<?x?x64xf32>
// CHECK-DAG: %[[D1:.+]] = tensor.dim %[[X]], %[[C1:[a-zA-Z0-9_]+]] : tensor<?x?x64xf32>
// CHECK: %[[E0:.+]] = tensor.extract %[[S]][%{{.+}}] : tensor<4xi64>
// CHECK: %[[R0:.+]] = arith.index_cast %[[E0]] : i64 to index
// CHECK: %[[IS_ZERO0:.+]] = arith.cmpi eq, %[[R0]], %[[ZERO:.+]] : index
// CHECK: %[[RES0:.+]] = arith.select %[[IS_ZERO0]], %[[D0]], %[[R0]] : index
// CHECK: %[[IS_INF0:.+]] = arith.cmpi eq, %[[R0]], %[[MINUS1:.+]] : index
// CHECK: %[[KNOWN0:.+]] = arith.select %[[IS_INF0]], %{{.+}}, %[[RES0]] : index
// CHECK: arith.muli %{{.+}}, %[[KNOWN0]] : index
// CHECK: %[[E1:.+]] = tensor.extract %[[S]][%{{.+}}] : tensor<4xi64>
// CHECK: %[[R1:.+]] = arith.index_cast %[[E1]] : i64 to index
// CHECK: %[[IS_ZERO1:.+]] = arith.cmpi eq, %[[R1]], %{{.+}} : index
// CHECK: %[[RES1:.+]] = arith.select %[[IS_ZERO1]], %[[D1]], %[[R1]] : index
// CHECK: %[[IS_INF1:.+]] = arith.cmpi eq, %[[R1]], %{{.+}} : index
// CHECK: %[[KNOWN1:.+]] = arith.select %[[IS_INF1]], %{{.+}}, %[[RES1]] : index
// CHECK: %[[P1:.+]] = arith.muli %{{.+}}, %[[KNOWN1]] : index
// CHECK-NOT: tensor.extract %[[S]]
// CHECK: %[[P2:.+]] = arith.muli %[[P1]], %[[K4:.+]] : index
// CHECK: %[[KNOWN:.+]] = arith.muli %[[P2]], %[[K16:.+]] : index
// CHECK: %[[T0:.+]] = arith.muli %{{.+}}, %[[D0]] : index
// CHECK: %[[T1:.+]] = arith.muli %[[T0]], %[[D1]] : index
// CHECK: %[[TOTAL:.+]] = arith.muli %[[T1]], %{{.+}} : index
// CHECK: %[[KNOWN_IS_ZERO:.+]] = arith.cmpi eq, %[[KNOWN]], %{{.+}} : index
// CHECK: %[[DIVISOR:.+]] = arith.select %[[KNOWN_IS_ZERO]], %{{.+}}, %[[KNOWN]] : index
// CHECK: %[[INFERRED:.+]] = arith.divsi %[[TOTAL]], %[[DIVISOR]] : index
// CHECK: %[[COUNT0_INF:.+]] = arith.cmpi eq, %[[R0]], %{{.+}} : index
// CHECK: %[[COUNT0:.+]] = arith.select %[[COUNT0_INF]], %[[INFERRED]], %[[RES0]] : index
// CHECK: %[[Q0:.+]] = arith.muli %{{.+}}, %[[COUNT0]] : index
// CHECK: %[[COUNT1_INF:.+]] = arith.cmpi eq, %[[R1]], %{{.+}} : index
// CHECK: %[[COUNT1:.+]] = arith.select %[[COUNT1_INF]], %[[INFERRED]], %[[RES1]] : index
// CHECK: %[[Q1:.+]] = arith.muli %[[Q0]], %[[COUNT1]] : index
// CHECK: %[[Q2:.+]] = arith.muli %[[Q1]], %[[K4]] : index
// CHECK: %[[COUNT:.+]] = arith.muli %[[Q2]], %[[K16]] : index
// CHECK: %[[KEEPS:.+]] = arith.cmpi eq, %[[COUNT]], %[[TOTAL]] : index
// CHECK-NEXT: cf.assert %[[KEEPS]], "kiln.reshape: the requested shape does not hold the input's element count"
// CHECK: %[[SIZE0_INF:.+]] = arith.cmpi eq, %[[R0]], %{{.+}} : index
// CHECK: %[[SIZE0:.+]] = arith.select %[[SIZE0_INF]], %[[INFERRED]], %[[RES0]] : index
// CHECK: %[[SIZE1_INF:.+]] = arith.cmpi eq, %[[R1]], %{{.+}} : index
// CHECK: %[[SIZE1:.+]] = arith.select %[[SIZE1_INF]], %[[INFERRED]], %[[RES1]] : index
// CHECK-DAG: %[[C4:.+]] = arith.constant 4 : index
// CHECK-DAG: %[[C16:.+]] = arith.constant 16 : index
// CHECK: %[[SHAPE:.+]] = tensor.from_elements %[[SIZE0]], %[[SIZE1]], %[[C4]], %[[C16]] : tensor<4xindex>
// CHECK: %[[R:.+]] = tensor.reshape %[[X]](%[[SHAPE]]) : (tensor<?x?x64xf32>, tensor<4xindex>) -> tensor<?x?x4x16xf32>
// CHECK: return %[[R]]
func.func @reshape(%x: tensor<?x?x64xf32>, %s: tensor<4xi64>) -> tensor<?x?x4x16xf32> {
  %y = kiln.reshape %x, %s : (tensor<?x?x64xf32>, tensor<4xi64>) -> tensor<?x?x4x16xf32>
  return %y : tensor<?x?x4x16xf32>
}

// -----

// Tests that a requested 0 copies a static input size as a constant, and
// that the constants really are the ONNX markers 0 and -1.

// CHECK-LABEL: func.func @reshape_copy_static
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<?x4x16xf32>, %[[S:[a-zA-Z0-9_]+]]: tensor<2xi64>)
// CHECK: tensor.extract %[[S]]
// CHECK: %[[E1:.+]] = tensor.extract %[[S]][%[[C1:.+]]] : tensor<2xi64>
// CHECK: %[[R1:.+]] = arith.index_cast %[[E1]] : i64 to index
// CHECK: %[[C4:.+]] = arith.constant 4 : index
// CHECK: %[[C0:.+]] = arith.constant 0 : index
// CHECK: %[[IS_ZERO:.+]] = arith.cmpi eq, %[[R1]], %[[C0]] : index
// CHECK: %[[RES1:.+]] = arith.select %[[IS_ZERO]], %[[C4]], %[[R1]] : index
// CHECK: %[[CM1:.+]] = arith.constant -1 : index
// CHECK: arith.cmpi eq, %[[R1]], %[[CM1]] : index
// CHECK: tensor.reshape %[[X]]
func.func @reshape_copy_static(%x: tensor<?x4x16xf32>, %s: tensor<2xi64>) -> tensor<?x?xf32> {
  %y = kiln.reshape %x, %s : (tensor<?x4x16xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}

// -----

// Tests that a shape that exporters build from sizes (kiln.dim, arithmetic,
// unsqueeze, concat) is computed from those sizes, not read back from the
// shape tensor: entry 0 is dim 0 of %x, entry 1 is dim 1 of %x minus 1
// (entry 2 is the result's static 64, which the lowering does not read).
// The shape's own ops still lower (dead, for canonicalization to remove).

// CHECK-LABEL: func.func @reshape_traced_shape
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<?x?x64xf32>)
// CHECK: cf.assert %{{.+}}, "kiln.concat: the result dim 0 is not the declared 3"
// CHECK: %[[D0_I64:.+]] = arith.index_cast %[[D0:dim_[0-9]+]] : index to i64
// CHECK-NEXT: %[[R0:.+]] = arith.index_cast %[[D0_I64]] : i64 to index
// CHECK: arith.cmpi eq, %[[R0]]
// CHECK: %[[D1:.+]] = tensor.dim %[[X]], %[[C1:.+]] : tensor<?x?x64xf32>
// CHECK-NEXT: %[[D1_I64:.+]] = arith.index_cast %[[D1]] : index to i64
// CHECK-NEXT: %[[ONE:.+]] = arith.constant 1 : i64
// CHECK-NEXT: %[[DIFF:.+]] = arith.subi %[[D1_I64]], %[[ONE]] : i64
// CHECK-NEXT: %[[R1:.+]] = arith.index_cast %[[DIFF]] : i64 to index
// CHECK-NOT: tensor.extract
// CHECK: tensor.reshape %[[X]]
func.func @reshape_traced_shape(%x: tensor<?x?x64xf32>) -> tensor<?x?x64xf32> {
  %one = kiln.constant dense<1> : tensor<i64>
  %tail = kiln.constant dense<64> : tensor<1xi64>
  %d0 = kiln.dim %x {index = 0 : i64} : tensor<?x?x64xf32> -> tensor<i64>
  %d1 = kiln.dim %x {index = 1 : i64} : tensor<?x?x64xf32> -> tensor<i64>
  %shorter = kiln.sub %d1, %one : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %e0 = kiln.unsqueeze %d0 {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %e1 = kiln.unsqueeze %shorter {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %s = kiln.concat %e0, %e1, %tail {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  %y = kiln.reshape %x, %s : (tensor<?x?x64xf32>, tensor<3xi64>) -> tensor<?x?x64xf32>
  return %y : tensor<?x?x64xf32>
}

// -----

// Tests that a shape concatenated from an input of unknown length is read
// from the shape tensor: the positions of the entries after that input are
// not known at compile time.

// CHECK-LABEL: func.func @reshape_shape_of_unknown_layout
// CHECK: %[[E0:.+]] = tensor.extract %{{.+}}[%{{.+}}] : tensor<3xi64>
// CHECK: %[[E1:.+]] = tensor.extract %{{.+}}[%{{.+}}] : tensor<3xi64>
// CHECK: %[[E2:.+]] = tensor.extract %{{.+}}[%{{.+}}] : tensor<3xi64>
// CHECK: tensor.reshape
func.func @reshape_shape_of_unknown_layout(%x: tensor<?x?x?xf32>, %head: tensor<?xi64>) -> tensor<?x?x?xf32> {
  %tail = kiln.constant dense<[7, 9]> : tensor<2xi64>
  %s = kiln.concat %head, %tail {axis = 0 : i64} : (tensor<?xi64>, tensor<2xi64>) -> tensor<3xi64>
  %y = kiln.reshape %x, %s : (tensor<?x?x?xf32>, tensor<3xi64>) -> tensor<?x?x?xf32>
  return %y : tensor<?x?x?xf32>
}

// -----

// Tests that squeeze is a tensor.reshape to the input sizes without the
// squeezed axes, with no run-time check for a squeezed dim that is static 1.

// CHECK-LABEL: func.func @squeeze
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<?x1x64xf32>)
// CHECK: %[[D0:.+]] = tensor.dim %[[X]], %{{.+}} : tensor<?x1x64xf32>
// CHECK-NOT: cf.assert
// CHECK: %[[C64:.+]] = arith.constant 64 : index
// CHECK: %[[SHAPE:.+]] = tensor.from_elements %[[D0]], %[[C64]] : tensor<2xindex>
// CHECK: %[[R:.+]] = tensor.reshape %[[X]](%[[SHAPE]]) : (tensor<?x1x64xf32>, tensor<2xindex>) -> tensor<?x64xf32>
// CHECK: return %[[R]]
func.func @squeeze(%x: tensor<?x1x64xf32>) -> tensor<?x64xf32> {
  %y = kiln.squeeze %x {axes = array<i64: 1>} : (tensor<?x1x64xf32>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// Tests that unsqueeze is a tensor.reshape with 1s at the new axes.

// CHECK-LABEL: func.func @unsqueeze
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<?x?xi64>)
// CHECK: %[[D0:.+]] = tensor.dim %[[X]], %{{.+}} : tensor<?x?xi64>
// CHECK: %[[D1:.+]] = tensor.dim %[[X]], %{{.+}} : tensor<?x?xi64>
// CHECK: %[[ONE_A:.+]] = arith.constant 1 : index
// CHECK: %[[ONE_B:.+]] = arith.constant 1 : index
// CHECK: %[[SHAPE:.+]] = tensor.from_elements %[[D0]], %[[ONE_A]], %[[ONE_B]], %[[D1]] : tensor<4xindex>
// CHECK: %[[R:.+]] = tensor.reshape %[[X]](%[[SHAPE]]) : (tensor<?x?xi64>, tensor<4xindex>) -> tensor<?x1x1x?xi64>
// CHECK: return %[[R]]
func.func @unsqueeze(%x: tensor<?x?xi64>) -> tensor<?x1x1x?xi64> {
  %y = kiln.unsqueeze %x {axes = array<i64: 1, 2>} : (tensor<?x?xi64>) -> tensor<?x1x1x?xi64>
  return %y : tensor<?x1x1x?xi64>
}

// -----

// Tests that transpose is linalg.transpose into a tensor.empty whose dynamic
// sizes are the permuted input sizes.

// CHECK-LABEL: func.func @transpose
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<?x?x4x16xf32>)
// CHECK: %[[C0:.+]] = arith.constant 0 : index
// CHECK: %[[D0:.+]] = tensor.dim %[[X]], %[[C0]] : tensor<?x?x4x16xf32>
// CHECK: %[[C1:.+]] = arith.constant 1 : index
// CHECK: %[[D1:.+]] = tensor.dim %[[X]], %[[C1]] : tensor<?x?x4x16xf32>
// CHECK: %[[EMPTY:.+]] = tensor.empty(%[[D0]], %[[D1]]) : tensor<?x4x?x16xf32>
// CHECK: %[[T:.+]] = linalg.transpose ins(%[[X]] : tensor<?x?x4x16xf32>) outs(%[[EMPTY]] : tensor<?x4x?x16xf32>) permutation = [0, 2, 1, 3]
// CHECK: return %[[T]]
func.func @transpose(%x: tensor<?x?x4x16xf32>) -> tensor<?x4x?x16xf32> {
  %y = kiln.transpose %x {permutation = array<i64: 0, 2, 1, 3>} : (tensor<?x?x4x16xf32>) -> tensor<?x4x?x16xf32>
  return %y : tensor<?x4x?x16xf32>
}

// -----

// Tests that concat inserts each input into one tensor.empty at the running
// offset along the axis, and that the axis size is the sum of the inputs'.

// CHECK-LABEL: func.func @concat
// CHECK-SAME: (%[[A:[a-zA-Z0-9_]+]]: tensor<?x4x?x16xf32>, %[[B:[a-zA-Z0-9_]+]]: tensor<?x4x1x16xf32>)
// CHECK: %[[D0:.+]] = tensor.dim %[[A]], %{{.+}} : tensor<?x4x?x16xf32>
// CHECK: %[[ZERO:.+]] = arith.constant 0 : index
// CHECK: %[[A2:.+]] = tensor.dim %[[A]], %{{.+}} : tensor<?x4x?x16xf32>
// CHECK: %[[OFF1:.+]] = arith.addi %[[ZERO]], %[[A2]] : index
// CHECK: %[[B2:.+]] = tensor.dim %[[B]], %{{.+}} : tensor<?x4x1x16xf32>
// CHECK: %[[TOTAL:.+]] = arith.addi %[[OFF1]], %[[B2]] : index
// CHECK: %[[EMPTY:.+]] = tensor.empty(%[[D0]], %[[TOTAL]]) : tensor<?x4x?x16xf32>
// CHECK: %[[INS0:.+]] = tensor.insert_slice %[[A]] into %[[EMPTY]][0, 0, %[[ZERO]], 0] [%{{.+}}, 4, %{{.+}}, 16] [1, 1, 1, 1] : tensor<?x4x?x16xf32> into tensor<?x4x?x16xf32>
// CHECK: %[[INS1:.+]] = tensor.insert_slice %[[B]] into %[[INS0]][0, 0, %[[OFF1]], 0] [%{{.+}}, 4, 1, 16] [1, 1, 1, 1] : tensor<?x4x1x16xf32> into tensor<?x4x?x16xf32>
// CHECK: return %[[INS1]]
func.func @concat(%a: tensor<?x4x?x16xf32>, %b: tensor<?x4x1x16xf32>) -> tensor<?x4x?x16xf32> {
  %y = kiln.concat %a, %b {axis = 2 : i64} : (tensor<?x4x?x16xf32>, tensor<?x4x1x16xf32>) -> tensor<?x4x?x16xf32>
  return %y : tensor<?x4x?x16xf32>
}

// -----

// Tests that split is one unit-stride tensor.extract_slice per result at the
// running static offset, cast to the result type where that is more static.

// CHECK-LABEL: func.func @split
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<?x6xf32>)
// CHECK: %[[D0:.+]] = tensor.dim %[[X]], %{{.+}} : tensor<?x6xf32>
// CHECK: %[[S0:.+]] = tensor.extract_slice %[[X]][0, 0] [%[[D0]], 2] [1, 1] : tensor<?x6xf32> to tensor<?x2xf32>
// CHECK: %[[CAST:.+]] = tensor.cast %[[S0]] : tensor<?x2xf32> to tensor<4x2xf32>
// CHECK: %[[S1:.+]] = tensor.extract_slice %[[X]][0, 2] [%[[D0]], 4] [1, 1] : tensor<?x6xf32> to tensor<?x4xf32>
// CHECK: return %[[CAST]], %[[S1]]
func.func @split(%x: tensor<?x6xf32>) -> (tensor<4x2xf32>, tensor<?x4xf32>) {
  %a, %b = kiln.split %x {axis = 1 : i64, sizes = array<i64: 2, 4>} : (tensor<?x6xf32>) -> (tensor<4x2xf32>, tensor<?x4xf32>)
  return %a, %b : tensor<4x2xf32>, tensor<?x4xf32>
}

// -----

// Tests that split by sizes computed at run time reads each size from its
// operand, checks it is not negative and that they add up to the axis, and
// slices at the running sum of the sizes before.

// CHECK-LABEL: func.func @split_computed
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<4x6xf32>, %[[N:[a-zA-Z0-9_]+]]: tensor<2xi64>)
// CHECK: %[[E0:.+]] = tensor.extract %[[N]][%{{.+}}] : tensor<2xi64>
// CHECK: %[[N0:.+]] = arith.index_cast %[[E0]] : i64 to index
// CHECK: cf.assert %{{.+}}, "kiln.split: split size 0 is negative"
// CHECK: %[[E1:.+]] = tensor.extract %[[N]][%{{.+}}] : tensor<2xi64>
// CHECK: %[[N1:.+]] = arith.index_cast %[[E1]] : i64 to index
// CHECK: cf.assert %{{.+}}, "kiln.split: split size 1 is negative"
// CHECK: %[[SUM:.+]] = arith.addi %[[N0]], %[[N1]] : index
// CHECK: %[[OK:.+]] = arith.cmpi eq, %{{.+}}, %[[SUM]] : index
// CHECK: cf.assert %[[OK]], "kiln.split: the split sizes do not add up to dim 1"
// CHECK: %[[A:.+]] = tensor.extract_slice %[[X]][0, 0] [4, %[[N0]]] [1, 1] : tensor<4x6xf32> to tensor<4x?xf32>
// CHECK: %[[B:.+]] = tensor.extract_slice %[[X]][0, %[[N0]]] [4, %[[N1]]] [1, 1] : tensor<4x6xf32> to tensor<4x?xf32>
// CHECK: return %[[A]], %[[B]]
func.func @split_computed(%x: tensor<4x6xf32>, %n: tensor<2xi64>) -> (tensor<4x?xf32>, tensor<4x?xf32>) {
  %a, %b = kiln.split %x sizes %n {axis = 1 : i64, sizes = array<i64: -9223372036854775808, -9223372036854775808>}
      : (tensor<4x6xf32>, tensor<2xi64>) -> (tensor<4x?xf32>, tensor<4x?xf32>)
  return %a, %b : tensor<4x?xf32>, tensor<4x?xf32>
}

// -----

// Tests that a slice whose steps are constant and positive is a
// tensor.extract_slice with the constant stride: negative starts/ends wrap
// by the size, both are clamped into [0, size], and the count is
// max(0, ceildiv(end - start, step)).

// CHECK-LABEL: func.func @slice_positive_steps
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<1x1x256x256xi1>, %[[S:[a-zA-Z0-9_]+]]: tensor<1xi64>, %[[E:[a-zA-Z0-9_]+]]: tensor<1xi64>)
// CHECK: %[[SIZE:.+]] = arith.constant 256 : index
// CHECK: %[[START_I64:.+]] = tensor.extract %[[S]]
// CHECK: %[[START:.+]] = arith.index_cast %[[START_I64]] : i64 to index
// CHECK: %[[START_WRAPPED:.+]] = arith.addi %[[START]], %[[SIZE]] : index
// CHECK: %[[START_NEG:.+]] = arith.cmpi slt, %[[START]], %{{.+}} : index
// CHECK: %[[START1:.+]] = arith.select %[[START_NEG]], %[[START_WRAPPED]], %[[START]] : index
// CHECK: %[[END_I64:.+]] = tensor.extract %[[E]]
// CHECK: %[[END:.+]] = arith.index_cast %[[END_I64]] : i64 to index
// CHECK: %[[END_WRAPPED:.+]] = arith.addi %[[END]], %[[SIZE]] : index
// CHECK: %[[END_NEG:.+]] = arith.cmpi slt, %[[END]], %{{.+}} : index
// CHECK: %[[END1:.+]] = arith.select %[[END_NEG]], %[[END_WRAPPED]], %[[END]] : index
// CHECK: %[[STEP:.+]] = arith.select
// CHECK: %[[LO:.+]] = arith.maxsi %[[START1]], %{{.+}} : index
// CHECK: %[[OFFSET:.+]] = arith.minsi %[[LO]], %[[SIZE]] : index
// CHECK: %[[ELO:.+]] = arith.maxsi %[[END1]], %{{.+}} : index
// CHECK: %[[END2:.+]] = arith.minsi %[[ELO]], %[[SIZE]] : index
// CHECK: %[[SPAN:.+]] = arith.subi %[[END2]], %[[OFFSET]] : index
// CHECK: %[[STEPS:.+]] = arith.ceildivsi %[[SPAN]], %[[STEP]] : index
// CHECK: %[[COUNT:.+]] = arith.maxsi %{{.+}}, %[[STEPS]] : index
// CHECK-NOT: linalg.generic
// CHECK: %[[R:.+]] = tensor.extract_slice %[[X]][0, 0, %[[OFFSET]], 0] [1, 1, %[[COUNT]], 256] [1, 1, 2, 1] : tensor<1x1x256x256xi1> to tensor<1x1x?x256xi1>
// CHECK: return %[[R]]
func.func @slice_positive_steps(%x: tensor<1x1x256x256xi1>, %s: tensor<1xi64>, %e: tensor<1xi64>) -> tensor<1x1x?x256xi1> {
  %st = kiln.constant dense<2> : tensor<1xi64>
  %y = kiln.slice %x[%s : %e : %st] {axes = array<i64: 2>} : (tensor<1x1x256x256xi1>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x?x256xi1>
  return %y : tensor<1x1x?x256xi1>
}

// -----

// Tests that a slice result more static than the extracted slice gets a
// tensor.cast.

// CHECK-LABEL: func.func @slice_positive_steps_cast
// CHECK: %[[S:.+]] = tensor.extract_slice %{{.+}}[0, %{{.+}}] [8, %{{.+}}] [1, 1] : tensor<8x16xf32> to tensor<8x?xf32>
// CHECK: %[[CAST:.+]] = tensor.cast %[[S]] : tensor<8x?xf32> to tensor<8x15xf32>
// CHECK: return %[[CAST]]
func.func @slice_positive_steps_cast(%x: tensor<8x16xf32>) -> tensor<8x15xf32> {
  %s = kiln.constant dense<1> : tensor<1xi64>
  %e = kiln.constant dense<9223372036854775807> : tensor<1xi64>
  %st = kiln.constant dense<1> : tensor<1xi64>
  %y = kiln.slice %x[%s : %e : %st] {axes = array<i64: 1>} : (tensor<8x16xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<8x15xf32>
  return %y : tensor<8x15xf32>
}

// -----

// Tests that a slice with a negative constant step is a linalg.generic that
// reads offset + index * step with tensor.extract: the backward start is
// clamped into [0, size - 1], the backward end into [-1, size - 1], and the
// count is ceildiv(start - end, -step). Unsliced axes read index * 1 + 0.

// CHECK-LABEL: func.func @slice_negative_step
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<?x8xf32>)
// CHECK-NOT: tensor.extract_slice
// CHECK: %[[SIZE:.+]] = tensor.dim %[[X]], %{{.+}} : tensor<?x8xf32>
// CHECK: %[[START:.+]] = arith.select %{{.+}}, %{{.+}}, %{{.+}} : index
// CHECK: %[[END:.+]] = arith.select %{{.+}}, %{{.+}}, %{{.+}} : index
// CHECK: %[[STEP_IS_ZERO:.+]] = arith.cmpi eq, %{{.+}}, %{{.+}} : index
// CHECK: %[[STEP:.+]] = arith.select %[[STEP_IS_ZERO]], %{{.+}}, %{{.+}} : index
// CHECK: %[[LAST:.+]] = arith.subi %[[SIZE]], %{{.+}} : index
// CHECK: %[[BS_LO:.+]] = arith.maxsi %[[START]], %{{.+}} : index
// CHECK: %[[BSTART:.+]] = arith.minsi %[[BS_LO]], %[[LAST]] : index
// CHECK: %[[CM1:.+]] = arith.constant -1 : index
// CHECK: %[[BE_LO:.+]] = arith.maxsi %[[END]], %[[CM1]] : index
// CHECK: %[[BEND:.+]] = arith.minsi %[[BE_LO]], %[[LAST]] : index
// CHECK: %[[NEG_STEP:.+]] = arith.subi %{{.+}}, %[[STEP]] : index
// CHECK: %[[SPAN:.+]] = arith.subi %[[BSTART]], %[[BEND]] : index
// CHECK: %[[BSTEPS:.+]] = arith.ceildivsi %[[SPAN]], %[[NEG_STEP]] : index
// CHECK: %[[BCOUNT:.+]] = arith.maxsi %{{.+}}, %[[BSTEPS]] : index
// CHECK: %[[FORWARD:.+]] = arith.cmpi slt, %{{.+}}, %[[STEP]] : index
// CHECK: %[[OFFSET:.+]] = arith.select %[[FORWARD]], %{{.+}}, %[[BSTART]] : index
// CHECK: %[[COUNT:.+]] = arith.select %[[FORWARD]], %{{.+}}, %[[BCOUNT]] : index
// CHECK: %[[EMPTY:.+]] = tensor.empty(%[[COUNT]]) : tensor<?x8xf32>
// CHECK: %[[R:.+]] = linalg.generic
// CHECK-SAME: indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>]
// CHECK-SAME: outs(%[[EMPTY]] : tensor<?x8xf32>)
// CHECK: %[[I0:.+]] = linalg.index 0 : index
// CHECK: %[[I1:.+]] = linalg.index 1 : index
// CHECK: %[[MUL0:.+]] = arith.muli %[[I0]], %[[STEP]] : index
// CHECK: %[[SRC0:.+]] = arith.addi %[[OFFSET]], %[[MUL0]] : index
// CHECK: %[[MUL1:.+]] = arith.muli %[[I1]], %{{.+}} : index
// CHECK: %[[SRC1:.+]] = arith.addi %{{.+}}, %[[MUL1]] : index
// CHECK: %[[V:.+]] = tensor.extract %[[X]][%[[SRC0]], %[[SRC1]]] : tensor<?x8xf32>
// CHECK: linalg.yield %[[V]] : f32
// CHECK: return %[[R]]
func.func @slice_negative_step(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %s = kiln.constant dense<-1> : tensor<1xi64>
  %e = kiln.constant dense<-9223372036854775807> : tensor<1xi64>
  %st = kiln.constant dense<-1> : tensor<1xi64>
  %y = kiln.slice %x[%s : %e : %st] {axes = array<i64: 0>} : (tensor<?x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// -----

// Tests that a slice with steps only known at run time takes the generic
// path too, choosing between the forward and backward bounds by the sign of
// the step.

// CHECK-LABEL: func.func @slice_dynamic_steps
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<?x8xf32>, %{{.+}}: tensor<1xi64>, %{{.+}}: tensor<1xi64>, %[[ST:[a-zA-Z0-9_]+]]: tensor<1xi64>)
// CHECK-NOT: tensor.extract_slice
// CHECK: %[[STEP_I64:.+]] = tensor.extract %[[ST]]
// CHECK: %[[RAW_STEP:.+]] = arith.index_cast %[[STEP_I64]] : i64 to index
// CHECK: %[[STEP_IS_ZERO:.+]] = arith.cmpi eq, %[[RAW_STEP]], %{{.+}} : index
// CHECK: %[[STEP:.+]] = arith.select %[[STEP_IS_ZERO]], %{{.+}}, %[[RAW_STEP]] : index
// CHECK: %[[FORWARD:.+]] = arith.cmpi slt, %{{.+}}, %[[STEP]] : index
// CHECK: %[[OFFSET:.+]] = arith.select %[[FORWARD]], %{{.+}}, %{{.+}} : index
// CHECK: %[[COUNT:.+]] = arith.select %[[FORWARD]], %{{.+}}, %{{.+}} : index
// CHECK: %[[EMPTY:.+]] = tensor.empty(%[[COUNT]]) : tensor<?x8xf32>
// CHECK: linalg.generic
// CHECK-SAME: outs(%[[EMPTY]] : tensor<?x8xf32>)
// CHECK: %[[I0:.+]] = linalg.index 0 : index
// CHECK: %[[MUL0:.+]] = arith.muli %[[I0]], %[[STEP]] : index
// CHECK: %[[SRC0:.+]] = arith.addi %[[OFFSET]], %[[MUL0]] : index
// CHECK: tensor.extract %[[X]][%[[SRC0]], %{{.+}}] : tensor<?x8xf32>
// CHECK-NOT: tensor.extract_slice
func.func @slice_dynamic_steps(%x: tensor<?x8xf32>, %s: tensor<1xi64>, %e: tensor<1xi64>, %st: tensor<1xi64>) -> tensor<?x8xf32> {
  %y = kiln.slice %x[%s : %e : %st] {axes = array<i64: 0>} : (tensor<?x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// -----

// Tests that gather reads the indices through the map of the axis
// dimensions, wraps negative indices, checks inside the body that the
// wrapped index lies in [0, size) (a cf.assert, not a clamp) and reads the
// data with tensor.extract at the wrapped index and the other result indices.

// CHECK-LABEL: func.func @gather
// CHECK-SAME: (%[[T:[a-zA-Z0-9_]+]]: tensor<256x64xf32>, %[[IDS:[a-zA-Z0-9_]+]]: tensor<?x?xi64>)
// CHECK-DAG: %[[D0:.+]] = tensor.dim %[[IDS]], %{{.+}} : tensor<?x?xi64>
// CHECK-DAG: %[[D1:.+]] = tensor.dim %[[IDS]], %{{.+}} : tensor<?x?xi64>
// CHECK-DAG: %[[SIZE:.+]] = arith.constant 256 : index
// CHECK: %[[EMPTY:.+]] = tensor.empty(%[[D0]], %[[D1]]) : tensor<?x?x64xf32>
// CHECK: linalg.generic
// CHECK-SAME: indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>]
// CHECK-SAME: iterator_types = ["parallel", "parallel", "parallel"]
// CHECK-SAME: ins(%[[IDS]] : tensor<?x?xi64>) outs(%[[EMPTY]] : tensor<?x?x64xf32>)
// CHECK: ^bb0(%[[ID:.+]]: i64, %{{.+}}: f32):
// CHECK: %[[INDEX:.+]] = arith.index_cast %[[ID]] : i64 to index
// CHECK: %[[WRAPPED:.+]] = arith.addi %[[INDEX]], %[[SIZE]] : index
// CHECK: %[[NEG:.+]] = arith.cmpi slt, %[[INDEX]], %c0{{(_[0-9]+)?}} : index
// CHECK: %[[SEL:.+]] = arith.select %[[NEG]], %[[WRAPPED]], %[[INDEX]] : index
// CHECK-DAG: %[[BELOW_END:.+]] = arith.cmpi slt, %[[SEL]], %[[SIZE]] : index
// CHECK-DAG: %[[NOT_NEG:.+]] = arith.cmpi sge, %[[SEL]], %c0{{(_[0-9]+)?}} : index
// CHECK: %[[IN_RANGE:.+]] = arith.andi %[[NOT_NEG]], %[[BELOW_END]] : i1
// CHECK-NEXT: cf.assert %[[IN_RANGE]], "kiln.gather: an index is out of range for data dim 0"
// CHECK-NEXT: %[[COL:.+]] = linalg.index 2 : index
// CHECK-NEXT: %[[V:.+]] = tensor.extract %[[T]][%[[SEL]], %[[COL]]] : tensor<256x64xf32>
// CHECK-NEXT: linalg.yield %[[V]] : f32
func.func @gather(%t: tensor<256x64xf32>, %ids: tensor<?x?xi64>) -> tensor<?x?x64xf32> {
  %e = kiln.gather %t[%ids] {axis = 0 : i64} : (tensor<256x64xf32>, tensor<?x?xi64>) -> tensor<?x?x64xf32>
  return %e : tensor<?x?x64xf32>
}

// -----

// Tests that gather along an inner, dynamic axis with i32 indices reads the
// axis size with tensor.dim, checks the wrapped index against it (the message
// names the axis) and reads the data at (d0, index, d2).

// CHECK-LABEL: func.func @gather_inner_axis
// CHECK-SAME: (%[[T:[a-zA-Z0-9_]+]]: tensor<2x?x5xf32>, %[[IDS:[a-zA-Z0-9_]+]]: tensor<3xi32>)
// CHECK: %[[SIZE:.+]] = tensor.dim %[[T]], %{{.+}} : tensor<2x?x5xf32>
// CHECK: linalg.generic
// CHECK-SAME: indexing_maps = [affine_map<(d0, d1, d2) -> (d1)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>]
// CHECK: ^bb0(%[[ID:.+]]: i32, %{{.+}}: f32):
// CHECK: %[[INDEX:.+]] = arith.index_cast %[[ID]] : i32 to index
// CHECK: %[[WRAPPED:.+]] = arith.addi %[[INDEX]], %[[SIZE]] : index
// CHECK: %[[SEL:.+]] = arith.select %{{.+}}, %[[WRAPPED]], %[[INDEX]] : index
// CHECK-DAG: %[[BELOW_END:.+]] = arith.cmpi slt, %[[SEL]], %[[SIZE]] : index
// CHECK-DAG: %[[NOT_NEG:.+]] = arith.cmpi sge, %[[SEL]], %c0{{(_[0-9]+)?}} : index
// CHECK: %[[IN_RANGE:.+]] = arith.andi %[[NOT_NEG]], %[[BELOW_END]] : i1
// CHECK-NEXT: cf.assert %[[IN_RANGE]], "kiln.gather: an index is out of range for data dim 1"
// CHECK-NEXT: %[[I0:.+]] = linalg.index 0 : index
// CHECK-NEXT: %[[I2:.+]] = linalg.index 2 : index
// CHECK-NEXT: tensor.extract %[[T]][%[[I0]], %[[SEL]], %[[I2]]] : tensor<2x?x5xf32>
func.func @gather_inner_axis(%t: tensor<2x?x5xf32>, %ids: tensor<3xi32>) -> tensor<2x3x5xf32> {
  %e = kiln.gather %t[%ids] {axis = 1 : i64} : (tensor<2x?x5xf32>, tensor<3xi32>) -> tensor<2x3x5xf32>
  return %e : tensor<2x3x5xf32>
}

// -----

// Tests that expand is a broadcasting copy: a dynamic result size is the
// requested size, or the input's size where the request is 1, and the
// stretched size-1 input dimensions read index 0.

// CHECK-LABEL: func.func @expand
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<1x1x?x16xf32>, %[[S:[a-zA-Z0-9_]+]]: tensor<4xi64>)
// CHECK: %[[D2:.+]] = tensor.dim %[[X]], %{{.+}} : tensor<1x1x?x16xf32>
// CHECK: %[[ONE:.+]] = arith.constant 1 : index
// CHECK: %[[E0:.+]] = tensor.extract %[[S]][%{{.+}}] : tensor<4xi64>
// CHECK: %[[R0:.+]] = arith.index_cast %[[E0]] : i64 to index
// CHECK: %[[IS1_0:.+]] = arith.cmpi eq, %[[R0]], %{{.+}} : index
// CHECK: %[[SIZE0:.+]] = arith.select %[[IS1_0]], %[[ONE]], %[[R0]] : index
// CHECK: %[[E2:.+]] = tensor.extract %[[S]][%{{.+}}] : tensor<4xi64>
// CHECK: %[[R2:.+]] = arith.index_cast %[[E2]] : i64 to index
// CHECK: %[[IS1_2:.+]] = arith.cmpi eq, %[[R2]], %{{.+}} : index
// CHECK: %[[SIZE2:.+]] = arith.select %[[IS1_2]], %[[D2]], %[[R2]] : index
// CHECK: %[[EMPTY:.+]] = tensor.empty(%[[SIZE0]], %[[SIZE2]]) : tensor<?x2x?x16xf32>
// CHECK: %[[R:.+]] = linalg.generic
// CHECK-SAME: indexing_maps = [affine_map<(d0, d1, d2, d3) -> (0, 0, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>]
// CHECK-SAME: ins(%[[X]] : tensor<1x1x?x16xf32>) outs(%[[EMPTY]] : tensor<?x2x?x16xf32>)
// CHECK: ^bb0(%[[IN:.+]]: f32, %{{.+}}: f32):
// CHECK-NEXT: linalg.yield %[[IN]] : f32
// CHECK: return %[[R]]
func.func @expand(%x: tensor<1x1x?x16xf32>, %s: tensor<4xi64>) -> tensor<?x2x?x16xf32> {
  %y = kiln.expand %x, %s : (tensor<1x1x?x16xf32>, tensor<4xi64>) -> tensor<?x2x?x16xf32>
  return %y : tensor<?x2x?x16xf32>
}

// -----

// Tests that tile sizes are input size * repeats and that every element is
// read at index % input size.

// CHECK-LABEL: func.func @tile
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<2x?xf32>, %[[R:[a-zA-Z0-9_]+]]: tensor<2xi64>)
// CHECK: %[[D1:.+]] = tensor.dim %[[X]], %{{.+}} : tensor<2x?xf32>
// CHECK: %[[C2:.+]] = arith.constant 2 : index
// CHECK: %[[REP0_I64:.+]] = tensor.extract %[[R]][%{{.+}}] : tensor<2xi64>
// CHECK: %[[REP0:.+]] = arith.index_cast %[[REP0_I64]] : i64 to index
// CHECK: %[[SIZE0:.+]] = arith.muli %[[C2]], %[[REP0]] : index
// CHECK: %[[REP1_I64:.+]] = tensor.extract %[[R]][%{{.+}}] : tensor<2xi64>
// CHECK: %[[REP1:.+]] = arith.index_cast %[[REP1_I64]] : i64 to index
// CHECK: %[[SIZE1:.+]] = arith.muli %[[D1]], %[[REP1]] : index
// CHECK: %[[EMPTY:.+]] = tensor.empty(%[[SIZE0]], %[[SIZE1]]) : tensor<?x?xf32>
// CHECK: linalg.generic
// CHECK-SAME: indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>]
// CHECK-SAME: outs(%[[EMPTY]] : tensor<?x?xf32>)
// CHECK: %[[I0:.+]] = linalg.index 0 : index
// CHECK: %[[I1:.+]] = linalg.index 1 : index
// CHECK: %[[S0:.+]] = arith.remui %[[I0]], %[[C2]] : index
// CHECK: %[[S1:.+]] = arith.remui %[[I1]], %[[D1]] : index
// CHECK: %[[V:.+]] = tensor.extract %[[X]][%[[S0]], %[[S1]]] : tensor<2x?xf32>
// CHECK: linalg.yield %[[V]] : f32
func.func @tile(%x: tensor<2x?xf32>, %r: tensor<2xi64>) -> tensor<?x?xf32> {
  %y = kiln.tile %x, %r : (tensor<2x?xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}

// -----

// Tests that trilu keeps column - row >= k with upper, column - row <= k
// otherwise, and writes a zero of the element type (false for i1) elsewhere;
// a computed k is read from its operand.

// CHECK-LABEL: func.func @trilu
// CHECK: %[[K:.+]] = arith.constant 1 : index
// CHECK: linalg.generic
// CHECK-SAME: indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>]
// CHECK: ^bb0(%[[IN:.+]]: f32, %{{.+}}: f32):
// CHECK: %[[ROW:.+]] = linalg.index 1 : index
// CHECK: %[[COL:.+]] = linalg.index 2 : index
// CHECK: %[[DIAG:.+]] = arith.subi %[[COL]], %[[ROW]] : index
// CHECK: %[[KEEP:.+]] = arith.cmpi sge, %[[DIAG]], %[[K]] : index
// CHECK: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[SEL:.+]] = arith.select %[[KEEP]], %[[IN]], %[[ZERO]] : f32
// CHECK: linalg.yield %[[SEL]] : f32
// CHECK: %[[BK:.+]] = arith.constant -1 : index
// CHECK: linalg.generic
// CHECK: ^bb0(%[[BIN:.+]]: i1, %{{.+}}: i1):
// CHECK: %[[BROW:.+]] = linalg.index 0 : index
// CHECK: %[[BCOL:.+]] = linalg.index 1 : index
// CHECK: %[[BDIAG:.+]] = arith.subi %[[BCOL]], %[[BROW]] : index
// CHECK: %[[BKEEP:.+]] = arith.cmpi sle, %[[BDIAG]], %[[BK]] : index
// CHECK: %[[FALSE:.+]] = arith.constant false
// CHECK: %[[BSEL:.+]] = arith.select %[[BKEEP]], %[[BIN]], %[[FALSE]] : i1
// CHECK: linalg.yield %[[BSEL]] : i1
// CHECK: %[[DK:.+]] = tensor.extract %{{.+}}[] : tensor<i64>
// CHECK: %[[DKI:.+]] = arith.index_cast %[[DK]] : i64 to index
// CHECK: linalg.generic
// CHECK: %[[DKEEP:.+]] = arith.cmpi sge, %{{.+}}, %[[DKI]] : index
func.func @trilu(%x: tensor<?x?x?xf32>, %b: tensor<4x4xi1>, %k: tensor<i64>)
    -> (tensor<?x?x?xf32>, tensor<4x4xi1>, tensor<?x?x?xf32>) {
  %y = kiln.trilu %x {k = 1 : i64, upper} : tensor<?x?x?xf32>
  %z = kiln.trilu %b {k = -1 : i64} : tensor<4x4xi1>
  %w = kiln.trilu %x, %k : tensor<i64> {upper} : tensor<?x?x?xf32>
  return %y, %z, %w : tensor<?x?x?xf32>, tensor<4x4xi1>, tensor<?x?x?xf32>
}

// -----

// Tests that an integer range has max(ceildiv(limit - start, delta), 0)
// elements (a zero delta divides by 1) and element i is start + i * delta.

// CHECK-LABEL: func.func @range_integer
// CHECK-SAME: (%[[START_T:[a-zA-Z0-9_]+]]: tensor<i64>, %[[LIMIT_T:[a-zA-Z0-9_]+]]: tensor<i64>, %[[DELTA_T:[a-zA-Z0-9_]+]]: tensor<i64>)
// CHECK: %[[START:.+]] = tensor.extract %[[START_T]][] : tensor<i64>
// CHECK: %[[LIMIT:.+]] = tensor.extract %[[LIMIT_T]][] : tensor<i64>
// CHECK: %[[DELTA:.+]] = tensor.extract %[[DELTA_T]][] : tensor<i64>
// CHECK: %[[DELTA_I:.+]] = arith.index_cast %[[DELTA]] : i64 to index
// CHECK: %[[IS_ZERO:.+]] = arith.cmpi eq, %[[DELTA_I]], %{{.+}} : index
// CHECK: %[[DIVISOR:.+]] = arith.select %[[IS_ZERO]], %{{.+}}, %[[DELTA_I]] : index
// CHECK: %[[START_I:.+]] = arith.index_cast %[[START]] : i64 to index
// CHECK: %[[LIMIT_I:.+]] = arith.index_cast %[[LIMIT]] : i64 to index
// CHECK: %[[SPAN:.+]] = arith.subi %[[LIMIT_I]], %[[START_I]] : index
// CHECK: %[[STEPS:.+]] = arith.ceildivsi %[[SPAN]], %[[DIVISOR]] : index
// CHECK: %[[COUNT:.+]] = arith.maxsi %[[STEPS]], %{{.+}} : index
// CHECK: %[[EMPTY:.+]] = tensor.empty(%[[COUNT]]) : tensor<?xi64>
// CHECK: linalg.generic
// CHECK-SAME: outs(%[[EMPTY]] : tensor<?xi64>)
// CHECK: %[[I:.+]] = linalg.index 0 : index
// CHECK: %[[I64:.+]] = arith.index_cast %[[I]] : index to i64
// CHECK: %[[OFF:.+]] = arith.muli %[[I64]], %[[DELTA]] : i64
// CHECK: %[[V:.+]] = arith.addi %[[START]], %[[OFF]] : i64
// CHECK: linalg.yield %[[V]] : i64
func.func @range_integer(%a: tensor<i64>, %b: tensor<i64>, %c: tensor<i64>) -> tensor<?xi64> {
  %y = kiln.range %a, %b, %c : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  return %y : tensor<?xi64>
}

// -----

// Tests that a float range has ceil((limit - start) / delta) elements and
// that a static result size is used as is; narrow integer ranges truncate
// the index.

// CHECK-LABEL: func.func @range_float
// CHECK: %[[START:.+]] = tensor.extract %{{.+}}[] : tensor<f32>
// CHECK: %[[LIMIT:.+]] = tensor.extract %{{.+}}[] : tensor<f32>
// CHECK: %[[DELTA:.+]] = tensor.extract %{{.+}}[] : tensor<f32>
// CHECK: %[[SPAN:.+]] = arith.subf %[[LIMIT]], %[[START]] : f32
// CHECK: %[[STEPS:.+]] = arith.divf %[[SPAN]], %[[DELTA]] : f32
// CHECK: %[[CEIL:.+]] = math.ceil %[[STEPS]] : f32
// CHECK: %[[N:.+]] = arith.fptosi %[[CEIL]] : f32 to i64
// CHECK: %[[COUNT:.+]] = arith.index_cast %[[N]] : i64 to index
// CHECK: %[[CLAMPED:.+]] = arith.maxsi %[[COUNT]], %{{.+}} : index
// CHECK: tensor.empty(%[[CLAMPED]]) : tensor<?xf32>
// CHECK: %[[I:.+]] = linalg.index 0 : index
// CHECK: %[[I64:.+]] = arith.index_cast %[[I]] : index to i64
// CHECK: %[[IF:.+]] = arith.sitofp %[[I64]] : i64 to f32
// CHECK: %[[OFF:.+]] = arith.mulf %[[IF]], %[[DELTA]] : f32
// CHECK: %[[V:.+]] = arith.addf %[[START]], %[[OFF]] : f32
// CHECK: linalg.yield %[[V]] : f32
// CHECK: tensor.empty() : tensor<8xi32>
// CHECK: %[[J:.+]] = linalg.index 0 : index
// CHECK: %[[J64:.+]] = arith.index_cast %[[J]] : index to i64
// CHECK: arith.trunci %[[J64]] : i64 to i32
func.func @range_float(%a: tensor<f32>, %b: tensor<f32>, %c: tensor<f32>, %d: tensor<i32>, %e: tensor<i32>, %f: tensor<i32>) -> (tensor<?xf32>, tensor<8xi32>) {
  %y = kiln.range %a, %b, %c : (tensor<f32>, tensor<f32>, tensor<f32>) -> tensor<?xf32>
  %z = kiln.range %d, %e, %f : (tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<8xi32>
  return %y, %z : tensor<?xf32>, tensor<8xi32>
}

// -----

// Tests that kiln.constant becomes arith.constant with the same value, dense
// literals and dense_resource weights alike.

// CHECK-LABEL: func.func @constant
// CHECK-DAG: %[[A:.+]] = arith.constant dense<[0, 0, 4, 16]> : tensor<4xi64>
// CHECK-DAG: %[[B:.+]] = arith.constant dense<1.000000e+00> : tensor<2x2xf32>
// CHECK-DAG: %[[W:.+]] = arith.constant dense_resource<weight> : tensor<2xf32>
// CHECK-NOT: kiln.constant
// CHECK: return %[[A]], %[[B]], %[[W]]
func.func @constant() -> (tensor<4xi64>, tensor<2x2xf32>, tensor<2xf32>) {
  %a = kiln.constant dense<[0, 0, 4, 16]> : tensor<4xi64>
  %b = kiln.constant dense<1.0> : tensor<2x2xf32>
  %w = kiln.constant dense_resource<weight> : tensor<2xf32>
  return %a, %b, %w : tensor<4xi64>, tensor<2x2xf32>, tensor<2xf32>
}

{-#
  dialect_resources: {
    builtin: {
      weight: "0x040000000000803F00000040"
    }
  }
#-}

// -----

// Tests that shape_of, dim and size build i64 tensors from the sizes:
// tensor.dim for dynamic ones, constants for static ones.

// CHECK-LABEL: func.func @shape_dim_size
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<?x?x64xf32>)
// CHECK: %[[D0:.+]] = tensor.dim %[[X]], %{{.+}} : tensor<?x?x64xf32>
// CHECK: %[[D1:.+]] = tensor.dim %[[X]], %{{.+}} : tensor<?x?x64xf32>
// CHECK: %[[S0:.+]] = arith.index_cast %[[D0]] : index to i64
// CHECK: %[[S1:.+]] = arith.index_cast %[[D1]] : index to i64
// CHECK: %[[C64:.+]] = arith.constant 64 : index
// CHECK: %[[S2:.+]] = arith.index_cast %[[C64]] : index to i64
// CHECK: %[[SHAPE:.+]] = tensor.from_elements %[[S0]], %[[S1]], %[[S2]] : tensor<3xi64>
// CHECK: %[[C1:.+]] = arith.constant 1 : index
// CHECK: %[[DIM1:.+]] = tensor.dim %[[X]], %[[C1]] : tensor<?x?x64xf32>
// CHECK: %[[DIM1_I64:.+]] = arith.index_cast %[[DIM1]] : index to i64
// CHECK: %[[DIM:.+]] = tensor.from_elements %[[DIM1_I64]] : tensor<i64>
// CHECK: %[[N0:.+]] = tensor.dim %[[X]], %{{.+}} : tensor<?x?x64xf32>
// CHECK: %[[N1:.+]] = tensor.dim %[[X]], %{{.+}} : tensor<?x?x64xf32>
// CHECK: %[[P0:.+]] = arith.muli %{{.+}}, %[[N0]] : index
// CHECK: %[[P1:.+]] = arith.muli %[[P0]], %[[N1]] : index
// CHECK: %[[P2:.+]] = arith.muli %[[P1]], %{{.+}} : index
// CHECK: %[[COUNT:.+]] = arith.index_cast %[[P2]] : index to i64
// CHECK: %[[SIZE:.+]] = tensor.from_elements %[[COUNT]] : tensor<i64>
// CHECK: return %[[SHAPE]], %[[DIM]], %[[SIZE]]
func.func @shape_dim_size(%x: tensor<?x?x64xf32>) -> (tensor<3xi64>, tensor<i64>, tensor<i64>) {
  %s = kiln.shape_of %x : tensor<?x?x64xf32> -> tensor<3xi64>
  %d = kiln.dim %x {index = 1 : i64} : tensor<?x?x64xf32> -> tensor<i64>
  %n = kiln.size %x : tensor<?x?x64xf32> -> tensor<i64>
  return %s, %d, %n : tensor<3xi64>, tensor<i64>, tensor<i64>
}

// -----

//===----------------------------------------------------------------------===//
// Run-time checks (cf.assert)
//===----------------------------------------------------------------------===//

// What the types cannot guarantee is checked with a cf.assert whose message
// is "<node>: <what>". An op without a NameLoc (as here, in .mlir input) is
// named by its op name alone; one the importer named is "node 'NAME' (op)".

// Tests that each dynamic operand dim is checked against the result's size
// where it is read (the operands align on the right, so operand 1's dim 0 is
// compared with the result's dim 1, the arith.maxui of both operands'), each
// check naming the operand and its dim, all before the generic.

// CHECK-LABEL: func.func @check_broadcast
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<?x?xf32>, %[[Y:[a-zA-Z0-9_]+]]: tensor<?xf32>)
// CHECK: %[[X0:.+]] = tensor.dim %[[X]], %c0{{(_[0-9]+)?}} : tensor<?x?xf32>
// CHECK: %[[X1:.+]] = tensor.dim %[[X]], %c1{{(_[0-9]+)?}} : tensor<?x?xf32>
// CHECK: %[[Y0:.+]] = tensor.dim %[[Y]], %c0{{(_[0-9]+)?}} : tensor<?xf32>
// CHECK: %[[N1:.+]] = arith.maxui %[[X1]], %[[Y0]] : index
// CHECK-NOT: linalg.generic
// CHECK: %[[XD1:.+]] = tensor.dim %[[X]], %c1{{(_[0-9]+)?}} : tensor<?x?xf32>
// CHECK-NEXT: %[[OK1:.+]] = arith.cmpi eq, %[[XD1]], %[[N1]] : index
// CHECK-NEXT: cf.assert %[[OK1]], "kiln.add: operand 0 dim 1 does not match the result's size (dynamic sizes do not broadcast)"
// CHECK-NOT: linalg.generic
// CHECK: %[[YD0:.+]] = tensor.dim %[[Y]], %c0{{(_[0-9]+)?}} : tensor<?xf32>
// CHECK-NEXT: %[[OK2:.+]] = arith.cmpi eq, %[[YD0]], %[[N1]] : index
// CHECK-NEXT: cf.assert %[[OK2]], "kiln.add: operand 1 dim 0 does not match the result's size (dynamic sizes do not broadcast)"
// CHECK-NEXT: %[[EMPTY:.+]] = tensor.empty(%[[X0]], %[[N1]]) : tensor<?x?xf32>
// CHECK-NEXT: linalg.generic
// CHECK-SAME: ins(%[[X]], %[[Y]] : tensor<?x?xf32>, tensor<?xf32>) outs(%[[EMPTY]] : tensor<?x?xf32>)
func.func @check_broadcast(%x: tensor<?x?xf32>, %y: tensor<?xf32>) -> tensor<?x?xf32> {
  %z = kiln.add %x, %y : (tensor<?x?xf32>, tensor<?xf32>) -> tensor<?x?xf32>
  return %z : tensor<?x?xf32>
}

// -----

// Tests that a dynamic operand dim is checked against a static size of the
// other operand (it does not broadcast to it), and that static operand dims
// are not checked.

// CHECK-LABEL: func.func @check_broadcast_static
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<?x4xf32>, %[[Y:[a-zA-Z0-9_]+]]: tensor<3x4xf32>)
// CHECK-NOT: cf.assert
// CHECK: %[[XD0:.+]] = tensor.dim %[[X]], %c0_{{[0-9]+}} : tensor<?x4xf32>
// CHECK-NEXT: %[[C3:.+]] = arith.constant 3 : index
// CHECK-NEXT: %[[OK:.+]] = arith.cmpi eq, %[[XD0]], %[[C3]] : index
// CHECK-NEXT: cf.assert %[[OK]], "kiln.add: operand 0 dim 0 does not match the result's size (dynamic sizes do not broadcast)"
// CHECK-NOT: cf.assert
// CHECK: linalg.generic
// CHECK-NOT: cf.assert
func.func @check_broadcast_static(%x: tensor<?x4xf32>, %y: tensor<3x4xf32>) -> tensor<?x4xf32> {
  %z = kiln.add %x, %y : (tensor<?x4xf32>, tensor<3x4xf32>) -> tensor<?x4xf32>
  return %z : tensor<?x4xf32>
}

// -----

// Tests that static shapes need no checks at all.

// CHECK-LABEL: func.func @check_broadcast_all_static
// CHECK-NOT: cf.assert
// CHECK: linalg.generic
// CHECK-NOT: cf.assert
func.func @check_broadcast_all_static(%x: tensor<3x4xf32>, %y: tensor<4xf32>) -> tensor<3x4xf32> {
  %z = kiln.add %x, %y : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
  return %z : tensor<3x4xf32>
}

// -----

// Tests that an op with a NameLoc, as the importer makes for each ONNX node
// (the node name around the file location), is named "node 'NAME' (op)".

// CHECK-LABEL: func.func @check_named
// CHECK: cf.assert %{{.+}}, "node 'Add_7' (kiln.add): operand 0 dim 0 does not match the result's size (dynamic sizes do not broadcast)"
// CHECK: cf.assert %{{.+}}, "node 'Add_7' (kiln.add): operand 1 dim 0 does not match the result's size (dynamic sizes do not broadcast)"
// CHECK: linalg.generic
func.func @check_named(%x: tensor<?xf32>, %y: tensor<?xf32>) -> tensor<?xf32> {
  %z = kiln.add %x, %y : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32> loc("Add_7"("model.onnx":0:0))
  return %z : tensor<?xf32>
}

// -----

// Tests that expand's broadcasting copy checks the input's dynamic dim
// against the size it is read at (the requested size, or the input's own
// where the request is 1).

// CHECK-LABEL: func.func @check_expand
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<?x1xf32>, %[[S:[a-zA-Z0-9_]+]]: tensor<2xi64>)
// CHECK: %[[SIZE0:.+]] = arith.select %{{.+}}, %{{.+}}, %{{.+}} : index
// CHECK: %[[XD0:.+]] = tensor.dim %[[X]], %c0{{(_[0-9]+)?}} : tensor<?x1xf32>
// CHECK-NEXT: %[[OK:.+]] = arith.cmpi eq, %[[XD0]], %[[SIZE0]] : index
// CHECK-NEXT: cf.assert %[[OK]], "kiln.expand: operand 0 dim 0 does not match the result's size (dynamic sizes do not broadcast)"
// CHECK-NEXT: tensor.empty(%[[SIZE0]], %{{.+}}) : tensor<?x?xf32>
func.func @check_expand(%x: tensor<?x1xf32>, %s: tensor<2xi64>) -> tensor<?x?xf32> {
  %y = kiln.expand %x, %s : (tensor<?x1xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}

// -----

// Tests that matmul checks the right operand's K (its first dim) against the
// left operand's last dim before the product.

// CHECK-LABEL: func.func @check_matmul_contraction
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<?x?xf32>, %[[W:[a-zA-Z0-9_]+]]: tensor<?x8xf32>)
// CHECK: %[[K:.+]] = tensor.dim %[[X]], %c1{{(_[0-9]+)?}} : tensor<?x?xf32>
// CHECK: %[[WK:.+]] = tensor.dim %[[W]], %c0{{(_[0-9]+)?}} : tensor<?x8xf32>
// CHECK-NEXT: %[[OK:.+]] = arith.cmpi eq, %[[WK]], %[[K]] : index
// CHECK-NEXT: cf.assert %[[OK]], "kiln.matmul: the operands' contraction sizes differ"
// CHECK-NOT: cf.assert
// CHECK: linalg.matmul
func.func @check_matmul_contraction(%x: tensor<?x?xf32>, %w: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %y = kiln.matmul %x, %w : (tensor<?x?xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// -----

// Tests that with transpose_b the right operand's K is its last dim, here
// checked against the left operand's static 16; and that in the batched path
// the left operand's dynamic batch dim is checked against the broadcast
// batch size (the arith.maxui of both operands').

// CHECK-LABEL: func.func @check_matmul_transpose_b
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<?x?x16xf32>, %[[W:[a-zA-Z0-9_]+]]: tensor<?x?x?xf32>)
// CHECK: %[[X0:.+]] = tensor.dim %[[X]], %c0{{(_[0-9]+)?}} : tensor<?x?x16xf32>
// CHECK: %[[W0:.+]] = tensor.dim %[[W]], %c0{{(_[0-9]+)?}} : tensor<?x?x?xf32>
// CHECK: %[[WK:.+]] = tensor.dim %[[W]], %c2{{(_[0-9]+)?}} : tensor<?x?x?xf32>
// CHECK-NEXT: %[[C16:.+]] = arith.constant 16 : index
// CHECK-NEXT: %[[OK:.+]] = arith.cmpi eq, %[[WK]], %[[C16]] : index
// CHECK-NEXT: cf.assert %[[OK]], "kiln.matmul: the operands' contraction sizes differ"
// CHECK-NEXT: %[[B:.+]] = arith.maxui %[[X0]], %[[W0]] : index
// CHECK: %[[XB:.+]] = tensor.dim %[[X]], %c0{{(_[0-9]+)?}} : tensor<?x?x16xf32>
// CHECK-NEXT: %[[OKB:.+]] = arith.cmpi eq, %[[XB]], %[[B]] : index
// CHECK-NEXT: cf.assert %[[OKB]], "kiln.matmul: operand 0 dim 0 does not match the result's size (dynamic sizes do not broadcast)"
// CHECK: linalg.batch_matmul_transpose_b
func.func @check_matmul_transpose_b(%x: tensor<?x?x16xf32>, %w: tensor<?x?x?xf32>) -> tensor<?x?x?xf32> {
  %y = kiln.matmul %x, %w {transpose_b} : (tensor<?x?x16xf32>, tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
  return %y : tensor<?x?x?xf32>
}

// -----

// Tests that in the batched path each operand's dynamic batch dim is checked
// against the broadcast batch size, and that the right operand's check names
// operand 1 (not 0, the left operand's message).

// CHECK-LABEL: func.func @check_matmul_batch_rhs
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<?x2x4xf32>, %[[W:[a-zA-Z0-9_]+]]: tensor<?x4x3xf32>)
// CHECK: %[[X0:.+]] = tensor.dim %[[X]], %c0{{(_[0-9]+)?}} : tensor<?x2x4xf32>
// CHECK: %[[W0:.+]] = tensor.dim %[[W]], %c0{{(_[0-9]+)?}} : tensor<?x4x3xf32>
// CHECK-NEXT: %[[B:.+]] = arith.maxui %[[X0]], %[[W0]] : index
// CHECK: %[[XB:.+]] = tensor.dim %[[X]], %c0{{(_[0-9]+)?}} : tensor<?x2x4xf32>
// CHECK-NEXT: %[[OKX:.+]] = arith.cmpi eq, %[[XB]], %[[B]] : index
// CHECK-NEXT: cf.assert %[[OKX]], "kiln.matmul: operand 0 dim 0 does not match the result's size (dynamic sizes do not broadcast)"
// CHECK-NOT: cf.assert
// CHECK: %[[WB:.+]] = tensor.dim %[[W]], %c0{{(_[0-9]+)?}} : tensor<?x4x3xf32>
// CHECK-NEXT: %[[OKW:.+]] = arith.cmpi eq, %[[WB]], %[[B]] : index
// CHECK-NEXT: cf.assert %[[OKW]], "kiln.matmul: operand 1 dim 0 does not match the result's size (dynamic sizes do not broadcast)"
// CHECK-NOT: cf.assert
// CHECK: linalg.batch_matmul ins
func.func @check_matmul_batch_rhs(%x: tensor<?x2x4xf32>, %w: tensor<?x4x3xf32>) -> tensor<?x2x3xf32> {
  %y = kiln.matmul %x, %w : (tensor<?x2x4xf32>, tensor<?x4x3xf32>) -> tensor<?x2x3xf32>
  return %y : tensor<?x2x3xf32>
}

// -----

// Tests that equal static contraction sizes need no check.

// CHECK-LABEL: func.func @check_matmul_static
// CHECK-NOT: cf.assert
// CHECK: linalg.matmul
func.func @check_matmul_static(%x: tensor<?x64xf32>, %w: tensor<64x8xf32>) -> tensor<?x8xf32> {
  %y = kiln.matmul %x, %w : (tensor<?x64xf32>, tensor<64x8xf32>) -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// -----

// Tests that concat checks each later input's dynamic non-axis dims against
// input 0's before inserting it, and neither the static dim 1 nor the axis.

// CHECK-LABEL: func.func @check_concat
// CHECK-SAME: (%[[A:[a-zA-Z0-9_]+]]: tensor<?x4x?xf32>, %[[B:[a-zA-Z0-9_]+]]: tensor<?x4x?xf32>)
// CHECK: %[[A0:.+]] = tensor.dim %[[A]], %c0{{(_[0-9]+)?}} : tensor<?x4x?xf32>
// CHECK: %[[INS0:.+]] = tensor.insert_slice %[[A]]
// CHECK-NEXT: %[[C0:.+]] = arith.constant 0 : index
// CHECK-NEXT: %[[B0:.+]] = tensor.dim %[[B]], %[[C0]] : tensor<?x4x?xf32>
// CHECK: %[[OK:.+]] = arith.cmpi eq, %[[B0]], %[[A0]] : index
// CHECK-NEXT: cf.assert %[[OK]], "kiln.concat: input 1 dim 0 does not match input 0"
// CHECK-NEXT: tensor.insert_slice %[[B]] into %[[INS0]]
// CHECK-NOT: dim 1 does not match
// CHECK-NOT: dim 2 does not match
func.func @check_concat(%a: tensor<?x4x?xf32>, %b: tensor<?x4x?xf32>) -> tensor<?x4x?xf32> {
  %y = kiln.concat %a, %b {axis = 2 : i64} : (tensor<?x4x?xf32>, tensor<?x4x?xf32>) -> tensor<?x4x?xf32>
  return %y : tensor<?x4x?xf32>
}

// -----

// Tests that concat checks the sizes it computes against the static sizes of
// the declared result type (an ONNX graph may declare float[3, 8] for inputs
// float[N, 4]): input 0's dynamic dim 0 against 3, and the axis dim, the sum
// of the inputs' sizes along it, against 8 (here a sum of static sizes,
// which canonicalization folds away), before the static tensor.empty; and
// that input 0 is not checked against itself.

// CHECK-LABEL: func.func @check_concat_static_result
// CHECK-SAME: (%[[A:[a-zA-Z0-9_]+]]: tensor<?x4xf32>, %[[B:[a-zA-Z0-9_]+]]: tensor<?x4xf32>)
// CHECK: %[[A0:.+]] = tensor.dim %[[A]], %c0{{(_[0-9]+)?}} : tensor<?x4xf32>
// CHECK: %[[A1:.+]] = tensor.dim %[[A]], %c1{{(_[0-9]+)?}} : tensor<?x4xf32>
// CHECK-NEXT: %[[OFF1:.+]] = arith.addi %{{.+}}, %[[A1]] : index
// CHECK: %[[B1:.+]] = tensor.dim %[[B]], %c1{{(_[0-9]+)?}} : tensor<?x4xf32>
// CHECK-NEXT: %[[AXIS:.+]] = arith.addi %[[OFF1]], %[[B1]] : index
// CHECK-NEXT: %[[C3:.+]] = arith.constant 3 : index
// CHECK-NEXT: %[[OK0:.+]] = arith.cmpi eq, %[[A0]], %[[C3]] : index
// CHECK-NEXT: cf.assert %[[OK0]], "kiln.concat: the result dim 0 is not the declared 3"
// CHECK-NEXT: %[[C8:.+]] = arith.constant 8 : index
// CHECK-NEXT: %[[OK1:.+]] = arith.cmpi eq, %[[AXIS]], %[[C8]] : index
// CHECK-NEXT: cf.assert %[[OK1]], "kiln.concat: the result dim 1 is not the declared 8"
// CHECK-NEXT: %[[EMPTY:.+]] = tensor.empty() : tensor<3x8xf32>
// CHECK-NOT: cf.assert
// CHECK: %[[INS0:.+]] = tensor.insert_slice %[[A]] into %[[EMPTY]]
// CHECK: %[[B0:.+]] = tensor.dim %[[B]], %c0{{(_[0-9]+)?}} : tensor<?x4xf32>
// CHECK-NEXT: %[[OK:.+]] = arith.cmpi eq, %[[B0]], %[[A0]] : index
// CHECK-NEXT: cf.assert %[[OK]], "kiln.concat: input 1 dim 0 does not match input 0"
// CHECK-NEXT: %[[R:.+]] = tensor.insert_slice %[[B]] into %[[INS0]][0, %[[OFF1]]] [%[[B0]], 4] [1, 1] : tensor<?x4xf32> into tensor<3x8xf32>
// CHECK-NEXT: return %[[R]]
func.func @check_concat_static_result(%a: tensor<?x4xf32>, %b: tensor<?x4xf32>) -> tensor<3x8xf32> {
  %y = kiln.concat %a, %b {axis = 1 : i64} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<3x8xf32>
  return %y : tensor<3x8xf32>
}

// -----

// Tests that split checks a dynamic axis dim against the sum of the sizes.

// CHECK-LABEL: func.func @check_split
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<?x?xf32>)
// CHECK: %[[D1:.+]] = tensor.dim %[[X]], %c1{{(_[0-9]+)?}} : tensor<?x?xf32>
// CHECK-NEXT: %[[C6:.+]] = arith.constant 6 : index
// CHECK-NEXT: %[[OK:.+]] = arith.cmpi eq, %[[D1]], %[[C6]] : index
// CHECK-NEXT: cf.assert %[[OK]], "kiln.split: the split sizes do not add up to dim 1"
// CHECK-NEXT: tensor.extract_slice %[[X]][0, 0]
func.func @check_split(%x: tensor<?x?xf32>) -> (tensor<?x2xf32>, tensor<?x4xf32>) {
  %a, %b = kiln.split %x {axis = 1 : i64, sizes = array<i64: 2, 4>} : (tensor<?x?xf32>) -> (tensor<?x2xf32>, tensor<?x4xf32>)
  return %a, %b : tensor<?x2xf32>, tensor<?x4xf32>
}

// -----

// Tests that split checks each result's computed sizes against the static
// sizes of its declared type: result 0, declared 4 x 2 where the input is
// N x 6, checks N against 4 before its slice (N rows, cast to 4 x 2);
// result 1, dynamic in dim 0, and the static axis sizes need no check.

// CHECK-LABEL: func.func @check_split_static_result
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<?x6xf32>)
// CHECK: %[[D0:.+]] = tensor.dim %[[X]], %c0{{(_[0-9]+)?}} : tensor<?x6xf32>
// CHECK-NEXT: %[[C4:.+]] = arith.constant 4 : index
// CHECK-NEXT: %[[OK:.+]] = arith.cmpi eq, %[[D0]], %[[C4]] : index
// CHECK-NEXT: cf.assert %[[OK]], "kiln.split: result 0 dim 0 is not the declared 4"
// CHECK-NEXT: %[[A:.+]] = tensor.extract_slice %[[X]][0, 0] [%[[D0]], 2] [1, 1] : tensor<?x6xf32> to tensor<?x2xf32>
// CHECK-NEXT: %[[A_CAST:.+]] = tensor.cast %[[A]] : tensor<?x2xf32> to tensor<4x2xf32>
// CHECK-NEXT: %[[B:.+]] = tensor.extract_slice %[[X]][0, 2] [%[[D0]], 4] [1, 1] : tensor<?x6xf32> to tensor<?x4xf32>
// CHECK-NEXT: return %[[A_CAST]], %[[B]] : tensor<4x2xf32>, tensor<?x4xf32>
func.func @check_split_static_result(%x: tensor<?x6xf32>) -> (tensor<4x2xf32>, tensor<?x4xf32>) {
  %a, %b = kiln.split %x {axis = 1 : i64, sizes = array<i64: 2, 4>} : (tensor<?x6xf32>) -> (tensor<4x2xf32>, tensor<?x4xf32>)
  return %a, %b : tensor<4x2xf32>, tensor<?x4xf32>
}

// -----

// Tests that squeeze checks that a dynamic squeezed dim is 1, and not the
// dims it keeps.

// CHECK-LABEL: func.func @check_squeeze
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<?x?x64xf32>)
// CHECK: %[[D1:.+]] = tensor.dim %[[X]], %c1{{(_[0-9]+)?}} : tensor<?x?x64xf32>
// CHECK-NEXT: %[[ONE:.+]] = arith.constant 1 : index
// CHECK-NEXT: %[[OK:.+]] = arith.cmpi eq, %[[D1]], %[[ONE]] : index
// CHECK-NEXT: cf.assert %[[OK]], "kiln.squeeze: squeezed dim 1 is not 1"
// CHECK-NOT: cf.assert
// CHECK: tensor.reshape %[[X]]
func.func @check_squeeze(%x: tensor<?x?x64xf32>) -> tensor<?x64xf32> {
  %y = kiln.squeeze %x {axes = array<i64: 1>} : (tensor<?x?x64xf32>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// Tests that a reshape between static shapes (same element count, as the
// verifier ensures) needs no check.

// CHECK-LABEL: func.func @check_reshape_static
// CHECK-NOT: cf.assert
// CHECK: tensor.reshape
func.func @check_reshape_static(%x: tensor<2x3x4xf32>, %s: tensor<2xi64>) -> tensor<6x4xf32> {
  %y = kiln.reshape %x, %s : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<6x4xf32>
  return %y : tensor<6x4xf32>
}

// -----

// Tests that a reshape checks, after the element count, that each requested
// dynamic size is at least -1 (-2 < size), naming the size: other
// negative sizes are refused even when their product is the element count.

// CHECK-LABEL: func.func @check_reshape_negative
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<?xf32>, %[[S:[a-zA-Z0-9_]+]]: tensor<2xi64>)
// CHECK: %[[E0:.+]] = tensor.extract %[[S]][%{{.+}}] : tensor<2xi64>
// CHECK-NEXT: %[[R0:.+]] = arith.index_cast %[[E0]] : i64 to index
// CHECK: %[[E1:.+]] = tensor.extract %[[S]][%{{.+}}] : tensor<2xi64>
// CHECK-NEXT: %[[R1:.+]] = arith.index_cast %[[E1]] : i64 to index
// CHECK: cf.assert %{{.+}}, "kiln.reshape: the requested shape does not hold the input's element count"
// CHECK-NEXT: %[[M2:.+]] = arith.constant -2 : index
// CHECK-NEXT: %[[OK0:.+]] = arith.cmpi slt, %[[M2]], %[[R0]] : index
// CHECK-NEXT: cf.assert %[[OK0]], "kiln.reshape: requested size 0 is negative (only -1 may be)"
// CHECK-NEXT: %[[M2_1:.+]] = arith.constant -2 : index
// CHECK-NEXT: %[[OK1:.+]] = arith.cmpi slt, %[[M2_1]], %[[R1]] : index
// CHECK-NEXT: cf.assert %[[OK1]], "kiln.reshape: requested size 1 is negative (only -1 may be)"
// CHECK-NOT: cf.assert
// CHECK: tensor.reshape %[[X]]
func.func @check_reshape_negative(%x: tensor<?xf32>, %s: tensor<2xi64>) -> tensor<?x?xf32> {
  %y = kiln.reshape %x, %s : (tensor<?xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}

// -----

// Tests that attention becomes a call of the runtime's attention microkernel
// on one parameter struct (kiln_attention_params_t: 65 i64 slots on the
// stack, in declaration order) that points at the operands' buffers: dynamic
// head counts are checked against each other (the query heads a multiple of
// the key/value heads), the result is a fresh buffer, absent masks (and the
// absent past and presents) are null pointers with zero strides (slots 33,
// 38 and 44: position bias, keep and bias), the scale is a double's bits
// (slot 49), and the microkernel is declared once in the module.

// CHECK-LABEL: func.func @attention_gqa
// CHECK-SAME: (%[[Q:[a-zA-Z0-9_]+]]: tensor<2x?x8x16xf32>, %[[K:[a-zA-Z0-9_]+]]: tensor<2x?x8x16xf32>, %[[V:[a-zA-Z0-9_]+]]: tensor<2x?x8x32xf32>)
// CHECK: cf.assert %{{.+}}, "kiln.attention: the value's head count does not match the key's"
// CHECK: %[[REM:.+]] = arith.remui
// CHECK: cf.assert %{{.+}}, "kiln.attention: the query heads are not a multiple of the key/value heads"
// CHECK: %[[OUT:.+]] = memref.alloc(%{{.+}}) : memref<2x?x8x32xf32>
// CHECK: bufferization.to_memref %[[Q]] read_only {kiln.read_by = {{.*}}} : memref<2x?x8x16xf32, strided<[?, ?, ?, ?], offset: ?>>
// CHECK: bufferization.to_memref %[[K]] read_only
// CHECK: bufferization.to_memref %[[V]] read_only
// CHECK: %[[NOPASTKEY:.+]] = llvm.mlir.zero : !llvm.ptr
// CHECK: %[[NOPASTVALUE:.+]] = llvm.mlir.zero : !llvm.ptr
// CHECK: %[[NOPOSITION:.+]] = llvm.mlir.zero : !llvm.ptr
// CHECK: %[[NOKEEP:.+]] = llvm.mlir.zero : !llvm.ptr
// CHECK: %[[NOBIAS:.+]] = llvm.mlir.zero : !llvm.ptr
// CHECK: %[[SCALE:.+]] = arith.constant 2.500000e-01 : f64
// CHECK: %[[BITS:.+]] = arith.bitcast %[[SCALE]] : f64 to i64
// CHECK: %[[PARAMS:.+]] = memref.alloca() {kiln.ukernel_params} : memref<65xi64>
// CHECK: %[[P:.+]] = llvm.ptrtoint %[[NOPOSITION]] : !llvm.ptr to i64
// CHECK-NEXT: %{{.+}} = arith.constant 33 : index
// CHECK-NEXT: memref.store %[[P]], %[[PARAMS]]
// CHECK: %[[KP:.+]] = llvm.ptrtoint %[[NOKEEP]] : !llvm.ptr to i64
// CHECK-NEXT: %{{.+}} = arith.constant 38 : index
// CHECK-NEXT: memref.store %[[KP]], %[[PARAMS]]
// CHECK: %[[BP:.+]] = llvm.ptrtoint %[[NOBIAS]] : !llvm.ptr to i64
// CHECK-NEXT: %{{.+}} = arith.constant 44 : index
// CHECK-NEXT: memref.store %[[BP]], %[[PARAMS]]
// CHECK: %{{.+}} = arith.constant 49 : index
// CHECK-NEXT: memref.store %[[BITS]], %[[PARAMS]]
// CHECK: call @kiln_ukernel_attention(%{{.+}}) : (!llvm.ptr) -> ()
// CHECK: %[[R:.+]] = bufferization.to_tensor %[[OUT]] restrict writable : memref<2x?x8x32xf32>
// CHECK: return %[[R]]
// CHECK: func.func private @kiln_ukernel_attention(!llvm.ptr)
func.func @attention_gqa(%q: tensor<2x?x8x16xf32>, %k: tensor<2x?x8x16xf32>, %v: tensor<2x?x8x32xf32>) -> tensor<2x?x8x32xf32> {
  %o = kiln.attention %q, %k, %v {scale = 0.25 : f32} : (tensor<2x?x8x16xf32>, tensor<2x?x8x16xf32>, tensor<2x?x8x32xf32>) -> tensor<2x?x8x32xf32>
  return %o : tensor<2x?x8x32xf32>
}

// -----

// Tests that a mask's broadcast dims (missing, or static 1) get stride 0 and
// its other dims their real strides, and that the mask's dynamic sizes are
// checked against the scores [B, H, Tq, Tk].

// CHECK-LABEL: func.func @attention_masks
// CHECK-SAME: %[[KEEP:[a-zA-Z0-9_]+]]: tensor<?x?xi1>, %[[MASK:[a-zA-Z0-9_]+]]: tensor<?x1x1x?xf32>
// CHECK: cf.assert %{{.+}}, "kiln.attention: operand 3 dim 0 does not match the result's size (dynamic sizes do not broadcast)"
// CHECK: cf.assert %{{.+}}, "kiln.attention: operand 3 dim 1 does not match the result's size (dynamic sizes do not broadcast)"
// CHECK: cf.assert %{{.+}}, "kiln.attention: operand 4 dim 0 does not match the result's size (dynamic sizes do not broadcast)"
// CHECK: cf.assert %{{.+}}, "kiln.attention: operand 4 dim 3 does not match the result's size (dynamic sizes do not broadcast)"
// CHECK: %[[KEEPBUF:.+]] = bufferization.to_memref %[[KEEP]] read_only {kiln.read_by = {{.*}}} : memref<?x?xi1, strided<[?, ?], offset: ?>>
// CHECK: %{{.+}}, %{{.+}}, %{{.+}}:2, %[[KS:.+]]:2 = memref.extract_strided_metadata %[[KEEPBUF]]
// CHECK: %[[KS0:.+]] = arith.index_cast %[[KS]]#0 : index to i64
// CHECK: %[[KS1:.+]] = arith.index_cast %[[KS]]#1 : index to i64
// CHECK: %[[FILL:.+]] = arith.constant -1.000000e+04 : f64
// CHECK: %[[FILLBITS:.+]] = arith.bitcast %[[FILL]] : f64 to i64
// CHECK: %[[MASKBUF:.+]] = bufferization.to_memref %[[MASK]] read_only
// CHECK: %{{.+}}, %{{.+}}, %{{.+}}:4, %[[MS:.+]]:4 = memref.extract_strided_metadata %[[MASKBUF]]
// CHECK: %[[MS0:.+]] = arith.index_cast %[[MS]]#0 : index to i64
// CHECK: %[[MS3:.+]] = arith.index_cast %[[MS]]#3 : index to i64
// CHECK: %{{.+}} = arith.constant 39 : index
// CHECK-NEXT: memref.store %{{c0_i64[_0-9]*}}, %[[PARAMS:.+]][
// CHECK-NEXT: %{{.+}} = arith.constant 40 : index
// CHECK-NEXT: memref.store %{{c0_i64[_0-9]*}}, %[[PARAMS]]
// CHECK-NEXT: %{{.+}} = arith.constant 41 : index
// CHECK-NEXT: memref.store %[[KS0]], %[[PARAMS]]
// CHECK-NEXT: %{{.+}} = arith.constant 42 : index
// CHECK-NEXT: memref.store %[[KS1]], %[[PARAMS]]
// CHECK-NEXT: %{{.+}} = arith.constant 43 : index
// CHECK-NEXT: memref.store %[[FILLBITS]], %[[PARAMS]]
// CHECK: %{{.+}} = arith.constant 45 : index
// CHECK-NEXT: memref.store %[[MS0]], %[[PARAMS]]
// CHECK-NEXT: %{{.+}} = arith.constant 46 : index
// CHECK-NEXT: memref.store %{{c0_i64[_0-9]*}}, %[[PARAMS]]
// CHECK-NEXT: %{{.+}} = arith.constant 47 : index
// CHECK-NEXT: memref.store %{{c0_i64[_0-9]*}}, %[[PARAMS]]
// CHECK-NEXT: %{{.+}} = arith.constant 48 : index
// CHECK-NEXT: memref.store %[[MS3]], %[[PARAMS]]
// CHECK: call @kiln_ukernel_attention(
func.func @attention_masks(%q: tensor<1x4x?x16xf32>, %k: tensor<1x4x?x16xf32>, %v: tensor<1x4x?x16xf32>,
                           %keep: tensor<?x?xi1>, %mask: tensor<?x1x1x?xf32>) -> tensor<1x4x?x16xf32> {
  %o = kiln.attention %q, %k, %v keep %keep bias %mask {scale = 0.25 : f32, masked_value = -1.0e4 : f32}
      : (tensor<1x4x?x16xf32>, tensor<1x4x?x16xf32>, tensor<1x4x?x16xf32>, tensor<?x?xi1>, tensor<?x1x1x?xf32>) -> tensor<1x4x?x16xf32>
  return %o : tensor<1x4x?x16xf32>
}

// -----

// Tests that a position bias (ALiBi's [B, H, 1, Tk]) is checked against the
// scores as operand 3 and fills slots 33 to 37: its pointer, then its
// strides with 0 for its static size-1 query dim.

// CHECK-LABEL: func.func @attention_position_bias
// CHECK-SAME: %[[ALIBI:[a-zA-Z0-9_]+]]: tensor<?x4x1x?xf32>
// CHECK: cf.assert %{{.+}}, "kiln.attention: operand 3 dim 0 does not match the result's size (dynamic sizes do not broadcast)"
// CHECK: cf.assert %{{.+}}, "kiln.attention: operand 3 dim 3 does not match the result's size (dynamic sizes do not broadcast)"
// CHECK: %[[BUF:.+]] = bufferization.to_memref %[[ALIBI]] read_only
// CHECK: %{{.+}}, %{{.+}}, %{{.+}}:4, %[[S:.+]]:4 = memref.extract_strided_metadata %[[BUF]]
// CHECK: %[[S0:.+]] = arith.index_cast %[[S]]#0 : index to i64
// CHECK: %[[S1:.+]] = arith.index_cast %[[S]]#1 : index to i64
// CHECK: %[[S3:.+]] = arith.index_cast %[[S]]#3 : index to i64
// CHECK: %{{.+}} = arith.constant 34 : index
// CHECK-NEXT: memref.store %[[S0]], %[[PARAMS:.+]][
// CHECK-NEXT: %{{.+}} = arith.constant 35 : index
// CHECK-NEXT: memref.store %[[S1]], %[[PARAMS]]
// CHECK-NEXT: %{{.+}} = arith.constant 36 : index
// CHECK-NEXT: memref.store %{{c0_i64[_0-9]*}}, %[[PARAMS]]
// CHECK-NEXT: %{{.+}} = arith.constant 37 : index
// CHECK-NEXT: memref.store %[[S3]], %[[PARAMS]]
// CHECK: call @kiln_ukernel_attention(
func.func @attention_position_bias(%q: tensor<?x4x?x16xf32>, %k: tensor<?x4x?x16xf32>, %v: tensor<?x4x?x16xf32>,
                                   %alibi: tensor<?x4x1x?xf32>) -> tensor<?x4x?x16xf32> {
  %o = kiln.attention %q, %k, %v position_bias %alibi {scale = 0.25 : f32}
      : (tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x1x?xf32>) -> tensor<?x4x?x16xf32>
  return %o : tensor<?x4x?x16xf32>
}

// -----

// Tests that attention with a past attends to the past's rows then the new
// ones: the past is checked against the new rows, the masks against
// P + T keys, and the presents get fresh buffers of P + T rows that the
// microkernel writes and the function returns.

// CHECK-LABEL: func.func @attention_past
// CHECK-SAME: (%[[Q:[a-zA-Z0-9_]+]]: tensor<1x4x1x16xf32>, %[[K:[a-zA-Z0-9_]+]]: tensor<1x4x1x16xf32>, %[[V:[a-zA-Z0-9_]+]]: tensor<1x4x1x8xf32>, %[[PK:[a-zA-Z0-9_]+]]: tensor<1x4x?x16xf32>, %[[PV:[a-zA-Z0-9_]+]]: tensor<1x4x?x8xf32>, %[[MASK:[a-zA-Z0-9_]+]]: tensor<1x1x1x?xf32>)
// CHECK: %[[PAST:.+]] = tensor.dim %[[PK]], %{{.+}} : tensor<1x4x?x16xf32>
// CHECK: cf.assert %{{.+}}, "kiln.attention: the past value's length does not match the past key's"
// CHECK: %[[TOTAL:.+]] = arith.addi %[[PAST]], %{{.+}} : index
// CHECK: cf.assert %{{.+}}, "kiln.attention: operand 5 dim 3 does not match the result's size (dynamic sizes do not broadcast)"
// CHECK: %[[OUT:.+]] = memref.alloc() : memref<1x4x1x8xf32>
// CHECK: %[[PRESENTK:.+]] = memref.alloc(%[[TOTAL]]) : memref<1x4x?x16xf32>
// CHECK: %[[PRESENTV:.+]] = memref.alloc(%[[TOTAL]]) : memref<1x4x?x8xf32>
// CHECK: bufferization.to_memref %[[PK]] read_only
// CHECK: bufferization.to_memref %[[PV]] read_only
// CHECK: call @kiln_ukernel_attention(
// CHECK-DAG: %[[R:.+]] = bufferization.to_tensor %[[OUT]] restrict writable
// CHECK-DAG: %[[RK:.+]] = bufferization.to_tensor %[[PRESENTK]] restrict writable
// CHECK-DAG: %[[RV:.+]] = bufferization.to_tensor %[[PRESENTV]] restrict writable
// CHECK: return %[[R]], %[[RK]], %[[RV]]
func.func @attention_past(%q: tensor<1x4x1x16xf32>, %k: tensor<1x4x1x16xf32>, %v: tensor<1x4x1x8xf32>,
                          %pk: tensor<1x4x?x16xf32>, %pv: tensor<1x4x?x8xf32>, %mask: tensor<1x1x1x?xf32>)
    -> (tensor<1x4x1x8xf32>, tensor<1x4x?x16xf32>, tensor<1x4x?x8xf32>) {
  %o, %presents:2 = kiln.attention %q, %k, %v past %pk, %pv bias %mask {scale = 0.25 : f32}
      : (tensor<1x4x1x16xf32>, tensor<1x4x1x16xf32>, tensor<1x4x1x8xf32>, tensor<1x4x?x16xf32>, tensor<1x4x?x8xf32>, tensor<1x1x1x?xf32>)
      -> (tensor<1x4x1x8xf32>, tensor<1x4x?x16xf32>, tensor<1x4x?x8xf32>)
  return %o, %presents#0, %presents#1 : tensor<1x4x1x8xf32>, tensor<1x4x?x16xf32>, tensor<1x4x?x8xf32>
}

// -----

// Tests that a present that nothing reads gets no buffer: the microkernel is
// given a null pointer and skips it.

// CHECK-LABEL: func.func @attention_unread_present
// CHECK: %[[OUT:.+]] = memref.alloc() : memref<1x4x1x16xf32>
// CHECK: %[[PRESENTV:.+]] = memref.alloc() : memref<1x4x9x16xf32>
// CHECK-NOT: memref.alloc
// CHECK: %[[SCALE:.+]] = arith.constant 2.500000e-01 : f64
// CHECK-NEXT: arith.bitcast %[[SCALE]]
// CHECK-NEXT: %[[NULL:.+]] = llvm.mlir.zero : !llvm.ptr
// CHECK: %[[NULLBITS:.+]] = llvm.ptrtoint %[[NULL]] : !llvm.ptr to i64
// CHECK-NEXT: %{{.+}} = arith.constant 55 : index
// CHECK-NEXT: memref.store %[[NULLBITS]]
// CHECK: call @kiln_ukernel_attention(
// CHECK: %[[RV:.+]] = bufferization.to_tensor %[[PRESENTV]] restrict writable
// CHECK: return %{{.+}}, %[[RV]]
func.func @attention_unread_present(%q: tensor<1x4x1x16xf32>, %k: tensor<1x4x1x16xf32>, %pk: tensor<1x4x8x16xf32>)
    -> (tensor<1x4x1x16xf32>, tensor<1x4x9x16xf32>) {
  %o, %presents:2 = kiln.attention %q, %k, %k past %pk, %pk {scale = 0.25 : f32}
      : (tensor<1x4x1x16xf32>, tensor<1x4x1x16xf32>, tensor<1x4x1x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>)
      -> (tensor<1x4x1x16xf32>, tensor<1x4x9x16xf32>, tensor<1x4x9x16xf32>)
  return %o, %presents#1 : tensor<1x4x1x16xf32>, tensor<1x4x9x16xf32>
}

// -----

// Tests that linear becomes a call of the runtime's GEMM-with-epilogue on
// [rows, K] · [K, N]: the input's, gate's and residual's leading dims are
// flattened, every operand is read with a contiguous last dim
// (bufferization copies one that is not), the gate's and residual's dims are
// checked against the result's at run time, the parameter struct
// (kiln_linear_params_t, 23 slots on the stack) holds the layout (0, [K, N]),
// the weight's dtype (1, KILN_DTYPE_F32) and the activation as its enum
// value (gelu_tanh = 3) in slots 7, 8 and 16, and the fresh [rows, N] result
// is reshaped back.

// CHECK-LABEL: func.func @linear_epilogue
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<?x?x64xf32>, %[[W:[a-zA-Z0-9_]+]]: tensor<64x256xf32>, %[[B:[a-zA-Z0-9_]+]]: tensor<256xf32>, %[[G:[a-zA-Z0-9_]+]]: tensor<?x?x256xf32>, %[[R:[a-zA-Z0-9_]+]]: tensor<?x?x256xf32>)
// CHECK: %[[ROWS:.+]] = arith.muli
// CHECK: %[[FLATX:.+]] = tensor.reshape %[[X]]
// CHECK: bufferization.to_memref %[[FLATX]] read_only {kiln.read_by = {{.*}}} : memref<?x64xf32, strided<[?, 1], offset: ?>>
// CHECK: bufferization.to_memref %[[W]] read_only {kiln.read_by = {{.*}}} : memref<64x256xf32, strided<[?, 1], offset: ?>>
// CHECK: bufferization.to_memref %[[B]] read_only {kiln.read_by = {{.*}}} : memref<256xf32, strided<[1], offset: ?>>
// CHECK: cf.assert %{{.+}}, "kiln.linear: the gate's dim 0 differs from the result's"
// CHECK: cf.assert %{{.+}}, "kiln.linear: the gate's dim 1 differs from the result's"
// CHECK: %[[FLATG:.+]] = tensor.reshape %[[G]]
// CHECK: bufferization.to_memref %[[FLATG]] read_only {kiln.read_by = {{.*}}} : memref<?x256xf32, strided<[?, 1], offset: ?>>
// CHECK: cf.assert %{{.+}}, "kiln.linear: the residual's dim 0 differs from the result's"
// CHECK: cf.assert %{{.+}}, "kiln.linear: the residual's dim 1 differs from the result's"
// CHECK: %[[FLATR:.+]] = tensor.reshape %[[R]]
// CHECK: bufferization.to_memref %[[FLATR]] read_only {kiln.read_by = {{.*}}} : memref<?x256xf32, strided<[?, 1], offset: ?>>
// CHECK: %[[OUT:.+]] = memref.alloc(%[[ROWS]]) : memref<?x256xf32>
// CHECK: %[[NOTRANSPOSE:.+]] = arith.constant 0 : i64
// CHECK: %[[F32:.+]] = arith.constant 1 : i64
// CHECK: %[[GELUTANH:.+]] = arith.constant 3 : i64
// CHECK: %[[PARAMS:.+]] = memref.alloca() {kiln.ukernel_params} : memref<25xi64>
// CHECK: memref.store %[[NOTRANSPOSE]], %[[PARAMS]][%c7{{(_[0-9]+)?}}]
// CHECK: memref.store %[[F32]], %[[PARAMS]][%c8{{(_[0-9]+)?}}]
// CHECK: memref.store %[[GELUTANH]], %[[PARAMS]][%c18{{(_[0-9]+)?}}]
// CHECK: call @kiln_ukernel_linear(%{{.+}}) : (!llvm.ptr) -> ()
// CHECK: %[[P:.+]] = bufferization.to_tensor %[[OUT]] restrict writable : memref<?x256xf32>
// CHECK: %[[Y:.+]] = tensor.reshape %[[P]]
// CHECK: return %[[Y]]
func.func @linear_epilogue(%x: tensor<?x?x64xf32>, %w: tensor<64x256xf32>, %b: tensor<256xf32>, %g: tensor<?x?x256xf32>, %r: tensor<?x?x256xf32>) -> tensor<?x?x256xf32> {
  %y = kiln.linear %x, %w bias %b activation gelu_tanh gate %g residual %r : (tensor<?x?x64xf32>, tensor<64x256xf32>, tensor<256xf32>, tensor<?x?x256xf32>, tensor<?x?x256xf32>) -> tensor<?x?x256xf32>
  return %y : tensor<?x?x256xf32>
}

// -----

// Tests that an absent bias, gate and residual are null pointers (the gate
// and residual with stride 0), that an f32 weight has no scales, zero
// points or column sums (null pointers, stride 0 and group size 0) and an
// f32 input (input quantization 0), and that a weight stored [N, K]
// passes layout 1.

// CHECK-LABEL: func.func @linear_bare
// CHECK: %[[NOSCALES:.+]] = llvm.mlir.zero : !llvm.ptr
// CHECK: %[[ZERO0:.+]] = arith.constant 0 : i64
// CHECK: %[[NOBIAS:.+]] = llvm.mlir.zero : !llvm.ptr
// CHECK: %[[NOGATE:.+]] = llvm.mlir.zero : !llvm.ptr
// CHECK: %[[ZERO:.+]] = arith.constant 0 : i64
// CHECK: %[[NORESIDUAL:.+]] = llvm.mlir.zero : !llvm.ptr
// CHECK: %[[ZERO2:.+]] = arith.constant 0 : i64
// CHECK: %[[OUT:.+]] = memref.alloc() : memref<8x32xf32>
// CHECK: %[[TRANSPOSE:.+]] = arith.constant 1 : i64
// CHECK: %[[F32:.+]] = arith.constant 1 : i64
// CHECK: %[[F32INPUT:.+]] = arith.constant 0 : i64
// CHECK: %[[RELU:.+]] = arith.constant 1 : i64
// CHECK: %[[PARAMS:.+]] = memref.alloca() {kiln.ukernel_params} : memref<25xi64>
// CHECK: memref.store %[[TRANSPOSE]], %[[PARAMS]][%c7{{(_[0-9]+)?}}]
// CHECK: memref.store %[[F32]], %[[PARAMS]][%c8{{(_[0-9]+)?}}]
// CHECK: %[[NOSCALESINT:.+]] = llvm.ptrtoint %[[NOSCALES]]
// CHECK: memref.store %[[NOSCALESINT]], %[[PARAMS]][%c9{{(_[0-9]+)?}}]
// CHECK: %[[NOZEROPOINTSINT:.+]] = llvm.ptrtoint %[[NOSCALES]]
// CHECK: memref.store %[[NOZEROPOINTSINT]], %[[PARAMS]][%c10{{(_[0-9]+)?}}]
// CHECK: %[[NOSUMSINT:.+]] = llvm.ptrtoint %[[NOSCALES]]
// CHECK: memref.store %[[NOSUMSINT]], %[[PARAMS]][%c11{{(_[0-9]+)?}}]
// CHECK: memref.store %[[ZERO0]], %[[PARAMS]][%c12{{(_[0-9]+)?}}]
// CHECK: memref.store %[[ZERO0]], %[[PARAMS]][%c13{{(_[0-9]+)?}}]
// CHECK: memref.store %[[F32INPUT]], %[[PARAMS]][%c14{{(_[0-9]+)?}}]
// CHECK: %[[NOBIASINT:.+]] = llvm.ptrtoint %[[NOBIAS]]
// CHECK: memref.store %[[NOBIASINT]], %[[PARAMS]][%c17{{(_[0-9]+)?}}]
// CHECK: memref.store %[[RELU]], %[[PARAMS]][%c18{{(_[0-9]+)?}}]
// CHECK: %[[NOGATEINT:.+]] = llvm.ptrtoint %[[NOGATE]]
// CHECK: memref.store %[[NOGATEINT]], %[[PARAMS]][%c19{{(_[0-9]+)?}}]
// CHECK: memref.store %[[ZERO]], %[[PARAMS]][%c20{{(_[0-9]+)?}}]
// CHECK: %[[NORESIDUALINT:.+]] = llvm.ptrtoint %[[NORESIDUAL]]
// CHECK: memref.store %[[NORESIDUALINT]], %[[PARAMS]][%c21{{(_[0-9]+)?}}]
// CHECK: memref.store %[[ZERO2]], %[[PARAMS]][%c22{{(_[0-9]+)?}}]
// CHECK: call @kiln_ukernel_linear(%{{.+}}) : (!llvm.ptr) -> ()
// CHECK-NOT: tensor.reshape
func.func @linear_bare(%x: tensor<8x64xf32>, %w: tensor<32x64xf32>) -> tensor<8x32xf32> {
  %y = kiln.linear %x, %w activation relu {transpose_b} : (tensor<8x64xf32>, tensor<32x64xf32>) -> tensor<8x32xf32>
  return %y : tensor<8x32xf32>
}

// -----

// Tests that a packed weight passes layout 2 and its panel stride (slots 7
// and 6), that N comes from the result's static last dim (the weight holds
// 2 panels of 64 for 100 columns; the output is [rows, 100]), and that its
// rows are checked to be 64 elements apart at run time.

// CHECK-LABEL: func.func @linear_packed
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<?x32xf32>, %[[W:[a-zA-Z0-9_]+]]: tensor<2x32x64xf32>)
// CHECK: %[[WBUF:.+]] = bufferization.to_memref %[[W]] read_only {kiln.read_by = {{.*}}} : memref<2x32x64xf32, strided<[?, ?, 1], offset: ?>>
// CHECK: %{{.+}}, %{{.+}}, %{{.+}}:3, %[[STRIDES:.+]]:3 = memref.extract_strided_metadata %[[WBUF]]
// CHECK: %[[PANEL:.+]] = arith.index_cast %[[STRIDES]]#0 : index to i64
// CHECK: %[[ROW:.+]] = arith.index_cast %[[STRIDES]]#1 : index to i64
// CHECK: %[[SIXTYFOUR:.+]] = arith.constant 64 : i64
// CHECK: %[[ROWSOK:.+]] = arith.cmpi eq, %[[ROW]], %[[SIXTYFOUR]] : i64
// CHECK: cf.assert %[[ROWSOK]], "kiln.linear: the packed weight's rows are not 64 elements apart"
// CHECK: %[[OUT:.+]] = memref.alloc(%{{.+}}) : memref<?x100xf32>
// CHECK: %[[PANELS:.+]] = arith.constant 2 : i64
// CHECK: %[[PARAMS:.+]] = memref.alloca() {kiln.ukernel_params} : memref<25xi64>
// CHECK: memref.store %[[PANEL]], %[[PARAMS]][%c6{{(_[0-9]+)?}}]
// CHECK: memref.store %[[PANELS]], %[[PARAMS]][%c7{{(_[0-9]+)?}}]
// CHECK: call @kiln_ukernel_linear
func.func @linear_packed(%x: tensor<?x32xf32>, %w: tensor<2x32x64xf32>) -> tensor<?x100xf32> {
  %y = kiln.linear %x, %w {packed} : (tensor<?x32xf32>, tensor<2x32x64xf32>) -> tensor<?x100xf32>
  return %y : tensor<?x100xf32>
}

// -----

// Tests that an int8 weight passes dtype 7 (KILN_WEIGHT_I8) in slot 8, and
// its scales' pointer in slot 9, their panel stride and group size in
// slots 12 and 13, the scales' rows checked to be 64 elements apart at run
// time as the weight's are.

// CHECK-LABEL: func.func @linear_int8
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<?x300xf32>, %[[W:[a-zA-Z0-9_]+]]: tensor<2x300x64xi8>, %[[S:[a-zA-Z0-9_]+]]: tensor<2x3x64xf32>)
// CHECK: bufferization.to_memref %[[W]] read_only {kiln.read_by = {{.*}}} : memref<2x300x64xi8, strided<[?, ?, 1], offset: ?>>
// CHECK: cf.assert %{{.+}}, "kiln.linear: the packed weight's rows are not 64 elements apart"
// CHECK: %[[SBUF:.+]] = bufferization.to_memref %[[S]] read_only {kiln.read_by = {{.*}}} : memref<2x3x64xf32, strided<[?, ?, 1], offset: ?>>
// CHECK: %{{.+}}, %{{.+}}, %{{.+}}:3, %[[SSTRIDES:.+]]:3 = memref.extract_strided_metadata %[[SBUF]]
// CHECK: %[[SPTR:.+]] = llvm.inttoptr
// CHECK: %[[SPANEL:.+]] = arith.index_cast %[[SSTRIDES]]#0 : index to i64
// CHECK: cf.assert %{{.+}}, "kiln.linear: the packed scales' rows are not 64 elements apart"
// CHECK: %[[GROUP:.+]] = arith.constant 128 : i64
// CHECK: %[[I8:.+]] = arith.constant 7 : i64
// CHECK: %[[PARAMS:.+]] = memref.alloca() {kiln.ukernel_params} : memref<25xi64>
// CHECK: memref.store %[[I8]], %[[PARAMS]][%c8{{(_[0-9]+)?}}]
// CHECK: %[[SINT:.+]] = llvm.ptrtoint %[[SPTR]]
// CHECK: memref.store %[[SINT]], %[[PARAMS]][%c9{{(_[0-9]+)?}}]
// CHECK: memref.store %[[SPANEL]], %[[PARAMS]][%c12{{(_[0-9]+)?}}]
// CHECK: memref.store %[[GROUP]], %[[PARAMS]][%c13{{(_[0-9]+)?}}]
// CHECK: call @kiln_ukernel_linear
func.func @linear_int8(%x: tensor<?x300xf32>, %w: tensor<2x300x64xi8>, %s: tensor<2x3x64xf32>) -> tensor<?x100xf32> {
  %y = kiln.linear %x, %w scales %s {packed, group_size = 128 : i64} : (tensor<?x300xf32>, tensor<2x300x64xi8>, tensor<2x3x64xf32>) -> tensor<?x100xf32>
  return %y : tensor<?x100xf32>
}

// -----

// Tests that a 4-bit weight passes dtype 64 (KILN_WEIGHT_U4) in slot 8 and
// its zero points' pointer in slot 10, its rows checked to be 32 bytes
// apart and the zero points' laid out as the scales' at run time. The
// `ui8` operands are `i8` once the pass is done (signless, as arith needs).

// CHECK-LABEL: func.func @linear_uint4
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<?x300xf32>, %[[W:[a-zA-Z0-9_]+]]: tensor<2x300x32xi8>, %[[S:[a-zA-Z0-9_]+]]: tensor<2x3x64xf32>, %[[Z:[a-zA-Z0-9_]+]]: tensor<2x3x64xi8>)
// CHECK: bufferization.to_memref %[[W]] read_only {kiln.read_by = {{.*}}} : memref<2x300x32xi8, strided<[?, ?, 1], offset: ?>>
// CHECK: cf.assert %{{.+}}, "kiln.linear: the packed weight's rows are not 32 elements apart"
// CHECK: cf.assert %{{.+}}, "kiln.linear: the packed scales' rows are not 64 elements apart"
// CHECK: %[[ZBUF:.+]] = bufferization.to_memref %[[Z]] read_only {kiln.read_by = {{.*}}} : memref<2x3x64xi8, strided<[?, ?, 1], offset: ?>>
// CHECK: %[[ZPTR:.+]] = llvm.inttoptr
// CHECK: cf.assert %{{.+}}, "kiln.linear: the zero points are not laid out as the scales are"
// CHECK: cf.assert %{{.+}}, "kiln.linear: the packed zero points' rows are not 64 elements apart"
// CHECK: %[[U4:.+]] = arith.constant 64 : i64
// CHECK: %[[PARAMS:.+]] = memref.alloca() {kiln.ukernel_params} : memref<25xi64>
// CHECK: memref.store %[[U4]], %[[PARAMS]][%c8{{(_[0-9]+)?}}]
// CHECK: %[[ZINT:.+]] = llvm.ptrtoint %[[ZPTR]]
// CHECK: memref.store %[[ZINT]], %[[PARAMS]][%c10{{(_[0-9]+)?}}]
// CHECK: call @kiln_ukernel_linear
func.func @linear_uint4(%x: tensor<?x300xf32>, %w: tensor<2x300x32xui8>, %s: tensor<2x3x64xf32>, %z: tensor<2x3x64xui8>) -> tensor<?x100xf32> {
  %y = kiln.linear %x, %w scales %s zero_points %z {packed, group_size = 128 : i64} : (tensor<?x300xf32>, tensor<2x300x32xui8>, tensor<2x3x64xf32>, tensor<2x3x64xui8>) -> tensor<?x100xf32>
  return %y : tensor<?x100xf32>
}

// -----

// Tests that a weight whose input is quantized passes dtype 65
// (KILN_WEIGHT_I8_ROW_QUADS) in slot 8, its column sums' pointer in slot
// 11 (checked to be 64 a panel, the panels side by side) and input
// quantization 1 (KILN_INPUT_U8_DYNAMIC_ROWS) in slot 14.

// CHECK-LABEL: func.func @linear_quantize_input
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<?x300xf32>, %[[W:[a-zA-Z0-9_]+]]: tensor<2x300x64xi8>, %[[S:[a-zA-Z0-9_]+]]: tensor<2x1x64xf32>, %[[C:[a-zA-Z0-9_]+]]: tensor<2x64xi32>)
// CHECK: cf.assert %{{.+}}, "kiln.linear: the packed weight's rows are not 64 elements apart"
// CHECK: cf.assert %{{.+}}, "kiln.linear: the packed scales' rows are not 64 elements apart"
// CHECK: %[[CBUF:.+]] = bufferization.to_memref %[[C]] read_only {kiln.read_by = {{.*}}} : memref<2x64xi32, strided<[?, 1], offset: ?>>
// CHECK: %[[CPTR:.+]] = llvm.inttoptr
// CHECK: cf.assert %{{.+}}, "kiln.linear: the column sums' panels are not side by side"
// CHECK: %[[QUADS:.+]] = arith.constant 65 : i64
// CHECK: %[[DYNAMIC:.+]] = arith.constant 1 : i64
// CHECK: %[[PARAMS:.+]] = memref.alloca() {kiln.ukernel_params} : memref<25xi64>
// CHECK: memref.store %[[QUADS]], %[[PARAMS]][%c8{{(_[0-9]+)?}}]
// CHECK: %[[CINT:.+]] = llvm.ptrtoint %[[CPTR]]
// CHECK: memref.store %[[CINT]], %[[PARAMS]][%c11{{(_[0-9]+)?}}]
// CHECK: memref.store %[[DYNAMIC]], %[[PARAMS]][%c14{{(_[0-9]+)?}}]
// CHECK: call @kiln_ukernel_linear
func.func @linear_quantize_input(%x: tensor<?x300xf32>, %w: tensor<2x300x64xi8>, %s: tensor<2x1x64xf32>, %c: tensor<2x64xi32>) -> tensor<?x100xf32> {
  %y = kiln.linear %x, %w scales %s column_sums %c {packed, group_size = 300 : i64, quantize_input} : (tensor<?x300xf32>, tensor<2x300x64xi8>, tensor<2x1x64xf32>, tensor<2x64xi32>) -> tensor<?x100xf32>
  return %y : tensor<?x100xf32>
}

// -----

// Tests that a static input quantization passes input quantization 2
// (KILN_INPUT_U8_STATIC) in slot 14, its scale's bits as a double in slot
// 15 (0.25 is 0x3FD0000000000000) and its zero point in slot 16.

// CHECK-LABEL: func.func @linear_static_input
// CHECK: arith.constant 65 : i64
// CHECK: %[[STATIC:.+]] = arith.constant 2 : i64
// CHECK: %[[SCALE:.+]] = arith.constant 4598175219545276416 : i64
// CHECK: %[[ZERO:.+]] = arith.constant 128 : i64
// CHECK: %[[PARAMS:.+]] = memref.alloca() {kiln.ukernel_params} : memref<25xi64>
// CHECK: memref.store %[[STATIC]], %[[PARAMS]][%c14{{(_[0-9]+)?}}]
// CHECK: memref.store %[[SCALE]], %[[PARAMS]][%c15{{(_[0-9]+)?}}]
// CHECK: memref.store %[[ZERO]], %[[PARAMS]][%c16{{(_[0-9]+)?}}]
// CHECK: call @kiln_ukernel_linear
func.func @linear_static_input(%x: tensor<?x300xf32>, %w: tensor<2x300x64xi8>, %s: tensor<2x1x64xf32>, %c: tensor<2x64xi32>) -> tensor<?x100xf32> {
  %y = kiln.linear %x, %w scales %s column_sums %c {packed, group_size = 300 : i64, quantize_input, input_scale = 0.25 : f32, input_zero_point = 128 : i64} : (tensor<?x300xf32>, tensor<2x300x64xi8>, tensor<2x1x64xf32>, tensor<2x64xi32>) -> tensor<?x100xf32>
  return %y : tensor<?x100xf32>
}

// -----

// Tests that rotary becomes one broadcasting linalg.generic that reads the
// input a second time at each element's partner in the other half of the
// last axis ((d3 + 8) mod 16), negated in the first half; the operands'
// dynamic sizes are checked against the result's as for any broadcast.

// CHECK-LABEL: func.func @rotary
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<?x4x?x16xf32>, %[[COS:[a-zA-Z0-9_]+]]: tensor<?x1x?x16xf32>, %[[SIN:[a-zA-Z0-9_]+]]: tensor<?x1x?x16xf32>)
// CHECK: cf.assert %{{.+}}, "kiln.rotary: operand 0 dim 0 does not match the result's size (dynamic sizes do not broadcast)"
// CHECK: cf.assert %{{.+}}, "kiln.rotary: operand 1 dim 2 does not match the result's size (dynamic sizes do not broadcast)"
// CHECK: cf.assert %{{.+}}, "kiln.rotary: operand 2 dim 2 does not match the result's size (dynamic sizes do not broadcast)"
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, 0, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, 0, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, (d3 + 8) mod 16)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>]
// CHECK-SAME: ins(%[[X]], %[[COS]], %[[SIN]], %[[X]] :
// CHECK-NEXT: ^bb0(%[[XV:.+]]: f32, %[[C:.+]]: f32, %[[S:.+]]: f32, %[[P:.+]]: f32, %{{.+}}: f32):
// CHECK-NEXT: %[[J:.+]] = linalg.index 3 : index
// CHECK-NEXT: %[[HALF:.+]] = arith.constant 8 : index
// CHECK-NEXT: %[[FIRST:.+]] = arith.cmpi ult, %[[J]], %[[HALF]] : index
// CHECK-NEXT: %[[NEG:.+]] = arith.negf %[[P]] : f32
// CHECK-NEXT: %[[ROT:.+]] = arith.select %[[FIRST]], %[[NEG]], %[[P]] : f32
// CHECK-NEXT: %[[RS:.+]] = arith.mulf %[[ROT]], %[[S]] : f32
// CHECK-NEXT: %[[XC:.+]] = arith.mulf %[[XV]], %[[C]] : f32
// CHECK-NEXT: %[[Y:.+]] = arith.addf %[[XC]], %[[RS]] : f32
// CHECK-NEXT: linalg.yield %[[Y]] : f32
func.func @rotary(%x: tensor<?x4x?x16xf32>, %cos: tensor<?x1x?x16xf32>, %sin: tensor<?x1x?x16xf32>) -> tensor<?x4x?x16xf32> {
  %y = kiln.rotary %x, %cos, %sin : (tensor<?x4x?x16xf32>, tensor<?x1x?x16xf32>, tensor<?x1x?x16xf32>) -> tensor<?x4x?x16xf32>
  return %y : tensor<?x4x?x16xf32>
}

// -----

// Tests that an interleaved partial rotary (GPT-J's) reads each element's
// neighbour in its pair (j xor 1, as d3 mod 8 - (d3 mod 2) * 2 + 1, in
// bounds past the rotated 8) and negates it at even j.

// CHECK-LABEL: func.func @rotary_interleaved_partial
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<?x?x4x16xf32>, %[[COS:[a-zA-Z0-9_]+]]: tensor<?x?x1x8xf32>, %[[SIN:[a-zA-Z0-9_]+]]: tensor<?x?x1x8xf32>)
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, 0, d3 mod 8)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, 0, d3 mod 8)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3 mod 8 - (d3 mod 2) * 2 + 1)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>]
// CHECK-SAME: ins(%[[X]], %[[COS]], %[[SIN]], %[[X]] :
// CHECK-NEXT: ^bb0(%[[XV:.+]]: f32, %[[C:.+]]: f32, %[[S:.+]]: f32, %[[P:.+]]: f32, %{{.+}}: f32):
// CHECK-NEXT: %[[J:.+]] = linalg.index 3 : index
// CHECK-NEXT: %[[ONE:.+]] = arith.constant 1 : index
// CHECK-NEXT: %[[ZERO:.+]] = arith.constant 0 : index
// CHECK-NEXT: %[[ODD:.+]] = arith.andi %[[J]], %[[ONE]] : index
// CHECK-NEXT: %[[EVEN:.+]] = arith.cmpi eq, %[[ODD]], %[[ZERO]] : index
// CHECK-NEXT: %[[NEG:.+]] = arith.negf %[[P]] : f32
// CHECK-NEXT: %[[ROT:.+]] = arith.select %[[EVEN]], %[[NEG]], %[[P]] : f32
// CHECK-NEXT: %[[RS:.+]] = arith.mulf %[[ROT]], %[[S]] : f32
// CHECK-NEXT: %[[XC:.+]] = arith.mulf %[[XV]], %[[C]] : f32
// CHECK-NEXT: %[[Y:.+]] = arith.addf %[[XC]], %[[RS]] : f32
// CHECK-NEXT: %[[R:.+]] = arith.constant 8 : index
// CHECK-NEXT: %[[ROTATED:.+]] = arith.cmpi ult, %[[J]], %[[R]] : index
// CHECK-NEXT: %[[OUT:.+]] = arith.select %[[ROTATED]], %[[Y]], %[[XV]] : f32
// CHECK-NEXT: linalg.yield %[[OUT]] : f32
func.func @rotary_interleaved_partial(%x: tensor<?x?x4x16xf32>, %cos: tensor<?x?x1x8xf32>, %sin: tensor<?x?x1x8xf32>) -> tensor<?x?x4x16xf32> {
  %y = kiln.rotary %x, %cos, %sin {interleaved} : (tensor<?x?x4x16xf32>, tensor<?x?x1x8xf32>, tensor<?x?x1x8xf32>) -> tensor<?x?x4x16xf32>
  return %y : tensor<?x?x4x16xf32>
}

// -----

// Tests that a partial rotary (8 of 16 rotated) reads cos, sin and the
// partner at the index wrapped into the rotated 8 (in bounds past them) and
// passes the elements from 8 on through; the narrower cos and sin are not
// checked against the result's last dim.

// CHECK-LABEL: func.func @rotary_partial
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<?x4x?x16xf32>, %[[COS:[a-zA-Z0-9_]+]]: tensor<?x1x?x8xf32>, %[[SIN:[a-zA-Z0-9_]+]]: tensor<?x1x?x8xf32>)
// CHECK-NOT: operand 1 dim 3
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, 0, d2, d3 mod 8)>, affine_map<(d0, d1, d2, d3) -> (d0, 0, d2, d3 mod 8)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, (d3 + 4) mod 8)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>]
// CHECK-SAME: ins(%[[X]], %[[COS]], %[[SIN]], %[[X]] :
// CHECK-NEXT: ^bb0(%[[XV:.+]]: f32, %[[C:.+]]: f32, %[[S:.+]]: f32, %[[P:.+]]: f32, %{{.+}}: f32):
// CHECK-NEXT: %[[J:.+]] = linalg.index 3 : index
// CHECK-NEXT: %[[HALF:.+]] = arith.constant 4 : index
// CHECK-NEXT: %[[FIRST:.+]] = arith.cmpi ult, %[[J]], %[[HALF]] : index
// CHECK-NEXT: %[[NEG:.+]] = arith.negf %[[P]] : f32
// CHECK-NEXT: %[[ROT:.+]] = arith.select %[[FIRST]], %[[NEG]], %[[P]] : f32
// CHECK-NEXT: %[[RS:.+]] = arith.mulf %[[ROT]], %[[S]] : f32
// CHECK-NEXT: %[[XC:.+]] = arith.mulf %[[XV]], %[[C]] : f32
// CHECK-NEXT: %[[Y:.+]] = arith.addf %[[XC]], %[[RS]] : f32
// CHECK-NEXT: %[[R:.+]] = arith.constant 8 : index
// CHECK-NEXT: %[[ROTATED:.+]] = arith.cmpi ult, %[[J]], %[[R]] : index
// CHECK-NEXT: %[[OUT:.+]] = arith.select %[[ROTATED]], %[[Y]], %[[XV]] : f32
// CHECK-NEXT: linalg.yield %[[OUT]] : f32
func.func @rotary_partial(%x: tensor<?x4x?x16xf32>, %cos: tensor<?x1x?x8xf32>, %sin: tensor<?x1x?x8xf32>) -> tensor<?x4x?x16xf32> {
  %y = kiln.rotary %x, %cos, %sin : (tensor<?x4x?x16xf32>, tensor<?x1x?x8xf32>, tensor<?x1x?x8xf32>) -> tensor<?x4x?x16xf32>
  return %y : tensor<?x4x?x16xf32>
}

// -----

// Tests that each activation reaches the kernel as its Activation value,
// which the runtime reads as its GemmActivation: relu 1, gelu 2,
// gelu_tanh 3, silu 4, in slot 18 (an arith.constant, which the printer
// names after its value).

// CHECK-LABEL: func.func @linear_activation_codes
// CHECK: memref.store %c1_i64{{(_[0-9]+)?}}, %{{.+}}[%c18{{(_[0-9]+)?}}]
// CHECK: call @kiln_ukernel_linear
// CHECK: memref.store %c2_i64{{(_[0-9]+)?}}, %{{.+}}[%c18{{(_[0-9]+)?}}]
// CHECK: call @kiln_ukernel_linear
// CHECK: memref.store %c3_i64{{(_[0-9]+)?}}, %{{.+}}[%c18{{(_[0-9]+)?}}]
// CHECK: call @kiln_ukernel_linear
// CHECK: memref.store %c4_i64{{(_[0-9]+)?}}, %{{.+}}[%c18{{(_[0-9]+)?}}]
// CHECK: call @kiln_ukernel_linear
func.func @linear_activation_codes(%x: tensor<8x64xf32>, %w: tensor<64x32xf32>)
    -> (tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>) {
  %a = kiln.linear %x, %w activation relu : (tensor<8x64xf32>, tensor<64x32xf32>) -> tensor<8x32xf32>
  %b = kiln.linear %x, %w activation gelu : (tensor<8x64xf32>, tensor<64x32xf32>) -> tensor<8x32xf32>
  %c = kiln.linear %x, %w activation gelu_tanh : (tensor<8x64xf32>, tensor<64x32xf32>) -> tensor<8x32xf32>
  %d = kiln.linear %x, %w activation silu : (tensor<8x64xf32>, tensor<64x32xf32>) -> tensor<8x32xf32>
  return %a, %b, %c, %d : tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>
}

// -----

// Tests that paged attention becomes a call of the runtime's paged attention
// microkernel on one parameter struct (kiln/abi/kernel_abi.h): 53 i64 slots on
// the stack, filled in declaration order (slot 22 the pool's dtype, 1 for
// f32; 24 to 26 the pool's layer count 2, the layer 1 and the block size
// 8; 47 the scale as a double's bits),
// after the padded past's width is checked and the masks are checked
// against it plus the new rows.

// CHECK-LABEL: func.func @paged_attention
// CHECK-SAME: (%[[Q:[a-zA-Z0-9_]+]]: tensor<?x4x?x16xf32>, %[[K:[a-zA-Z0-9_]+]]: tensor<?x2x?x16xf32>, %[[V:[a-zA-Z0-9_]+]]: tensor<?x2x?x16xf32>, %[[POOL:[a-zA-Z0-9_]+]]: tensor<?x2x2x2x8x16xf32>, %[[TABLES:[a-zA-Z0-9_]+]]: tensor<?x?xi64>, %[[LENGTHS:[a-zA-Z0-9_]+]]: tensor<?xi64>, %[[WIDTH:[a-zA-Z0-9_]+]]: tensor<i64>, %[[MASK:[a-zA-Z0-9_]+]]: tensor<?x1x?x?xf32>)
// CHECK: %[[W:.+]] = tensor.extract %[[WIDTH]][] : tensor<i64>
// CHECK: cf.assert %{{.+}}, "kiln.paged_attention: the padded past's width is negative"
// CHECK: %[[OUT:.+]] = memref.alloc(%{{.+}}) : memref<?x4x?x16xf32>
// CHECK: bufferization.to_memref %[[POOL]] read_only
// CHECK: bufferization.to_memref %[[TABLES]] read_only
// CHECK: bufferization.to_memref %[[LENGTHS]] read_only
// CHECK: %[[SCALE:.+]] = arith.constant 2.500000e-01 : f64
// CHECK: %[[BITS:.+]] = arith.bitcast %[[SCALE]] : f64 to i64
// CHECK: %[[PARAMS:.+]] = memref.alloca() {kiln.ukernel_params} : memref<53xi64>
// CHECK: memref.store %{{.+}}, %[[PARAMS]]
// CHECK: memref.store %[[W]], %[[PARAMS]]
// CHECK: %{{.+}} = arith.constant 22 : index
// CHECK-NEXT: memref.store %c1_i64{{(_[0-9]+)?}}, %[[PARAMS]]
// CHECK: %{{.+}} = arith.constant 24 : index
// CHECK-NEXT: memref.store %c2_i64{{(_[0-9]+)?}}, %[[PARAMS]]
// CHECK-NEXT: %{{.+}} = arith.constant 25 : index
// CHECK-NEXT: memref.store %c1_i64{{(_[0-9]+)?}}, %[[PARAMS]]
// CHECK-NEXT: %{{.+}} = arith.constant 26 : index
// CHECK-NEXT: memref.store %c8_i64{{(_[0-9]+)?}}, %[[PARAMS]]
// CHECK: %{{.+}} = arith.constant 47 : index
// CHECK-NEXT: memref.store %[[BITS]], %[[PARAMS]]
// CHECK: call @kiln_ukernel_paged_attention(%{{.+}}) : (!llvm.ptr) -> ()
// CHECK: %[[R:.+]] = bufferization.to_tensor %[[OUT]] restrict writable
// CHECK: return %[[R]]
func.func @paged_attention(%q: tensor<?x4x?x16xf32>, %k: tensor<?x2x?x16xf32>, %v: tensor<?x2x?x16xf32>,
                           %pool: tensor<?x2x2x2x8x16xf32>, %tables: tensor<?x?xi64>, %lengths: tensor<?xi64>,
                           %width: tensor<i64>, %mask: tensor<?x1x?x?xf32>) -> tensor<?x4x?x16xf32> {
  %o = kiln.paged_attention %q, %k, %v cache %pool tables %tables lengths %lengths width %width bias %mask {layer = 1 : i64, scale = 2.500000e-01 : f32}
      : (tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x2x2x8x16xf32>, tensor<?x?xi64>, tensor<?xi64>, tensor<i64>, tensor<?x1x?x?xf32>) -> tensor<?x4x?x16xf32>
  return %o : tensor<?x4x?x16xf32>
}

// -----

// Tests that a 16-bit pool passes its dtype in slot 22: 2 for f16
// (KILN_DTYPE_F16), 3 for bf16.

// CHECK-LABEL: func.func @paged_attention_f16_pool
// CHECK: bufferization.to_memref %{{.+}} read_only {{.*}} : memref<?x2x2x2x8x16xf16
// CHECK: %{{.+}} = arith.constant 22 : index
// CHECK-NEXT: memref.store %c2_i64{{(_[0-9]+)?}}, %{{.+}}
// CHECK: call @kiln_ukernel_paged_attention
// CHECK-LABEL: func.func @paged_attention_bf16_pool
// CHECK: %{{.+}} = arith.constant 22 : index
// CHECK-NEXT: memref.store %c3_i64{{(_[0-9]+)?}}, %{{.+}}
func.func @paged_attention_f16_pool(%q: tensor<?x4x?x16xf32>, %k: tensor<?x2x?x16xf32>, %v: tensor<?x2x?x16xf32>,
                                    %pool: tensor<?x2x2x2x8x16xf16>, %tables: tensor<?x?xi64>, %lengths: tensor<?xi64>,
                                    %width: tensor<i64>) -> tensor<?x4x?x16xf32> {
  %o = kiln.paged_attention %q, %k, %v cache %pool tables %tables lengths %lengths width %width {layer = 0 : i64, scale = 2.500000e-01 : f32}
      : (tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x2x2x8x16xf16>, tensor<?x?xi64>, tensor<?xi64>, tensor<i64>) -> tensor<?x4x?x16xf32>
  return %o : tensor<?x4x?x16xf32>
}
func.func @paged_attention_bf16_pool(%q: tensor<?x4x?x16xf32>, %k: tensor<?x2x?x16xf32>, %v: tensor<?x2x?x16xf32>,
                                     %pool: tensor<?x2x2x2x8x16xbf16>, %tables: tensor<?x?xi64>, %lengths: tensor<?xi64>,
                                     %width: tensor<i64>) -> tensor<?x4x?x16xf32> {
  %o = kiln.paged_attention %q, %k, %v cache %pool tables %tables lengths %lengths width %width {layer = 0 : i64, scale = 2.500000e-01 : f32}
      : (tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x2x2x8x16xbf16>, tensor<?x?xi64>, tensor<?xi64>, tensor<i64>) -> tensor<?x4x?x16xf32>
  return %o : tensor<?x4x?x16xf32>
}

// -----

// Tests that assert becomes a cf.assert of its condition's element, its
// message after the op's name.

// CHECK-LABEL: func.func @assert
// CHECK-SAME: (%[[OK:[a-zA-Z0-9_]+]]: tensor<i1>)
// CHECK: %[[HOLDS:.+]] = tensor.extract %[[OK]][] : tensor<i1>
// CHECK: cf.assert %[[HOLDS]], "kiln.assert: the axis is out of range"
func.func @assert(%ok: tensor<i1>) {
  kiln.assert %ok, "the axis is out of range" : tensor<i1>
  return
}

// -----

// Tests that matmul_integer lowers to one integer loop over [rows, N, K]:
// each operand's difference from its zero point (the rhs's one per
// column), widened to i32, multiplied and summed into zeros.

// CHECK-LABEL: func.func @matmul_integer
// CHECK: %[[ZERO:.+]] = linalg.fill ins(%c0_i32 : i32)
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> ()>, affine_map<(d0, d1, d2) -> (d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} {{.*}} outs(%[[ZERO]] : tensor<?x2xi32>)
// CHECK: ^bb0(%[[A:.+]]: i8, %[[B:.+]]: i8, %[[AZ:.+]]: i8, %[[BZ:.+]]: i8, %[[ACC:.+]]: i32):
// CHECK-DAG: %[[BZW:.+]] = arith.extsi %[[BZ]] : i8 to i32
// CHECK-DAG: %[[BW:.+]] = arith.extsi %[[B]] : i8 to i32
// CHECK-DAG: %[[BD:.+]] = arith.subi %[[BW]], %[[BZW]] : i32
// CHECK-DAG: %[[AZW:.+]] = arith.extsi %[[AZ]] : i8 to i32
// CHECK-DAG: %[[AW:.+]] = arith.extsi %[[A]] : i8 to i32
// CHECK-DAG: %[[AD:.+]] = arith.subi %[[AW]], %[[AZW]] : i32
// CHECK: %[[T:.+]] = arith.muli %[[AD]], %[[BD]] : i32
// CHECK: arith.addi %[[ACC]], %[[T]] : i32
func.func @matmul_integer(%q: tensor<?x4xi8>, %z: tensor<i8>, %wq: tensor<4x2xi8>, %wz: tensor<2xi8>) -> tensor<?x2xi32> {
  %p = kiln.matmul_integer %q, %wq, %z, %wz : (tensor<?x4xi8>, tensor<4x2xi8>, tensor<i8>, tensor<2xi8>) -> tensor<?x2xi32>
  return %p : tensor<?x2xi32>
}

// -----

// Tests that dynamic_quantize lowers to what computes it: the maximum of x
// and of -x (full reductions), the scale where the widened range is not
// empty (1 where it is), and a quantize of x by that scale and the
// rounded zero point, lowered by 128.

// CHECK-LABEL: func.func @dynamic_quantize
// CHECK: iterator_types = ["reduction", "reduction"]
// CHECK: arith.maximumf
// CHECK: arith.negf
// CHECK: iterator_types = ["reduction", "reduction"]
// CHECK: arith.maximumf
// CHECK: arith.cmpf ogt
// CHECK: arith.select
// CHECK: math.roundeven
// CHECK: arith.fptosi {{.*}} : f32 to i8
// CHECK: arith.divf
// CHECK: math.roundeven
// CHECK: arith.maxnumf
// CHECK: arith.minnumf
// CHECK: arith.fptosi {{.*}} : f32 to i8
func.func @dynamic_quantize(%x: tensor<?x4xf32>) -> (tensor<?x4xi8>, tensor<f32>, tensor<i8>) {
  %q, %s, %z = kiln.dynamic_quantize %x : tensor<?x4xf32> -> tensor<?x4xi8>, tensor<f32>, tensor<i8>
  return %q, %s, %z : tensor<?x4xi8>, tensor<f32>, tensor<i8>
}
