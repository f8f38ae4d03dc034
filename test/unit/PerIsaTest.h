//===- PerIsaTest.h - Runs a kernel test once per ISA -----------*- C++ -*-===//
//
// The GEMM and attention kernels pick their ISA from activeGemmIsa(). A
// PerIsaTest sets it to its parameter for the test's duration, and skips when
// the CPU (or KILN_ISA) does not allow that ISA.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_TEST_UNIT_PERISATEST_H
#define KILN_TEST_UNIT_PERISATEST_H

#include "runtime/src/cpu/Gemm.h"

#include <gtest/gtest.h>

#include <string>
#include <tuple>

namespace kiln::rt {

/// The parameter is the ISA, or a tuple whose first member is.
template <typename Param> class PerIsaTestOf : public ::testing::TestWithParam<Param> {
protected:
  void SetUp() override {
    const GemmIsa isa = isaOf(this->GetParam());
    if (isa > detectGemmIsa())
      GTEST_SKIP() << "this CPU lacks " << gemmIsaName(isa)
                   << " (or KILN_ISA forces a lower ISA)";
    previousIsa_ = activeGemmIsa();
    setGemmIsa(isa);
  }
  void TearDown() override { setGemmIsa(previousIsa_); }

private:
  static GemmIsa isaOf(GemmIsa isa) { return isa; }
  template <typename... Rest>
  static GemmIsa isaOf(const std::tuple<GemmIsa, Rest...> &param) {
    return std::get<0>(param);
  }

  GemmIsa previousIsa_ = GemmIsa::Generic;
};

using PerIsaTest = PerIsaTestOf<GemmIsa>;

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
