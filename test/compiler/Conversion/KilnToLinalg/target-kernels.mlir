// RUN: kiln-opt %s --kiln-convert-to-linalg --verify-diagnostics
// RUN: kiln-opt %s --kiln-lower-to-cpu-kernels --kiln-convert-to-linalg | FileCheck %s

// Tests that the shared lowering leaves kiln.linear to the target: alone it
// refuses the op and names the pass that lowers it; after the CPU's
// kernel-call pass the op is a call of the runtime's kernel.

// CHECK-LABEL: func.func @linear
//       CHECK: call @kiln_ukernel_linear
//   CHECK-NOT: kiln.linear
func.func @linear(%x: tensor<8x64xf32>, %w: tensor<64x32xf32>) -> tensor<8x32xf32> {
  // expected-error @+1 {{'kiln.linear' op runs as a target's kernel: lower it with the target's kernel-call pass (kiln-lower-to-cpu-kernels) first}}
  %y = kiln.linear %x, %w : (tensor<8x64xf32>, tensor<64x32xf32>) -> tensor<8x32xf32>
  return %y : tensor<8x32xf32>
}
