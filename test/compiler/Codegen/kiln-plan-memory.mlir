// RUN: kiln-opt %s --split-input-file --kiln-plan-memory | FileCheck %s
// RUN: kiln-opt %s --split-input-file --kiln-plan-memory="max-buffer-bytes=32" \
// RUN:   | FileCheck %s --check-prefix=CAP

// Tests that buffers whose lifetimes do not overlap share arena bytes: %a
// dies at the copy that fills %b, so %c reuses %a's bytes; %a and %b, both
// used by that copy, do not share. The returned buffer stays on the heap.
// The arena is a new last argument, its size exported as kiln_arena_bytes,
// and the plan is a module attribute for the report.

// CHECK-LABEL: module attributes {kiln.memory_plan = {arena_bytes = 128 : i64, buffer_bytes = 192 : i64,
// CHECK-SAME: {bytes = 64 : i64, first = 1 : i64, last = 3 : i64, offset = 0 : i64, op = "a"}
// CHECK-SAME: {bytes = 64 : i64, first = 3 : i64, last = 5 : i64, offset = 64 : i64, op = "b"}
// CHECK-SAME: {bytes = 64 : i64, first = 5 : i64, last = 7 : i64, offset = 0 : i64, op = "c"}
// CHECK-SAME: heap = [{op = "r", reason = "returned"}]
// CHECK: func.func @main(%[[X:.+]]: memref<16xf32>, %[[ARENA:.+]]: memref<128xi8>)
// CHECK: %[[A_OFFSET:.+]] = arith.constant 0 : index
// CHECK-NEXT: %[[A:.+]] = memref.view %[[ARENA]][%[[A_OFFSET]]][] : memref<128xi8> to memref<16xf32>
// CHECK: %[[B_OFFSET:.+]] = arith.constant 64 : index
// CHECK-NEXT: %[[B:.+]] = memref.view %[[ARENA]][%[[B_OFFSET]]][] : memref<128xi8> to memref<16xf32>
// CHECK: memref.copy %[[A]], %[[B]]
// CHECK: %[[C_OFFSET:.+]] = arith.constant 0 : index
// CHECK-NEXT: %[[C:.+]] = memref.view %[[ARENA]][%[[C_OFFSET]]][] : memref<128xi8> to memref<16xf32>
// CHECK: %[[R:.+]] = memref.alloc() {alignment = 64 : i64} : memref<16xf32>
// CHECK: return %[[R]]
// CHECK: llvm.mlir.global external constant @kiln_arena_bytes(128 : i64)

// Buffers of more than max-buffer-bytes stay on the heap; the arena is empty.
// CAP-LABEL: module attributes {kiln.memory_plan = {arena_bytes = 0 : i64, buffer_bytes = 0 : i64, buffers = []
// CAP-SAME: {op = "a", reason = "may need 64 bytes, over max-buffer-bytes"}
// CAP: func.func @main(%{{.+}}: memref<16xf32>, %{{.+}}: memref<0xi8>)
// CAP-NOT: memref.view
// CAP: llvm.mlir.global external constant @kiln_arena_bytes(0 : i64)
func.func @main(%x: memref<16xf32>) -> memref<16xf32> {
  %a = memref.alloc() {alignment = 64 : i64} : memref<16xf32> loc("a")
  memref.copy %x, %a : memref<16xf32> to memref<16xf32>
  %b = memref.alloc() {alignment = 64 : i64} : memref<16xf32> loc("b")
  memref.copy %a, %b : memref<16xf32> to memref<16xf32>
  %c = memref.alloc() {alignment = 64 : i64} : memref<16xf32> loc("c")
  memref.copy %b, %c : memref<16xf32> to memref<16xf32>
  %r = memref.alloc() {alignment = 64 : i64} : memref<16xf32> loc("r")
  memref.copy %c, %r : memref<16xf32> to memref<16xf32>
  return %r : memref<16xf32>
}

// -----

// Tests that an elementwise generic whose input buffer dies there writes its
// result in place: %b takes %a's bytes, and the arena holds one buffer.

// CHECK-LABEL: module attributes {kiln.memory_plan = {arena_bytes = 64 : i64, buffer_bytes = 128 : i64,
// CHECK-SAME: {bytes = 64 : i64, first = 4 : i64, in_place_of = 0 : i64, last = 5 : i64, offset = 0 : i64
// CHECK: func.func @main(%{{.+}}: memref<16xf32>, %[[ARENA:.+]]: memref<64xi8>)
// CHECK: memref.view %[[ARENA]][%{{.+}}][] : memref<64xi8> to memref<16xf32>
// CHECK: memref.view %[[ARENA]][%{{.+}}][] : memref<64xi8> to memref<16xf32>
#identity = affine_map<(d0) -> (d0)>
func.func @main(%x: memref<16xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %a = memref.alloc() {alignment = 64 : i64} : memref<16xf32>
  memref.copy %x, %a : memref<16xf32> to memref<16xf32>
  %b = memref.alloc() {alignment = 64 : i64} : memref<16xf32>
  linalg.generic {indexing_maps = [#identity, #identity], iterator_types = ["parallel"]}
      ins(%a : memref<16xf32>) outs(%b : memref<16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %twice = arith.addf %in, %in : f32
    linalg.yield %twice : f32
  }
  %first = memref.load %b[%c0] : memref<16xf32>
  return %first : f32
}

// -----

// Tests that no result is written in place over an input that is read again
// later, or read in another order (a reversing map): each buffer has its own
// bytes.

// CHECK-LABEL: module attributes {kiln.memory_plan = {arena_bytes = 192 : i64, buffer_bytes = 192 : i64,
#identity = affine_map<(d0) -> (d0)>
#reversed = affine_map<(d0) -> (15 - d0)>
func.func @main(%x: memref<16xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %a = memref.alloc() {alignment = 64 : i64} : memref<16xf32>
  memref.copy %x, %a : memref<16xf32> to memref<16xf32>
  %b = memref.alloc() {alignment = 64 : i64} : memref<16xf32>
  linalg.generic {indexing_maps = [#identity, #identity], iterator_types = ["parallel"]}
      ins(%a : memref<16xf32>) outs(%b : memref<16xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  %c = memref.alloc() {alignment = 64 : i64} : memref<16xf32>
  linalg.generic {indexing_maps = [#reversed, #identity], iterator_types = ["parallel"]}
      ins(%b : memref<16xf32>) outs(%c : memref<16xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  %again = memref.load %a[%c0] : memref<16xf32>
  %last = memref.load %c[%c0] : memref<16xf32>
  %sum = arith.addf %again, %last : f32
  return %sum : f32
}

// -----

// Tests that a dynamic size is planned for its declared bound: dim 0 of %x
// is at most 100, so %a needs at most 100 * 4 bytes, rounded up to 448. The
// bound's attribute is consumed. Without a bound, %b stays on the heap, and
// the report says which size has none.

// CHECK-LABEL: module attributes {kiln.memory_plan = {arena_bytes = 448 : i64,
// CHECK-SAME: {op = "b", reason = "dim 0 has no upper bound (it depends on dim 0 of argument #1, which has no kiln.dim_max)"}
// CHECK: func.func @main(%[[X:[a-z0-9]+]]: memref<?xf32>, %[[Y:[a-z0-9]+]]: memref<?xf32>, %[[ARENA:.+]]: memref<448xi8>)
// CHECK-NOT: kiln.dim_max
// CHECK: %[[N:.+]] = memref.dim %[[X]]
// CHECK: memref.view %[[ARENA]][%{{.+}}][%[[N]]] : memref<448xi8> to memref<?xf32>
// CHECK: memref.alloc(%{{.+}}) {alignment = 64 : i64} : memref<?xf32>
func.func @main(%x: memref<?xf32> {kiln.dim_max = array<i64: 100>},
                %y: memref<?xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %n = memref.dim %x, %c0 : memref<?xf32>
  %a = memref.alloc(%n) {alignment = 64 : i64} : memref<?xf32>
  memref.copy %x, %a : memref<?xf32> to memref<?xf32>
  %m = memref.dim %y, %c0 : memref<?xf32>
  %b = memref.alloc(%m) {alignment = 64 : i64} : memref<?xf32> loc("b")
  memref.copy %y, %b : memref<?xf32> to memref<?xf32>
  %first = memref.load %a[%c0] : memref<?xf32>
  %other = memref.load %b[%c0] : memref<?xf32>
  %sum = arith.addf %first, %other : f32
  return %sum : f32
}

// -----

// Tests that the bound follows the lowering's size arithmetic: ONNX's
// "0 copies the input's size" (0 exactly when the copied size is), a -1 that
// the bound rules out, and a divisor guarded against 0. %rows is at most
// 8 * 4 = 32 rows of 16 f32 (2048 bytes), %quotient at most 32 f32 (128);
// %a's last use comes before %q's first, so the two share.

// CHECK-LABEL: module attributes {kiln.memory_plan = {arena_bytes = 2048 : i64, buffer_bytes = 2176 : i64,
func.func @main(%x: memref<?x?xf32> {kiln.dim_max = array<i64: 8, 4>}) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cm1 = arith.constant -1 : index
  %d0 = memref.dim %x, %c0 : memref<?x?xf32>
  %d1 = memref.dim %x, %c1 : memref<?x?xf32>
  %total = arith.muli %d0, %d1 : index
  %is_zero = arith.cmpi eq, %d0, %c0 : index
  %copied = arith.select %is_zero, %total, %d0 : index
  %is_minus_one = arith.cmpi eq, %d1, %cm1 : index
  %inferred = arith.select %is_minus_one, %total, %d1 : index
  %rows = arith.muli %copied, %inferred : index
  %a = memref.alloc(%rows) {alignment = 64 : i64} : memref<?x16xf32>
  %divisor_zero = arith.cmpi eq, %d1, %c0 : index
  %divisor = arith.select %divisor_zero, %c1, %d1 : index
  %quotient = arith.divsi %total, %divisor : index
  %q = memref.alloc(%quotient) {alignment = 64 : i64} : memref<?xf32>
  %first = memref.load %a[%c0, %c0] : memref<?x16xf32>
  %other = memref.load %q[%c0] : memref<?xf32>
  %sum = arith.addf %first, %other : f32
  return %sum : f32
}

// -----

// Tests that a declared lower bound decides the lowering's guards: with
// kiln.dim_min 1, %d0 is never 0, so "0 copies the input's size" never takes
// the 32 rows of %big and %rows is at most 8 (512 bytes); without it the
// guard stays open and %rows is planned for 32 (2048 bytes). Both
// attributes are consumed.

// CHECK-LABEL: module attributes {kiln.memory_plan = {arena_bytes = 512 : i64,
// CHECK: func.func @main(%{{[a-z0-9]+}}: memref<?x?xf32>, %{{[a-z0-9]+}}: memref<512xi8>)
// CHECK-NOT: kiln.dim_min
func.func @main(%x: memref<?x?xf32> {kiln.dim_max = array<i64: 8, 4>, kiln.dim_min = array<i64: 1, 1>}) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %d0 = memref.dim %x, %c0 : memref<?x?xf32>
  %is_zero = arith.cmpi eq, %d0, %c0 : index
  %rows = arith.select %is_zero, %c32, %d0 : index
  %a = memref.alloc(%rows) {alignment = 64 : i64} : memref<?x16xf32>
  %first = memref.load %a[%c0, %c0] : memref<?x16xf32>
  return %first : f32
}

// -----

// CHECK-LABEL: module attributes {kiln.memory_plan = {arena_bytes = 2048 : i64,
func.func @main(%x: memref<?x?xf32> {kiln.dim_max = array<i64: 8, 4>}) -> f32 {
  %c0 = arith.constant 0 : index
  %c32 = arith.constant 32 : index
  %d0 = memref.dim %x, %c0 : memref<?x?xf32>
  %is_zero = arith.cmpi eq, %d0, %c0 : index
  %rows = arith.select %is_zero, %c32, %d0 : index
  %a = memref.alloc(%rows) {alignment = 64 : i64} : memref<?x16xf32>
  %first = memref.load %a[%c0, %c0] : memref<?x16xf32>
  return %first : f32
}

// -----

// Tests that a buffer lives as long as a pointer taken from it: %a's address
// reaches a microkernel call (the pass knows the runtime's by name; they
// keep no pointer past the call) after %b's first use, so the two do not
// share, and the address is rebuilt as the arena's plus %a's offset (MLIR 19
// would drop a view's offset when it folds the pointer extraction).

// CHECK-LABEL: module attributes {kiln.memory_plan = {arena_bytes = 128 : i64,
// CHECK-SAME: {bytes = 64 : i64, first = 2 : i64, last = 7 : i64, offset = 0 : i64, op = "a"}
// CHECK: func.func @main(%[[X:.+]]: memref<16xf32>, %[[ARENA:.+]]: memref<128xi8>)
// CHECK: %[[A:.+]] = memref.view %[[ARENA]][%[[A_OFFSET:.+]]][]
// CHECK: %[[BASE:.+]] = memref.extract_aligned_pointer_as_index %[[ARENA]]
// CHECK: %[[ADDRESS:.+]] = arith.addi %[[BASE]], %[[A_OFFSET]] : index
// CHECK: %[[B_OFFSET:.+]] = arith.constant 64 : index
// CHECK: memref.view %[[ARENA]][%[[B_OFFSET]]][]
// CHECK: %[[ADDRESS_I64:.+]] = arith.index_cast %[[ADDRESS]] : index to i64
// CHECK: call @kiln_ukernel_attention(%[[ADDRESS_I64]])
func.func private @kiln_ukernel_attention(i64)
func.func @main(%x: memref<16xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %a = memref.alloc() {alignment = 64 : i64} : memref<16xf32> loc("a")
  memref.copy %x, %a : memref<16xf32> to memref<16xf32>
  %address = memref.extract_aligned_pointer_as_index %a : memref<16xf32> -> index
  %b = memref.alloc() {alignment = 64 : i64} : memref<16xf32>
  memref.copy %x, %b : memref<16xf32> to memref<16xf32>
  %address_i64 = arith.index_cast %address : index to i64
  func.call @kiln_ukernel_attention(%address_i64) : (i64) -> ()
  %first = memref.load %b[%c0] : memref<16xf32>
  return %first : f32
}

// -----

// Tests that an address stored into a microkernel's parameter struct (an
// alloca tagged kiln.ukernel_params) is followed to the call that reads the
// struct: %a lives until that call, after %b's first use, so the two do not
// share; an address stored into an untagged alloca keeps %c on the heap.

// CHECK-LABEL: module attributes {kiln.memory_plan = {arena_bytes = 128 : i64,
// CHECK-SAME: {bytes = 64 : i64, first = 2 : i64, last = 11 : i64, offset = 0 : i64, op = "a"}
// CHECK-SAME: heap = [{op = "c", reason = "its address reaches memref.store"}]
func.func private @kiln_ukernel_linear(i64)
func.func @main(%x: memref<16xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %a = memref.alloc() {alignment = 64 : i64} : memref<16xf32> loc("a")
  memref.copy %x, %a : memref<16xf32> to memref<16xf32>
  %address = memref.extract_aligned_pointer_as_index %a : memref<16xf32> -> index
  %b = memref.alloc() {alignment = 64 : i64} : memref<16xf32>
  memref.copy %x, %b : memref<16xf32> to memref<16xf32>
  %address_i64 = arith.index_cast %address : index to i64
  %params = memref.alloca() {kiln.ukernel_params} : memref<1xi64>
  memref.store %address_i64, %params[%c0] : memref<1xi64>
  %params_address = memref.extract_aligned_pointer_as_index %params : memref<1xi64> -> index
  %params_i64 = arith.index_cast %params_address : index to i64
  func.call @kiln_ukernel_linear(%params_i64) : (i64) -> ()
  %c = memref.alloc() {alignment = 64 : i64} : memref<16xf32> loc("c")
  %c_address = memref.extract_aligned_pointer_as_index %c : memref<16xf32> -> index
  %c_i64 = arith.index_cast %c_address : index to i64
  %other = memref.alloca() : memref<1xi64>
  memref.store %c_i64, %other[%c0] : memref<1xi64>
  %first = memref.load %b[%c0] : memref<16xf32>
  return %first : f32
}

// -----

// Tests that a buffer returned through a view of it stays on the heap.

// CHECK-LABEL: module attributes {kiln.memory_plan = {arena_bytes = 0 : i64,
// CHECK-SAME: heap = [{op = "a", reason = "returned"}]
// CHECK: memref.alloc() {alignment = 64 : i64} : memref<4x4xf32>
func.func @main(%x: memref<16xf32>) -> memref<16xf32> {
  %a = memref.alloc() {alignment = 64 : i64} : memref<4x4xf32> loc("a")
  %flat = memref.collapse_shape %a [[0, 1]] : memref<4x4xf32> into memref<16xf32>
  memref.copy %x, %flat : memref<16xf32> to memref<16xf32>
  return %flat : memref<16xf32>
}

// -----

// Tests that buffers the pass cannot prove safe to place stay on the heap,
// each with its reason: an address stored to memory (it may be loaded and
// used after the buffer's last visible use), a buffer passed to a call that
// is not a runtime microkernel, one freed explicitly, one asking for more
// alignment than the arena gives, and one whose size goes through an i8,
// where a dim of up to 200 would wrap (no bound is then claimed).

// CHECK-LABEL: module attributes {kiln.memory_plan = {arena_bytes = 0 : i64, buffer_bytes = 0 : i64, buffers = []
// CHECK-SAME: {op = "stored", reason = "its address reaches affine.store"}
// CHECK-SAME: {op = "called", reason = "passed to a call that may keep it"}
// CHECK-SAME: {op = "freed", reason = "freed or reallocated explicitly"}
// CHECK-SAME: {op = "aligned", reason = "asks for 128-byte alignment, more than the arena's 64"}
// CHECK-SAME: {op = "narrow", reason = "dim 0 has no upper bound (it depends on arith.index_cast)"}
// CHECK-COUNT-5: memref.alloc
// CHECK-NOT: memref.view
func.func private @keep(memref<16xf32>)
func.func @main(%x: memref<?xf32> {kiln.dim_max = array<i64: 200>},
                %slot: memref<1xindex>) {
  %c0 = arith.constant 0 : index
  %c200 = arith.constant 200 : index
  %stored = memref.alloc() : memref<16xf32> loc("stored")
  %address = memref.extract_aligned_pointer_as_index %stored : memref<16xf32> -> index
  affine.store %address, %slot[0] : memref<1xindex>
  %called = memref.alloc() : memref<16xf32> loc("called")
  func.call @keep(%called) : (memref<16xf32>) -> ()
  %freed = memref.alloc() : memref<16xf32> loc("freed")
  memref.dealloc %freed : memref<16xf32>
  %aligned = memref.alloc() {alignment = 128 : i64} : memref<16xf32> loc("aligned")
  %n = memref.dim %x, %c0 : memref<?xf32>
  %n8 = arith.index_cast %n : index to i8
  %back = arith.index_cast %n8 : i8 to index
  %size = arith.subi %c200, %back : index
  %narrow = memref.alloc(%size) : memref<?xf32> loc("narrow")
  return
}
