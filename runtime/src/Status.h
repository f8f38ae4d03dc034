//===- Status.h - kiln_status_t construction --------------------*- C++ -*-===//
#ifndef KILN_RUNTIME_SRC_STATUS_H
#define KILN_RUNTIME_SRC_STATUS_H

#include "kiln/runtime.h"

#include <new>
#include <stdexcept>
#include <string>

struct kiln_status_s {
  kiln_status_code_t code;
  std::string message;
};

namespace kiln::rt {

/// A new error status; never returns NULL (allocation failures included).
kiln_status_t makeStatus(kiln_status_code_t code, std::string message);

/// Runs a C API call's body, turning any exception into a status that names
/// the call: none may cross the C API.
template <typename Body>
kiln_status_t guarded(const char *function, Body body) {
  try {
    return body();
  } catch (const std::bad_alloc &) {
    return makeStatus(KILN_STATUS_RESOURCE_EXHAUSTED,
                      std::string(function) + ": out of memory");
  } catch (const std::exception &e) {
    return makeStatus(KILN_STATUS_INTERNAL, std::string(function) + ": " + e.what());
  }
}

} // namespace kiln::rt

#endif // KILN_RUNTIME_SRC_STATUS_H
