//===- PerIsaTest.h - Runs a kernel test once per ISA -----------*- C++ -*-===//
//
// The GEMM and attention kernels pick their ISA from activeGemmIsa(). A
// PerIsaTest sets it to its parameter for the test's duration, and skips when
// the CPU (or KILN_ISA) does not allow that ISA.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_TEST_UNIT_PERISATEST_H
#define KILN_TEST_UNIT_PERISATEST_H

#include "runtime/src/Gemm.h"

#include <gtest/gtest.h>

#include <string>

namespace kiln::rt {

class PerIsaTest : public ::testing::TestWithParam<GemmIsa> {
protected:
  void SetUp() override {
    if (GetParam() > detectGemmIsa())
      GTEST_SKIP() << "this CPU lacks " << gemmIsaName(GetParam())
                   << " (or KILN_ISA forces a lower ISA)";
    previousIsa_ = activeGemmIsa();
    setGemmIsa(GetParam());
  }
  void TearDown() override { setGemmIsa(previousIsa_); }

private:
  GemmIsa previousIsa_ = GemmIsa::Generic;
};

/// Instantiates the PerIsaTest subclass `Suite` for every ISA, named after it.
#define KILN_INSTANTIATE_PER_ISA(Suite)                                        \
  INSTANTIATE_TEST_SUITE_P(                                                    \
      AllIsas, Suite,                                                          \
      ::testing::Values(::kiln::rt::GemmIsa::Generic,                          \
                        ::kiln::rt::GemmIsa::Avx2,                             \
                        ::kiln::rt::GemmIsa::Avx512),                          \
      [](const ::testing::TestParamInfo<::kiln::rt::GemmIsa> &info) {         \
        return std::string(::kiln::rt::gemmIsaName(info.param));               \
      })

} // namespace kiln::rt

#endif // KILN_TEST_UNIT_PERISATEST_H
