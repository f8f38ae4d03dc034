// RUN: kiln-opt %s --split-input-file --kiln-fold-constants --canonicalize | FileCheck %s
// RUN: kiln-opt %s --split-input-file --kiln-fold-constants=max-elements=4 --canonicalize | FileCheck %s --check-prefix=BOUND

// Tests that an export's shape subgraph folds: the static dim of shape_of
// becomes a constant, which then flows through unsqueeze and concat into the
// reshape's shape; the dynamic dims become kiln.dim.

// CHECK-LABEL: func.func @shape_subgraph
//  CHECK-SAME: (%[[X:.+]]: tensor<?x?x64xf32>)
//       CHECK: %[[SHAPE:.+]] = kiln.constant dense<[-1, 64]> : tensor<2xi64>
//  CHECK-NEXT: %[[R:.+]] = kiln.reshape %[[X]], %[[SHAPE]]
//  CHECK-NEXT: %[[B:.+]] = kiln.dim %[[X]] {index = 0 : i64} : tensor<?x?x64xf32> -> tensor<i64>
//  CHECK-NEXT: return %[[R]], %[[B]]
func.func @shape_subgraph(%x: tensor<?x?x64xf32>) -> (tensor<?x64xf32>, tensor<i64>) {
  %s = kiln.shape_of %x : tensor<?x?x64xf32> -> tensor<3xi64>
  %c2 = kiln.constant dense<2> : tensor<i64>
  %d = kiln.gather %s[%c2] {axis = 0 : i64} : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %u = kiln.unsqueeze %d {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %m1 = kiln.constant dense<-1> : tensor<1xi64>
  %shape = kiln.concat %m1, %u {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
  %r = kiln.reshape %x, %shape : (tensor<?x?x64xf32>, tensor<2xi64>) -> tensor<?x64xf32>
  %c0 = kiln.constant dense<0> : tensor<i64>
  %b = kiln.gather %s[%c0] {axis = 0 : i64} : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  return %r, %b : tensor<?x64xf32>, tensor<i64>
}

// -----

// Tests elementwise folding with broadcasting, integer and float, a compare
// and a where, and a cast; f32 arithmetic rounds as f32 does.

// CHECK-LABEL: func.func @elementwise
//   CHECK-DAG: kiln.constant dense<[11, 22, 33]> : tensor<3xi64>
//   CHECK-DAG: kiln.constant dense<[1.000000e+00, 0.333333343]> : tensor<2xf32>
//   CHECK-DAG: kiln.constant dense<[true, false, true]> : tensor<3xi1>
//   CHECK-DAG: kiln.constant dense<[-5, 7, 0]> : tensor<3xi32>
//   CHECK-NOT: kiln.add
//   CHECK-NOT: kiln.div
//   CHECK-NOT: kiln.where
func.func @elementwise() -> (tensor<3xi64>, tensor<2xf32>, tensor<3xi1>, tensor<3xi32>) {
  %a = kiln.constant dense<[1, 2, 3]> : tensor<3xi64>
  %ten = kiln.constant dense<10> : tensor<i64>
  %m = kiln.mul %a, %ten : (tensor<3xi64>, tensor<i64>) -> tensor<3xi64>
  %s = kiln.add %m, %a : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi64>
  %one = kiln.constant dense<1.0> : tensor<f32>
  %d = kiln.constant dense<[1.0, 3.0]> : tensor<2xf32>
  %q = kiln.div %one, %d : (tensor<f32>, tensor<2xf32>) -> tensor<2xf32>
  %two = kiln.constant dense<2> : tensor<i64>
  %c = kiln.compare ne, %a, %two : (tensor<3xi64>, tensor<i64>) -> tensor<3xi1>
  %f = kiln.constant dense<[-5.7, -2.9, 0.5]> : tensor<3xf32>
  %seven = kiln.constant dense<7.0> : tensor<f32>
  %w = kiln.where %c, %f, %seven : (tensor<3xi1>, tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  %i = kiln.cast %w : tensor<3xf32> to tensor<3xi32>
  return %s, %q, %c, %i : tensor<3xi64>, tensor<2xf32>, tensor<3xi1>, tensor<3xi32>
}

// -----

// Tests data movement on constants: transpose, gather with a negative index,
// a slice with a negative step, expand, and a range whose dynamic result
// type is kept through a tensor.cast.

// CHECK-LABEL: func.func @data_movement
//   CHECK-DAG: kiln.constant dense<{{\[}}[1, 4], [2, 5], [3, 6]]> : tensor<3x2xi64>
//   CHECK-DAG: kiln.constant dense<{{\[}}[3, 1], [6, 4]]> : tensor<2x2xi64>
//   CHECK-DAG: kiln.constant dense<{{\[}}[3, 2, 1], [6, 5, 4]]> : tensor<2x3xi64>
//   CHECK-DAG: kiln.constant dense<{{\[}}[7, 8], [7, 8]]> : tensor<2x2xi64>
//   CHECK-DAG: %[[RANGE:.+]] = kiln.constant dense<[0, 2, 4]> : tensor<3xi64>
//       CHECK: tensor.cast %[[RANGE]] : tensor<3xi64> to tensor<?xi64>
//   CHECK-NOT: kiln.transpose
//   CHECK-NOT: kiln.gather
//   CHECK-NOT: kiln.slice
//   CHECK-NOT: kiln.expand
//   CHECK-NOT: kiln.range
func.func @data_movement() -> (tensor<3x2xi64>, tensor<2x2xi64>, tensor<2x3xi64>, tensor<2x2xi64>, tensor<?xi64>) {
  %m = kiln.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi64>
  %t = kiln.transpose %m {permutation = array<i64: 1, 0>} : (tensor<2x3xi64>) -> tensor<3x2xi64>
  %idx = kiln.constant dense<[-1, 0]> : tensor<2xi64>
  %g = kiln.gather %m[%idx] {axis = 1 : i64} : (tensor<2x3xi64>, tensor<2xi64>) -> tensor<2x2xi64>
  %start = kiln.constant dense<-1> : tensor<1xi64>
  %end = kiln.constant dense<-10> : tensor<1xi64>
  %step = kiln.constant dense<-1> : tensor<1xi64>
  %s = kiln.slice %m[%start : %end : %step] {axes = array<i64: 1>} : (tensor<2x3xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2x3xi64>
  %row = kiln.constant dense<[[7, 8]]> : tensor<1x2xi64>
  %shape = kiln.constant dense<[2, 1]> : tensor<2xi64>
  %e = kiln.expand %row, %shape : (tensor<1x2xi64>, tensor<2xi64>) -> tensor<2x2xi64>
  %zero = kiln.constant dense<0> : tensor<i64>
  %five = kiln.constant dense<5> : tensor<i64>
  %two = kiln.constant dense<2> : tensor<i64>
  %r = kiln.range %zero, %five, %two : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  return %t, %g, %s, %e, %r : tensor<3x2xi64>, tensor<2x2xi64>, tensor<2x3xi64>, tensor<2x2xi64>, tensor<?xi64>
}

// -----

// Tests what must not fold: an integer division by zero and a gather index
// out of range (run-time errors that name the op), the most negative i64
// over -1 (which traps), a float to i32
// cast out of i32's range (undefined), and an op with a non-constant operand.

// CHECK-LABEL: func.func @left_for_run_time
//       CHECK: kiln.div
//       CHECK: kiln.div
//       CHECK: kiln.gather
//       CHECK: kiln.cast
//       CHECK: kiln.add
func.func @left_for_run_time(%x: tensor<2xi64>) -> (tensor<2xi64>, tensor<i64>, tensor<1xi64>, tensor<1xi32>, tensor<2xi64>) {
  %a = kiln.constant dense<[4, 6]> : tensor<2xi64>
  %z = kiln.constant dense<[2, 0]> : tensor<2xi64>
  %d = kiln.div %a, %z : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
  %min = kiln.constant dense<-9223372036854775808> : tensor<i64>
  %m1 = kiln.constant dense<-1> : tensor<i64>
  %overflow = kiln.div %min, %m1 : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %i = kiln.constant dense<[2]> : tensor<1xi64>
  %g = kiln.gather %a[%i] {axis = 0 : i64} : (tensor<2xi64>, tensor<1xi64>) -> tensor<1xi64>
  %big = kiln.constant dense<[3.0e9]> : tensor<1xf32>
  %c = kiln.cast %big : tensor<1xf32> to tensor<1xi32>
  %s = kiln.add %a, %x : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
  return %d, %overflow, %g, %c, %s : tensor<2xi64>, tensor<i64>, tensor<1xi64>, tensor<1xi32>, tensor<2xi64>
}

// -----

// Tests integer powers (by squaring, so a large exponent is no slower) and
// that relu keeps NaN, as the lowered max does.

// CHECK-LABEL: func.func @powers_and_nan
//   CHECK-DAG: kiln.constant dense<[1, 3, 59049, 0]> : tensor<4xi64>
//   CHECK-DAG: kiln.constant dense<[0x7FC00000, 0.000000e+00, 2.000000e+00]> : tensor<3xf32>
func.func @powers_and_nan() -> (tensor<4xi64>, tensor<3xf32>) {
  %b = kiln.constant dense<[3, 3, 3, 0]> : tensor<4xi64>
  %e = kiln.constant dense<[0, 1, 10, 4000000000000]> : tensor<4xi64>
  %p = kiln.pow %b, %e : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  %x = kiln.constant dense<[0x7FC00000, -1.0, 2.0]> : tensor<3xf32>
  %r = kiln.relu %x : tensor<3xf32>
  return %p, %r : tensor<4xi64>, tensor<3xf32>
}

// -----

// Tests the remainders (mod takes the divisor's sign, rem the dividend's),
// rounding halves to even, and sign; a remainder by zero is left to run
// time.

// CHECK-LABEL: func.func @remainders_and_rounding
//   CHECK-DAG: kiln.constant dense<[1, -1, 2, -2]> : tensor<4xi64>
//   CHECK-DAG: kiln.constant dense<[1, 2, -3, -2]> : tensor<4xi64>
//   CHECK-DAG: kiln.constant dense<[2.000000e+00, 2.000000e+00, -2.000000e+00, 1.000000e+00]> : tensor<4xf32>
//   CHECK-DAG: kiln.constant dense<[-1, 0, 1]> : tensor<3xi32>
//       CHECK: kiln.mod
//   CHECK-NOT: kiln.mod
//   CHECK-NOT: kiln.rem
//   CHECK-NOT: kiln.round
//   CHECK-NOT: kiln.sign
func.func @remainders_and_rounding() -> (tensor<4xi64>, tensor<4xi64>, tensor<4xf32>, tensor<3xi32>, tensor<i64>) {
  %a = kiln.constant dense<[7, -7, 7, -7]> : tensor<4xi64>
  %b = kiln.constant dense<[3, 3, -5, -5]> : tensor<4xi64>
  %r = kiln.rem %a, %b : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  %m = kiln.mod %a, %b : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  %x = kiln.constant dense<[2.5, 1.5, -2.5, 0.6]> : tensor<4xf32>
  %n = kiln.round %x : tensor<4xf32>
  %i = kiln.constant dense<[-9, 0, 4]> : tensor<3xi32>
  %s = kiln.sign %i : tensor<3xi32>
  %one = kiln.constant dense<1> : tensor<i64>
  %zero = kiln.constant dense<0> : tensor<i64>
  %byZero = kiln.mod %one, %zero : (tensor<i64>, tensor<i64>) -> tensor<i64>
  return %r, %m, %n, %s, %byZero : tensor<4xi64>, tensor<4xi64>, tensor<4xf32>, tensor<3xi32>, tensor<i64>
}

// -----

// Tests the size bound: a result of 6 elements folds by default but not with
// max-elements=4.

// CHECK-LABEL: func.func @bound
//   CHECK-NOT: kiln.add
// BOUND-LABEL: func.func @bound
//       BOUND: kiln.add
func.func @bound() -> tensor<2x3xi64> {
  %m = kiln.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi64>
  %s = kiln.add %m, %m : (tensor<2x3xi64>, tensor<2x3xi64>) -> tensor<2x3xi64>
  return %s : tensor<2x3xi64>
}

// -----

// Tests that a float range counts its elements in its own type, as the
// lowered op does: (0.3 - 0) / 0.1 is exactly 3 in f32 (it is 3.0000000000000004
// in f64), so there are 3 elements, each start + i * delta rounded to f32.

// CHECK-LABEL: func.func @float_range
//       CHECK: kiln.constant dense<[0.000000e+00, 1.000000e-01, 2.000000e-01]> : tensor<3xf32>
func.func @float_range() -> tensor<?xf32> {
  %start = kiln.constant dense<0.0> : tensor<f32>
  %limit = kiln.constant dense<0.3> : tensor<f32>
  %delta = kiln.constant dense<0.1> : tensor<f32>
  %r = kiln.range %start, %limit, %delta : (tensor<f32>, tensor<f32>, tensor<f32>) -> tensor<?xf32>
  return %r : tensor<?xf32>
}

// -----

// Tests that result types are refined from what the operands prove, in
// program order, so that dims read from a refined type fold in turn: the
// reshape's shape [dim(x, 0), 4, 16] makes it ?x4x16, the transpose and
// the elementwise ops after it follow, the head size read from the
// transpose folds to 16 and its half to 8, which makes the slice's width
// static. The function's result keeps its declared type through a cast.

// CHECK-LABEL: func.func @refine_types
//  CHECK-SAME: (%[[X:.+]]: tensor<?x64xf32>) -> tensor<4x?x?xf32>
//       CHECK: %[[R:.+]] = kiln.reshape %[[X]], %{{.+}} : (tensor<?x64xf32>, tensor<3xi64>) -> tensor<?x4x16xf32>
//       CHECK: %[[T:.+]] = kiln.transpose %[[R]] {permutation = array<i64: 1, 0, 2>} : (tensor<?x4x16xf32>) -> tensor<4x?x16xf32>
//       CHECK: %[[N:.+]] = kiln.neg %[[T]] : tensor<4x?x16xf32>
//       CHECK: %[[S:.+]] = kiln.slice %[[N]][%{{.+}} : %{{.+}} : %{{.+}}] {axes = array<i64: 2>} : (tensor<4x?x16xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4x?x8xf32>
//       CHECK: %[[C:.+]] = tensor.cast %[[S]] : tensor<4x?x8xf32> to tensor<4x?x?xf32>
//       CHECK: return %[[C]]
func.func @refine_types(%x: tensor<?x64xf32>) -> tensor<4x?x?xf32> {
  %c4 = kiln.constant dense<4> : tensor<1xi64>
  %c16 = kiln.constant dense<16> : tensor<1xi64>
  %c0 = kiln.constant dense<0> : tensor<1xi64>
  %c1 = kiln.constant dense<1> : tensor<1xi64>
  %two = kiln.constant dense<2> : tensor<i64>
  %d0 = kiln.dim %x {index = 0 : i64} : tensor<?x64xf32> -> tensor<i64>
  %u0 = kiln.unsqueeze %d0 {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %shape = kiln.concat %u0, %c4, %c16 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  %r = kiln.reshape %x, %shape : (tensor<?x64xf32>, tensor<3xi64>) -> tensor<?x?x?xf32>
  %t = kiln.transpose %r {permutation = array<i64: 1, 0, 2>} : (tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
  %n = kiln.neg %t : tensor<?x?x?xf32>
  %width = kiln.dim %t {index = 2 : i64} : tensor<?x?x?xf32> -> tensor<i64>
  %half = kiln.div %width, %two : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %end = kiln.unsqueeze %half {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %s = kiln.slice %n[%c0 : %end : %c1] {axes = array<i64: 2>} : (tensor<?x?x?xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x?x?xf32>
  %cast = tensor.cast %s : tensor<?x?x?xf32> to tensor<4x?x?xf32>
  return %cast : tensor<4x?x?xf32>
}

// -----

// Tests that refinement leaves a type whose static sizes disagree with what
// the operands prove (2x3x? for 2x4x32: the run-time check reports the
// mismatch), and refines products, concats and broadcasts.

// CHECK-LABEL: func.func @refine_keeps_declared
//       CHECK: kiln.matmul {{.*}} -> tensor<2x8x32xf32>
//       CHECK: kiln.concat {{.*}} -> tensor<2x8x64xf32>
//       CHECK: kiln.add {{.*}} -> tensor<2x8x64xf32>
//       CHECK: kiln.reshape {{.*}} -> tensor<2x3x?xf32>
func.func @refine_keeps_declared(%a: tensor<2x8x16xf32>, %b: tensor<16x32xf32>, %bias: tensor<64xf32>)
    -> (tensor<?x?x?xf32>, tensor<2x3x?xf32>) {
  %p = kiln.matmul %a, %b : (tensor<2x8x16xf32>, tensor<16x32xf32>) -> tensor<?x?x?xf32>
  %c = kiln.concat %p, %p {axis = 2 : i64} : (tensor<?x?x?xf32>, tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
  %s = kiln.add %c, %bias : (tensor<?x?x?xf32>, tensor<64xf32>) -> tensor<?x?x?xf32>
  %shape = kiln.constant dense<[2, 4, -1]> : tensor<3xi64>
  %r = kiln.reshape %a, %shape : (tensor<2x8x16xf32>, tensor<3xi64>) -> tensor<2x3x?xf32>
  return %s, %r : tensor<?x?x?xf32>, tensor<2x3x?xf32>
}

// -----

// Tests that a refinement the op's own verifier would reject (128 elements
// reshaped into a proven [3, 4, 16]) is not made: the reshape keeps its
// type and fails at run time with its own message.

// CHECK-LABEL: func.func @refine_rejected
//       CHECK: kiln.reshape %{{.+}}, %{{.+}} : (tensor<2x64xf32>, tensor<3xi64>) -> tensor<?x?x?xf32>
func.func @refine_rejected(%a: tensor<2x64xf32>, %y: tensor<3x9xf32>) -> tensor<?x?x?xf32> {
  %c4 = kiln.constant dense<4> : tensor<1xi64>
  %c16 = kiln.constant dense<16> : tensor<1xi64>
  %d0 = kiln.dim %y {index = 0 : i64} : tensor<3x9xf32> -> tensor<i64>
  %u0 = kiln.unsqueeze %d0 {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %shape = kiln.concat %u0, %c4, %c16 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  %r = kiln.reshape %a, %shape : (tensor<2x64xf32>, tensor<3xi64>) -> tensor<?x?x?xf32>
  return %r : tensor<?x?x?xf32>
}

// -----

// Tests the shapes refinement proves for slices (a negative step, with the
// end clamped to before the first element: 9, 7, 5, 3, 1), gathers,
// unsqueeze and squeeze, a reshape with 0 and -1 entries, a broadcast of
// ?x1 against 6x10, and each result of a split.

// CHECK-LABEL: func.func @refine_ops
//       CHECK: kiln.slice {{.*}} -> tensor<6x5xf32>
//       CHECK: kiln.gather {{.*}} -> tensor<3x10xf32>
//       CHECK: kiln.unsqueeze {{.*}} -> tensor<3x1x10xf32>
//       CHECK: kiln.squeeze {{.*}} -> tensor<3x10xf32>
//       CHECK: kiln.reshape {{.*}} -> tensor<6x5x2xf32>
//       CHECK: kiln.add {{.*}} -> tensor<6x10xf32>
//       CHECK: kiln.split {{.*}} -> (tensor<?x3xf32>, tensor<?x5xf32>)
func.func @refine_ops(%x: tensor<6x10xf32>, %idx: tensor<3xi64>, %y: tensor<?x1xf32>, %z: tensor<?x?xf32>)
    -> (tensor<?x?xf32>, tensor<?x?x?xf32>, tensor<?x?xf32>, tensor<?x?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>) {
  %c9 = kiln.constant dense<9> : tensor<1xi64>
  %cm100 = kiln.constant dense<-100> : tensor<1xi64>
  %cm2 = kiln.constant dense<-2> : tensor<1xi64>
  %s = kiln.slice %x[%c9 : %cm100 : %cm2] {axes = array<i64: 1>} : (tensor<6x10xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x?xf32>
  %g = kiln.gather %x[%idx] {axis = 0 : i64} : (tensor<6x10xf32>, tensor<3xi64>) -> tensor<?x?xf32>
  %u = kiln.unsqueeze %g {axes = array<i64: 1>} : (tensor<?x?xf32>) -> tensor<?x?x?xf32>
  %q = kiln.squeeze %u {axes = array<i64: 1>} : (tensor<?x?x?xf32>) -> tensor<?x?xf32>
  %shape = kiln.constant dense<[0, -1, 2]> : tensor<3xi64>
  %r = kiln.reshape %x, %shape : (tensor<6x10xf32>, tensor<3xi64>) -> tensor<?x?x?xf32>
  %b = kiln.add %y, %x : (tensor<?x1xf32>, tensor<6x10xf32>) -> tensor<?x?xf32>
  %parts:2 = kiln.split %z {axis = 1 : i64, sizes = array<i64: 3, 5>} : (tensor<?x?xf32>) -> (tensor<?x?xf32>, tensor<?x?xf32>)
  return %s, %u, %q, %r, %b, %parts#1 : tensor<?x?xf32>, tensor<?x?x?xf32>, tensor<?x?xf32>, tensor<?x?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>
}

// -----

// Tests that a split of a constant by static sizes folds into one constant
// per piece (torch's repeat_interleave splits its repeats [2, 2, 2] so), and
// that a split of a computed value stays.

// CHECK-LABEL: func.func @constant_split
//   CHECK-DAG: %[[A:.+]] = kiln.constant dense<2> : tensor<1xi64>
//   CHECK-DAG: %[[B:.+]] = kiln.constant dense<[3, 4]> : tensor<2xi64>
//       CHECK: %[[P:.+]]:2 = kiln.split %{{.+}} {axis = 0 : i64, sizes = array<i64: 1, 2>}
//       CHECK: return %[[A]], %[[B]], %[[P]]#1
func.func @constant_split(%x: tensor<3xi64>) -> (tensor<1xi64>, tensor<2xi64>, tensor<2xi64>) {
  %c = kiln.constant dense<[2, 3, 4]> : tensor<3xi64>
  %parts:2 = kiln.split %c {axis = 0 : i64, sizes = array<i64: 1, 2>} : (tensor<3xi64>) -> (tensor<1xi64>, tensor<2xi64>)
  %other:2 = kiln.split %x {axis = 0 : i64, sizes = array<i64: 1, 2>} : (tensor<3xi64>) -> (tensor<1xi64>, tensor<2xi64>)
  return %parts#0, %parts#1, %other#1 : tensor<1xi64>, tensor<2xi64>, tensor<2xi64>
}

// -----

// Tests what refinement leaves alone: a cast that adds static sizes is not
// bypassed (kiln.neg keeps reading the 4x64 cast), and a reshape proven to
// be ?x4x16 keeps its type when that would break its user, a product whose
// weight has 32 rows (the run-time check reports the mismatch instead).

// CHECK-LABEL: func.func @refine_guarded
//       CHECK: %[[NARROW:.+]] = tensor.cast %{{.+}} : tensor<?x64xf32> to tensor<4x64xf32>
//       CHECK: kiln.neg %[[NARROW]] : tensor<4x64xf32>
//       CHECK: kiln.reshape {{.*}} -> tensor<?x?x?xf32>
//       CHECK: kiln.matmul {{.*}} : (tensor<?x?x?xf32>, tensor<32x8xf32>) -> tensor<?x?x8xf32>
func.func @refine_guarded(%x: tensor<?x64xf32>, %w: tensor<32x8xf32>) -> (tensor<4x64xf32>, tensor<?x?x8xf32>) {
  %narrow = tensor.cast %x : tensor<?x64xf32> to tensor<4x64xf32>
  %n = kiln.neg %narrow : tensor<4x64xf32>
  %c4 = kiln.constant dense<4> : tensor<1xi64>
  %c16 = kiln.constant dense<16> : tensor<1xi64>
  %d0 = kiln.dim %x {index = 0 : i64} : tensor<?x64xf32> -> tensor<i64>
  %u0 = kiln.unsqueeze %d0 {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %shape = kiln.concat %u0, %c4, %c16 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  %r = kiln.reshape %x, %shape : (tensor<?x64xf32>, tensor<3xi64>) -> tensor<?x?x?xf32>
  %p = kiln.matmul %r, %w : (tensor<?x?x?xf32>, tensor<32x8xf32>) -> tensor<?x?x8xf32>
  return %n, %p : tensor<4x64xf32>, tensor<?x?x8xf32>
}

// -----

// Tests that a slice's step near INT64_MAX keeps one element, in refinement
// and in folding (the count does not overflow).

// CHECK-LABEL: func.func @slice_huge_step
//   CHECK-DAG: kiln.slice {{.*}} -> tensor<1xf32>
//   CHECK-DAG: kiln.constant dense<7> : tensor<1xi64>
func.func @slice_huge_step(%x: tensor<5xf32>) -> (tensor<?xf32>, tensor<?xi64>) {
  %c0 = kiln.constant dense<0> : tensor<1xi64>
  %c5 = kiln.constant dense<5> : tensor<1xi64>
  %big = kiln.constant dense<9223372036854775807> : tensor<1xi64>
  %s = kiln.slice %x[%c0 : %c5 : %big] {axes = array<i64: 0>} : (tensor<5xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?xf32>
  %v = kiln.constant dense<[7, 8, 9]> : tensor<3xi64>
  %t = kiln.slice %v[%c0 : %c5 : %big] {axes = array<i64: 0>} : (tensor<3xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?xi64>
  return %s, %t : tensor<?xf32>, tensor<?xi64>
}

// -----

// Tests torch's computed split of a fused QKV: gather(shape_of(x), [-1])
// with a one-element index becomes the static last dim, and a reshape to
// [B, T, -1, 48] of x [B, T, 192] infers 4 heads, since B and T are x's own
// dims and cancel. Expand's where(shape == -1, 1, shape) with computed
// entries leaves only those entries unknown: the -1 it replaces still
// makes the head dim 1.

// CHECK-LABEL: func.func @computed_split_sizes
//  CHECK-SAME: (%[[X:.+]]: tensor<?x?x192xf32>, %[[M:.+]]: tensor<?x1x?x?xi1>, %[[L:.+]]: tensor<i64>)
//       CHECK: %[[LAST:.+]] = kiln.constant dense<48> : tensor<1xi64>
//       CHECK: kiln.reshape %[[X]], %{{.+}} : (tensor<?x?x192xf32>, tensor<4xi64>) -> tensor<?x?x4x48xf32>
//       CHECK: kiln.expand %[[M]], %{{.+}} : (tensor<?x1x?x?xi1>, tensor<4xi64>) -> tensor<?x1x?x?xi1>
//       CHECK: return %{{.+}}, %[[LAST]]
func.func @computed_split_sizes(%x: tensor<?x?x192xf32>, %m: tensor<?x1x?x?xi1>, %l: tensor<i64>)
    -> (tensor<?x?x?x?xf32>, tensor<1xi64>, tensor<?x?x?x?xi1>) {
  %b = kiln.dim %x {index = 0 : i64} : tensor<?x?x192xf32> -> tensor<i64>
  %t = kiln.dim %x {index = 1 : i64} : tensor<?x?x192xf32> -> tensor<i64>
  %bu = kiln.unsqueeze %b {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %tu = kiln.unsqueeze %t {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %m1 = kiln.constant dense<-1> : tensor<1xi64>
  %c48 = kiln.constant dense<48> : tensor<1xi64>
  %shape = kiln.concat %bu, %tu, %m1, %c48 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  %r = kiln.reshape %x, %shape : (tensor<?x?x192xf32>, tensor<4xi64>) -> tensor<?x?x?x?xf32>
  %s = kiln.shape_of %r : tensor<?x?x?x?xf32> -> tensor<4xi64>
  %last = kiln.gather %s[%m1] {axis = 0 : i64} : (tensor<4xi64>, tensor<1xi64>) -> tensor<1xi64>
  %lu = kiln.unsqueeze %l {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %requested = kiln.concat %bu, %m1, %lu, %lu {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  %minus = kiln.constant dense<-1> : tensor<4xi64>
  %ones = kiln.constant dense<1> : tensor<4xi64>
  %is = kiln.compare eq, %requested, %minus : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi1>
  %eshape = kiln.where %is, %ones, %requested : (tensor<4xi1>, tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  %e = kiln.expand %m, %eshape : (tensor<?x1x?x?xi1>, tensor<4xi64>) -> tensor<?x?x?x?xi1>
  return %r, %last, %e : tensor<?x?x?x?xf32>, tensor<1xi64>, tensor<?x?x?x?xi1>
}

// -----

// Tests that unsigned values fold through data movement, which keeps their
// bits, but not through arithmetic, comparisons or casts, which this pass
// would compute as signed: 200 > 1 holds for ui8, not for i8.

// CHECK-LABEL: func.func @unsigned_not_computed
//   CHECK-DAG: %[[X:.+]] = kiln.constant dense<[200, 1]> : tensor<2xui8>
//   CHECK-DAG: %[[T:.+]] = kiln.constant dense<{{\[}}[200], [1]]> : tensor<2x1xui8>
//   CHECK-DAG: %[[Y:.+]] = kiln.constant dense<[1, 200]> : tensor<2xui8>
//       CHECK: %[[GT:.+]] = kiln.compare gt, %[[X]], %[[Y]]
//       CHECK: %[[F:.+]] = kiln.cast %[[X]] : tensor<2xui8> to tensor<2xf32>
//       CHECK: %[[D:.+]] = kiln.div %[[X]], %[[Y]]
//       CHECK: return %[[T]], %[[GT]], %[[F]], %[[D]]
func.func @unsigned_not_computed() -> (tensor<2x1xui8>, tensor<2xi1>, tensor<2xf32>, tensor<2xui8>) {
  %x = kiln.constant dense<[200, 1]> : tensor<2xui8>
  %y = kiln.constant dense<[1, 200]> : tensor<2xui8>
  %shape = kiln.constant dense<[2, 1]> : tensor<2xi64>
  %t = kiln.reshape %x, %shape : (tensor<2xui8>, tensor<2xi64>) -> tensor<2x1xui8>
  %gt = kiln.compare gt, %x, %y : (tensor<2xui8>, tensor<2xui8>) -> tensor<2xi1>
  %f = kiln.cast %x : tensor<2xui8> to tensor<2xf32>
  %d = kiln.div %x, %y : (tensor<2xui8>, tensor<2xui8>) -> tensor<2xui8>
  return %t, %gt, %f, %d : tensor<2x1xui8>, tensor<2xi1>, tensor<2xf32>, tensor<2xui8>
}

// -----

// Tests that a reshape to a shape spelling the input's own dims in order
// (Hugging Face's input_ids.view(-1, T)) is the input, and that one whose
// entries name the dims out of order is not.

// CHECK-LABEL: func.func @identity_reshape
//  CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<?x?xi64>)
//       CHECK: %[[SWAPPED:.+]] = kiln.reshape %[[X]]
//       CHECK: return %[[X]], %[[SWAPPED]]
func.func @identity_reshape(%x: tensor<?x?xi64>) -> (tensor<?x?xi64>, tensor<?x?xi64>) {
  %t = kiln.dim %x {index = 1 : i64} : tensor<?x?xi64> -> tensor<i64>
  %tu = kiln.unsqueeze %t {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %m1 = kiln.constant dense<-1> : tensor<1xi64>
  %shape = kiln.concat %m1, %tu {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
  %same = kiln.reshape %x, %shape : (tensor<?x?xi64>, tensor<2xi64>) -> tensor<?x?xi64>
  %swapped_shape = kiln.concat %tu, %m1 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
  %swapped = kiln.reshape %x, %swapped_shape : (tensor<?x?xi64>, tensor<2xi64>) -> tensor<?x?xi64>
  return %same, %swapped : tensor<?x?xi64>, tensor<?x?xi64>
}

// -----

// Tests that a reshape's -1 becomes the input dim it stands for when the
// other entries name the input's other dims (here read from the tensor
// before the product, whose rows the input's are) and constants that the
// static dims left over match: [B, T, 64] to [B, -1, 4, 16] asks for T. To
// [B, T, -1, 16] it asks for 4, which the result type then says. With two
// dynamic dims left over ([-1, 64]) the -1 stays.

// CHECK-LABEL: func.func @inferred_entry
//  CHECK-SAME: (%[[H:[a-zA-Z0-9_]+]]: tensor<?x?x64xf32>, %[[W:[a-zA-Z0-9_]+]]: tensor<64x64xf32>)
//       CHECK: %[[FLAT:.+]] = kiln.constant dense<[-1, 64]> : tensor<2xi64>
//       CHECK: %[[Y:.+]] = kiln.matmul %[[H]], %[[W]]
//   CHECK-DAG: %[[B:.+]] = kiln.dim %[[H]] {index = 0 : i64}
//   CHECK-DAG: %[[T:.+]] = kiln.dim %[[Y]] {index = 1 : i64}
//   CHECK-DAG: %[[BU:.+]] = kiln.unsqueeze %[[B]]
//   CHECK-DAG: %[[TU:.+]] = kiln.unsqueeze %[[T]]
//       CHECK: %[[SHAPE:.+]] = kiln.concat %[[BU]], %[[TU]], %{{.+}}, %{{.+}} {axis = 0 : i64}
//       CHECK: kiln.reshape %[[Y]], %[[SHAPE]] : (tensor<?x?x64xf32>, tensor<4xi64>) -> tensor<?x?x4x16xf32>
//       CHECK: kiln.reshape %[[Y]], %{{.+}} : (tensor<?x?x64xf32>, tensor<4xi64>) -> tensor<?x?x4x16xf32>
//       CHECK: kiln.reshape %[[Y]], %[[FLAT]]
func.func @inferred_entry(%h: tensor<?x?x64xf32>, %w: tensor<64x64xf32>)
    -> (tensor<?x?x4x16xf32>, tensor<?x?x?x16xf32>, tensor<?x64xf32>) {
  %y = kiln.matmul %h, %w : (tensor<?x?x64xf32>, tensor<64x64xf32>) -> tensor<?x?x64xf32>
  %b = kiln.dim %h {index = 0 : i64} : tensor<?x?x64xf32> -> tensor<i64>
  %t = kiln.dim %h {index = 1 : i64} : tensor<?x?x64xf32> -> tensor<i64>
  %bu = kiln.unsqueeze %b {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %tu = kiln.unsqueeze %t {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %m1 = kiln.constant dense<-1> : tensor<1xi64>
  %c4 = kiln.constant dense<4> : tensor<1xi64>
  %c16 = kiln.constant dense<16> : tensor<1xi64>
  %heads = kiln.concat %bu, %m1, %c4, %c16 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  %split = kiln.reshape %y, %heads : (tensor<?x?x64xf32>, tensor<4xi64>) -> tensor<?x?x4x16xf32>
  %count = kiln.concat %bu, %tu, %m1, %c16 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  %counted = kiln.reshape %y, %count : (tensor<?x?x64xf32>, tensor<4xi64>) -> tensor<?x?x?x16xf32>
  %flat_shape = kiln.constant dense<[-1, 64]> : tensor<2xi64>
  %flat = kiln.reshape %y, %flat_shape : (tensor<?x?x64xf32>, tensor<2xi64>) -> tensor<?x64xf32>
  return %split, %counted, %flat : tensor<?x?x4x16xf32>, tensor<?x?x?x16xf32>, tensor<?x64xf32>
}

// -----

// Tests that a slice of shape_of with constant bounds (the dynamo exporter's
// x.shape[0:1]) becomes the dim it picks, and one with a computed bound
// stays.

// CHECK-LABEL: func.func @shape_slice
//  CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<?x?xi64>, %[[END:[a-zA-Z0-9_]+]]: tensor<1xi64>)
//       CHECK: %[[B:.+]] = kiln.dim %[[X]] {index = 0 : i64}
//       CHECK: %[[BU:.+]] = kiln.unsqueeze %[[B]] {axes = array<i64: 0>}
//       CHECK: %[[COMPUTED:.+]] = kiln.slice %{{.+}}[%{{.+}} : %[[END]] : %{{.+}}]
//       CHECK: return %[[BU]], %[[COMPUTED]]
func.func @shape_slice(%x: tensor<?x?xi64>, %end: tensor<1xi64>) -> (tensor<1xi64>, tensor<?xi64>) {
  %s = kiln.shape_of %x : tensor<?x?xi64> -> tensor<2xi64>
  %c0 = kiln.constant dense<0> : tensor<1xi64>
  %c1 = kiln.constant dense<1> : tensor<1xi64>
  %first = kiln.slice %s[%c0 : %c1 : %c1] {axes = array<i64: 0>} : (tensor<2xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %some = kiln.slice %s[%c0 : %end : %c1] {axes = array<i64: 0>} : (tensor<2xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?xi64>
  return %first, %some : tensor<1xi64>, tensor<?xi64>
}

// -----

// Tests that a multiple of a dim is a known entry that names the dim:
// [B·4, -1, 16] of [B, 4, T, 16] asks for T (heads folded into the batch,
// as BLOOM's reshape(batch * num_heads, -1, head_dim) writes it), and
// [B, 4, -1, 16] of that [B·4, T, 16] asks for T again (the heads unfolded:
// B and 4 account for B·4). [B·3, -1, 16] leaves 4·16 / (3·16) of T, not a
// whole number: its -1 stays.

// CHECK-LABEL: func.func @folded_heads_entries
//  CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<?x4x?x16xf32>)
//       CHECK: %[[M1:.+]] = kiln.constant dense<-1> : tensor<1xi64>
//       CHECK: %[[B:.+]] = kiln.dim %[[X]] {index = 0 : i64}
//       CHECK: %[[BH:.+]] = kiln.mul %{{.+}}, %{{.+}} : (tensor<i64>, tensor<i64>) -> tensor<i64>
//       CHECK: %[[BHU:.+]] = kiln.unsqueeze %[[BH]]
//       CHECK: %[[T:.+]] = kiln.dim %[[X]] {index = 2 : i64}
//       CHECK: %[[TU:.+]] = kiln.unsqueeze %[[T]]
//       CHECK: %[[SHAPE:.+]] = kiln.concat %[[BHU]], %[[TU]], %{{.+}} {axis = 0 : i64}
//       CHECK: %[[FOLDED:.+]] = kiln.reshape %[[X]], %[[SHAPE]] : (tensor<?x4x?x16xf32>, tensor<3xi64>) -> tensor<?x?x16xf32>
//       CHECK: %[[FT:.+]] = kiln.dim %[[FOLDED]] {index = 1 : i64}
//       CHECK: %[[FTU:.+]] = kiln.unsqueeze %[[FT]]
//       CHECK: %[[UNSHAPE:.+]] = kiln.concat %{{.+}}, %{{.+}}, %[[FTU]], %{{.+}} {axis = 0 : i64}
//       CHECK: kiln.reshape %[[FOLDED]], %[[UNSHAPE]] : (tensor<?x?x16xf32>, tensor<4xi64>) -> tensor<?x4x?x16xf32>
//       CHECK: %[[THIRDS:.+]] = kiln.concat %{{.+}}, %[[M1]], %{{.+}} {axis = 0 : i64}
//       CHECK: kiln.reshape %[[X]], %[[THIRDS]]
func.func @folded_heads_entries(%x: tensor<?x4x?x16xf32>)
    -> (tensor<?x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x?x16xf32>) {
  %b = kiln.dim %x {index = 0 : i64} : tensor<?x4x?x16xf32> -> tensor<i64>
  %four = kiln.constant dense<4> : tensor<i64>
  %bh = kiln.mul %b, %four : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %bhu = kiln.unsqueeze %bh {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %m1 = kiln.constant dense<-1> : tensor<1xi64>
  %c16 = kiln.constant dense<16> : tensor<1xi64>
  %shape = kiln.concat %bhu, %m1, %c16 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  %folded = kiln.reshape %x, %shape : (tensor<?x4x?x16xf32>, tensor<3xi64>) -> tensor<?x?x16xf32>
  %bu = kiln.unsqueeze %b {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %c4 = kiln.constant dense<4> : tensor<1xi64>
  %unshape = kiln.concat %bu, %c4, %m1, %c16 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  %unfolded = kiln.reshape %folded, %unshape : (tensor<?x?x16xf32>, tensor<4xi64>) -> tensor<?x4x?x16xf32>
  %three = kiln.constant dense<3> : tensor<i64>
  %b3 = kiln.mul %b, %three : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %b3u = kiln.unsqueeze %b3 {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
  %thirds_shape = kiln.concat %b3u, %m1, %c16 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  %thirds = kiln.reshape %x, %thirds_shape : (tensor<?x4x?x16xf32>, tensor<3xi64>) -> tensor<?x?x16xf32>
  return %folded, %unfolded, %thirds : tensor<?x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x?x16xf32>
}
