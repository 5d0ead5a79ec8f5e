// f32 -> narrow codes through the hardware f32 -> f16 conversion after a
// sticky bit (F16cEncodeF32, x86 AVX2 / AVX-512). Part of the fast encoders
// of src/format/encode_fast-inl.h.

#if defined(MXPACK_SRC_FORMAT_ENCODE_F16C_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MXPACK_SRC_FORMAT_ENCODE_F16C_INL_H_
#undef MXPACK_SRC_FORMAT_ENCODE_F16C_INL_H_
#else
#define MXPACK_SRC_FORMAT_ENCODE_F16C_INL_H_
#endif

#include "hwy/highway.h"
#include "src/format/encode_rn-inl.h"

HWY_BEFORE_NAMESPACE();
namespace mxpack {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;


#undef MXPACK_HAVE_F16C_ENCODE  // per target: this header is re-included
#if HWY_TARGET <= HWY_AVX2 && !defined(HWY_DISABLE_F16C)
#define MXPACK_HAVE_F16C_ENCODE 1
// f32 -> narrow codes through the hardware f32 -> f16 conversion, in u16
// lanes (x86 AVX2 / AVX-512; 256/512-bit vectors):
//
//   F16cEncodeF32<kTo, kSatFinite, kRelu>::EncodeToU8x4(du, v0, v1, v2, v3)
//
// returns the 4N codes of four u32 vectors of f32 bits, in order, as one u8
// vector, bit-identical to FastEncodeF32 (scalar::Convert rn). kTo: e2m1,
// e2m3, e3m2, e4m3, e5m2, ue4m3. (Callers that scale, such as MX, multiply
// first: the sticky bit below assumes the bits it sees are the value's.)
//
// Method. With the scale 2^(bias - 15) the f16 exponent field equals the
// code's exponent field, so the code's grid is the f16 grid with the low
// kDrop = 10 - man mantissa bits removed, subnormals included (as in the
// multimem fp8 kernels). The f32 -> f16 step must not round a second time:
// it truncates (vcvtps2ph, round toward zero) after a sticky bit has been
// ORed into f32 mantissa bit P = 14 + man whenever any lower bit is set. P
// lies at or above the f16 lsb and below the code's guard bit for every f16
// normal (lsb = bit 13, guard = bit 22 - man) and for every scaled value of
// at least 2^(-15 - man), half the smallest code subnormal (lsb = bit -1 - e
// for the binade 2^e, guard = bit 8 - man - e). Smaller values round to zero
// either way. So the truncated f16 keeps the bits above the guard, the guard,
// and a nonzero remainder exactly when the f32 had one, which is all that
// round-to-nearest-even on the code grid needs. Then, in u16 lanes, one
// rounding serves normals and subnormals alike:
//   code = (|h| + 2^(kDrop-1) - 1 + lsb) >> kDrop,  lsb = bit kDrop of |h|,
// then the saturation clamp, sign (or relu) and NaN as FastEncodeF32.
// Overflow: the truncation never produces Inf from a finite value and any
// finite f16 above the code's max clamps, so satfinite and nosat agree with
// FastEncodeF32. Run the loops under internal::ScopedFlushDenormals (results
// are the same without it, only slower on tiny inputs) in a non-inlined
// function.
template <Format kTo, bool kSatFinite, bool kRelu = false>
struct F16cEncodeF32 {
  using F32 = FastEncodeF32<kTo, kSatFinite, kRelu>;  // policy legality
  static constexpr internal::FastFormat kT = F32::kT;
  static_assert(kT.bits <= 8 && kT.bias <= 15 && kT.man_bits <= 3 && kTo != Format::kUE8M0,
                "f16 image needs at most 8 bits, bias <= 15, man <= 3");
  static constexpr int kDrop = 10 - kT.man_bits;
  static constexpr int kStickyBit = 14 + kT.man_bits;
  static constexpr float kScale = 1.0f / static_cast<float>(1u << (15 - kT.bias));

  // Two u32 vectors of f32 bits -> 2N f16 bits (u16 lanes, in order) of
  // v * 2^(bias - 15), truncated after the sticky OR. kPrescaled: v already
  // carries the factor 2^(bias - 15) (its producer multiplied by it, and a
  // product below 2^-126 flushed to zero, which encodes as the unscaled
  // product would). kNoSticky: every f32 bit below the sticky bit P is known
  // to be zero (e.g. bf16 sources times powers of two, under FTZ, when P <=
  // 16), so the OR is skipped.
  template <bool kPrescaled, bool kNoSticky, class DU32>
  static HWY_INLINE hn::Vec<hn::Repartition<uint16_t, DU32>> ToScaledF16(
      DU32 du, hn::Vec<DU32> a, hn::Vec<DU32> b) {
    const hn::RebindToFloat<DU32> df;
    const auto mul = hn::Set(df, kScale);
    const hn::Repartition<uint16_t, DU32> d16;
    const auto low = hn::Set(du, (1u << kStickyBit) - 1);
    const auto stick = hn::Set(du, 1u << kStickyBit);
    constexpr int kRz = _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC;
#if HWY_TARGET <= HWY_AVX3
    static_assert(hn::MaxLanes(du) == 16, "512-bit vectors");
    const auto one = [&](hn::Vec<DU32> v) {
      hn::Vec<DU32> x = v;
      if constexpr (!kNoSticky) {
        x.raw = _mm512_mask_or_epi32(v.raw, _mm512_test_epi32_mask(v.raw, low.raw), v.raw,
                                     stick.raw);
      }
      const auto f = kPrescaled ? hn::BitCast(df, x) : hn::Mul(hn::BitCast(df, x), mul);
      return _mm512_cvtps_ph(f.raw, kRz);
    };
    return hn::Vec<decltype(d16)>{
        _mm512_inserti64x4(_mm512_castsi256_si512(one(a)), one(b), 1)};
#else
    static_assert(hn::MaxLanes(du) == 8, "256-bit vectors");
    const auto one = [&](hn::Vec<DU32> v) {
      // (v & low) + low carries into bit P exactly when the low bits are nonzero.
      const auto x = kNoSticky ? v : hn::Or(v, hn::And(hn::Add(hn::And(v, low), low), stick));
      const auto f = kPrescaled ? hn::BitCast(df, x) : hn::Mul(hn::BitCast(df, x), mul);
      return _mm256_cvtps_ph(f.raw, kRz);
    };
    return hn::Vec<decltype(d16)>{
        _mm256_inserti128_si256(_mm256_castsi128_si256(one(a)), one(b), 1)};
#endif
  }

  // Scaled f16 bits -> codes (u16 lanes, upper bits zero). kNanFree: the
  // caller overrides the codes of NaN inputs (MX NaN blocks), so NaN lanes
  // may get any code (the canonical-NaN select is skipped).
  template <bool kNanFree = false, class D16>
  static HWY_INLINE hn::Vec<D16> EncodeScaled(D16 d16, hn::Vec<D16> h) {
    const hn::RebindToSigned<D16> di16;
    const auto a = hn::And(h, hn::Set(d16, uint16_t{0x7FFF}));
    const auto lsb = hn::And(hn::ShiftRight<kDrop>(a), hn::Set(d16, uint16_t{1}));
    auto code = hn::ShiftRight<kDrop>(
        hn::Add(hn::Add(a, hn::Set(d16, static_cast<uint16_t>((1u << (kDrop - 1)) - 1))), lsb));
    code = hn::Min(code, hn::Set(d16, static_cast<uint16_t>(F32::kClamp)));
    if constexpr (kNanFree) {
      static_assert(!kRelu, "kNanFree: signed codes only");
      return hn::OrAnd(code, hn::ShiftRight<16 - kT.bits>(h),
                       hn::Set(d16, static_cast<uint16_t>(1u << (kT.bits - 1))));
    }
    const auto is_nan =
        hn::RebindMask(d16, hn::Gt(hn::BitCast(di16, a), hn::Set(di16, int16_t{0x7C00})));
    return SignReluNanU16<kTo, kRelu>(d16, code, h, is_nan);
  }

  // Four u32 vectors of f32 bits -> their 4N codes, in order, as u8 lanes
  // (kPrescaled, kNoSticky: as ToScaledF16; kNanFree: as EncodeScaled).
  template <bool kPrescaled = false, bool kNoSticky = false, bool kNanFree = false, class DU32>
  static HWY_INLINE hn::Vec<hn::Repartition<uint8_t, DU32>> EncodeToU8x4(
      DU32 du, hn::Vec<DU32> v0, hn::Vec<DU32> v1, hn::Vec<DU32> v2, hn::Vec<DU32> v3) {
    const hn::Repartition<uint16_t, DU32> d16;
    const auto c0 =
        EncodeScaled<kNanFree>(d16, ToScaledF16<kPrescaled, kNoSticky>(du, v0, v1));
    const auto c1 =
        EncodeScaled<kNanFree>(d16, ToScaledF16<kPrescaled, kNoSticky>(du, v2, v3));
    return U8From2U16(d16, c0, c1);
  }
};
#endif  // F16C encode

}  // namespace HWY_NAMESPACE
}  // namespace mxpack
HWY_AFTER_NAMESPACE();

#endif  // MXPACK_SRC_FORMAT_ENCODE_F16C_INL_H_
