// RUN: kiln-opt %s --split-input-file --kiln-asserts-to-traps | FileCheck %s

// The inputs are control flow as kilnc has it when the pass runs (after
// scf-to-cf): cf.assert ops in the blocks of func.func bodies.

// Tests that a cf.assert becomes a cf.cond_br on its condition to the rest
// of its block, or else to a new block that passes the address of the
// message to kiln_rt_trap and ends in llvm.unreachable; that the message is
// a private constant global holding the text and a NUL; and that the trap is
// declared once, as an llvm.func taking a pointer and returning nothing.

// CHECK-LABEL: module @one_assert
// CHECK: func.func @f(%[[OK:[a-zA-Z0-9_]+]]: i1, %[[X:[a-zA-Z0-9_]+]]: i32) -> i32 {
// CHECK-NEXT: cf.cond_br %[[OK]], ^[[CONTINUE:bb[0-9]+]], ^[[TRAP:bb[0-9]+]]
// CHECK-NEXT: ^[[TRAP]]:
// CHECK-NEXT: %[[MESSAGE:.+]] = llvm.mlir.addressof @[[GLOBAL:kiln_check_message[_0-9]*]] : !llvm.ptr
// CHECK-NEXT: llvm.call @kiln_rt_trap(%[[MESSAGE]]) : (!llvm.ptr) -> ()
// CHECK-NEXT: llvm.unreachable
// CHECK-NEXT: ^[[CONTINUE]]:
// CHECK-NEXT: %[[Y:.+]] = arith.addi %[[X]], %[[X]] : i32
// CHECK-NEXT: return %[[Y]] : i32
// CHECK-NEXT: }
// CHECK-NOT: cf.assert
// CHECK-DAG: llvm.func @kiln_rt_trap(!llvm.ptr){{$}}
// CHECK-DAG: llvm.mlir.global private constant @[[GLOBAL]]("node 'Add_3' (kiln.add): operand 1 dim 0 does not match the result's size\00")
// CHECK-NOT: llvm.func @kiln_rt_trap
module @one_assert {
  func.func @f(%ok: i1, %x: i32) -> i32 {
    cf.assert %ok, "node 'Add_3' (kiln.add): operand 1 dim 0 does not match the result's size"
    %y = arith.addi %x, %x : i32
    return %y : i32
  }
}

// -----

// Tests that asserts with the same message share one global, across
// functions too, that a different message gets its own, that two asserts in
// one block split it twice (the second in the first one's continuation),
// and that kiln_rt_trap is declared once for all of them.

// CHECK-LABEL: module @shared_messages
// CHECK: func.func @f(%[[A:[a-zA-Z0-9_]+]]: i1, %[[B:[a-zA-Z0-9_]+]]: i1) {
// CHECK-NEXT: cf.cond_br %[[A]], ^[[NEXT:bb[0-9]+]], ^[[TRAP_A:bb[0-9]+]]
// CHECK-NEXT: ^[[TRAP_A]]:
// CHECK-NEXT: %[[MA:.+]] = llvm.mlir.addressof @[[SAME:kiln_check_message[_0-9]*]] : !llvm.ptr
// CHECK-NEXT: llvm.call @kiln_rt_trap(%[[MA]])
// CHECK-NEXT: llvm.unreachable
// CHECK-NEXT: ^[[NEXT]]:
// CHECK-NEXT: cf.cond_br %[[B]], ^[[END:bb[0-9]+]], ^[[TRAP_B:bb[0-9]+]]
// CHECK-NEXT: ^[[TRAP_B]]:
// CHECK-NEXT: %[[MB:.+]] = llvm.mlir.addressof @[[OTHER:kiln_check_message[_0-9]*]] : !llvm.ptr
// CHECK-NEXT: llvm.call @kiln_rt_trap(%[[MB]])
// CHECK-NEXT: llvm.unreachable
// CHECK-NEXT: ^[[END]]:
// CHECK-NEXT: return
// CHECK: func.func @g(%[[C:[a-zA-Z0-9_]+]]: i1) {
// CHECK-NEXT: cf.cond_br %[[C]], ^{{bb[0-9]+}}, ^[[TRAP_C:bb[0-9]+]]
// CHECK-NEXT: ^[[TRAP_C]]:
// CHECK-NEXT: %[[MC:.+]] = llvm.mlir.addressof @[[SAME]] : !llvm.ptr
// CHECK-NEXT: llvm.call @kiln_rt_trap(%[[MC]])
// CHECK-NOT: cf.assert
// CHECK-DAG: llvm.func @kiln_rt_trap(!llvm.ptr)
// CHECK-DAG: llvm.mlir.global private constant @[[SAME]]("same message\00")
// CHECK-DAG: llvm.mlir.global private constant @[[OTHER]]("other message\00")
// CHECK-NOT: llvm.func @kiln_rt_trap
// CHECK-NOT: llvm.mlir.global
module @shared_messages {
  func.func @f(%a: i1, %b: i1) {
    cf.assert %a, "same message"
    cf.assert %b, "other message"
    return
  }
  func.func @g(%c: i1) {
    cf.assert %c, "same message"
    return
  }
}

// -----

// Tests that an assert in a loop body (a block with a back edge, after
// scf-to-cf) splits that block: the check's continuation keeps the rest of
// the body and the branch back to the header with its argument, and the
// header and exit are untouched.

// CHECK-LABEL: module @loop
// CHECK: func.func @f(%[[N:[a-zA-Z0-9_]+]]: index) -> index {
// CHECK: cf.br ^[[HEAD:bb[0-9]+]](%{{.+}} : index)
// CHECK-NEXT: ^[[HEAD]](%[[I:.+]]: index):
// CHECK-NEXT: %[[MORE:.+]] = arith.cmpi slt, %[[I]], %[[N]] : index
// CHECK-NEXT: cf.cond_br %[[MORE]], ^[[BODY:bb[0-9]+]], ^[[EXIT:bb[0-9]+]]
// CHECK-NEXT: ^[[BODY]]:
// CHECK-NEXT: %[[IN_RANGE:.+]] = arith.cmpi ult, %[[I]], %[[N]] : index
// CHECK-NEXT: cf.cond_br %[[IN_RANGE]], ^[[REST:bb[0-9]+]], ^[[TRAP:bb[0-9]+]]
// CHECK-NEXT: ^[[TRAP]]:
// CHECK-NEXT: %[[M:.+]] = llvm.mlir.addressof @[[GLOBAL:kiln_check_message[_0-9]*]] : !llvm.ptr
// CHECK-NEXT: llvm.call @kiln_rt_trap(%[[M]]) : (!llvm.ptr) -> ()
// CHECK-NEXT: llvm.unreachable
// CHECK-NEXT: ^[[REST]]:
// CHECK-NEXT: %[[NEXT:.+]] = arith.addi %[[I]], %{{.+}} : index
// CHECK-NEXT: cf.br ^[[HEAD]](%[[NEXT]] : index)
// CHECK-NEXT: ^[[EXIT]]:
// CHECK-NEXT: return %[[I]] : index
// CHECK: llvm.mlir.global private constant @[[GLOBAL]]("node 'Gather_2' (kiln.gather): an index is out of range for data dim 0\00")
module @loop {
  func.func @f(%n: index) -> index {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    cf.br ^head(%c0 : index)
  ^head(%i: index):
    %more = arith.cmpi slt, %i, %n : index
    cf.cond_br %more, ^body, ^exit
  ^body:
    %in_range = arith.cmpi ult, %i, %n : index
    cf.assert %in_range, "node 'Gather_2' (kiln.gather): an index is out of range for data dim 0"
    %next = arith.addi %i, %c1 : index
    cf.br ^head(%next : index)
  ^exit:
    return %i : index
  }
}

// -----

// Tests that an existing declaration of kiln_rt_trap is used, not declared
// again.

// CHECK-LABEL: module @declared_trap
// CHECK: llvm.func @kiln_rt_trap(!llvm.ptr)
// CHECK: llvm.call @kiln_rt_trap(
// CHECK-NOT: llvm.func @kiln_rt_trap
module @declared_trap {
  llvm.func @kiln_rt_trap(!llvm.ptr)
  func.func @f(%a: i1) {
    cf.assert %a, "declared"
    return
  }
}

// -----

// Tests that a module without asserts is left as it is: no trap declaration
// and no message globals.

// CHECK-LABEL: module @no_asserts
// CHECK-NEXT: func.func @f(%[[OK:[a-zA-Z0-9_]+]]: i1, %[[X:[a-zA-Z0-9_]+]]: i32) -> i32 {
// CHECK-NEXT: cf.cond_br %[[OK]], ^bb1, ^bb2
// CHECK-NEXT: ^bb1:
// CHECK-NEXT: return %[[X]] : i32
// CHECK-NEXT: ^bb2:
// CHECK-NEXT: llvm.unreachable
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NOT: kiln_rt_trap
// CHECK-NOT: llvm.mlir.global
module @no_asserts {
  func.func @f(%ok: i1, %x: i32) -> i32 {
    cf.cond_br %ok, ^bb1, ^bb2
  ^bb1:
    return %x : i32
  ^bb2:
    llvm.unreachable
  }
}

// -----

// Tests that the message global is named kiln_check_message when that name
// is free, even where a similar name (as a second run of the pass, or IR
// linked from another module, may leave) is taken, and that the existing
// global is left as it is.

// CHECK-LABEL: module @taken_similar_name
// CHECK: llvm.mlir.global private constant @kiln_check_message_0("already here\00")
// CHECK: func.func @f(
// CHECK: llvm.mlir.addressof @kiln_check_message : !llvm.ptr
// CHECK: llvm.mlir.global private constant @kiln_check_message("the new check\00")
// CHECK-NOT: llvm.mlir.global
module @taken_similar_name {
  llvm.mlir.global private constant @kiln_check_message_0("already here\00") {addr_space = 0 : i32}
  func.func @f(%ok: i1) {
    cf.assert %ok, "the new check"
    return
  }
}

// -----

// Tests that a message global whose name is taken is renamed to the first
// free kiln_check_message_N (here _1 and _2, as kiln_check_message and
// kiln_check_message_0 are taken), one per distinct message, and that the
// existing globals are left as they are.

// CHECK-LABEL: module @taken_names
// CHECK: llvm.mlir.global private constant @kiln_check_message("already here\00")
// CHECK: llvm.mlir.global private constant @kiln_check_message_0("also here\00")
// CHECK: func.func @f(
// CHECK: llvm.mlir.addressof @kiln_check_message_1 : !llvm.ptr
// CHECK: llvm.mlir.addressof @kiln_check_message_2 : !llvm.ptr
// CHECK: llvm.mlir.addressof @kiln_check_message_1 : !llvm.ptr
// CHECK-DAG: llvm.mlir.global private constant @kiln_check_message_1("the new check\00")
// CHECK-DAG: llvm.mlir.global private constant @kiln_check_message_2("another check\00")
// CHECK-NOT: llvm.mlir.global
module @taken_names {
  llvm.mlir.global private constant @kiln_check_message("already here\00") {addr_space = 0 : i32}
  llvm.mlir.global private constant @kiln_check_message_0("also here\00") {addr_space = 0 : i32}
  func.func @f(%a: i1, %b: i1) {
    cf.assert %a, "the new check"
    cf.assert %b, "another check"
    cf.assert %b, "the new check"
    return
  }
}
