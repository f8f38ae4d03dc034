//===- LinearObserver.h - Calling a session's linear observer ---*- C++ -*-===//
//
// kiln_session_set_linear_observer's observer, made current on the thread
// that runs the session for the length of the run, so that
// kiln_ukernel_linear can call it around each product without the generated
// code passing anything more.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_SRC_LINEAROBSERVER_H
#define KILN_RUNTIME_SRC_LINEAROBSERVER_H

#include "kiln/abi/kernel_abi.h"
#include "kiln/runtime.h"

namespace kiln::rt {

class Artifact;

struct LinearObserver {
  kiln_linear_observer_t callback = nullptr;
  void *userData = nullptr;
  /// The model whose weights the observer's weight indices count.
  const Artifact *artifact = nullptr;
};

/// Makes `observer` (may be null) current on this thread for the lifetime
/// of the object.
class ScopedLinearObserver {
public:
  explicit ScopedLinearObserver(const LinearObserver *observer);
  ~ScopedLinearObserver();
  ScopedLinearObserver(const ScopedLinearObserver &) = delete;
  ScopedLinearObserver &operator=(const ScopedLinearObserver &) = delete;

private:
  const LinearObserver *previous_;
};

/// Calls this thread's current observer, if any, about `params` (before the
/// product, or after it), with observing off during the call.
void observeLinear(const kiln_linear_params_t &params, bool after);

} // namespace kiln::rt

#endif // KILN_RUNTIME_SRC_LINEAROBSERVER_H
