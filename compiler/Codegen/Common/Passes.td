//===- Passes.td - Code generation passes of every target ---*- tablegen -*-===//
//
// Passes that every target's lowering shares: the entry function's calling
// convention, elementwise fusion's help, memory planning, and math
// without library calls (libm on the CPU, libdevice on the GPU).
//
//===----------------------------------------------------------------------===//
#ifndef KILN_COMPILER_CODEGEN_COMMON_PASSES_TD
#define KILN_COMPILER_CODEGEN_COMMON_PASSES_TD

include "mlir/Pass/PassBase.td"

def PrepareEntryPoint : Pass<"kiln-prepare-entry-point", "mlir::ModuleOp"> {
  let summary = "Gives the entry function the artifact's calling convention";
  let description = [{
    Runs on kiln IR, before the lowering. In the entry function:

    - every non-splat constant with more than `min-elements` elements becomes
      a trailing argument, a weight; the module's `kiln.weights` attribute
      lists their values in argument order (identical constants share one),
      and `kiln.weight_names` their names (the ONNX initializer's, from the
      constant's location), by which kilnc's calibration matches a product
      across two compiles of a model;
    - every argument is marked read-only (`bufferization.writable = false`):
      inputs belong to the caller and weights are mmapped read-only;
    - the function gets a C interface (`llvm.emit_c_interface`), which
      `kiln-emit-entry-point` wraps;
    - the ONNX metadata attributes (`kiln.name`, `kiln.dims`) are dropped;
      the artifact manifest carries them; `kiln.dim_max` and `kiln.dim_min`,
      the dim bounds, stay for `kiln-plan-memory`;
    - the module exports `kiln_signature`, the dtypes and shapes of the
      arguments and results, which the runtime checks the manifest against.

    Example:

    ```mlir
    func.func @main(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
      %w = kiln.constant dense_resource<w> : tensor<64x64xf32> loc("w")
      ...
    // becomes
    module attributes {kiln.weight_names = ["w"],
                       kiln.weights = [dense_resource<w> : tensor<64x64xf32>]} {
      func.func @main(%x: tensor<?x64xf32> {bufferization.writable = false},
                      %w: tensor<64x64xf32> {bufferization.writable = false})
          -> tensor<?x64xf32> attributes {llvm.emit_c_interface} {
    ```
  }];
  let options = [
    Option<"functionName", "function", "std::string", /*default=*/"\"main\"",
           "The entry function">,
    Option<"minElements", "min-elements", "int64_t", /*default=*/"16",
           "Constants with more elements than this become weights">,
  ];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def DuplicateElementwiseProducers
    : Pass<"kiln-duplicate-elementwise-producers", "mlir::func::FuncOp"> {
  let summary = "Copies a cheap elementwise producer into each of its consumers";
  let description = [{
    Runs on linalg on tensors, right before linalg's elementwise fusion,
    which fuses a producer only into its single consumer. A cheap producer
    (arithmetic short of division, index casts, single-element reads; no
    run-time checks) that several `linalg.generic`s read, each able to absorb it,
    is cloned once per consumer, so that the fusion computes it inside each
    of them and its buffer disappears. This is how a chain of elementwise
    ops reaches the reductions of the norm that consumes it: the input of a
    layer norm is read by the mean's reduction and by the centering, and
    the centered values by the variance's reduction and by the scaling.
    Consumers are visited before producers, so whole chains split in one
    sweep. A producer with more than `max-consumers` consumers, or one that
    something other than a fusable generic reads, is left alone: copying it
    would add work without removing its buffer.

    Example:

    ```mlir
    %x = linalg.generic {... parallel ...} ins(%a, %b ...) { arith.addf }
    %sum = linalg.generic {... reduction ...} ins(%x ...)
    %centered = linalg.generic {... parallel ...} ins(%x, %mean ...)
    // becomes
    %x0 = linalg.generic {... parallel ...} ins(%a, %b ...) { arith.addf }
    %x1 = linalg.generic {... parallel ...} ins(%a, %b ...) { arith.addf }
    %sum = linalg.generic {... reduction ...} ins(%x1 ...)
    %centered = linalg.generic {... parallel ...} ins(%x0, %mean ...)
    ```
  }];
  let options = [
    Option<"maxConsumers", "max-consumers", "int64_t", /*default=*/"4",
           "The most consumers a producer is copied into">,
  ];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def PlanMemory : Pass<"kiln-plan-memory", "mlir::ModuleOp"> {
  let summary = "Places the entry function's intermediate buffers in one arena";
  let description = [{
    Runs after one-shot bufferization, before deallocation. Every
    `memref.alloc` in the entry block of the entry function whose size has an
    upper bound becomes a `memref.view` at a fixed offset of one arena, a new
    trailing argument `memref<Nxi8>` that the runtime allocates once per
    session and reuses across runs.

    - Liveness: a buffer lives from the first to the last op of the entry
      block that uses it or a value derived from it (views, and the raw
      pointers that microkernel calls take), nested uses counting at their
      ancestor in the block.
    - Buffers that reach the `return` stay on the heap: the caller owns them.
    - Sizes are bounded from the arguments' `kiln.dim_max` and
      `kiln.dim_min` attributes (the declared dim bounds, which the pass
      removes; without `kiln.dim_min` a dim may be 0) through the index
      arithmetic of the dynamic sizes. A buffer without a bound, or larger
      than `max-buffer-bytes`, stays on the heap.
    - An elementwise `linalg.generic` whose input buffer dies there writes
      its result in place, in the input's memory.
    - Offsets are chosen greedily by decreasing size, each buffer in the
      smallest gap that fits among the buffers live at the same time (TFLite's
      arena planner); every offset is a multiple of 64 bytes.

    The module exports `kiln_arena_bytes` (i64), which the runtime checks the
    manifest against, and gets a `kiln.memory_plan` attribute for the
    compiler's report: the arena size, the sum of the planned buffers, every
    buffer's offset and lifetime (and `in_place_of`, the index of the buffer
    it overwrites in place), and the buffers left on the heap with why.

    Example:

    ```mlir
    %a = memref.alloc(%n) {alignment = 64 : i64} : memref<?x64xf32>
    // becomes, with %arena the new last argument of @main
    %c0 = arith.constant 0 : index
    %a = memref.view %arena[%c0][%n] : memref<65536xi8> to memref<?x64xf32>
    ```
  }];
  let options = [
    Option<"functionName", "function", "std::string", /*default=*/"\"main\"",
           "The entry function">,
    Option<"maxBufferBytes", "max-buffer-bytes", "int64_t",
           /*default=*/"int64_t(1) << 30",
           "Buffers that may need more bytes than this stay on the heap, "
           "where a run allocates only what its sizes need">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::memref::MemRefDialect",
  ];
}

def ApproximateMath : Pass<"kiln-approximate-math"> {
  let summary = "Replaces libm calls with vectorizable arithmetic";
  let description = [{
    Rewrites powers with constant exponents (x^2, x^3, x^0.5, x^-1, ...) as
    multiplications, square roots and divisions, and exp, log, tanh, erf, sin,
    cos and friends on f32 as MLIR's polynomial approximations (accurate to a
    few ulp). Both keep loop bodies free of calls, so that LLVM can vectorize
    them; a libm call per element dominated transformer runs before this.

    Example:

    ```mlir
    %y = math.powf %x, %c3 : f32
    // becomes
    %x2 = arith.mulf %x, %x : f32
    %y = arith.mulf %x2, %x : f32
    ```
  }];
  let options = [
    Option<"libraryFree", "library-free", "bool", "false",
           "Also expand the functions that have no polynomial (sinh, cosh, "
           "tan and the inverse hyperbolic functions, pow with a run-time "
           "exponent) into exp, log and arithmetic, which do: for a target "
           "with no math library (the GPU's)">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::math::MathDialect",
    "::mlir::vector::VectorDialect",
  ];
}

#endif // KILN_COMPILER_CODEGEN_COMMON_PASSES_TD
