// RUN: kiln-opt %s --split-input-file --kiln-merge-gpu-modules | FileCheck %s
// RUN: kiln-opt %s --split-input-file --kiln-merge-gpu-modules | FileCheck %s --check-prefix=EMPTY

// Two outlined kernels, each in its own module, end in one, kiln_kernels,
// and each launch names its kernel there.

// CHECK-LABEL: module attributes {gpu.container_module}
// CHECK: func.func @main
// CHECK: gpu.launch_func @kiln_kernels::@first
// CHECK: gpu.launch_func @kiln_kernels::@second
// CHECK: gpu.module @kiln_kernels {
// CHECK:   gpu.func @first
// CHECK:   gpu.func @second
// CHECK-NOT: gpu.module
// CHECK: {{^// -+$}}
module attributes {gpu.container_module} {
  func.func @main(%x: memref<4xf32>) {
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    gpu.launch_func @first::@first blocks in (%c1, %c1, %c1) threads in (%c4, %c1, %c1) args(%x : memref<4xf32>)
    gpu.launch_func @second::@second blocks in (%c1, %c1, %c1) threads in (%c4, %c1, %c1) args(%x : memref<4xf32>)
    return
  }
  gpu.module @first {
    gpu.func @first(%x: memref<4xf32>) kernel {
      gpu.return
    }
  }
  gpu.module @second {
    gpu.func @second(%x: memref<4xf32>) kernel {
      gpu.return
    }
  }
}

// -----

// No kernel at all: an empty kiln_kernels, so that the PTX is a module.

// EMPTY: {{^// -+$}}
// EMPTY-NEXT: module attributes {gpu.container_module} {
// EMPTY-NEXT: func.func @folded
// EMPTY: gpu.module @kiln_kernels {
// EMPTY-NEXT: }
module {
  func.func @folded() {
    return
  }
}
