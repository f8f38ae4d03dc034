// RUN: kiln-opt %s --split-input-file --kiln-verify-device-code --verify-diagnostics

// The host reads a buffer that may be device memory.
func.func @host_reads_device(%x: memref<4xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{'memref.load' op touches device memory from the host}}
  %v = memref.load %x[%c0] : memref<4xf32>
  return %v : f32
}

// -----

// A reshape whose shape the host would read from device memory.
func.func @shape_on_device(%x: memref<?xf32>, %shape: memref<2xindex>) -> memref<?x?xf32> {
  // expected-error @+1 {{'memref.reshape' op touches device memory from the host}}
  %r = memref.reshape %x(%shape) : (memref<?xf32>, memref<2xindex>) -> memref<?x?xf32>
  return %r : memref<?x?xf32>
}

// -----

// A copy that no kernel runs.
func.func @copy_on_host(%x: memref<4xf32>, %y: memref<4xf32>) {
  // expected-error @+1 {{'memref.copy' op was left on the host}}
  memref.copy %x, %y : memref<4xf32> to memref<4xf32>
  return
}

// -----

// A kernel given the host's constant.
module attributes {gpu.container_module} {
  memref.global "private" constant @table : memref<4xf32> = dense<1.0>
  func.func @main() {
    %c1 = arith.constant 1 : index
    %table = memref.get_global @table : memref<4xf32>
    // expected-error @+1 {{'gpu.launch_func' op gives a kernel a buffer in host memory}}
    gpu.launch_func @kiln_kernels::@kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%table : memref<4xf32>)
    return
  }
  gpu.module @kiln_kernels {
    gpu.func @kernel(%x: memref<4xf32>) kernel {
      gpu.return
    }
  }
}

// -----

// A kernel that calls libdevice, which kiln does not link.
gpu.module @kiln_kernels {
  // expected-error @+1 {{'llvm.func' op is called by a kernel but defined in no kernel module}}
  llvm.func @__nv_powf(f32, f32) -> f32
  llvm.func @kernel(%x: f32) -> f32 {
    %p = llvm.call @__nv_powf(%x, %x) : (f32, f32) -> f32
    llvm.return %p : f32
  }
}

// -----

// What the host may do: its stack, and reshape by a shape there.
func.func @host_bookkeeping(%x: memref<?xf32>, %n: index) -> memref<?x64xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %shape = memref.alloca() : memref<2xindex>
  memref.store %n, %shape[%c0] : memref<2xindex>
  memref.store %c64, %shape[%c1] : memref<2xindex>
  %r = memref.reshape %x(%shape) : (memref<?xf32>, memref<2xindex>) -> memref<?x64xf32>
  return %r : memref<?x64xf32>
}

// -----

// A kernel op that no pass lowered.
gpu.module @kiln_kernels {
  llvm.func @kernel(%x: i32) -> i32 {
    // expected-error @+1 {{'math.ipowi' op has no lowering in a kernel of the GPU target}}
    %p = math.ipowi %x, %x : i32
    llvm.return %p : i32
  }
}
