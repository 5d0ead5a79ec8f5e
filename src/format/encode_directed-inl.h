// f32 -> narrow / bf16 codes under the directed roundings rz, rm and rp with
// the policy at compile time (Avx512DirectedEncodeF32, AVX3 / AVX3_DL). Part
// of the fast encoders of src/format/encode_fast-inl.h.

#if defined(MXPACK_SRC_FORMAT_ENCODE_DIRECTED_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MXPACK_SRC_FORMAT_ENCODE_DIRECTED_INL_H_
#undef MXPACK_SRC_FORMAT_ENCODE_DIRECTED_INL_H_
#else
#define MXPACK_SRC_FORMAT_ENCODE_DIRECTED_INL_H_
#endif

#include <cstdint>

#include "hwy/highway.h"
#include "mxpack/scalar.h"
#include "src/format/encode_rn-inl.h"

HWY_BEFORE_NAMESPACE();
namespace mxpack {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#undef MXPACK_HAVE_DIRECTED_ENCODE  // per target: this header is re-included
#if HWY_ARCH_X86 && (HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL)
#define MXPACK_HAVE_DIRECTED_ENCODE 1
// f32 bits (u32 lanes) -> kTo codes (low bits of each lane, upper bits zero)
// under kMode (rz, rm or rp), bit-identical to scalar::Convert(kF32, kTo,
// {kMode, saturation, relu}) (docs/semantics.md section 1):
//
//   Avx512DirectedEncodeF32<kTo, kMode, kSatFinite, kRelu>::Encode(x) -> __m512i
//
// kTo: e2m1, e2m3, e3m2, e4m3, e5m2, ue4m3, f16, bf16. With K = 23 - man:
//  * satfinite first clamps |x| to max finite (an exact value: no rounding
//    moves it), which also turns Inf into max finite;
//  * normal codes: (|x| - (127 - bias) << 23) >> K, plus 1 where the
//    rounding points away from zero for this sign (rp: +, rm: -; unsigned
//    formats encode |x|, so rp always, rm never) and a discarded bit is set
//    (a masked test and a masked add; a carry rolls into the exponent);
//  * subnormal codes (below the smallest normal; not for bf16, whose grid
//    is f32's): FastEncodeF32's magic add on the signed value with the
//    signed constant and the rounding embedded in the instruction
//    (rz on |x|, rp toward +Inf, rm toward -Inf), which rounds onto the
//    subnormal grid in the right direction for either sign; the sum and the
//    constant share sign and exponent, so their difference is the code. Run
//    under internal::ScopedFlushDenormals(/*daz=*/false): a caller's DAZ
//    would turn f32 subnormal inputs into zeros, which rp/rm must round away
//    from zero;
//  * nosat overflow (code above max_code): Inf / NaN (overflow_code) when
//    the input is Inf or the rounding points away from zero, else max
//    finite; bf16 needs no step (a finite input reaches Inf only by
//    rounding away from zero);
//  * sign, relu and NaN as FastEncodeF32.
template <Format kTo, Rounding kMode, bool kSatFinite, bool kRelu>
struct Avx512DirectedEncodeF32 {
  static_assert(kMode == Rounding::kRZ || kMode == Rounding::kRM || kMode == Rounding::kRP,
                "directed roundings only");
  using F32 = FastEncodeF32<kTo, kSatFinite, kRelu>;  // policy legality
  static constexpr internal::FastFormat kT = F32::kT;
  static_assert(kT.bits <= 8 || kTo == Format::kBF16 || kTo == Format::kF16,
                "narrow, f16 or bf16 destinations");
  static constexpr int kShift = 23 - kT.man_bits;
  static constexpr uint32_t kRebias = static_cast<uint32_t>(127 - kT.bias) << 23;
  // f32 bits of the largest finite value.
  static constexpr uint32_t kMaxBits =
      (((kT.max_code >> kT.man_bits) + 127u - static_cast<uint32_t>(kT.bias)) << 23) |
      ((kT.max_code & ((1u << kT.man_bits) - 1u)) << kShift);
  static constexpr bool kNeedsSubnormalPath = kTo != Format::kBF16;
  // Magnitude rounded away from zero: rp for non-negative lanes (every lane
  // of an unsigned format), rm for negative lanes of a signed format.
  static constexpr bool kAwayNonNeg = kMode == Rounding::kRP;
  static constexpr bool kAwayNeg = kT.has_sign && kMode == Rounding::kRM;

  static HWY_INLINE __m512i Encode(__m512i x) {
    const __m512i abs = _mm512_and_si512(x, _mm512_set1_epi32(0x7FFFFFFF));
    const __m512i a = kSatFinite ? _mm512_min_epu32(abs, _mm512_set1_epi32(kMaxBits)) : abs;
    __mmask16 away = 0;
    if constexpr (kAwayNonNeg && kT.has_sign) {
      away = _mm512_cmpge_epi32_mask(x, _mm512_setzero_si512());
    } else if constexpr (kAwayNonNeg) {
      away = 0xFFFF;
    } else if constexpr (kAwayNeg) {
      away = _mm512_movepi32_mask(x);
    }
    __m512i code =
        _mm512_srli_epi32(kRebias ? _mm512_sub_epi32(a, _mm512_set1_epi32(kRebias)) : a, kShift);
    if constexpr (kAwayNonNeg || kAwayNeg) {
      const __mmask16 up =
          _mm512_mask_test_epi32_mask(away, a, _mm512_set1_epi32((1 << kShift) - 1));
      code = _mm512_mask_add_epi32(code, up, code, _mm512_set1_epi32(1));
    }
    if constexpr (kNeedsSubnormalPath) {
      const __m512i magic = _mm512_set1_epi32(static_cast<int32_t>(F32::kMagicBits));
      __m512i sub;
      if constexpr (kAwayNonNeg || kAwayNeg) {
        // Signed constant, rounding toward +Inf (rp) or -Inf (rm); unsigned
        // formats round |x| upward under rp.
        const __m512i v = kT.has_sign ? x : abs;
        const __m512i m =
            kT.has_sign
                ? _mm512_ternarylogic_epi32(magic, x, _mm512_set1_epi32(INT32_MIN), 0xF8)
                : magic;
        constexpr int kRound = (kMode == Rounding::kRP ? _MM_FROUND_TO_POS_INF
                                                       : _MM_FROUND_TO_NEG_INF) |
                               _MM_FROUND_NO_EXC;
        sub = _mm512_sub_epi32(
            _mm512_castps_si512(_mm512_add_round_ps(_mm512_castsi512_ps(v),
                                                    _mm512_castsi512_ps(m), kRound)),
            m);
      } else {
        sub = _mm512_sub_epi32(
            _mm512_castps_si512(_mm512_add_round_ps(_mm512_castsi512_ps(a),
                                                    _mm512_castsi512_ps(magic),
                                                    _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC)),
            magic);
      }
      code = _mm512_mask_mov_epi32(
          code, _mm512_cmplt_epu32_mask(a, _mm512_set1_epi32(F32::kMinNormalBits)), sub);
    }
    if constexpr (!kSatFinite && kTo != Format::kBF16) {
      const __mmask16 ovf = _mm512_cmpgt_epu32_mask(code, _mm512_set1_epi32(kT.max_code));
      const __mmask16 is_inf = _mm512_cmpeq_epi32_mask(abs, _mm512_set1_epi32(0x7F800000));
      code = _mm512_min_epu32(code, _mm512_set1_epi32(kT.max_code));
      code = _mm512_mask_mov_epi32(code, ovf & (is_inf | away),
                                   _mm512_set1_epi32(kT.overflow_code));
    }
    return SignReluNan(code, x, abs);
  }

  // The last steps, as FastEncodeF32's: relu zeroes negative lanes and -0,
  // otherwise signed formats get x's sign at bit (bits - 1); NaN lanes (abs
  // above Inf's bits) become the canonical NaN code.
  static HWY_INLINE __m512i SignReluNan(__m512i code, __m512i x, __m512i abs) {
    if constexpr (kRelu) {
      code = _mm512_mask_mov_epi32(code, _mm512_movepi32_mask(x), _mm512_setzero_si512());
    } else if constexpr (kT.has_sign) {
      code = _mm512_ternarylogic_epi32(code, _mm512_srli_epi32(x, 32 - kT.bits),
                                       _mm512_set1_epi32(1 << (kT.bits - 1)), 0xF8);
    }
    return _mm512_mask_mov_epi32(code,
                                 _mm512_cmpgt_epu32_mask(abs, _mm512_set1_epi32(0x7F800000)),
                                 _mm512_set1_epi32(kT.nan_code));
  }
};

// The same under rs (stochastic rounding, docs/semantics.md section 1) with
// the caller's random words r:
//
//   Avx512StochasticEncodeF32<kTo, kSatFinite, kRelu>::Encode(x, r) -> __m512i
//
// In integer lanes only. With s discarded significand bits, the magnitude
// rounds up when rem + (r mod 2^s) carries out of s bits (s <= 32), or, with
// r aligned to the top of the field (s > 32, k = s - 32), when
// (sig >> k) + r carries out of 32 bits (the bits of sig below k cannot
// complete a carry the integer parts do not). Both read as
// (r & m) > m - rem' with m = 2^min(s, 32) - 1 and rem' = (sig >> max(k, 0)) & m.
// Normals have s = K, so the carry is one add: (|x| - rebias + (r & m)) >> K;
// subnormals (s = K + emin - e) need the general form, with the significand
// sig (implicit bit included) shifted right by s (vpsrlvd gives 0 for
// s >= 32). satfinite clamps |x| first as for the directed modes; nosat
// overflows to Inf (or NaN) as rn does.
template <Format kTo, bool kSatFinite, bool kRelu>
struct Avx512StochasticEncodeF32 {
  using Directed = Avx512DirectedEncodeF32<kTo, Rounding::kRZ, kSatFinite, kRelu>;
  using F32 = typename Directed::F32;
  static constexpr internal::FastFormat kT = F32::kT;
  static constexpr int kShift = Directed::kShift;

  static HWY_INLINE __m512i Encode(__m512i x, __m512i r) {
    const __m512i abs = _mm512_and_si512(x, _mm512_set1_epi32(0x7FFFFFFF));
    const __m512i a =
        kSatFinite ? _mm512_min_epu32(abs, _mm512_set1_epi32(Directed::kMaxBits)) : abs;
    const __m512i rn = _mm512_and_si512(r, _mm512_set1_epi32((1 << kShift) - 1));
    const __m512i biased = Directed::kRebias
                               ? _mm512_sub_epi32(a, _mm512_set1_epi32(Directed::kRebias))
                               : a;
    __m512i code = _mm512_srli_epi32(_mm512_add_epi32(biased, rn), kShift);
    if constexpr (Directed::kNeedsSubnormalPath) {
      const __m512i e1 = _mm512_max_epu32(_mm512_srli_epi32(a, 23), _mm512_set1_epi32(1));
      // s = K + (emin + 127) - max(E, 1): at least K + 1 in subnormal lanes.
      const __m512i s = _mm512_sub_epi32(_mm512_set1_epi32(kShift + 1 - kT.bias + 127), e1);
      // sig = a - (max(E, 1) - 1) << 23: implicit bit set for E >= 1.
      const __m512i sig = _mm512_sub_epi32(_mm512_add_epi32(a, _mm512_set1_epi32(1 << 23)),
                                           _mm512_slli_epi32(e1, 23));
      const __m512i thirty_two = _mm512_set1_epi32(32);
      const __m512i zero = _mm512_setzero_si512();
      const __m512i m = _mm512_srlv_epi32(
          _mm512_set1_epi32(-1), _mm512_max_epi32(_mm512_sub_epi32(thirty_two, s), zero));
      const __m512i rem = _mm512_and_si512(
          _mm512_srlv_epi32(sig, _mm512_max_epi32(_mm512_sub_epi32(s, thirty_two), zero)), m);
      const __mmask16 up =
          _mm512_cmpgt_epu32_mask(_mm512_and_si512(r, m), _mm512_sub_epi32(m, rem));
      const __m512i trunc = _mm512_srlv_epi32(sig, s);
      code = _mm512_mask_mov_epi32(
          code, _mm512_cmplt_epu32_mask(a, _mm512_set1_epi32(F32::kMinNormalBits)),
          _mm512_mask_add_epi32(trunc, up, trunc, _mm512_set1_epi32(1)));
    }
    if constexpr (!kSatFinite && kTo != Format::kBF16) {
      code = _mm512_min_epu32(code, _mm512_set1_epi32(kT.overflow_code));
    }
    return Directed::SignReluNan(code, x, abs);
  }
};

// f32 -> bf16 under any rounding mode, on the signed bits (bf16's grid is
// f32's, subnormals included, so every mode is one integer step on x),
// 32 elements at a time:
//
//   Avx512F32ToBF16<kMode, kSatFinite, kRelu>::Encode32(x0, x1, r0, r1) -> __m512i
//
//   rn: (x + 0x7FFF + bit 16 of x) >> 16     rz: x >> 16
//   rp / rm: x >> 16, plus 1 where a low bit is set and the sign points away
//   rs: (x + (r & 0xFFFF)) >> 16
// The sign rides along in bit 31 (the magnitude stays below 2^31 for every
// non-NaN input: at most Inf plus 0xFFFF). nosat needs no step (a finite
// input reaches Inf 0x7F80 only by rounding away from zero, as the scalar
// reference's overflow rule says). NaN lanes give 0x7FFF.
template <Rounding kMode, bool kSatFinite, bool kRelu>
struct Avx512F32ToBF16 {
  // The 32 bf16 codes of x0, x1 (rbits r0, r1 for rs), in order, as u16
  // lanes. Each lane rounds on the unclamped signed bits (rn: + 0x7FFF +
  // bit 16; rs: + the low 16 random bits; rp / rm: one masked +1 after the
  // gather where the sign points away and a low bit is set), then one
  // vpermt2w gathers the high halves of both vectors. A non-NaN lane's
  // magnitude reaches at most Inf 0x7F80 (0x7F7FFFFF + 0xFFFF), so
  // satfinite is one masked -1 on codes whose magnitude is 0x7F80 (Inf and
  // every overflow become max finite 0x7F7F, the sign kept). NaN lanes
  // (an unordered compare of the input) give 0x7FFF; relu first takes the
  // signed-integer max with 0 (negative values and -0 become +0).
  static HWY_INLINE __m512i Encode32(__m512i x0_in, __m512i x1_in, __m512i r0, __m512i r1) {
    const auto nan_of = [](__m512i x) {
      return _mm512_cmp_ps_mask(_mm512_castsi512_ps(x), _mm512_castsi512_ps(x), _CMP_UNORD_Q);
    };
    const __mmask32 nan = _mm512_kunpackw(nan_of(x1_in), nan_of(x0_in));
    const __m512i x0 = kRelu ? _mm512_max_epi32(x0_in, _mm512_setzero_si512()) : x0_in;
    const __m512i x1 = kRelu ? _mm512_max_epi32(x1_in, _mm512_setzero_si512()) : x1_in;
    const auto round = [](__m512i x, __m512i r) {
      if constexpr (kMode == Rounding::kRN) {
        const __m512i t = _mm512_add_epi32(x, _mm512_set1_epi32(0x7FFF));
        return _mm512_mask_add_epi32(t, _mm512_test_epi32_mask(x, _mm512_set1_epi32(0x10000)), t,
                                     _mm512_set1_epi32(1));
      } else if constexpr (kMode == Rounding::kRS) {
        return _mm512_add_epi32(x, _mm512_and_si512(r, _mm512_set1_epi32(0xFFFF)));
      } else {
        (void)r;
        return x;
      }
    };
    // The high halves of x0's lanes, then of x1's, in order.
    __m512i code = _mm512_permutex2var_epi16(round(x0, r0), HighHalvesIndex(), round(x1, r1));
    if constexpr (kMode == Rounding::kRP || kMode == Rounding::kRM) {
      const auto up = [](__m512i x) {
        const __mmask16 away = kMode == Rounding::kRP
                                   ? _mm512_cmpge_epi32_mask(x, _mm512_setzero_si512())
                                   : _mm512_movepi32_mask(x);
        return _mm512_mask_test_epi32_mask(away, x, _mm512_set1_epi32(0xFFFF));
      };
      code = _mm512_mask_add_epi16(code, _mm512_kunpackw(up(x1), up(x0)), code,
                                   _mm512_set1_epi16(1));
    }
    if constexpr (kSatFinite) {
      const __mmask32 inf = _mm512_cmpeq_epi16_mask(
          _mm512_and_si512(code, _mm512_set1_epi16(0x7FFF)), _mm512_set1_epi16(0x7F80));
      code = _mm512_mask_sub_epi16(code, inf, code, _mm512_set1_epi16(1));
    }
    return _mm512_mask_mov_epi16(code, nan, _mm512_set1_epi16(0x7FFF));
  }

  // vpermt2w indices: u16 2i + 1 of the concatenation (x0, x1), i = 0..31.
  static HWY_INLINE __m512i HighHalvesIndex() {
    struct Table {
      alignas(64) uint16_t v[32];
    };
    static constexpr Table kTable = [] {
      Table t{};
      for (int i = 0; i < 32; ++i) t.v[i] = static_cast<uint16_t>(2 * i + 1);
      return t;
    }();
    return _mm512_load_si512(kTable.v);
  }
};

// f32 (u32 lanes) or bf16 (u16 lanes) -> ue8m0 under rz or rp
// (docs/semantics.md section 1; the sign is ignored), with mask operations:
//
//   Avx512ToUE8M0<kBF16, kRP, kSatFinite>::Encode(v) -> __m512i (code per lane)
//
// code = exponent field E, plus 1 under rp when the fraction is not zero;
// E = 0 (subnormals) then gives 1 exactly above 2^-127 and 0 at or below it
// (one masked clear). Under rp the largest codes are 255 (Inf, or a carry
// out of 254) and 256 (NaN): satfinite lowers 255 to 254, then a min with
// 255 leaves NaN 0xFF (f32: 255 and 256 are both lowered by one, and the
// caller's saturating byte pack maps nosat's 256 to 0xFF); under rz Inf and
// NaN have E = 255, and satfinite sends Inf to 0xFE.
template <bool kBF16, bool kRP, bool kSatFinite>
struct Avx512ToUE8M0 {
  static HWY_INLINE __m512i Encode(__m512i v) {
    if constexpr (kBF16) {
      const __m512i abs = _mm512_and_si512(v, _mm512_set1_epi16(0x7FFF));
      __m512i code = _mm512_srli_epi16(abs, 7);
      if constexpr (kRP) {
        code = _mm512_mask_add_epi16(code, _mm512_test_epi16_mask(v, _mm512_set1_epi16(0x7F)),
                                     code, _mm512_set1_epi16(1));
        code = _mm512_mask_mov_epi16(
            code, _mm512_cmple_epu16_mask(abs, _mm512_set1_epi16(0x40)), _mm512_setzero_si512());
        if constexpr (kSatFinite) {
          code = _mm512_mask_sub_epi16(code,
                                       _mm512_cmpeq_epi16_mask(code, _mm512_set1_epi16(0xFF)),
                                       code, _mm512_set1_epi16(1));
        }
        return _mm512_min_epu16(code, _mm512_set1_epi16(0xFF));
      } else if constexpr (kSatFinite) {
        return _mm512_mask_mov_epi16(
            code, _mm512_cmpeq_epi16_mask(abs, _mm512_set1_epi16(0x7F80)), _mm512_set1_epi16(0xFE));
      } else {
        return code;
      }
    } else {
      const __m512i abs = _mm512_and_si512(v, _mm512_set1_epi32(0x7FFFFFFF));
      if constexpr (kRP) {
        // (|x| + 0x7FFFFF) >> 23 is E plus one for a non-zero fraction (1
        // for every non-zero subnormal), 0xFF for Inf and a carry out of
        // 254, 0x100 for NaN. Subnormals at or below 2^-127 give 0;
        // satfinite lowers 0xFF and 0x100 by one. Codes stay below 2^9:
        // the caller's unsigned-saturating byte pack turns nosat's 0x100
        // into NaN 0xFF.
        __m512i code = _mm512_srli_epi32(_mm512_add_epi32(abs, _mm512_set1_epi32(0x7FFFFF)), 23);
        code = _mm512_maskz_mov_epi32(_mm512_cmpgt_epu32_mask(abs, _mm512_set1_epi32(0x400000)),
                                      code);
        if constexpr (kSatFinite) {
          code = _mm512_mask_sub_epi32(code,
                                       _mm512_cmpgt_epu32_mask(code, _mm512_set1_epi32(0xFE)),
                                       code, _mm512_set1_epi32(1));
        }
        return code;
      }
      __m512i code = _mm512_srli_epi32(abs, 23);
      if constexpr (kSatFinite) {
        return _mm512_mask_mov_epi32(code,
                                     _mm512_cmpeq_epi32_mask(abs, _mm512_set1_epi32(0x7F800000)),
                                     _mm512_set1_epi32(0xFE));
      } else {
        return code;
      }
    }
  }
};
#endif  // AVX3 / AVX3_DL

}  // namespace HWY_NAMESPACE
}  // namespace mxpack
HWY_AFTER_NAMESPACE();

#endif  // MXPACK_SRC_FORMAT_ENCODE_DIRECTED_INL_H_
