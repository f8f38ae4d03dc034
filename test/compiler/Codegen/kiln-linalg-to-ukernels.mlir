// RUN: kiln-opt %s --split-input-file --kiln-linalg-to-ukernels | FileCheck %s

// Tests that a zero-filled linalg.matmul on f32 memrefs becomes one call to
// the SGEMM microkernel with (batch, m, n, k, a, a_batch_stride, lda, b,
// b_batch_stride, ldb, transpose_b, c, c_batch_stride, ldc), where the
// pointers are the aligned pointers plus offset * 4 bytes, m and n are C's
// sizes, k is A's columns, the leading dimensions are the row strides, the
// batch is 1 and the batch strides 0. The fill and the matmul are erased,
// and the microkernel is declared once.

// CHECK-LABEL: func.func @matmul(
// CHECK-SAME: %[[A:[a-zA-Z0-9_]+]]: memref<?x64xf32>, %[[B:[a-zA-Z0-9_]+]]: memref<64x256xf32>, %[[C:[a-zA-Z0-9_]+]]: memref<?x256xf32>)
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
// CHECK: %[[ONE:.+]] = arith.constant 1 : i64
// CHECK: %[[NO_TRANSPOSE:.+]] = arith.constant 0 : i64
// CHECK: call @kiln_ukernel_sgemm(%[[ONE]], %[[M]], %[[N]], %[[A_COLS]], %[[A_PTR]], %[[ZERO]], %[[LDA]], %[[B_PTR]], %[[ZERO]], %[[LDB]], %[[NO_TRANSPOSE]], %[[C_PTR]], %[[ZERO]], %[[LDC]])
// CHECK-SAME: : (i64, i64, i64, i64, !llvm.ptr, i64, i64, !llvm.ptr, i64, i64, i64, !llvm.ptr, i64, i64) -> ()
// CHECK-NOT: linalg.matmul
// CHECK: return
// CHECK: func.func @second_matmul(
// CHECK: call @kiln_ukernel_sgemm
// CHECK: func.func private @kiln_ukernel_sgemm(i64, i64, i64, i64, !llvm.ptr, i64, i64, !llvm.ptr, i64, i64, i64, !llvm.ptr, i64, i64)
// CHECK-NOT: func.func private @kiln_ukernel_sgemm
func.func @matmul(%a: memref<?x64xf32>, %b: memref<64x256xf32>, %c: memref<?x256xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<?x256xf32>)
  linalg.matmul ins(%a, %b : memref<?x64xf32>, memref<64x256xf32>) outs(%c : memref<?x256xf32>)
  return
}

func.func @second_matmul(%a: memref<8x64xf32>, %b: memref<64x256xf32>, %c: memref<8x256xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<8x256xf32>)
  linalg.matmul ins(%a, %b : memref<8x64xf32>, memref<64x256xf32>) outs(%c : memref<8x256xf32>)
  return
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
// CHECK: %[[ONE:.+]] = arith.constant 1 : i64
// CHECK: %[[TRANSPOSE:.+]] = arith.constant 1 : i64
// CHECK: call @kiln_ukernel_sgemm(%[[ONE]], %[[M]], %[[N]], %[[K]], %[[A_PTR]], %[[ZERO]], %[[LDA]], %[[B_PTR]], %[[ZERO]], %[[LDB]], %[[TRANSPOSE]], %[[C_PTR]], %[[ZERO]], %[[LDC]])
// CHECK-NOT: linalg.matmul_transpose_b
func.func @matmul_transpose_b(%a: memref<8x64xf32>, %b: memref<256x64xf32>, %c: memref<8x256xf32>) {
  %zero = arith.constant -0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<8x256xf32>)
  linalg.matmul_transpose_b ins(%a, %b : memref<8x64xf32>, memref<256x64xf32>) outs(%c : memref<8x256xf32>)
  return
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
// CHECK: %{{.+}}, %[[C_OFF:.+]], %[[C_SIZES:.+]]:3, %[[C_STRIDES:.+]]:3 = memref.extract_strided_metadata %{{.+}} : memref<4x?x?xf32>
// CHECK: %[[C_PTR:.+]] = llvm.inttoptr
// CHECK: %[[BATCH:.+]] = arith.index_cast %[[C_SIZES]]#0 : index to i64
// CHECK: %[[M:.+]] = arith.index_cast %[[C_SIZES]]#1 : index to i64
// CHECK: %[[N:.+]] = arith.index_cast %[[C_SIZES]]#2 : index to i64
// CHECK: %[[C_BATCH:.+]] = arith.index_cast %[[C_STRIDES]]#0 : index to i64
// CHECK: %[[LDC:.+]] = arith.index_cast %[[C_STRIDES]]#1 : index to i64
// CHECK: arith.constant 0 : i64
// CHECK: arith.constant 1 : i64
// CHECK: %[[TRANSPOSE:.+]] = arith.constant 0 : i64
// CHECK: call @kiln_ukernel_sgemm(%[[BATCH]], %[[M]], %[[N]], %[[K]], %[[A_PTR]], %[[A_BATCH]], %[[LDA]], %[[B_PTR]], %[[B_BATCH]], %[[LDB]], %[[TRANSPOSE]], %[[C_PTR]], %[[C_BATCH]], %[[LDC]])
// CHECK-NOT: linalg.batch_matmul
func.func @batch_matmul(%a: memref<4x?x16xf32>, %b: memref<4x16x?xf32, strided<[?, ?, 1], offset: ?>>, %c: memref<4x?x?xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<4x?x?xf32>)
  linalg.batch_matmul ins(%a, %b : memref<4x?x16xf32>, memref<4x16x?xf32, strided<[?, ?, 1], offset: ?>>) outs(%c : memref<4x?x?xf32>)
  return
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
// CHECK: arith.constant 1 : i64
// CHECK: %[[TRANSPOSE:.+]] = arith.constant 1 : i64
// CHECK: call @kiln_ukernel_sgemm(%[[BATCH]], %{{.+}}, %{{.+}}, %[[K]], %{{.+}}, %[[A_BATCH]], %{{.+}}, %{{.+}}, %[[B_BATCH]], %[[LDB]], %[[TRANSPOSE]], %{{.+}}, %{{.+}}, %{{.+}})
// CHECK-NOT: linalg.batch_matmul_transpose_b
func.func @batch_matmul_transpose_b(%q: memref<8x?x16xf32>, %k: memref<8x?x16xf32>, %s: memref<8x?x?xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%s : memref<8x?x?xf32>)
  linalg.batch_matmul_transpose_b ins(%q, %k : memref<8x?x16xf32>, memref<8x?x16xf32>) outs(%s : memref<8x?x?xf32>)
  return
}

// -----

// Tests that ops between the fill and the matmul that do not touch the
// output buffer do not prevent the rewrite, and that only the fill of the
// output is erased.

// CHECK-LABEL: func.func @unrelated_ops_between(
// CHECK-SAME: %{{.+}}: memref<4x8xf32>, %{{.+}}: memref<8x4xf32>, %{{.+}}: memref<4x4xf32>, %[[OTHER:[a-zA-Z0-9_]+]]: memref<4xf32>)
// CHECK: linalg.fill ins(%{{.+}} : f32) outs(%[[OTHER]] : memref<4xf32>)
// CHECK-NOT: linalg.fill
// CHECK: call @kiln_ukernel_sgemm
// CHECK-NOT: linalg.matmul
func.func @unrelated_ops_between(%a: memref<4x8xf32>, %b: memref<8x4xf32>, %c: memref<4x4xf32>, %other: memref<4xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<4x4xf32>)
  linalg.fill ins(%zero : f32) outs(%other : memref<4xf32>)
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x4xf32>) outs(%c : memref<4x4xf32>)
  return
}

// -----

// Tests that non-f32 matmuls are left alone.

// CHECK-LABEL: func.func @not_f32(
// CHECK: linalg.fill
// CHECK: linalg.matmul
// CHECK-NOT: kiln_ukernel_sgemm
func.func @not_f32(%a: memref<4x8xf16>, %b: memref<8x4xf16>, %c: memref<4x4xf16>) {
  %zero = arith.constant 0.0 : f16
  linalg.fill ins(%zero : f16) outs(%c : memref<4x4xf16>)
  linalg.matmul ins(%a, %b : memref<4x8xf16>, memref<8x4xf16>) outs(%c : memref<4x4xf16>)
  return
}

// -----

// Tests that a matmul whose output was not filled first accumulates into it
// and is left alone.

// CHECK-LABEL: func.func @no_fill(
// CHECK: linalg.matmul
// CHECK-NOT: kiln_ukernel_sgemm
func.func @no_fill(%a: memref<4x8xf32>, %b: memref<8x4xf32>, %c: memref<4x4xf32>) {
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x4xf32>) outs(%c : memref<4x4xf32>)
  return
}

// -----

// Tests that a fill with a non-zero value is not erased and the matmul is
// left alone.

// CHECK-LABEL: func.func @nonzero_fill(
// CHECK: linalg.fill
// CHECK: linalg.matmul
// CHECK-NOT: kiln_ukernel_sgemm
func.func @nonzero_fill(%a: memref<4x8xf32>, %b: memref<8x4xf32>, %c: memref<4x4xf32>) {
  %one = arith.constant 1.0 : f32
  linalg.fill ins(%one : f32) outs(%c : memref<4x4xf32>)
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x4xf32>) outs(%c : memref<4x4xf32>)
  return
}

// -----

// Tests that a fill whose value is not a constant is not taken for a zero
// fill.

// CHECK-LABEL: func.func @non_constant_fill(
// CHECK: linalg.fill
// CHECK: linalg.matmul
// CHECK-NOT: kiln_ukernel_sgemm
func.func @non_constant_fill(%a: memref<4x8xf32>, %b: memref<8x4xf32>, %c: memref<4x4xf32>, %v: f32) {
  linalg.fill ins(%v : f32) outs(%c : memref<4x4xf32>)
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x4xf32>) outs(%c : memref<4x4xf32>)
  return
}

// -----

// Tests that another use of the output buffer between the zero fill and the
// matmul blocks the rewrite: the matmul would accumulate onto what that op
// wrote.

// CHECK-LABEL: func.func @fill_separated_by_use(
// CHECK: linalg.fill
// CHECK: memref.store
// CHECK: linalg.matmul
// CHECK-NOT: kiln_ukernel_sgemm
func.func @fill_separated_by_use(%a: memref<4x8xf32>, %b: memref<8x4xf32>, %c: memref<4x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %i = arith.constant 0 : index
  linalg.fill ins(%zero : f32) outs(%c : memref<4x4xf32>)
  memref.store %one, %c[%i, %i] : memref<4x4xf32>
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x4xf32>) outs(%c : memref<4x4xf32>)
  return
}

// -----

// Tests that a zero fill of another buffer is not taken for the output's.

// CHECK-LABEL: func.func @fill_of_other_buffer(
// CHECK: linalg.fill
// CHECK: linalg.matmul
// CHECK-NOT: kiln_ukernel_sgemm
func.func @fill_of_other_buffer(%a: memref<4x8xf32>, %b: memref<8x4xf32>, %c: memref<4x4xf32>, %d: memref<4x4xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%d : memref<4x4xf32>)
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x4xf32>) outs(%c : memref<4x4xf32>)
  return
}

// -----

// Tests that a non-unit inner stride on any operand (a column-major B here,
// or a strided C) is left to the loop lowering.

// CHECK-LABEL: func.func @non_unit_inner_stride(
// CHECK: linalg.fill
// CHECK: linalg.matmul
// CHECK: linalg.fill
// CHECK: linalg.matmul
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
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<4x4xf32>)
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
