//===- Status.cpp - The status part of the C API --------------------------===//
#include "runtime/src/Status.h"

#include <new>

namespace {
// A status that cannot be allocated still has to signal failure; this one is
// never freed.
kiln_status_s outOfMemory{KILN_STATUS_RESOURCE_EXHAUSTED,
                          "out of memory while reporting an error"};
} // namespace

namespace kiln::rt {

kiln_status_t makeStatus(kiln_status_code_t code, std::string message) {
  auto *status = new (std::nothrow) kiln_status_s{code, std::move(message)};
  return status ? status : &outOfMemory;
}

} // namespace kiln::rt

extern "C" {

kiln_status_code_t kiln_status_code(kiln_status_t status) {
  return status ? status->code : KILN_STATUS_OK;
}

const char *kiln_status_message(kiln_status_t status) {
  return status ? status->message.c_str() : "OK";
}

void kiln_status_free(kiln_status_t status) {
  if (status != &outOfMemory)
    delete status;
}

} // extern "C"
