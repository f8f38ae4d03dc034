//===- dtype.h - Element types' names and sizes -----------------*- C++ -*-===//
//
// Part of the compiler/runtime contract (kiln/abi/). Header-only, so that the
// compiler, which writes dtype names into manifests, and the runtime, which
// reads them back, share one table.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_ABI_DTYPE_H
#define KILN_ABI_DTYPE_H

#include "../runtime.h"

#include <cstddef>

namespace kiln::rt {

/// "f32", "i64", "bool", ...; "invalid" for an unknown value.
inline const char *dtypeName(kiln_dtype_t dtype) {
  switch (dtype) {
  case KILN_DTYPE_F32: return "f32";
  case KILN_DTYPE_F16: return "f16";
  case KILN_DTYPE_BF16: return "bf16";
  case KILN_DTYPE_F64: return "f64";
  case KILN_DTYPE_I64: return "i64";
  case KILN_DTYPE_I32: return "i32";
  case KILN_DTYPE_I16: return "i16";
  case KILN_DTYPE_I8: return "i8";
  case KILN_DTYPE_U64: return "u64";
  case KILN_DTYPE_U32: return "u32";
  case KILN_DTYPE_U16: return "u16";
  case KILN_DTYPE_U8: return "u8";
  case KILN_DTYPE_BOOL: return "bool";
  default: return "invalid";
  }
}

/// Bytes per element; 0 for an unknown value.
inline size_t dtypeSize(kiln_dtype_t dtype) {
  switch (dtype) {
  case KILN_DTYPE_F32: case KILN_DTYPE_I32: case KILN_DTYPE_U32: return 4;
  case KILN_DTYPE_F16: case KILN_DTYPE_BF16: case KILN_DTYPE_I16: case KILN_DTYPE_U16: return 2;
  case KILN_DTYPE_F64: case KILN_DTYPE_I64: case KILN_DTYPE_U64: return 8;
  case KILN_DTYPE_I8: case KILN_DTYPE_U8: case KILN_DTYPE_BOOL: return 1;
  default: return 0;
  }
}

} // namespace kiln::rt

#endif // KILN_ABI_DTYPE_H
