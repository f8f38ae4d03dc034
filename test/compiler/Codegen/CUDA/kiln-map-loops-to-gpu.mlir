// RUN: kiln-opt %s --split-input-file --kiln-map-loops-to-gpu | FileCheck %s
// RUN: kiln-opt %s --split-input-file --kiln-map-loops-to-gpu=block-size=128 | FileCheck %s --check-prefix=BLOCK128

// A 2-D elementwise op: its loops collapse into one dim of %m * 64
// iterations, cut into blocks of 256 threads with a guard for the last.

#map = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @elementwise
// CHECK-SAME: (%[[X:.*]]: memref<?x64xf32>, %[[Y:.*]]: memref<?x64xf32>)
// CHECK: %[[M:.*]] = memref.dim %[[X]]
// CHECK: %[[C64:.*]] = arith.constant 64 : index
// CHECK: %[[M1:.*]] = arith.muli %{{.*}}, %[[M]]
// CHECK: %[[MN:.*]] = arith.muli %[[M1]], %[[C64]]
// CHECK: %[[C256:.*]] = arith.constant 256 : index
// CHECK: %[[STEP:.*]] = arith.muli %{{.*}}, %[[C256]]
// CHECK: scf.parallel (%[[BLOCK:.*]]) = (%{{.*}}) to (%[[MN]]) step (%[[STEP]])
// CHECK:   scf.parallel (%[[THREAD:.*]]) = (%{{.*}}) to (%[[STEP]])
// CHECK:     %[[I:.*]] = arith.addi %[[THREAD]], %[[BLOCK]]
// CHECK:     %[[IN:.*]] = arith.cmpi ult, %{{.*}}, %[[MN]]
// CHECK:     %[[GUARD:.*]] = arith.andi %{{.*}}, %[[IN]]
// CHECK:     scf.if %[[GUARD]]
// CHECK-DAG:   %[[COL:.*]] = arith.remsi %[[I]], %[[C64]]
// CHECK-DAG:   %[[ROW:.*]] = arith.divsi %[[I]], %[[C64]]
// CHECK:       memref.load %[[X]]
// CHECK:       math.exp
// CHECK:       memref.store {{.*}}, %[[Y]]
// CHECK:   } {mapping = [#gpu.loop_dim_map<processor = thread_x, map = (d0) -> (d0), bound = (d0) -> (d0)>]}
// CHECK: } {mapping = [#gpu.loop_dim_map<processor = block_x, map = (d0) -> (d0), bound = (d0) -> (d0)>]}
// CHECK-NOT: linalg.
// BLOCK128-LABEL: func.func @elementwise
// BLOCK128: arith.constant 128 : index
func.func @elementwise(%x: memref<?x64xf32>, %y: memref<?x64xf32>) {
  linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<?x64xf32>) outs(%y : memref<?x64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %e = math.exp %in : f32
    linalg.yield %e : f32
  }
  return
}

// -----

// A row sum: the parallel dim maps onto threads, the reduction stays a
// sequential loop in each thread.

#in = affine_map<(d0, d1) -> (d0, d1)>
#out = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @row_sum
// CHECK: scf.parallel
// CHECK:   scf.parallel
// CHECK:     scf.if
// CHECK:       scf.for
// CHECK:         arith.addf
// CHECK:   } {mapping = [#gpu.loop_dim_map<processor = thread_x
// CHECK: } {mapping = [#gpu.loop_dim_map<processor = block_x
func.func @row_sum(%x: memref<?x64xf32>, %y: memref<?xf32>) {
  linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<?x64xf32>) outs(%y : memref<?xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A sum over the middle dim: the generic's parallel dims go first, so both
// map onto threads (3 * 2 of them) and each thread sums its own output.

#x3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#y2 = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-LABEL: func.func @middle_sum
// CHECK: %[[THREE:.*]] = arith.muli %{{.*}}, %c3
// CHECK: %[[SIX:.*]] = arith.muli %[[THREE]], %c2
// CHECK: scf.parallel (%{{.*}}) = (%{{.*}}) to (%[[SIX]])
// CHECK:   scf.parallel
// CHECK:     scf.if
// CHECK:       scf.for
// CHECK:         memref.load %{{.*}} : memref<3x2x2xf32>
// CHECK-NOT: scf.parallel
// CHECK:   } {mapping = [#gpu.loop_dim_map<processor = thread_x
func.func @middle_sum(%x: memref<3x2x2xf32>, %y: memref<3x2xf32>) {
  linalg.generic {indexing_maps = [#x3, #y2], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%x : memref<3x2x2xf32>) outs(%y : memref<3x2xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A reduction of everything to one value: a loop of one iteration, whose
// thread sums it all.

#all = affine_map<(d0) -> (d0)>
#one = affine_map<(d0) -> ()>
// CHECK-LABEL: func.func @total
// CHECK: scf.parallel
// CHECK:   scf.parallel
// CHECK:     scf.if
// CHECK:       scf.for
// CHECK:         arith.addf
func.func @total(%x: memref<?xf32>, %y: memref<f32>) {
  linalg.generic {indexing_maps = [#all, #one], iterator_types = ["reduction"]}
      ins(%x : memref<?xf32>) outs(%y : memref<f32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// An op on rank-0 buffers gets a loop of one iteration, so that it too runs
// in a kernel rather than on the host.

#scalar = affine_map<() -> ()>
// CHECK-LABEL: func.func @scalar
// CHECK: scf.parallel
// CHECK:   scf.parallel
// CHECK:     scf.if
// CHECK:       memref.load %{{.*}}[] : memref<f32>
// CHECK:       arith.mulf
// CHECK:       memref.store %{{.*}}, %{{.*}}[] : memref<f32>
// CHECK:   } {mapping = [#gpu.loop_dim_map<processor = thread_x
func.func @scalar(%x: memref<f32>, %y: memref<f32>) {
  linalg.generic {indexing_maps = [#scalar, #scalar], iterator_types = []}
      ins(%x : memref<f32>) outs(%y : memref<f32>) {
  ^bb0(%in: f32, %out: f32):
    %d = arith.mulf %in, %in : f32
    linalg.yield %d : f32
  }
  return
}

// -----

// A constant global is read inside the loop that uses it, so that its
// kernel reads the copy in its GPU module; a memref.copy is a loop too.

memref.global "private" constant @table : memref<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]>
// CHECK-LABEL: func.func @global_and_copy
// CHECK-NOT: memref.get_global
// CHECK: scf.parallel
// CHECK:   scf.parallel
// CHECK:     memref.get_global @table
// CHECK: scf.parallel
// CHECK:   scf.parallel
// CHECK:     scf.if
// CHECK:       memref.load
// CHECK:       memref.store
// CHECK-NOT: memref.copy
func.func @global_and_copy(%y: memref<4xf32>, %z: memref<4xf32>) {
  %table = memref.get_global @table : memref<4xf32>
  linalg.copy ins(%table : memref<4xf32>) outs(%y : memref<4xf32>)
  memref.copy %y, %z : memref<4xf32> to memref<4xf32>
  return
}

// -----

// A scatter's sequential loop, which writes where its indices say: it runs
// whole in one thread. A loop that touches no buffer stays on the host.

// CHECK-LABEL: func.func @scatter
// CHECK: scf.for
// CHECK-NEXT: arith.addi
// CHECK: scf.parallel
// CHECK:   scf.parallel
// CHECK:     scf.if
// CHECK:       scf.for
// CHECK:         memref.load %{{.*}} : memref<2xi64>
// CHECK:         memref.store %{{.*}} : memref<5xf32>
func.func @scatter(%indices: memref<2xi64>, %updates: memref<2xf32>, %data: memref<5xf32>, %n: index) -> index {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %sum = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %c0) -> index {
    %next = arith.addi %acc, %i : index
    scf.yield %next : index
  }
  scf.for %i = %c0 to %c2 step %c1 {
    %index = memref.load %indices[%i] : memref<2xi64>
    %at = arith.index_cast %index : i64 to index
    %update = memref.load %updates[%i] : memref<2xf32>
    memref.store %update, %data[%at] : memref<5xf32>
  }
  return %sum : index
}

// -----

// Nothing to map: a function without linalg ops or loops is unchanged.

// CHECK-LABEL: func.func @nothing
// CHECK-NEXT: arith.constant 0 : index
// CHECK-NEXT: memref.dim
// CHECK-NEXT: return
func.func @nothing(%x: memref<?xf32>) -> index {
  %c0 = arith.constant 0 : index
  %n = memref.dim %x, %c0 : memref<?xf32>
  return %n : index
}
