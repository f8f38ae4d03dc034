// RUN: kiln-opt %s --split-input-file --verify-diagnostics --kiln-prepare-entry-point
// RUN: not kiln-opt %s --split-input-file --kiln-prepare-entry-point=function=forward2 2>&1 | FileCheck %s

// The message names the function the `function` option asks for.
// CHECK: error: no entry function 'forward2'
// CHECK: error: no entry function 'forward2'
// CHECK: error: no entry function 'forward2'

// Tests that a module without the entry function is an error.

// expected-error @+1 {{no entry function 'main'}}
module {
  func.func @forward(%x: tensor<4xf32>) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
}

// -----

// Tests that a declaration of the entry function, without a body, is an
// error too.

// expected-error @+1 {{no entry function 'main'}}
module {
  func.func private @main(tensor<4xf32>) -> tensor<4xf32>
}

// -----

// Tests that an entry function with a value the runtime has no dtype for is
// an error.

module {
  // expected-error @+1 {{the runtime cannot pass a value of type 'tensor<4xi4>'}}
  func.func @main(%x: tensor<4xi4>) -> tensor<4xi4> {
    return %x : tensor<4xi4>
  }
}
