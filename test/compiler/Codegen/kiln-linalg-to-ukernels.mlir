// RUN: kiln-opt %s --split-input-file --kiln-linalg-to-ukernels | FileCheck %s

// The call is kiln_ukernel_sgemm(batch, m, n, k, a, a_batch_stride, lda, b,
// b_batch_stride, ldb, transpose_b, c, c_batch_stride, ldc, accumulate). The
// pass creates four i64 constants right before the call, in this order: 0
// and 1 (the batch strides and the batch of an unbatched product),
// transpose_b and accumulate. The checks match all four, so that the one
// they take for accumulate is the one on the line before the call.

//===----------------------------------------------------------------------===//
// Overwriting a fresh, zero-filled C (accumulate = 0)
//===----------------------------------------------------------------------===//

// Tests that a linalg.matmul on f32 memrefs into a fresh allocation that
// only a zero fill used before becomes one call to the SGEMM microkernel
// with accumulate = 0, where the pointers are the aligned pointers plus
// offset * 4 bytes, m and n are C's sizes, k is A's columns, the leading
// dimensions are the row strides, the batch is 1 and the batch strides 0.
// The fill and the matmul are erased, a use of C after the matmul (the
// return) does not matter, and the microkernel is declared once.

// CHECK-LABEL: func.func @matmul(
// CHECK-SAME: %[[A:[a-zA-Z0-9_]+]]: memref<?x64xf32>, %[[B:[a-zA-Z0-9_]+]]: memref<64x256xf32>)
// CHECK: %[[C:.+]] = memref.alloc(%{{.+}}) : memref<?x256xf32>
// CHECK-NOT: linalg.fill
// CHECK: %{{.+}}, %[[A_OFF:.+]], %[[A_SIZES:.+]]:2, %[[A_STRIDES:.+]]:2 = memref.extract_strided_metadata %[[A]] : memref<?x64xf32>
// CHECK: %[[A_BASE:.+]] = memref.extract_aligned_pointer_as_index %[[A]] : memref<?x64xf32> -> index
// CHECK: %[[A_BASE_I64:.+]] = arith.index_cast %[[A_BASE]] : index to i64
// CHECK: %[[FOUR:.+]] = arith.constant 4 : i64
// CHECK: %[[A_OFF_I64:.+]] = arith.index_cast %[[A_OFF]] : index to i64
// CHECK: %[[A_OFF_BYTES:.+]] = arith.muli %[[A_OFF_I64]], %[[FOUR]] : i64
// CHECK: %[[A_ADDR:.+]] = arith.addi %[[A_BASE_I64]], %[[A_OFF_BYTES]] : i64
// CHECK: %[[A_PTR:.+]] = llvm.inttoptr %[[A_ADDR]] : i64 to !llvm.ptr
// CHECK: %[[A_COLS:.+]] = arith.index_cast %[[A_SIZES]]#1 : index to i64
// CHECK: %[[LDA:.+]] = arith.index_cast %[[A_STRIDES]]#0 : index to i64
// CHECK: %{{.+}}, %{{.+}}, %{{.+}}:2, %[[B_STRIDES:.+]]:2 = memref.extract_strided_metadata %[[B]] : memref<64x256xf32>
// CHECK: %[[B_PTR:.+]] = llvm.inttoptr %{{.+}} : i64 to !llvm.ptr
// CHECK: %[[LDB:.+]] = arith.index_cast %[[B_STRIDES]]#0 : index to i64
// CHECK: %{{.+}}, %{{.+}}, %[[C_SIZES:.+]]:2, %[[C_STRIDES:.+]]:2 = memref.extract_strided_metadata %[[C]] : memref<?x256xf32>
// CHECK: %[[C_PTR:.+]] = llvm.inttoptr %{{.+}} : i64 to !llvm.ptr
// CHECK: %[[M:.+]] = arith.index_cast %[[C_SIZES]]#0 : index to i64
// CHECK: %[[N:.+]] = arith.index_cast %[[C_SIZES]]#1 : index to i64
// CHECK: %[[LDC:.+]] = arith.index_cast %[[C_STRIDES]]#0 : index to i64
// CHECK: %[[ZERO:.+]] = arith.constant 0 : i64
// CHECK-NEXT: %[[ONE:.+]] = arith.constant 1 : i64
// CHECK-NEXT: %[[NO_TRANSPOSE:.+]] = arith.constant 0 : i64
// CHECK-NEXT: %[[OVERWRITE:.+]] = arith.constant 0 : i64
// CHECK-NEXT: call @kiln_ukernel_sgemm(%[[ONE]], %[[M]], %[[N]], %[[A_COLS]], %[[A_PTR]], %[[ZERO]], %[[LDA]], %[[B_PTR]], %[[ZERO]], %[[LDB]], %[[NO_TRANSPOSE]], %[[C_PTR]], %[[ZERO]], %[[LDC]], %[[OVERWRITE]])
// CHECK-SAME: : (i64, i64, i64, i64, !llvm.ptr, i64, i64, !llvm.ptr, i64, i64, i64, !llvm.ptr, i64, i64, i64) -> ()
// CHECK-NOT: linalg.matmul
// CHECK: return %[[C]]
// CHECK: func.func @second_matmul(
// CHECK: call @kiln_ukernel_sgemm
// CHECK: func.func private @kiln_ukernel_sgemm(i64, i64, i64, i64, !llvm.ptr, i64, i64, !llvm.ptr, i64, i64, i64, !llvm.ptr, i64, i64, i64){{$}}
// CHECK-NOT: func.func private @kiln_ukernel_sgemm
func.func @matmul(%a: memref<?x64xf32>, %b: memref<64x256xf32>) -> memref<?x256xf32> {
  %zero = arith.constant 0.0 : f32
  %i0 = arith.constant 0 : index
  %m = memref.dim %a, %i0 : memref<?x64xf32>
  %c = memref.alloc(%m) : memref<?x256xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<?x256xf32>)
  linalg.matmul ins(%a, %b : memref<?x64xf32>, memref<64x256xf32>) outs(%c : memref<?x256xf32>)
  return %c : memref<?x256xf32>
}

func.func @second_matmul(%a: memref<8x64xf32>, %b: memref<64x256xf32>) -> memref<8x256xf32> {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<8x256xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<8x256xf32>)
  linalg.matmul ins(%a, %b : memref<8x64xf32>, memref<64x256xf32>) outs(%c : memref<8x256xf32>)
  return %c : memref<8x256xf32>
}

// -----

// Tests that matmul_transpose_b passes transpose_b = 1 (n is still C's
// columns and ldb B's row stride), and that a negative zero fill counts as
// a zero fill.

// CHECK-LABEL: func.func @matmul_transpose_b(
// CHECK-NOT: linalg.fill
// CHECK: %{{.+}}, %{{.+}}, %[[A_SIZES:.+]]:2, %[[A_STRIDES:.+]]:2 = memref.extract_strided_metadata %{{.+}} : memref<8x64xf32>
// CHECK: %[[A_PTR:.+]] = llvm.inttoptr
// CHECK: %[[K:.+]] = arith.index_cast %[[A_SIZES]]#1 : index to i64
// CHECK: %[[LDA:.+]] = arith.index_cast %[[A_STRIDES]]#0 : index to i64
// CHECK: %{{.+}}, %{{.+}}, %{{.+}}:2, %[[B_STRIDES:.+]]:2 = memref.extract_strided_metadata %{{.+}} : memref<256x64xf32>
// CHECK: %[[B_PTR:.+]] = llvm.inttoptr
// CHECK: %[[LDB:.+]] = arith.index_cast %[[B_STRIDES]]#0 : index to i64
// CHECK: %{{.+}}, %{{.+}}, %[[C_SIZES:.+]]:2, %[[C_STRIDES:.+]]:2 = memref.extract_strided_metadata %{{.+}} : memref<8x256xf32>
// CHECK: %[[C_PTR:.+]] = llvm.inttoptr
// CHECK: %[[M:.+]] = arith.index_cast %[[C_SIZES]]#0 : index to i64
// CHECK: %[[N:.+]] = arith.index_cast %[[C_SIZES]]#1 : index to i64
// CHECK: %[[LDC:.+]] = arith.index_cast %[[C_STRIDES]]#0 : index to i64
// CHECK: %[[ZERO:.+]] = arith.constant 0 : i64
// CHECK-NEXT: %[[ONE:.+]] = arith.constant 1 : i64
// CHECK-NEXT: %[[TRANSPOSE:.+]] = arith.constant 1 : i64
// CHECK-NEXT: %[[OVERWRITE:.+]] = arith.constant 0 : i64
// CHECK-NEXT: call @kiln_ukernel_sgemm(%[[ONE]], %[[M]], %[[N]], %[[K]], %[[A_PTR]], %[[ZERO]], %[[LDA]], %[[B_PTR]], %[[ZERO]], %[[LDB]], %[[TRANSPOSE]], %[[C_PTR]], %[[ZERO]], %[[LDC]], %[[OVERWRITE]])
// CHECK-NOT: linalg.matmul_transpose_b
func.func @matmul_transpose_b(%a: memref<8x64xf32>, %b: memref<256x64xf32>) -> memref<8x256xf32> {
  %zero = arith.constant -0.0 : f32
  %c = memref.alloc() : memref<8x256xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<8x256xf32>)
  linalg.matmul_transpose_b ins(%a, %b : memref<8x64xf32>, memref<256x64xf32>) outs(%c : memref<8x256xf32>)
  return %c : memref<8x256xf32>
}

// -----

// Tests that batch_matmul passes C's batch size and every operand's batch
// stride, with the row dimension one further in: m, n from C's dimensions 1
// and 2, k from A's dimension 2, leading dimensions the strides of dimension
// 1. Strided layouts with a unit inner stride and an offset are accepted.

// CHECK-LABEL: func.func @batch_matmul(
// CHECK-NOT: linalg.fill
// CHECK: %{{.+}}, %{{.+}}, %[[A_SIZES:.+]]:3, %[[A_STRIDES:.+]]:3 = memref.extract_strided_metadata %{{.+}} : memref<4x?x16xf32>
// CHECK: %[[A_PTR:.+]] = llvm.inttoptr
// CHECK: %[[K:.+]] = arith.index_cast %[[A_SIZES]]#2 : index to i64
// CHECK: %[[A_BATCH:.+]] = arith.index_cast %[[A_STRIDES]]#0 : index to i64
// CHECK: %[[LDA:.+]] = arith.index_cast %[[A_STRIDES]]#1 : index to i64
// CHECK: %{{.+}}, %{{.+}}, %{{.+}}:3, %[[B_STRIDES:.+]]:3 = memref.extract_strided_metadata %{{.+}} : memref<4x16x?xf32, strided<[?, ?, 1], offset: ?>>
// CHECK: %[[B_PTR:.+]] = llvm.inttoptr
// CHECK: %[[B_BATCH:.+]] = arith.index_cast %[[B_STRIDES]]#0 : index to i64
// CHECK: %[[LDB:.+]] = arith.index_cast %[[B_STRIDES]]#1 : index to i64
// CHECK: %{{.+}}, %{{.+}}, %[[C_SIZES:.+]]:3, %[[C_STRIDES:.+]]:3 = memref.extract_strided_metadata %{{.+}} : memref<4x?x?xf32>
// CHECK: %[[C_PTR:.+]] = llvm.inttoptr
// CHECK: %[[BATCH:.+]] = arith.index_cast %[[C_SIZES]]#0 : index to i64
// CHECK: %[[M:.+]] = arith.index_cast %[[C_SIZES]]#1 : index to i64
// CHECK: %[[N:.+]] = arith.index_cast %[[C_SIZES]]#2 : index to i64
// CHECK: %[[C_BATCH:.+]] = arith.index_cast %[[C_STRIDES]]#0 : index to i64
// CHECK: %[[LDC:.+]] = arith.index_cast %[[C_STRIDES]]#1 : index to i64
// CHECK: arith.constant 0 : i64
// CHECK-NEXT: arith.constant 1 : i64
// CHECK-NEXT: %[[TRANSPOSE:.+]] = arith.constant 0 : i64
// CHECK-NEXT: %[[OVERWRITE:.+]] = arith.constant 0 : i64
// CHECK-NEXT: call @kiln_ukernel_sgemm(%[[BATCH]], %[[M]], %[[N]], %[[K]], %[[A_PTR]], %[[A_BATCH]], %[[LDA]], %[[B_PTR]], %[[B_BATCH]], %[[LDB]], %[[TRANSPOSE]], %[[C_PTR]], %[[C_BATCH]], %[[LDC]], %[[OVERWRITE]])
// CHECK-NOT: linalg.batch_matmul
func.func @batch_matmul(%a: memref<4x?x16xf32>, %b: memref<4x16x?xf32, strided<[?, ?, 1], offset: ?>>, %m: index, %n: index) -> memref<4x?x?xf32> {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc(%m, %n) : memref<4x?x?xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<4x?x?xf32>)
  linalg.batch_matmul ins(%a, %b : memref<4x?x16xf32>, memref<4x16x?xf32, strided<[?, ?, 1], offset: ?>>) outs(%c : memref<4x?x?xf32>)
  return %c : memref<4x?x?xf32>
}

// -----

// Tests that batch_matmul_transpose_b is batched with transpose_b = 1.

// CHECK-LABEL: func.func @batch_matmul_transpose_b(
// CHECK-NOT: linalg.fill
// CHECK: %{{.+}}, %{{.+}}, %[[A_SIZES:.+]]:3, %[[A_STRIDES:.+]]:3 = memref.extract_strided_metadata %{{.+}} : memref<8x?x16xf32>
// CHECK: %[[K:.+]] = arith.index_cast %[[A_SIZES]]#2 : index to i64
// CHECK: %[[A_BATCH:.+]] = arith.index_cast %[[A_STRIDES]]#0 : index to i64
// CHECK: %{{.+}}, %{{.+}}, %{{.+}}:3, %[[B_STRIDES:.+]]:3 = memref.extract_strided_metadata %{{.+}} : memref<8x?x16xf32>
// CHECK: %[[B_BATCH:.+]] = arith.index_cast %[[B_STRIDES]]#0 : index to i64
// CHECK: %[[LDB:.+]] = arith.index_cast %[[B_STRIDES]]#1 : index to i64
// CHECK: %{{.+}}, %{{.+}}, %[[C_SIZES:.+]]:3, %{{.+}}:3 = memref.extract_strided_metadata %{{.+}} : memref<8x?x?xf32>
// CHECK: %[[BATCH:.+]] = arith.index_cast %[[C_SIZES]]#0 : index to i64
// CHECK: arith.constant 0 : i64
// CHECK-NEXT: arith.constant 1 : i64
// CHECK-NEXT: %[[TRANSPOSE:.+]] = arith.constant 1 : i64
// CHECK-NEXT: %[[OVERWRITE:.+]] = arith.constant 0 : i64
// CHECK-NEXT: call @kiln_ukernel_sgemm(%[[BATCH]], %{{.+}}, %{{.+}}, %[[K]], %{{.+}}, %[[A_BATCH]], %{{.+}}, %{{.+}}, %[[B_BATCH]], %[[LDB]], %[[TRANSPOSE]], %{{.+}}, %{{.+}}, %{{.+}}, %[[OVERWRITE]])
// CHECK-NOT: linalg.batch_matmul_transpose_b
func.func @batch_matmul_transpose_b(%q: memref<8x?x16xf32>, %k: memref<8x?x16xf32>, %m: index, %n: index) -> memref<8x?x?xf32> {
  %zero = arith.constant 0.0 : f32
  %s = memref.alloc(%m, %n) : memref<8x?x?xf32>
  linalg.fill ins(%zero : f32) outs(%s : memref<8x?x?xf32>)
  linalg.batch_matmul_transpose_b ins(%q, %k : memref<8x?x16xf32>, memref<8x?x16xf32>) outs(%s : memref<8x?x?xf32>)
  return %s : memref<8x?x?xf32>
}

// -----

// Tests that ops between the fill and the matmul that do not touch the
// output buffer do not prevent overwriting, and that only the fill of the
// output is erased.

// CHECK-LABEL: func.func @unrelated_ops_between(
// CHECK-SAME: %{{.+}}: memref<4x8xf32>, %{{.+}}: memref<8x4xf32>, %[[OTHER:[a-zA-Z0-9_]+]]: memref<4xf32>)
// CHECK: %[[C:.+]] = memref.alloc() : memref<4x4xf32>
// CHECK-NOT: linalg.fill
// CHECK: linalg.fill ins(%{{.+}} : f32) outs(%[[OTHER]] : memref<4xf32>)
// CHECK-NOT: linalg.fill
// CHECK: arith.constant 0 : i64
// CHECK-NEXT: arith.constant 1 : i64
// CHECK-NEXT: arith.constant 0 : i64
// CHECK-NEXT: %[[OVERWRITE:.+]] = arith.constant 0 : i64
// CHECK-NEXT: call @kiln_ukernel_sgemm({{.+}}, %[[OVERWRITE]])
// CHECK-NOT: linalg.matmul
func.func @unrelated_ops_between(%a: memref<4x8xf32>, %b: memref<8x4xf32>, %other: memref<4xf32>) -> memref<4x4xf32> {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<4x4xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<4x4xf32>)
  linalg.fill ins(%zero : f32) outs(%other : memref<4xf32>)
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x4xf32>) outs(%c : memref<4x4xf32>)
  return %c : memref<4x4xf32>
}

// -----

// Tests that after a second matmul into the same buffer, the first one
// overwrites it (the zero fill goes) and the second one accumulates onto the
// first one's product: the first call's operands are uses of C before it.

// CHECK-LABEL: func.func @two_matmuls_into_one_buffer(
// CHECK: %[[C:.+]] = memref.alloc() : memref<4x4xf32>
// CHECK-NOT: linalg.fill
// CHECK: arith.constant 0 : i64
// CHECK-NEXT: arith.constant 1 : i64
// CHECK-NEXT: arith.constant 0 : i64
// CHECK-NEXT: %[[OVERWRITE:.+]] = arith.constant 0 : i64
// CHECK-NEXT: call @kiln_ukernel_sgemm({{.+}}, %[[OVERWRITE]])
// CHECK-NOT: linalg.fill
// CHECK: memref.extract_strided_metadata %[[C]]
// CHECK: arith.constant 0 : i64
// CHECK-NEXT: arith.constant 1 : i64
// CHECK-NEXT: arith.constant 0 : i64
// CHECK-NEXT: %[[ACCUMULATE:.+]] = arith.constant 1 : i64
// CHECK-NEXT: call @kiln_ukernel_sgemm({{.+}}, %[[ACCUMULATE]])
// CHECK-NOT: linalg.matmul
// CHECK: return %[[C]]
func.func @two_matmuls_into_one_buffer(%a: memref<4x8xf32>, %b: memref<8x4xf32>, %a2: memref<4x8xf32>, %b2: memref<8x4xf32>) -> memref<4x4xf32> {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<4x4xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<4x4xf32>)
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x4xf32>) outs(%c : memref<4x4xf32>)
  linalg.matmul ins(%a2, %b2 : memref<4x8xf32>, memref<8x4xf32>) outs(%c : memref<4x4xf32>)
  return %c : memref<4x4xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Accumulating into C (accumulate = 1), as linalg does
//===----------------------------------------------------------------------===//

// Tests that a matmul into a buffer that is not a fresh allocation (a
// function argument here) accumulates, even right after a zero fill: the
// fill stays, before the call, and the call passes accumulate = 1.

// CHECK-LABEL: func.func @zero_fill_of_argument(
// CHECK-SAME: %{{.+}}: memref<4x8xf32>, %{{.+}}: memref<8x4xf32>, %[[C:[a-zA-Z0-9_]+]]: memref<4x4xf32>)
// CHECK: linalg.fill ins(%{{.+}} : f32) outs(%[[C]] : memref<4x4xf32>)
// CHECK: arith.constant 0 : i64
// CHECK-NEXT: arith.constant 1 : i64
// CHECK-NEXT: arith.constant 0 : i64
// CHECK-NEXT: %[[ACCUMULATE:.+]] = arith.constant 1 : i64
// CHECK-NEXT: call @kiln_ukernel_sgemm({{.+}}, %[[ACCUMULATE]])
// CHECK-NOT: linalg.matmul
func.func @zero_fill_of_argument(%a: memref<4x8xf32>, %b: memref<8x4xf32>, %c: memref<4x4xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<4x4xf32>)
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x4xf32>) outs(%c : memref<4x4xf32>)
  return
}

// -----

// Tests that a matmul whose output was not filled first accumulates into it.

// CHECK-LABEL: func.func @no_fill(
// CHECK: arith.constant 0 : i64
// CHECK-NEXT: arith.constant 1 : i64
// CHECK-NEXT: arith.constant 0 : i64
// CHECK-NEXT: %[[ACCUMULATE:.+]] = arith.constant 1 : i64
// CHECK-NEXT: call @kiln_ukernel_sgemm({{.+}}, %[[ACCUMULATE]])
// CHECK-NOT: linalg.matmul
func.func @no_fill(%a: memref<4x8xf32>, %b: memref<8x4xf32>, %c: memref<4x4xf32>) {
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x4xf32>) outs(%c : memref<4x4xf32>)
  return
}

// -----

// Tests that a copy into a fresh allocation (the bias of a linear layer,
// say) is kept and accumulated onto.

// CHECK-LABEL: func.func @copy_then_matmul(
// CHECK-SAME: %{{.+}}: memref<4x8xf32>, %{{.+}}: memref<8x4xf32>, %[[BIAS:[a-zA-Z0-9_]+]]: memref<4x4xf32>)
// CHECK: %[[C:.+]] = memref.alloc() : memref<4x4xf32>
// CHECK: memref.copy %[[BIAS]], %[[C]]
// CHECK: arith.constant 0 : i64
// CHECK-NEXT: arith.constant 1 : i64
// CHECK-NEXT: arith.constant 0 : i64
// CHECK-NEXT: %[[ACCUMULATE:.+]] = arith.constant 1 : i64
// CHECK-NEXT: call @kiln_ukernel_sgemm({{.+}}, %[[ACCUMULATE]])
// CHECK-NOT: linalg.matmul
func.func @copy_then_matmul(%a: memref<4x8xf32>, %b: memref<8x4xf32>, %bias: memref<4x4xf32>) -> memref<4x4xf32> {
  %c = memref.alloc() : memref<4x4xf32>
  memref.copy %bias, %c : memref<4x4xf32> to memref<4x4xf32>
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x4xf32>) outs(%c : memref<4x4xf32>)
  return %c : memref<4x4xf32>
}

// -----

// Tests that a fill with a non-zero value is kept and accumulated onto.

// CHECK-LABEL: func.func @nonzero_fill(
// CHECK: %[[C:.+]] = memref.alloc() : memref<4x4xf32>
// CHECK: linalg.fill ins(%{{.+}} : f32) outs(%[[C]] : memref<4x4xf32>)
// CHECK: arith.constant 0 : i64
// CHECK-NEXT: arith.constant 1 : i64
// CHECK-NEXT: arith.constant 0 : i64
// CHECK-NEXT: %[[ACCUMULATE:.+]] = arith.constant 1 : i64
// CHECK-NEXT: call @kiln_ukernel_sgemm({{.+}}, %[[ACCUMULATE]])
// CHECK-NOT: linalg.matmul
func.func @nonzero_fill(%a: memref<4x8xf32>, %b: memref<8x4xf32>) -> memref<4x4xf32> {
  %one = arith.constant 1.0 : f32
  %c = memref.alloc() : memref<4x4xf32>
  linalg.fill ins(%one : f32) outs(%c : memref<4x4xf32>)
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x4xf32>) outs(%c : memref<4x4xf32>)
  return %c : memref<4x4xf32>
}

// -----

// Tests that a fill whose value is not a constant is not taken for a zero
// fill: it is kept and accumulated onto.

// CHECK-LABEL: func.func @non_constant_fill(
// CHECK-SAME: %{{.+}}: memref<4x8xf32>, %{{.+}}: memref<8x4xf32>, %[[V:[a-zA-Z0-9_]+]]: f32)
// CHECK: %[[C:.+]] = memref.alloc() : memref<4x4xf32>
// CHECK: linalg.fill ins(%[[V]] : f32) outs(%[[C]] : memref<4x4xf32>)
// CHECK: arith.constant 0 : i64
// CHECK-NEXT: arith.constant 1 : i64
// CHECK-NEXT: arith.constant 0 : i64
// CHECK-NEXT: %[[ACCUMULATE:.+]] = arith.constant 1 : i64
// CHECK-NEXT: call @kiln_ukernel_sgemm({{.+}}, %[[ACCUMULATE]])
// CHECK-NOT: linalg.matmul
func.func @non_constant_fill(%a: memref<4x8xf32>, %b: memref<8x4xf32>, %v: f32) -> memref<4x4xf32> {
  %c = memref.alloc() : memref<4x4xf32>
  linalg.fill ins(%v : f32) outs(%c : memref<4x4xf32>)
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x4xf32>) outs(%c : memref<4x4xf32>)
  return %c : memref<4x4xf32>
}

// -----

// Tests that another use of the output buffer between the zero fill and the
// matmul makes the call accumulate onto what that op wrote, with the fill
// kept.

// CHECK-LABEL: func.func @fill_separated_by_use(
// CHECK: %[[C:.+]] = memref.alloc() : memref<4x4xf32>
// CHECK: linalg.fill ins(%{{.+}} : f32) outs(%[[C]] : memref<4x4xf32>)
// CHECK: memref.store %{{.+}}, %[[C]]
// CHECK: arith.constant 0 : i64
// CHECK-NEXT: arith.constant 1 : i64
// CHECK-NEXT: arith.constant 0 : i64
// CHECK-NEXT: %[[ACCUMULATE:.+]] = arith.constant 1 : i64
// CHECK-NEXT: call @kiln_ukernel_sgemm({{.+}}, %[[ACCUMULATE]])
// CHECK-NOT: linalg.matmul
func.func @fill_separated_by_use(%a: memref<4x8xf32>, %b: memref<8x4xf32>) -> memref<4x4xf32> {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %i = arith.constant 0 : index
  %c = memref.alloc() : memref<4x4xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<4x4xf32>)
  memref.store %one, %c[%i, %i] : memref<4x4xf32>
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x4xf32>) outs(%c : memref<4x4xf32>)
  return %c : memref<4x4xf32>
}

// -----

// Tests that a write to the output through a view of it made before the
// zero fill (the 2x2 corner set to 1 here) makes the call accumulate, with
// both fills kept: the matmul must compute 1 + A*B in that corner.

// CHECK-LABEL: func.func @write_through_alias(
// CHECK: %[[C:.+]] = memref.alloc() : memref<4x4xf32>
// CHECK: %[[CORNER:.+]] = memref.subview %[[C]][0, 0] [2, 2] [1, 1]
// CHECK: linalg.fill ins(%{{.+}} : f32) outs(%[[C]] : memref<4x4xf32>)
// CHECK: linalg.fill ins(%{{.+}} : f32) outs(%[[CORNER]] : memref<2x2xf32, strided<[4, 1]>>)
// CHECK: arith.constant 0 : i64
// CHECK-NEXT: arith.constant 1 : i64
// CHECK-NEXT: arith.constant 0 : i64
// CHECK-NEXT: %[[ACCUMULATE:.+]] = arith.constant 1 : i64
// CHECK-NEXT: call @kiln_ukernel_sgemm({{.+}}, %[[ACCUMULATE]])
// CHECK-NOT: linalg.matmul
func.func @write_through_alias(%a: memref<4x8xf32>, %b: memref<8x4xf32>) -> memref<4x4xf32> {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %c = memref.alloc() : memref<4x4xf32>
  %corner = memref.subview %c[0, 0] [2, 2] [1, 1] : memref<4x4xf32> to memref<2x2xf32, strided<[4, 1]>>
  linalg.fill ins(%zero : f32) outs(%c : memref<4x4xf32>)
  linalg.fill ins(%one : f32) outs(%corner : memref<2x2xf32, strided<[4, 1]>>)
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x4xf32>) outs(%c : memref<4x4xf32>)
  return %c : memref<4x4xf32>
}

// -----

// Tests that a zero fill of another buffer is not taken for the output's:
// the call accumulates and that fill stays.

// CHECK-LABEL: func.func @fill_of_other_buffer(
// CHECK-SAME: %{{.+}}: memref<4x8xf32>, %{{.+}}: memref<8x4xf32>, %[[D:[a-zA-Z0-9_]+]]: memref<4x4xf32>)
// CHECK: linalg.fill ins(%{{.+}} : f32) outs(%[[D]] : memref<4x4xf32>)
// CHECK: arith.constant 0 : i64
// CHECK-NEXT: arith.constant 1 : i64
// CHECK-NEXT: arith.constant 0 : i64
// CHECK-NEXT: %[[ACCUMULATE:.+]] = arith.constant 1 : i64
// CHECK-NEXT: call @kiln_ukernel_sgemm({{.+}}, %[[ACCUMULATE]])
// CHECK-NOT: linalg.matmul
func.func @fill_of_other_buffer(%a: memref<4x8xf32>, %b: memref<8x4xf32>, %d: memref<4x4xf32>) -> memref<4x4xf32> {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<4x4xf32>
  linalg.fill ins(%zero : f32) outs(%d : memref<4x4xf32>)
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x4xf32>) outs(%c : memref<4x4xf32>)
  return %c : memref<4x4xf32>
}

// -----

// Tests that a zero fill in another block than the matmul (before a loop
// whose body is the matmul) is kept and accumulated onto: every iteration
// adds its product.

// CHECK-LABEL: func.func @fill_outside_loop(
// CHECK: %[[C:.+]] = memref.alloc() : memref<4x4xf32>
// CHECK: linalg.fill ins(%{{.+}} : f32) outs(%[[C]] : memref<4x4xf32>)
// CHECK: scf.for
// CHECK: arith.constant 0 : i64
// CHECK-NEXT: arith.constant 1 : i64
// CHECK-NEXT: arith.constant 0 : i64
// CHECK-NEXT: %[[ACCUMULATE:.+]] = arith.constant 1 : i64
// CHECK-NEXT: call @kiln_ukernel_sgemm({{.+}}, %[[ACCUMULATE]])
// CHECK-NOT: linalg.matmul
func.func @fill_outside_loop(%a: memref<4x8xf32>, %b: memref<8x4xf32>, %n: index) -> memref<4x4xf32> {
  %zero = arith.constant 0.0 : f32
  %i0 = arith.constant 0 : index
  %i1 = arith.constant 1 : index
  %c = memref.alloc() : memref<4x4xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<4x4xf32>)
  scf.for %i = %i0 to %n step %i1 {
    linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x4xf32>) outs(%c : memref<4x4xf32>)
  }
  return %c : memref<4x4xf32>
}

// -----

// Tests that an output that is a view of a fresh allocation, not the
// allocation itself, is accumulated onto, the fill of the view kept.

// CHECK-LABEL: func.func @fill_of_view(
// CHECK: %[[VIEW:.+]] = memref.subview
// CHECK: linalg.fill ins(%{{.+}} : f32) outs(%[[VIEW]] : memref<4x4xf32, strided<[8, 1]>>)
// CHECK: arith.constant 0 : i64
// CHECK-NEXT: arith.constant 1 : i64
// CHECK-NEXT: arith.constant 0 : i64
// CHECK-NEXT: %[[ACCUMULATE:.+]] = arith.constant 1 : i64
// CHECK-NEXT: call @kiln_ukernel_sgemm({{.+}}, %[[ACCUMULATE]])
// CHECK-NOT: linalg.matmul
func.func @fill_of_view(%a: memref<4x8xf32>, %b: memref<8x4xf32>) -> memref<4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<4x8xf32>
  %view = memref.subview %c[0, 0] [4, 4] [1, 1] : memref<4x8xf32> to memref<4x4xf32, strided<[8, 1]>>
  linalg.fill ins(%zero : f32) outs(%view : memref<4x4xf32, strided<[8, 1]>>)
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x4xf32>) outs(%view : memref<4x4xf32, strided<[8, 1]>>)
  return %c : memref<4x8xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Left to the loop lowering
//===----------------------------------------------------------------------===//

// Tests that non-f32 matmuls are left alone.

// CHECK-LABEL: func.func @not_f32(
// CHECK: linalg.fill
// CHECK: linalg.matmul
// CHECK-NOT: kiln_ukernel_sgemm
func.func @not_f32(%a: memref<4x8xf16>, %b: memref<8x4xf16>) -> memref<4x4xf16> {
  %zero = arith.constant 0.0 : f16
  %c = memref.alloc() : memref<4x4xf16>
  linalg.fill ins(%zero : f16) outs(%c : memref<4x4xf16>)
  linalg.matmul ins(%a, %b : memref<4x8xf16>, memref<8x4xf16>) outs(%c : memref<4x4xf16>)
  return %c : memref<4x4xf16>
}

// -----

// Tests that a non-unit inner stride on any operand (a column-major B here,
// or a strided C) is left to the loop lowering.

// CHECK-LABEL: func.func @non_unit_inner_stride(
// CHECK-NOT: kiln_ukernel_sgemm
// CHECK: linalg.fill
// CHECK-NEXT: linalg.matmul
// CHECK-NEXT: linalg.fill
// CHECK-NEXT: linalg.matmul
// CHECK-NOT: kiln_ukernel_sgemm
func.func @non_unit_inner_stride(%a: memref<4x8xf32>, %b: memref<8x4xf32, strided<[1, 8]>>, %c: memref<4x4xf32>,
                                 %b2: memref<8x4xf32>, %c2: memref<4x4xf32, strided<[8, 2]>>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<4x4xf32>)
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x4xf32, strided<[1, 8]>>) outs(%c : memref<4x4xf32>)
  linalg.fill ins(%zero : f32) outs(%c2 : memref<4x4xf32, strided<[8, 2]>>)
  linalg.matmul ins(%a, %b2 : memref<4x8xf32>, memref<8x4xf32>) outs(%c2 : memref<4x4xf32, strided<[8, 2]>>)
  return
}

// -----

// Tests that a dynamic inner stride is not assumed to be 1.

// CHECK-LABEL: func.func @dynamic_inner_stride(
// CHECK: linalg.matmul
// CHECK-NOT: kiln_ukernel_sgemm
func.func @dynamic_inner_stride(%a: memref<4x8xf32, strided<[?, ?]>>, %b: memref<8x4xf32>, %c: memref<4x4xf32>) {
  linalg.matmul ins(%a, %b : memref<4x8xf32, strided<[?, ?]>>, memref<8x4xf32>) outs(%c : memref<4x4xf32>)
  return
}

// -----

// Tests that matmuls on tensors (before bufferization) are left alone.

// CHECK-LABEL: func.func @on_tensors(
// CHECK: linalg.fill
// CHECK: linalg.matmul
// CHECK-NOT: kiln_ukernel_sgemm
func.func @on_tensors(%a: tensor<4x8xf32>, %b: tensor<8x4xf32>) -> tensor<4x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %m = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x4xf32>) outs(%f : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %m : tensor<4x4xf32>
}

// -----

// Tests that the address of a buffer planned in the arena (a memref.view,
// here through a subview) is the arena's aligned pointer plus the view's
// byte shift, and then the subview's offset: the pointer is extracted from
// the arena itself, since MLIR 19's expand-strided-metadata folds the
// extraction through views as if they did not shift the pointer.

// CHECK-LABEL: func.func @planned_buffer(
// CHECK-SAME: %[[ARENA:[a-zA-Z0-9_]+]]: memref<4096xi8>
// CHECK: %[[SHIFT:.+]] = arith.constant 1024 : index
// CHECK: %[[VIEW:.+]] = memref.view %[[ARENA]][%[[SHIFT]]][]
// CHECK: %[[SUB:.+]] = memref.subview %[[VIEW]]
// CHECK: %{{.+}}, %[[OFF:.+]], %{{.+}}:2, %{{.+}}:2 = memref.extract_strided_metadata %[[SUB]]
// CHECK: %[[BASE:.+]] = memref.extract_aligned_pointer_as_index %[[ARENA]] : memref<4096xi8> -> index
// CHECK: %[[SHIFTED:.+]] = arith.addi %[[BASE]], %[[SHIFT]] : index
// CHECK: %[[SHIFTED_I64:.+]] = arith.index_cast %[[SHIFTED]] : index to i64
// CHECK: %[[OFF_I64:.+]] = arith.index_cast %[[OFF]] : index to i64
// CHECK: %[[OFF_BYTES:.+]] = arith.muli %[[OFF_I64]], %{{.+}} : i64
// CHECK: arith.addi %[[SHIFTED_I64]], %[[OFF_BYTES]] : i64
// CHECK: call @kiln_ukernel_sgemm
func.func @planned_buffer(%b: memref<8x4xf32>, %c: memref<4x4xf32>, %arena: memref<4096xi8>) {
  %shift = arith.constant 1024 : index
  %view = memref.view %arena[%shift][] : memref<4096xi8> to memref<8x8xf32>
  %a = memref.subview %view[4, 0] [4, 8] [1, 1] : memref<8x8xf32> to memref<4x8xf32, strided<[8, 1], offset: 32>>
  linalg.matmul ins(%a, %b : memref<4x8xf32, strided<[8, 1], offset: 32>>, memref<8x4xf32>) outs(%c : memref<4x4xf32>)
  return
}
