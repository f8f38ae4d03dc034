// RUN: kiln-opt %s --mlir-print-local-scope --kiln-lower-to-cpu-kernels --kiln-convert-to-linalg --cse | FileCheck %s

// Tests that each microkernel call keeps its own read of a tensor that
// several calls read (a norm's output read by the Q, K and V products):
// one-shot bufferization takes the to_memref as the read, so after CSE
// merged them into the first, the later calls would read a buffer that an
// op in between may already have overwritten in place.

// CHECK-LABEL: func.func @three_products_of_one_input
//  CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<8x64xf32>
//       CHECK: bufferization.to_memref %[[X]] read_only {kiln.read_by = loc("q")}
//       CHECK: call @kiln_ukernel_linear
//       CHECK: bufferization.to_memref %[[X]] read_only {kiln.read_by = loc("k")}
//       CHECK: call @kiln_ukernel_linear
//       CHECK: bufferization.to_memref %[[X]] read_only {kiln.read_by = loc("v")}
//       CHECK: call @kiln_ukernel_linear
func.func @three_products_of_one_input(%x: tensor<8x64xf32>, %wq: tensor<64x64xf32>,
                                       %wk: tensor<64x64xf32>, %wv: tensor<64x64xf32>)
    -> (tensor<8x64xf32>, tensor<8x64xf32>, tensor<8x64xf32>) {
  %q = kiln.linear %x, %wq : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32> loc("q")
  %k = kiln.linear %x, %wk : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32> loc("k")
  %v = kiln.linear %x, %wv : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32> loc("v")
  return %q, %k, %v : tensor<8x64xf32>, tensor<8x64xf32>, tensor<8x64xf32>
}
