//===- TensorFileTest.cpp - .npy and ONNX TensorProto tensor files --------===//
//
// readNpy / readTensorProto / writeNpy (tools/common/TensorFile.h): every
// supported dtype and layout is read back exactly, writeNpy produces the
// bytes np.save produces, and every malformed file fails (no crash) with a
// message that names the file and the defect.
//
//===----------------------------------------------------------------------===//
#include "tools/common/TensorFile.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <sys/stat.h>
#include <unistd.h>

namespace {

using kiln::tools::HostTensor;
using ::testing::HasSubstr;
using ::testing::StartsWith;

template <typename T> std::vector<uint8_t> bytesOf(const std::vector<T> &values) {
  std::vector<uint8_t> out(values.size() * sizeof(T));
  if (!out.empty())
    std::memcpy(out.data(), values.data(), out.size());
  return out;
}

/// A .npy file: magic, version, length, `dict` padded with spaces and '\n' to
/// a multiple of 64 bytes (unless `align` is false), then `data`.
std::string npyFile(const std::string &dict, const std::vector<uint8_t> &data,
                    unsigned major = 1, bool align = true) {
  size_t lenSize = major == 1 ? 2 : 4;
  std::string header = dict;
  if (align)
    while ((8 + lenSize + header.size() + 1) % 64 != 0)
      header += ' ';
  header += '\n';
  std::string out = std::string("\x93NUMPY", 6);
  out += static_cast<char>(major);
  out += '\0';
  for (size_t i = 0; i < lenSize; ++i)
    out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  out += header;
  out.append(data.begin(), data.end());
  return out;
}

std::string dict(const std::string &descr, const std::string &shape,
                 const std::string &fortran = "False") {
  return "{'descr': '" + descr + "', 'fortran_order': " + fortran + ", 'shape': " + shape +
         ", }";
}

class TensorFileTest : public ::testing::Test {
protected:
  void SetUp() override {
    char tmpl[] = "/tmp/kiln-tensorfile-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::string cmd = "rm -rf '" + dir_ + "'";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
  }

  std::string path(const std::string &name) const { return dir_ + "/" + name; }

  std::string writeFile(const std::string &name, const std::string &bytes) {
    std::ofstream out(path(name), std::ios::binary);
    out << bytes;
    return path(name);
  }

  std::string readBytes(const std::string &file) {
    std::ifstream in(file, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  std::string writeProto(const std::string &name, const onnx::TensorProto &t) {
    return writeFile(name, t.SerializeAsString());
  }

  HostTensor read(const std::string &file) {
    HostTensor t;
    std::string error;
    EXPECT_TRUE(kiln::tools::readTensorFile(file, t, error)) << error;
    return t;
  }

  /// Reads `file`, expects failure, and returns the message (which must start
  /// with the file name).
  std::string readError(const std::string &file) {
    HostTensor t;
    std::string error;
    EXPECT_FALSE(kiln::tools::readTensorFile(file, t, error))
        << "reading " << file << " should have failed";
    EXPECT_THAT(error, StartsWith(file));
    return error;
  }

  std::string npyError(const std::string &bytes) { return readError(writeFile("bad.npy", bytes)); }
  std::string pbError(const onnx::TensorProto &t) { return readError(writeProto("bad.pb", t)); }

  std::string dir_;
};

//===----------------------------------------------------------------------===//
// .npy: reading
//===----------------------------------------------------------------------===//

TEST_F(TensorFileTest, NpyFloat32) {
  std::vector<float> v = {1.5f, -2.f, 3.25f, 0.f, 1e30f, -7.f};
  HostTensor t = read(writeFile("a.npy", npyFile(dict("<f4", "(2, 3)"), bytesOf(v))));
  EXPECT_EQ(t.dtype, KILN_DTYPE_F32);
  EXPECT_EQ(t.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(t.numElements(), 6);
  EXPECT_EQ(t.data, bytesOf(v));
}

TEST_F(TensorFileTest, NpyEveryDtype) {
  struct Case {
    const char *descr;
    kiln_dtype_t dtype;
    std::vector<uint8_t> data; // 3 elements
  };
  const Case cases[] = {
      {"<f8", KILN_DTYPE_F64, bytesOf(std::vector<double>{1.0, -2.5, 1e300})},
      {"<f2", KILN_DTYPE_F16, bytesOf(std::vector<uint16_t>{0x3c00, 0xc000, 0x7bff})},
      {"<i8", KILN_DTYPE_I64, bytesOf(std::vector<int64_t>{-1, INT64_MAX, INT64_MIN})},
      {"<i4", KILN_DTYPE_I32, bytesOf(std::vector<int32_t>{-1, INT32_MAX, 7})},
      {"<i2", KILN_DTYPE_I16, bytesOf(std::vector<int16_t>{-32768, 0, 32767})},
      {"|i1", KILN_DTYPE_I8, bytesOf(std::vector<int8_t>{-128, 0, 127})},
      {"<u8", KILN_DTYPE_U64, bytesOf(std::vector<uint64_t>{0, UINT64_MAX, 7})},
      {"<u4", KILN_DTYPE_U32, bytesOf(std::vector<uint32_t>{0, UINT32_MAX, 7})},
      {"<u2", KILN_DTYPE_U16, bytesOf(std::vector<uint16_t>{0, 65535, 7})},
      {"|u1", KILN_DTYPE_U8, bytesOf(std::vector<uint8_t>{0, 255, 7})},
      {"|b1", KILN_DTYPE_BOOL, {1, 0, 1}},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.descr);
    HostTensor t = read(writeFile("a.npy", npyFile(dict(c.descr, "(3,)"), c.data)));
    EXPECT_EQ(t.dtype, c.dtype);
    EXPECT_EQ(t.shape, (std::vector<int64_t>{3}));
    EXPECT_EQ(t.data, c.data);
  }
}

TEST_F(TensorFileTest, NpyVersions2And3) {
  std::vector<int32_t> v = {1, 2, 3, 4};
  for (unsigned major : {2u, 3u}) {
    SCOPED_TRACE(major);
    HostTensor t = read(writeFile("a.npy", npyFile(dict("<i4", "(2, 2)"), bytesOf(v), major)));
    EXPECT_EQ(t.dtype, KILN_DTYPE_I32);
    EXPECT_EQ(t.shape, (std::vector<int64_t>{2, 2}));
    EXPECT_EQ(t.data, bytesOf(v));
  }
}

TEST_F(TensorFileTest, NpyScalarAndEmpty) {
  HostTensor scalar =
      read(writeFile("s.npy", npyFile(dict("<i8", "()"), bytesOf(std::vector<int64_t>{42}))));
  EXPECT_TRUE(scalar.shape.empty());
  EXPECT_EQ(scalar.numElements(), 1);
  EXPECT_EQ(scalar.data, bytesOf(std::vector<int64_t>{42}));

  HostTensor empty = read(writeFile("e.npy", npyFile(dict("<f4", "(1, 4, 0, 16)"), {})));
  EXPECT_EQ(empty.shape, (std::vector<int64_t>{1, 4, 0, 16}));
  EXPECT_EQ(empty.numElements(), 0);
  EXPECT_TRUE(empty.data.empty());

  // A zero dim makes the product 0 even when the other dims are huge.
  HostTensor huge = read(writeFile(
      "h.npy", npyFile(dict("<f4", "(4611686018427387904, 4611686018427387904, 0)"), {})));
  EXPECT_EQ(huge.numElements(), 0);
}

TEST_F(TensorFileTest, NpyHeaderSyntaxVariants) {
  std::vector<uint8_t> data = bytesOf(std::vector<float>{1, 2, 3});
  const char *dicts[] = {
      "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }",     // numpy
      "{'descr': '<f4', 'fortran_order': False, 'shape': (3,)}",       // no trailing comma
      "{\"shape\": (3, ), \"fortran_order\": False, \"descr\": \"<f4\"}", // order, quotes
      "{'descr':'<f4','fortran_order':False,'shape':(3L,)}",           // Python 2
      " {\n 'descr' : '<f4' ,\t'fortran_order' : False , 'shape' : ( 3 , ) , } ",
      "{'descr': 'f4', 'fortran_order': False, 'shape': (3,), }", // no byte order: native
  };
  for (const char *d : dicts) {
    SCOPED_TRACE(d);
    HostTensor t = read(writeFile("a.npy", npyFile(d, data)));
    EXPECT_EQ(t.dtype, KILN_DTYPE_F32);
    EXPECT_EQ(t.shape, (std::vector<int64_t>{3}));
    EXPECT_EQ(t.data, data);
  }
  // An unaligned header (old writers) is fine too.
  HostTensor t = read(writeFile("u.npy", npyFile(dict("<f4", "(3,)"), data, 1, false)));
  EXPECT_EQ(t.data, data);
}

//===----------------------------------------------------------------------===//
// .npy: writing
//===----------------------------------------------------------------------===//

TEST_F(TensorFileTest, WriteNpyMatchesNumpy) {
  // np.save(np.zeros((2, 3), np.float32)) writes exactly this 128-byte header
  // (numpy 1.24: 21 - len("2") spare spaces, then padding to 64 bytes).
  std::string dictText = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  std::string expected = std::string("\x93NUMPY\x01\x00\x76\x00", 10) + dictText;
  expected.append(127 - expected.size(), ' ');
  expected += '\n';
  ASSERT_EQ(expected.size(), 128u);

  HostTensor t;
  t.dtype = KILN_DTYPE_F32;
  t.shape = {2, 3};
  t.data = bytesOf(std::vector<float>{1, 2, 3, 4, 5, 6});
  std::string error;
  ASSERT_TRUE(kiln::tools::writeNpy(path("w.npy"), t, error)) << error;
  std::string bytes = readBytes(path("w.npy"));
  ASSERT_EQ(bytes.size(), 128u + 24u);
  EXPECT_EQ(bytes.substr(0, 128), expected);
  EXPECT_EQ(bytes.substr(128), std::string(t.data.begin(), t.data.end()));
}

TEST_F(TensorFileTest, WriteNpyRoundTripsEveryDtypeAndShape) {
  struct Case {
    kiln_dtype_t dtype;
    std::vector<int64_t> shape;
  };
  const Case cases[] = {
      {KILN_DTYPE_F32, {2, 3}},  {KILN_DTYPE_F64, {}},     {KILN_DTYPE_F16, {5}},
      {KILN_DTYPE_I64, {1, 4}},  {KILN_DTYPE_I32, {2, 1, 2}}, {KILN_DTYPE_I8, {7}},
      {KILN_DTYPE_BOOL, {3, 2}}, {KILN_DTYPE_F32, {1, 4, 0, 16}},
      {KILN_DTYPE_F32, {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}},
      {KILN_DTYPE_I8, {1000000}},
  };
  std::mt19937 rng(7);
  for (const Case &c : cases) {
    HostTensor t;
    t.dtype = c.dtype;
    t.shape = c.shape;
    SCOPED_TRACE(testing::PrintToString(c.shape));
    int64_t n = t.numElements();
    t.data.resize(n * kiln_dtype_size(c.dtype));
    for (auto &b : t.data)
      b = c.dtype == KILN_DTYPE_BOOL ? rng() % 2 : rng() % 256;
    std::string error;
    ASSERT_TRUE(kiln::tools::writeNpy(path("w.npy"), t, error)) << error;
    std::string bytes = readBytes(path("w.npy"));
    uint16_t hlen = static_cast<uint8_t>(bytes[8]) | static_cast<uint8_t>(bytes[9]) << 8;
    EXPECT_EQ(bytes[6], '\x01');
    EXPECT_EQ((10u + hlen) % 64, 0u) << "the data must start on a 64-byte boundary";
    EXPECT_EQ(bytes[10 + hlen - 1], '\n');
    HostTensor back = read(path("w.npy"));
    EXPECT_EQ(back.dtype, t.dtype);
    EXPECT_EQ(back.shape, t.shape);
    EXPECT_EQ(back.data, t.data);
  }
}

TEST_F(TensorFileTest, WriteNpyErrors) {
  std::string error;
  HostTensor bf16;
  bf16.dtype = KILN_DTYPE_BF16;
  bf16.shape = {2};
  bf16.data.resize(4);
  EXPECT_FALSE(kiln::tools::writeNpy(path("b.npy"), bf16, error));
  EXPECT_THAT(error, HasSubstr("bfloat16"));

  HostTensor shortData;
  shortData.dtype = KILN_DTYPE_F32;
  shortData.shape = {2, 3};
  shortData.data.resize(20);
  EXPECT_FALSE(kiln::tools::writeNpy(path("s.npy"), shortData, error));
  EXPECT_THAT(error, HasSubstr("20 bytes"));
  EXPECT_THAT(error, HasSubstr("needs 24 bytes"));

  HostTensor negative;
  negative.dtype = KILN_DTYPE_F32;
  negative.shape = {-1};
  EXPECT_FALSE(kiln::tools::writeNpy(path("n.npy"), negative, error));
  EXPECT_THAT(error, HasSubstr("invalid shape"));

  HostTensor ok;
  ok.dtype = KILN_DTYPE_I8;
  ok.shape = {1};
  ok.data = {1};
  std::string unwritable = path("no/such/dir/x.npy");
  EXPECT_FALSE(kiln::tools::writeNpy(unwritable, ok, error));
  EXPECT_THAT(error, StartsWith(unwritable));
  EXPECT_THAT(error, HasSubstr("cannot create"));
}

//===----------------------------------------------------------------------===//
// .npy: errors
//===----------------------------------------------------------------------===//

TEST_F(TensorFileTest, NpyMissingFile) {
  EXPECT_THAT(readError(path("missing.npy")), HasSubstr("cannot open"));
  EXPECT_THAT(readError(dir_ + "/"), HasSubstr("unknown tensor file type"));
  EXPECT_THAT(readError(writeFile("x.txt", "")), HasSubstr("'.txt'"));
  ASSERT_EQ(mkdir(path("d.npy").c_str(), 0700), 0);
  EXPECT_THAT(readError(path("d.npy")), HasSubstr("not a regular file"));
}

TEST_F(TensorFileTest, NpyBadMagicAndVersion) {
  std::string good = npyFile(dict("<f4", "(1,)"), bytesOf(std::vector<float>{1}));
  EXPECT_THAT(npyError(""), HasSubstr("bad magic"));
  EXPECT_THAT(npyError("\x93NUMP"), HasSubstr("bad magic"));
  std::string magic = good;
  magic[1] = 'X';
  EXPECT_THAT(npyError(magic), HasSubstr("bad magic"));
  EXPECT_THAT(npyError(std::string("PK\x03\x04rest", 8)), HasSubstr(".npz"));
  std::string version = good;
  version[6] = 4;
  EXPECT_THAT(npyError(version), HasSubstr("unsupported .npy format version 4.0"));
  version[6] = 1;
  version[7] = 1;
  EXPECT_THAT(npyError(version), HasSubstr("version 1.1"));
}

TEST_F(TensorFileTest, NpyEveryTruncationFails) {
  for (unsigned major : {1u, 2u}) {
    std::string good =
        npyFile(dict("<f4", "(2, 3)"), bytesOf(std::vector<float>{1, 2, 3, 4, 5, 6}), major);
    for (size_t n = 0; n < good.size(); ++n) {
      SCOPED_TRACE(n);
      std::string error = npyError(good.substr(0, n));
      EXPECT_FALSE(error.empty());
    }
  }
  std::string good = npyFile(dict("<f4", "(2, 3)"), bytesOf(std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_THAT(npyError(good.substr(0, 9)), HasSubstr("ends inside the header length"));
  EXPECT_THAT(npyError(good.substr(0, 100)), HasSubstr("header length 118"));
  EXPECT_THAT(npyError(good.substr(0, 100)), HasSubstr("file is 100 bytes"));
  EXPECT_THAT(npyError(good.substr(0, 150)),
              HasSubstr("data is 22 bytes, but shape (2, 3) of f32 needs 24 bytes"));
}

TEST_F(TensorFileTest, NpySizeMismatch) {
  std::vector<uint8_t> five = bytesOf(std::vector<float>{1, 2, 3, 4, 5});
  EXPECT_THAT(npyError(npyFile(dict("<f4", "(2, 3)"), five)),
              HasSubstr("data is 20 bytes, but shape (2, 3) of f32 needs 24 bytes"));
  std::vector<uint8_t> seven = bytesOf(std::vector<float>{1, 2, 3, 4, 5, 6, 7});
  EXPECT_THAT(npyError(npyFile(dict("<f4", "(2, 3)"), seven)),
              HasSubstr("data is 28 bytes, but shape (2, 3) of f32 needs 24 bytes"));
  EXPECT_THAT(npyError(npyFile(dict("<i8", "()"), {})), HasSubstr("needs 8 bytes"));
}

TEST_F(TensorFileTest, NpyUnsupportedDtypes) {
  auto err = [&](const std::string &descr) {
    return npyError(npyFile(dict(descr, "(1,)"), {0, 0, 0, 0}));
  };
  EXPECT_THAT(err(">f4"), HasSubstr("header: unsupported dtype '>f4' (big-endian"));
  EXPECT_THAT(err(">i8"), HasSubstr("big-endian"));
  EXPECT_THAT(err(">u4"), HasSubstr("big-endian"));
  EXPECT_THAT(err("<c8"), HasSubstr("complex"));
  EXPECT_THAT(err("<U1"), HasSubstr("strings"));
  EXPECT_THAT(err("|V2"), HasSubstr("bfloat16"));
  EXPECT_THAT(err("|f4"), HasSubstr("'|f4'"));
  EXPECT_THAT(err(""), HasSubstr("unsupported dtype ''"));
  EXPECT_THAT(npyError(npyFile("{'descr': [('a', '<f4')], 'fortran_order': False, "
                               "'shape': (1,), }",
                               {0, 0, 0, 0})),
              HasSubstr("structured dtypes"));
}

TEST_F(TensorFileTest, NpyFortranOrder) {
  EXPECT_THAT(npyError(npyFile(dict("<f4", "(2, 2)", "True"),
                               bytesOf(std::vector<float>{1, 2, 3, 4}))),
              HasSubstr("fortran_order is True"));
}

TEST_F(TensorFileTest, NpyBadShapes) {
  auto err = [&](const std::string &shape) {
    return npyError(npyFile(dict("<f4", shape), {0, 0, 0, 0}));
  };
  EXPECT_THAT(err("(-1,)"), HasSubstr("negative dimension -1"));
  EXPECT_THAT(err("(99999999999999999999,)"), HasSubstr("does not fit in int64"));
  EXPECT_THAT(err("(4294967296, 4294967296)"), HasSubstr("more bytes than fit in int64"));
  EXPECT_THAT(err("(1152921504606846976, 4)"), HasSubstr("more bytes than fit in int64"));
  EXPECT_THAT(err("(1)"), HasSubstr("not a tuple"));
  EXPECT_THAT(err("[1]"), HasSubstr("expected a tuple for 'shape'"));
  EXPECT_THAT(err("(1.5,)"), HasSubstr("expected ',' or ')' in 'shape'"));
  EXPECT_THAT(err("(a,)"), HasSubstr("an integer dimension"));
  EXPECT_THAT(err("(1,"), HasSubstr("syntax error"));
}

TEST_F(TensorFileTest, NpyBadHeaderDicts) {
  std::vector<uint8_t> data = {0, 0, 0, 0};
  auto err = [&](const std::string &d) { return npyError(npyFile(d, data)); };
  EXPECT_THAT(err("'descr': '<f4'"), HasSubstr("expected the header dict to start with '{'"));
  EXPECT_THAT(err("{'descr': '<f4', 'shape': (1,), }"), HasSubstr("missing key 'fortran_order'"));
  EXPECT_THAT(err("{'fortran_order': False, 'shape': (1,)}"), HasSubstr("missing key 'descr'"));
  EXPECT_THAT(err("{'descr': '<f4', 'fortran_order': False}"), HasSubstr("missing key 'shape'"));
  EXPECT_THAT(err("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}"),
              HasSubstr("unexpected key 'x'"));
  EXPECT_THAT(err("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,)}"),
              HasSubstr("duplicate key 'descr'"));
  EXPECT_THAT(err("{'descr': '<f4', 'fortran_order': 0, 'shape': (1,)}"),
              HasSubstr("True or False"));
  EXPECT_THAT(err("{'descr': '<f4', 'fortran_order': Falsey, 'shape': (1,)}"),
              HasSubstr("True or False"));
  EXPECT_THAT(err("{'descr': '<f4' 'fortran_order': False, 'shape': (1,)}"),
              HasSubstr("expected ',' or '}'"));
  EXPECT_THAT(err("{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} x"),
              HasSubstr("only padding after the header dict"));
  EXPECT_THAT(err("{'descr: '<f4', 'fortran_order': False, 'shape': (1,)}"), HasSubstr("header"));
  EXPECT_THAT(err("{'descr': '<f\\x34', 'fortran_order': False, 'shape': (1,)}"),
              HasSubstr("escape sequences"));
  EXPECT_THAT(err("{'descr"), HasSubstr("unterminated string"));
  EXPECT_THAT(err(std::string("{'descr': '<f4'") + '\0' + ", 'fortran_order': False, 'shape': (1,)}"),
              HasSubstr("NUL byte"));
  EXPECT_THAT(err(""), HasSubstr("expected the header dict to start with '{', found the end"));
}

TEST_F(TensorFileTest, NpyBoolMustBe0Or1) {
  EXPECT_THAT(npyError(npyFile(dict("|b1", "(3,)"), {1, 2, 0})),
              HasSubstr("bool element 1 is 2, not 0 or 1"));
}

TEST_F(TensorFileTest, NpyCorruptedFilesNeverCrash) {
  std::string good =
      npyFile(dict("<i4", "(2, 3)"), bytesOf(std::vector<int32_t>{1, 2, 3, 4, 5, 6}));
  std::mt19937 rng(1234);
  int failures = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    std::string bytes = good;
    int edits = 1 + rng() % 4;
    for (int e = 0; e < edits; ++e) {
      size_t at = rng() % 80; // the prefix and the dict
      bytes[at] = static_cast<char>(rng() % 4 == 0 ? rng() % 256 : " ',:()0123456789{}"[rng() % 18]);
    }
    HostTensor t;
    std::string error;
    std::string file = writeFile("c.npy", bytes);
    if (!kiln::tools::readNpy(file, t, error)) {
      ++failures;
      EXPECT_THAT(error, StartsWith(file));
    } else {
      EXPECT_EQ(t.data.size(), t.numElements() * kiln_dtype_size(t.dtype));
    }
  }
  EXPECT_GT(failures, 0);
}

//===----------------------------------------------------------------------===//
// ONNX TensorProto
//===----------------------------------------------------------------------===//

onnx::TensorProto proto(int dataType, std::vector<int64_t> dims) {
  onnx::TensorProto t;
  t.set_name("input_0");
  t.set_data_type(dataType);
  for (int64_t d : dims)
    t.add_dims(d);
  return t;
}

TEST_F(TensorFileTest, PbRawData) {
  std::vector<float> v = {1, 2, 3, 4, 5, 6};
  onnx::TensorProto p = proto(onnx::TensorProto::FLOAT, {2, 3});
  std::vector<uint8_t> raw = bytesOf(v);
  p.set_raw_data(raw.data(), raw.size());
  HostTensor t = read(writeProto("input_0.pb", p));
  EXPECT_EQ(t.dtype, KILN_DTYPE_F32);
  EXPECT_EQ(t.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(t.data, raw);

  struct Case {
    int type;
    kiln_dtype_t dtype;
    std::vector<uint8_t> raw; // 2 elements
  };
  const Case cases[] = {
      {onnx::TensorProto::DOUBLE, KILN_DTYPE_F64, bytesOf(std::vector<double>{1, -2})},
      {onnx::TensorProto::FLOAT16, KILN_DTYPE_F16, bytesOf(std::vector<uint16_t>{0x3c00, 1})},
      {onnx::TensorProto::BFLOAT16, KILN_DTYPE_BF16, bytesOf(std::vector<uint16_t>{0x3f80, 2})},
      {onnx::TensorProto::INT64, KILN_DTYPE_I64, bytesOf(std::vector<int64_t>{-5, 1LL << 40})},
      {onnx::TensorProto::INT32, KILN_DTYPE_I32, bytesOf(std::vector<int32_t>{-5, 9})},
      {onnx::TensorProto::INT16, KILN_DTYPE_I16, bytesOf(std::vector<int16_t>{-5, 300})},
      {onnx::TensorProto::INT8, KILN_DTYPE_I8, bytesOf(std::vector<int8_t>{-5, 9})},
      {onnx::TensorProto::UINT64, KILN_DTYPE_U64, bytesOf(std::vector<uint64_t>{UINT64_MAX, 9})},
      {onnx::TensorProto::UINT32, KILN_DTYPE_U32, bytesOf(std::vector<uint32_t>{UINT32_MAX, 9})},
      {onnx::TensorProto::UINT16, KILN_DTYPE_U16, bytesOf(std::vector<uint16_t>{65535, 9})},
      {onnx::TensorProto::UINT8, KILN_DTYPE_U8, bytesOf(std::vector<uint8_t>{255, 9})},
      {onnx::TensorProto::BOOL, KILN_DTYPE_BOOL, {0, 1}},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.type);
    onnx::TensorProto q = proto(c.type, {2});
    q.set_raw_data(c.raw.data(), c.raw.size());
    HostTensor u = read(writeProto("q.pb", q));
    EXPECT_EQ(u.dtype, c.dtype);
    EXPECT_EQ(u.shape, (std::vector<int64_t>{2}));
    EXPECT_EQ(u.data, c.raw);
  }
}

TEST_F(TensorFileTest, PbTypedFields) {
  {
    onnx::TensorProto p = proto(onnx::TensorProto::FLOAT, {3});
    for (float f : {1.f, -2.f, 0.5f})
      p.add_float_data(f);
    EXPECT_EQ(read(writeProto("f.pb", p)).data, bytesOf(std::vector<float>{1, -2, 0.5f}));
  }
  {
    onnx::TensorProto p = proto(onnx::TensorProto::DOUBLE, {2});
    p.add_double_data(1.25);
    p.add_double_data(-3);
    EXPECT_EQ(read(writeProto("d.pb", p)).data, bytesOf(std::vector<double>{1.25, -3}));
  }
  {
    onnx::TensorProto p = proto(onnx::TensorProto::INT64, {1, 2});
    p.add_int64_data(INT64_MIN);
    p.add_int64_data(7);
    HostTensor t = read(writeProto("l.pb", p));
    EXPECT_EQ(t.shape, (std::vector<int64_t>{1, 2}));
    EXPECT_EQ(t.data, bytesOf(std::vector<int64_t>{INT64_MIN, 7}));
  }
  {
    onnx::TensorProto p = proto(onnx::TensorProto::INT32, {2});
    p.add_int32_data(-1);
    p.add_int32_data(INT32_MAX);
    EXPECT_EQ(read(writeProto("i.pb", p)).data, bytesOf(std::vector<int32_t>{-1, INT32_MAX}));
  }
  {
    onnx::TensorProto p = proto(onnx::TensorProto::FLOAT16, {2});
    p.add_int32_data(0x3c00);
    p.add_int32_data(0xfbff);
    HostTensor t = read(writeProto("h.pb", p));
    EXPECT_EQ(t.dtype, KILN_DTYPE_F16);
    EXPECT_EQ(t.data, bytesOf(std::vector<uint16_t>{0x3c00, 0xfbff}));
  }
  {
    onnx::TensorProto p = proto(onnx::TensorProto::BFLOAT16, {1});
    p.add_int32_data(0xbf80);
    HostTensor t = read(writeProto("b.pb", p));
    EXPECT_EQ(t.dtype, KILN_DTYPE_BF16);
    EXPECT_EQ(t.data, bytesOf(std::vector<uint16_t>{0xbf80}));
  }
  {
    onnx::TensorProto p = proto(onnx::TensorProto::INT16, {3});
    for (int v : {-32768, -1, 32767})
      p.add_int32_data(v);
    HostTensor t = read(writeProto("s.pb", p));
    EXPECT_EQ(t.dtype, KILN_DTYPE_I16);
    EXPECT_EQ(t.data, bytesOf(std::vector<int16_t>{-32768, -1, 32767}));
  }
  {
    onnx::TensorProto p = proto(onnx::TensorProto::INT8, {3});
    for (int v : {-128, 0, 127})
      p.add_int32_data(v);
    EXPECT_EQ(read(writeProto("c.pb", p)).data, bytesOf(std::vector<int8_t>{-128, 0, 127}));
  }
  {
    onnx::TensorProto p = proto(onnx::TensorProto::UINT8, {3});
    for (int v : {0, 128, 255})
      p.add_int32_data(v);
    HostTensor t = read(writeProto("u.pb", p));
    EXPECT_EQ(t.dtype, KILN_DTYPE_U8);
    EXPECT_EQ(t.data, bytesOf(std::vector<uint8_t>{0, 128, 255}));
  }
  {
    onnx::TensorProto p = proto(onnx::TensorProto::UINT16, {2});
    for (int v : {0, 65535})
      p.add_int32_data(v);
    EXPECT_EQ(read(writeProto("w.pb", p)).data, bytesOf(std::vector<uint16_t>{0, 65535}));
  }
  {
    onnx::TensorProto p = proto(onnx::TensorProto::UINT32, {2});
    for (uint64_t v : {uint64_t{0}, uint64_t{UINT32_MAX}})
      p.add_uint64_data(v);
    HostTensor t = read(writeProto("d.pb", p));
    EXPECT_EQ(t.dtype, KILN_DTYPE_U32);
    EXPECT_EQ(t.data, bytesOf(std::vector<uint32_t>{0, UINT32_MAX}));
  }
  {
    onnx::TensorProto p = proto(onnx::TensorProto::UINT64, {2});
    for (uint64_t v : {uint64_t{1}, UINT64_MAX})
      p.add_uint64_data(v);
    EXPECT_EQ(read(writeProto("l.pb", p)).data, bytesOf(std::vector<uint64_t>{1, UINT64_MAX}));
  }
  {
    onnx::TensorProto p = proto(onnx::TensorProto::BOOL, {3});
    for (int v : {1, 0, 1})
      p.add_int32_data(v);
    HostTensor t = read(writeProto("o.pb", p));
    EXPECT_EQ(t.dtype, KILN_DTYPE_BOOL);
    EXPECT_EQ(t.data, (std::vector<uint8_t>{1, 0, 1}));
  }
}

TEST_F(TensorFileTest, PbScalarAndEmpty) {
  onnx::TensorProto scalar = proto(onnx::TensorProto::INT64, {});
  scalar.add_int64_data(3);
  HostTensor s = read(writeProto("s.pb", scalar));
  EXPECT_TRUE(s.shape.empty());
  EXPECT_EQ(s.data, bytesOf(std::vector<int64_t>{3}));

  HostTensor e = read(writeProto("e.pb", proto(onnx::TensorProto::FLOAT, {1, 4, 0, 16})));
  EXPECT_EQ(e.shape, (std::vector<int64_t>{1, 4, 0, 16}));
  EXPECT_TRUE(e.data.empty());
  onnx::TensorProto emptyRaw = proto(onnx::TensorProto::FLOAT, {0});
  emptyRaw.set_raw_data("");
  EXPECT_TRUE(read(writeProto("r.pb", emptyRaw)).data.empty());
}

TEST_F(TensorFileTest, PbUnsupported) {
  onnx::TensorProto external = proto(onnx::TensorProto::FLOAT, {2});
  external.set_data_location(onnx::TensorProto::EXTERNAL);
  auto *entry = external.add_external_data();
  entry->set_key("location");
  entry->set_value("weights.bin");
  EXPECT_THAT(pbError(external), HasSubstr("uses external data (location 'weights.bin')"));

  onnx::TensorProto strings = proto(onnx::TensorProto::STRING, {1});
  strings.add_string_data("hi");
  EXPECT_THAT(pbError(strings), HasSubstr("unsupported data_type STRING: string tensors"));
  EXPECT_THAT(pbError(proto(onnx::TensorProto::COMPLEX128, {0})),
              HasSubstr("data_type COMPLEX128"));
  EXPECT_THAT(pbError(proto(onnx::TensorProto::COMPLEX64, {0})),
              HasSubstr("data_type COMPLEX64"));
  EXPECT_THAT(pbError(proto(onnx::TensorProto::UNDEFINED, {0})),
              HasSubstr("data_type is not set"));
  EXPECT_THAT(pbError(proto(99, {0})), HasSubstr("unknown data_type 99"));

  onnx::TensorProto segment = proto(onnx::TensorProto::FLOAT, {0});
  segment.mutable_segment()->set_begin(0);
  EXPECT_THAT(pbError(segment), HasSubstr("segmented"));
}

TEST_F(TensorFileTest, PbElementCountChecks) {
  onnx::TensorProto raw = proto(onnx::TensorProto::FLOAT, {2, 3});
  raw.set_raw_data(std::string(20, '\0'));
  EXPECT_THAT(pbError(raw),
              HasSubstr("tensor 'input_0': raw_data is 20 bytes, but dims [2, 3] of FLOAT "
                        "need 24 bytes"));

  onnx::TensorProto typed = proto(onnx::TensorProto::INT64, {2, 3});
  typed.add_int64_data(1);
  EXPECT_THAT(pbError(typed), HasSubstr("int64_data has 1 values, but dims [2, 3] need 6"));

  EXPECT_THAT(pbError(proto(onnx::TensorProto::FLOAT, {2})),
              HasSubstr("no data: dims [2] need 2 elements"));

  onnx::TensorProto both = proto(onnx::TensorProto::FLOAT, {1});
  both.set_raw_data(std::string(4, '\0'));
  both.add_float_data(1);
  EXPECT_THAT(pbError(both), HasSubstr("both raw_data and float_data"));

  onnx::TensorProto wrongField = proto(onnx::TensorProto::FLOAT, {1});
  wrongField.add_int64_data(1);
  EXPECT_THAT(pbError(wrongField), HasSubstr("a FLOAT tensor has 1 values in int64_data"));
  onnx::TensorProto wrongField2 = proto(onnx::TensorProto::FLOAT16, {1});
  wrongField2.add_float_data(1);
  EXPECT_THAT(pbError(wrongField2), HasSubstr("raw_data or int32_data"));

  EXPECT_THAT(pbError(proto(onnx::TensorProto::FLOAT, {2, -1})), HasSubstr("dim 1 is negative"));
  EXPECT_THAT(pbError(proto(onnx::TensorProto::FLOAT, {1LL << 40, 1LL << 40})),
              HasSubstr("more bytes than fit in int64"));
}

TEST_F(TensorFileTest, PbInt32DataRanges) {
  auto err = [&](int type, int32_t v) {
    onnx::TensorProto p = proto(type, {2});
    p.add_int32_data(0);
    p.add_int32_data(v);
    return pbError(p);
  };
  EXPECT_THAT(err(onnx::TensorProto::INT8, 128), HasSubstr("int32_data[1] = 128 is out of range"));
  EXPECT_THAT(err(onnx::TensorProto::INT8, -129), HasSubstr("-129"));
  EXPECT_THAT(err(onnx::TensorProto::INT16, 32768), HasSubstr("-32768..32767"));
  EXPECT_THAT(err(onnx::TensorProto::FLOAT16, 65536), HasSubstr("0..65535"));
  EXPECT_THAT(err(onnx::TensorProto::BFLOAT16, -1), HasSubstr("BFLOAT16"));
  EXPECT_THAT(err(onnx::TensorProto::BOOL, 2), HasSubstr("0 or 1"));
  EXPECT_THAT(err(onnx::TensorProto::UINT8, 256), HasSubstr("0..255"));
  EXPECT_THAT(err(onnx::TensorProto::UINT8, -1), HasSubstr("UINT8"));
  EXPECT_THAT(err(onnx::TensorProto::UINT16, 65536), HasSubstr("0..65535"));
  {
    onnx::TensorProto p = proto(onnx::TensorProto::UINT32, {1});
    p.add_uint64_data(uint64_t{UINT32_MAX} + 1);
    EXPECT_THAT(pbError(p), HasSubstr("uint64_data[0] = 4294967296 is out of range for UINT32"));
  }

  onnx::TensorProto rawBool = proto(onnx::TensorProto::BOOL, {2});
  rawBool.set_raw_data(std::string("\x01\x05", 2));
  EXPECT_THAT(pbError(rawBool), HasSubstr("bool element 1 is 5"));
}

TEST_F(TensorFileTest, PbNotAProto) {
  EXPECT_THAT(readError(writeFile("g.pb", "\xff\xff\xff\xff garbage")),
              HasSubstr("not a valid ONNX TensorProto"));
  EXPECT_THAT(readError(writeFile("empty.pb", "")), HasSubstr("data_type is not set"));
  // A truncated serialization fails to parse or fails the size checks.
  onnx::TensorProto p = proto(onnx::TensorProto::FLOAT, {4});
  p.set_raw_data(std::string(16, '\x01'));
  std::string bytes = p.SerializeAsString();
  for (size_t n = 0; n < bytes.size(); ++n) {
    SCOPED_TRACE(n);
    HostTensor t;
    std::string error;
    std::string file = writeFile("t.pb", bytes.substr(0, n));
    EXPECT_FALSE(kiln::tools::readTensorProto(file, t, error));
    EXPECT_THAT(error, StartsWith(file));
  }
}

TEST_F(TensorFileTest, PbToNpy) {
  onnx::TensorProto p = proto(onnx::TensorProto::INT64, {1, 3});
  for (int64_t v : {5, 6, 7})
    p.add_int64_data(v);
  HostTensor t = read(writeProto("input_0.pb", p));
  std::string error;
  ASSERT_TRUE(kiln::tools::writeNpy(path("input_0.npy"), t, error)) << error;
  HostTensor back = read(path("input_0.npy"));
  EXPECT_EQ(back.dtype, KILN_DTYPE_I64);
  EXPECT_EQ(back.shape, t.shape);
  EXPECT_EQ(back.data, t.data);
}

} // namespace
