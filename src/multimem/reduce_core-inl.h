// Shared pieces of the multimem float reduction kernels: f32-lane decodes and
// encodes of every element format, the step roundings, one block of N sources
// and the chunk drivers. Included by src/multimem/reduce-inl.h.
//
// Values live in f32 lanes ("acc domain"). Every rounding the scalar model
// does is done here either by an IEEE f32 add (RNE, subnormals kept: x86 and
// EMU128 never enable FTZ/DAZ in mxpack) or in integer lanes:
//  * fp8 -> acc: rebuild the code as f16 bits and promote (exact; see
//    DecodeFp8), so no f32 subnormal is ever an operand of a multiply. (The
//    e4m3 acc::f16 kernels with finite sums work on values scaled by 2^-120,
//    kScaledE4M3, where small values are f32 subnormals; those only meet
//    f32 adds and integer operations, never a multiply.)
//  * an f16 add (acc::f16) is the f32 add followed by RNE to 11 significant
//    bits in integer lanes; RNE_11(RNE_24(a + b)) == RNE_11(a + b) because
//    24 >= 2*11 + 2 (double rounding is innocuous, Figueroa 1995). Every acc
//    value is a multiple of 2^-24 (fp8 and f16 grids), so values below the
//    f16 normal range are exact and the 10-bit mantissa rounding is a no-op
//    there: no separate subnormal path is needed.
//  * final encodes round in integer lanes (normal range) or by adding a
//    power-of-two "magic" constant whose f32 ulp is the destination's
//    subnormal quantum (one IEEE RNE add), then take the bits.
// fp8 kernels run only on chunks without NaN/Inf codes (checked per chunk on
// whole u8 vectors); other chunks run the scalar reference.

// The AVX512-FP16 kernels (reduce_fp16-inl.h) need the compiler and CPU
// checks of src/util/fp16_target.h.
#include "src/util/fp16_target.h"

// Per-target include guard (Highway convention).
#if defined(MXPACK_SRC_MULTIMEM_REDUCE_CORE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MXPACK_SRC_MULTIMEM_REDUCE_CORE_INL_H_
#undef MXPACK_SRC_MULTIMEM_REDUCE_CORE_INL_H_
#else
#define MXPACK_SRC_MULTIMEM_REDUCE_CORE_INL_H_
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "hwy/aligned_allocator.h"
#include "hwy/highway.h"
#include "src/multimem/reduce_args.h"
#include "src/util/lanes-inl.h"  // StoreBytes4
#include "mxpack/multimem.h"

HWY_BEFORE_NAMESPACE();
namespace mxpack {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using DU = hn::RebindToUnsigned<DF>;
using DI = hn::RebindToSigned<DF>;
using VF = hn::Vec<DF>;
using VU = hn::Vec<DU>;

// Kernel kinds (one per element format; the model picks the step rounding).
enum class Elem : int { kE4M3, kE5M2, kF16, kBF16, kF32 };
// Rounding applied to every partial sum.
enum class Step : int {
  kNone,     // f32 accumulation (acc::f32, or f32 data).
  kF16,      // acc::f16: RNE to f16 (overflow -> Inf).
  kBF16,     // NCCL bf16: RNE to bf16.
  kF16Fp8,   // NCCL fp8: RNE to f16, then RNE satfinite to the fp8 format.
};

// A u32-lane constant kept in a register: GCC otherwise rebuilds broadcast
// constants from immediates inside the chunk loops.
HWY_INLINE VU KU(uint32_t v) {
  VU k = hn::Set(DU(), v);
#if HWY_ARCH_X86 && HWY_TARGET != HWY_EMU128 && HWY_TARGET != HWY_SCALAR && \
    (HWY_COMPILER_GCC || HWY_COMPILER_CLANG)
  asm("" : "+v"(k.raw));
#endif
  return k;
}

// RNE of f32 lanes to 11 significant bits (f16 precision). Values must be
// multiples of 2^-24 (see the file comment). NaN stays NaN: NaNs produced
// here have zero low 13 bits (decoded or default NaNs).
//   bits: s eeeeeeee mmmmmmmmmm|mmmmmmmmmmmmm
//                    kept (10) | dropped (13): add 0xFFF + lsb, clear.
template <bool kCheckOverflow>
HWY_INLINE VF RoundToF16(VF s) {
  const DU du;
  const VU u = hn::BitCast(du, s);
#if HWY_TARGET <= HWY_AVX3 && HWY_ARCH_X86
  // lsb as a mask and a masked add (no shift).
  const __m512i t = _mm512_add_epi32(u.raw, KU(0xFFFu).raw);
  VU r{_mm512_and_si512(
      _mm512_mask_add_epi32(t, _mm512_test_epi32_mask(u.raw, KU(0x2000u).raw),
                            t, KU(1u).raw),
      KU(~0x1FFFu).raw)};
#else
  const VU lsb = hn::And(hn::ShiftRight<13>(u), KU(1u));
  VU r = hn::And(hn::Add(u, hn::Add(KU(0xFFFu), lsb)), KU(~0x1FFFu));
#endif
  if (kCheckOverflow) {
    // |r| >= 65536 (0x47800000) is beyond f16 max (65504 + half ulp rounds
    // up to it): Inf, unless NaN (abs bits > 0x7F800000).
    const DI di;
    const auto a = hn::BitCast(di, hn::And(r, hn::Set(du, 0x7FFFFFFFu)));
    // (Highway 1.0.3 has no integer Ge/Le: use Gt/Lt with adjusted bounds.)
    const auto big = hn::And(hn::Gt(a, hn::Set(di, 0x47800000 - 1)),
                             hn::Lt(a, hn::Set(di, 0x7F800000 + 1)));
    const VU inf = hn::Or(hn::And(r, hn::Set(du, 0x80000000u)),
                          hn::Set(du, 0x7F800000u));
    r = hn::IfThenElse(hn::RebindMask(du, big), inf, r);
  }
  return hn::BitCast(DF(), r);
}

// RNE of f32 lanes to bf16 precision (8 significant bits); NaN low bits are
// zero (see RoundToF16), so NaN stays NaN and Inf stays Inf.
HWY_INLINE VF RoundToBF16(VF s) {
  const DU du;
  const VU u = hn::BitCast(du, s);
  const VU lsb = hn::And(hn::ShiftRight<16>(u), hn::Set(du, 1u));
  const VU r = hn::And(hn::Add(u, hn::Add(hn::Set(du, 0x7FFFu), lsb)),
                       hn::Set(du, 0xFFFF0000u));
  return hn::BitCast(DF(), r);
}

// fp8 format constants.
template <Elem E>
struct Fp8 {
  static constexpr bool kE4 = E == Elem::kE4M3;
  static constexpr int kManBits = kE4 ? 3 : 2;
  static constexpr int kDrop = 23 - kManBits;              // f32 bits dropped
  static constexpr uint32_t kMinNormal = kE4 ? 0x3C800000u : 0x38800000u;
  static constexpr float kMagic = kE4 ? 16384.0f : 128.0f;   // ulp = quantum
  static constexpr uint32_t kMagicBits = kE4 ? 0x46800000u : 0x43000000u;
  static constexpr uint32_t kExpOffset = kE4 ? 960u : 448u;  // (127-bias)<<man
  static constexpr uint32_t kMaxCode = kE4 ? 0x7Eu : 0x7Bu;
  static constexpr float kMax = kE4 ? 448.0f : 57344.0f;
  static constexpr uint8_t kSpecialMask = kE4 ? 0x7F : 0x7C;  // NaN / Inf+NaN
};

// RNE satfinite of f32 lanes (finite or Inf, never NaN) to the fp8 grid,
// keeping the value in f32.
template <Elem E>
HWY_INLINE VF RoundToFp8(VF s) {
  using C = Fp8<E>;
  const DF df;
  const DU du;
  const DI di;
  const VU u = hn::BitCast(du, s);
  const VU sign = hn::And(u, hn::Set(du, 0x80000000u));
  const VU a = hn::AndNot(sign, u);
  const VU lsb = hn::And(hn::ShiftRight<C::kDrop>(a), hn::Set(du, 1u));
  const VU half = hn::Set(du, (1u << (C::kDrop - 1)) - 1u);
  const VU rn = hn::And(hn::Add(a, hn::Add(half, lsb)),
                        hn::Set(du, ~((1u << C::kDrop) - 1u)));
  const VF af = hn::BitCast(df, a);
  const VF magic = hn::Set(df, C::kMagic);
  const VF rs = hn::Sub(hn::Add(af, magic), magic);  // Subnormal grid (exact sub).
  const auto tiny = hn::Lt(hn::BitCast(di, a), hn::Set(di, static_cast<int32_t>(C::kMinNormal)));
  VF r = hn::IfThenElse(hn::RebindMask(df, tiny), rs, hn::BitCast(df, rn));
  r = hn::Min(r, hn::Set(df, C::kMax));  // satfinite (Inf included)
  return hn::Or(r, hn::BitCast(df, sign));
}

// Decodes Lanes(DF) fp8 codes (no NaN/Inf codes) to exact f32 values via
// f16 bits, so that no f32 subnormal is ever an operand (x86 multiplies with
// subnormal inputs take a ~100-cycle microcode assist):
//   e5m2 code << 8 is the f16 with the same value (e5m2 = top byte of f16).
//   e4m3: i8 sign-extended to i16, << 7:  s s eeee mmm 0000000, and 0xBF80
//   clears the copy of the sign in the top exponent bit: an f16 whose value
//   is the e4m3 value * 2^-8 (bias 15 vs 7; e4m3 subnormals are f16
//   subnormals). f16 -> f32 promotion is exact and the * 2^8 is exact.
template <Elem E>
HWY_INLINE VF DecodeFp8(const uint8_t* p) {
  const DF df;
  const hn::Rebind<hwy::float16_t, DF> df16;
  if constexpr (E == Elem::kE5M2) {
    const hn::Rebind<uint8_t, DF> du8;
    const hn::Rebind<uint16_t, DF> du16;
    const auto h = hn::ShiftLeft<8>(hn::PromoteTo(du16, hn::LoadU(du8, p)));
    return hn::PromoteTo(df, hn::BitCast(df16, h));
  } else {
    const hn::Rebind<int8_t, DF> di8;
    const hn::Rebind<int16_t, DF> di16;
    const auto c = hn::PromoteTo(di16, hn::LoadU(di8, reinterpret_cast<const int8_t*>(p)));
    const auto h = hn::And(hn::ShiftLeft<7>(c), hn::Set(di16, static_cast<int16_t>(0xBF80)));
    return hn::Mul(hn::PromoteTo(df, hn::BitCast(df16, h)), hn::Set(df, 256.0f));
  }
}

// Final encode of f32 lanes to fp8 codes: RNE satfinite (Inf -> max
// finite), NaN -> canonical 0x7F (a tree can meet +Inf and -Inf partial sums
// after f16 overflow).
template <Elem E>
HWY_INLINE void EncodeFp8(VF x, uint8_t* out) {
  using C = Fp8<E>;
  const DF df;
  const DU du;
  const DI di;
  const VU u = hn::BitCast(du, x);
  const VU sign = hn::And(u, hn::Set(du, 0x80000000u));
  const VU a = hn::AndNot(sign, u);
  // Normal range: RNE to the mantissa width, then rebias the exponent.
  const VU lsb = hn::And(hn::ShiftRight<C::kDrop>(a), hn::Set(du, 1u));
  const VU half = hn::Set(du, (1u << (C::kDrop - 1)) - 1u);
  const VU rn = hn::ShiftRight<C::kDrop>(hn::Add(a, hn::Add(half, lsb)));
  const VU code_n = hn::Min(hn::Sub(rn, hn::Set(du, C::kExpOffset)),
                            hn::Set(du, C::kMaxCode));
  // Subnormal range: |x| + magic rounds (IEEE RNE) to the subnormal quantum;
  // the low bits of the sum count quanta (0 .. first normal code).
  const VF t = hn::Add(hn::BitCast(df, a), hn::Set(df, C::kMagic));
  const VU code_s = hn::Sub(hn::BitCast(du, t), hn::Set(du, C::kMagicBits));
  const auto tiny = hn::Lt(hn::BitCast(di, a), hn::Set(di, static_cast<int32_t>(C::kMinNormal)));
  VU code = hn::IfThenElse(hn::RebindMask(du, tiny), code_s, code_n);
  code = hn::Or(code, hn::ShiftRight<24>(sign));
  const auto nan = hn::Gt(hn::BitCast(di, a), hn::Set(di, 0x7F800000));
  code = hn::IfThenElse(hn::RebindMask(du, nan), hn::Set(du, 0x7Fu), code);
  const hn::Rebind<uint8_t, DF> du8;
  hn::StoreU(hn::DemoteTo(du8, hn::BitCast(di, code)), du8, out);
}

// f16 codes -> exact f32, specials included. AVX2/AVX3 convert with F16C
// (exact). Highway 1.0.3's emulated f16 promotion on the other targets turns
// NaN into Inf, so those rebuild the f32 bits in integer lanes instead:
//   normal:    (em << 13) + (112 << 23)                 rebias 15 -> 127
//   subnormal: f32(bits (em << 13) + (113 << 23)) - 2^-14 (= m * 2^-24, exact,
//              and no f32 subnormal operand)
//   Inf/NaN:   (em << 13) | 0x7F800000
HWY_INLINE VF DecodeF16(const uint8_t* p) {
  const DF df;
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  const hn::Rebind<hwy::float16_t, DF> df16;
  return hn::PromoteTo(df, hn::LoadU(df16, reinterpret_cast<const hwy::float16_t*>(p)));
#else
  const DU du;
  const DI di;
  const hn::Rebind<uint16_t, DF> du16;
  const VU h = hn::PromoteTo(du, hn::LoadU(du16, reinterpret_cast<const uint16_t*>(p)));
  const VU em = hn::And(h, hn::Set(du, 0x7FFFu));
  const VU sign = hn::ShiftLeft<16>(hn::AndNot(em, h));
  const VU base = hn::ShiftLeft<13>(em);
  const VF normal = hn::BitCast(df, hn::Add(base, hn::Set(du, 112u << 23)));
  const VF sub = hn::Sub(hn::BitCast(df, hn::Add(base, hn::Set(du, 113u << 23))),
                         hn::Set(df, 0x1p-14f));
  const VF special = hn::BitCast(df, hn::Or(base, hn::Set(du, 0x7F800000u)));
  const auto emi = hn::BitCast(di, em);
  VF v = hn::IfThenElse(hn::RebindMask(df, hn::Lt(emi, hn::Set(di, 0x0400))), sub, normal);
  v = hn::IfThenElse(hn::RebindMask(df, hn::Gt(emi, hn::Set(di, 0x7C00 - 1))), special, v);
  return hn::Or(v, hn::BitCast(df, sign));
#endif
}

HWY_INLINE VF DecodeBF16(const uint8_t* p) {
  const DF df;
  const DU du;
  const hn::Rebind<uint16_t, DF> du16;
  const VU h = hn::PromoteTo(du, hn::LoadU(du16, reinterpret_cast<const uint16_t*>(p)));
  return hn::BitCast(df, hn::ShiftLeft<16>(h));
}

// f32 -> f16 RNE nosat (overflow -> Inf), NaN -> 0x7FFF.
HWY_INLINE void EncodeF16(VF x, uint8_t* out) {
  const DF df;
  const DU du;
  const DI di;
  const VU u = hn::BitCast(du, x);
  const VU sign = hn::And(u, hn::Set(du, 0x80000000u));
  const VU a = hn::AndNot(sign, u);
  const VU lsb = hn::And(hn::ShiftRight<13>(a), hn::Set(du, 1u));
  const VU rn = hn::ShiftRight<13>(hn::Add(a, hn::Add(hn::Set(du, 0xFFFu), lsb)));
  // Rebias 127 -> 15: (112 << 10). Beyond max rounds to >= 0x7C00: Inf.
  const VU code_n = hn::Min(hn::Sub(rn, hn::Set(du, 0x1C000u)), hn::Set(du, 0x7C00u));
  const VF t = hn::Add(hn::BitCast(df, a), hn::Set(df, 0.5f));  // ulp 2^-24
  const VU code_s = hn::Sub(hn::BitCast(du, t), hn::Set(du, 0x3F000000u));
  const auto ai = hn::BitCast(di, a);
  const auto tiny = hn::Lt(ai, hn::Set(di, 0x38800000));
  VU code = hn::IfThenElse(hn::RebindMask(du, tiny), code_s, code_n);
  code = hn::Or(code, hn::ShiftRight<16>(sign));
  const auto nan = hn::Gt(ai, hn::Set(di, 0x7F800000));
  code = hn::IfThenElse(hn::RebindMask(du, nan), hn::Set(du, 0x7FFFu), code);
  const hn::Rebind<uint16_t, DF> du16;
  hn::StoreU(hn::DemoteTo(du16, hn::BitCast(di, code)), du16,
             reinterpret_cast<uint16_t*>(out));
}

// f32 -> bf16 RNE, NaN -> 0x7FFF.
HWY_INLINE void EncodeBF16(VF x, uint8_t* out) {
  const DU du;
  const DI di;
  const VU u = hn::BitCast(du, x);
  const VU lsb = hn::And(hn::ShiftRight<16>(u), hn::Set(du, 1u));
  VU code = hn::ShiftRight<16>(hn::Add(u, hn::Add(hn::Set(du, 0x7FFFu), lsb)));
  const auto nan = hn::Gt(hn::BitCast(di, hn::And(u, hn::Set(du, 0x7FFFFFFFu))),
                          hn::Set(di, 0x7F800000));
  code = hn::IfThenElse(hn::RebindMask(du, nan), hn::Set(du, 0x7FFFu), code);
  // code <= 0xFFFF (the sign is bit 15), so the saturating i32 -> u16 demote
  // is exact.
  const hn::Rebind<uint16_t, DF> du16;
  hn::StoreU(hn::DemoteTo(du16, hn::BitCast(di, code)), du16,
             reinterpret_cast<uint16_t*>(out));
}

HWY_INLINE void EncodeF32(VF x, uint8_t* out) {
  const DF df;
  const DU du;
  const VF canon = hn::BitCast(df, hn::Set(du, 0x7FFFFFFFu));
  hn::StoreU(hn::IfThenElse(hn::IsNaN(x), canon, x), df, reinterpret_cast<float*>(out));
}

template <Elem E>
HWY_INLINE VF Decode(const uint8_t* p) {
  if constexpr (E == Elem::kE4M3 || E == Elem::kE5M2) {
    return DecodeFp8<E>(p);
  } else if constexpr (E == Elem::kF16) {
    return DecodeF16(p);
  } else if constexpr (E == Elem::kBF16) {
    return DecodeBF16(p);
  } else {
    return hn::LoadU(DF(), reinterpret_cast<const float*>(p));
  }
}

template <Elem E>
HWY_INLINE void Encode(VF x, uint8_t* out) {
  if constexpr (E == Elem::kE4M3 || E == Elem::kE5M2) {
    EncodeFp8<E>(x, out);
  } else if constexpr (E == Elem::kF16) {
    EncodeF16(x, out);
  } else if constexpr (E == Elem::kBF16) {
    EncodeBF16(x, out);
  } else {
    EncodeF32(x, out);
  }
}

// e4m3 acc::f16 with finite partial sums (kCheckOverflow false) keeps every
// value scaled by 2^-120, where the e4m3 code is the f32 bit pattern:
//   i8 code sign-extended, << 20, & 0x87F00000:  s 0000 eeee mmm 0...0
// (exponent field e = f32 exponent field; e4m3 subnormals are f32 subnormals
// on the same grid). The f32 adds are exact below the f32 normal range
// (multiples of 2^-129 there), RoundToF16 is a no-op there (values below
// 2^-6 unscaled hold at most 3 significant bits) and elsewhere rounds to 11
// significant bits as in the unscaled domain, and the final RNE to e4m3
// needs no subnormal path: the code is the rounded f32 bits >> 20.
template <Elem E, Step S, bool kCheckOverflow>
inline constexpr bool kScaledE4M3 = E == Elem::kE4M3 && S == Step::kF16 && !kCheckOverflow;

HWY_INLINE VF DecodeE4M3Scaled(const uint8_t* p) {
  const DF df;
  const DI di;
  const hn::Rebind<int8_t, DF> di8;
  const auto c = hn::PromoteTo(di, hn::LoadU(di8, reinterpret_cast<const int8_t*>(p)));
  return hn::BitCast(df, hn::And(hn::ShiftLeft<20>(c), hn::BitCast(di, KU(0x87F00000u))));
}

// RNE satfinite of scaled finite f32 lanes to e4m3 codes (u32 lanes): t = x
// + 0x7FFFF + lsb (bit 20) keeps the sign in bit 31 (|x| < 2^-104 scaled).
HWY_INLINE VU CodeE4M3Scaled(VF x) {
  const DU du;
  const VU u = hn::BitCast(du, x);
  const VU lsb = hn::And(hn::ShiftRight<20>(u), KU(1u));
  const VU t = hn::Add(hn::Add(u, KU(0x7FFFFu)), lsb);
  const VU code = hn::Min(hn::ShiftRight<20>(hn::And(t, KU(0x7FFFFFFFu))), KU(0x7Eu));
  return hn::OrAnd(code, hn::ShiftRight<24>(u), KU(0x80u));
}

HWY_INLINE void EncodeE4M3Scaled(VF x, uint8_t* out) {
  const DI di;
  const hn::Rebind<uint8_t, DF> du8;
  hn::StoreU(hn::DemoteTo(du8, hn::BitCast(di, CodeE4M3Scaled(x))), du8, out);
}

// Decode / Encode in the domain of the model (kScaledE4M3 or exact values).
template <Elem E, Step S, bool kCheckOverflow>
HWY_INLINE VF DecodeAcc(const uint8_t* p) {
  if constexpr (kScaledE4M3<E, S, kCheckOverflow>) {
    return DecodeE4M3Scaled(p);
  } else {
    return Decode<E>(p);
  }
}

template <Elem E, Step S, bool kCheckOverflow>
HWY_INLINE void EncodeAcc(VF x, uint8_t* out) {
  if constexpr (kScaledE4M3<E, S, kCheckOverflow>) {
    EncodeE4M3Scaled(x, out);
  } else {
    Encode<E>(x, out);
  }
}

template <Elem E, Step S, bool kCheckOverflow>
HWY_INLINE VF AddStep(VF a, VF b) {
  const VF s = hn::Add(a, b);
  if constexpr (S == Step::kF16) {
    return RoundToF16<kCheckOverflow>(s);
  } else if constexpr (S == Step::kBF16) {
    return RoundToBF16(s);
  } else if constexpr (S == Step::kF16Fp8) {
    return RoundToFp8<E>(RoundToF16<kCheckOverflow>(s));
  } else {
    return s;
  }
}

constexpr size_t ElemBytes(Elem e) {
  return e == Elem::kE4M3 || e == Elem::kE5M2 ? 1
         : e == Elem::kF32                    ? 4
                                              : 2;
}

// True if any of the `bytes` fp8 codes of any source is NaN/Inf.
template <Elem E>
HWY_INLINE bool HasSpecials(const uint8_t* const* src, size_t nsrc, size_t pos,
                            size_t bytes) {
  const hn::ScalableTag<uint8_t> d8;
  const size_t step = HWY_MIN(hn::Lanes(d8), bytes);
  const auto mask = hn::Set(d8, Fp8<E>::kSpecialMask);
  if (step == hn::Lanes(d8)) {
    auto any = hn::Zero(d8);
    for (size_t r = 0; r < nsrc; ++r) {
      for (size_t i = 0; i < bytes; i += step) {
        const auto v = hn::LoadU(d8, src[r] + pos + i);
        any = hn::Or(any, hn::VecFromMask(d8, hn::Eq(hn::And(v, mask), mask)));
      }
    }
    return !hn::AllFalse(d8, hn::MaskFromVec(any));
  }
  for (size_t r = 0; r < nsrc; ++r) {
    for (size_t i = 0; i < bytes; ++i) {
      if ((src[r][pos + i] & Fp8<E>::kSpecialMask) == Fp8<E>::kSpecialMask) return true;
    }
  }
  return false;
}

// Reduces Lanes(DF) elements at element index `i`.
template <Elem E, Step S, bool kCheckOverflow, bool kTree>
HWY_INLINE void ReduceBlock(const uint8_t* const* src, size_t nsrc, size_t i,
                            uint8_t* out, float* scratch) {
  constexpr size_t kB = ElemBytes(E);
  const DF df;
  const size_t off = i * kB;
  if constexpr (!kTree) {
    VF acc = DecodeAcc<E, S, kCheckOverflow>(src[0] + off);
    for (size_t r = 1; r < nsrc; ++r) {
      acc = AddStep<E, S, kCheckOverflow>(acc, DecodeAcc<E, S, kCheckOverflow>(src[r] + off));
    }
    EncodeAcc<E, S, kCheckOverflow>(acc, out + off);
  } else {
    const size_t N = hn::Lanes(df);
    for (size_t r = 0; r < nsrc; ++r) {
      hn::Store(DecodeAcc<E, S, kCheckOverflow>(src[r] + off), df, scratch + r * N);
    }
    size_t cnt = nsrc;
    while (cnt > 1) {
      for (size_t k = 0; k < cnt / 2; ++k) {
        const VF a = hn::Load(df, scratch + 2 * k * N);
        const VF b = hn::Load(df, scratch + (2 * k + 1) * N);
        hn::Store(AddStep<E, S, kCheckOverflow>(a, b), df, scratch + k * N);
      }
      if (cnt % 2) {
        hn::Store(hn::Load(df, scratch + (cnt - 1) * N), df, scratch + (cnt / 2) * N);
      }
      cnt = (cnt + 1) / 2;
    }
    EncodeAcc<E, S, kCheckOverflow>(hn::Load(df, scratch), out + off);
  }
}

// The array driver: `fn(s, o, end)` reduces the elements [0, end) (a whole
// number of chunks of `chunk` elements) of sources s into o; it runs on all
// whole chunks, then once on a zero-padded copy of the tail (zero codes are
// +0, neutral for every op of the kernels).
template <size_t kB, class RangeFn>
void ForEachChunkRange(const uint8_t* const* src, size_t nsrc, uint8_t* out,
                       size_t n, size_t chunk, const RangeFn& fn) {
  const size_t whole = n - n % chunk;
  if (whole != 0) fn(src, out, whole);
  if (whole == n) return;
  const size_t rem = n - whole;
  std::vector<uint8_t> pad((nsrc + 1) * chunk * kB, 0);
  std::vector<const uint8_t*> psrc(nsrc);
  for (size_t r = 0; r < nsrc; ++r) {
    std::memcpy(pad.data() + r * chunk * kB, src[r] + whole * kB, rem * kB);
    psrc[r] = pad.data() + r * chunk * kB;
  }
  uint8_t* pout = pad.data() + nsrc * chunk * kB;
  fn(psrc.data(), pout, chunk);
  std::memcpy(out + whole * kB, pout, rem * kB);
}

// As ForEachChunkRange with a per-chunk `fn(s, o, pos)`; a chunk for which
// fn returns false runs the scalar reference instead (fp8 chunks with NaN/Inf
// codes).
template <size_t kB, class ChunkFn>
void ForEachChunk(const ReduceSpec& spec, const uint8_t* const* src, size_t nsrc,
                  uint8_t* out, size_t n, size_t chunk, const ChunkFn& fn) {
  std::vector<uint64_t> codes(nsrc);
  ForEachChunkRange<kB>(src, nsrc, out, n, chunk,
                        [&](const uint8_t* const* s, uint8_t* o, size_t end) {
    for (size_t pos = 0; pos < end; pos += chunk) {
      if (fn(s, o, pos)) continue;
      for (size_t k = pos; k < pos + chunk; ++k) {
        for (size_t r = 0; r < nsrc; ++r) {
          uint64_t c = 0;
          std::memcpy(&c, s[r] + k * kB, kB);
          codes[r] = c;
        }
        const uint64_t v = scalar::ReduceElement(spec, codes);
        std::memcpy(o + k * kB, &v, kB);
      }
    }
  });
}

template <Elem E, Step S, bool kCheckOverflow, bool kTree>
void ReduceLoop(const ReduceSpec& spec, const uint8_t* const* src, size_t nsrc,
                uint8_t* out, size_t n) {
  constexpr size_t kB = ElemBytes(E);
  constexpr bool kFp8 = E == Elem::kE4M3 || E == Elem::kE5M2;
  const DF df;
  const size_t N = hn::Lanes(df);
  const size_t chunk = 4 * N;  // elements; = one full u8 vector on x86
  auto scratch = hwy::AllocateAligned<float>(kTree ? nsrc * N : 1);
  ForEachChunk<kB>(spec, src, nsrc, out, n, chunk,
                   [&](const uint8_t* const* s, uint8_t* o, size_t pos) {
    if (kFp8 && HasSpecials<E>(s, nsrc, pos * kB, chunk * kB)) return false;
    if constexpr (!kTree) {
      // Four independent accumulator chains (the per-step rounding makes one
      // chain latency-bound).
      const size_t o0 = pos * kB, o1 = o0 + N * kB, o2 = o1 + N * kB,
                   o3 = o2 + N * kB;
      VF a0 = DecodeAcc<E, S, kCheckOverflow>(s[0] + o0), a1 = DecodeAcc<E, S, kCheckOverflow>(s[0] + o1);
      VF a2 = DecodeAcc<E, S, kCheckOverflow>(s[0] + o2), a3 = DecodeAcc<E, S, kCheckOverflow>(s[0] + o3);
      for (size_t r = 1; r < nsrc; ++r) {
        a0 = AddStep<E, S, kCheckOverflow>(a0, DecodeAcc<E, S, kCheckOverflow>(s[r] + o0));
        a1 = AddStep<E, S, kCheckOverflow>(a1, DecodeAcc<E, S, kCheckOverflow>(s[r] + o1));
        a2 = AddStep<E, S, kCheckOverflow>(a2, DecodeAcc<E, S, kCheckOverflow>(s[r] + o2));
        a3 = AddStep<E, S, kCheckOverflow>(a3, DecodeAcc<E, S, kCheckOverflow>(s[r] + o3));
      }
      if constexpr (kScaledE4M3<E, S, kCheckOverflow>) {
        // One narrowing of four vectors (o0..o3 are consecutive bytes).
        StoreBytes4(DU(), CodeE4M3Scaled(a0), CodeE4M3Scaled(a1), CodeE4M3Scaled(a2),
                    CodeE4M3Scaled(a3), o + o0);
      } else {
        EncodeAcc<E, S, kCheckOverflow>(a0, o + o0);
        EncodeAcc<E, S, kCheckOverflow>(a1, o + o1);
        EncodeAcc<E, S, kCheckOverflow>(a2, o + o2);
        EncodeAcc<E, S, kCheckOverflow>(a3, o + o3);
      }
    } else {
      for (size_t j = 0; j < chunk; j += N) {
        ReduceBlock<E, S, kCheckOverflow, kTree>(s, nsrc, pos + j, o, scratch.get());
      }
    }
    return true;
  });
}

// e4m3 sources whose f16 partial sums provably stay finite: every acc::f16
// step adds |x| <= 448 and rounds by at most half an f16 ulp (<= 16 below
// 65536), so after k <= 127 steps |acc| <= 128 * 448 + 127 * 16 = 59376 <
// 65504 for any association (sequential or tree).
inline constexpr size_t kE4M3FiniteSources = 128;

}  // namespace HWY_NAMESPACE
}  // namespace mxpack
HWY_AFTER_NAMESPACE();

#endif  // MXPACK_SRC_MULTIMEM_REDUCE_CORE_INL_H_
