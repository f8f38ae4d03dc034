//===- EngineTestModels.h - The models KilnEngineTests runs ---------*- C++ -*-===//
//
// The artifacts CMake compiles for the engine and batcher tests, found in
// KILN_ENGINE_TEST_DIR, and the instance they all share.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_TEST_UNIT_ENGINETESTMODELS_H
#define KILN_TEST_UNIT_ENGINETESTMODELS_H

#include "kiln/runtime.hpp"

#include <cstdlib>
#include <string>

namespace kiln::test {

/// The artifact `name`.kiln of the test build.
inline std::string artifact(const std::string &name) {
  const char *dir = std::getenv("KILN_ENGINE_TEST_DIR");
  return std::string(dir ? dir : ".") + "/" + name + ".kiln";
}

/// One instance of two threads for every test of the binary.
inline kiln::Instance &instance() {
  static kiln::Instance shared(2);
  return shared;
}

} // namespace kiln::test

#endif // KILN_TEST_UNIT_ENGINETESTMODELS_H
