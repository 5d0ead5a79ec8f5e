// Scalar reference ("the oracle") of every conversion in docs/semantics.md section 1.
//
// Everything else in mxpack (SIMD kernels, packed layouts, block scaling, the
// CUDA backend's comparisons) is tested against these functions. They are
// written for clarity: one generic, traits-driven encoder and decoder.
#ifndef MXPACK_SCALAR_H_
#define MXPACK_SCALAR_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "mxpack/format.h"

namespace mxpack {

enum class Rounding : uint8_t {
  kRN,  // Round to nearest, ties to even (default; the hardware mode).
  kRZ,  // Toward zero.
  kRM,  // Toward -Inf.
  kRP,  // Toward +Inf.
  kRS,  // Stochastic with caller-supplied random bits (PTX cvt.rs), see below.
};

enum class Saturation : uint8_t {
  kSatFinite,  // PTX .satfinite: overflow and +-Inf clamp to +-max finite.
  kNoSat,      // Overflow gives Inf (or NaN where the format has no Inf).
};

// What happens to an exact tie between max finite and the first unrepresentable
// value above it under kRN + kNoSat. Only e5m2 (and f16/bf16) can hit this,
// because their max finite code has an odd mantissa: 61440 for e5m2.
enum class OverflowTie : uint8_t {
  // IEEE 754 ties-to-even: the tie rounds to the (even) overflow value, so
  // e5m2 61440 -> Inf under nosat. Matches CUDA 13 __nv_cvt_float_to_fp8.
  kEven,
  // docs/semantics.md section 1 wording "e5m2: 61440 -> 57344 tie": the tie rounds to
  // max finite. Offered as an explicit option; see docs/semantics.md, "Open points".
  kToMaxFinite,
};

struct EncodePolicy {
  Rounding rounding = Rounding::kRN;
  Saturation saturation = Saturation::kSatFinite;
  bool relu = false;  // PTX .relu: negative values and -0 become +0.
  OverflowTie overflow_tie = OverflowTie::kEven;
};

absl::string_view RoundingName(Rounding r);
absl::string_view SaturationName(Saturation s);
absl::StatusOr<Rounding> ParseRounding(absl::string_view name);
absl::StatusOr<Saturation> ParseSaturation(absl::string_view name);
std::string PolicyToString(const EncodePolicy& p);

// A conversion from -> to is a *decode* when every code of `from` is exactly
// representable in `to` (e.g. e4m3 -> f16, ue8m0 -> f32); rounding and
// saturation do not apply to decodes (Inf stays Inf), relu does.
bool IsExactConversion(Format from, Format to);

// Checks that from -> to with `policy` is a legal conversion. The error names
// the offending argument and lists what is allowed. Rules:
//  - from must not be narrower-only nonsense: any format may be a source;
//    f64 may not be a destination.
//  - decodes: ue8m0 -> f16 is an error (does not fit), as is any non-exact
//    conversion into a narrow format with an illegal policy below.
//  - e2m1/e2m3/e3m2: nosat is illegal (PTX has only .satfinite).
//  - ue8m0: only rz and rp (PTX cvt.frnd3); relu is illegal for ue8m0 and
//    ue4m3 (unsigned formats encode |x|).
//  - overflow_tie = kToMaxFinite only with rn.
absl::Status ValidateConversion(Format from, Format to,
                                const EncodePolicy& policy);

// Counter-based random bits for Rounding::kRS when the caller has none:
// rbits[i] = RandomBits(seed, i), the high 32 bits of SplitMix64 evaluated at
// seed + (i + 1) * 0x9E3779B97F4A7C15. Deterministic, independent of SIMD
// width and thread count.
constexpr uint32_t RandomBits(uint64_t seed, uint64_t index) {
  uint64_t z = seed + (index + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<uint32_t>(z >> 32);
}

namespace scalar {

// Converts one element. `bits` holds a code of `from` in its low bits; the
// result is a code of `to`. Preconditions: ValidateConversion(from, to,
// policy).ok(). `rbits` is used only with Rounding::kRS.
//
// Stochastic rounding (kRS) bit alignment: let s be the number of low bits of
// the exact source significand (24 bits for a normal f32, 11 for f16, 8 for
// bf16, 53 for f64) that the destination cannot hold. The low min(s, 32) bits
// of rbits are added to those s discarded bits, right-aligned (bit 0 of rbits
// lines up with the lowest discarded bit); a carry out of the discarded field
// rounds the magnitude up (away from zero). When s > 32 the 32 random bits are
// left-aligned to the top of the discarded field instead, so the probability
// of rounding up stays proportional to the discarded fraction. This is the
// PTX cvt.rs description ("carry out of the integer addition of rbits to the
// truncated-off bits"); the exact lane of rbits used by hardware for
// subnormal results is unverified (docs/semantics.md, "Open points").
uint64_t Convert(Format from, Format to, uint64_t bits,
                 const EncodePolicy& policy, uint32_t rbits = 0);

// Exact value of a code as a double (every format except f64 fits; f64 codes
// are returned as is). NaN codes give a quiet NaN.
double ToDouble(Format f, uint64_t bits);

// Classification of a code.
enum class ValueClass : uint8_t { kZero, kSubnormal, kNormal, kInf, kNaN };
ValueClass Classify(Format f, uint64_t bits);
absl::string_view ValueClassName(ValueClass c);

// Convenience wrappers (same preconditions as Convert).
uint32_t EncodeF32(float x, Format to, const EncodePolicy& policy,
                   uint32_t rbits = 0);
float DecodeToF32(Format from, uint32_t code);

// Bit casts.
uint32_t F32Bits(float x);
float F32FromBits(uint32_t b);
uint64_t F64Bits(double x);
double F64FromBits(uint64_t b);

// Array conversion over raw little-endian element arrays (narrow formats one
// code per byte). Checks everything: policy, that in.size() is a multiple of
// the source element size, that out.size() matches, that rbits has one word
// per element with kRS (and is empty otherwise), that narrow input codes have
// no bits above the format width. Nothing is written to `out` on error.
absl::Status ConvertArray(Format from, Format to, const EncodePolicy& policy,
                          absl::Span<const uint8_t> in, absl::Span<uint8_t> out,
                          absl::Span<const uint32_t> rbits = {});

}  // namespace scalar

// Shared argument checks for every array API (scalar and SIMD), so they give
// identical messages: returns the element count on success.
absl::StatusOr<size_t> CheckConvertArrayArgs(Format from, Format to,
                                             const EncodePolicy& policy,
                                             absl::Span<const uint8_t> in,
                                             absl::Span<const uint8_t> out,
                                             absl::Span<const uint32_t> rbits);

}  // namespace mxpack

#endif  // MXPACK_SCALAR_H_
