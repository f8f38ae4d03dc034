//===- Passes.td - The CUDA target's code generation passes --*- tablegen -*-===//
//
// Passes of the CUDA target's tail: buffers that only the host reads kept on
// its stack, loops mapped onto GPU blocks and threads, the kernels in one GPU
// module, and the checks that the result can run on a GPU at all.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_COMPILER_CODEGEN_CUDA_PASSES_TD
#define KILN_COMPILER_CODEGEN_CUDA_PASSES_TD

include "mlir/Pass/PassBase.td"

def FillTensorsOnDevice : Pass<"kiln-fill-tensors-on-device", "mlir::func::FuncOp"> {
  let summary = "Fills the tensors built from host values in a kernel";
  let description = [{
    Runs on linalg on tensors, before bufferization. `tensor.from_elements`
    would become host stores into a buffer, and on the GPU target the
    buffer is device memory. Unless the tensor is only a reshape's target
    shape (host bookkeeping, `kiln-keep-shapes-on-host`), it becomes a
    `linalg.generic` that selects each element's value by its index: a
    kernel, with the values as its arguments.

    ```mlir
    %t = tensor.from_elements %a, %b : tensor<2xi64>
    // becomes
    %e = tensor.empty() : tensor<2xi64>
    %t = linalg.generic {iterator_types = ["parallel"]} outs(%e : tensor<2xi64>) {
    ^bb0(%out: i64):
      %i = linalg.index 0 : index
      %first = arith.cmpi eq, %i, %c0 : index
      %v = arith.select %first, %a, %b : i64
      linalg.yield %v : i64
    } -> tensor<2xi64>
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::linalg::LinalgDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def KeepShapesOnHost : Pass<"kiln-keep-shapes-on-host", "mlir::func::FuncOp"> {
  let summary = "Puts the buffers that hold a reshape's target shape on the host's stack";
  let description = [{
    Runs after bufferization, before memory planning. A static `index`
    buffer that is only stored into and read as the shape operand of
    `memref.reshape` (what `tensor.reshape` of a `tensor.from_elements`
    becomes) is the host's own bookkeeping: the host writes the dims and
    the reshape reads them to build its result's descriptor. On the GPU
    target every other buffer lives in device memory, which the host cannot
    touch, so such a buffer becomes a `memref.alloca` instead of a
    `memref.alloc` (which memory planning would place in the device arena).

    ```mlir
    %shape = memref.alloc() : memref<2xindex>
    memref.store %n, %shape[%c0] : memref<2xindex>
    memref.store %c64, %shape[%c1] : memref<2xindex>
    %r = memref.reshape %x(%shape) : (memref<?xf32>, memref<2xindex>) -> memref<?x64xf32>
    // becomes
    %shape = memref.alloca() : memref<2xindex>
    ```
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

def MapLoopsToGpu : Pass<"kiln-map-loops-to-gpu", "mlir::func::FuncOp"> {
  let summary = "Lowers each linalg op on buffers to a loop nest on GPU blocks of threads";
  let description = [{
    Runs after bufferization. Each linalg op (and each `memref.copy`, as
    `linalg.copy`) becomes one `scf.parallel`
    over its parallel dims, with its reductions as `scf.for` inside it
    (`linalg::linalgOpToParallelLoops`); an op with no parallel loop (on
    rank-0 buffers, or a reduction of everything to one value) gets a
    parallel loop of one iteration, so that its body
    too runs on the GPU. Each such `scf.parallel` is collapsed into one
    dim, which is then cut into blocks of `block-size` iterations: the
    blocks map to `block_x` and the iterations within a block to
    `thread_x`, a guard skipping the last block's surplus threads. A
    generic's parallel dims are put first, so that they all map onto
    threads and each thread reduces on its own; a parallel loop still
    nested in a thread's body runs in it, as a nest of `scf.for`. A
    sequential loop or branch that reads or writes buffers (the loop nest
    of a scatter, a cumsum or a top-k) runs whole in one thread. A constant global that
    the loop reads is read inside it, so that its kernel reads the copy in
    its GPU module (`gpu-kernel-outlining` copies it there), not the
    host's. `convert-parallel-loops-to-gpu` then makes one `gpu.launch` of
    each.

    ```mlir
    // the loops of a linalg op over %m × %n:
    scf.parallel (%i, %j) = (%c0, %c0) to (%m, %n) step (%c1, %c1) { ... }
    // become, with %mn = %m * %n iterations
    scf.parallel (%b) = (%c0) to (%mn) step (%c256) {
      scf.parallel (%t) = (%c0) to (%c256) step (%c1) {
        // %i, %j from %b + %t, if %b + %t < %mn
      } {mapping = [#gpu.loop_dim_map<processor = thread_x, ...>]}
    } {mapping = [#gpu.loop_dim_map<processor = block_x, ...>]}
    ```
  }];
  let options = [
    Option<"blockSize", "block-size", "int64_t", "256",
           "Threads per block">,
  ];
  let dependentDialects = [
    "::mlir::affine::AffineDialect", "::mlir::arith::ArithDialect",
    "::mlir::gpu::GPUDialect", "::mlir::scf::SCFDialect"
  ];
}

def ReadDeviceValuesOnHost : Pass<"kiln-read-device-values-on-host", "mlir::func::FuncOp"> {
  let summary = "Copies to the host the device buffers whose values the host reads";
  let description = [{
    Runs after `kiln-map-loops-to-gpu`, on the host code left outside the
    kernels. Where the host reads a tensor's values (a slice's steps, a
    pad's amounts, a `Trilu` k or a range's bounds given as tensors, a
    run-time check's outcome, a reshape's shape computed as data), the
    buffer is device memory: the host first copies it whole into a buffer
    on its stack (`gpu.memcpy`, which waits for the kernels before it) and
    reads that. One copy per buffer and block, before its first read there;
    only contiguous buffers (identity layout) are copied, the others left
    for `kiln-verify-device-code` to report.

    ```mlir
    %k = memref.load %device[] : memref<i64>
    // becomes
    %host = memref.alloca() : memref<i64>
    gpu.memcpy %host, %device : memref<i64>, memref<i64>
    %k = memref.load %host[] : memref<i64>
    ```
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect", "::mlir::memref::MemRefDialect"];
}

def AllocateOnDevice : Pass<"kiln-allocate-on-device", "mlir::func::FuncOp"> {
  let summary = "Allocates the host code's heap buffers in device memory";
  let description = [{
    Runs on the host code once the kernels are outlined. On the GPU target
    every buffer but the host's own bookkeeping (on its stack) is device
    memory: the buffers the entry returns, and any that memory planning
    left out of the arena, are allocated by the runtime's device allocator
    (`gpu.alloc`, which `gpu-to-llvm` lowers to `mgpuMemAlloc`), and freed
    by it.

    ```mlir
    %out = memref.alloc(%n) {alignment = 64 : i64} : memref<?x64xf32>
    // becomes
    %out = gpu.alloc (%n) : memref<?x64xf32>
    ```
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
}

def MergeGpuModules : Pass<"kiln-merge-gpu-modules", "mlir::ModuleOp"> {
  let summary = "Moves every outlined kernel into one GPU module";
  let description = [{
    `gpu-kernel-outlining` gives each kernel a `gpu.module` of its own, and
    each module would be serialized, and loaded by the driver, apart. This
    pass moves every kernel into the first module, renamed
    `kiln_kernels`, and points each `gpu.launch_func` at it: one PTX module
    for the whole model, loaded once. A model without kernels (its outputs
    folded to constants) gets an empty one, whose PTX is still a module.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
}

def KernelChecksToFlag : Pass<"kiln-kernel-checks-to-flag", "mlir::ModuleOp"> {
  let summary = "Makes a failed run-time check in a kernel set a flag and end its thread";
  let description = [{
    Runs once the kernels' loops are branches (`convert-scf-to-cf`). A
    `cf.assert` in a kernel (an index that a gather checks against its
    table) cannot call the runtime as the CPU's checks do
    (`kiln-asserts-to-traps`), and CUDA's own `__assertfail` would poison
    the whole context, which a service cannot afford. So the failing
    thread stores the check's number (1 for the first message) into
    `kiln_kernel_check`, a global of the kernel module that the runtime
    reads after the run, and returns before it reads out of bounds. The
    messages, by number, are the module's `kiln.kernel_checks`.

    ```mlir
    cf.assert %ok, "index out of range"
    // becomes
    cf.cond_br %ok, ^continue, ^failed
    ^failed:
      %flag = memref.get_global @kiln_kernel_check : memref<i32>
      memref.store %c1_i32, %flag[] : memref<i32>
      gpu.return
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::cf::ControlFlowDialect",
    "::mlir::gpu::GPUDialect", "::mlir::memref::MemRefDialect"
  ];
}

def LibdeviceToIntrinsics : Pass<"kiln-libdevice-to-intrinsics", "mlir::gpu::GPUModuleOp"> {
  let summary = "Replaces the libdevice calls that PTX has an instruction for";
  let description = [{
    Runs after `convert-gpu-to-nvvm`, which lowers every math op to a call
    of CUDA's libdevice (`__nv_sqrtf`, `__nv_floorf`, ...). Kiln links no
    libdevice: the calls whose function the NVPTX backend selects as one
    PTX instruction become that LLVM intrinsic (square root, absolute
    value, floor, ceiling, truncation, rounding, FMA, min, max, copysign),
    `__nv_rsqrtf` becomes a division by the square root, `__nv_fmodf` an
    `frem` (which the backend expands), and the
    declarations left without a call are erased. The transcendental
    functions never get here: `kiln-approximate-math` made them
    polynomials. What is left is reported by `kiln-verify-device-code`.

    ```mlir
    %r = llvm.call @__nv_sqrtf(%x) : (f32) -> f32
    // becomes
    %r = llvm.intr.sqrt(%x) : (f32) -> f32
    ```
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def VerifyDeviceCode : Pass<"kiln-verify-device-code", "mlir::ModuleOp"> {
  let summary = "Checks that the host touches only its own memory and the kernels call nothing";
  let description = [{
    Runs after the kernels are lowered to the NVVM dialect, before they are
    serialized. Fails, naming the op, where
    - the host code still reads or writes a buffer that is not its own
      (on its stack, `memref.alloca`, or a constant global of the host
      module): every other buffer is device memory; where a loop or linalg
      op was left on the host; or where a kernel is given a host buffer;
    - a kernel calls a function it does not define: a math function that
      only CUDA's libdevice provides, which kiln does not link (kernels use
      `kiln-approximate-math`'s polynomials instead); or a kernel holds an
      op that no pass lowered to the LLVM and NVVM dialects.
  }];
}

#endif // KILN_COMPILER_CODEGEN_CUDA_PASSES_TD
