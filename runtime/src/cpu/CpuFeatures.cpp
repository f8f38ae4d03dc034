//===- CpuFeatures.cpp - cpuid-based feature detection --------------------===//
#include "kiln/abi/cpu_features.h"

#include <cpuid.h>
#include <cstdint>

namespace kiln::rt {
namespace {

struct CpuidBits {
  uint32_t leaf1Ecx = 0, leaf7Ebx = 0, leaf7Ecx = 0, leaf7Edx = 0,
           leaf7Sub1Eax = 0, extendedEcx = 0;
  bool avxState = false, avx512State = false;
};

CpuidBits readCpuid() {
  CpuidBits bits;
  unsigned eax, ebx, ecx, edx;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx))
    bits.leaf1Ecx = ecx;
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) {
    bits.leaf7Ebx = ebx;
    bits.leaf7Ecx = ecx;
    bits.leaf7Edx = edx;
  }
  if (__get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx))
    bits.leaf7Sub1Eax = eax;
  if (__get_cpuid(0x80000001, &eax, &ebx, &ecx, &edx))
    bits.extendedEcx = ecx;
  // AVX and AVX-512 also need the OS to save their registers (XCR0).
  if (bits.leaf1Ecx & (1u << 27)) {
    uint32_t xcr0Low, xcr0High;
    __asm__("xgetbv" : "=a"(xcr0Low), "=d"(xcr0High) : "c"(0));
    bits.avxState = (xcr0Low & 0x6) == 0x6;
    bits.avx512State = (xcr0Low & 0xe6) == 0xe6;
  }
  return bits;
}

bool bit(uint32_t word, int index) { return (word >> index) & 1; }

} // namespace

bool hostHasCpuFeature(std::string_view feature) {
  static const CpuidBits b = readCpuid();
  bool avx = b.avxState, avx512 = b.avx512State;
  if (feature == "sse4.2") return bit(b.leaf1Ecx, 20);
  if (feature == "popcnt") return bit(b.leaf1Ecx, 23);
  if (feature == "movbe") return bit(b.leaf1Ecx, 22);
  if (feature == "avx") return avx && bit(b.leaf1Ecx, 28);
  if (feature == "fma") return avx && bit(b.leaf1Ecx, 12);
  if (feature == "f16c") return avx && bit(b.leaf1Ecx, 29);
  if (feature == "bmi") return bit(b.leaf7Ebx, 3);
  if (feature == "avx2") return avx && bit(b.leaf7Ebx, 5);
  if (feature == "bmi2") return bit(b.leaf7Ebx, 8);
  if (feature == "lzcnt") return bit(b.extendedEcx, 5);
  if (feature == "avx512f") return avx512 && bit(b.leaf7Ebx, 16);
  if (feature == "avx512dq") return avx512 && bit(b.leaf7Ebx, 17);
  if (feature == "avx512ifma") return avx512 && bit(b.leaf7Ebx, 21);
  if (feature == "avx512cd") return avx512 && bit(b.leaf7Ebx, 28);
  if (feature == "avx512bw") return avx512 && bit(b.leaf7Ebx, 30);
  if (feature == "avx512vl") return avx512 && bit(b.leaf7Ebx, 31);
  if (feature == "avx512vbmi") return avx512 && bit(b.leaf7Ecx, 1);
  if (feature == "avx512vnni") return avx512 && bit(b.leaf7Ecx, 11);
  if (feature == "avx512fp16") return avx512 && bit(b.leaf7Edx, 23);
  if (feature == "avx512bf16") return avx512 && bit(b.leaf7Sub1Eax, 5);
  return false;
}

} // namespace kiln::rt
