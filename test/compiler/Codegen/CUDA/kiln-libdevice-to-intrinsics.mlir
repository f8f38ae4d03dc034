// RUN: kiln-opt %s --pass-pipeline='builtin.module(gpu.module(kiln-libdevice-to-intrinsics))' | FileCheck %s

// The libdevice calls that PTX has an instruction for become LLVM
// intrinsics, and their declarations go; a transcendental one stays (for
// kiln-verify-device-code to report).

// CHECK-LABEL: gpu.module @kiln_kernels
// CHECK-NOT: llvm.func @__nv_sqrtf
// CHECK-NOT: llvm.func @__nv_floor
// CHECK-NOT: llvm.func @__nv_rsqrtf
// CHECK-NOT: llvm.func @__nv_fmodf
// CHECK: llvm.func @__nv_powf(f32, f32) -> f32
// CHECK: llvm.func @kernel(%[[X:.*]]: f32, %[[Y:.*]]: f64)
// CHECK:   %[[ROOT:.*]] = llvm.intr.sqrt(%[[X]]) : (f32) -> f32
// CHECK:   %[[FLOOR:.*]] = llvm.intr.floor(%[[Y]]) : (f64) -> f64
// CHECK:   %[[ONE:.*]] = llvm.mlir.constant(1.000000e+00 : f32) : f32
// CHECK:   %[[SQRT:.*]] = llvm.intr.sqrt(%[[X]]) : (f32) -> f32
// CHECK:   %[[RSQRT:.*]] = llvm.fdiv %[[ONE]], %[[SQRT]] : f32
// CHECK:   %[[REM:.*]] = llvm.frem %[[RSQRT]], %[[X]] : f32
// CHECK:   llvm.call @__nv_powf(%[[X]], %[[REM]])
gpu.module @kiln_kernels {
  llvm.func @__nv_sqrtf(f32) -> f32
  llvm.func @__nv_floor(f64) -> f64
  llvm.func @__nv_rsqrtf(f32) -> f32
  llvm.func @__nv_powf(f32, f32) -> f32
  llvm.func @__nv_fmodf(f32, f32) -> f32
  llvm.func @kernel(%x: f32, %y: f64) -> f32 {
    %root = llvm.call @__nv_sqrtf(%x) : (f32) -> f32
    %floor = llvm.call @__nv_floor(%y) : (f64) -> f64
    %rsqrt = llvm.call @__nv_rsqrtf(%x) : (f32) -> f32
    %rem = llvm.call @__nv_fmodf(%rsqrt, %x) : (f32, f32) -> f32
    %pow = llvm.call @__nv_powf(%x, %rem) : (f32, f32) -> f32
    llvm.return %pow : f32
  }
}
