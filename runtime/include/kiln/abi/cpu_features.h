//===- cpu_features.h - CPU features an artifact can require ----*- C++ -*-===//
//
// Part of the compiler/runtime contract (kiln/abi/): shared by the compiler,
// which records in the manifest which of these the generated code uses, and
// the runtime, which checks them before loading code (runtime/src/
// CpuFeatures.cpp answers hostHasCpuFeature). Names are LLVM's x86 feature
// names.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_ABI_CPU_FEATURES_H
#define KILN_ABI_CPU_FEATURES_H

#include <array>
#include <string_view>

namespace kiln::rt {

inline constexpr std::array<std::string_view, 20> kCheckableCpuFeatures = {
    "sse4.2",   "popcnt",     "avx",        "avx2",       "fma",
    "f16c",     "bmi",        "bmi2",       "lzcnt",      "movbe",
    "avx512f",  "avx512dq",   "avx512cd",   "avx512bw",   "avx512vl",
    "avx512vnni", "avx512bf16", "avx512fp16", "avx512vbmi", "avx512ifma"};

/// Whether this CPU and OS support `feature` (one of kCheckableCpuFeatures;
/// false for any other name).
bool hostHasCpuFeature(std::string_view feature);

} // namespace kiln::rt

#endif // KILN_ABI_CPU_FEATURES_H
