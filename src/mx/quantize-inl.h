// Highway kernel of MX / NVFP4 block quantization, three passes over each
// L1-sized chunk of the input: per block, amax of the magnitudes (integer
// max of the f32 or bf16 bits) and NaN detection; the scale code (integer
// formula of src/mx/mx_internal.h); then every element scaled into the
// element's range (x * 2^-s, exact; or x / (d * t) for NVFP4), encoded by
// the shared rn/satfinite encoder (src/format/encode_fast-inl.h) and stored as
// one code per byte or, for the padded GPU layouts, as b4x16_p64 /
// b6x16_p32 groups. bf16 into fp8 (MXFP8) encodes the bf16 bits directly
// with the scale folded into an integer rounding addend (EncodeDirect).
// Per-target toggle guard (re-included once per Highway target).
#if defined(MXPACK_SRC_MX_QUANTIZE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MXPACK_SRC_MX_QUANTIZE_INL_H_
#undef MXPACK_SRC_MX_QUANTIZE_INL_H_
#else
#define MXPACK_SRC_MX_QUANTIZE_INL_H_
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "hwy/highway.h"
#include "mxpack/format.h"
#include "mxpack/mx.h"
#include "mxpack/pack.h"  // Layout; scalar::SetCode (HWY_SCALAR)
#include "src/mx/mx_internal.h"
#include "src/util/lanes-inl.h"  // StoreLanes, U8From4U32
#include "src/format/encode_fast-inl.h"
#include "src/format/padded_codec-inl.h"

// Target-independent: the per-call constants of the block kernel.
#ifndef MXPACK_SRC_MX_QUANTIZE_ARGS_
#define MXPACK_SRC_MX_QUANTIZE_ARGS_
namespace mxpack::internal {

// The largest f32 (bits) at or below m (a double >= 0, or NaN -> f32 max);
// `exact` says whether it equals m. Integer arithmetic: independent of MXCSR.
inline uint32_t F32BitsAtOrBelow(double m, bool* exact) {
  uint64_t b;
  std::memcpy(&b, &m, 8);
  if (b == 0) {
    *exact = true;
    return 0;
  }
  const int e = static_cast<int>(b >> 52) - 1023;  // m = mant * 2^(e - 52)
  const uint64_t mant = (b & ((uint64_t{1} << 52) - 1)) | (uint64_t{1} << 52);
  if (e > 127) {  // beyond f32 max (and NaN)
    *exact = false;
    return 0x7F7FFFFFu;
  }
  // Keep 24 bits (normal) or the bits down to 2^-149 (subnormal).
  const int shift = e >= -126 ? 29 : 29 + (-126 - e);
  if (shift >= 64) {
    *exact = false;
    return 0;
  }
  const uint64_t q = mant >> shift;
  *exact = (mant & ((uint64_t{1} << shift) - 1)) == 0;
  return e >= -126 ? static_cast<uint32_t>(e + 127) << 23 | static_cast<uint32_t>(q & 0x7FFFFF)
                   : static_cast<uint32_t>(q);
}

// NVFP4 (Nvfp4Arithmetic::kExact) elements by comparison: with P = d * t
// and the e2m1 midpoints m_i = 0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5 (between
// magnitude codes i and i + 1), |code| = the number of i with |x| > m_i * P
// (i even) or |x| >= m_i * P (i odd: the tie goes up to the even code), and
// satfinite comes for free (|x| > 5P gives 7). d (4 significant bits), t (24)
// and m_i (3) make every m_i * P exact in f64; each test becomes
// |x| > T_i for the f32 T_i = the largest f32 below m_i * P (odd i, m_i * P
// an f32) or at or below it (else), so the kernels compare f32 bits as
// integers. thr[i] = T_i bits for i < 7; thr[7] = 8 when P == 0 (then every
// T_i is f32 max: finite x gives +-0 = encode(x * 0), +-Inf gives 7, which
// must be the unsigned encode(NaN) = 0x7), else 0.
inline void Nvfp4ElementThresholds(float d, float tensor_scale, uint32_t* thr) {
  const double p = static_cast<double>(d) * static_cast<double>(tensor_scale);
  static constexpr double kMid[7] = {0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0};
  if (p == 0.0) {
    for (int i = 0; i < 7; ++i) thr[i] = 0x7F7FFFFFu;
    thr[7] = 8;
    return;
  }
  for (int i = 0; i < 7; ++i) {
    bool exact;
    const uint32_t t = F32BitsAtOrBelow(kMid[i] * p, &exact);
    thr[i] = (i % 2 == 1 && exact) ? t - 1 : t;  // (exact: t >= 1)
  }
  thr[7] = 0;
}

// Nvfp4ElementThresholds of every scale code a call meets, filled on first
// use (a call usually meets a handful of the 128 codes).
struct Nvfp4ThresholdTable {
  Nvfp4ThresholdTable(float t, const float* table) : tensor_scale(t), ue4m3(table) {}

  float tensor_scale;
  const float* ue4m3;  // decode table of the 128 scale codes
  uint64_t have[2] = {0, 0};
  uint32_t thr[128][8];

  // Fills the missing rows of the codes lo..hi (a chunk's scale codes
  // usually span a few binades; the span costs less to find than the set).
  void Fill(unsigned lo, unsigned hi) {
    for (unsigned w = 0; w < 2; ++w) {
      const unsigned first = lo > 64 * w ? lo - 64 * w : 0;
      if (hi < 64 * w || first > 63) continue;
      const unsigned last = hi - 64 * w < 63 ? hi - 64 * w : 63;
      const uint64_t span = (~uint64_t{0} >> (63 - last)) & (~uint64_t{0} << first);
      for (uint64_t m = span & ~have[w]; m != 0; m &= m - 1) {
        const unsigned c = 64 * w + static_cast<unsigned>(__builtin_ctzll(m));
        Nvfp4ElementThresholds(ue4m3[c], tensor_scale, thr[c]);
      }
      have[w] |= span;
    }
  }
};

struct MxBlockArgs {
  MxScaleParams scale;  // MX
  ScaleMode mode;       // NVFP4 scale rounding
  float tensor_scale;   // NVFP4
  const float* ue4m3;   // NVFP4: decode table of the 128 scale codes
  // Pass 3 prefetches the next chunk into L2 only (the call's input is
  // larger than half of a 2 MiB L2, so it streams from DRAM), else into L1.
  bool prefetch_l2;
  Nvfp4Arithmetic arithmetic;  // NVFP4
  Nvfp4ThresholdTable* thresholds;  // NVFP4 kExact
};
}  // namespace mxpack::internal
#endif

HWY_BEFORE_NAMESPACE();
namespace mxpack {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// kElem: the element format; kNvfp4: ue4m3 scales over 16-element blocks;
// kBf16: the source is bf16 (else f32).
template <Format kElem, bool kNvfp4, bool kBf16>
class MxBlockQuantizer {
 public:
  static constexpr size_t kBlock = kNvfp4 ? 16 : 32;
  // Cap at 16 lanes so that a vector never straddles two blocks.
  using D = hn::CappedTag<float, 16>;
  using DU = hn::RebindToUnsigned<D>;
  using DI = hn::RebindToSigned<D>;
  using VU = hn::Vec<DU>;

  // At most this many blocks per Run call (the driver's chunk).
  static constexpr size_t kMaxBlocks = 128;
  static_assert(kMaxBlocks % 32 == 0, "amax16[]: a multiple of every u16 lane count");
  // The scale code of a block holding a NaN.
  static constexpr uint8_t kNanScale = kNvfp4 ? 0x7F : 0xFF;
  static constexpr size_t kSrcBytes = kBf16 ? 2 : 4;
  static constexpr internal::FastFormat kElemT = internal::FastFormatOf(kElem);
  // The padded layout of `padded` output (4-bit: b4x16_p64, 6-bit: b6x16_p32).
  static constexpr Layout kPaddedLayout = kElemT.bits == 4 ? Layout::kB4x16P64 : Layout::kB6x16P32;
  // Pass 3 encodes through F16cEncodeF32 (x86 AVX2/AVX-512; AVX3_DL takes
  // RangeEncodeF32 instead, kRange below).
#ifdef MXPACK_HAVE_F16C_ENCODE
  static constexpr bool kF16c = true;
#else
  static constexpr bool kF16c = false;
#endif
  // Pass 3 encodes 64 scaled elements at a time through RangeEncodeF32
  // (AVX3_DL; every MX / NVFP4 element format), which needs no prescaling.
#ifdef MXPACK_HAVE_RANGE_ENCODE
  static constexpr bool kRange = RangeEncodeF32<kElem>::kSupported;
#else
  static constexpr bool kRange = false;
#endif
  // MX on the F16C path: pass 2 folds the encoder's factor 2^(bias - 15)
  // into the multipliers (2^(-s + bias - 15), built from bits, so exact and
  // independent of MXCSR; products below 2^-126 flush to +-0 in Scaled
  // under FTZ and encode as the unscaled product would). bf16 products need
  // no sticky bit when it sits at or below bit 16 (P = 14 + man, man <= 2:
  // e2m1, e3m2, e5m2): a bf16 times a power of two has its low 16 bits zero.
  // (e2m3 and e4m3 need it: bf16's lowest mantissa bit 16 lies below P = 17.)
  static constexpr bool kFoldScale = kF16c && !kNvfp4 && !kRange;
  static constexpr int kMultExp = kFoldScale ? kElemT.bias - 15 : 0;
  static constexpr bool kNoSticky = kFoldScale && kBf16 && kElemT.man_bits <= 2;
  // bf16 into fp8 elements (MXFP8) on x86: pass 3 encodes the bf16 bits in
  // u16 lanes directly (EncodeDirect), without widening, multiplying or
  // converting; vectors holding a value that the direct formula does not
  // cover take the general path.
#if HWY_ARCH_X86 && HWY_TARGET != HWY_EMU128 && HWY_TARGET != HWY_SCALAR
  static constexpr bool kDirect = kBf16 && !kNvfp4 && kElemT.bits == 8;
#else
  static constexpr bool kDirect = false;
#endif
  static constexpr int kDirectShift = 7 - kElemT.man_bits;  // dropped bf16 mantissa bits
  // bf16 into MXFP8 e4m3 on CPUs with AVX512-FP16: pass 3 runs
  // Fp16EncodeHalf::Encode64MxAbs instead, the block scale folded into the
  // bf16 -> f16 rebias (FastTail) and the saturation applied to the
  // code bytes, for chunks without NaN or Inf elements whose every block
  // has amax 0 or a scale code of at least 15 (X = code - 127 >= -112: the
  // rebias (112 + X) << 8 is then >= 0); other chunks keep EncodeDirect.
#ifdef MXPACK_HAVE_FP16_HALF_ENCODE
  static constexpr bool kFp16Direct = kDirect && kElem == Format::kE4M3;
  using Fp16Enc = Fp16EncodeHalf<Format::kE4M3, false, true>;
#else
  static constexpr bool kFp16Direct = false;
#endif
  // Per-block arrays of the direct path (one entry when unused).
  static constexpr size_t kDirectBlocks = kDirect ? kMaxBlocks : 1;

  // Quantizes `nb` (<= kMaxBlocks) whole blocks of `src` into `out` and
  // scale codes (one per block). The first `nvalid` elements are data, the
  // rest row padding (+0 in `src`) whose codes are 0, also in NaN blocks.
  // `padded` (4- and 6-bit elements): `out` receives b4x16_p64 / b6x16_p32
  // groups (zero padding; one byte per element, as codes), else one code per
  // byte. Three passes over the L1-resident chunk keep the per-block
  // horizontal reductions and scalar scale formulas off the encoder's
  // critical path: (1) amax of every block, (2) scale codes and multipliers,
  // (3) scale + encode (+ compact) + store.
  static void Run(const internal::MxBlockArgs& a, const uint8_t* HWY_RESTRICT src,
                  size_t nb, size_t nvalid, bool padded, uint8_t* HWY_RESTRICT out,
                  uint8_t* HWY_RESTRICT scale_codes) {
    const D d;
    const DU du;
    const DI di;
    const size_t N = hn::Lanes(d);
    const VU abs_mask = hn::Set(du, 0x7FFFFFFFu);
    HWY_ALIGN uint32_t amax[kMaxBlocks];
    // Written for every block < nb by pass 2 (not zeroed: a 512-byte clear
    // per chunk showed as 4% of the MXFP4 profile).
#if HWY_TARGET == HWY_SCALAR
    HWY_ALIGN float mult[kMaxBlocks] = {};  // (GCC 12 -Wmaybe-uninitialized)
#else
    HWY_ALIGN float mult[kMaxBlocks];
#endif
    // kDirect: per block, EncodeDirect's rounding addend and normal bound,
    // each a u16 value in both halves of a u32 (written by ScaleCodes).
    HWY_ALIGN uint32_t add2[kDirectBlocks];
    HWY_ALIGN uint32_t low2[kDirectBlocks];
    uint8_t inf_block[kDirectBlocks];  // kDirect: block b holds an Inf (set with it)

    // (1) amax as the integer max of |x| bits (NaN bits exceed Inf's);
    // lanes of missing blocks past nb are 0, which also defines the tail of
    // amax[]. bf16 sources are reduced in u16 lanes (twice the lanes, no
    // widening), then widened once per block.
#if HWY_TARGET != HWY_SCALAR
    // bf16: the u16 maxima (kMaxBlocks: a multiple of every u16 lane count).
    [[maybe_unused]] HWY_ALIGN uint16_t amax16[kBf16 ? kMaxBlocks : 1];
    if constexpr (kBf16) {
      const hn::CappedTag<uint16_t, kBlock> d16;  // a vector never straddles blocks
      const auto* s16 = reinterpret_cast<const uint16_t*>(src);
      const auto abs16 = hn::Set(d16, uint16_t{0x7FFF});
      const auto load_abs = [&](size_t b, size_t i) {
        return hn::And(hn::LoadU(d16, s16 + b * kBlock + i), abs16);
      };
      BlockMaxima(d16, nb, amax16, load_abs);
    } else  // NOLINT(readability/braces)
#endif
    {
      BlockMaxima(du, nb, amax, [&](size_t b, size_t i) {
        return hn::And(Load(du, src + b * kBlock * kSrcBytes, i), abs_mask);
      });
    }
#ifdef MXPACK_HAVE_RANGE_ENCODE
    // kRange MX: the folded range encoder's constants (max, offset, sub per
    // block; RangeFoldAt).
    HWY_ALIGN uint32_t fold[kRange && !kNvfp4 ? 3 * kMaxBlocks : 1];
#endif
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
    if constexpr (kFastTail) {
      if (FastTail(a, src, nb, nvalid, padded, out, scale_codes, amax, amax16,
#ifdef MXPACK_HAVE_RANGE_ENCODE
                   fold
#else
                   nullptr
#endif
                   )) {
        return;
      }
    }
#endif
#if HWY_TARGET != HWY_SCALAR
    if constexpr (kBf16) {
      const hn::Rebind<uint16_t, DU> dh;
      for (size_t b = 0; b < nb; b += N) {
        hn::StoreU(hn::ShiftLeft<16>(hn::PromoteTo(du, hn::LoadU(dh, amax16 + b))), du, amax + b);
      }
    }
#endif
    VU amax_max = hn::Zero(du);  // max over all blocks: Inf / NaN present?
    for (size_t b = 0; b < nb; b += N) amax_max = hn::Max(amax_max, hn::LoadU(du, amax + b));
    const uint32_t chunk_amax = hn::GetLane(hn::MaxOfLanes(du, amax_max));
#ifdef MXPACK_HAVE_RANGE_ENCODE
    bool fold_ok = false;  // kRange MX: every block's constants in range (RangeFoldAt)
#endif

    // (2) Scale codes and the value each element is multiplied (MX) or
    // divided (NVFP4) by. Blocks holding an Inf (and no NaN) first get their
    // amax over the finite elements.
    for (size_t b = 0; HWY_UNLIKELY(chunk_amax >= 0x7F800000u) && b < nb; ++b) {
      if constexpr (kDirect) inf_block[b] = amax[b] == 0x7F800000u;
      if (amax[b] == 0x7F800000u) {
        const uint8_t* p = src + b * kBlock * kSrcBytes;
        VU vmax = hn::Zero(du);
        for (size_t i = 0; i < kBlock; i += N) {
          const VU mag = hn::And(Load(du, p, i), abs_mask);
          const auto finite = hn::RebindMask(
              du, hn::Lt(hn::BitCast(di, mag), hn::Set(di, 0x7F800000)));
          vmax = hn::Max(vmax, hn::IfThenElseZero(finite, mag));
        }
        amax[b] = hn::GetLane(hn::MaxOfLanes(du, vmax));
      }
    }
    if constexpr (kNvfp4) {
      if (a.arithmetic == Nvfp4Arithmetic::kExact) {
        return RunExactNvfp4(a, src, nb, nvalid, padded, out, scale_codes, amax,
                             /*inf=*/chunk_amax >= 0x7F800000u);
      }
    }
    if (kNvfp4 && a.mode == ScaleMode::kEven) {
      // NVFP4 kF32Quotient, rn: encode_ue4m3(f32(amax / f32(6 * t))), a
      // vector of blocks at a time with the shared encoder (NaN amax -> 0x7F).
      const float denom = 6.0f * a.tensor_scale;
      const hn::Vec<D> vden = hn::Set(d, denom);
      for (size_t b = 0; b < nb; b += N) {
        const hn::Vec<D> q = hn::Div(hn::BitCast(d, hn::LoadU(du, amax + b)), vden);
        const VU code =
            FastEncodeF32<Format::kUE4M3, true>::EncodeRn(du, hn::BitCast(du, q));
        StoreLanes<1>(du, code, scale_codes + b);
      }
      for (size_t b = 0; b < nb; ++b) {
        mult[b] = a.ue4m3[scale_codes[b] & 0x7F] * a.tensor_scale;
      }
    } else if (kNvfp4) {
      for (size_t b = 0; b < nb; ++b) {
        const bool has_nan = amax[b] > 0x7F800000u;
        float amax_f;
        std::memcpy(&amax_f, &amax[b], 4);
        const uint8_t code =
            scalar::Nvfp4ScaleCode(a.mode, amax_f, a.tensor_scale, has_nan,
                                   Nvfp4Arithmetic::kF32Quotient);
        mult[b] = a.ue4m3[code & 0x7F] * a.tensor_scale;
        scale_codes[b] = code;
      }
    } else {
      // (kFp16Direct chunks that Encode64MxAbs covers took FastTail; the
      // others, with Inf, NaN or a negative rebias, keep EncodeDirect.)
      bool have_codes = false;
#ifdef MXPACK_HAVE_RANGE_ENCODE
      if constexpr (kRange && !kNvfp4) {
        // The scale codes and the folded constants in one pass.
        __mmask16 bad = 0;
        ScaleCodes(a.scale, amax, nb, scale_codes, [&](size_t b, VU bits, VU code) {
          bad |= RangeFoldAt(b, bits, code, fold);
        });
        fold_ok = bad == 0;
        have_codes = true;
      }
#endif
      if (!have_codes) ScaleCodes(a.scale, amax, nb, scale_codes);
    }
    // (3) Scale, encode, store. On x86 it runs with FTZ (products below
    // 2^-126 flush to +-0, which encode to +-0 anyway; the F16C encoder would
    // otherwise take microcode assists) and with DAZ cleared even if the
    // caller set it: elements are scaled, possibly up, before the encoder
    // sees them, so subnormal inputs must stay exact. Passes 1-2 run in the
    // caller's environment (NVFP4 scale products may be subnormal). NaN
    // blocks (a NaN amax, or an NVFP4 scale that encodes to NaN) get
    // encode(NaN) in every data element (x / NaN, satfinite).
    // (MX: a NaN scale code comes from a NaN amax only.)
    const bool any_nan = kNvfp4 ? std::memchr(scale_codes, kNanScale, nb) != nullptr
                                : chunk_amax > 0x7F800000u;
    // MX on AVX3_DL: the block scales folded into the range encoder's
    // constants (no multiply, no MXCSR change: the encoder does not depend
    // on it), for chunks whose every block is in its range (RangeFoldAt).
    bool folded = false;
#ifdef MXPACK_HAVE_RANGE_ENCODE
    if constexpr (kRange && !kNvfp4) folded = fold_ok;
#endif
    if constexpr (!kNvfp4) {
      // The multipliers (unless folded) and kDirect's constants.
      CodeConstants(scale_codes, nb, folded ? nullptr : mult, add2, low2);
      // kDirect: blocks holding an Inf take the general path (a low above
      // every finite value flags each of their nonzero lanes): EncodeDirect
      // would read Inf as 2^128, which a scale near 2^127 (ceil / rceil with
      // amax near 2^128) brings below max finite instead of saturating it.
      if constexpr (kDirect) {
        for (size_t b = 0; HWY_UNLIKELY(chunk_amax >= 0x7F800000u) && b < nb; ++b) {
          if (inf_block[b]) low2[b] = 0x7FFF7FFFu;
        }
      }
    }
#ifdef MXPACK_HAVE_RANGE_ENCODE
    if (folded) {
      // Without Inf and NaN elements every |x| * 2^-X lies below 2^(emax +
      // 1) (the scale code's definition), so the encoder may clamp the
      // codes instead of the elements (RangeEncodeF32::Encode64's kClamp).
      return EncodeChunk(src, mult, add2, low2, nb * kBlock, nvalid,
                         any_nan ? scale_codes : nullptr, padded, out, a.prefetch_l2, fold,
                         /*clamp=*/chunk_amax >= 0x7F800000u);
    }
#endif
#if HWY_ARCH_X86
    EncodeChunkFtz(src, mult, add2, low2, nb * kBlock, nvalid, any_nan ? scale_codes : nullptr,
                   padded, out, a.prefetch_l2);
#else
    EncodeChunk(src, mult, add2, low2, nb * kBlock, nvalid, any_nan ? scale_codes : nullptr,
                padded, out, a.prefetch_l2);
#endif
  }

 private:
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
  // Passes 2 and 3 of the common chunk, in fewer operations than the general
  // path: MX into elements that fold the scale into the range encoder
  // (kRange without kDirect: f32, and bf16 into 4- and 6-bit elements) or,
  // on CPUs with AVX512-FP16, bf16 into e4m3 (kFp16Direct). Valid for
  // chunks without Inf or NaN elements whose every nonzero block's
  // constants are in range; FastTail returns false for the others, which
  // then take the general path from pass 2 on (the scale codes and
  // constants written here are recomputed there).
  static constexpr bool kFastTail =
      !kNvfp4 && (kFp16Direct || (kRange && !kDirect));

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

  // Passes 2 and 3 of a chunk through the fast path (see kFastTail); false
  // (nothing final written) when the chunk needs the general path.
  static HWY_NOINLINE bool FastTail(const internal::MxBlockArgs& a,
                                    const uint8_t* HWY_RESTRICT src, size_t nb, size_t nvalid,
                                    bool padded, uint8_t* HWY_RESTRICT out,
                                    uint8_t* HWY_RESTRICT scale_codes,
                                    const uint32_t* HWY_RESTRICT amax,
                                    const uint16_t* HWY_RESTRICT amax16,
                                    [[maybe_unused]] uint32_t* HWY_RESTRICT fold) {
    static_assert(hn::MaxLanes(DU()) == 16, "16 blocks per vector");
    if (a.scale.emax < 2) return false;  // (every MX element has emax >= 2)
    const auto load_bits = [&](size_t b) {
      if constexpr (kBf16) {
        return _mm512_slli_epi32(
            _mm512_cvtepu16_epi32(_mm256_load_si256(reinterpret_cast<const __m256i*>(amax16 + b))),
            16);
      } else {
        (void)amax16;
        return _mm512_load_si512(amax + b);
      }
    };
    const auto codes = [&](const auto& hook) {
      switch (a.scale.mode) {
        case ScaleMode::kFloor:
          return FastScaleCodes<ScaleMode::kFloor>(a.scale, nb, load_bits, scale_codes, hook);
        case ScaleMode::kCeil:
          return FastScaleCodes<ScaleMode::kCeil>(a.scale, nb, load_bits, scale_codes, hook);
        case ScaleMode::kRceil:
          return FastScaleCodes<ScaleMode::kRceil>(a.scale, nb, load_bits, scale_codes, hook);
        case ScaleMode::kEven:
          return FastScaleCodes<ScaleMode::kEven>(a.scale, nb, load_bits, scale_codes, hook);
      }
      return false;
    };
    // Blocks of amax 0 (every element +-0) pass with any constants.
#ifdef MXPACK_HAVE_FP16_HALF_ENCODE
    if constexpr (kFp16Direct) {
      if (internal::CpuHasAvx512Fp16()) {
        // Encode64MxAbs's doubled rebias (112 + s) << 8 (see kFp16Direct),
        // which must not be negative, in both u16 halves of a u32.
        HWY_ALIGN uint32_t rebias2[kMaxBlocks];
        __mmask16 bad = 0;
        const __m512i k = _mm512_set1_epi32(2 * Fp16Enc::kRebias);
        const bool finite = codes([&](size_t b, __m512i bits, __m512i s) {
          const __m512i r = _mm512_add_epi32(_mm512_slli_epi32(s, 8), k);
          bad |= _mm512_mask_cmplt_epi32_mask(_mm512_test_epi32_mask(bits, bits), r,
                                              _mm512_setzero_si512());
          _mm512_store_si512(rebias2 + b, _mm512_or_si512(r, _mm512_slli_epi32(r, 16)));
        });
        if (!finite || bad != 0) return false;
        EncodeChunkFp16(src, rebias2, nb, out, a.prefetch_l2);
        return true;
      }
    }
#endif
#ifdef MXPACK_HAVE_RANGE_ENCODE
    if constexpr (kRange && !kDirect) {
      // The folded constants (RangeFoldAt) for x = s, 0 for blocks of amax
      // 0; the max (the clamp) is not needed without Inf elements.
      __mmask16 bad = 0;
      const bool finite = codes([&](size_t b, __m512i bits, __m512i s) {
        const __mmask16 nonzero = _mm512_test_epi32_mask(bits, bits);
        bad |= StoreFoldConsts<false>(b, _mm512_maskz_mov_epi32(nonzero, s), nonzero, fold);
      });
      if (!finite || bad != 0) return false;
      EncodeChunk(src, nullptr, nullptr, nullptr, nb * kBlock, nvalid, nullptr, padded, out,
                  a.prefetch_l2, fold, /*clamp=*/false);
      return true;
    }
#endif
    (void)src, (void)nvalid, (void)padded, (void)out, (void)codes;
    return false;
  }
#endif

  // Pass 1 in lanes of DL: for every block b < nb, out[b] = the max over
  // the block of load_abs(b, i) (the |x| bits of its lanes i, i + NL, ...),
  // and out[b] = 0 for the missing blocks of the last group. NL blocks at a
  // time through MaxTree, so that lane j holds block j's max. out must have
  // room for nb rounded up to Lanes(dl).
  template <class DL, class LoadAbs>
  static HWY_INLINE void BlockMaxima(DL dl, size_t nb, hn::TFromD<DL>* HWY_RESTRICT out,
                                     const LoadAbs& load_abs) {
    const size_t NL = hn::Lanes(dl);
    constexpr size_t kLevels = Log2(hn::MaxLanes(DL()));
    HWY_DASSERT(NL == hn::MaxLanes(dl));  // fixed-size vectors (x86, EMU128)
    size_t g = 0;
    for (; g + NL <= nb; g += NL) {  // whole groups: no per-block checks
      const auto v = MaxTree<kLevels, false>(dl, NL, 0, [&](size_t j, size_t i) {
        return load_abs(g + j, i);
      });
      hn::StoreU(v, dl, out + g);
    }
    if (g < nb) {
      const auto v = MaxTree<kLevels, true>(dl, nb - g, 0, [&](size_t j, size_t i) {
        return load_abs(g + j, i);
      });
      hn::StoreU(v, dl, out + g);
    }
  }

  static constexpr size_t Log2(size_t n) { return n <= 1 ? 0 : 1 + Log2(n / 2); }

  // The block maxima of blocks [j0, j0 + 2^kLevel) in one vector (kPartial:
  // 0 for blocks >= nb). Level 0 is a block's vertical max; level L merges
  // two level-(L-1) vectors (lower blocks first) so that the lanes of each
  // block halve; after log2(NL) levels lane j holds block j0 + j. Depth-
  // first, so only one vector per level is live (no spills of NL vectors).
  // Merges permute u32 lanes (x86's two-table u16 permute costs about 2.5
  // times the u32 one) and take the max per lane of DL; 16-bit lanes merge
  // first with blends and a rotate, which leaves u32 lane k = (block 2j,
  // block 2j + 1) maxima of lanes 2k, 2k + 1.
  template <size_t kLevel, bool kPartial, class DL, class LoadAbs>
  static HWY_INLINE hn::Vec<DL> MaxTree(DL dl, size_t nb, size_t j0, const LoadAbs& load_abs) {
    if constexpr (kLevel == 0) {
      if (kPartial && j0 >= nb) return hn::Zero(dl);
      const size_t NL = hn::Lanes(dl);
      auto vmax = load_abs(j0, 0);
      for (size_t i = NL; i < kBlock; i += NL) vmax = hn::Max(vmax, load_abs(j0, i));
      return vmax;
    } else {
#if HWY_TARGET != HWY_SCALAR  // (one lane: kLevels = 0)
      const auto lo = MaxTree<kLevel - 1, kPartial>(dl, nb, j0, load_abs);
      const auto hi =
          MaxTree<kLevel - 1, kPartial>(dl, nb, j0 + (size_t{1} << (kLevel - 1)), load_abs);
      const hn::Repartition<uint32_t, DL> d32;
      if constexpr (kLevel == 1 && sizeof(hn::TFromD<DL>) == 2) {
#if HWY_TARGET == HWY_AVX3_DL
        // VBMI2's double shift: (hi << 16) | (lo >> 16) per u32 is the
        // rotated blend in one operation.
        hn::Vec<DL> swapped;
        if constexpr (hn::MaxLanes(dl) == 32) {
          swapped.raw = _mm512_shldi_epi32(hi.raw, lo.raw, 16);
        } else if constexpr (hn::MaxLanes(dl) == 16) {
          swapped.raw = _mm256_shldi_epi32(hi.raw, lo.raw, 16);
        } else {
          swapped = hn::BitCast(dl, hn::RotateRight<16>(hn::BitCast(d32, hn::OddEven(lo, hi))));
        }
#else
        const auto swapped =
            hn::BitCast(dl, hn::RotateRight<16>(hn::BitCast(d32, hn::OddEven(lo, hi))));
#endif
        return hn::Max(hn::OddEven(hi, lo), swapped);
      } else {
        const auto h = hn::BitCast(d32, hi);
        const auto l = hn::BitCast(d32, lo);
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
        if constexpr (hn::MaxLanes(d32) == 16) {
          // A butterfly instead of the concatenations: the u32 lanes whose
          // bit s is set take hi's lanes, the others lo's, each paired with
          // the lane at distance 2^s in the same vector (one two-table
          // permute), so lane i keeps the block of bit s and its partial
          // maxima move to the higher bits. One permute (port 5 only)
          // instead of two, the blend taking either vector port (the max
          // stays on port 0), and no register copy for the permute that
          // overwrites a table. Lane j still ends up holding block j0 + j.
          constexpr int s = static_cast<int>(kLevel) - (sizeof(hn::TFromD<DL>) == 2 ? 2 : 1);
          static_assert(s >= 0 && s < 4, "u32 butterfly step");
          constexpr __mmask16 kHi = [] {
            int m = 0;
            for (int i = 0; i < 16; ++i) m |= ((i >> s) & 1) << i;
            return static_cast<__mmask16>(m);
          }();
          struct Table {
            alignas(64) uint32_t v[16];
          };
          static constexpr Table kIdx = [] {
            Table t{};
            for (int i = 0; i < 16; ++i) {
              t.v[i] = static_cast<uint32_t>((i ^ (1 << s)) + (((i >> s) & 1) ? 16 : 0));
            }
            return t;
          }();
          const __m512i same = _mm512_mask_blend_epi32(kHi, l.raw, h.raw);
          const __m512i partner =
              _mm512_permutex2var_epi32(l.raw, _mm512_load_si512(kIdx.v), h.raw);
          return hn::Max(hn::BitCast(dl, decltype(h){same}), hn::BitCast(dl, decltype(h){partner}));
        }
#endif
        return hn::Max(hn::BitCast(dl, hn::ConcatOdd(d32, h, l)),
                       hn::BitCast(dl, hn::ConcatEven(d32, h, l)));
      }
#endif
    }
  }

  // Pass 3 prefetches the input that follows the chunk, at the offset of its
  // own step (the bytes pass 1 of the next chunk, when the rows continue
  // there, reads first: pass 1's loads, serialized after pass 3, otherwise
  // leave the encoder idle). Past the input's end the prefetches are
  // harmless. l2 (MxBlockArgs::prefetch_l2, inputs that stream from DRAM):
  // into L2 only, which is faster for DRAM-sized inputs than prefetching
  // into L1 (presumably fewer L1 fill buffers held per DRAM miss) but slower
  // for L2-resident ones, which keep the L1 prefetch. l2 is a compile-time
  // flag (std::bool_constant): the callers run one loop per kind of
  // prefetch, without a branch per step (whose cost depended on code
  // placement).
  template <class L2>
  static HWY_INLINE void PrefetchNextChunk(const uint8_t* p, size_t chunk_bytes, size_t bytes,
                                           L2 /*l2*/) {
    for (size_t line = 0; line < bytes; line += 64) {
      if constexpr (L2::value) {
        __builtin_prefetch(p + chunk_bytes + line, 0, 2);
      } else {
        __builtin_prefetch(p + chunk_bytes + line, 0, 3);
      }
    }
  }

  // The exponents x = code - 127 of MX scale codes (u32 lanes).
  static HWY_INLINE hn::Vec<DI> ScaleExponents(VU code) {
    const DI di;
    return hn::Sub(hn::BitCast(di, code), hn::Set(di, 127));
  }

#ifdef MXPACK_HAVE_FP16_HALF_ENCODE
  // Pass 3 of kFp16Direct chunks: one block (32 bf16) per vector, two
  // blocks per step, codes one per byte. The elements are read again rather
  // than stored as magnitudes in pass 1: the encoder derives them in one
  // shift, cheaper than the extra store and load.
  static MXPACK_FP16_TARGET HWY_NOINLINE void EncodeChunkFp16(const uint8_t* HWY_RESTRICT src,
                                                              const uint32_t* HWY_RESTRICT rebias2,
                                                              size_t nb, uint8_t* HWY_RESTRICT out,
                                                              bool prefetch_l2) {
    static_assert(kBlock == 32 && kSrcBytes == 2, "one block per 512-bit vector");
    const auto at = [](const uint32_t* v, size_t b) MXPACK_FP16_TARGET {
      return _mm512_set1_epi32(static_cast<int>(v[b]));
    };
    // One load per vector (see scaled_at in EncodeChunkT).
    const auto load = [](const uint8_t* p) MXPACK_FP16_TARGET {
      __m512i x = _mm512_loadu_si512(p);
      asm("" : "+v"(x));  // NOLINT(hicpp-no-assembler)
      return x;
    };
    const auto whole_steps = [&](auto l2) MXPACK_FP16_TARGET {
      size_t b = 0;
      for (; b + 2 <= nb; b += 2) {
        const uint8_t* p = src + b * 64;
        PrefetchNextChunk(p, nb * 64, 128, l2);
        _mm512_storeu_si512(out + b * 32, Fp16Enc::Encode64MxAbs(load(p), at(rebias2, b),
                                                                 load(p + 64), at(rebias2, b + 1)));
      }
      return b;
    };
    const size_t b = prefetch_l2 ? whole_steps(std::true_type()) : whole_steps(std::false_type());
    if (b < nb) {
      const __m512i zero = _mm512_setzero_si512();
      const __m512i c =
          Fp16Enc::Encode64MxAbs(_mm512_loadu_si512(src + b * 64), at(rebias2, b), zero, zero);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + b * 32), _mm512_castsi512_si256(c));
    }
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

#if HWY_ARCH_X86
  // EncodeChunk under ScopedFlushDenormals(daz = false). Both functions are
  // non-inlined, so no floating-point work of the caller or of EncodeChunk
  // can move across the MXCSR writes.
  static HWY_NOINLINE void EncodeChunkFtz(const uint8_t* HWY_RESTRICT src,
                                          const float* HWY_RESTRICT mult,
                                          const uint32_t* HWY_RESTRICT add2,
                                          const uint32_t* HWY_RESTRICT low2, size_t n,
                                          size_t nvalid, const uint8_t* HWY_RESTRICT nan_scales,
                                          bool padded, uint8_t* HWY_RESTRICT out,
                                          bool prefetch_l2) {
    const internal::ScopedFlushDenormals ftz(/*daz=*/false);
    EncodeChunk(src, mult, add2, low2, n, nvalid, nan_scales, padded, out, prefetch_l2);
  }
#endif

  // Pass 3 over the chunk's n elements (see Run): nan_scales is the scale
  // codes when some block is a NaN block, else null; fold: RangeFoldAt's
  // constants (the elements are then not multiplied), or null; clamp
  // (fold and thr only): false when no element is Inf or NaN, so that the
  // encoder clamps codes rather than elements (fold) or skips the Inf fix
  // (thr); thr, thr_codes: NVFP4 kExact's thresholds (see EncodeChunkT), or
  // null. Not inlined: EncodeChunkFtz changes MXCSR around it.
  static HWY_NOINLINE void EncodeChunk(const uint8_t* HWY_RESTRICT src,
                                       const float* HWY_RESTRICT mult,
                                       const uint32_t* HWY_RESTRICT add2,
                                       const uint32_t* HWY_RESTRICT low2, size_t n, size_t nvalid,
                                       const uint8_t* HWY_RESTRICT nan_scales, bool padded,
                                       uint8_t* HWY_RESTRICT out, bool prefetch_l2,
                                       const uint32_t* HWY_RESTRICT fold = nullptr,
                                       bool clamp = true,
                                       const uint32_t* HWY_RESTRICT thr = nullptr,
                                       const uint8_t* HWY_RESTRICT thr_codes = nullptr) {
#if HWY_TARGET == HWY_SCALAR
    (void)prefetch_l2;
    (void)add2;  // kDirect is x86-only
    (void)low2;
    (void)fold;  // AVX3_DL only
    (void)clamp;
    // One-lane vectors: codes one at a time, then the NaN blocks, padding and
    // packing as the reference does.
    HWY_ALIGN uint8_t codes[kMaxBlocks * kBlock];
    uint8_t* c = padded ? codes : out;
    for (size_t i = 0; i < n; ++i) {
      StoreLanes<1>(DU(),
                    thr != nullptr ? ThresholdCodes<true>(src + i * kSrcBytes,
                                                          thr + 8 * thr_codes[i / kBlock])
                                   : EncodeVector(src + i * kSrcBytes, mult[i / kBlock]),
                    c + i);
    }
    for (size_t i = 0; nan_scales != nullptr && i < n; ++i) {
      if (i >= nvalid) {
        c[i] = 0;  // padding: +0 / NaN scale gave the NaN code
      } else if (nan_scales[i / kBlock] == kNanScale) {
        c[i] = kElemT.nan_code;
      }
    }
    if (padded) {
      std::memset(out, 0, n);
      for (size_t i = 0; i < n; ++i) scalar::SetCode(kPaddedLayout, out, i, c[i]);
    }
#else
    if constexpr (kNvfp4) {
      if (thr != nullptr) {
        // (clamp: the chunk holds an Inf or NaN, so kThr = 2 fixes Inf codes.)
        const auto run = [&](auto padded_tag, auto thr_tag) {
          return EncodeChunkT<decltype(padded_tag)::value, false, true, decltype(thr_tag)::value>(
              src, mult, add2, low2, n, nvalid, nan_scales, out, prefetch_l2, fold, thr,
              thr_codes);
        };
        using Inf = std::integral_constant<int, 2>;
        using NoInf = std::integral_constant<int, 1>;
        if (padded) return clamp ? run(std::true_type(), Inf()) : run(std::true_type(), NoInf());
        return clamp ? run(std::false_type(), Inf()) : run(std::false_type(), NoInf());
      }
    } else {
      (void)thr;
      (void)thr_codes;
    }
#ifndef MXPACK_HAVE_RANGE_ENCODE
    (void)fold;  // AVX3_DL only
    (void)clamp;
#else
    if constexpr (kRange && !kNvfp4) {
      if (fold != nullptr) {
        if constexpr (kElemT.bits < 8) {
          if (padded) {
            return clamp ? EncodeChunkT<true, true, true>(src, mult, add2, low2, n, nvalid,
                                                          nan_scales, out, prefetch_l2, fold)
                         : EncodeChunkT<true, true, false>(src, mult, add2, low2, n, nvalid,
                                                           nan_scales, out, prefetch_l2, fold);
          }
        }
        return clamp ? EncodeChunkT<false, true, true>(src, mult, add2, low2, n, nvalid,
                                                       nan_scales, out, prefetch_l2, fold)
                     : EncodeChunkT<false, true, false>(src, mult, add2, low2, n, nvalid,
                                                        nan_scales, out, prefetch_l2, fold);
      }
    }
#endif
    if constexpr (kElemT.bits < 8) {
      if (padded) {
        return EncodeChunkT<true>(src, mult, add2, low2, n, nvalid, nan_scales, out, prefetch_l2);
      }
    }
    EncodeChunkT<false>(src, mult, add2, low2, n, nvalid, nan_scales, out, prefetch_l2);
#endif
  }

#if HWY_TARGET != HWY_SCALAR
  // Pass 3 proper: 4N elements per step as one u8 vector of codes
  // (EncodeToU8x4, or four encodes and U8From4U32), the NaN blocks'
  // override in registers (rare), kPadded: PaddedCodec's compaction of its
  // 16-element blocks, then one store of 4N bytes. The tail (n is a
  // multiple of 16, not of 4N) goes through zero-padded buffers.
  // kFold (kRange MX): the elements are encoded unscaled with fold's
  // per-block constants (RangeFoldAt) instead of multiplied by mult; !kClamp
  // (kFold only): no element is Inf or NaN (see EncodeChunk).
  // kThr (NVFP4 kExact; 2 for chunks holding an Inf): the elements are
  // encoded by ThresholdCodes with block b's thresholds at thr + 8 *
  // thr_codes[b] (its scale code's row of Nvfp4ThresholdTable) instead.
  template <bool kPadded, bool kFold = false, bool kClamp = true, int kThr = 0>
  static HWY_INLINE void EncodeChunkT(const uint8_t* HWY_RESTRICT src,
                                      const float* HWY_RESTRICT mult,
                                      const uint32_t* HWY_RESTRICT add2,
                                      const uint32_t* HWY_RESTRICT low2, size_t n, size_t nvalid,
                                      const uint8_t* HWY_RESTRICT nan_scales,
                                      uint8_t* HWY_RESTRICT out, bool prefetch_l2,
                                      const uint32_t* HWY_RESTRICT fold = nullptr,
                                      const uint32_t* HWY_RESTRICT thr = nullptr,
                                      const uint8_t* HWY_RESTRICT thr_codes = nullptr) {
    const DU du;
    const hn::Repartition<uint8_t, DU> d8;
    const size_t N = hn::Lanes(du);
    const size_t N8 = 4 * N;
    // Codes of the 4N elements at p (element index i of the chunk); vectors
    // past the chunk's last block (tail) use that block's multiplier.
    const size_t last_block = n / kBlock - 1;
    (void)add2;  // read by the kDirect path only
    (void)low2;
    // The block of vector k (N elements) of the step at element i (a
    // multiple of 4N). Where kBlock divides 4N (every x86 target) the step's
    // first block plus a compile-time offset, so that the vectors of one
    // block share their constants' loads. kTail (the last, partial step):
    // vectors past the chunk's last block use that block's constants (their
    // codes are discarded); whole steps lie within the chunk.
    const auto block_at = [last_block](size_t i, size_t k, auto tail) {
      constexpr size_t kN = hn::MaxLanes(DU());
      const size_t b =
          (4 * kN) % kBlock == 0 ? i / kBlock + k * kN / kBlock : (i + k * kN) / kBlock;
      return decltype(tail)::value ? HWY_MIN(b, last_block) : b;
    };
    // The multiplier of vector k of the step at element i.
    const auto mult_at = [&](size_t i, size_t k, auto tail) { return mult[block_at(i, k, tail)]; };
#ifdef MXPACK_HAVE_RANGE_ENCODE
    using Range = RangeEncodeF32<kElem>;
    // Range encoder input: vector k of the step at p (element i), scaled
    // (unless kFold: then the bits as loaded).
    const auto scaled_at = [&](const uint8_t* p, size_t i, size_t k, auto tail) -> __m512i {
      if constexpr (kFold) {
        (void)i;
        // One load per vector: without the register constraint GCC folds
        // the load into both of Form's uses (the mask and the add), two
        // loads per vector, each split across two cache lines when the
        // input is not 64-byte aligned.
        __m512i y = Load(du, p + k * N * kSrcBytes, 0).raw;
        asm("" : "+v"(y));  // NOLINT(hicpp-no-assembler)
        return y;
      } else {
        return Scaled(p + k * N * kSrcBytes, mult_at(i, k, tail)).raw;
      }
    };
    // The range encoder's constants of vector k of the step at element i.
    const auto consts_at = [&](size_t i, size_t k, auto tail) -> typename Range::Consts {
      if constexpr (kFold) {
        const size_t b = block_at(i, k, tail);
        return {_mm512_set1_epi32(static_cast<int>(fold[b])),
                _mm512_set1_epi32(static_cast<int>(fold[kMaxBlocks + b])),
                _mm512_set1_epi32(static_cast<int>(fold[2 * kMaxBlocks + b]))};
      } else {
        (void)i;
        (void)k;
        (void)tail;
        return Range::Unscaled();
      }
    };
    static_assert(kFold || kClamp, "!kClamp: folded chunks only");
#else
    static_assert(!kFold && kClamp, "kFold, !kClamp: range encoder only");
    (void)fold;
#endif
    // kThr: the codes by ThresholdCodes (always inlined: GCC would
    // otherwise call this step's body out of line, through memory).
    const auto thr_codes_at = [&](const uint8_t* p, size_t i,
                                  auto tail) __attribute__((always_inline)) {
      constexpr bool kZeroInf = kThr == 2;
      const auto row = [&](size_t k) { return thr + 8 * thr_codes[block_at(i, k, tail)]; };
      return U8From4U32(du, ThresholdCodes<kZeroInf>(p, row(0)),
                        ThresholdCodes<kZeroInf>(p + N * kSrcBytes, row(1)),
                        ThresholdCodes<kZeroInf>(p + 2 * N * kSrcBytes, row(2)),
                        ThresholdCodes<kZeroInf>(p + 3 * N * kSrcBytes, row(3)));
    };
    const auto codes_at = [&](const uint8_t* p, size_t i, auto tail) {
#if HWY_ARCH_X86 && HWY_TARGET != HWY_EMU128 && HWY_TARGET != HWY_SCALAR  // as kDirect
      if constexpr (kDirect) {
        // Two u16 vectors, each within one block (2N <= kBlock).
        const hn::Repartition<uint16_t, DU> d16;
        const size_t N16 = hn::Lanes(d16);
        const auto* s16 = reinterpret_cast<const uint16_t*>(p);
        const size_t b0 = block_at(i, 0, tail);
        const size_t b1 = block_at(i, 2, tail);  // element i + N16 = i + 2N
        hn::Vec<decltype(d16)> c0, c1;
        const auto odd0 = EncodeDirect(d16, hn::LoadU(d16, s16), add2[b0], low2[b0], c0);
        const auto odd1 = EncodeDirect(d16, hn::LoadU(d16, s16 + N16), add2[b1], low2[b1], c1);
        if (HWY_LIKELY(hn::AllFalse(d16, hn::Or(odd0, odd1)))) return U8From2U16(d16, c0, c1);
      }
#endif
#ifdef MXPACK_HAVE_RANGE_ENCODE
      if constexpr (kRange) {
        // MX: NaN lanes lie in NaN blocks, which finish() overrides (kNanFree).
        return hn::Vec<decltype(d8)>{Range::template Encode64<!kNvfp4, kClamp>(
            scaled_at(p, i, 0, tail), scaled_at(p, i, 1, tail), scaled_at(p, i, 2, tail),
            scaled_at(p, i, 3, tail), consts_at(i, 0, tail), consts_at(i, 1, tail),
            consts_at(i, 2, tail), consts_at(i, 3, tail))};
      }
#endif
      const float m0 = mult_at(i, 0, tail), m1 = mult_at(i, 1, tail), m2 = mult_at(i, 2, tail),
                  m3 = mult_at(i, 3, tail);
#ifdef MXPACK_HAVE_F16C_ENCODE
      if constexpr (kF16c) {
        // MX: NaN inputs lie in NaN blocks, whose codes finish() overrides,
        // so the encoder skips its NaN select (NVFP4 keeps it: Inf * 0 with
        // a zero scale is a NaN outside NaN blocks).
        return F16cEncodeF32<kElem, true>::template EncodeToU8x4<kFoldScale, kNoSticky,
                                                                 /*kNanFree=*/!kNvfp4>(
            du, Scaled(p, m0), Scaled(p + N * kSrcBytes, m1), Scaled(p + 2 * N * kSrcBytes, m2),
            Scaled(p + 3 * N * kSrcBytes, m3));
      }
#endif
      return U8From4U32(du, EncodeVector(p, m0), EncodeVector(p + N * kSrcBytes, m1),
                        EncodeVector(p + 2 * N * kSrcBytes, m2),
                        EncodeVector(p + 3 * N * kSrcBytes, m3));
    };
    const auto finish = [&](hn::Vec<decltype(d8)> c, size_t i, size_t len) {
      if (HWY_UNLIKELY(nan_scales != nullptr)) {
        // Data lanes of NaN blocks (2) get the NaN code; padding lanes (1),
        // whose +0 / NaN scale also gave it, get 0.
        HWY_ALIGN uint8_t lanes[4 * hn::MaxLanes(du)] = {};
        for (size_t j = 0; j < len; ++j) {
          lanes[j] = i + j >= nvalid ? 1 : (nan_scales[(i + j) / kBlock] == kNanScale ? 2 : 0);
        }
        const auto kind = hn::Load(d8, lanes);
        c = hn::IfThenElse(hn::Eq(kind, hn::Set(d8, 2)), hn::Set(d8, kElemT.nan_code), c);
        c = hn::IfThenZeroElse(hn::Eq(kind, hn::Set(d8, 1)), c);
      }
      if constexpr (kPadded) {
        if constexpr (kElemT.bits == 4) {
          c = PaddedCodec::Compact4<0>(d8, c);
        } else {
          c = PaddedCodec::Compact6<0>(d8, c);
        }
      }
      return c;
    };
    const std::false_type kWhole;  // block_at's tail flag of whole steps
    // The whole steps, one loop per kind of prefetch (PrefetchNextChunk).
    const auto whole_steps = [&](auto l2) {
      size_t i = 0;
#ifdef MXPACK_HAVE_RANGE_ENCODE
      if constexpr (kPadded && kRange && kElem == Format::kE2M1 && kThr == 0) {
        // No NaN block: the range encoder packs b4x16_p64 itself; no element
        // is NaN (finite or infinite x times a finite power of two).
        for (; nan_scales == nullptr && i + N8 <= n; i += N8) {
          const uint8_t* p = src + i * kSrcBytes;
          PrefetchNextChunk(p, n * kSrcBytes, N8 * kSrcBytes, l2);
          hn::StoreU(hn::Vec<decltype(d8)>{Range::template EncodeB4x16<!kNvfp4, kClamp>(
                         scaled_at(p, i, 0, kWhole), scaled_at(p, i, 1, kWhole),
                         scaled_at(p, i, 2, kWhole), scaled_at(p, i, 3, kWhole),
                         consts_at(i, 0, kWhole), consts_at(i, 1, kWhole),
                         consts_at(i, 2, kWhole), consts_at(i, 3, kWhole))},
                     d8, out + i);
        }
      }
#endif
      for (; i + N8 <= n; i += N8) {
        PrefetchNextChunk(src + i * kSrcBytes, n * kSrcBytes, N8 * kSrcBytes, l2);
        const uint8_t* p = src + i * kSrcBytes;
        if constexpr (kThr != 0) {
          hn::StoreU(finish(thr_codes_at(p, i, kWhole), i, N8), d8, out + i);
        } else {
          hn::StoreU(finish(codes_at(p, i, kWhole), i, N8), d8, out + i);
        }
      }
      return i;
    };
    const size_t i = prefetch_l2 ? whole_steps(std::true_type()) : whole_steps(std::false_type());
    if (i == n) return;
    const size_t rest = n - i;
    HWY_ALIGN uint8_t in_buf[4 * hn::MaxLanes(du) * kSrcBytes] = {};
    HWY_ALIGN uint8_t out_buf[4 * hn::MaxLanes(du)];
    std::memcpy(in_buf, src + i * kSrcBytes, rest * kSrcBytes);
    if constexpr (kThr != 0) {
      hn::Store(finish(thr_codes_at(in_buf, i, std::true_type()), i, rest), d8, out_buf);
    } else {
      hn::Store(finish(codes_at(in_buf, i, std::true_type()), i, rest), d8, out_buf);
    }
    std::memcpy(out + i, out_buf, rest);
  }
#endif

#if HWY_ARCH_X86 && HWY_TARGET != HWY_EMU128 && HWY_TARGET != HWY_SCALAR
  // kDirect: the fp8 codes of the bf16 bits h (u16 lanes within one block
  // whose scale code is c, X = c - 127), i.e. encode_rn_satfinite(x * 2^-X),
  // straight from the bits. Where the scaled value is a normal of the
  // element format (target exponent e - c + bias >= 1, with e >= 1), the
  // code is FastEncodeBF16's integer rounding with the rebias folded into
  // one per-block addend:
  //   |code| = min((|h| + add + lsb) >> kDirectShift, max_code),
  //   add = 2^(kDirectShift-1) - 1 - ((c - bias) << 7)  (mod 2^16),
  //   lsb = bit kDirectShift of |h|,
  // valid for |h| >= low = max(c + 1 - bias, 1) << 7 (no u16 wrap either
  // way: |h| + add lies in [0x80, 0x8800)), for finite h (Run sends the
  // blocks holding an Inf to the general path). Lanes below low get code 0
  // (+-0 keeps its sign). The returned mask marks the lanes the formula does
  // not cover: nonzero and below low (scaled subnormals, bf16 subnormals);
  // the caller then takes the general path for the whole step. NaN lanes get
  // arbitrary codes here: they are in NaN blocks, which pass 3 overrides.
  template <class D16>
  static HWY_INLINE hn::Mask<D16> EncodeDirect(D16 d16, hn::Vec<D16> h, uint32_t add2,
                                               uint32_t low2, hn::Vec<D16>& code) {
    const hn::RebindToSigned<D16> di16;
    const hn::Repartition<uint32_t, D16> d32;
    const auto add = hn::BitCast(d16, hn::Set(d32, add2));  // (one u32 broadcast)
    const auto low = hn::BitCast(di16, hn::Set(d32, low2));
    const auto a = hn::And(h, hn::Set(d16, uint16_t{0x7FFF}));
    const auto lsb = hn::And(hn::ShiftRight<kDirectShift>(a), hn::Set(d16, uint16_t{1}));
    auto c = hn::ShiftRight<kDirectShift>(hn::Add(hn::Add(a, add), lsb));
    c = hn::Min(c, hn::Set(d16, static_cast<uint16_t>(kElemT.max_code)));
    // a and low are below 2^15: the signed compare is the unsigned one.
    const auto below = hn::RebindMask(d16, hn::Lt(hn::BitCast(di16, a), low));
    c = hn::IfThenZeroElse(below, c);
    code = hn::OrAnd(c, hn::ShiftRight<8>(h), hn::Set(d16, uint16_t{0x80}));
    return hn::And(below, hn::Ne(a, hn::Zero(d16)));
  }
#endif

  // Passes 2 and 3 of NVFP4 under Nvfp4Arithmetic::kExact: the scale codes
  // (rn: ExactScaleCodesRn; other modes per block, as the reference), the
  // element thresholds of each block's code (Nvfp4ElementThresholds), then
  // the elements by comparison (ThresholdCodes).
  static HWY_NOINLINE void RunExactNvfp4(const internal::MxBlockArgs& a,
                                         const uint8_t* HWY_RESTRICT src, size_t nb,
                                         size_t nvalid, bool padded, uint8_t* HWY_RESTRICT out,
                                         uint8_t* HWY_RESTRICT scale_codes,
                                         const uint32_t* HWY_RESTRICT amax, bool inf) {
    uint32_t span[2] = {0x7F, 0};  // the smallest and largest scale code
    if (a.mode == ScaleMode::kEven) {
#if HWY_ARCH_X86
      ExactScaleCodesRnNoDaz(amax, nb, a.tensor_scale, scale_codes, span);
#else
      ExactScaleCodesRn(amax, nb, a.tensor_scale, scale_codes, span);
#endif
    } else {
      for (size_t b = 0; b < nb; ++b) {
        float amax_f;
        std::memcpy(&amax_f, &amax[b], 4);
        const uint8_t c = scalar::Nvfp4ScaleCode(a.mode, amax_f, a.tensor_scale,
                                                 amax[b] > 0x7F800000u, Nvfp4Arithmetic::kExact);
        scale_codes[b] = c;
        span[0] = c < span[0] ? c : span[0];
        span[1] = c > span[1] ? c : span[1];
      }
    }
    a.thresholds->Fill(span[0], span[1]);
    const bool any_nan = std::memchr(scale_codes, kNanScale, nb) != nullptr;
    EncodeChunk(src, nullptr, nullptr, nullptr, nb * kBlock, nvalid,
                any_nan ? scale_codes : nullptr, padded, out, a.prefetch_l2, nullptr,
                /*clamp=*/inf, a.thresholds->thr[0], scale_codes);
  }

#if HWY_ARCH_X86
  // ExactScaleCodesRn with DAZ cleared (a caller's DAZ would read subnormal
  // amax as 0) and FTZ set (see ExactScaleCodesRn).
  static HWY_NOINLINE void ExactScaleCodesRnNoDaz(const uint32_t* HWY_RESTRICT amax, size_t nb,
                                                  float tensor_scale,
                                                  uint8_t* HWY_RESTRICT scale_codes,
                                                  uint32_t* HWY_RESTRICT span) {
    const internal::ScopedFlushDenormals ftz(/*daz=*/false);
    ExactScaleCodesRn(amax, nb, tensor_scale, scale_codes, span);
  }
#endif

  // NVFP4 kExact, rn: the ue4m3 codes of amax / (6 t) of `nb` blocks (NaN
  // amax: 0x7F), a vector of blocks at a time (lanes past nb read amax's
  // zero tail). The f32 quotient q' = f32(amax / f32(6 t)) lies within 2.1
  // ulps of the exact q (two roundings of 2^-24 each, 6 t a normal f32), and
  // no ue4m3 midpoint lies near a binade edge, so where q' is a ue4m3 normal
  // (q' >= 2^-6) whose low 20 bits are more than 3 from 0x80000 (a midpoint:
  // 4 kept bits, then a one) q rounds like q' and the shared encoder gives
  // the code. Other vectors (about 2^-17 of them, and blocks below 2^-6 of
  // 6 t) take ExactScaleCodesRnF64. span[0], span[1]: the smallest and
  // largest code (lanes past nb included, which only widens the span).
  static HWY_INLINE void ExactScaleCodesRn(const uint32_t* HWY_RESTRICT amax, size_t nb,
                                           float tensor_scale, uint8_t* HWY_RESTRICT scale_codes,
                                           uint32_t* HWY_RESTRICT span) {
    const D d;
    const DU du;
    const DI di;
    const size_t N = hn::Lanes(d);
    const bool fast = tensor_scale >= 0x1p-120f;  // 6 t a normal f32
    const hn::Vec<D> den = hn::Set(d, 6.0f * tensor_scale);
    VU lo = hn::Set(du, 0x7Fu), hi = hn::Zero(du);
    for (size_t b = 0; b < nb; b += N) {
      VU code;
      if (fast) {
        const VU q = hn::BitCast(du, hn::Div(hn::BitCast(d, hn::LoadU(du, amax + b)), den));
        const auto qi = hn::BitCast(di, q);
        const auto off = hn::Sub(hn::And(qi, hn::Set(di, 0xFFFFF)), hn::Set(di, 0x80000));
        const auto near = hn::Lt(hn::Abs(off), hn::Set(di, 4));
        const auto tiny = hn::Lt(qi, hn::Set(di, 121 << 23));  // below 2^-6
        if (HWY_LIKELY(hn::AllFalse(di, hn::Or(near, tiny)))) {
          code = FastEncodeF32<Format::kUE4M3, true>::EncodeRn(du, q);
          StoreLanes<1>(du, code, scale_codes + b);
          lo = hn::Min(lo, code);
          hi = hn::Max(hi, code);
          continue;
        }
      }
      ExactScaleCodesRnF64(amax + b, N, tensor_scale, scale_codes + b);
      code = hn::PromoteTo(du, hn::LoadU(hn::Rebind<uint8_t, DU>(), scale_codes + b));
      lo = hn::Min(lo, code);
      hi = hn::Max(hi, code);
    }
    span[0] = hn::GetLane(hn::MinOfLanes(du, lo));
    span[1] = hn::GetLane(hn::MaxOfLanes(du, hi));
  }

  // ExactScaleCodesRn from the f64 quotient, `n` blocks (a multiple of the
  // f64 lane count). 6 t is exact in f64 and the f64 quotient lies on the
  // same side of every ue4m3 value and midpoint as the exact quotient
  // (scalar::Nvfp4ScaleCode); rounded to odd at f32 precision (24 bits, at
  // least 2 more than ue4m3's 4 + 1) it still rounds to the same code,
  // which the shared f32 encoder then gives. Round to odd: the rn f32
  // quotient, one ulp down if that rounded up, then the lsb set if inexact.
  // A quotient that FTZ flushes to 0 thus becomes 2^-149, which like the
  // quotient lies below the smallest ue4m3 midpoint; beyond f32 max it
  // becomes f32 max, which saturates like the quotient.
  static HWY_NOINLINE void ExactScaleCodesRnF64(const uint32_t* HWY_RESTRICT amax, size_t n,
                                                float tensor_scale,
                                                uint8_t* HWY_RESTRICT scale_codes) {
    const hn::CappedTag<double, 8> dd;
    const hn::RebindToUnsigned<decltype(dd)> du64;
    const hn::Rebind<float, decltype(dd)> df;
    const hn::Rebind<uint32_t, decltype(dd)> du;
    const size_t N = hn::Lanes(dd);
    const auto six_t = hn::Set(dd, 6.0 * static_cast<double>(tensor_scale));
    for (size_t b = 0; b < n; b += N) {
      const auto q =
          hn::Div(hn::PromoteTo(dd, hn::LoadU(df, reinterpret_cast<const float*>(amax + b))), six_t);
      const auto f = hn::DemoteTo(df, q);
      const auto back = hn::PromoteTo(dd, f);
      // All-ones u32 lanes where the f32 quotient rounded up / is inexact.
      const auto up = hn::TruncateTo(du, hn::BitCast(du64, hn::VecFromMask(dd, hn::Gt(back, q))));
      const auto inexact =
          hn::TruncateTo(du, hn::BitCast(du64, hn::VecFromMask(dd, hn::Ne(back, q))));
      const auto odd = hn::Or(hn::Add(hn::BitCast(du, f), up), hn::And(inexact, hn::Set(du, 1u)));
      StoreLanes<1>(du, FastEncodeF32<Format::kUE4M3, true>::EncodeRn(du, odd), scale_codes + b);
    }
  }

  // NVFP4 kExact: the e2m1 codes of the N elements at p from their block's
  // thresholds t (internal::Nvfp4ElementThresholds): the count of t[i] below
  // |x| (i32 compares of the f32 bits), the sign in bit 3 except (kZeroInf:
  // chunks holding an Inf) for +-Inf in a block with P == 0 (t[7] = 8 and
  // count 7: bit 2 of the count, shifted to bit 3, clears the sign).
  template <bool kZeroInf>
  static HWY_INLINE VU ThresholdCodes(const uint8_t* HWY_RESTRICT p,
                                      const uint32_t* HWY_RESTRICT t) {
    const DU du;
    const DI di;
    const VU bits = Load(du, p, 0);
    const auto ax = hn::BitCast(di, hn::And(bits, hn::Set(du, 0x7FFFFFFFu)));
    VU cu;
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
    if constexpr (hn::MaxLanes(DU()) == 16) {
      // Binary search over the non-decreasing T_0..T_6 (the count of T_i
      // below |x| is then the search's index): T_3, then T_1 or T_5 (one
      // permute of the block's 8 thresholds), then T_0, T_2, T_4 or T_6.
      const __m512i tv = _mm512_castsi256_si512(
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t)));
      const __m512i one = _mm512_set1_epi32(1);
      __m512i idx = _mm512_maskz_mov_epi32(
          _mm512_cmpgt_epi32_mask(ax.raw, _mm512_set1_epi32(static_cast<int32_t>(t[3]))),
          _mm512_set1_epi32(4));
      const __mmask16 gt2 = _mm512_cmpgt_epi32_mask(
          ax.raw, _mm512_permutexvar_epi32(_mm512_or_si512(idx, one), tv));
      idx = _mm512_mask_add_epi32(idx, gt2, idx, _mm512_set1_epi32(2));
      const __mmask16 gt3 = _mm512_cmpgt_epi32_mask(ax.raw, _mm512_permutexvar_epi32(idx, tv));
      cu = VU{_mm512_mask_add_epi32(idx, gt3, idx, one)};
    } else  // NOLINT(readability/braces)
#endif
    {
      auto c = hn::Zero(di);
      for (int i = 0; i < 7; ++i) {
        c = hn::Sub(c, hn::VecFromMask(di, hn::Gt(ax, hn::Set(di, static_cast<int32_t>(t[i])))));
      }
      cu = hn::BitCast(du, c);
    }
    if constexpr (!kZeroInf) return hn::OrAnd(cu, hn::ShiftRight<28>(bits), hn::Set(du, 8u));
    const VU sign = hn::And(hn::ShiftRight<28>(bits), hn::Set(du, 8u));
    return hn::Or(cu, hn::AndNot(hn::And(hn::ShiftLeft<1>(cu), hn::Set(du, t[7])), sign));
  }

  // Codes (u32 lanes) of the N elements at p, scaled by m: x * m (MX) or
  // x / m, x * 0 when m == 0 (NVFP4; m = d * t), then the shared rn /
  // satfinite encoder.
  static HWY_INLINE VU EncodeVector(const uint8_t* HWY_RESTRICT p, float m) {
    return FastEncodeF32<kElem, true>::EncodeRn(DU(), Scaled(p, m));
  }
  // The f32 bits the encoder sees for the N elements at p.
  static HWY_INLINE VU Scaled(const uint8_t* HWY_RESTRICT p, float m) {
    const D d;
    const DU du;
    const hn::Vec<D> x = hn::BitCast(d, Load(du, p, 0));
    const hn::Vec<D> vm = hn::Set(d, m);
    if (kNvfp4) {
      return hn::BitCast(du, hn::IfThenElse(hn::Eq(vm, hn::Zero(d)), hn::Mul(x, vm), hn::Div(x, vm)));
    }
    return hn::BitCast(du, hn::Mul(x, vm));
  }

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

  // f32 bits of element i of the block (bf16 widened exactly).
  static HWY_INLINE VU Load(DU du, const uint8_t* HWY_RESTRICT p, size_t i) {
    if (kBf16) {
      const hn::Rebind<uint16_t, DU> d16;
      return hn::ShiftLeft<16>(hn::PromoteTo(
          du, hn::LoadU(d16, reinterpret_cast<const uint16_t*>(p) + i)));
    }
    return hn::LoadU(du, reinterpret_cast<const uint32_t*>(p) + i);
  }
};

}  // namespace HWY_NAMESPACE
}  // namespace mxpack
HWY_AFTER_NAMESPACE();

#endif  // MXPACK_SRC_MX_QUANTIZE_INL_H_
