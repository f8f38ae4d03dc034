// RUN: kiln-opt %s --split-input-file --verify-diagnostics --kiln-emit-entry-point | FileCheck %s

// The inputs are written by hand in the shape that --convert-func-to-llvm
// gives a function with llvm.emit_c_interface: @main takes the unpacked
// descriptors and returns them packed in a struct, and @_mlir_ciface_main
// takes a pointer to each argument descriptor, preceded by a pointer to the
// result struct when there are results.

// Tests that kiln_entry(arguments, results) loads the i-th descriptor
// pointer from arguments[i] and calls the C interface with the results
// pointer first, then the descriptors in argument order; that every pointer
// parameter of the entry function (the allocated and aligned pointers of
// each descriptor) is marked llvm.noalias and its i64 parameters are not;
// and that the C interface wrapper's parameters are not marked and the
// bodies are left as they are.

// CHECK-LABEL: module @two_results
// CHECK: llvm.func @main(
// CHECK-SAME: %{{[a-zA-Z0-9_]+}}: !llvm.ptr {llvm.noalias}, %{{[a-zA-Z0-9_]+}}: !llvm.ptr {llvm.noalias},
// CHECK-SAME: %{{[a-zA-Z0-9_]+}}: i64, %{{[a-zA-Z0-9_]+}}: i64, %{{[a-zA-Z0-9_]+}}: i64, %{{[a-zA-Z0-9_]+}}: i64, %{{[a-zA-Z0-9_]+}}: i64,
// CHECK-SAME: %{{[a-zA-Z0-9_]+}}: !llvm.ptr {llvm.noalias}, %{{[a-zA-Z0-9_]+}}: !llvm.ptr {llvm.noalias},
// CHECK-SAME: %{{[a-zA-Z0-9_]+}}: i64, %{{[a-zA-Z0-9_]+}}: i64, %{{[a-zA-Z0-9_]+}}: i64, %{{[a-zA-Z0-9_]+}}: i64, %{{[a-zA-Z0-9_]+}}: i64)
// CHECK-SAME: -> !llvm.struct<(struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>, struct<(ptr, ptr, i64)>)>
// CHECK-NEXT: llvm.mlir.undef
// CHECK-NEXT: llvm.return
// CHECK: llvm.func @_mlir_ciface_main(%{{[a-zA-Z0-9_]+}}: !llvm.ptr, %{{[a-zA-Z0-9_]+}}: !llvm.ptr, %{{[a-zA-Z0-9_]+}}: !llvm.ptr) attributes
// CHECK-NEXT: llvm.return
// CHECK: llvm.func @kiln_entry(%[[ARGS:.+]]: !llvm.ptr, %[[RESULTS:.+]]: !llvm.ptr) {
// CHECK-NEXT: %[[SLOT0:.+]] = llvm.getelementptr %[[ARGS]][0] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK-NEXT: %[[ARG0:.+]] = llvm.load %[[SLOT0]] : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT: %[[SLOT1:.+]] = llvm.getelementptr %[[ARGS]][1] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK-NEXT: %[[ARG1:.+]] = llvm.load %[[SLOT1]] : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT: llvm.call @_mlir_ciface_main(%[[RESULTS]], %[[ARG0]], %[[ARG1]]) : (!llvm.ptr, !llvm.ptr, !llvm.ptr) -> ()
// CHECK-NEXT: llvm.return
// CHECK-NEXT: }
module @two_results {
  llvm.func @main(%arg0: !llvm.ptr, %arg1: !llvm.ptr, %arg2: i64, %arg3: i64, %arg4: i64, %arg5: i64, %arg6: i64,
                  %arg7: !llvm.ptr, %arg8: !llvm.ptr, %arg9: i64, %arg10: i64, %arg11: i64, %arg12: i64, %arg13: i64)
      -> !llvm.struct<(struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>, struct<(ptr, ptr, i64)>)>
      attributes {llvm.emit_c_interface} {
    %0 = llvm.mlir.undef : !llvm.struct<(struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>, struct<(ptr, ptr, i64)>)>
    llvm.return %0 : !llvm.struct<(struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>, struct<(ptr, ptr, i64)>)>
  }
  llvm.func @_mlir_ciface_main(%arg0: !llvm.ptr, %arg1: !llvm.ptr, %arg2: !llvm.ptr) attributes {llvm.emit_c_interface} {
    llvm.return
  }
}

// -----

// Tests that a function with a single result still gets the results pointer
// first, that all four argument descriptors are loaded in order, and that
// the pointer parameters of an entry function that is a declaration are
// marked llvm.noalias too, while another function's are not.

// CHECK-LABEL: module @one_result
// CHECK: llvm.func @main(!llvm.ptr {llvm.noalias}, !llvm.ptr {llvm.noalias}, i64, i64, i64, !llvm.ptr {llvm.noalias}, !llvm.ptr {llvm.noalias}, i64, i64, i64,
// CHECK-SAME: !llvm.ptr {llvm.noalias}, !llvm.ptr {llvm.noalias}, i64, !llvm.ptr {llvm.noalias}, !llvm.ptr {llvm.noalias}, i64)
// CHECK: llvm.func @_mlir_ciface_main(!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr){{$}}
// CHECK: llvm.func @helper(!llvm.ptr, i64){{$}}
// CHECK: llvm.func @kiln_entry(
// CHECK-SAME: %[[ARGS:[a-zA-Z0-9_]+]]: !llvm.ptr, %[[RESULTS:[a-zA-Z0-9_]+]]: !llvm.ptr)
// CHECK: %[[S0:.+]] = llvm.getelementptr %[[ARGS]][0]
// CHECK: %[[A0:.+]] = llvm.load %[[S0]] : !llvm.ptr -> !llvm.ptr
// CHECK: %[[S1:.+]] = llvm.getelementptr %[[ARGS]][1]
// CHECK: %[[A1:.+]] = llvm.load %[[S1]] : !llvm.ptr -> !llvm.ptr
// CHECK: %[[S2:.+]] = llvm.getelementptr %[[ARGS]][2]
// CHECK: %[[A2:.+]] = llvm.load %[[S2]] : !llvm.ptr -> !llvm.ptr
// CHECK: %[[S3:.+]] = llvm.getelementptr %[[ARGS]][3]
// CHECK: %[[A3:.+]] = llvm.load %[[S3]] : !llvm.ptr -> !llvm.ptr
// CHECK-NOT: llvm.getelementptr
// CHECK: llvm.call @_mlir_ciface_main(%[[RESULTS]], %[[A0]], %[[A1]], %[[A2]], %[[A3]]) : (!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> ()
module @one_result {
  llvm.func @main(!llvm.ptr, !llvm.ptr, i64, i64, i64, !llvm.ptr, !llvm.ptr, i64, i64, i64,
                  !llvm.ptr, !llvm.ptr, i64, !llvm.ptr, !llvm.ptr, i64)
      -> !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>
  llvm.func @_mlir_ciface_main(!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr)
  llvm.func @helper(!llvm.ptr, i64)
}

// -----

// Tests that for a function without results the descriptors are the only
// operands: the results pointer is not passed.

// CHECK-LABEL: module @no_results
// CHECK: llvm.func @kiln_entry(
// CHECK-SAME: %[[ARGS:[a-zA-Z0-9_]+]]: !llvm.ptr, %[[RESULTS:[a-zA-Z0-9_]+]]: !llvm.ptr)
// CHECK: %[[S0:.+]] = llvm.getelementptr %[[ARGS]][0] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK: %[[A0:.+]] = llvm.load %[[S0]] : !llvm.ptr -> !llvm.ptr
// CHECK: %[[S1:.+]] = llvm.getelementptr %[[ARGS]][1] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK: %[[A1:.+]] = llvm.load %[[S1]] : !llvm.ptr -> !llvm.ptr
// CHECK-NOT: %[[RESULTS]]
// CHECK: llvm.call @_mlir_ciface_main(%[[A0]], %[[A1]]) : (!llvm.ptr, !llvm.ptr) -> ()
// CHECK-NEXT: llvm.return
module @no_results {
  llvm.func @main(%arg0: !llvm.ptr, %arg1: !llvm.ptr, %arg2: i64, %arg3: i64, %arg4: i64,
                  %arg5: !llvm.ptr, %arg6: !llvm.ptr, %arg7: i64, %arg8: i64, %arg9: i64) attributes {llvm.emit_c_interface} {
    llvm.return
  }
  llvm.func @_mlir_ciface_main(%arg0: !llvm.ptr, %arg1: !llvm.ptr) attributes {llvm.emit_c_interface} {
    llvm.return
  }
}

// -----

// Tests that a function without arguments passes only the results pointer
// and reads nothing from the argument array.

// CHECK-LABEL: module @no_arguments
// CHECK: llvm.func @kiln_entry(
// CHECK-SAME: %{{.+}}: !llvm.ptr, %[[RESULTS:[a-zA-Z0-9_]+]]: !llvm.ptr)
// CHECK-NOT: llvm.load
// CHECK: llvm.call @_mlir_ciface_main(%[[RESULTS]]) : (!llvm.ptr) -> ()
module @no_arguments {
  llvm.func @main() -> !llvm.struct<(ptr, ptr, i64)>
  llvm.func @_mlir_ciface_main(!llvm.ptr)
}

// -----

// Tests that the entry function without its C interface wrapper is an error
// (kiln-prepare-entry-point sets llvm.emit_c_interface, which makes it).

// expected-error @+1 {{no C interface for entry function 'main'}}
module {
  llvm.func @main(%arg0: !llvm.ptr) {
    llvm.return
  }
}

// -----

// Tests that a C interface for a different function does not count.

// expected-error @+1 {{no C interface for entry function 'main'}}
module {
  llvm.func @forward(!llvm.ptr)
  llvm.func @_mlir_ciface_forward(!llvm.ptr)
}

// -----

// Tests that a C interface that returns its result by value (a scalar
// result, which --convert-func-to-llvm passes back without an out-pointer)
// is an error: kiln_entry passes results through an out-pointer only.

module {
  llvm.func @main(!llvm.ptr, !llvm.ptr, i64, i64, i64) -> f32
  // expected-error @+1 {{returns its result by value; kiln_entry supports memref results only}}
  llvm.func @_mlir_ciface_main(!llvm.ptr) -> f32
}

// -----

// Tests that a C interface taking a parameter by value (a non-memref
// argument, which --convert-func-to-llvm passes as the value itself rather
// than a pointer to a descriptor) is an error of the pass, naming the type:
// kiln_entry loads a descriptor pointer from arguments[i] for every
// parameter, so it would build a call that does not verify.

module {
  llvm.func @main(!llvm.ptr, !llvm.ptr, i64, i64, i64, i64) -> !llvm.struct<(ptr, ptr, i64)>
  // expected-error @+1 {{takes a 'i64' by value; kiln_entry passes memref arguments only}}
  llvm.func @_mlir_ciface_main(!llvm.ptr, !llvm.ptr, i64)
}

// -----

// Tests that every parameter is checked, not only the first: a by-value f32
// after two descriptor pointers is refused too.

module {
  llvm.func @main(!llvm.ptr, !llvm.ptr, i64, !llvm.ptr, !llvm.ptr, i64, f32)
  // expected-error @+1 {{takes a 'f32' by value; kiln_entry passes memref arguments only}}
  llvm.func @_mlir_ciface_main(!llvm.ptr, !llvm.ptr, f32)
}
