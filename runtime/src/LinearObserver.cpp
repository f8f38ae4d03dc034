//===- LinearObserver.cpp - Calling a session's linear observer -----------===//
#include "runtime/src/LinearObserver.h"

#include "runtime/src/Artifact.h"

namespace kiln::rt {
namespace {
thread_local const LinearObserver *currentObserver = nullptr;
} // namespace

ScopedLinearObserver::ScopedLinearObserver(const LinearObserver *observer)
    : previous_(currentObserver) {
  currentObserver = observer;
}

ScopedLinearObserver::~ScopedLinearObserver() { currentObserver = previous_; }

void observeLinear(const kiln_linear_params_t &params, bool after) {
  const LinearObserver *observer = currentObserver;
  if (!observer || !observer->callback)
    return;
  const int32_t weightIndex = observer->artifact->weightIndex(params.weight);
  ScopedLinearObserver off(nullptr);
  observer->callback(observer->userData, &params, weightIndex, after ? 1 : 0);
}

} // namespace kiln::rt
