// RUN: kiln-opt %s --split-input-file --kiln-duplicate-elementwise-producers | FileCheck %s
// RUN: kiln-opt %s --split-input-file --kiln-duplicate-elementwise-producers --linalg-fuse-elementwise-ops | FileCheck %s --check-prefix=FUSED

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// Tests that the input of a norm, read by a reduction and by the centering,
// gets one copy per consumer, and that the centered values, read by the
// variance's reduction and by the scaling, do too: consumers first, so the
// sum behind the centering is copied for both of its copies (three sums in
// all). After elementwise fusion no loop writes the sum or the centered
// values: three loops remain, each computing them itself.

// CHECK-LABEL: func.func @norm_chain
//  CHECK-SAME: (%[[A:.+]]: tensor<4x8xf32>, %[[B:.+]]: tensor<4x8xf32>, %[[MEAN:.+]]: tensor<4xf32>, %[[INV:.+]]: tensor<4xf32>)
//       CHECK: %[[X0:.+]] = linalg.generic {{.*}} ins(%[[A]], %[[B]] : tensor<4x8xf32>, tensor<4x8xf32>)
//       CHECK: %[[X1:.+]] = linalg.generic {{.*}} ins(%[[A]], %[[B]] : tensor<4x8xf32>, tensor<4x8xf32>)
//       CHECK: %[[X2:.+]] = linalg.generic {{.*}} ins(%[[A]], %[[B]] : tensor<4x8xf32>, tensor<4x8xf32>)
//       CHECK: %[[SUM:.+]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[X1]] : tensor<4x8xf32>)
//       CHECK: %[[C0:.+]] = linalg.generic {{.*}} ins(%[[X2]], %[[MEAN]] : tensor<4x8xf32>, tensor<4xf32>)
//       CHECK: %[[C1:.+]] = linalg.generic {{.*}} ins(%[[X0]], %[[MEAN]] : tensor<4x8xf32>, tensor<4xf32>)
//       CHECK: %[[VAR:.+]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[C0]], %[[C0]] : tensor<4x8xf32>, tensor<4x8xf32>)
//       CHECK: %[[Y:.+]] = linalg.generic {{.*}} ins(%[[C1]], %[[INV]] : tensor<4x8xf32>, tensor<4xf32>)
//       CHECK: return %[[SUM]], %[[VAR]], %[[Y]]

// FUSED-LABEL: func.func @norm_chain
// FUSED-COUNT-3: linalg.generic
//   FUSED-NOT: linalg.generic
//       FUSED: return
func.func @norm_chain(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>, %mean: tensor<4xf32>, %inv: tensor<4xf32>)
    -> (tensor<4xf32>, tensor<4xf32>, tensor<4x8xf32>) {
  %e = tensor.empty() : tensor<4x8xf32>
  %x = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a, %b : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %s = arith.addf %p, %q : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<4xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4xf32>) -> tensor<4xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x8xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %r = arith.addf %v, %acc : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %c = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %mean : tensor<4x8xf32>, tensor<4xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%v: f32, %m: f32, %o: f32):
    %d = arith.subf %v, %m : f32
    linalg.yield %d : f32
  } -> tensor<4x8xf32>
  %var = linalg.generic {indexing_maps = [#id, #id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%c, %c : tensor<4x8xf32>, tensor<4x8xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%v: f32, %w: f32, %acc: f32):
    %sq = arith.mulf %v, %w : f32
    %r = arith.addf %sq, %acc : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %y = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c, %inv : tensor<4x8xf32>, tensor<4xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%v: f32, %i: f32, %o: f32):
    %m = arith.mulf %v, %i : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>
  return %sum, %var, %y : tensor<4xf32>, tensor<4xf32>, tensor<4x8xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// Tests that producers are not copied where that would add work without
// removing their buffer, or cost more than the buffer: an exp (a
// polynomial per element), a division, a value the function also returns,
// and a value with five consumers (more than max-consumers).

// CHECK-LABEL: func.func @no_copies
//       CHECK: math.exp
//   CHECK-NOT: math.exp
//       CHECK: arith.divf
//   CHECK-NOT: arith.divf
//       CHECK: arith.maximumf
//   CHECK-NOT: arith.maximumf
//       CHECK: arith.negf
//   CHECK-NOT: arith.negf
//       CHECK: return
func.func @no_copies(%a: tensor<4x8xf32>, %mean: tensor<4xf32>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>,
        tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>,
        tensor<4x8xf32>, tensor<4x8xf32>) {
  %e = tensor.empty() : tensor<4x8xf32>
  %exp = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%p: f32, %o: f32):
    %s = math.exp %p : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %div = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%p: f32, %o: f32):
    %s = arith.divf %p, %p : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %returned = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%p: f32, %o: f32):
    %s = arith.maximumf %p, %p : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %wide = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%p: f32, %o: f32):
    %s = arith.negf %p : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %u0 = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%exp, %mean : tensor<4x8xf32>, tensor<4xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%v: f32, %m: f32, %o: f32):
    %d = arith.subf %v, %m : f32
    linalg.yield %d : f32
  } -> tensor<4x8xf32>
  %u1 = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%exp, %mean : tensor<4x8xf32>, tensor<4xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%v: f32, %m: f32, %o: f32):
    %d = arith.subf %m, %v : f32
    linalg.yield %d : f32
  } -> tensor<4x8xf32>
  %v0 = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%div, %mean : tensor<4x8xf32>, tensor<4xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%v: f32, %m: f32, %o: f32):
    %d = arith.subf %v, %m : f32
    linalg.yield %d : f32
  } -> tensor<4x8xf32>
  %v1 = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%div, %mean : tensor<4x8xf32>, tensor<4xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%v: f32, %m: f32, %o: f32):
    %d = arith.subf %m, %v : f32
    linalg.yield %d : f32
  } -> tensor<4x8xf32>
  %r0 = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%returned, %mean : tensor<4x8xf32>, tensor<4xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%v: f32, %m: f32, %o: f32):
    %d = arith.subf %v, %m : f32
    linalg.yield %d : f32
  } -> tensor<4x8xf32>
  %w0 = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%wide, %mean : tensor<4x8xf32>, tensor<4xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%v: f32, %m: f32, %o: f32):
    %d = arith.subf %v, %m : f32
    linalg.yield %d : f32
  } -> tensor<4x8xf32>
  %w1 = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%wide, %mean : tensor<4x8xf32>, tensor<4xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%v: f32, %m: f32, %o: f32):
    %d = arith.subf %m, %v : f32
    linalg.yield %d : f32
  } -> tensor<4x8xf32>
  %w2 = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%wide, %mean : tensor<4x8xf32>, tensor<4xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%v: f32, %m: f32, %o: f32):
    %d = arith.addf %v, %m : f32
    linalg.yield %d : f32
  } -> tensor<4x8xf32>
  %w3 = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%wide, %mean : tensor<4x8xf32>, tensor<4xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%v: f32, %m: f32, %o: f32):
    %d = arith.mulf %v, %m : f32
    linalg.yield %d : f32
  } -> tensor<4x8xf32>
  %w4 = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%wide, %mean : tensor<4x8xf32>, tensor<4xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%v: f32, %m: f32, %o: f32):
    %d = arith.minimumf %v, %m : f32
    linalg.yield %d : f32
  } -> tensor<4x8xf32>
  return %u0, %u1, %v0, %v1, %returned, %r0, %w0, %w1, %w2, %w3, %w4, %a
      : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>,
        tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>,
        tensor<4x8xf32>, tensor<4x8xf32>
}
