// RUN: kiln-opt %s --kiln-approximate-math | FileCheck %s --check-prefix=CPU
// RUN: kiln-opt %s --kiln-approximate-math=library-free | FileCheck %s --check-prefix=GPU

// exp and tanh become polynomials for every target. cosh and pow with a
// run-time exponent have none: the CPU keeps them for libm, while
// library-free (the GPU's) expands them into exp and log, which then
// become polynomials too.

// CPU-LABEL: func.func @functions
// CPU-NOT: math.exp
// CPU-NOT: math.tanh
// CPU: math.cosh
// CPU: math.powf
// GPU-LABEL: func.func @functions
// GPU-NOT: math.exp
// GPU-NOT: math.tanh
// GPU-NOT: math.cosh
// GPU-NOT: math.log
// GPU-NOT: math.powf
// GPU: return
func.func @functions(%x: f32, %y: f32) -> (f32, f32, f32, f32) {
  %e = math.exp %x : f32
  %t = math.tanh %x : f32
  %c = math.cosh %x : f32
  %p = math.powf %x, %y : f32
  return %e, %t, %c, %p : f32, f32, f32, f32
}
