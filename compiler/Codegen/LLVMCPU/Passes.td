//===- Passes.td - The CPU target's code generation passes ---*- tablegen -*-===//
//
// Passes of the CPU target's tail (LLVMCPU): GEMMs as calls of the
// runtime's microkernels, failed checks as traps, and the kiln_entry entry
// point.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_COMPILER_CODEGEN_LLVMCPU_PASSES_TD
#define KILN_COMPILER_CODEGEN_LLVMCPU_PASSES_TD

include "mlir/Pass/PassBase.td"

def LowerToKernelCalls : Pass<"kiln-lower-to-cpu-kernels", "mlir::ModuleOp"> {
  let summary = "Lowers the ops the CPU runs as the runtime's kernels to their calls";
  let description = [{
    `kiln.linear`, `kiln.attention` and `kiln.paged_attention` run as the
    runtime's microkernels (`kiln_ukernel_linear`, `kiln_ukernel_attention`,
    `kiln_ukernel_paged_attention`): each becomes a call on its operands'
    buffers (`bufferization.to_memref`, read-only, each read tagged with its
    caller so that CSE keeps them apart) writing fresh buffers that are its
    results (`bufferization.to_tensor restrict`); kiln.linear and
    kiln.paged_attention pass a parameter struct (`kiln/abi/kernel_abi.h`)
    in a stack buffer marked `kiln.ukernel_params`. Sizes that must agree
    are checked at run time. It runs before the shared `kiln-convert-to-linalg`,
    which lowers every other kiln op and refuses these. It runs on the
    module because it declares the kernels there.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::bufferization::BufferizationDialect",
    "::mlir::cf::ControlFlowDialect", "::mlir::func::FuncDialect",
    "::mlir::LLVM::LLVMDialect", "::mlir::linalg::LinalgDialect",
    "::mlir::memref::MemRefDialect", "::mlir::tensor::TensorDialect"
  ];
}

def LinalgToUkernels : Pass<"kiln-linalg-to-ukernels", "mlir::ModuleOp"> {
  let summary = "Replaces f32 matmuls on buffers with runtime GEMM microkernel calls";
  let description = [{
    Runs after bufferization. A `linalg.matmul`, `linalg.matmul_transpose_b`,
    `linalg.batch_matmul` or `linalg.batch_matmul_transpose_b` on f32 memrefs
    with unit inner strides becomes one call to the runtime's packed-panel
    SGEMM:

    ```
    kiln_ukernel_sgemm(batch, m, n, k, a, a_batch_stride, lda,
                       b, b_batch_stride, ldb, transpose_b,
                       c, c_batch_stride, ldc, accumulate)
    ```

    linalg adds the product to C, and so does the call, with `accumulate =
    1`. When C is a fresh allocation that only a zero fill used before, the
    call overwrites C instead (`accumulate = 0`) and the fill is erased.
    Anything else is left to the generic loop lowering.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::memref::MemRefDialect",
  ];
}

def AssertsToTraps : Pass<"kiln-asserts-to-traps", "mlir::ModuleOp"> {
  let summary = "Turns failed run-time checks into calls to the runtime's trap";
  let description = [{
    Runs on control flow (after scf-to-cf). Each `cf.assert %ok, "message"`
    becomes a branch to a block that calls `kiln_rt_trap("message")`, which
    does not return: the runtime ends the run with an error that carries the
    message. Upstream's lowering would print the message and abort the
    process; a bad request must not take down a server.

    Example:

    ```mlir
    cf.assert %ok, "node 'Add_3' (kiln.add): ..."
    // becomes
    cf.cond_br %ok, ^continue, ^trap
  ^trap:
    llvm.call @kiln_rt_trap(%message) : (!llvm.ptr) -> ()
    llvm.unreachable
    ```
  }];
  let dependentDialects = [
    "::mlir::cf::ControlFlowDialect",
    "::mlir::LLVM::LLVMDialect",
  ];
}

def EmitEntryPoint : Pass<"kiln-emit-entry-point", "mlir::ModuleOp"> {
  let summary = "Adds the runtime's entry point, kiln_entry(args, results)";
  let description = [{
    Runs on the LLVM dialect, after `llvm.emit_c_interface` made
    `_mlir_ciface_<function>`. Adds

    ```
    void kiln_entry(void **arguments, void *results)
    ```

    which calls it with `arguments[i]` as the i-th memref descriptor pointer
    (inputs, then weights) and `results` as the out-pointer to the struct of
    result descriptors. The runtime calls only this symbol, so it needs to know
    no function signature beyond the manifest.

    The entry function's pointer parameters are marked `noalias`: they are
    the inputs' and weights' buffers, which `kiln-prepare-entry-point` made
    read-only, so no write can go through them. The results of the runtime's
    allocation functions (`_mlir_memref_to_llvm_(aligned_)alloc`) are marked
    `noalias` too: each is a fresh buffer. Both let LLVM keep loop
    accumulators in registers and vectorize loops.
  }];
  let options = [
    Option<"functionName", "function", "std::string", /*default=*/"\"main\"",
           "The entry function">,
  ];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

#endif // KILN_COMPILER_CODEGEN_LLVMCPU_PASSES_TD
