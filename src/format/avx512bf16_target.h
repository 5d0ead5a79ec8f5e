// AVX512-BF16 function attributes for the conversion kernels that use
// vcvtne2ps2bf16 on top of the Highway AVX3 targets (x86-64, GCC >= 10 /
// clang >= 16), and the run-time check that guards them. The instruction
// rounds to nearest even without consulting MXCSR; it flushes f32 subnormal
// inputs, so callers feed it only values that are normal in f32.
#ifndef MXPACK_SRC_FORMAT_AVX512BF16_TARGET_H_
#define MXPACK_SRC_FORMAT_AVX512BF16_TARGET_H_

#if (defined(__x86_64__) || defined(_M_X64)) &&                     \
    ((defined(__clang__) && __clang_major__ >= 16) ||               \
     (!defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 10))
#define MXPACK_BF16_INTRIN 1
#define MXPACK_BF16_TARGET \
  __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16")))

namespace mxpack::internal {
// Whether this CPU executes AVX512-BF16 (Cooper Lake, Sapphire Rapids, Zen 4).
inline bool CpuHasAvx512Bf16() {
  static const bool kHas = __builtin_cpu_supports("avx512bf16");
  return kHas;
}
}  // namespace mxpack::internal
#else
#define MXPACK_BF16_INTRIN 0
#endif

#endif  // MXPACK_SRC_FORMAT_AVX512BF16_TARGET_H_
