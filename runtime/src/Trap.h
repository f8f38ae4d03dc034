//===- Trap.h - Ending a run of generated code from inside it ---*- C++ -*-===//
//
// Generated code checks at run time what the manifest cannot express (inputs
// whose sizes must agree, gather indices in range) and calls kiln_rt_trap
// when a check fails. The runtime functions it calls end the run the same way
// when they cannot go on: the allocator out of memory, a microkernel given a
// code it does not know, a GPU runtime call the driver refused. A trap jumps
// back to the run's callTrapping, so whatever traps must hold nothing with a
// destructor when it does, and its message must outlive the jump.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_SRC_TRAP_H
#define KILN_RUNTIME_SRC_TRAP_H

#include "kiln/runtime.h"

namespace kiln::rt {

/// What ended a run early: code KILN_STATUS_OK when nothing did.
struct Trapped {
  kiln_status_code_t code = KILN_STATUS_OK;
  const char *message = nullptr;
};

/// Calls `entry(arguments, results)` on this thread; a trap inside it
/// returns here, with what it was given in `trapped`.
void callTrapping(void (*entry)(void **, void *), void **arguments, void *results,
                  Trapped &trapped);

/// Ends the run in progress on this thread, returning from its
/// callTrapping. Outside a run it prints the message and aborts.
[[noreturn]] void trap(kiln_status_code_t code, const char *message);

} // namespace kiln::rt

#endif // KILN_RUNTIME_SRC_TRAP_H
