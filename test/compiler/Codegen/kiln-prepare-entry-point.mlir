// RUN: kiln-opt %s --split-input-file --kiln-prepare-entry-point | FileCheck %s
// RUN: kiln-opt %s --split-input-file --kiln-prepare-entry-point=min-elements=3 | FileCheck %s --check-prefix=MIN3
// RUN: kiln-opt %s --split-input-file --kiln-prepare-entry-point=function=forward | FileCheck %s --check-prefix=FORWARD

// Tests that a non-splat constant with more than 16 elements becomes a
// trailing argument that the module's kiln.weights lists, that identical
// constants share one argument (the first's name), that dense_resource
// weights are outlined too, that kiln.weight_names names each weight
// after its location, and that splats and small constants stay in the body.

// CHECK-LABEL: module attributes
// CHECK-SAME: {kiln.weight_names = ["w1", "wte"], kiln.weights = [dense<{{\[}}[0.000000e+00, 1.000000e+00, 2.000000e+00, 3.000000e+00], [4.000000e+00, 5.000000e+00, 6.000000e+00, 7.000000e+00], [8.000000e+00, 9.000000e+00, 1.000000e+01, 1.100000e+01], [1.200000e+01, 1.300000e+01, 1.400000e+01, 1.500000e+01], [1.600000e+01, 1.700000e+01, 1.800000e+01, 1.900000e+01]]> : tensor<5x4xf32>, dense_resource<wte> : tensor<8x4xf32>]}
// CHECK: func.func @main(
// CHECK-SAME: %[[X:[a-zA-Z0-9_]+]]: tensor<?x4xf32> {bufferization.writable = false},
// CHECK-SAME: %[[W:[a-zA-Z0-9_]+]]: tensor<5x4xf32> {bufferization.writable = false},
// CHECK-SAME: %[[WTE:[a-zA-Z0-9_]+]]: tensor<8x4xf32> {bufferization.writable = false})
// CHECK-SAME: -> tensor<?x4xf32> attributes {llvm.emit_c_interface} {
// CHECK-DAG: %[[SPLAT:.+]] = kiln.constant dense<2.000000e+00> : tensor<64x4xf32>
// CHECK-DAG: %[[SMALL:.+]] = kiln.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf32>
// CHECK-NOT: kiln.constant
// CHECK: %[[A:.+]] = kiln.add %[[X]], %[[SMALL]]
// CHECK: %[[B:.+]] = kiln.add %[[W]], %[[W]]
// CHECK: %[[C:.+]] = kiln.matmul %[[A]], %[[WTE]] {transpose_b}
// CHECK: %[[D:.+]] = kiln.reduce_sum %[[SPLAT]]
// CHECK: return
// CHECK: func.func @forward(%{{.+}}: tensor<4xf32>) -> tensor<4xf32> {
// The signature: version 1, 1 input, 2 weights, 1 result, then per value
// its dtype (f32 = 1), rank and sizes (-1 for dynamic).
// CHECK: llvm.mlir.global external constant @kiln_signature(dense<[1, 1, 2, 1, 1, 2, -1, 4, 1, 2, 5, 4, 1, 2, 8, 4, 1, 2, -1, 4]> : tensor<20xi64>)
func.func @main(%x: tensor<?x4xf32> {kiln.dims = ["batch", ""], kiln.name = "x"})
    -> (tensor<?x4xf32> {kiln.dims = ["batch", ""], kiln.name = "y"}) {
  %w1 = kiln.constant dense<[[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0], [8.0, 9.0, 10.0, 11.0], [12.0, 13.0, 14.0, 15.0], [16.0, 17.0, 18.0, 19.0]]> : tensor<5x4xf32> loc("w1")
  %splat = kiln.constant dense<2.0> : tensor<64x4xf32>
  %small = kiln.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %w2 = kiln.constant dense<[[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0], [8.0, 9.0, 10.0, 11.0], [12.0, 13.0, 14.0, 15.0], [16.0, 17.0, 18.0, 19.0]]> : tensor<5x4xf32> loc("w2")
  %wte = kiln.constant dense_resource<wte> : tensor<8x4xf32> loc("wte")
  %a = kiln.add %x, %small : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  %b = kiln.add %w1, %w2 : (tensor<5x4xf32>, tensor<5x4xf32>) -> tensor<5x4xf32>
  %c = kiln.matmul %a, %wte {transpose_b} : (tensor<?x4xf32>, tensor<8x4xf32>) -> tensor<?x8xf32>
  %d = kiln.reduce_sum %splat {axes = array<i64: 0>} : (tensor<64x4xf32>) -> tensor<1x4xf32>
  return %a : tensor<?x4xf32>
}

func.func @forward(%h: tensor<4xf32>) -> tensor<4xf32> {
  return %h : tensor<4xf32>
}

{-#
  dialect_resources: {
    builtin: {
      wte: "0x040000000000803F000000400000404000008040000000000000803F000000400000404000008040000000000000803F000000400000404000008040000000000000803F000000400000404000008040000000000000803F000000400000404000008040000000000000803F000000400000404000008040000000000000803F000000400000404000008040000000000000803F000000400000404000008040"
    }
  }
#-}

// With min-elements=3 the 4-element constant is a weight too; weights keep
// the order in which the constants appear. Splats still stay.
// MIN3-LABEL: module attributes
// MIN3-SAME: {kiln.weight_names = ["w1", "{{.+}}", "wte"], kiln.weights = [dense<{{\[}}[0.000000e+00, {{.*}} : tensor<5x4xf32>, dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf32>, dense_resource<wte> : tensor<8x4xf32>]}
// MIN3: func.func @main(
// MIN3-SAME: %[[X:[a-zA-Z0-9_]+]]: tensor<?x4xf32> {bufferization.writable = false},
// MIN3-SAME: %{{.+}}: tensor<5x4xf32> {bufferization.writable = false},
// MIN3-SAME: %[[SMALL:[a-zA-Z0-9_]+]]: tensor<4xf32> {bufferization.writable = false},
// MIN3-SAME: %{{.+}}: tensor<8x4xf32> {bufferization.writable = false})
// MIN3: kiln.constant dense<2.000000e+00> : tensor<64x4xf32>
// MIN3-NOT: kiln.constant
// MIN3: kiln.add %[[X]], %[[SMALL]]

// With function=forward, main is not the entry: its constants stay and its
// attributes are kept.
// FORWARD-LABEL: module attributes {kiln.weight_names = [], kiln.weights = []}
// FORWARD: func.func @main(
// FORWARD-SAME: {kiln.dims = ["batch", ""], kiln.name = "x"}
// FORWARD-NOT: bufferization.writable
// FORWARD: kiln.constant dense<{{\[}}[0.000000e+00,
// FORWARD: kiln.constant dense_resource<wte>
// FORWARD: func.func @forward(
// FORWARD-SAME: tensor<4xf32> {bufferization.writable = false}) -> tensor<4xf32> attributes {llvm.emit_c_interface}

// -----

// Tests that every argument of the entry function is marked read-only
// (bufferization.writable = false) and gets no other attribute (llvm.noalias
// is left to kiln-emit-entry-point), that kiln.name and kiln.dims are dropped
// from arguments and results, that a module without large constants gets an empty kiln.weights
// list, that the signature encodes i64 (5) and bool (8), and that other
// functions are left alone, constants included.

// CHECK-LABEL: module attributes {kiln.weight_names = [], kiln.weights = []}
// CHECK: func.func @main(
// CHECK-SAME: %{{.+}}: tensor<?x?xi64> {bufferization.writable = false},
// CHECK-SAME: %{{.+}}: tensor<?x1x?xi1> {bufferization.writable = false})
// CHECK-SAME: -> (tensor<?x?xi64>, tensor<?x1x?xi1>)
// CHECK-SAME: attributes {llvm.emit_c_interface}
// CHECK-NOT: kiln.name
// CHECK-NOT: kiln.dims
// CHECK: func.func @forward(
// CHECK-SAME: %{{.+}}: tensor<4xf32> {kiln.name = "h"})
// CHECK-SAME: -> (tensor<4xf32> {kiln.name = "out"})
// CHECK-NOT: bufferization.writable
// CHECK-NOT: llvm.emit_c_interface
// CHECK: kiln.constant dense<{{\[}}0.000000e+00, 1.000000e+00,
// CHECK-SAME: tensor<20xf32>
// CHECK: llvm.mlir.global external constant @kiln_signature(dense<[1, 2, 0, 2, 5, 2, -1, -1, 8, 3, -1, 1, -1, 5, 2, -1, -1, 8, 3, -1, 1, -1]> : tensor<22xi64>)

// With function=forward, that function is the entry instead: its large
// constant becomes a weight, and main is left alone.
// FORWARD-LABEL: module attributes {kiln.weight_names = ["{{.+}}"], kiln.weights = [dense<{{\[}}0.000000e+00, {{.*}}> : tensor<20xf32>]}
// FORWARD: func.func @main(
// FORWARD-SAME: kiln.name = "input_ids"
// FORWARD-NOT: bufferization.writable
// FORWARD: func.func @forward(
// FORWARD-SAME: %[[H:[a-zA-Z0-9_]+]]: tensor<4xf32> {bufferization.writable = false},
// FORWARD-SAME: %[[W:[a-zA-Z0-9_]+]]: tensor<20xf32> {bufferization.writable = false})
// FORWARD-SAME: -> tensor<4xf32> attributes {llvm.emit_c_interface}
// FORWARD-NOT: tensor<20xf32>
// FORWARD: kiln.slice %[[W]]
func.func @main(%ids: tensor<?x?xi64> {kiln.dims = ["batch", "sequence"], kiln.name = "input_ids"},
                %mask: tensor<?x1x?xi1> {kiln.dims = ["batch", "", "sequence"]})
    -> (tensor<?x?xi64> {kiln.dims = ["batch", "sequence"], kiln.name = "ids"}, tensor<?x1x?xi1> {kiln.name = "mask"}) {
  return %ids, %mask : tensor<?x?xi64>, tensor<?x1x?xi1>
}

func.func @forward(%h: tensor<4xf32> {kiln.name = "h"}) -> (tensor<4xf32> {kiln.name = "out"}) {
  %w = kiln.constant dense<[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0]> : tensor<20xf32>
  %s = kiln.constant dense<0> : tensor<1xi64>
  %e = kiln.constant dense<4> : tensor<1xi64>
  %st = kiln.constant dense<1> : tensor<1xi64>
  %y = kiln.slice %w[%s : %e : %st] {axes = array<i64: 0>} : (tensor<20xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xf32>
  %z = kiln.add %h, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %z : tensor<4xf32>
}
