// Highway element codecs shared by conversion, packing and MX quantization:
// the generic runtime-format codec (ConvertCodec; every value carried in u32
// lanes as f32 bits and rounded in integer lanes, because Highway 1.0.3's
// float DemoteTo is not bit-exact across targets), the wide-source loaders,
// the compile-time narrow decoders and the one-step fast encoder.

#if defined(MXPACK_SRC_FORMAT_CODEC_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MXPACK_SRC_FORMAT_CODEC_INL_H_
#undef MXPACK_SRC_FORMAT_CODEC_INL_H_
#else
#define MXPACK_SRC_FORMAT_CODEC_INL_H_
#endif

#include <cstddef>
#include <cstdint>

#include "hwy/highway.h"
#include "src/format/convert_params.h"
#include "src/format/encode_fast-inl.h"
#include "src/util/lanes-inl.h"

HWY_BEFORE_NAMESPACE();
namespace mxpack {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

class ConvertCodec {
 public:
  using DU = hn::ScalableTag<uint32_t>;
  using DI = hn::RebindToSigned<DU>;
  using DF = hn::RebindToFloat<DU>;
  using VU = hn::Vec<DU>;

  // Highway 1.0.3 has no MaskFalse: all-false and all-true masks.
  static HWY_INLINE hn::Mask<DU> NoneTrue(DU du) {
    return hn::Eq(hn::Zero(du), hn::Set(du, 1u));
  }
  static HWY_INLINE hn::Mask<DU> NoneFalse(DU du) {
    return hn::Eq(hn::Zero(du), hn::Zero(du));
  }

  // Unsigned a > b via the sign-flip trick (Highway 1.0.3 compares signed).
  static HWY_INLINE hn::Mask<DU> UGt(VU a, VU b) {
    const DU du;
    const DI di;
    const VU msb = hn::Set(du, 0x80000000u);
    return hn::RebindMask(du, hn::Gt(hn::BitCast(di, hn::Xor(a, msb)),
                                     hn::BitCast(di, hn::Xor(b, msb))));
  }

  // Narrow code (one per lane) -> exact f32 bits; NaN -> 0x7FFFFFFF.
  static HWY_INLINE VU DecodeNarrow(const internal::ConvertParams& p, VU c) {
    const DU du;
    const DF df;
    if (p.src_ue8m0) {
      // 2^(c-127): exponent field c; 0x00 is the f32 subnormal 2^-127.
      VU v = hn::ShiftLeft<23>(c);
      v = hn::IfThenElse(hn::Eq(c, hn::Zero(du)), hn::Set(du, 0x00400000u), v);
      return hn::IfThenElse(hn::Eq(c, hn::Set(du, 0xFFu)), hn::Set(du, 0x7FFFFFFFu), v);
    }
    const VU sign = p.src_has_sign
                        ? hn::ShiftLeft<31>(hn::ShiftRightSame(c, p.src_bits - 1))
                        : hn::Zero(du);
    const uint32_t mag_mask = (static_cast<uint32_t>(p.src_exp_mask) << p.src_man) | ((1u << p.src_man) - 1);
    const VU mag = hn::And(c, hn::Set(du, mag_mask));
    const VU e = hn::ShiftRightSame(mag, p.src_man);
    const VU m = hn::And(mag, hn::Set(du, (1u << p.src_man) - 1));
    //  normal: 0 | e - bias + 127 | m << (23 - man)
    VU v = hn::Or(hn::ShiftLeftSame(hn::Add(e, hn::Set(du, static_cast<uint32_t>(127 - p.src_bias))), 23),
                  hn::ShiftLeftSame(m, 23 - p.src_man));
    if (p.src_has_subnormals) {
      // subnormal: m * 2^(emin - man), exact in f32 for every narrow format.
      const VU sub = hn::BitCast(
          du, hn::Mul(hn::ConvertTo(df, hn::BitCast(DI(), m)), hn::Set(df, p.src_subnormal_scale)));
      v = hn::IfThenElse(hn::Eq(e, hn::Zero(du)), sub, v);
    }
    const VU emax = hn::Set(du, static_cast<uint32_t>(p.src_exp_mask));
    if (p.src_has_inf) {
      v = hn::IfThenElse(hn::And(hn::Eq(e, emax), hn::Eq(m, hn::Zero(du))),
                         hn::Set(du, 0x7F800000u), v);
    }
    v = hn::Or(v, sign);
    if (p.src_nan == NanKind::kIeee) {
      v = hn::IfThenElse(hn::And(hn::Eq(e, emax), hn::Ne(m, hn::Zero(du))),
                         hn::Set(du, 0x7FFFFFFFu), v);
    } else if (p.src_nan == NanKind::kAllOnes) {
      v = hn::IfThenElse(hn::Eq(mag, hn::Set(du, mag_mask)),
                         hn::Set(du, 0x7FFFFFFFu), v);
    }
    return v;
  }

  // f32 bits -> destination code, the vector form of scalar RoundFinite():
  //   s  = max(0, emin+127 - E') + 23 - man   discarded bits (E' = max(E,1))
  //   r  = sig >> s, rounded by the mode;  code = r + (B << man) with
  //   B  = max(E', emin+127) - 128 + bias     (carries roll into the exponent)
  // kF32Src: the source is f32 (all 24 significand bits present), which
  // removes the rs alignment step.
  template <Rounding kMode, bool kF32Src = false>
  static HWY_INLINE VU Encode(const internal::ConvertParams& p, VU x, VU rbits) {
    const DU du;
    const DI di;
    const VU zero = hn::Zero(du);
    const VU one = hn::Set(du, 1u);
    const VU a = hn::And(x, hn::Set(du, 0x7FFFFFFFu));
    const VU sign = hn::ShiftRight<31>(x);
    const auto neg = hn::Ne(sign, zero);
    const auto is_nan = UGt(a, hn::Set(du, 0x7F800000u));
    const auto is_inf = hn::Eq(a, hn::Set(du, 0x7F800000u));
    const VU e32 = hn::ShiftRight<23>(a);
    const VU frac = hn::And(a, hn::Set(du, 0x7FFFFFu));
    const auto e_zero = hn::Eq(e32, zero);
    const VU ep = hn::Max(e32, one);
    // Unsigned destinations encode |x|: never negative for rounding purposes.
    const auto neg_out = p.dst_has_sign ? neg : NoneTrue(du);
    VU mag;
    if (p.dst == internal::DstKind::kUE8M0) {
      // rz: floor = exponent field; rp: + 1 when the fraction is non-zero.
      VU code = e32;
      if (kMode == Rounding::kRP) {
        code = hn::Add(code, hn::IfThenElseZero(hn::Ne(frac, zero), one));
        // f32 subnormals: (2^-127, 2^-126) -> 2^-126 (code 1), else 0x00.
        code = hn::IfThenElse(e_zero,
                              hn::IfThenElseZero(UGt(a, hn::Set(du, 0x00400000u)), one), code);
      }
      const auto ovf = hn::Or(hn::Eq(code, hn::Set(du, 0xFFu)), is_inf);
      mag = hn::IfThenElse(ovf, hn::Set(du, p.satfinite ? 0xFEu : 0xFFu), code);
      mag = hn::IfThenElse(is_nan, hn::Set(du, 0xFFu), mag);
      return mag;
    }
    const VU sig = hn::Or(frac, hn::IfThenZeroElse(e_zero, hn::Set(du, 0x800000u)));
    const VU emin127 = hn::Set(du, static_cast<uint32_t>(p.dst_emin127));
    const VU below = hn::BitCast(du, hn::Max(hn::Sub(hn::BitCast(di, emin127), hn::BitCast(di, ep)),
                                             hn::Zero(di)));
    const VU s = hn::Add(below, hn::Set(du, static_cast<uint32_t>(23 - p.dst_man)));
    const VU s_c = hn::Min(s, hn::Set(du, 25u));  // sig < 2^24: s >= 25 drops all.
    const VU mask = hn::Sub(hn::Shl(one, s_c), one);
    VU r = hn::Shr(sig, s_c);
    const VU rem = hn::And(sig, mask);
    hn::Mask<DU> up;
    if (kMode == Rounding::kRN) {
      const VU half = hn::Shr(hn::Add(mask, one), one);
      up = hn::Or(UGt(rem, half),
                  hn::And(hn::Eq(rem, half), hn::Ne(hn::And(r, one), zero)));
    } else if (kMode == Rounding::kRZ) {
      up = NoneTrue(du);
    } else if (kMode == Rounding::kRP || kMode == Rounding::kRM) {
      const auto inexact = hn::Ne(rem, zero);
      up = kMode == Rounding::kRP ? hn::AndNot(neg_out, inexact) : hn::And(neg_out, inexact);
    } else {
      // rs: align to the source significand (f16/bf16 sources have fewer
      // bits): d = max(0, src_emin+127 - E') + 23 - src_man low bits are zero.
      VU ss = s, rem_s = rem;  // discarded source bits and their value
      if (!kF32Src) {
        const VU d_below = hn::BitCast(
            du, hn::Max(hn::Sub(hn::Set(di, p.src_emin127), hn::BitCast(di, ep)), hn::Zero(di)));
        const VU d = hn::Add(d_below, hn::Set(du, static_cast<uint32_t>(23 - p.src_man)));
        ss = hn::Sub(s, d);
        rem_s = hn::Shr(rem, hn::Min(d, hn::Set(du, 31u)));
      }
      // ss <= 32: carry iff (rbits & m) > m - rem, m = 2^ss - 1.
      const auto small = hn::RebindMask(du, hn::Lt(hn::BitCast(di, ss), hn::Set(di, 32)));
      const VU m = hn::IfThenElse(small, hn::Sub(hn::Shl(one, hn::Min(ss, hn::Set(du, 31u))), one),
                                  hn::Set(du, 0xFFFFFFFFu));
      const auto up_small = UGt(hn::And(rbits, m), hn::Sub(m, rem_s));
      // ss > 32 (k = ss - 32): carry iff rbits != 0 and (2^32 - rbits) << k <= rem.
      const VU k = hn::Sub(ss, hn::Set(du, 32u));
      const VU dneg = hn::Sub(zero, rbits);  // 2^32 - rbits (mod 2^32)
      const auto k_ok = hn::RebindMask(du, hn::Lt(hn::BitCast(di, k), hn::Set(di, 24)));
      const VU kc = hn::Min(k, hn::Set(du, 31u));
      // (dneg << k) must not overflow: dneg < 2^(32-k).
      const auto fits = hn::Not(UGt(dneg, hn::Shr(hn::Set(du, 0xFFFFFFFFu), kc)));
      const auto up_big = hn::And(hn::And(hn::Ne(rbits, zero), k_ok),
                                  hn::And(fits, hn::Not(UGt(hn::Shl(dneg, kc), rem_s))));
      up = hn::Or(hn::And(small, up_small), hn::AndNot(small, up_big));
    }
    r = hn::Add(r, hn::IfThenElseZero(up, one));
    const VU b = hn::Sub(hn::Max(ep, emin127), hn::Set(du, static_cast<uint32_t>(128 - p.dst_bias)));
    VU code = hn::Add(r, hn::ShiftLeftSame(b, p.dst_man));
    // Overflow: beyond max finite, or an Inf input.
    const auto ovf = hn::Or(UGt(code, hn::Set(du, p.dst_max_code)), is_inf);
    VU ovf_code;
    if (p.satfinite) {
      ovf_code = hn::Set(du, p.dst_max_code);
    } else {
      // IEEE: towards Inf for rn/rs, never for rz, by direction for rm/rp;
      // an Inf input stays Inf (or NaN where the format has no Inf).
      hn::Mask<DU> to_inf;
      if (kMode == Rounding::kRN || kMode == Rounding::kRS) to_inf = NoneFalse(du);
      else if (kMode == Rounding::kRZ) to_inf = NoneTrue(du);
      else if (kMode == Rounding::kRP) to_inf = hn::Not(neg_out);
      else to_inf = neg_out;
      to_inf = hn::Or(to_inf, is_inf);
      ovf_code = hn::IfThenElse(to_inf, hn::Set(du, p.dst_overflow_code), hn::Set(du, p.dst_max_code));
    }
    mag = hn::IfThenElse(ovf, ovf_code, code);
    if (p.dst_has_sign) mag = hn::Or(mag, hn::ShiftLeftSame(sign, p.dst_sign_shift));
    if (p.relu) mag = hn::IfThenZeroElse(neg, mag);
    return hn::IfThenElse(is_nan, hn::Set(du, p.dst_nan_code), mag);
  }
};

// Wide sources as f32 bits in u32 lanes (exact), one loader per kind.
template <internal::SrcKind kSrc>
struct WideSource;

template <>
struct WideSource<internal::SrcKind::kF32> {
  static constexpr size_t kBytes = 4;
  template <class DU>
  static HWY_INLINE hn::Vec<DU> Load(DU du, const uint8_t* in) {
    return hn::LoadU(du, reinterpret_cast<const uint32_t*>(in));
  }
};

template <>
struct WideSource<internal::SrcKind::kBF16> {
  static constexpr size_t kBytes = 2;
  template <class DU>
  static HWY_INLINE hn::Vec<DU> Load(DU du, const uint8_t* in) {
    const hn::Rebind<uint16_t, DU> d16;
    return hn::ShiftLeft<16>(hn::PromoteTo(du, hn::LoadU(d16, reinterpret_cast<const uint16_t*>(in))));
  }
};

template <>
struct WideSource<internal::SrcKind::kF16> {
  static constexpr size_t kBytes = 2;
  template <class DU>
  static HWY_INLINE hn::Vec<DU> Load(DU du, const uint8_t* in) {
    // In integer lanes: Highway 1.0.3's emulated f16 PromoteTo (targets
    // without F16C) turns NaN into Inf.
    //   f16: S EEEEE MMMMMMMMMM -> f32: S (E+112) M<<13; E=31 -> 255; E=0: M*2^-24
    const hn::Rebind<uint16_t, DU> d16;
    const hn::RebindToFloat<DU> df;
    const hn::RebindToSigned<DU> di;
    const auto h = hn::PromoteTo(du, hn::LoadU(d16, reinterpret_cast<const uint16_t*>(in)));
    const auto sign = hn::ShiftLeft<16>(hn::And(h, hn::Set(du, 0x8000u)));
    const auto e = hn::And(hn::ShiftRight<10>(h), hn::Set(du, 0x1Fu));
    const auto m = hn::And(h, hn::Set(du, 0x3FFu));
    auto v = hn::Or(hn::ShiftLeft<23>(hn::Add(e, hn::Set(du, 112u))), hn::ShiftLeft<13>(m));
    v = hn::IfThenElse(hn::Eq(e, hn::Set(du, 31u)),
                       hn::Or(hn::Set(du, 0x7F800000u), hn::ShiftLeft<13>(m)), v);
    const auto sub = hn::BitCast(du, hn::Mul(hn::ConvertTo(df, hn::BitCast(di, m)),
                                             hn::Set(df, 5.9604644775390625e-8f)));  // 2^-24
    v = hn::IfThenElse(hn::Eq(e, hn::Zero(du)), sub, v);
    return hn::Or(v, sign);
  }
};

template <Rounding kMode, internal::SrcKind kSrc>
HWY_INLINE hn::Vec<ConvertCodec::DU> ConvertOne(const internal::ConvertParams& p,
                                                hn::Vec<ConvertCodec::DU> raw,
                                                hn::Vec<ConvertCodec::DU> rbits) {
  using DU = ConvertCodec::DU;
  const DU du;
  hn::Vec<DU> x = kSrc == internal::SrcKind::kNarrow ? ConvertCodec::DecodeNarrow(p, raw) : raw;
  if (p.dst == internal::DstKind::kF32) {
    // Exact decode to f32: canonical NaN and relu only.
    const auto is_nan = ConvertCodec::UGt(hn::And(x, hn::Set(du, 0x7FFFFFFFu)), hn::Set(du, 0x7F800000u));
    if (p.relu) x = hn::IfThenZeroElse(hn::Ne(hn::ShiftRight<31>(x), hn::Zero(du)), x);
    return hn::IfThenElse(is_nan, hn::Set(du, 0x7FFFFFFFu), x);
  }
  return ConvertCodec::Encode<kMode, kSrc == internal::SrcKind::kF32>(p, x, rbits);
}

// Narrow code (u32 lanes) -> exact f32 bits, NaN -> 0x7FFFFFFF.
template <Format kFrom>
struct FastDecodeNarrow {
  static constexpr internal::FastFormat kT = internal::FastFormatOf(kFrom);
  static constexpr int kMagBits = kT.has_sign ? kT.bits - 1 : kT.bits;
  static constexpr uint32_t kMagMask = (1u << kMagBits) - 1;
  static constexpr int kShift = 23 - kT.man_bits;
  static constexpr uint32_t kRebias = static_cast<uint32_t>(127 - kT.bias) << 23;
  static constexpr uint32_t kMinNormalBits = static_cast<uint32_t>(128 - kT.bias) << 23;

  template <class DU>
  static HWY_INLINE hn::Vec<DU> ToF32(DU du, hn::Vec<DU> c) {
    const hn::RebindToFloat<DU> df;
    if (kFrom == Format::kUE8M0) {
      // 2^(c-127): exponent field c; 0x00 is the f32 subnormal 2^-127.
      const auto v = hn::IfThenElse(hn::Eq(c, hn::Zero(du)), hn::Set(du, 0x00400000u),
                                    hn::ShiftLeft<23>(c));
      return hn::IfThenElse(hn::Eq(c, hn::Set(du, 0xFFu)), hn::Set(du, 0x7FFFFFFFu), v);
    }
    const auto mag = kT.has_sign ? hn::And(c, hn::Set(du, kMagMask)) : c;
    // Normal: rebias the exponent,  0 EEEE MMM -> 0 (E+127-bias) MMM<<20.
    const auto shifted = hn::ShiftLeft<kShift>(mag);
    auto v = hn::Add(shifted, hn::Set(du, kRebias));
    // Subnormal (E = 0): m * 2^(1-bias-man) = 1.m * 2^(1-bias) - 2^(1-bias),
    // an exact f32 subtraction of two normal operands.
    const auto min_normal = hn::Set(du, kMinNormalBits);
    const auto sub = hn::BitCast(du, hn::Sub(hn::BitCast(df, hn::Add(shifted, min_normal)),
                                             hn::BitCast(df, min_normal)));
    v = hn::IfThenElse(hn::Lt(mag, hn::Set(du, 1u << kT.man_bits)), sub, v);
    if (kFrom == Format::kE5M2) {  // S 11111 00 = Inf
      v = hn::IfThenElse(hn::Eq(mag, hn::Set(du, 0x7Cu)), hn::Set(du, 0x7F800000u), v);
    }
    if (kT.has_sign) v = hn::Or(v, hn::ShiftLeft<32 - kT.bits>(hn::And(c, hn::Set(du, 1u << (kT.bits - 1)))));
    if (kT.nan_code != kT.max_code) {  // e4m3/ue4m3: mag 0x7F; e5m2: mag > 0x7C
      const auto is_nan = kFrom == Format::kE5M2 ? hn::Gt(mag, hn::Set(du, 0x7Cu))
                                                 : hn::Eq(mag, hn::Set(du, 0x7Fu));
      v = hn::IfThenElse(is_nan, hn::Set(du, 0x7FFFFFFFu), v);
    }
    return v;
  }
};

// One step of an encode to narrow codes (at most 8 bits): the 4N elements
// at `src` (f32/f16/bf16; N = Lanes(du)) -> their 4N codes, in order, as u8
// lanes (not for HWY_SCALAR, whose u8 vector has one lane). kF16c: f32/f16
// sources go through F16cEncodeF32 (x86 AVX2/AVX-512); run such loops under
// internal::ScopedFlushDenormals, in a non-inlined function. Shared by FastEncodeArray,
// the fused padded-layout quantizer and the MX kernel.
template <internal::SrcKind kSrc, Format kTo, bool kSatFinite, bool kRelu>
struct EncodeStep4 {
#ifdef MXPACK_HAVE_F16C_ENCODE
  static constexpr bool kF16c = kSrc != internal::SrcKind::kBF16 && internal::FastFormatOf(kTo).bits <= 8;
#else
  static constexpr bool kF16c = false;
#endif
  static constexpr size_t kIn = WideSource<kSrc>::kBytes;
  // f32 sources, rn satfinite, signed formats on AVX3_DL: RangeEncodeF32.
#ifdef MXPACK_HAVE_RANGE_ENCODE
  static constexpr bool kRange = kSrc == internal::SrcKind::kF32 && kSatFinite && !kRelu &&
                                 RangeEncodeF32<kTo>::kSupported;
#else
  static constexpr bool kRange = false;
#endif

  // f32 bits; on the F16C path f16 goes through vcvtph2ps (exact, NaN stays
  // NaN, ignores DAZ) instead of the integer-lane widening.
  template <class DU>
  static HWY_INLINE hn::Vec<DU> Load(DU du, const uint8_t* p) {
#ifdef MXPACK_HAVE_F16C_ENCODE
    if constexpr (kF16c && kSrc == internal::SrcKind::kF16) {
      const hn::Rebind<uint16_t, DU> d16;
      const hn::Rebind<hwy::float16_t, DU> dh;
      const hn::RebindToFloat<DU> df;
      return hn::BitCast(
          du, hn::PromoteTo(df, hn::BitCast(dh, hn::LoadU(d16, reinterpret_cast<const uint16_t*>(p)))));
    }
#endif
    return WideSource<kSrc>::Load(du, p);
  }

  // The step's 4N codes, one per byte; kB4x16 (kRange e2m1 only): as
  // b4x16_p64 groups instead, through the range encoder's own packing.
  template <bool kB4x16 = false, class DU>
  static HWY_INLINE hn::Vec<hn::Repartition<uint8_t, DU>> Codes(DU du, const uint8_t* src) {
    const size_t N = hn::Lanes(du);
    const auto v0 = Load(du, src), v1 = Load(du, src + N * kIn);
    const auto v2 = Load(du, src + 2 * N * kIn), v3 = Load(du, src + 3 * N * kIn);
#ifdef MXPACK_HAVE_RANGE_ENCODE
    if constexpr (kB4x16) {
      static_assert(kRange, "EncodeStep4::Codes<true>: range encoder (e2m1) only");
      return hn::Vec<hn::Repartition<uint8_t, DU>>{
          RangeEncodeF32<kTo>::EncodeB4x16(v0.raw, v1.raw, v2.raw, v3.raw)};
    } else if constexpr (kRange) {
      return hn::Vec<hn::Repartition<uint8_t, DU>>{
          RangeEncodeF32<kTo>::Encode64(v0.raw, v1.raw, v2.raw, v3.raw)};
    }
#else
    static_assert(!kB4x16, "EncodeStep4::Codes<true>: range encoder (e2m1) only");
#endif
#ifdef MXPACK_HAVE_F16C_ENCODE
    if constexpr (kF16c) {
      return F16cEncodeF32<kTo, kSatFinite, kRelu>::EncodeToU8x4(du, v0, v1, v2, v3);
    }
#endif
    using Enc = FastEncodeF32<kTo, kSatFinite, kRelu>;
    return U8From4U32(du, Enc::EncodeRn(du, v0), Enc::EncodeRn(du, v1), Enc::EncodeRn(du, v2),
                      Enc::EncodeRn(du, v3));
  }
};

// Narrow code (u16 lanes) -> exact bf16 or f16 bits (kWide), NaN -> 0x7FFF.
// Twice the lanes of the f32 decoder: narrow values have at most 4
// significant bits, so every f32 result is its bf16 bits << 16. Subnormal
// codes (at most 8 per format) come from a 16-byte table (TableLookupBytes).
// Not for ue8m0 -> f16 (illegal) or e5m2 -> f16 (a shift, see below).
template <Format kFrom, Format kWide>
struct FastDecodeNarrow16 {
  static constexpr internal::FastFormat kT = internal::FastFormatOf(kFrom);
  static constexpr internal::FastFormat kW = internal::FastFormatOf(kWide);
  static constexpr int kMagBits = kT.has_sign ? kT.bits - 1 : kT.bits;
  static constexpr uint16_t kMagMask = static_cast<uint16_t>((1u << kMagBits) - 1);
  static constexpr uint16_t kRebias = static_cast<uint16_t>((kW.bias - kT.bias) << kW.man_bits);
  static constexpr uint16_t kInf = static_cast<uint16_t>(kW.overflow_code);

  // kWide bits of the subnormal code m: m * 2^(1 - bias - man), normalized.
  static constexpr uint16_t SubnormalBits(int m) {
    if (m == 0) return 0;
    int top = 0;
    while ((m >> (top + 1)) != 0) ++top;
    const int exp = 1 - kT.bias - kT.man_bits + top;  // floor(log2(value))
    const int mant = (m - (1 << top)) << (kW.man_bits - top);
    return static_cast<uint16_t>(((exp + kW.bias) << kW.man_bits) | mant);
  }

  template <class D16>
  static HWY_INLINE hn::Vec<D16> Decode(D16 d16, hn::Vec<D16> c) {
    const hn::RebindToSigned<D16> di16;
    const hn::Repartition<uint8_t, D16> d8;
    if constexpr (kFrom == Format::kUE8M0) {  // bf16 only: 2^(c-127)
      const auto v = hn::IfThenElse(hn::Eq(c, hn::Zero(d16)), hn::Set(d16, uint16_t{0x0040}),
                                    hn::ShiftLeft<7>(c));
      return hn::IfThenElse(hn::Eq(c, hn::Set(d16, uint16_t{0xFF})),
                            hn::Set(d16, uint16_t{0x7FFF}), v);
    } else {
      const auto mag = kT.has_sign ? hn::And(c, hn::Set(d16, kMagMask)) : c;
      // Normal: S EEEE MMM -> S (E + bias_w - bias) MMM<<(man_w - man).
      auto v = hn::Add(hn::ShiftLeft<kW.man_bits - kT.man_bits>(mag), hn::Set(d16, kRebias));
      // Subnormal m < 2^man: byte indices 2m (low) and 2m+1 (high) of the table.
      alignas(16) static constexpr uint16_t kSub[8] = {
          SubnormalBits(0), SubnormalBits(1), SubnormalBits(2), SubnormalBits(3),
          SubnormalBits(4), SubnormalBits(5), SubnormalBits(6), SubnormalBits(7)};
      const auto table = hn::BitCast(d8, hn::LoadDup128(d16, kSub));
      const auto idx = hn::Add(hn::Mul(mag, hn::Set(d16, uint16_t{0x0202})),
                               hn::Set(d16, uint16_t{0x0100}));
      const auto sub = hn::BitCast(d16, hn::TableLookupBytes(table, hn::BitCast(d8, idx)));
      const auto is_sub = hn::RebindMask(
          d16, hn::Lt(hn::BitCast(di16, mag), hn::Set(di16, static_cast<int16_t>(1 << kT.man_bits))));
      v = hn::IfThenElse(is_sub, sub, v);
      if constexpr (kFrom == Format::kE5M2) {  // S 11111 00 = Inf
        v = hn::IfThenElse(hn::Eq(mag, hn::Set(d16, uint16_t{0x7C})), hn::Set(d16, kInf), v);
      }
      if constexpr (kT.has_sign) {
        v = hn::Or(v, hn::ShiftLeft<16 - kT.bits>(
                          hn::And(c, hn::Set(d16, static_cast<uint16_t>(1u << (kT.bits - 1))))));
      }
      if constexpr (kT.nan_code != kT.max_code) {  // e4m3/ue4m3: mag 0x7F; e5m2: > 0x7C
        const auto is_nan =
            kFrom == Format::kE5M2
                ? hn::RebindMask(d16, hn::Gt(hn::BitCast(di16, mag), hn::Set(di16, int16_t{0x7C})))
                : hn::Eq(mag, hn::Set(d16, uint16_t{0x7F}));
        v = hn::IfThenElse(is_nan, hn::Set(d16, uint16_t{0x7FFF}), v);
      }
      return v;
    }
  }
};


#undef MXPACK_HAVE_F16C_DECODE  // per target: this header is re-included
#if HWY_TARGET <= HWY_AVX2 && !defined(HWY_DISABLE_F16C)
#define MXPACK_HAVE_F16C_DECODE 1
// Narrow -> f32 through the hardware f16 -> f32 conversion (vcvtph2ps, which
// is exact and keeps f16 subnormals). The code's exponent and mantissa bits
// are placed on the f16 fields unchanged,
//   S EEEE MMM (e4m3)  ->  S 0 EEEE MMM 0000000 (f16 bits),
// so the f16 holds value * 2^(bias - 15): the exponent fields coincide and the
// code's subnormals (E = 0) are f16 subnormals on the same grid. One exact
// multiply by 2^(15 - bias) (the product is a normal f32 or zero) restores
// the value. Inf (e5m2) maps to the f16 Inf; NaN codes are rare, so a chunk
// holding one redoes its NaN lanes (canonical 0x7FFFFFFF).
template <Format kFrom>
struct F16cDecodeNarrow {
  static constexpr internal::FastFormat kT = internal::FastFormatOf(kFrom);
  static_assert(kT.bits <= 8 && kFrom != Format::kUE8M0 && kT.bias <= 15, "no f16 image");
  static constexpr int kMagBits = kT.has_sign ? kT.bits - 1 : kT.bits;
  static constexpr uint16_t kMagMask = static_cast<uint16_t>((1u << kMagBits) - 1);
  static constexpr int kShift = 10 - kT.man_bits;
  static constexpr float kScale = static_cast<float>(1u << (15 - kT.bias));
  static constexpr bool kHasNan = kT.nan_code != kT.max_code;

  // N16 codes at `src` (u8) -> N16 f32 at `dst`.
  template <class D16>
  static HWY_INLINE void Step(D16 d16, const uint8_t* src, uint8_t* dst) {
    const hn::RebindToSigned<D16> di16;
    const hn::Rebind<uint8_t, D16> d8;
    const hn::Half<D16> dh;
    const hn::Rebind<hwy::float16_t, decltype(dh)> dfh;
    const hn::Rebind<float, decltype(dh)> df;
    const auto c = hn::PromoteTo(d16, hn::LoadU(d8, src));
    const auto mag = kT.has_sign ? hn::And(c, hn::Set(d16, kMagMask)) : c;
    auto h = hn::ShiftLeft<kShift>(mag);
    if constexpr (kT.has_sign) {
      h = hn::OrAnd(h, hn::ShiftLeft<16 - kT.bits>(c), hn::Set(d16, uint16_t{0x8000}));
    }
    bool any_nan = false;
    if constexpr (kHasNan) {  // e4m3/ue4m3: mag 0x7F; e5m2: mag > 0x7C (f16 NaN)
      const auto is_nan =
          kFrom == Format::kE5M2
              ? hn::RebindMask(d16, hn::Gt(hn::BitCast(di16, mag), hn::Set(di16, int16_t{0x7C})))
              : hn::Eq(mag, hn::Set(d16, uint16_t{0x7F}));
      if (HWY_UNLIKELY(!hn::AllFalse(d16, is_nan))) {
        any_nan = true;
        h = hn::IfThenElse(is_nan, hn::Set(d16, uint16_t{0x7FFF}), h);  // f16 NaN
      }
    }
    float* out = reinterpret_cast<float*>(dst);
    const auto widen = [&](hn::Vec<decltype(dh)> half) {
      auto f = hn::PromoteTo(df, hn::BitCast(dfh, half));
      if constexpr (kScale != 1.0f) f = hn::Mul(f, hn::Set(df, kScale));
      if (HWY_UNLIKELY(any_nan)) {
        f = hn::IfThenElse(hn::IsNaN(f), hn::BitCast(df, hn::Set(hn::RebindToUnsigned<decltype(df)>(),
                                                                  0x7FFFFFFFu)), f);
      }
      return f;
    };
    hn::StoreU(widen(hn::LowerHalf(dh, h)), df, out);
    hn::StoreU(widen(hn::UpperHalf(dh, h)), df, out + hn::Lanes(df));
  }
};
#endif

}  // namespace HWY_NAMESPACE
}  // namespace mxpack
HWY_AFTER_NAMESPACE();

#endif  // MXPACK_SRC_FORMAT_CODEC_INL_H_
