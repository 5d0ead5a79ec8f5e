// bf16 / f16 -> narrow codes with AVX512-FP16 arithmetic (Fp16EncodeHalf):
// one explicitly rounded f16 add puts a value on the code grid. Part of the
// fast encoders of src/format/encode_fast-inl.h.

#if defined(MXPACK_SRC_FORMAT_ENCODE_FP16_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MXPACK_SRC_FORMAT_ENCODE_FP16_INL_H_
#undef MXPACK_SRC_FORMAT_ENCODE_FP16_INL_H_
#else
#define MXPACK_SRC_FORMAT_ENCODE_FP16_INL_H_
#endif

#include "hwy/highway.h"
#include "src/format/encode_rn-inl.h"

HWY_BEFORE_NAMESPACE();
namespace mxpack {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;


#undef MXPACK_HAVE_FP16_HALF_ENCODE  // per target: this header is re-included
#if MXPACK_FP16_INTRIN && (HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL) && \
    !defined(HWY_DISABLE_F16C)  // the f32 path uses F16cEncodeF32's truncation
#define MXPACK_HAVE_FP16_HALF_ENCODE 1
// bf16 or f16 -> narrow codes, rn satfinite, with AVX512-FP16 arithmetic
// (32 u16 lanes; only on CPUs with AVX512-FP16, internal::CpuHasAvx512Fp16):
//
//   Fp16EncodeHalf<kTo, kRelu, kBF16>::EncodeRn(bits)   (kSupported formats)
//
// bit-identical to scalar::Convert(kBF16 or kF16, kTo, bits, rn satfinite).
// Method, for a = |x| clamped to max finite (satfinite; Inf too, NaN is
// patched at the end):
//  * h, the f16 of a: a itself for f16 sources; for bf16, (a -sat 0x3800)
//    << 3 is the f16 of a for a >= 2^-14 (rebias 127 -> 15; bf16's 7
//    mantissa bits fit), and smaller a give an f16 below 2^-14.
//  * c = max(2^(e + 10 - man), 2^(emin - man + 10)) with e = exponent of h:
//    h + c lies in c's binade, whose f16 ulp is the code's ulp at a (normal:
//    2^(e - man); subnormal: 2^(emin - man)), so one RNE f16 add rounds a
//    to the code grid, normals and subnormals alike: sum = c + k * ulp(c).
//  * The code is k + ((E_c - E_min) << man), E_c the exponent field of c
//    and E_min that of 2^(emin - man + 10) (normal: k = 2^man + mantissa,
//    or 2^(man+1) on a carry into the next binade; subnormal: c is that
//    constant and k is the code). k <= 2^(man+1) < 256, so sum's low byte
//    is k and its high byte E_c << 2: one pmaddubsw forms code + E_min <<
//    man, and the bias is dropped by a subtract or, where it only has bits
//    at or above the sign bit (e4m3, e2m1), by the sign-merging select.
// kSupported: codes of at most 8 bits with man <= 3, bias <= 15 and half the
// smallest subnormal >= 2^-14 (bias + man <= 14), so every a < 2^-14 (and
// any f16 image of one) encodes to 0: e2m1, e2m3, e3m2, e4m3, ue4m3; not
// e5m2. The add uses explicit RNE (_MM_FROUND_TO_NEAREST_INT) and f16
// arithmetic ignores FTZ/DAZ, so MXCSR does not matter. bf16 -> e4m3: 13
// vector operations per 32 elements with EncodeRn plus 1 to narrow
// (FastEncodeBF16: 20), 12 in all with Encode64; f16: 2 fewer.
template <Format kTo, bool kRelu, bool kBF16>
struct Fp16EncodeHalf {
  using F32 = FastEncodeF32<kTo, true, kRelu>;  // policy legality
  static constexpr internal::FastFormat kT = F32::kT;
  static constexpr bool kSupported = kT.bits <= 8 && kT.man_bits <= 3 &&
                                     kT.bias + kT.man_bits <= 14 && kTo != Format::kUE8M0;
  // Source bits of max finite (exponent field max_code >> man, mantissa the
  // rest) and of Inf (NaN lies above it).
  static constexpr int kSrcMan = kBF16 ? 7 : 10;
  static constexpr uint16_t kMaxBits = static_cast<uint16_t>(
      (((kT.max_code >> kT.man_bits) - kT.bias + (kBF16 ? 127 : 15)) << kSrcMan) |
      ((kT.max_code & ((1u << kT.man_bits) - 1)) << (kSrcMan - kT.man_bits)));
  static constexpr uint16_t kInfBits = kBF16 ? 0x7F80 : 0x7C00;
  static constexpr uint16_t kUlpShift = static_cast<uint16_t>((10 - kT.man_bits) << 10);
  // bf16 -> f16 rebias (127 - 15) << 7, subtracted with saturation.
  static constexpr uint16_t kRebias = 112 << 7;
  static constexpr uint16_t kSubMagic =
      static_cast<uint16_t>((26 - kT.bias - kT.man_bits) << 10);  // 2^(emin-man+10)
  // E_min << man, E_min the exponent field of kSubMagic.
  static constexpr uint16_t kCodeBias =
      static_cast<uint16_t>((26 - kT.bias - kT.man_bits) << kT.man_bits);
  // The high byte of c for each f16 exponent field E < 64 (only E <= 30
  // occurs): max(E + 10 - man, E_min) << 2, capped at 30 << 2.
  struct ExpTable {
    alignas(64) uint8_t v[64];
  };
  static constexpr ExpTable MakeExpTable() {
    ExpTable t{};
    for (int e = 0; e < 64; ++e) {
      int f = e + (kUlpShift >> 10);
      if (f < (kSubMagic >> 10)) f = kSubMagic >> 10;
      if (f > 30) f = 30;
      t.v[e] = static_cast<uint8_t>(f << 2);
    }
    return t;
  }
  static constexpr ExpTable kExpTableData = MakeExpTable();
  static constexpr const uint8_t* kExpTable = kExpTableData.v;
  // pmaddubsw weights (low byte 1, high byte 2^(man-2)), for man >= 2.
  static constexpr uint16_t kByteWeights =
      static_cast<uint16_t>(((1u << (kT.man_bits >= 2 ? kT.man_bits - 2 : 0)) << 8) | 1u);

  // How Plus treats NaN lanes: kOut reports them in *is_nan; kForm gives
  // them 0x7F (the pmaddubsw's merge mask; man >= 2 only); kFree: the
  // caller has none, or overrides them (their plus is then arbitrary).
  enum class Nan { kOut, kForm, kFree };

  // plus = code + kCodeBias in each u16 lane for |x| (the sign is left to
  // the caller). max_bits / rebias: the source bits of max finite and the
  // bf16 -> f16 rebias 112 << 7; MX passes the rebias of a scaled block
  // instead (Encode64MxAbs).
  template <Nan kNan>
  static MXPACK_FP16_INLINE __m512i Plus(__m512i x, __mmask32* is_nan = nullptr) {
    return Plus<kNan>(x, _mm512_set1_epi16(static_cast<short>(kMaxBits)),
                      _mm512_set1_epi16(static_cast<short>(kRebias)), is_nan);
  }
  template <Nan kNan>
  static MXPACK_FP16_INLINE __m512i Plus(__m512i x, __m512i max_bits, __m512i rebias,
                                         __mmask32* is_nan = nullptr) {
    static_assert(kSupported, "Fp16EncodeHalf: unsupported destination");
    const auto u16 = [](uint16_t v) { return _mm512_set1_epi16(static_cast<short>(v)); };
    const __m512i a = _mm512_and_si512(x, u16(0x7FFF));
    __mmask32 not_nan = 0;
    if constexpr (kNan == Nan::kForm) {
      not_nan = _mm512_cmple_epi16_mask(a, u16(kInfBits));
    } else if constexpr (kNan == Nan::kOut) {
      *is_nan = _mm512_cmpgt_epi16_mask(a, u16(kInfBits));
    } else {
      (void)is_nan;
    }
    return PlusOfAbs<kNan>(a, max_bits, rebias, not_nan);
  }
  // Plus from a = |x| (x & 0x7FFF); not_nan: kForm's mask of non-NaN lanes.
  // !kClamp: a is not clamped to max_bits (Encode64MxAbs). kTwice (bf16,
  // !kClamp): a and rebias are given doubled, a = x << 1 (which drops the
  // sign: no mask) and rebias << 1 (below 2^16 for every MX rebias), so that
  // the saturating subtract yields twice the rebiased bf16, which is the
  // exponent table's index as it stands (one shift fewer).
  template <Nan kNan, bool kClamp = true, bool kTwice = false>
  static MXPACK_FP16_INLINE __m512i PlusOfAbs(__m512i a, __m512i max_bits, __m512i rebias,
                                              __mmask32 not_nan = 0) {
    static_assert(!kTwice || (kBF16 && !kClamp), "kTwice: MX bf16 blocks only");
    constexpr int kRn = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
    const auto u16 = [](uint16_t v) { return _mm512_set1_epi16(static_cast<short>(v)); };
    if constexpr (kNan != Nan::kForm) (void)not_nan;
    __m512i h = kClamp ? _mm512_min_epi16(a, max_bits) : a;
    if constexpr (!kBF16) (void)rebias;
    __m512i c;
#if HWY_TARGET == HWY_AVX3_DL
    // c's high byte from a 64-entry byte table (vpermb) indexed by the
    // exponent field of h in each high byte (bf16: the field of the rebiased
    // bf16 sits at bits 7..14, so one shift left by 1; f16: shift right by
    // 2); low bytes zeroed by the mask. 2 operations instead of 3.
    const __m512i table = _mm512_loadu_si512(kExpTable);
    constexpr __mmask64 kHighBytes = 0xAAAAAAAAAAAAAAAAull;
    if constexpr (kTwice) {
      const __m512i t2 = _mm512_subs_epu16(h, rebias);
      h = _mm512_slli_epi16(t2, 2);
      c = _mm512_maskz_permutexvar_epi8(kHighBytes, t2, table);
    } else if constexpr (kBF16) {
      const __m512i t = _mm512_subs_epu16(h, rebias);
      h = _mm512_slli_epi16(t, 3);
      c = _mm512_maskz_permutexvar_epi8(kHighBytes, _mm512_slli_epi16(t, 1), table);
    } else {
      c = _mm512_maskz_permutexvar_epi8(kHighBytes, _mm512_srli_epi16(h, 2), table);
    }
#else
    if constexpr (kTwice) {
      h = _mm512_slli_epi16(_mm512_subs_epu16(h, rebias), 2);
    } else if constexpr (kBF16) {
      h = _mm512_slli_epi16(_mm512_subs_epu16(h, rebias), 3);
    }
    c = _mm512_max_epi16(_mm512_add_epi16(_mm512_and_si512(h, u16(0x7C00)), u16(kUlpShift)),
                         u16(kSubMagic));
#endif
    const __m512h ch = _mm512_castsi512_ph(c);
    const __m512h sum = _mm512_add_round_ph(_mm512_castsi512_ph(h), ch, kRn);
    // plus = code + kCodeBias = k + (E_c << man) from sum's bytes (lo = k,
    // hi = E_c << 2): pmaddubsw by (1, 2^(man-2)); e2m1 by (2, 1), halved.
    const __m512i sum_bits = _mm512_castph_si512(sum);
    if constexpr (kNan == Nan::kForm) {
      static_assert(kT.man_bits >= 2, "Fp16EncodeHalf::Plus: NaN form needs man >= 2");
      return _mm512_mask_maddubs_epi16(u16(0x7F), not_nan, sum_bits, u16(kByteWeights));
    } else if constexpr (kT.man_bits >= 2) {
      return _mm512_maddubs_epi16(sum_bits, u16(kByteWeights));
    } else {
      return _mm512_srli_epi16(_mm512_maddubs_epi16(sum_bits, u16(0x0102)), 1);
    }
  }

  // Encode64 applies: 8-bit signed codes whose kCodeBias is the sign bit
  // (e4m3), without relu.
  static constexpr bool kPackedSign =
      kT.bits == 8 && kT.has_sign && !kRelu && kCodeBias == 0x80;

  // The 64 codes of x0, x1 (32 source lanes each), in order, as bytes
  // (kPackedSign only). Per vector the masked pmaddubsw leaves code | 0x80
  // (non-NaN lanes) or 0x7F (NaN lanes, mask off) in the low byte, the sign
  // still apart; then, per 64 elements:
  //   mag  = packuswb(plus0, plus1)   (words <= 0xFE: exact)
  //   sign = packsswb(x0, x1)         (signed saturation keeps each source's
  //                                    sign in bit 7)
  //   code = mag & (sign | ~0x80)     (ternary logic 0xD0 = A & (B | !C),
  //                                    C = 0x80: bit 7 = mag's bit 7 (1, or
  //                                    0 for NaN) & the sign; bits 0..6 mag)
  // and one u64 permute undoes the packs' per-128-bit interleave. 12
  // operations per 32 elements against EncodeRn's 13 plus the pack and
  // permute.
  static MXPACK_FP16_INLINE __m512i Encode64(__m512i x0, __m512i x1) {
    return SignedCodes64(Plus<Nan::kForm>(x0), Plus<Nan::kForm>(x1), x0, x1);
  }

  // MX blocks (bf16 sources): the 64 codes of x0 * 2^-X0 and x1 * 2^-X1,
  // given per vector twice the rebias, (112 + X) << 8 (>= 0; X <= 127, so
  // below 2^16), in every u16 lane. The magnitudes enter doubled, x << 1
  // (PlusOfAbs's kTwice: no mask, one shift fewer than |x| and the
  // rebias (112 + X) << 7). Scaling by 2^-X is then part of the rebias:
  // |x| * 2^-X is exact in f16 wherever it is at least 2^-14, and smaller
  // values (bf16 subnormals included) encode to 0 either way, as in
  // EncodeRn. For finite x with every |x| * 2^-X below 2^(emax + 1) (MX
  // blocks without Inf; NaN blocks are overridden by the caller), no clamp
  // is needed before rounding: such a value lies in max's f16 binade (c
  // from the table as for max) and rounds at most to 2^(emax + 1), plus =
  // 0x100, which the u8 pack saturates to 0xFF; one byte min to max's plus
  // (0xFE) per 64 elements then saturates, as clamping first would (every
  // value past max rounds to at least max).
  static MXPACK_FP16_INLINE __m512i Encode64MxAbs(__m512i x0, __m512i twice_rebias0, __m512i x1,
                                                  __m512i twice_rebias1) {
    static_assert(kBF16, "Fp16EncodeHalf::Encode64MxAbs: bf16 sources");
    const __m512i unused = _mm512_setzero_si512();
    return SignedCodes64<true>(
        PlusOfAbs<Nan::kFree, false, true>(_mm512_slli_epi16(x0, 1), unused, twice_rebias0),
        PlusOfAbs<Nan::kFree, false, true>(_mm512_slli_epi16(x1, 1), unused, twice_rebias1), x0,
        x1);
  }

 private:
  // kClampBytes: the plus bytes saturate to max's (Encode64MxAbs).
  template <bool kClampBytes = false>
  static MXPACK_FP16_INLINE __m512i SignedCodes64(__m512i plus0, __m512i plus1, __m512i x0,
                                                  __m512i x1) {
    static_assert(kPackedSign, "Fp16EncodeHalf::Encode64: e4m3 only");
    __m512i mag = _mm512_packus_epi16(plus0, plus1);
    if constexpr (kClampBytes) {
      mag = _mm512_min_epu8(mag, _mm512_set1_epi8(static_cast<char>(kT.max_code + kCodeBias)));
    }
    const __m512i sign = _mm512_packs_epi16(x0, x1);
    const __m512i code =
        _mm512_ternarylogic_epi32(mag, sign, _mm512_set1_epi8(static_cast<char>(0x80)), 0xD0);
    return _mm512_permutexvar_epi64(_mm512_setr_epi64(0, 2, 4, 6, 1, 3, 5, 7), code);
  }

 public:
  static MXPACK_FP16_INLINE __m512i EncodeRn(__m512i x) {
    static_assert(kSupported, "Fp16EncodeHalf: unsupported destination");
    const auto u16 = [](uint16_t v) { return _mm512_set1_epi16(static_cast<short>(v)); };
    __mmask32 is_nan;
    const __m512i plus = Plus<Nan::kOut>(x, &is_nan);
    constexpr uint32_t kSignBit = 1u << (kT.bits - 1);
    if constexpr (kT.has_sign && !kRelu && (kCodeBias & (kSignBit - 1)) == 0) {
      // kCodeBias only has bits at or above the sign bit, so plus = code |
      // kCodeBias and one ternary-logic select, C ? B : A with A = plus,
      // B = x >> (16 - bits) (the sign at the sign bit, zeros above) and C =
      // kCodeBias | kSignBit, both drops the bias and merges the sign
      // (e4m3: bias 0x80; e2m1: bias 0x30).
      const __m512i merged = _mm512_ternarylogic_epi32(
          plus, _mm512_srli_epi16(x, 16 - kT.bits),
          u16(static_cast<uint16_t>(kCodeBias | kSignBit)), 0xD8);
      return _mm512_mask_mov_epi16(merged, is_nan, u16(static_cast<uint16_t>(kT.nan_code)));
    }
    const hn::Full512<uint16_t> d16;
    const hn::Vec512<uint16_t> code{_mm512_sub_epi16(plus, u16(kCodeBias))};
    return SignReluNanU16<kTo, kRelu>(d16, code, hn::Vec512<uint16_t>{x},
                                      hn::Mask512<uint16_t>{is_nan})
        .raw;
  }
};
#endif  // MXPACK_HAVE_FP16_HALF_ENCODE

}  // namespace HWY_NAMESPACE
}  // namespace mxpack
HWY_AFTER_NAMESPACE();

#endif  // MXPACK_SRC_FORMAT_ENCODE_FP16_INL_H_
