// Internal: the floating-point environment the library computes in.
//
// Every result is defined with round-to-nearest-even and IEEE subnormals
// (docs/semantics.md section 1), whatever the caller has set: a directed
// rounding mode, flush-to-zero (FTZ) or denormals-are-zero (DAZ). Each public
// array entry point runs its work through InDefaultFpEnv, which sets that
// environment for the call and restores the caller's afterwards; the
// thread pool's workers set it once when they start. Kernels that want FTZ or
// DAZ for speed set them inside (ScopedFlushDenormals) on top of this.
#ifndef MXPACK_SRC_UTIL_FP_ENV_H_
#define MXPACK_SRC_UTIL_FP_ENV_H_

#include <utility>

#include "absl/base/attributes.h"

#if defined(__x86_64__) || defined(_M_X64) || defined(__i386__)
#include <xmmintrin.h>  // _mm_getcsr / _mm_setcsr
#define MXPACK_FP_ENV_MXCSR 1
#else
#include <cfenv>
#endif

namespace mxpack::internal {

#ifdef MXPACK_FP_ENV_MXCSR
// MXCSR bits: 0x8000 FTZ, 0x0040 DAZ, 0x6000 rounding control (00 = nearest),
// 0x003F the sticky exception flags, which are kept (the caller sees the
// flags the call raised, as after any floating-point work of its own).
inline constexpr unsigned kMxcsrEnvBits = 0x8000u | 0x0040u | 0x6000u;

// Sets round-to-nearest-even with FTZ and DAZ off, for the scope.
class ScopedDefaultFpEnv {
 public:
  ScopedDefaultFpEnv() : saved_(_mm_getcsr()) {
    if (saved_ & kMxcsrEnvBits) _mm_setcsr(saved_ & ~kMxcsrEnvBits);
  }
  ~ScopedDefaultFpEnv() {
    if (saved_ & kMxcsrEnvBits) _mm_setcsr(saved_ | (_mm_getcsr() & 0x3Fu));
  }
  ScopedDefaultFpEnv(const ScopedDefaultFpEnv&) = delete;
  ScopedDefaultFpEnv& operator=(const ScopedDefaultFpEnv&) = delete;

  // For threads the library owns: set the environment for good.
  static void SetForThread() { _mm_setcsr(_mm_getcsr() & ~kMxcsrEnvBits); }

 private:
  unsigned saved_;
};
#else
// Elsewhere only the rounding mode is standard C++ (flush-to-zero controls
// are not); it is set the same way.
class ScopedDefaultFpEnv {
 public:
  ScopedDefaultFpEnv() : saved_(std::fegetround()) {
    if (saved_ != FE_TONEAREST) std::fesetround(FE_TONEAREST);
  }
  ~ScopedDefaultFpEnv() {
    if (saved_ != FE_TONEAREST) std::fesetround(saved_);
  }
  ScopedDefaultFpEnv(const ScopedDefaultFpEnv&) = delete;
  ScopedDefaultFpEnv& operator=(const ScopedDefaultFpEnv&) = delete;

  static void SetForThread() { std::fesetround(FE_TONEAREST); }

 private:
  int saved_;
};
#endif

// Calls fn() out of line: the compiler cannot move its floating-point work
// across the environment writes around the call.
template <typename Fn>
ABSL_ATTRIBUTE_NOINLINE decltype(auto) CallOutOfLine(Fn& fn) {
  return fn();
}

// Runs fn() in the default environment and returns its result.
template <typename Fn>
decltype(auto) InDefaultFpEnv(Fn&& fn) {
  const ScopedDefaultFpEnv env;
  return CallOutOfLine(fn);
}

}  // namespace mxpack::internal

#endif  // MXPACK_SRC_UTIL_FP_ENV_H_
