//===- TensorFile.cpp - Read and write tensors as .npy and ONNX .pb files -===//
//
// .npy: https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html
//   "\x93NUMPY" major minor, a little-endian header length (uint16 for 1.0,
//   uint32 for 2.0 and 3.0), then the header: a Python dict literal
//   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } padded with
//   spaces and a final '\n', then the raw data.
// .pb: one serialized onnx::TensorProto.
//
//===----------------------------------------------------------------------===//
#include "tools/common/TensorFile.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <utility>
#include <sys/stat.h>

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "TensorFile assumes a little-endian host: .npy and ONNX raw_data "
              "are read and written as little-endian bytes without swapping");

namespace kiln::tools {

int64_t HostTensor::numElements() const {
  bool empty = false;
  for (int64_t d : shape) {
    if (d < 0)
      return -1;
    empty |= d == 0;
  }
  if (empty)
    return 0;
  int64_t n = 1;
  for (int64_t d : shape)
    if (__builtin_mul_overflow(n, d, &n))
      return -1;
  return n;
}

namespace {

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// Python's repr of a shape tuple: "()", "(3,)", "(2, 3)".
std::string pyShape(const std::vector<int64_t> &shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1)
    s += ",";
  return s + ")";
}

/// ONNX-style dims: "[]", "[3]", "[2, 3]".
std::string onnxDims(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

/// Bytes shown in a message: printable ASCII as is, the rest as \xNN.
std::string escapeBytes(const char *p, size_t n) {
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    unsigned char c = static_cast<unsigned char>(p[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\' && c != '\'') {
      s += static_cast<char>(c);
    } else {
      char buf[5];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      s += buf;
    }
  }
  return s;
}

/// Elements times bytes per element, or -1 on overflow.
int64_t byteCount(int64_t elements, size_t itemSize) {
  int64_t bytes;
  if (elements < 0 || __builtin_mul_overflow(elements, static_cast<int64_t>(itemSize), &bytes))
    return -1;
  return bytes;
}

/// An open file for reading that closes itself.
class InputFile {
public:
  ~InputFile() {
    if (f_)
      std::fclose(f_);
  }

  /// Opens `path` and checks that it is a regular file.
  bool open(const std::string &path, std::string &error) {
    f_ = std::fopen(path.c_str(), "rb");
    if (!f_) {
      error = path + ": cannot open: " + std::strerror(errno);
      return false;
    }
    struct stat st;
    if (fstat(fileno(f_), &st) != 0) {
      error = path + ": cannot stat: " + std::strerror(errno);
      return false;
    }
    if (!S_ISREG(st.st_mode)) {
      error = path + ": not a regular file";
      return false;
    }
    size_ = static_cast<uint64_t>(st.st_size);
    return true;
  }

  uint64_t size() const { return size_; }

  /// Reads exactly `n` bytes at the current position.
  bool read(void *dst, size_t n, const std::string &path, std::string &error) {
    if (n == 0)
      return true;
    size_t got = std::fread(dst, 1, n, f_);
    if (got == n)
      return true;
    if (std::ferror(f_))
      error = path + ": read error: " + std::strerror(errno);
    else
      error = path + ": unexpected end of file (the file changed while it was read?)";
    return false;
  }

private:
  std::FILE *f_ = nullptr;
  uint64_t size_ = 0;
};

//===----------------------------------------------------------------------===//
// .npy header
//===----------------------------------------------------------------------===//

constexpr char kNpyMagic[] = "\x93NUMPY";
constexpr size_t kNpyMagicLen = 6;
constexpr size_t kNpyArrayAlign = 64;
constexpr size_t kNpyGrowthAxisMaxDigits = 21; // numpy >= 1.23's spare room

struct NpyHeader {
  std::string descr;
  bool fortranOrder = false;
  std::vector<int64_t> shape;
};

/// Parses the header dict, the subset of Python literal syntax numpy writes:
///   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
/// Errors are "header: ..." (the caller prefixes the file name).
class NpyHeaderParser {
public:
  explicit NpyHeaderParser(const std::string &text) : s_(text) {}

  bool parse(NpyHeader &h, std::string &error) {
    bool haveDescr = false, haveFortran = false, haveShape = false;
    skipSpace();
    if (!expect('{', "the header dict to start with '{'", error))
      return false;
    while (true) {
      skipSpace();
      if (peek() == '}') {
        ++pos_;
        break;
      }
      std::string key;
      if (!parseString(key, "a dict key", error))
        return false;
      skipSpace();
      if (!expect(':', "':' after key '" + key + "'", error))
        return false;
      skipSpace();
      bool *seen;
      if (key == "descr") {
        seen = &haveDescr;
        if (peek() == '[') {
          error = "header: structured dtypes (a list in 'descr') are not supported";
          return false;
        }
        if (!parseString(h.descr, "a dtype string for 'descr'", error))
          return false;
      } else if (key == "fortran_order") {
        seen = &haveFortran;
        if (!parseBool(h.fortranOrder, error))
          return false;
      } else if (key == "shape") {
        seen = &haveShape;
        if (!parseShape(h.shape, error))
          return false;
      } else {
        error = "header: unexpected key '" + escapeBytes(key.data(), key.size()) +
                "' (expected 'descr', 'fortran_order' and 'shape')";
        return false;
      }
      if (*seen) {
        error = "header: duplicate key '" + key + "'";
        return false;
      }
      *seen = true;
      skipSpace();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() == '}') {
        ++pos_;
        break;
      }
      return fail("',' or '}' after the value of '" + key + "'", error);
    }
    skipSpace();
    if (pos_ != s_.size())
      return fail("only padding after the header dict", error);
    for (auto [have, name] : {std::pair{haveDescr, "descr"},
                              std::pair{haveFortran, "fortran_order"},
                              std::pair{haveShape, "shape"}}) {
      if (!have) {
        error = std::string("header: missing key '") + name + "'";
        return false;
      }
    }
    return true;
  }

private:
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  bool atEnd() const { return pos_ >= s_.size(); }

  void skipSpace() {
    while (!atEnd() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' ||
                        s_[pos_] == '\r'))
      ++pos_;
  }

  /// Sets a syntax error naming what was expected, what was found and where.
  bool fail(const std::string &expected, std::string &error) {
    std::string found =
        atEnd() ? std::string("the end of the header")
                : "'" + escapeBytes(s_.data() + pos_, std::min<size_t>(16, s_.size() - pos_)) +
                      "'";
    error = "header: syntax error at offset " + std::to_string(pos_) + ": expected " +
            expected + ", found " + found;
    return false;
  }

  bool expect(char c, const std::string &what, std::string &error) {
    if (peek() != c || atEnd())
      return fail(what, error);
    ++pos_;
    return true;
  }

  bool parseString(std::string &out, const std::string &what, std::string &error) {
    char quote = peek();
    if (atEnd() || (quote != '\'' && quote != '"'))
      return fail(what, error);
    size_t start = ++pos_;
    while (!atEnd() && s_[pos_] != quote) {
      if (s_[pos_] == '\\') {
        error = "header: escape sequences in strings are not supported (offset " +
                std::to_string(pos_) + ")";
        return false;
      }
      if (s_[pos_] == '\n') {
        error = "header: unterminated string at offset " + std::to_string(start - 1);
        return false;
      }
      ++pos_;
    }
    if (atEnd()) {
      error = "header: unterminated string at offset " + std::to_string(start - 1);
      return false;
    }
    out = s_.substr(start, pos_ - start);
    ++pos_;
    return true;
  }

  bool parseBool(bool &out, std::string &error) {
    for (auto [word, value] : {std::pair{"True", true}, std::pair{"False", false}}) {
      size_t n = std::strlen(word);
      if (s_.compare(pos_, n, word) == 0 &&
          (pos_ + n == s_.size() || !std::isalnum(static_cast<unsigned char>(s_[pos_ + n])))) {
        pos_ += n;
        out = value;
        return true;
      }
    }
    return fail("True or False for 'fortran_order'", error);
  }

  /// A non-negative int; Python 2's 'L' suffix is accepted.
  bool parseDim(int64_t &out, std::string &error) {
    size_t start = pos_;
    bool negative = peek() == '-';
    if (negative)
      ++pos_;
    if (!std::isdigit(static_cast<unsigned char>(peek())))
      return fail("an integer dimension in 'shape'", error);
    uint64_t v = 0;
    bool overflow = false;
    while (std::isdigit(static_cast<unsigned char>(peek()))) {
      unsigned digit = static_cast<unsigned>(s_[pos_++] - '0');
      if (v > (static_cast<uint64_t>(INT64_MAX) - digit) / 10)
        overflow = true;
      else
        v = v * 10 + digit;
    }
    if (peek() == 'L' || peek() == 'l')
      ++pos_;
    std::string text = s_.substr(start, pos_ - start);
    if (overflow) {
      error = "header: dimension " + text + " in 'shape' does not fit in int64";
      return false;
    }
    if (negative && v != 0) {
      error = "header: negative dimension " + text + " in 'shape'";
      return false;
    }
    out = static_cast<int64_t>(v);
    return true;
  }

  /// A tuple of ints: "()", "(3,)", "(2, 3)", "(2, 3,)".
  bool parseShape(std::vector<int64_t> &out, std::string &error) {
    out.clear();
    if (!expect('(', "a tuple for 'shape'", error))
      return false;
    skipSpace();
    if (peek() == ')') {
      ++pos_;
      return true;
    }
    bool sawComma = false;
    while (true) {
      int64_t d;
      if (!parseDim(d, error))
        return false;
      out.push_back(d);
      skipSpace();
      if (peek() == ',') {
        ++pos_;
        sawComma = true;
        skipSpace();
        if (peek() == ')') {
          ++pos_;
          return true;
        }
        continue;
      }
      if (peek() == ')') {
        ++pos_;
        if (!sawComma) {
          error = "header: 'shape' is (" + std::to_string(d) +
                  "), an int, not a tuple; a 1-D shape is written (" + std::to_string(d) + ",)";
          return false;
        }
        return true;
      }
      return fail("',' or ')' in 'shape'", error);
    }
  }

  const std::string &s_;
  size_t pos_ = 0;
};

/// Maps a .npy descr to a Kiln dtype, or sets an error ("header: ...").
bool npyDtype(const std::string &descr, kiln_dtype_t &dtype, std::string &error) {
  std::string shown = "'" + escapeBytes(descr.data(), descr.size()) + "'";
  const char *supported =
      "supported: '<f4' '<f8' '<f2' '<i8' '<i4' '<i2' '|i1' '<u8' '<u4' '<u2' '|u1' '|b1'";
  char order = descr.empty() ? '\0' : descr[0];
  // numpy always writes a byte-order character; '=' and none mean native,
  // which is little-endian here.
  std::string code = (order == '<' || order == '>' || order == '|' || order == '=')
                         ? descr.substr(1)
                         : descr;
  struct Known {
    const char *code;
    kiln_dtype_t dtype;
  };
  static const Known known[] = {
      {"f4", KILN_DTYPE_F32}, {"f8", KILN_DTYPE_F64}, {"f2", KILN_DTYPE_F16},
      {"i8", KILN_DTYPE_I64}, {"i4", KILN_DTYPE_I32}, {"i2", KILN_DTYPE_I16},
      {"i1", KILN_DTYPE_I8},
      {"u8", KILN_DTYPE_U64}, {"u4", KILN_DTYPE_U32}, {"u2", KILN_DTYPE_U16},
      {"u1", KILN_DTYPE_U8},
      {"b1", KILN_DTYPE_BOOL},
  };
  for (const Known &k : known) {
    if (code != k.code)
      continue;
    bool singleByte = code[1] == '1';
    if (order == '>' && !singleByte) {
      error = "header: unsupported dtype " + shown + " (big-endian; " + supported + ")";
      return false;
    }
    if (order == '|' && !singleByte) {
      error = "header: unsupported dtype " + shown +
              " ('|' byte order on a multi-byte type; " + supported + ")";
      return false;
    }
    dtype = k.dtype;
    return true;
  }
  std::string why;
  if (!code.empty() && code[0] == 'c')
    why = "complex is not supported";
  else if (!code.empty() && (code[0] == 'U' || code[0] == 'S' || code[0] == 'O'))
    why = "strings and objects are not supported";
  else if (!code.empty() && code[0] == 'V')
    why = "void/structured dtypes are not supported; bfloat16 has no .npy dtype";
  std::string note = why.empty() ? std::string(supported) : why + "; " + supported;
  error = "header: unsupported dtype " + shown + " (" + note + ")";
  return false;
}

const char *npyDescr(kiln_dtype_t dtype) {
  switch (dtype) {
  case KILN_DTYPE_F32:
    return "<f4";
  case KILN_DTYPE_F64:
    return "<f8";
  case KILN_DTYPE_F16:
    return "<f2";
  case KILN_DTYPE_I64:
    return "<i8";
  case KILN_DTYPE_I32:
    return "<i4";
  case KILN_DTYPE_I16:
    return "<i2";
  case KILN_DTYPE_I8:
    return "|i1";
  case KILN_DTYPE_U64:
    return "<u8";
  case KILN_DTYPE_U32:
    return "<u4";
  case KILN_DTYPE_U16:
    return "<u2";
  case KILN_DTYPE_U8:
    return "|u1";
  case KILN_DTYPE_BOOL:
    return "|b1";
  default:
    return nullptr;
  }
}

/// Bools must be 0 or 1, the runtime's representation.
bool checkBoolBytes(const std::vector<uint8_t> &data, const std::string &where,
                    std::string &error) {
  for (size_t i = 0; i < data.size(); ++i) {
    if (data[i] > 1) {
      error = where + ": bool element " + std::to_string(i) + " is " +
              std::to_string(data[i]) + ", not 0 or 1";
      return false;
    }
  }
  return true;
}

std::string extensionOf(const std::string &path) {
  size_t slash = path.find_last_of('/');
  size_t dot = path.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash))
    return "";
  std::string ext = path.substr(dot);
  for (char &c : ext)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext;
}

} // namespace

//===----------------------------------------------------------------------===//
// Public API
//===----------------------------------------------------------------------===//

bool readTensorFile(const std::string &path, HostTensor &out, std::string &error) {
  std::string ext = extensionOf(path);
  if (ext == ".npy")
    return readNpy(path, out, error);
  if (ext == ".pb")
    return readTensorProto(path, out, error);
  error = path + ": unknown tensor file type " +
          (ext.empty() ? std::string("(no extension)") : "'" + ext + "'") +
          "; expected .npy (NumPy) or .pb (ONNX TensorProto)";
  return false;
}

bool readNpy(const std::string &path, HostTensor &out, std::string &error) {
  InputFile file;
  if (!file.open(path, error))
    return false;
  const uint64_t fileSize = file.size();

  // Magic and version.
  char prefix[12] = {};
  size_t prefixLen = static_cast<size_t>(std::min<uint64_t>(fileSize, 8));
  if (!file.read(prefix, prefixLen, path, error))
    return false;
  if (prefixLen < kNpyMagicLen || std::memcmp(prefix, kNpyMagic, kNpyMagicLen) != 0) {
    error = path + ": not a .npy file: bad magic '" +
            escapeBytes(prefix, std::min(prefixLen, kNpyMagicLen)) + "' (expected '\\x93NUMPY')";
    if (prefixLen >= 4 && std::memcmp(prefix, "PK\x03\x04", 4) == 0)
      error += "; this looks like a .npz zip archive";
    return false;
  }
  if (prefixLen < 8) {
    error = path + ": truncated: the file is " + std::to_string(fileSize) +
            " bytes and ends inside the format version";
    return false;
  }
  unsigned major = static_cast<unsigned char>(prefix[6]);
  unsigned minor = static_cast<unsigned char>(prefix[7]);
  if (!((major == 1 || major == 2 || major == 3) && minor == 0)) {
    error = path + ": unsupported .npy format version " + std::to_string(major) + "." +
            std::to_string(minor) + " (supported: 1.0, 2.0, 3.0)";
    return false;
  }

  // Header length.
  const size_t lenSize = major == 1 ? 2 : 4;
  if (fileSize < 8 + lenSize) {
    error = path + ": truncated: the file is " + std::to_string(fileSize) +
            " bytes and ends inside the header length";
    return false;
  }
  unsigned char lenBytes[4] = {};
  if (!file.read(lenBytes, lenSize, path, error))
    return false;
  uint64_t headerLen = 0;
  for (size_t i = 0; i < lenSize; ++i)
    headerLen |= static_cast<uint64_t>(lenBytes[i]) << (8 * i);
  const uint64_t dataOffset = 8 + lenSize + headerLen;
  if (dataOffset > fileSize) {
    error = path + ": truncated: header length " + std::to_string(headerLen) +
            " puts the data at byte " + std::to_string(dataOffset) + ", but the file is " +
            std::to_string(fileSize) + " bytes";
    return false;
  }

  // Header dict.
  std::string headerText(static_cast<size_t>(headerLen), '\0');
  if (!file.read(headerText.data(), headerText.size(), path, error))
    return false;
  if (headerText.find('\0') != std::string::npos) {
    error = path + ": header: contains a NUL byte";
    return false;
  }
  NpyHeader header;
  if (!NpyHeaderParser(headerText).parse(header, error) ||
      !npyDtype(header.descr, out.dtype, error)) {
    error = path + ": " + error;
    return false;
  }
  if (header.fortranOrder) {
    error = path + ": header: fortran_order is True; only C-order arrays are supported "
                   "(save np.ascontiguousarray(a))";
    return false;
  }
  out.shape = header.shape;

  // Data.
  const size_t itemSize = kiln_dtype_size(out.dtype);
  const int64_t elements = out.numElements();
  const int64_t expected = byteCount(elements, itemSize);
  if (elements < 0 || expected < 0) {
    error = path + ": header: shape " + pyShape(out.shape) + " of " +
            kiln_dtype_name(out.dtype) + " has more bytes than fit in int64";
    return false;
  }
  const uint64_t actual = fileSize - dataOffset;
  if (actual != static_cast<uint64_t>(expected)) {
    error = path + ": data is " + std::to_string(actual) + " bytes, but shape " +
            pyShape(out.shape) + " of " + kiln_dtype_name(out.dtype) + " needs " +
            std::to_string(expected) + " bytes" +
            (actual < static_cast<uint64_t>(expected) ? " (truncated file?)" : "");
    return false;
  }
  out.data.resize(static_cast<size_t>(expected));
  if (!file.read(out.data.data(), out.data.size(), path, error))
    return false;
  if (out.dtype == KILN_DTYPE_BOOL && !checkBoolBytes(out.data, path, error))
    return false;
  return true;
}

bool readTensorProto(const std::string &path, HostTensor &out, std::string &error) {
  using onnx::TensorProto;
  InputFile file;
  if (!file.open(path, error))
    return false;
  if (file.size() > static_cast<uint64_t>(INT_MAX)) {
    error = path + ": " + std::to_string(file.size()) +
            " bytes is larger than protobuf's 2 GiB limit";
    return false;
  }
  std::string bytes(static_cast<size_t>(file.size()), '\0');
  if (!file.read(bytes.data(), bytes.size(), path, error))
    return false;
  TensorProto proto;
  if (!proto.ParseFromString(bytes)) {
    error = path + ": not a valid ONNX TensorProto (protobuf parsing failed)";
    return false;
  }
  bytes.clear();
  bytes.shrink_to_fit();

  std::string where = path;
  if (!proto.name().empty())
    where += ": tensor '" + proto.name() + "'";

  // Storage that is not in this message.
  if (proto.data_location() == TensorProto::EXTERNAL || proto.external_data_size() > 0) {
    std::string location;
    for (const auto &entry : proto.external_data())
      if (entry.key() == "location")
        location = entry.value();
    error = where + ": uses external data" +
            (location.empty() ? std::string() : " (location '" + location + "')") +
            "; only tensors stored inside the .pb file are supported";
    return false;
  }
  if (proto.has_segment()) {
    error = where + ": segmented tensors are not supported";
    return false;
  }

  // Element type.
  const int dataType = proto.data_type();
  if (dataType == TensorProto::UNDEFINED) {
    error = where + ": data_type is not set (UNDEFINED)";
    return false;
  }
  if (!TensorProto::DataType_IsValid(dataType)) {
    error = where + ": unknown data_type " + std::to_string(dataType);
    return false;
  }
  const std::string typeName =
      TensorProto::DataType_Name(static_cast<TensorProto::DataType>(dataType));
  switch (dataType) {
  case TensorProto::FLOAT:
    out.dtype = KILN_DTYPE_F32;
    break;
  case TensorProto::DOUBLE:
    out.dtype = KILN_DTYPE_F64;
    break;
  case TensorProto::FLOAT16:
    out.dtype = KILN_DTYPE_F16;
    break;
  case TensorProto::BFLOAT16:
    out.dtype = KILN_DTYPE_BF16;
    break;
  case TensorProto::INT64:
    out.dtype = KILN_DTYPE_I64;
    break;
  case TensorProto::INT32:
    out.dtype = KILN_DTYPE_I32;
    break;
  case TensorProto::INT16:
    out.dtype = KILN_DTYPE_I16;
    break;
  case TensorProto::INT8:
    out.dtype = KILN_DTYPE_I8;
    break;
  case TensorProto::UINT64:
    out.dtype = KILN_DTYPE_U64;
    break;
  case TensorProto::UINT32:
    out.dtype = KILN_DTYPE_U32;
    break;
  case TensorProto::UINT16:
    out.dtype = KILN_DTYPE_U16;
    break;
  case TensorProto::UINT8:
    out.dtype = KILN_DTYPE_U8;
    break;
  case TensorProto::BOOL:
    out.dtype = KILN_DTYPE_BOOL;
    break;
  default:
    error = where + ": unsupported data_type " + typeName +
            (dataType == TensorProto::STRING ? ": string tensors are not supported" : "") +
            " (supported: FLOAT, DOUBLE, FLOAT16, BFLOAT16, INT64, INT32, INT16, INT8, "
            "UINT64, UINT32, UINT16, UINT8, BOOL)";
    return false;
  }

  // Shape.
  out.shape.assign(proto.dims().begin(), proto.dims().end());
  for (size_t i = 0; i < out.shape.size(); ++i) {
    if (out.shape[i] < 0) {
      error = where + ": dims " + onnxDims(out.shape) + ": dim " + std::to_string(i) +
              " is negative";
      return false;
    }
  }
  const size_t itemSize = kiln_dtype_size(out.dtype);
  const int64_t elements = out.numElements();
  const int64_t expectedBytes = byteCount(elements, itemSize);
  if (elements < 0 || expectedBytes < 0) {
    error = where + ": dims " + onnxDims(out.shape) + " of " + typeName +
            " have more bytes than fit in int64";
    return false;
  }

  // Which typed field carries this data_type (int32_data also carries
  // FLOAT16/BFLOAT16 bit patterns, INT16, INT8, UINT16, UINT8 and BOOL;
  // uint64_data carries UINT32 and UINT64).
  const char *fieldName;
  int fieldSize;
  switch (dataType) {
  case TensorProto::FLOAT:
    fieldName = "float_data";
    fieldSize = proto.float_data_size();
    break;
  case TensorProto::DOUBLE:
    fieldName = "double_data";
    fieldSize = proto.double_data_size();
    break;
  case TensorProto::INT64:
    fieldName = "int64_data";
    fieldSize = proto.int64_data_size();
    break;
  case TensorProto::UINT32:
  case TensorProto::UINT64:
    fieldName = "uint64_data";
    fieldSize = proto.uint64_data_size();
    break;
  default:
    fieldName = "int32_data";
    fieldSize = proto.int32_data_size();
    break;
  }
  const std::pair<const char *, int> fields[] = {
      {"float_data", proto.float_data_size()},   {"double_data", proto.double_data_size()},
      {"int64_data", proto.int64_data_size()},   {"int32_data", proto.int32_data_size()},
      {"uint64_data", proto.uint64_data_size()}, {"string_data", proto.string_data_size()},
  };
  for (const auto &[name, size] : fields) {
    if (size > 0 && std::strcmp(name, fieldName) != 0) {
      error = where + ": a " + typeName + " tensor has " + std::to_string(size) +
              " values in " + name + "; its data belongs in raw_data or " + fieldName;
      return false;
    }
  }
  if (proto.has_raw_data() && fieldSize > 0) {
    error = where + ": both raw_data and " + fieldName + " are set; exactly one may be";
    return false;
  }

  if (proto.has_raw_data()) {
    const std::string &raw = proto.raw_data();
    if (raw.size() != static_cast<uint64_t>(expectedBytes)) {
      error = where + ": raw_data is " + std::to_string(raw.size()) + " bytes, but dims " +
              onnxDims(out.shape) + " of " + typeName + " need " +
              std::to_string(expectedBytes) + " bytes";
      return false;
    }
    out.data.assign(raw.begin(), raw.end());
    if (out.dtype == KILN_DTYPE_BOOL && !checkBoolBytes(out.data, where + ": raw_data", error))
      return false;
    return true;
  }

  if (static_cast<int64_t>(fieldSize) != elements) {
    if (fieldSize == 0)
      error = where + ": no data: dims " + onnxDims(out.shape) + " need " +
              std::to_string(elements) + " elements, but neither raw_data nor " + fieldName +
              " is set";
    else
      error = where + ": " + fieldName + " has " + std::to_string(fieldSize) +
              " values, but dims " + onnxDims(out.shape) + " need " + std::to_string(elements);
    return false;
  }
  out.data.resize(static_cast<size_t>(expectedBytes));
  uint8_t *dst = out.data.data();
  auto copyAll = [&](const void *src) {
    if (!out.data.empty())
      std::memcpy(dst, src, out.data.size());
  };
  switch (dataType) {
  case TensorProto::FLOAT:
    copyAll(proto.float_data().data());
    return true;
  case TensorProto::DOUBLE:
    copyAll(proto.double_data().data());
    return true;
  case TensorProto::INT64:
    copyAll(proto.int64_data().data());
    return true;
  case TensorProto::INT32:
    copyAll(proto.int32_data().data());
    return true;
  case TensorProto::UINT64:
    copyAll(proto.uint64_data().data());
    return true;
  case TensorProto::UINT32:
    for (int i = 0; i < fieldSize; ++i) {
      uint64_t v = proto.uint64_data(i);
      if (v > UINT32_MAX) {
        error = where + ": uint64_data[" + std::to_string(i) + "] = " + std::to_string(v) +
                " is out of range for UINT32 (0..4294967295)";
        return false;
      }
      uint32_t narrow = static_cast<uint32_t>(v);
      std::memcpy(dst + 4 * static_cast<size_t>(i), &narrow, 4);
    }
    return true;
  default:
    break;
  }
  // Narrow int32_data values, checking each one's range.
  int32_t lo, hi;
  const char *range;
  switch (dataType) {
  case TensorProto::FLOAT16:
  case TensorProto::BFLOAT16:
    lo = 0, hi = 65535, range = "16-bit patterns 0..65535";
    break;
  case TensorProto::INT16:
    lo = -32768, hi = 32767, range = "-32768..32767";
    break;
  case TensorProto::INT8:
    lo = -128, hi = 127, range = "-128..127";
    break;
  case TensorProto::UINT16:
    lo = 0, hi = 65535, range = "0..65535";
    break;
  case TensorProto::UINT8:
    lo = 0, hi = 255, range = "0..255";
    break;
  default: // BOOL
    lo = 0, hi = 1, range = "0 or 1";
    break;
  }
  for (int i = 0; i < fieldSize; ++i) {
    int32_t v = proto.int32_data(i);
    if (v < lo || v > hi) {
      error = where + ": int32_data[" + std::to_string(i) + "] = " + std::to_string(v) +
              " is out of range for " + typeName + " (" + range + ")";
      return false;
    }
    if (itemSize == 2) {
      uint16_t bits = static_cast<uint16_t>(v);
      std::memcpy(dst + 2 * static_cast<size_t>(i), &bits, 2);
    } else {
      dst[i] = static_cast<uint8_t>(v); // two's complement for INT8
    }
  }
  return true;
}

bool writeNpy(const std::string &path, const HostTensor &t, std::string &error) {
  const char *descr = npyDescr(t.dtype);
  if (!descr) {
    error = path + ": cannot write dtype " + kiln_dtype_name(t.dtype) + " as .npy" +
            (t.dtype == KILN_DTYPE_BF16 ? " (numpy has no bfloat16)" : "");
    return false;
  }
  const int64_t elements = t.numElements();
  const int64_t expected = byteCount(elements, kiln_dtype_size(t.dtype));
  if (elements < 0 || expected < 0) {
    error = path + ": invalid shape " + pyShape(t.shape) +
            " (a negative dim, or more bytes than fit in int64)";
    return false;
  }
  if (t.data.size() != static_cast<uint64_t>(expected)) {
    error = path + ": tensor data is " + std::to_string(t.data.size()) + " bytes, but shape " +
            pyShape(t.shape) + " of " + kiln_dtype_name(t.dtype) + " needs " +
            std::to_string(expected) + " bytes";
    return false;
  }

  // The header exactly as numpy (>= 1.23) writes it: sorted keys, spare room
  // for the first dim to grow, then spaces and '\n' up to a 64-byte boundary.
  std::string dict = std::string("{'descr': '") + descr +
                     "', 'fortran_order': False, 'shape': " + pyShape(t.shape) + ", }";
  if (!t.shape.empty()) {
    size_t digits = std::to_string(t.shape[0]).size();
    if (digits < kNpyGrowthAxisMaxDigits)
      dict.append(kNpyGrowthAxisMaxDigits - digits, ' ');
  }
  auto wrap = [&](unsigned major, size_t lenSize, std::string &outHeader) {
    size_t hlen = dict.size() + 1;
    size_t padlen = kNpyArrayAlign - ((8 + lenSize + hlen) % kNpyArrayAlign);
    uint64_t total = hlen + padlen;
    if (lenSize == 2 && total > 0xffff)
      return false;
    outHeader.assign(kNpyMagic, kNpyMagicLen);
    outHeader += static_cast<char>(major);
    outHeader += '\0';
    for (size_t i = 0; i < lenSize; ++i)
      outHeader += static_cast<char>((total >> (8 * i)) & 0xff);
    outHeader += dict;
    outHeader.append(padlen, ' ');
    outHeader += '\n';
    return true;
  };
  std::string header;
  if (!wrap(1, 2, header))
    wrap(2, 4, header); // as numpy does when the header outgrows 1.0

  std::FILE *f = std::fopen(path.c_str(), "wb");
  if (!f) {
    error = path + ": cannot create: " + std::strerror(errno);
    return false;
  }
  bool ok = std::fwrite(header.data(), 1, header.size(), f) == header.size() &&
            (t.data.empty() || std::fwrite(t.data.data(), 1, t.data.size(), f) == t.data.size());
  int savedErrno = errno;
  if (std::fclose(f) != 0 && ok) {
    ok = false;
    savedErrno = errno;
  }
  if (!ok) {
    error = path + ": write failed: " + std::strerror(savedErrno);
    std::remove(path.c_str());
    return false;
  }
  return true;
}

} // namespace kiln::tools
