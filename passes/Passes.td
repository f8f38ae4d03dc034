//===- Passes.td - Kiln passes -----------------------------*- tablegen -*-===//
#ifndef KILN_PASSES_PASSES_TD
#define KILN_PASSES_PASSES_TD

include "mlir/Pass/PassBase.td"

def KilnPrintSummary : Pass<"kiln-print-summary", "mlir::ModuleOp"> {
  let summary = "Prints each function's signature with dimension names and its op counts";
  let description = [{
    For every function of the module, prints its inputs and outputs (ONNX
    name, tensor type and the names of the dynamic dimensions) followed by
    how many ops of each kind it holds. It changes nothing; `kilnc
    --emit=summary` and `make demo` use it to show what an import produced.

    Example output:

    ```
    func @main
      input  input_ids: tensor<?x?xi64> [batch, sequence]
      output logits: tensor<?x?x256xf32> [batch, sequence, 256]
      ops: 812
        kiln.add  40
    ```
  }];
  let options = [
    Option<"outputFile", "output", "std::string", /*default=*/"\"-\"",
           "Where to write the summary ('-' is standard output)">,
  ];
  let dependentDialects = ["::kiln::KilnDialect"];
}

#endif // KILN_PASSES_PASSES_TD
