// AVX512-FP16 function attributes shared by the kernels that use native f16
// arithmetic (x86-64, GCC >= 12 / clang >= 16) on top of the Highway AVX3
// targets. clang 14 lacks __builtin_cpu_supports("avx512fp16") and only
// declares the f16 intrinsics when the whole translation unit targets
// AVX512-FP16, so clang builds before 16 leave MXPACK_FP16_INTRIN at 0 and
// use the plain Highway kernels.
//
// FP16 arithmetic ignores MXCSR.FTZ and MXCSR.DAZ (f16 subnormals are always
// computed), so callers need no MXCSR guard for them; the kernels pass
// explicit rounding (round to nearest even) where rounding matters.
#ifndef MXPACK_SRC_UTIL_FP16_TARGET_H_
#define MXPACK_SRC_UTIL_FP16_TARGET_H_

#if (defined(__x86_64__) || defined(_M_X64)) &&                     \
    ((defined(__clang__) && __clang_major__ >= 16) ||               \
     (!defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 12))
#define MXPACK_FP16_INTRIN 1
#define MXPACK_FP16_TARGET                                                  \
  __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512fp16")))
#define MXPACK_FP16_INLINE inline __attribute__((always_inline)) MXPACK_FP16_TARGET

namespace mxpack::internal {
// Whether this CPU executes AVX512-FP16 (Sapphire Rapids and later).
inline bool CpuHasAvx512Fp16() {
  static const bool kHas = __builtin_cpu_supports("avx512fp16");
  return kHas;
}
}  // namespace mxpack::internal
#else
#define MXPACK_FP16_INTRIN 0
#endif

#endif  // MXPACK_SRC_UTIL_FP16_TARGET_H_
