// f32 -> signed narrow codes with AVX-512 DQ vrangeps and VBMI byte gathers
// (RangeEncodeF32, AVX3_DL only): one explicitly rounded f32 add per element.
// Part of the fast encoders of src/format/encode_fast-inl.h.

#if defined(MXPACK_SRC_FORMAT_ENCODE_RANGE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MXPACK_SRC_FORMAT_ENCODE_RANGE_INL_H_
#undef MXPACK_SRC_FORMAT_ENCODE_RANGE_INL_H_
#else
#define MXPACK_SRC_FORMAT_ENCODE_RANGE_INL_H_
#endif

#include "hwy/highway.h"
#include "src/format/encode_rn-inl.h"

HWY_BEFORE_NAMESPACE();
namespace mxpack {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;


#undef MXPACK_HAVE_RANGE_ENCODE  // per target: this header is re-included
#if HWY_TARGET == HWY_AVX3_DL
#define MXPACK_HAVE_RANGE_ENCODE 1
// f32 -> narrow codes under rn (and, satfinite, rz / rm / rp), 64 elements
// at a time in f32 arithmetic with AVX-512 DQ (vrangeps) and VBMI
// (vpermt2b); AVX3_DL only:
//
//   RangeEncodeF32<kTo, kSatFinite, kRelu, kMode>::Encode64(y0, y1, y2, y3) -> __m512i
//
// kSupported: e2m1, e2m3, e3m2, e4m3, e5m2 and ue4m3, every legal
// saturation and relu under rn; satfinite only under rz, rm and rp.
// Returns the 64 codes of the f32 bits y0..y3, in order, as u8 lanes,
// bit-identical to scalar::Convert(kF32, kTo, {kMode, saturation, relu})
// for every input. Method, per element:
//  * a = y clamped to [-L, L]: one vrangeps (imm 0x02: the smaller
//    magnitude, with y's sign; unsigned formats imm 0x0A, which also clears
//    the sign: they encode |y|). Under satfinite L is max, the largest
//    finite code's value, and satfinite is then automatic: rounding never
//    passes max. Under nosat (e4m3, e5m2, ue4m3, whose overflow code, NaN
//    or Inf, is max_code + 1) L is the value the code max_code + 1 would
//    have: every y past the overflow threshold (max + half an ulp, the tie
//    included where max_code is odd) rounds to it, and Inf clamps to it.
//    (vrangeps returns the other operand for a quiet NaN and a quiet NaN
//    for a signaling one; NaN lanes are replaced below either way.)
//  * c = +-max(2^(e + 23 - man), 2^(emin - man + 23)) * (1 + j * 2^-23)
//    with a's sign, e the exponent of a: a's sign and exponent field (and),
//    plus the exponent offset (integer add), then a vrangeps (imm 0x03: the
//    larger magnitude, with the first operand's sign). Both constants carry
//    the mantissa j, which keeps their order. Without j this is
//    Fp16EncodeHalf's constant in f32: c's ulp is the code's ulp at a
//    (normal: 2^(e - man); subnormal: 2^(emin - man)), so one f32 add with
//    explicit round-to-nearest-even (vaddps {rn-sae}; a and c share the
//    sign, so the magnitudes add and round symmetrically) rounds a onto the
//    code grid, normals and subnormals alike: |sum| = |c| + k * ulp(c),
//    The directed modes round the same signed sum with {rz-sae}, {rd-sae}
//    or {ru-sae}: toward -Inf moves a negative sum's magnitude up and a
//    positive one's down, which is rm on the signed value (rp and rz
//    alike), and c is a multiple of ulp(c), so the sum lands on c plus a
//    directed rounding of a to the code grid. Satfinite clamps first and
//    max lies on the grid, so no mode passes it; nosat keeps rn only
//    (the clamp to the overflow code's value would turn every large
//    finite y into an overflow, which rz, and rm / rp away from their
//    direction, must not do).
//    k <= 2^(man+1) (the binade cannot change: j + k < 2^23). The code
//    magnitude is k + (E_c - E_min) << man, E_c the exponent field of c and
//    E_min that of 2^(emin - man + 23).
//  * sum's low u16 is j + k and its high u16 is s << 15 | E_c << 7, so one
//    pmaddwd by (256, 2^(man+1)) forms (j + k + E_c << man) << 8 -
//    s << (16 + man) = code << 8 + (t - s << man) << 16, where j (< 2^16,
//    even) makes j + E_min << man = 256 t with t = 256: byte 1 of each u32
//    lane is the code magnitude and byte 2 is -s << man (mod 256), so each
//    of its bits man..7, the code's sign bit among them, is s. NaN lanes
//    (vcmpps ordered, as the pmaddwd's merge mask) get nan_code << 8
//    instead (byte 2: 0, a positive sign).
//  * Two vpermt2b gather bytes 1 and 2 of 32 lanes each, two 128-bit lane
//    shuffles split them into the 64 magnitudes and the 64 sign bytes, and
//    one ternary-logic select merges the sign in. relu instead zeroes the
//    bytes whose sign is set (one vpmovb2m and a zero-masked move per 64
//    elements): negative values and -0 give code 0.
// 7 operations per 16 elements plus 5 per 64: about 17 per 32 elements
// (F16cEncodeF32: 23, Fp16EncodeHalf's f32 path: 21).
// MXCSR: vaddps uses explicit rounding, and under rn and rz f32 subnormal
// inputs (flushed by DAZ or not) encode to +-0 either way (the sum is c
// exactly), so the result does not depend on the caller's environment.
// rm and rp must read them (they round away from zero to the smallest
// subnormal code): call those under internal::ScopedFlushDenormals with DAZ
// off. The sum is never an f32 subnormal (|c| is a normal).
template <Format kTo, bool kSatFinite = true, bool kRelu = false,
          Rounding kMode = Rounding::kRN>
struct RangeEncodeF32 {
  static constexpr internal::FastFormat kT = internal::FastFormatOf(kTo);
  static constexpr bool kSupported =
      kT.bits <= 8 && kT.man_bits >= 1 && kT.man_bits <= 3 && kTo != Format::kUE8M0 &&
      internal::HasFastEncode(kTo, kSatFinite, kRelu) &&
      (kSatFinite || kT.overflow_code == kT.max_code + 1) &&
      (kMode == Rounding::kRN || (kSatFinite && kMode != Rounding::kRS));
  // vaddps's explicit rounding of the signed sum (see above).
  static constexpr int kRound = internal::RoundingImmediate(kMode);
  static constexpr int kMan = kT.man_bits;
  // The clamp code: max finite (satfinite) or the overflow code (nosat).
  static constexpr uint32_t kClampCode = kSatFinite ? kT.max_code : kT.max_code + 1;
  // f32 bits of the clamp code's value.
  static constexpr uint32_t kMaxBits =
      ((((kClampCode >> kMan) - kT.bias + 127) << 23) |
       ((kClampCode & ((1u << kMan) - 1)) << (23 - kMan)));
  static constexpr uint32_t kEMin = 151 - kT.bias - kMan;  // field of 2^(emin - man + 23)
  // j + E_min << man = 2^16 (t = 256): byte 2 of the pmaddwd form is then
  // -s << man (mod 256), s in each of its bits man..7.
  static constexpr uint32_t kJ = (0x10000u - (kEMin << kMan)) & 0xFFFFu;
  static_assert(!kSupported || (((kEMin << kMan) + kJ) & 0xFFFF) == 0, "t = 256");
  static_assert(!kSupported || kJ % 2 == 0, "j even: ties to the even code");
  static constexpr uint32_t kUlpShift = (uint32_t{23} - kMan) << 23;
  static constexpr uint32_t kSubMagic = (kEMin << 23) + kJ;
  static constexpr uint32_t kWeights = ((1u << (kMan + 1)) << 16) | 256u;
  static constexpr uint32_t kNanP = kT.nan_code << 8;  // byte 2: 0 (t = 256), a positive sign
  static_assert(!kSupported || kMan <= kT.bits - 1, "the sign bit lies in bits man..7");
  static_assert(!kSupported || kClampCode < 0x80, "code magnitudes fit byte 1 below the sign");

  // vpermt2b indices: byte 1 of the 32 u32 lanes of two vectors, then byte 2.
  // kUnpacked: the two vectors hold 32 consecutive elements in the order of
  // _mm512_unpacklo_epi16 / _mm512_unpackhi_epi16 of one vector of 32
  // 16-bit values (element m in lane 4 * (m / 8) + m % 4 of the first vector
  // for m % 8 < 4, of the second otherwise); the gather restores their order.
  template <bool kUnpacked = false>
  static HWY_INLINE __m512i MagSignIndex() {
    struct Table {
      alignas(64) uint8_t v[64];
    };
    static constexpr Table kTable = [] {
      Table t{};
      for (int i = 0; i < 64; ++i) {
        const int m = i & 31;
        const int lane = kUnpacked ? (m & 4) * 4 + 4 * (m >> 3) + (m & 3) : m;
        t.v[i] = static_cast<uint8_t>(4 * lane + 1 + i / 32);
      }
      return t;
    }();
    return _mm512_load_si512(kTable.v);
  }

  // The three per-vector constants of Form: the clamp bits (max), the
  // exponent offset plus mantissa j added to a's sign and exponent
  // (offset), and the subnormal floor (sub). Unscaled() encodes y itself.
  // ScaledConsts(x) encodes y * 2^-x for a block scale 2^x (MX) without the
  // multiply: the clamp is max * 2^x, c moves up x binades with a (so its
  // ulp is the scaled code's ulp in y's units), and j becomes j - x << man
  // (mod 2^16), which keeps j + k + E_c << man, i.e. bytes 1 and 2 of the
  // pmaddwd form, unchanged (a carry of j + k into bit 16 adds 2^(man+1) <
  // 256 and a lo u16 at or above 2^15 subtracts 2^24: neither reaches bytes
  // 1 and 2; j stays even, so ties still go to the even code). Valid for x
  // in [kFoldMinX, kFoldMaxX]: max * 2^x, sub and every c stay normal and
  // finite (a's field + 23 - man <= 254), and every y whose scaled value
  // rounds to a nonzero code (|y| > 2^(x - bias - man)) is an f32 normal,
  // so f32 subnormal y (whose field 0 gives c = sub, the element's
  // subnormal ulp) round to +-0, as they do when DAZ reads them as +-0: the
  // fold does not depend on MXCSR. (Down to x = bias - 128 it would still be
  // exact with DAZ clear: subnormal y then scale into the element's
  // subnormals or its lowest binade, whose ulp is sub's.)
  struct Consts {
    __m512i max, offset, sub;
  };
  static constexpr int kFoldMinX = kT.bias + kMan - 126;
  static constexpr int kFoldMaxX = [] {
    const int max_field = static_cast<int>(kMaxBits >> 23);
    int hi = 231 + kMan - max_field;  // a's field + 23 - man <= 254
    if (254 - static_cast<int>(kEMin) < hi) hi = 254 - static_cast<int>(kEMin);  // sub
    return hi;
  }();
  static_assert(!kSupported || (kFoldMinX < 0 && kFoldMaxX > 0), "x = 0 must fold");
  static HWY_INLINE Consts Unscaled() {
    return {_mm512_set1_epi32(static_cast<int>(kMaxBits)),
            _mm512_set1_epi32(static_cast<int>(kUlpShift + kJ)),
            _mm512_set1_epi32(static_cast<int>(kSubMagic))};
  }
  // The constants of 16 scales 2^x (i32 lanes, x in [kFoldMinX, kFoldMaxX]);
  // x = 0 gives Unscaled().
  static HWY_INLINE Consts ScaledConsts(__m512i x) {
    Consts k;
    k.max = _mm512_add_epi32(_mm512_slli_epi32(x, 23), _mm512_set1_epi32(static_cast<int>(kMaxBits)));
    ScaledOffsetSub(x, k.offset, k.sub);
    return k;
  }
  // offset and sub of ScaledConsts(x) (the max is only needed where y is
  // clamped). j - x << man needs no reduction mod 2^16: over the fold range
  // it stays in [0, 2^16) (static_assert), so offset = (kUlpShift + j) - x
  // << man and sub = x << 23 + (kEMin << 23 + j) - x << man.
  static HWY_INLINE void ScaledOffsetSub(__m512i x, __m512i& offset, __m512i& sub) {
    static_assert(!kSupported || (static_cast<int>(kJ) - (kFoldMaxX << kMan) >= 0 &&
                                  static_cast<int>(kJ) - (kFoldMinX * (1 << kMan)) < 0x10000),
                  "j - x << man within [0, 2^16) over the fold range");
    const __m512i xm = _mm512_slli_epi32(x, kMan);
    offset = _mm512_sub_epi32(_mm512_set1_epi32(static_cast<int>(kUlpShift + kJ)), xm);
    sub = _mm512_sub_epi32(
        _mm512_add_epi32(_mm512_slli_epi32(x, 23), _mm512_set1_epi32(static_cast<int>(kSubMagic))),
        xm);
  }

  // The pmaddwd form of one vector (see above); EncodeB4x16 passes other
  // weights and NaN forms for its even lanes. kNanFree: the caller
  // guarantees that no y is NaN, or overrides the codes of NaN lanes (MX
  // NaN blocks), so the NaN compare and merge are skipped. !kClamp (MX
  // blocks, see Encode64): y is not clamped to max; the caller clamps the
  // magnitude bytes instead.
  template <bool kNanFree = false, bool kClamp = true>
  static HWY_INLINE __m512i Form(__m512i y, const Consts& k,
                                 __m512i weights = _mm512_set1_epi32(kWeights),
                                 __m512i nan_p = _mm512_set1_epi32(kNanP)) {
    const __m512 yf = _mm512_castsi512_ps(y);
    constexpr int kRangeMin = kT.has_sign ? 0x02 : 0x0A;  // smaller magnitude; sign: y's or +
    const __m512 a =
        kClamp ? _mm512_range_ps(yf, _mm512_castsi512_ps(k.max), kRangeMin)
               : (kT.has_sign ? yf
                              : _mm512_castsi512_ps(_mm512_and_si512(
                                    y, _mm512_set1_epi32(0x7FFFFFFF))));
    const __m512i e =
        _mm512_and_si512(_mm512_castps_si512(a), _mm512_set1_epi32(static_cast<int>(0xFF800000u)));
    const __m512 c = _mm512_range_ps(_mm512_castsi512_ps(_mm512_add_epi32(e, k.offset)),
                                     _mm512_castsi512_ps(k.sub), 0x03);
    const __m512 sum = _mm512_add_round_ps(a, c, kRound);
    if constexpr (kNanFree) {
      (void)nan_p;
      return _mm512_madd_epi16(_mm512_castps_si512(sum), weights);
    }
    const __mmask16 ordered = _mm512_cmp_ps_mask(yf, yf, _CMP_ORD_Q);
    return _mm512_mask_madd_epi16(nan_p, ordered, _mm512_castps_si512(sum), weights);
  }

  // Bytes 1 (mag) and 2 (sgn) of the 64 lanes of four pmaddwd forms, in order.
  template <bool kUnpacked = false>
  static HWY_INLINE void GatherMagSign(__m512i f0, __m512i f1, __m512i f2, __m512i f3,
                                       __m512i& mag, __m512i& sgn) {
    const __m512i idx = MagSignIndex<kUnpacked>();
    const __m512i r01 = _mm512_permutex2var_epi8(f0, idx, f1);
    const __m512i r23 = _mm512_permutex2var_epi8(f2, idx, f3);
    mag = _mm512_shuffle_i64x2(r01, r23, 0x44);  // low halves
    sgn = _mm512_shuffle_i64x2(r01, r23, 0xEE);  // high halves
  }

  // The magnitude clamp moved after the rounding (kClamp = false): valid
  // for finite y whose every |y| (in the units of its block's scale, i.e.
  // |y| * 2^-x) lies below 2^(emax + 1), as MX elements do (amax * 2^-X <
  // 2^(emax + 1) in every scale mode, floor being the largest). Rounding
  // then yields at most the code 2^(bits - 1) (the next binade's first
  // value), which byte 1 of the pmaddwd form holds without a carry into the
  // sign byte (e2m1's even lanes: code << 4 <= 0x80), so one unsigned byte
  // min of the gathered magnitudes per 64 elements replaces a vrangeps per
  // 16: rn then saturate equals saturate then rn (every value past max
  // rounds to at least max).
  // k0..k3: the constants of y0..y3 (Scaled: y0..y3 in blocks of other
  // scales). kUnpacked: y0, y1 (and y2, y3) hold 32 elements in unpack
  // order (see MagSignIndex).
  template <bool kNanFree = false, bool kClamp = true, bool kUnpacked = false>
  static HWY_INLINE __m512i Encode64(__m512i y0, __m512i y1, __m512i y2, __m512i y3,
                                     const Consts& k0 = Unscaled(), const Consts& k1 = Unscaled(),
                                     const Consts& k2 = Unscaled(), const Consts& k3 = Unscaled()) {
    static_assert(kSupported, "RangeEncodeF32: unsupported destination");
    __m512i mag, sgn;
    GatherMagSign<kUnpacked>(Form<kNanFree, kClamp>(y0, k0), Form<kNanFree, kClamp>(y1, k1),
                  Form<kNanFree, kClamp>(y2, k2), Form<kNanFree, kClamp>(y3, k3), mag, sgn);
    if constexpr (!kClamp) {
      mag = _mm512_min_epu8(mag, _mm512_set1_epi8(static_cast<char>(kClampCode)));
    }
    if constexpr (!kT.has_sign) return mag;  // sgn is 0 in every lane
    if constexpr (kRelu) {
      // Negative lanes and -0 (bit 7 of sgn is s) become code 0; NaN lanes
      // have s = 0 in their form and keep their code.
      return _mm512_maskz_mov_epi8(_knot_mask64(_mm512_movepi8_mask(sgn)), mag);
    }
    // s is already at the code's sign bit (bits man..7 of sgn); select C ? B : A.
    const __m512i bit = _mm512_set1_epi8(static_cast<char>(1u << (kT.bits - 1)));
    return _mm512_ternarylogic_epi32(mag, sgn, bit, 0xD8);
  }

  // e2m1 only: the 64 codes as four b4x16_p64 groups (per 16 elements: 8
  // bytes, element 2i in the low nibble of byte i, then 8 zero bytes).
  // Even lanes use weights (4096, 2^(man+5)), which put their code in the
  // high nibble of byte 1 and s at bits 5..7 of byte 2; odd lanes keep byte
  // 1 and s at bits 1..7. After the sign merge each u16 of gathered bytes
  // holds bits 4..11 = even code | odd code << 4, which one vpmultishiftqb
  // moves to bytes 0..3 of each u64 and one pshufb packs into the groups: 7
  // operations per 64 elements after the pmaddwd forms, against 9 for
  // Encode64 plus PaddedCodec::Compact4. kUnpacked: as Encode64's (lane
  // parity is element parity in unpack order too).
  template <bool kNanFree = false, bool kClamp = true, bool kUnpacked = false>
  static HWY_INLINE __m512i EncodeB4x16(__m512i y0, __m512i y1, __m512i y2, __m512i y3,
                                        const Consts& k0 = Unscaled(),
                                        const Consts& k1 = Unscaled(),
                                        const Consts& k2 = Unscaled(),
                                        const Consts& k3 = Unscaled()) {
    static_assert(kTo == Format::kE2M1, "EncodeB4x16: e2m1 only");
    static_assert(!kRelu, "EncodeB4x16: no relu");
    const __m512i w = _mm512_mask_set1_epi32(_mm512_set1_epi32(kWeights), 0x5555,
                                             static_cast<int>(kWeights << 4));
    const __m512i nan_p = _mm512_mask_set1_epi32(_mm512_set1_epi32(kNanP), 0x5555,
                                                 static_cast<int>(kNanP << 4));
    __m512i mag, sgn;
    GatherMagSign<kUnpacked>(Form<kNanFree, kClamp>(y0, k0, w, nan_p),
                  Form<kNanFree, kClamp>(y1, k1, w, nan_p),
                  Form<kNanFree, kClamp>(y2, k2, w, nan_p),
                  Form<kNanFree, kClamp>(y3, k3, w, nan_p), mag, sgn);
    if constexpr (!kClamp) {
      // Even bytes hold code << 4 (low nibble 0), odd bytes the code.
      mag = _mm512_min_epu8(mag, _mm512_set1_epi16(static_cast<short>(kT.max_code << 8 |
                                                                      kT.max_code << 4)));
    }
    // s: even bytes bits 5..7 (16 * (-s << man)), odd bytes bits 1..7, so
    // already at bit 7 and bit 3; select C ? B : A.
    const __m512i merged =
        _mm512_ternarylogic_epi32(mag, sgn, _mm512_set1_epi16(0x0880), 0xD8);
    const __m512i nibbles =
        _mm512_multishift_epi64_epi8(_mm512_set1_epi64(0x0000000034241404LL), merged);
    constexpr int kZero = static_cast<int>(0x80808080u);  // pshufb: zero bytes 8..15
    const __m512i groups = _mm512_set4_epi32(kZero, kZero, 0x0B0A0908, 0x03020100);
    return _mm512_shuffle_epi8(nibbles, groups);
  }
};
#endif  // HWY_TARGET == HWY_AVX3_DL

}  // namespace HWY_NAMESPACE
}  // namespace mxpack
HWY_AFTER_NAMESPACE();

#endif  // MXPACK_SRC_FORMAT_ENCODE_RANGE_INL_H_
