// RUN: kiln-opt %s --kiln-kernel-checks-to-flag | FileCheck %s

// A failed check in a kernel stores its number in kiln_kernel_check and
// ends the thread; the same message keeps its number, and the module
// lists the messages.

// CHECK: module attributes {gpu.container_module, kiln.kernel_checks = ["index out of range", "negative size"]}
// CHECK: gpu.module @kiln_kernels {
// CHECK:   memref.global @kiln_kernel_check : memref<i32> = dense<0>
// CHECK:   gpu.func @gather(%[[OK:.*]]: i1, %[[POSITIVE:.*]]: i1) kernel {
// CHECK:     cf.cond_br %[[OK]], ^[[AFTER1:.*]], ^[[FAILED1:.*]]
// CHECK:   ^[[FAILED1]]:
// CHECK:     %[[ONE:.*]] = arith.constant 1 : i32
// CHECK:     %[[FLAG:.*]] = memref.get_global @kiln_kernel_check : memref<i32>
// CHECK:     memref.store %[[ONE]], %[[FLAG]][] : memref<i32>
// CHECK:     gpu.return
// CHECK:   ^[[AFTER1]]:
// CHECK:     cf.cond_br %[[POSITIVE]], ^[[AFTER2:.*]], ^[[FAILED2:.*]]
// CHECK:   ^[[FAILED2]]:
// CHECK:     arith.constant 2 : i32
// CHECK:   ^[[AFTER2]]:
// CHECK:     cf.cond_br %[[OK]], ^[[AFTER3:.*]], ^[[FAILED3:.*]]
// CHECK:   ^[[FAILED3]]:
// CHECK:     arith.constant 1 : i32
// CHECK-NOT: cf.assert
module attributes {gpu.container_module} {
  gpu.module @kiln_kernels {
    gpu.func @gather(%ok: i1, %positive: i1) kernel {
      cf.assert %ok, "index out of range"
      cf.assert %positive, "negative size"
      cf.assert %ok, "index out of range"
      gpu.return
    }
  }
}
