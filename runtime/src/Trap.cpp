//===- Trap.cpp - Ending a run of generated code from inside it -----------===//
#include "runtime/src/Trap.h"

#include <csetjmp>
#include <cstdio>
#include <cstdlib>

namespace kiln::rt {
namespace {

/// Where a trap returns to: the run in progress on this thread.
struct TrapTarget {
  std::jmp_buf jump;
  Trapped trapped;
};
thread_local TrapTarget *currentTrapTarget = nullptr;

} // namespace

void callTrapping(void (*entry)(void **, void *), void **arguments, void *results,
                  Trapped &trapped) {
  TrapTarget target;
  TrapTarget *outer = currentTrapTarget;
  currentTrapTarget = &target;
  if (setjmp(target.jump) == 0)
    entry(arguments, results);
  currentTrapTarget = outer;
  trapped = target.trapped;
}

void trap(kiln_status_code_t code, const char *message) {
  TrapTarget *target = currentTrapTarget;
  if (!target) {
    std::fprintf(stderr, "kiln: %s (outside a run)\n", message);
    std::abort();
  }
  target->trapped = {code, message};
  std::longjmp(target->jump, 1);
}

} // namespace kiln::rt

// The trap of generated code's failed checks: the inputs broke what the
// model needs of them.
extern "C" KILN_API void kiln_rt_trap(const char *message) {
  kiln::rt::trap(KILN_STATUS_INVALID_ARGUMENT, message);
}
