// RUN: kiln-opt %s --kiln-print-summary -o /dev/null | FileCheck %s
// RUN: kiln-opt %s --kiln-print-summary=output=%t -o /dev/null
// RUN: FileCheck %s < %t
// RUN: kiln-opt %s --kiln-print-summary | FileCheck %s --check-prefix=UNCHANGED

// Tests that the summary lists each function's inputs and outputs with their
// kiln.name (or #index), type and dimension names (static sizes as numbers,
// unnamed dynamic dimensions as ?), then the op counts sorted by op name.

// CHECK-LABEL: func @main
// CHECK-NEXT:  input  input_ids: tensor<?x?xi64> [batch, sequence]{{$}}
// CHECK-NEXT:  input  #1: tensor<256x64xf32> [256, 64]{{$}}
// CHECK-NEXT:  input  #2: tensor<?x1x?xi1> [batch, 1, ?]{{$}}
// CHECK-NEXT:  output hidden: tensor<?x?x64xf32> [batch, sequence, 64]{{$}}
// CHECK-NEXT:  output #1: tensor<i64> []{{$}}
// CHECK-NEXT:  ops: 7{{$}}
// CHECK-NEXT:    func.return 1{{$}}
// CHECK-NEXT:    kiln.add 2{{$}}
// CHECK-NEXT:    kiln.gather 1{{$}}
// CHECK-NEXT:    kiln.gelu 1{{$}}
// CHECK-NEXT:    kiln.size 2{{$}}
// CHECK-NEXT: func @helper
// CHECK-NEXT:  input  #0: tensor<4xf32> [4]{{$}}
// CHECK-NEXT:  output y: tensor<4xf32> [4]{{$}}
// CHECK-NEXT:  ops: 0{{$}}
// CHECK-NOT: {{.}}

// The pass changes nothing.
// UNCHANGED-LABEL: func.func @main
// UNCHANGED: kiln.gather
// UNCHANGED: kiln.gelu
// UNCHANGED-LABEL: func.func private @helper

func.func @main(%ids: tensor<?x?xi64> {kiln.dims = ["batch", "sequence"], kiln.name = "input_ids"},
                %table: tensor<256x64xf32>,
                %mask: tensor<?x1x?xi1> {kiln.dims = ["batch", "", ""]})
    -> (tensor<?x?x64xf32> {kiln.dims = ["batch", "sequence", ""], kiln.name = "hidden"}, tensor<i64>) {
  %e = kiln.gather %table[%ids] {axis = 0 : i64} : (tensor<256x64xf32>, tensor<?x?xi64>) -> tensor<?x?x64xf32>
  %a = kiln.add %e, %e : (tensor<?x?x64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  %b = kiln.add %a, %e : (tensor<?x?x64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  %g = kiln.gelu %b : tensor<?x?x64xf32>
  %n = kiln.size %ids : tensor<?x?xi64> -> tensor<i64>
  %m = kiln.size %mask : tensor<?x1x?xi1> -> tensor<i64>
  return %g, %n : tensor<?x?x64xf32>, tensor<i64>
}

func.func private @helper(%x: tensor<4xf32>) -> (tensor<4xf32> {kiln.dims = [""], kiln.name = "y"})
