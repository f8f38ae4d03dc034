//===- Status.h - kiln_status_t construction --------------------*- C++ -*-===//
#ifndef KILN_RUNTIME_SRC_STATUS_H
#define KILN_RUNTIME_SRC_STATUS_H

#include "kiln/runtime.h"

#include <string>

struct kiln_status_s {
  kiln_status_code_t code;
  std::string message;
};

namespace kiln::rt {

/// A new error status; never returns NULL (allocation failures included).
kiln_status_t makeStatus(kiln_status_code_t code, std::string message);

} // namespace kiln::rt

#endif // KILN_RUNTIME_SRC_STATUS_H
