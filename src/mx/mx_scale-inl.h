// Pass 2 of the MX block quantizer (src/mx/quantize-inl.h): scale codes
// and the per-block constants of pass 3.
// Per-target toggle guard (re-included once per Highway target).
#if defined(MXPACK_SRC_MX_MX_SCALE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MXPACK_SRC_MX_MX_SCALE_INL_H_
#undef MXPACK_SRC_MX_MX_SCALE_INL_H_
#else
#define MXPACK_SRC_MX_MX_SCALE_INL_H_
#endif

#include <cstddef>
#include <cstdint>

#include "hwy/highway.h"
#include "mxpack/format.h"
#include "mxpack/mx.h"
#include "src/mx/mx_internal.h"
#include "src/util/lanes-inl.h"  // StoreLanes
#include "src/format/encode_fast-inl.h"

HWY_BEFORE_NAMESPACE();
namespace mxpack {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Pass 2 of MX chunks: the ue8m0 scale codes of a vector of blocks at a
// time (ScaleCodes; FastScaleCodes on AVX-512), the per-block multipliers
// and EncodeDirect's constants (CodeConstants), and the range encoder's
// folded constants (RangeFoldAt, AVX3_DL). kDirect, kMultExp: as
// MxBlockQuantizer's.
template <Format kElem, bool kDirect, int kMultExp>
class MxScalePass {
 public:
  using D = hn::CappedTag<float, 16>;
  using DU = hn::RebindToUnsigned<D>;
  using DI = hn::RebindToSigned<D>;
  using VU = hn::Vec<DU>;
  static constexpr size_t kMaxBlocks = internal::kMxChunkBlocks;
  static constexpr internal::FastFormat kElemT = internal::FastFormatOf(kElem);
  static constexpr int kDirectShift = 7 - kElemT.man_bits;  // dropped bf16 mantissa bits

  // MX scale codes of `nb` blocks from their amax bits, a vector of blocks
  // at a time: the integer formula of internal::MxScaleCodeFromBits
  // (tests/mx_test.cc checks both against the reference on every target).
  // hook(b, bits, code) then sees each vector's first block, amax bits and
  // codes (u32 lanes), for per-block constants computed in the same pass.
  static HWY_INLINE void ScaleCodes(const internal::MxScaleParams& p,
                                    const uint32_t* HWY_RESTRICT amax, size_t nb,
                                    uint8_t* HWY_RESTRICT scale_codes) {
    ScaleCodes(p, amax, nb, scale_codes, [](size_t, VU, VU) {});
  }
  template <class Hook>
  static HWY_INLINE void ScaleCodes(const internal::MxScaleParams& p,
                                    const uint32_t* HWY_RESTRICT amax, size_t nb,
                                    uint8_t* HWY_RESTRICT scale_codes, const Hook& hook) {
    const DU du;
    const DI di;
    const size_t N = hn::Lanes(du);
    using VI = hn::Vec<DI>;
    for (size_t b = 0; b < nb; b += N) {
      // Lanes past nb read the zeroed tail of amax[] (pass 1); their results
      // land in the tail of scale_codes (sized kMaxBlocks), unused.
      const VU bits = hn::LoadU(du, amax + b);
      const VU mant = hn::And(bits, hn::Set(du, 0x7FFFFFu));
      const VI biased = hn::BitCast(di, hn::ShiftRight<23>(bits));
      VI s = hn::Sub(biased, hn::Set(di, 127 + p.emax));
      // The mode's bump by one binade: an all-ones mask is -1, so subtract.
      const VI mant_i = hn::BitCast(di, mant);
      switch (p.mode) {
        case ScaleMode::kFloor:
          break;
        case ScaleMode::kCeil:
          s = hn::Sub(s, hn::VecFromMask(di, hn::Gt(mant_i, hn::Zero(di))));
          break;
        case ScaleMode::kRceil:
          s = hn::Sub(s, hn::VecFromMask(di, hn::Gt(mant_i, hn::Set(di, static_cast<int32_t>(p.max_mant)))));
          break;
        case ScaleMode::kEven:
          s = hn::Sub(s, hn::VecFromMask(di, hn::Gt(mant_i, hn::Set(di, static_cast<int32_t>(p.even_mant) - 1))));
          break;
      }
      s = hn::Min(hn::Max(s, hn::Set(di, -127)), hn::Set(di, 127));
      VU code = hn::BitCast(du, hn::Add(s, hn::Set(di, 127)));
      // Zero and f32-subnormal amax: code 0. NaN: 0xFF.
      const VI bits_i = hn::BitCast(di, bits);
      code = hn::IfThenZeroElse(hn::RebindMask(du, hn::Eq(biased, hn::Zero(di))), code);
      const auto nan = hn::RebindMask(du, hn::Gt(bits_i, hn::Set(di, 0x7F800000)));
      code = hn::IfThenElse(nan, hn::Set(du, 0xFFu), code);
      StoreLanes<1>(du, code, scale_codes + b);
      hook(b, bits, code);
    }
  }

  // From the scale codes of `nb` blocks: the multipliers 2^(-s + kMultExp)
  // (unless mult is null) and, kDirect, EncodeDirect's add and low per
  // block, each duplicated into both u16 halves of a u32.
  static HWY_INLINE void CodeConstants(const uint8_t* HWY_RESTRICT scale_codes, size_t nb,
                                       float* HWY_RESTRICT mult, uint32_t* HWY_RESTRICT add2,
                                       uint32_t* HWY_RESTRICT low2) {
    if (!kDirect && mult == nullptr) return;
    const DU du;
    const DI di;
    const hn::Rebind<uint8_t, DU> d8;
    const size_t N = hn::Lanes(du);
    using VI = hn::Vec<DI>;
    for (size_t b = 0; b < nb; b += N) {
      const VU code = hn::PromoteTo(du, hn::LoadU(d8, scale_codes + b));
      // 2^(-s + kMultExp): exponent field e = 254 - code + kMultExp (code
      // 254, kMultExp 0: e = 0, the subnormal 2^-127); e in [-14, 0] is the
      // subnormal 2^(e - 127) = 2^(e + 22) * 2^-149. (NaN blocks get a
      // multiplier too; pass 3 does not use it.)
      const VI e = hn::Sub(hn::Set(di, 254 + kMultExp),
                           hn::BitCast(di, hn::Min(code, hn::Set(du, 254u))));
      // The shift count is clamped to [0, 22] in every lane (the normal
      // lanes' counts would exceed the width: undefined in the emulated
      // targets' scalar shifts, FE_INVALID in SSE4's multiply-based Shl).
      const VI count = hn::Min(hn::Max(hn::Add(e, hn::Set(di, 22)), hn::Zero(di)), hn::Set(di, 22));
      const VI sub = hn::Shl(hn::Set(di, 1), count);
      const VU m = hn::BitCast(du, hn::IfThenElse(hn::Lt(e, hn::Set(di, 1)), sub,
                                                  hn::ShiftLeft<23>(e)));
      if (mult != nullptr) hn::StoreU(m, du, reinterpret_cast<uint32_t*>(mult) + b);
      if constexpr (kDirect) {
        constexpr uint32_t kBias = static_cast<uint32_t>(kElemT.bias);
        // add = 2^(shift-1) - 1 + (bias << 7) - (c << 7) mod 2^16 (u32 wrap).
        const VU add = hn::And(
            hn::Sub(hn::Set(du, (1u << (kDirectShift - 1)) - 1u + (kBias << 7)),
                    hn::ShiftLeft<7>(code)),
            hn::Set(du, 0xFFFFu));
        // low = max(c + 1 - bias, 1) << 7 (c <= 255: below 2^15).
        const VU low = hn::ShiftLeft<7>(hn::BitCast(
            du, hn::Max(hn::Sub(hn::BitCast(di, code), hn::Set(di, kElemT.bias - 1)),
                        hn::Set(di, 1))));
        hn::StoreU(hn::Or(add, hn::ShiftLeft<16>(add)), du, add2 + b);
        hn::StoreU(hn::Or(low, hn::ShiftLeft<16>(low)), du, low2 + b);
      } else {
        (void)add2;
        (void)low2;
      }
    }
  }

  // The exponents x = code - 127 of MX scale codes (u32 lanes).
  static HWY_INLINE hn::Vec<DI> ScaleExponents(VU code) {
    const DI di;
    return hn::Sub(hn::BitCast(di, code), hn::Set(di, 127));
  }

#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
  // Pass 2 for such chunks, one vector of 16 blocks at a time (the amax
  // bits from load_bits(b)): the scale code, from s = e - emax (+1 per
  // mode) clamped below at -127, is s + 127, which equals
  // internal::MxScaleCodeFromBits for finite amax: zero and subnormal amax
  // (e = -127) give s < -127, so code 0, and emax >= 2 (every MX element)
  // keeps s <= 254 - 127 - emax + 1 < 127, so the upper clamp never binds;
  // NaN and Inf amax (e = 128) set the returned flag instead. hook(b,
  // bits, s) then computes the block constants. False if some block's amax
  // is Inf or NaN.
  template <ScaleMode kMode, class LoadBits, class Hook>
  static HWY_INLINE bool FastScaleCodes(const internal::MxScaleParams& p, size_t nb,
                                        const LoadBits& load_bits,
                                        uint8_t* HWY_RESTRICT scale_codes, const Hook& hook) {
    const __m512i inf = _mm512_set1_epi32(0x7F800000);
    const __m512i bias = _mm512_set1_epi32(127 + p.emax);
    const __m512i mant_mask = _mm512_set1_epi32(0x7FFFFF);
    const __m512i thr = _mm512_set1_epi32(static_cast<int>(
        kMode == ScaleMode::kRceil ? p.max_mant : (kMode == ScaleMode::kEven ? p.even_mant : 0)));
    const __m512i lo = _mm512_set1_epi32(-127);
    const __m512i c127 = _mm512_set1_epi32(127);
    __mmask16 special = 0;
    for (size_t b = 0; b < nb; b += 16) {
      const __m512i bits = load_bits(b);
      special |= _mm512_cmpge_epu32_mask(bits, inf);
      __m512i s = _mm512_sub_epi32(_mm512_srli_epi32(bits, 23), bias);
      if constexpr (kMode != ScaleMode::kFloor) {
        __mmask16 up;
        if constexpr (kMode == ScaleMode::kCeil) {
          up = _mm512_test_epi32_mask(bits, mant_mask);  // mant != 0
        } else if constexpr (kMode == ScaleMode::kRceil) {
          up = _mm512_cmpgt_epu32_mask(_mm512_and_si512(bits, mant_mask), thr);
        } else {
          up = _mm512_cmpge_epu32_mask(_mm512_and_si512(bits, mant_mask), thr);
        }
        s = _mm512_mask_sub_epi32(s, up, s, _mm512_set1_epi32(-1));
      }
      s = _mm512_max_epi32(s, lo);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(scale_codes + b),
                       _mm512_cvtepi32_epi8(_mm512_add_epi32(s, c127)));
      hook(b, bits, s);
    }
    return special == 0;
  }
#endif

#ifdef MXPACK_HAVE_RANGE_ENCODE
  // kRange MX chunks (ScaleCodes' hook; the blocks b.. of one vector, amax
  // bits and scale codes as u32 lanes): per block b, RangeEncodeF32's
  // constants for the scale 2^x, x = code - 127, at fold[b] (max),
  // fold[kMaxBlocks + b] (offset) and fold[2 * kMaxBlocks + b] (sub); blocks
  // of amax 0 (all +-0, any constants give +-0) and NaN blocks (overridden)
  // take x = 0. Lanes of other blocks whose x lies outside [kFoldMinX,
  // kFoldMaxX] (amax from about 2^101 up, or below 2^-122 (mxfp4) to 2^-94
  // (mxfp8_e5m2)) are returned (bad); the chunk then multiplies. Lanes
  // past nb read the zeroed tail of amax[] and pass.
  static HWY_INLINE __mmask16 RangeFoldAt(size_t b, VU amax_bits, VU code,
                                          uint32_t* HWY_RESTRICT fold) {
    const DI di;
    const auto bits = hn::BitCast(di, amax_bits);
    const auto unscaled = hn::Or(hn::Eq(bits, hn::Zero(di)), hn::Gt(bits, hn::Set(di, 0x7F800000)));
    const auto x = hn::IfThenZeroElse(unscaled, ScaleExponents(code));
    return StoreFoldConsts<true>(b, x.raw, 0xFFFF, fold);
  }

  // The folded constants of the blocks b.. of one vector for the scales
  // 2^x (i32 lanes): offset and sub, and (kMax: chunks that clamp, i.e.
  // hold an Inf) max, at their places in fold (see RangeFoldAt). Returns
  // the lanes of `check` whose x lies outside [kFoldMinX, kFoldMaxX]
  // (those constants are not valid; the chunk must not fold).
  template <bool kMax>
  static HWY_INLINE __mmask16 StoreFoldConsts(size_t b, __m512i x, __mmask16 check,
                                              uint32_t* HWY_RESTRICT fold) {
    using Enc = RangeEncodeF32<kElem>;
    if constexpr (kMax) {
      const typename Enc::Consts k = Enc::ScaledConsts(x);
      _mm512_storeu_si512(fold + b, k.max);
      _mm512_storeu_si512(fold + kMaxBlocks + b, k.offset);
      _mm512_storeu_si512(fold + 2 * kMaxBlocks + b, k.sub);
    } else {
      __m512i offset, sub;
      Enc::ScaledOffsetSub(x, offset, sub);
      _mm512_storeu_si512(fold + kMaxBlocks + b, offset);
      _mm512_storeu_si512(fold + 2 * kMaxBlocks + b, sub);
    }
    return _mm512_mask_cmpgt_epu32_mask(
        check, _mm512_sub_epi32(x, _mm512_set1_epi32(Enc::kFoldMinX)),
        _mm512_set1_epi32(Enc::kFoldMaxX - Enc::kFoldMinX));
  }
#endif
};

}  // namespace HWY_NAMESPACE
}  // namespace mxpack
HWY_AFTER_NAMESPACE();

#endif  // MXPACK_SRC_MX_MX_SCALE_INL_H_
