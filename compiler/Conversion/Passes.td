//===- Passes.td - Kiln conversion passes ------------------*- tablegen -*-===//
#ifndef KILN_COMPILER_CONVERSION_PASSES_TD
#define KILN_COMPILER_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertKilnToLinalg : Pass<"kiln-convert-to-linalg", "mlir::ModuleOp"> {
  let summary = "Lowers every kiln op to linalg, tensor, arith and math";
  let description = [{
    The target-independent lowering that every backend shares: elementwise
    ops become `linalg.generic` with NumPy broadcasting in the indexing maps,
    matrix products become `linalg.matmul` / `linalg.batch_matmul` (the CPU
    backend later swaps them for microkernel calls), reductions become
    reducing `linalg.generic`s, and data movement becomes `tensor` ops.
    Normalizations and softmax are first decomposed into kiln ops.
    `kiln.attention` becomes a call of the runtime's streaming-softmax
    microkernel (`kiln_ukernel_attention`) on the operands' buffers, which is
    why the pass runs on the module: it declares the microkernel there.

    Dynamic sizes are read from the operands at run time (`tensor.dim`). A
    dynamic dimension is assumed not to broadcast: it must equal the other
    operands' sizes, as the ONNX exports guarantee for `batch` and `sequence`.
    What the types cannot guarantee is checked at run time with `cf.assert`,
    whose message names the ONNX node: sizes that must agree (broadcast
    operands, contraction sizes, concat inputs, split sizes, reshape element
    counts, squeezed dims) and gather indices in range.

    Example:

    ```mlir
    %z = kiln.add %x, %b : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
    // becomes
    %z = linalg.generic {indexing_maps = [(d0, d1) -> (d0, d1), (d0, d1) -> (d1),
                                          (d0, d1) -> (d0, d1)], ...}
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::cf::ControlFlowDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

#endif // KILN_COMPILER_CONVERSION_PASSES_TD
