//===- TensorFile.h - Read and write tensors as .npy and ONNX .pb files ---===//
//
// Host tensors for `kiln-run`: inputs come from NumPy `.npy` files or ONNX
// `TensorProto` files (`.pb`, as in ONNX's test_data_set_N/input_0.pb);
// outputs are written as `.npy`.
//
// Every reader validates the whole file before it trusts any of it and never
// crashes on a malformed one: on failure it returns false and sets `error` to
// a message that starts with the file name and says what is wrong, e.g.
//   x.npy: header: unsupported dtype '>f4' (big-endian)
//   x.npy: data is 20 bytes, but shape (2, 3) of f32 needs 24 bytes
// `out` is left unspecified on failure.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_TOOLS_COMMON_TENSORFILE_H
#define KILN_TOOLS_COMMON_TENSORFILE_H

#include "kiln/runtime.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::tools {

/// A dense row-major tensor in host memory. A rank-0 tensor (empty `shape`)
/// is a scalar with one element; a zero in `shape` makes it empty.
struct HostTensor {
  kiln_dtype_t dtype = KILN_DTYPE_INVALID;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data; ///< numElements() * kiln_dtype_size(dtype) bytes

  /// The product of `shape` (1 for a scalar), or -1 when a dim is negative or
  /// the product overflows int64_t.
  int64_t numElements() const;
};

/// Reads `path` by its extension: `.npy` (readNpy) or `.pb` (readTensorProto).
bool readTensorFile(const std::string &path, HostTensor &out, std::string &error);

/// Reads a NumPy .npy file, format version 1.0, 2.0 or 3.0, C order,
/// little-endian, of dtype '<f4' '<f8' '<f2' '<i8' '<i4' '|i1' or '|b1'.
bool readNpy(const std::string &path, HostTensor &out, std::string &error);

/// Reads a serialized ONNX TensorProto of data_type FLOAT, DOUBLE, FLOAT16,
/// BFLOAT16, INT64, INT32, INT8 or BOOL, from raw_data or the typed fields.
/// External data and segments are refused.
bool readTensorProto(const std::string &path, HostTensor &out, std::string &error);

/// Writes `t` as a version 1.0 .npy file (2.0 only if the header does not fit
/// 1.0's 16-bit length), with the header padded as numpy pads it. bf16 has no
/// .npy dtype and is refused.
bool writeNpy(const std::string &path, const HostTensor &t, std::string &error);

} // namespace kiln::tools

#endif // KILN_TOOLS_COMMON_TENSORFILE_H
