// Highway kernel of MX / NVFP4 block quantization, three passes over each
// L1-sized chunk of the input: per block, amax of the magnitudes (integer
// max of the f32 or bf16 bits) and NaN detection (src/mx/chunk_read-inl.h);
// the scale code (integer formula of src/mx/mx_internal.h,
// src/mx/mx_scale-inl.h); then every element scaled into the element's
// range (x * 2^-s, exact; or x / (d * t) for NVFP4 kF32Quotient), encoded by
// the shared rn/satfinite encoder (src/format/encode_fast-inl.h) and stored
// as one code per byte or, for the padded GPU layouts, as b4x16_p64 /
// b6x16_p32 groups. bf16 into fp8 (MXFP8) encodes the bf16 bits directly
// with the scale folded into an integer rounding addend
// (src/mx/encode_direct-inl.h), on AVX3_DL by byte tables after one
// saturating subtract of the scale (src/mx/encode_fp8_bf16-inl.h); bf16 and f32 into e2m1 (MXFP4) and MXFP6
// on AVX3_DL look the codes up by bucket (bf16: two blocks' indices
// packed into bytes; f32 in u16 lanes as its high halves plus a flag of
// its low bits; src/mx/encode_e2m1_bf16-inl.h,
// src/mx/encode_fp6_bf16-inl.h).
// NVFP4 kExact compares the elements with per-scale-code thresholds
// instead (src/mx/nvfp4_exact-inl.h; bf16 on AVX3_DL by byte tables, or
// in u16 lanes).
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
#include "src/mx/chunk_read-inl.h"
#include "src/mx/encode_direct-inl.h"
#include "src/mx/encode_e2m1_bf16-inl.h"
#include "src/mx/encode_fp6_bf16-inl.h"
#include "src/mx/encode_fp8_bf16-inl.h"
#include "src/mx/mx_scale-inl.h"
#include "src/mx/nvfp4_exact-inl.h"
#include "src/mx/nvfp4_thresholds.h"

// Target-independent: the per-call constants of the block kernel.
#ifndef MXPACK_SRC_MX_QUANTIZE_ARGS_
#define MXPACK_SRC_MX_QUANTIZE_ARGS_
namespace mxpack::internal {
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
  static constexpr size_t kMaxBlocks = internal::kMxChunkBlocks;
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
  // Pass 2 of MX (src/mx/mx_scale-inl.h) and NVFP4 kExact's passes 2 and 3
  // (src/mx/nvfp4_exact-inl.h).
  using Scale = MxScalePass<kElem, kDirect, kMultExp>;
  using Exact = Nvfp4ExactOps;

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

#ifdef MXPACK_HAVE_MX_E2M1_BF16
    if constexpr (kTableCodec && !kBf16) {
      if (a.scale.mode == ScaleMode::kFloor &&
          RunF32Halves(a, src, nb, padded, out, scale_codes)) {
        return;
      }
    }
#endif
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
#if HWY_TARGET == HWY_AVX3_DL
      if constexpr (kBlock == 32) {
        Bf16BlockMaxima(s16, nb, amax16);
      } else  // NOLINT(readability/braces)
#endif
      {
        BlockMaxima<kBlock>(d16, nb, amax16, load_abs);
      }
    } else  // NOLINT(readability/braces)
#endif
    {
      BlockMaxima<kBlock>(du, nb, amax, [&](size_t b, size_t i) {
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
        return RunExactNvfp4(a, src, nb, nvalid, padded, out, scale_codes, amax, chunk_amax);
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
        Scale::ScaleCodes(a.scale, amax, nb, scale_codes, [&](size_t b, VU bits, VU code) {
          bad |= Scale::RangeFoldAt(b, bits, code, fold);
        });
        fold_ok = bad == 0;
        have_codes = true;
      }
#endif
      if (!have_codes) Scale::ScaleCodes(a.scale, amax, nb, scale_codes);
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
      Scale::CodeConstants(scale_codes, nb, folded ? nullptr : mult, add2, low2);
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
  // (kRange: f32 and bf16 sources, every MX element format; e2m1 and fp6
  // first try their table codecs) or, on CPUs with AVX512-FP16, bf16
  // into e4m3 (kFp16Direct, taken first). Valid for
  // chunks without Inf or NaN elements whose every nonzero block's
  // constants are in range; FastTail returns false for the others, which
  // then take the general path from pass 2 on (the scale codes and
  // constants written here are recomputed there).
  static constexpr bool kFastTail = !kNvfp4 && (kFp16Direct || kRange);

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
          return Scale::template FastScaleCodes<ScaleMode::kFloor>(a.scale, nb, load_bits, scale_codes, hook);
        case ScaleMode::kCeil:
          return Scale::template FastScaleCodes<ScaleMode::kCeil>(a.scale, nb, load_bits, scale_codes, hook);
        case ScaleMode::kRceil:
          return Scale::template FastScaleCodes<ScaleMode::kRceil>(a.scale, nb, load_bits, scale_codes, hook);
        case ScaleMode::kEven:
          return Scale::template FastScaleCodes<ScaleMode::kEven>(a.scale, nb, load_bits, scale_codes, hook);
      }
      return false;
    };
    // Blocks of amax 0 (every element +-0) pass with any constants.
#if defined(MXPACK_HAVE_MX_E2M1_BF16) || defined(MXPACK_HAVE_MX_FP8_BF16)
    // The K2 of table codec *tag per block into k2 (any for blocks of amax
    // 0, all +-0); false for a chunk with Inf or NaN. `low`: some nonzero
    // block has X below the codec's kMinX.
    [[maybe_unused]] const auto table_k2 = [&](auto* tag, uint32_t* HWY_RESTRICT k2, bool& low) {
      using Codec = std::remove_pointer_t<decltype(tag)>;
      __mmask16 bad = 0;
      const __m512i min_x = _mm512_set1_epi32(Codec::kMinX);
      const bool finite = codes([&](size_t b, __m512i bits, __m512i s) {
        const __mmask16 nonzero = _mm512_test_epi32_mask(bits, bits);
        bad |= _mm512_mask_cmplt_epi32_mask(nonzero, s, min_x);
        _mm512_store_si512(k2 + b, Codec::K2(_mm512_maskz_mov_epi32(nonzero, s)));
      });
      low = bad != 0;
      return finite;
    };
#endif
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
        EncodeChunkFp16<Fp16Enc>(src, rebias2, nb, out, a.prefetch_l2);
        return true;
      }
    }
#endif
#ifdef MXPACK_HAVE_MX_E2M1_BF16
    if constexpr (kTableCodec) {
      // MXFP4 / MXFP6: the table codec's K per block (any for blocks of
      // amax 0, all +-0), for chunks whose every nonzero block has X >=
      // kMinX (bf16 chunks hold no row padding: the driver stages ragged
      // rows as f32; f32 row padding is +0, code 0 under any K); the others
      // take the folded range encoder below.
      HWY_ALIGN uint32_t k2[kMaxBlocks];
      bool low = false;
      // (bf16: Encode64Bf16's K2, TableCodec::Bf16K.)
      using K2Codec = std::conditional_t<kBf16, typename TableCodec::Bf16K, TableCodec>;
      if (!table_k2(static_cast<K2Codec*>(nullptr), k2, low)) return false;
      if (!low && (!kBf16 || nvalid == nb * kBlock)) {
        if (padded) {
          EncodeChunkTable<true>(src, k2, nb, out, a.prefetch_l2);
        } else {
          EncodeChunkTable<false>(src, k2, nb, out, a.prefetch_l2);
        }
        return true;
      }
    }
#endif
#ifdef MXPACK_HAVE_MX_FP8_BF16
    if constexpr (kFp8Table) {
      // MXFP8 from bf16: the table codec's K per block (any for blocks of
      // amax 0, all +-0), for chunks whose every nonzero block has X >=
      // kMinX; the others take the folded range encoder below.
      HWY_ALIGN uint32_t k2[kMaxBlocks];
      bool low = false;
      if (!table_k2(static_cast<Fp8Table*>(nullptr), k2, low)) return false;
      if (!low && nvalid == nb * kBlock) {
        EncodeChunkFp8Table(src, k2, nb, out, a.prefetch_l2);
        return true;
      }
    }
#endif
#ifdef MXPACK_HAVE_RANGE_ENCODE
    if constexpr (kRange) {
      // The folded constants (RangeFoldAt) for x = s, 0 for blocks of amax
      // 0; the max (the clamp) is not needed without Inf elements.
      __mmask16 bad = 0;
      const bool finite = codes([&](size_t b, __m512i bits, __m512i s) {
        const __mmask16 nonzero = _mm512_test_epi32_mask(bits, bits);
        bad |= Scale::template StoreFoldConsts<false>(b, _mm512_maskz_mov_epi32(nonzero, s), nonzero, fold);
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



#if HWY_TARGET == HWY_AVX3_DL
  // Pass 1 of MX from bf16 (32-element blocks, one per vector) on AVX3_DL:
  // BlockMaxima's max tree (src/mx/chunk_read-inl.h), its first level
  // taking the raw bf16 bits of two blocks lo, hi without a prior AND:
  // per u32 lane k, vpshldd(hi, lo, 17) = (2 |lo[2k + 1]| + s, 2 |hi[2k]| +
  // s') (each u16 gets the magnitude doubled and some sign bit below it)
  // and the blend (lo[2k], hi[2k + 1]) doubled by one add (sign shifted
  // out), so the u16 maxima of both are 2 max |x| or 2 max |x| + 1; the
  // last level halves them. 4 operations per two blocks instead of 5.
  template <int kLevel, bool kPartial>
  static HWY_INLINE __m512i Bf16MaxTree(const uint16_t* HWY_RESTRICT s16, size_t nb, size_t j0) {
    if constexpr (kLevel == 1) {
      const auto load = [&](size_t j) {
        return kPartial && j >= nb ? _mm512_setzero_si512() : _mm512_loadu_si512(s16 + 32 * j);
      };
      __m512i lo = load(j0);
      __m512i hi = load(j0 + 1);
      // One load per block: GCC would otherwise fold the load into both
      // uses, two 64-byte loads per block.
      asm("" : "+v"(lo), "+v"(hi));  // NOLINT(hicpp-no-assembler)
      const __m512i same = _mm512_mask_blend_epi16(0xAAAAAAAAu, lo, hi);
      return _mm512_max_epu16(_mm512_shldi_epi32(hi, lo, 17), _mm512_add_epi16(same, same));
    } else {
      const __m512i l = Bf16MaxTree<kLevel - 1, kPartial>(s16, nb, j0);
      const __m512i h = Bf16MaxTree<kLevel - 1, kPartial>(s16, nb, j0 + (size_t{1} << (kLevel - 1)));
      // BlockMaxima's u32 butterfly (U32Butterfly, src/mx/chunk_read-inl.h).
      const U32Butterfly<kLevel - 2> b(l, h);
      return _mm512_max_epu16(b.same, b.partner);
    }
  }

  // amax16[b] = max |x| bits of block b < nb (0 for the missing blocks of
  // the last group of 32), by Bf16MaxTree.
  static HWY_NOINLINE void Bf16BlockMaxima(const uint16_t* HWY_RESTRICT s16, size_t nb,
                                           uint16_t* HWY_RESTRICT amax16) {
    size_t g = 0;
    for (; g + 32 <= nb; g += 32) {
      _mm512_store_si512(amax16 + g,
                         _mm512_srli_epi16(Bf16MaxTree<5, false>(s16 + 32 * g, 32, 0), 1));
    }
    if (g < nb) {
      _mm512_store_si512(amax16 + g,
                         _mm512_srli_epi16(Bf16MaxTree<5, true>(s16 + 32 * g, nb - g, 0), 1));
    }
  }
#endif

#ifdef MXPACK_HAVE_MX_E2M1_BF16
  // The table codec of MXFP4 (MxE2m1FromBf16) and MXFP6 (MxFp6FromBf16)
  // on AVX3_DL, from bf16 and (F32Halves) f32.
  static constexpr bool kTableCodec = !kNvfp4 && (kElem == Format::kE2M1 || kElemT.bits == 6);
  using TableCodec = std::conditional_t<kElem == Format::kE2M1, MxE2m1FromBf16,
                                        MxFp6FromBf16<kElemT.bits == 6 ? kElem : Format::kE2M3>>;

  // EncodeChunkHalves' MXFP4 step: MxE2m1FromBf16's table lookup for 64
  // elements (two blocks) at once. Its u16 indices (< 128) of the two
  // blocks pack into one byte vector (vpackuswb: per 128-bit lane L,
  // bytes 0..7 the first block's elements 8 L .. 8 L + 7, bytes 8..15 the
  // second's), one vpermi2b looks up all 64 codes, and one vpermb puts
  // them in order; for b4x16_p64 the table holds code | code << 4, so
  // bits 4..11 of each u16 pair of codes (a, b) are a | b << 4, which one
  // vpmultishiftqb gathers into bytes 0..3 of each u64 before the vpermb
  // (which zeroes the padding bytes). One lookup, one multishift and one
  // single-table permute per 64 elements instead of two lookups, two
  // pmaddwd and a two-table permute (MxE2m1FromBf16::Pack).
  struct E2m1Bytes64 {
    __m512i table_lo, table_hi, shifts, order, one, z_add;

    template <bool kPadded>
    static HWY_INLINE E2m1Bytes64 Make(const typename TableCodec::Consts& k) {
      struct Table {
        alignas(64) uint8_t v[64];
      };
      // The byte of the packed vector holding element e of the step
      // (kPadded: of the nibble pair e, e + 1 for even e), per output byte.
      static constexpr Table kOrder = [] {
        Table t{};
        const auto packed = [](int e) { return PackedByte(e); };
        for (int o = 0; o < 64; ++o) {
          if (!kPadded) {
            t.v[o] = static_cast<uint8_t>(packed(o));
          } else {
            // Group g = o / 16: bytes 0..7 hold the pairs of elements
            // 16 g .. 16 g + 15; multishift left pair (e, e + 1) of the
            // u64 at byte packed(e) & ~7 in byte (packed(e) % 8) / 2.
            const int e = 16 * (o / 16) + 2 * (o % 8);
            t.v[o] = static_cast<uint8_t>((packed(e) & ~7) + (packed(e) % 8) / 2);
          }
        }
        return t;
      }();
      E2m1Bytes64 r;
      r.table_lo = kPadded ? _mm512_or_si512(k.table_lo, _mm512_slli_epi16(k.table_lo, 4))
                           : k.table_lo;
      r.table_hi = kPadded ? _mm512_or_si512(k.table_hi, _mm512_slli_epi16(k.table_hi, 4))
                           : k.table_hi;
      // Bits 4, 20, 36, 52 into bytes 0..3 (the rest unused).
      r.shifts = _mm512_set1_epi64(0x0000000034241404LL);
      r.order = _mm512_load_si512(kOrder.v);
      r.one = _mm512_set1_epi16(1);
      r.z_add = k.z;
      return r;
    }

    // MxE2m1FromBf16::Codes32's table index (((a -sat K) >> 5) << 1 | s,
    // + 64 at z) of the 32 values r = a << 1 | s of one block in
    // F32HalvesPass12's rotated form; k2: 2K in both u16 halves. a >= K
    // exactly when r >= 2K, so w = r -sat 2K is 2 (a - K) + s or 0, whose
    // bits 6.. are (a -sat K) >> 5; one bit select keeps them as bits 1..
    // and takes bit 0 (s) from r.
    HWY_INLINE __m512i Index32(__m512i r, __mmask32 z, __m512i k2) const {
      const __m512i w = _mm512_subs_epu16(r, k2);
      // imm 0xD8: C ? B : A per bit (A = w >> 5, B = r, C = 1).
      const __m512i idx = _mm512_ternarylogic_epi32(_mm512_srli_epi16(w, 5), r, one, 0xD8);
      return _mm512_mask_add_epi16(idx, z, idx, z_add);
    }

    // The 64 codes (one per byte, or kPadded b4x16_p64 groups) of the
    // indices of two blocks.
    template <bool kPadded>
    HWY_INLINE __m512i Encode(__m512i ia, __m512i ib) const {
      const __m512i c = _mm512_permutex2var_epi8(table_lo, _mm512_packus_epi16(ia, ib), table_hi);
      if constexpr (kPadded) {
        return _mm512_maskz_permutexvar_epi8(0x00FF00FF00FF00FFull, order,
                                             _mm512_multishift_epi64_epi8(shifts, c));
      } else {
        return _mm512_permutexvar_epi8(order, c);
      }
    }
  };

  // The byte at which vpackuswb of the u16 vectors of two blocks leaves
  // element e (0..63) of the pair: per 128-bit lane L, bytes 0..7 the
  // first block's elements 8 L .. 8 L + 7, bytes 8..15 the second's.
  static constexpr int PackedByte(int e) { return 16 * ((e % 32) / 8) + 8 * (e / 32) + e % 8; }

  // EncodeChunkHalves' MXFP6 step: MxFp6FromBf16's lookups for 64
  // elements (two blocks) at once, as E2m1Bytes64: the u16 indices (< 128)
  // of both blocks packed into one byte vector (PackedByte order), one
  // vpermi2b per table (inside / at z), the z flags and the signs as
  // 64-bit masks in the same order (pdep of each block's 32 bits), one
  // byte blend and one masked add of the sign (s << 5). Then b6x16_p32:
  // pmaddubsw forms code a | b << 6 of each byte pair, pmaddwd the 24 bits
  // of four codes per u32 lane (a | b << 6 | c << 12 | d << 18, three
  // bytes little-endian), and one vpermb gathers the three low bytes of
  // each u32 into the 12-byte groups (the padding bytes zeroed); codes:
  // one vpermb into element order. Two lookups and 3 packing operations
  // per 64 elements instead of four lookups and 7 (MxFp6FromBf16::Codes32
  // and Pack).
  struct Fp6Bytes64 {
    __m512i inside_lo, inside_hi, at_z_lo, at_z_hi, order, one;

    template <bool kPadded>
    static HWY_INLINE Fp6Bytes64 Make(const typename TableCodec::Consts& k) {
      struct Table {
        alignas(64) uint8_t v[64];
      };
      static constexpr Table kOrder = [] {
        Table t{};
        for (int o = 0; o < 64; ++o) {
          if (!kPadded) {
            t.v[o] = static_cast<uint8_t>(PackedByte(o));
          } else {
            // Group g = o / 16: bytes 0..11 hold quads j = 0..3 of
            // elements 16 g + 4 j .. + 3, three bytes each, from the u32
            // lane whose bytes PackedByte(16 g + 4 j) & ~3 ..
            // (bytes 12..15 are zeroed; any index).
            const int g = o / 16, m = o % 16;
            const int quad = PackedByte(16 * g + 4 * (m / 3 % 4));
            t.v[o] = static_cast<uint8_t>(m < 12 ? (quad & ~3) + m % 3 : 0);
          }
        }
        return t;
      }();
      return {k.inside_lo, k.inside_hi, k.at_z_lo,
              k.at_z_hi, _mm512_load_si512(kOrder.v), _mm512_set1_epi16(1)};
    }

    // MxFp6FromBf16::Codes32's table index (a -sat K) >> kShift of the 32
    // values r = a << 1 | s of one block in F32HalvesPass12's rotated form
    // (k2: 2K in both u16 halves): r -sat 2K is 2 (a - K) + s or 0 (as
    // E2m1Bytes64::Index32).
    static HWY_INLINE __m512i Index32(__m512i r, __m512i k2) {
      return _mm512_srli_epi16(_mm512_subs_epu16(r, k2), TableCodec::kShift + 1);
    }

    // Two blocks' 32-bit lane masks as one 64-bit mask in PackedByte order.
    static HWY_INLINE __mmask64 Packed(uint32_t a, uint32_t b) {
      return _cvtu64_mask64(_pdep_u64(a, 0x00FF00FF00FF00FFull) |
                            _pdep_u64(b, 0xFF00FF00FF00FF00ull));
    }

    // The 64 codes (one per byte, or kPadded b6x16_p32 groups) of two
    // blocks: their values ra, rb (rotated form: the sign in bit 0),
    // indices ia, ib and z flags za, zb.
    template <bool kPadded>
    HWY_INLINE __m512i Encode(__m512i ra, __m512i rb, __m512i ia, __m512i ib, uint32_t za,
                              uint32_t zb) const {
      const __m512i p = _mm512_packus_epi16(ia, ib);
      __m512i c = _mm512_mask_blend_epi8(Packed(za, zb),
                                         _mm512_permutex2var_epi8(inside_lo, p, inside_hi),
                                         _mm512_permutex2var_epi8(at_z_lo, p, at_z_hi));
      const __mmask64 s = Packed(_cvtmask32_u32(_mm512_test_epi16_mask(ra, one)),
                                 _cvtmask32_u32(_mm512_test_epi16_mask(rb, one)));
      c = _mm512_mask_add_epi8(c, s, c, _mm512_set1_epi8(0x20));
      if constexpr (kPadded) {
        const __m512i pairs = _mm512_maddubs_epi16(c, _mm512_set1_epi16(0x4001));
        const __m512i quads = _mm512_madd_epi16(pairs, _mm512_set1_epi32(0x10000001));
        return _mm512_maskz_permutexvar_epi8(0x0FFF0FFF0FFF0FFFull, order, quads);
      } else {
        return _mm512_permutexvar_epi8(order, c);
      }
    }
  };

  // f32 into MXFP4 / MXFP6 under the floor scale mode, all three passes
  // for chunks that FastTail would send to EncodeChunkTable (no Inf or NaN
  // element, every nonzero block with X >= kMinX), with pass 3 reading the
  // F32Halves form of the chunk that pass 1 leaves in L1: pass 1 narrows
  // each block once (high halves and z flags, F32HalvesPass12) and takes
  // the amax of the high halves, pass 3 then encodes from the buffer
  // (EncodeChunkHalves) instead of loading, narrowing and testing the f32
  // values a second time. False, with nothing final written, for the other
  // chunks, which Run then quantizes from the f32 values.
  static HWY_NOINLINE bool RunF32Halves(const internal::MxBlockArgs& a,
                                        const uint8_t* HWY_RESTRICT src, size_t nb, bool padded,
                                        uint8_t* HWY_RESTRICT out,
                                        uint8_t* HWY_RESTRICT scale_codes) {
    if (a.scale.emax < 2) return false;  // (every MX element has emax >= 2)
    // One block more than the chunk: the zero block of an odd last step.
    HWY_ALIGN uint16_t halves[(kMaxBlocks + 1) * kBlock];
    HWY_ALIGN uint32_t zbits[kMaxBlocks + 1];
    HWY_ALIGN uint32_t k2[kMaxBlocks];
    if (!F32HalvesPass12(a.scale.emax, src, nb, halves, zbits, scale_codes, k2)) return false;
    if (padded) {
      EncodeChunkHalves<true>(src, halves, zbits, k2, nb, out, a.prefetch_l2);
    } else {
      EncodeChunkHalves<false>(src, halves, zbits, k2, nb, out, a.prefetch_l2);
    }
    return true;
  }

  // Passes 1 and 2 of RunF32Halves, 32 blocks at a time. Pass 1: per block
  // b, its 32 values in F32Halves form, the high halves h = s << 15 | a
  // rotated to r = a << 1 | s (at halves + 32 b; the rotation serves both
  // the max tree, as |x| without an AND, and pass 3's Index32) and the z
  // flags (zbits[b], bit j: lane j); the max tree leaves m = max r of 32
  // blocks in one u16 vector, and m = 2 A or 2 A + 1 with A the high half
  // of amax, the largest |x| with its low 16 bits cleared. After an odd nb,
  // block nb is +0 (r 0, z 0). Truncation keeps the order of magnitudes
  // and every exponent field, so the floor scale code (the exponent of
  // amax: docs/semantics.md section 5), the Inf / NaN detection and the X
  // >= kMinX check read the same values as from the f32 amax. A block
  // whose truncated amax is 0 but that holds f32 subnormals (all below
  // 2^-133) gets scale code 0 from both and is then treated as all +-0
  // (any K): the codes agree, as at scale 2^-127 its |y| < 2^-6 lie below
  // half the smallest subnormal of e2m1, e2m3 and e3m2 (code +-0 by sign),
  // which the table codecs give for high halves of +-0 under any K.
  //
  // Pass 2, on m in the same u16 lanes: with E = m >> 8 the biased
  // exponent of amax, the floor scale exponent is X = E - 127 - emax, the
  // scale code max(E - emax, 0) (0 for amax 0 and f32 subnormals; X >=
  // kMinX > -127 otherwise), and Index32's 2K = (X - kMinX) << 8 =
  // (m & 0xFF00) - (E0 << 8), E0 = 127 + emax + kMinX, stored in both u16
  // halves of k2[b] (one broadcast per block); for a block of amax 0 (every
  // r 0 or 1, so r -sat 2K <= 1 and its index only the sign) any 2K
  // serves. False, with nothing final written, when a block holds Inf or
  // NaN (A >= 0x7F80: m >= 0xFF00) or a nonzero block (m >= 2) has X <
  // kMinX (m < E0 << 8).
  static HWY_INLINE bool F32HalvesPass12(int emax, const uint8_t* HWY_RESTRICT src, size_t nb,
                                         uint16_t* HWY_RESTRICT halves,
                                         uint32_t* HWY_RESTRICT zbits,
                                         uint8_t* HWY_RESTRICT scale_codes,
                                         uint32_t* HWY_RESTRICT k2) {
    const hn::CappedTag<uint16_t, kBlock> d16;
    static_assert(hn::MaxLanes(d16) == kBlock, "one block per u16 vector");
    constexpr size_t kLevels = MaxTreeLevels(hn::MaxLanes(d16));
    static_assert(kMaxBlocks % 32 == 0, "whole groups of 32 blocks per full chunk");
    const F32Halves f = TableCodec::template Make<false>().f32;
    const int e0 = 127 + emax + TableCodec::kMinX;  // >= 5 (emax >= 2, kMinX >= -124)
    const __m512i e0_hi = _mm512_set1_epi16(static_cast<int16_t>(e0 << 8));
    const __m512i high_byte = _mm512_set1_epi16(static_cast<int16_t>(0xFF00));
    const __m512i two = _mm512_set1_epi16(2);
    const __m512i emax16 = _mm512_set1_epi16(static_cast<int16_t>(emax));
    __mmask32 bad = 0;
    const auto group = [&](size_t g, auto partial) {
      const auto load = [&](size_t j, size_t /*i*/) {
        const size_t b = g + j;
        // Each f32 vector loaded once (GCC would fold the load into both
        // the test and the permute).
        __m512i x0 = _mm512_loadu_si512(src + b * kBlock * kSrcBytes);
        __m512i x1 = _mm512_loadu_si512(src + b * kBlock * kSrcBytes + 64);
        asm("" : "+v"(x0), "+v"(x1));  // NOLINT(hicpp-no-assembler)
        const __m512i h = _mm512_permutex2var_epi16(x0, f.high_idx, x1);
        const __m512i r = _mm512_shldi_epi16(h, h, 1);  // rotate: a << 1 | s
        _mm512_store_si512(halves + b * kBlock, r);
        // The two 16-bit halves of zbits[b] (little-endian: lanes 0..15
        // first), stored apart instead of joined in a mask register.
        _store_mask16(reinterpret_cast<__mmask16*>(zbits + b),
                      _mm512_testn_epi32_mask(x0, f.low));
        _store_mask16(reinterpret_cast<__mmask16*>(zbits + b) + 1,
                      _mm512_testn_epi32_mask(x1, f.low));
        return hn::Vec<decltype(d16)>{r};
      };
      // Lane j: block g + j (0 past nb).
      const __m512i m = MaxTree<kBlock, kLevels, decltype(partial)::value>(d16, nb - g, 0, load).raw;
      bad |= _mm512_cmpge_epu16_mask(m, high_byte) |
             _mm512_mask_cmplt_epu16_mask(_mm512_cmpge_epu16_mask(m, two), m, e0_hi);
      const __m512i code = _mm512_subs_epu16(_mm512_srli_epi16(m, 8), emax16);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(scale_codes + g), _mm512_cvtepi16_epi8(code));
      const __m512i k = _mm512_sub_epi16(_mm512_and_si512(m, high_byte), e0_hi);
      const __m512i k_lo = _mm512_cvtepu16_epi32(_mm512_castsi512_si256(k));
      const __m512i k_hi = _mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(k, 1));
      // Whole groups: k2 has room (g + 32 <= kMaxBlocks), and the codes
      // of a partial group end at most 31 blocks past block nb - 1 (the
      // driver leaves kMxChunkBlocks of room past a chunk's codes).
      _mm512_store_si512(k2 + g, _mm512_or_si512(k_lo, _mm512_slli_epi32(k_lo, 16)));
      _mm512_store_si512(k2 + g + 16, _mm512_or_si512(k_hi, _mm512_slli_epi32(k_hi, 16)));
    };
    size_t g = 0;
    for (; g + 32 <= nb; g += 32) group(g, std::false_type());
    if (g < nb) group(g, std::true_type());
    if (nb % 2 != 0) {
      _mm512_store_si512(halves + nb * kBlock, _mm512_setzero_si512());
      zbits[nb] = 0;
    }
    return bad == 0;
  }

  // Pass 3 of RunF32Halves: EncodeChunkTable's steps on the F32Halves form
  // of F32HalvesPass12 (the input at src only prefetched for the next
  // chunk); an odd last block pairs with the zero block after it.
  template <bool kPadded>
  static HWY_NOINLINE void EncodeChunkHalves(const uint8_t* HWY_RESTRICT src,
                                             const uint16_t* HWY_RESTRICT halves,
                                             const uint32_t* HWY_RESTRICT zbits,
                                             const uint32_t* HWY_RESTRICT k2, size_t nb,
                                             uint8_t* HWY_RESTRICT out, bool prefetch_l2) {
    static_assert(kBlock == 32, "two blocks per step");
    const size_t n = nb * kBlock;
    const typename TableCodec::Consts k = TableCodec::template Make<kPadded>();
    const auto bytes64 = [&k] {
      if constexpr (kElem == Format::kE2M1) {
        return E2m1Bytes64::template Make<kPadded>(k);
      } else {
        return Fp6Bytes64::template Make<kPadded>(k);
      }
    }();
    const auto encode64 = [&](size_t b, __m512i ka, __m512i kb) {
      const __m512i ha = _mm512_load_si512(halves + b * kBlock);
      const __m512i hb = _mm512_load_si512(halves + (b + 1) * kBlock);
      if constexpr (kElem == Format::kE2M1) {
        return bytes64.template Encode<kPadded>(
            bytes64.Index32(ha, static_cast<__mmask32>(zbits[b]), ka),
            bytes64.Index32(hb, static_cast<__mmask32>(zbits[b + 1]), kb));
      } else {
        return bytes64.template Encode<kPadded>(ha, hb, Fp6Bytes64::Index32(ha, ka),
                                                Fp6Bytes64::Index32(hb, kb), zbits[b],
                                                zbits[b + 1]);
      }
    };
    const auto whole_steps = [&](auto l2) {
      size_t i = 0;
      for (; i + 64 <= n; i += 64) {
        PrefetchNextChunk(src + kSrcBytes * i, kSrcBytes * n, 64 * kSrcBytes, l2);
        const size_t b = i / kBlock;
        _mm512_storeu_si512(out + i, encode64(b, _mm512_set1_epi32(static_cast<int>(k2[b])),
                                              _mm512_set1_epi32(static_cast<int>(k2[b + 1]))));
      }
      return i;
    };
    const size_t i = prefetch_l2 ? whole_steps(std::true_type()) : whole_steps(std::false_type());
    if (i == n) return;
    // One block left: the zero block after it gives code 0 under any K.
    HWY_ALIGN uint8_t out_buf[64];
    const __m512i kl = _mm512_set1_epi32(static_cast<int>(k2[nb - 1]));
    _mm512_store_si512(out_buf, encode64(nb - 1, kl, kl));
    std::memcpy(out + i, out_buf, n - i);
  }

  // Pass 3 of MXFP4 / MXFP6 without Inf or NaN elements (FastTail): 64
  // elements (two blocks) per step by TableCodec::Encode64Bf16 (bf16) or
  // by TableCodec::Codes32 on each block's F32Halves halves and Pack (f32),
  // then an odd last block through zero-padded buffers. k2:
  // TableCodec::K2 of each block's scale (bf16: TableCodec::Bf16K::K2).
  // (Integer and table operations only: MXCSR plays no part.)
  template <bool kPadded>
  static HWY_NOINLINE void EncodeChunkTable(const uint8_t* HWY_RESTRICT src,
                                            const uint32_t* HWY_RESTRICT k2, size_t nb,
                                            uint8_t* HWY_RESTRICT out, bool prefetch_l2) {
    const typename TableCodec::Consts k = TableCodec::template Make<kPadded>();
    const auto encode64 = [&k](const uint8_t* HWY_RESTRICT p, __m512i ka, __m512i kb) {
      if constexpr (kBf16) {
        return TableCodec::template Encode64Bf16<kPadded>(p, ka, kb, k);
      } else {
        // Each block's F32Halves form (its high halves by one vpermt2w,
        // z from the low bits), with each f32 vector loaded once: without
        // the register constraint GCC folds the load into both the test
        // and the permute (eight loads per 64 elements instead of four).
        __m512i x[4];
        for (int j = 0; j < 4; ++j) {
          x[j] = _mm512_loadu_si512(p + 64 * j);
          asm("" : "+v"(x[j]));  // NOLINT(hicpp-no-assembler)
        }
        const auto z_of = [&k](__m512i lo, __m512i hi) {
          return _mm512_kunpackw(_mm512_testn_epi32_mask(hi, k.f32.low),
                                 _mm512_testn_epi32_mask(lo, k.f32.low));
        };
        const __m512i ha = _mm512_permutex2var_epi16(x[0], k.f32.high_idx, x[1]);
        const __m512i hb = _mm512_permutex2var_epi16(x[2], k.f32.high_idx, x[3]);
        return TableCodec::template Pack<kPadded>(TableCodec::Codes32(ha, z_of(x[0], x[1]), ka, k),
                                                  TableCodec::Codes32(hb, z_of(x[2], x[3]), kb, k),
                                                  k);
      }
    };
    K2Steps64<kSrcBytes>(src, nb, k2, out, prefetch_l2, encode64);
  }
#endif

#if HWY_TARGET == HWY_AVX3_DL
  // The driver of the table codecs' pass 3: stores codes64(p, i, tail), the
  // 64 codes of the 64 elements of kBytes bytes at p (elements i .. i + 63
  // of the chunk of n at src), for every whole step (p in src, tail
  // std::false_type), then for the last 1..63 elements from a zero-padded
  // copy (p the copy, tail std::true_type: blocks past n are +0 there),
  // storing only their codes.
  template <size_t kBytes, class Codes64>
  static HWY_INLINE void Steps64(const uint8_t* HWY_RESTRICT src, size_t n,
                                 uint8_t* HWY_RESTRICT out, bool prefetch_l2,
                                 const Codes64& codes64) {
    const auto whole_steps = [&](auto l2) {
      size_t i = 0;
      for (; i + 64 <= n; i += 64) {
        PrefetchNextChunk(src + kBytes * i, kBytes * n, 64 * kBytes, l2);
        _mm512_storeu_si512(out + i, codes64(src + kBytes * i, i, std::false_type()));
      }
      return i;
    };
    const size_t i = prefetch_l2 ? whole_steps(std::true_type()) : whole_steps(std::false_type());
    if (i == n) return;
    HWY_ALIGN uint8_t in_buf[64 * kBytes] = {};
    HWY_ALIGN uint8_t out_buf[64];
    std::memcpy(in_buf, src + kBytes * i, kBytes * (n - i));
    _mm512_store_si512(out_buf, codes64(in_buf, i, std::true_type()));
    std::memcpy(out + i, out_buf, n - i);
  }

  // Steps64 for the MX codecs of two blocks per step: encode64(p, ka, kb)
  // with ka, kb the blocks' k2 broadcast; an odd last block pairs with the
  // +0 block after it under its own k2 (code 0 under any K).
  template <size_t kBytes, class Encode64>
  static HWY_INLINE void K2Steps64(const uint8_t* HWY_RESTRICT src, size_t nb,
                                   const uint32_t* HWY_RESTRICT k2, uint8_t* HWY_RESTRICT out,
                                   bool prefetch_l2, const Encode64& encode64) {
    static_assert(kBlock == 32, "two blocks per step");
    Steps64<kBytes>(src, nb * kBlock, out, prefetch_l2,
                    [&](const uint8_t* HWY_RESTRICT p, size_t i, auto tail) {
                      const size_t b = i / kBlock;
                      const __m512i ka = _mm512_set1_epi32(static_cast<int>(k2[b]));
                      if constexpr (decltype(tail)::value) {
                        return encode64(p, ka, ka);
                      } else {
                        return encode64(p, ka, _mm512_set1_epi32(static_cast<int>(k2[b + 1])));
                      }
                    });
  }

  // NVFP4's four scale codes of the step at element i: in place for a
  // whole step, else copied into `buf` with the missing blocks (+0
  // elements) given block nb - 1's code (a filled row).
  template <class Tail>
  static HWY_INLINE const uint8_t* StepCodes4(const uint8_t* HWY_RESTRICT codes, size_t i,
                                              size_t nb, Tail /*tail*/, uint8_t* buf) {
    if constexpr (!Tail::value) {
      return codes + i / kBlock;
    } else {
      for (size_t j = 0; j < 4; ++j) buf[j] = codes[HWY_MIN(i / kBlock + j, nb - 1)];
      return buf;
    }
  }
#endif

#ifdef MXPACK_HAVE_MX_FP8_BF16
  // The table codec of MXFP8 from bf16 (MxFp8FromBf16) on AVX3_DL.
  static constexpr bool kFp8Table = !kNvfp4 && kBf16 && kElemT.bits == 8;
  using Fp8Table = MxFp8FromBf16<kElemT.bits == 8 ? kElem : Format::kE4M3>;

  // Pass 3 of MXFP8 from bf16 without Inf or NaN elements (FastTail): 64
  // elements (two blocks) per step by Fp8Table::Encode64, then an odd last
  // block through zero-padded buffers. k2: Fp8Table::K2 of each block's
  // scale. (Integer and table operations only: MXCSR plays no part.)
  static HWY_NOINLINE void EncodeChunkFp8Table(const uint8_t* HWY_RESTRICT src,
                                               const uint32_t* HWY_RESTRICT k2, size_t nb,
                                               uint8_t* HWY_RESTRICT out, bool prefetch_l2) {
    const typename Fp8Table::Consts k = Fp8Table::Make();
    K2Steps64<2>(src, nb, k2, out, prefetch_l2,
                 [&](const uint8_t* HWY_RESTRICT p, __m512i ka, __m512i kb) {
                   return Fp8Table::Encode64(reinterpret_cast<const uint16_t*>(p), ka, kb, k);
                 });
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
                    thr != nullptr ? Exact::ThresholdCodes<true>(Load(DU(), src + i * kSrcBytes, 0),
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
    // Folded MX blocks of bf16 (32 values, one vector): the range encoder
    // takes the elements in unpack order (scaled_at), also for fp8 elements
    // (kDirect then serves the chunks that multiply).
    constexpr bool kUnpack = kRange && kFold && kBf16 && !kNvfp4 && kBlock == 32;
#ifdef MXPACK_HAVE_RANGE_ENCODE
    using Range = RangeEncodeF32<kElem>;
    // Range encoder input: vector k of the step at p (element i), scaled
    // (unless kFold: then the bits as loaded).
    const auto scaled_at = [&](const uint8_t* p, size_t i, size_t k, auto tail) -> __m512i {
      if constexpr (kUnpack) {
        (void)i;
        (void)tail;
        // bf16: the block's 32 values in one vector, widened to f32 bits by
        // unpacking with zeros (lanes in unpack order, which the encoder's
        // gather undoes: RangeEncodeF32's kUnpacked).
        const __m512i v = _mm512_loadu_si512(p + (k / 2) * 64);
        return k % 2 == 0 ? _mm512_unpacklo_epi16(_mm512_setzero_si512(), v)
                          : _mm512_unpackhi_epi16(_mm512_setzero_si512(), v);
      } else if constexpr (kFold) {
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
      const auto codes = [&](size_t k) {
        return Exact::ThresholdCodes<kZeroInf>(Load(du, p + k * N * kSrcBytes, 0), row(k));
      };
      return U8From4U32(du, codes(0), codes(1), codes(2), codes(3));
    };
    const auto codes_at = [&](const uint8_t* p, size_t i, auto tail) {
#if HWY_ARCH_X86 && HWY_TARGET != HWY_EMU128 && HWY_TARGET != HWY_SCALAR  // as kDirect
      if constexpr (kDirect && !kUnpack) {
        // Two u16 vectors, each within one block (2N <= kBlock).
        const hn::Repartition<uint16_t, DU> d16;
        const size_t N16 = hn::Lanes(d16);
        const auto* s16 = reinterpret_cast<const uint16_t*>(p);
        const size_t b0 = block_at(i, 0, tail);
        const size_t b1 = block_at(i, 2, tail);  // element i + N16 = i + 2N
        hn::Vec<decltype(d16)> c0, c1;
        const auto odd0 = EncodeDirect<kElem>(d16, hn::LoadU(d16, s16), add2[b0], low2[b0], c0);
        const auto odd1 = EncodeDirect<kElem>(d16, hn::LoadU(d16, s16 + N16), add2[b1], low2[b1], c1);
        if (HWY_LIKELY(hn::AllFalse(d16, hn::Or(odd0, odd1)))) return U8From2U16(d16, c0, c1);
      }
#endif
#ifdef MXPACK_HAVE_RANGE_ENCODE
      if constexpr (kRange) {
        // MX: NaN lanes lie in NaN blocks, which finish() overrides (kNanFree).
        return hn::Vec<decltype(d8)>{Range::template Encode64<!kNvfp4, kClamp, kUnpack>(
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
          hn::StoreU(hn::Vec<decltype(d8)>{Range::template EncodeB4x16<!kNvfp4, kClamp, kUnpack>(
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


  // Passes 2 and 3 of NVFP4 under Nvfp4Arithmetic::kExact: the scale codes
  // (rn: ExactScaleCodesRn; other modes per block, as the reference), the
  // element thresholds of each block's code (Nvfp4ElementThresholds), then
  // the elements by comparison (ThresholdCodes). chunk_amax: the largest
  // amax bits of the chunk before the Inf blocks' finite amax (Inf or NaN
  // elements: at or above 0x7F800000).
  static HWY_NOINLINE void RunExactNvfp4(const internal::MxBlockArgs& a,
                                         const uint8_t* HWY_RESTRICT src, size_t nb,
                                         size_t nvalid, bool padded, uint8_t* HWY_RESTRICT out,
                                         uint8_t* HWY_RESTRICT scale_codes,
                                         const uint32_t* HWY_RESTRICT amax, uint32_t chunk_amax) {
    const bool inf = chunk_amax >= 0x7F800000u;
    uint32_t span[2] = {0x7F, 0};  // the smallest and largest scale code
    if (a.mode == ScaleMode::kEven) {
#if HWY_TARGET == HWY_AVX3_DL
      internal::Nvfp4ThresholdTable& tab = *a.thresholds;
      if (kBf16 && tab.amax_e0 == 0) {
        tab.amax_e0 = Exact::BuildBf16AmaxCodes(a.tensor_scale, tab.amax_code);
      }
      if (!kBf16 && tab.f32_amax_e0 == 0) {
        tab.f32_amax_e0 = Exact::BuildF32AmaxCodes(a.tensor_scale, tab.ue4m3, tab.f32_amax_code,
                                                   tab.f32_amax_low);
      }
      if (kBf16 && tab.amax_e0 > 0) {
        Exact::ExactScaleCodesRnTable<false>(amax, nb, a.tensor_scale, tab.amax_e0,
                                             tab.amax_code, nullptr, scale_codes, span);
      } else if (!kBf16 && tab.f32_amax_e0 > 0) {
        Exact::ExactScaleCodesRnTable<true>(amax, nb, a.tensor_scale, tab.f32_amax_e0,
                                            tab.f32_amax_code, tab.f32_amax_low, scale_codes,
                                            span);
      } else {
        Exact::ExactScaleCodesRnNoMxcsr(amax, nb, a.tensor_scale, scale_codes, span);
      }
#elif HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
      Exact::ExactScaleCodesRnNoMxcsr(amax, nb, a.tensor_scale, scale_codes, span);
#elif HWY_ARCH_X86
      Exact::ExactScaleCodesRnNoDaz(amax, nb, a.tensor_scale, scale_codes, span);
#else
      Exact::ExactScaleCodesRn(amax, nb, a.tensor_scale, scale_codes, span);
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
    a.thresholds->Fill(span[0], span[1],
                       kBf16 ? internal::Nvfp4ThresholdTable::Extra::kBf16Rows
                             : internal::Nvfp4ThresholdTable::Extra::kRecip);
#if HWY_TARGET == HWY_AVX3_DL
    if constexpr (kBf16) {
      // bf16 in u16 lanes (Nvfp4ExactOps::Bf16Codes64) where no element is
      // Inf or NaN (bf16 chunks hold no row padding: the driver stages
      // ragged rows as f32).
      if (!inf && nvalid == nb * kBlock && a.thresholds->Bf16RowsCover(span[0], span[1])) {
        return padded ? EncodeChunkBf16Table<true>(src, nb, *a.thresholds, scale_codes, out,
                                                   a.prefetch_l2)
                      : EncodeChunkBf16Table<false>(src, nb, *a.thresholds, scale_codes, out,
                                                    a.prefetch_l2);
      }
      if (!inf && nvalid == nb * kBlock) {
        return padded ? EncodeChunkBf16<true>(src, nb, a.thresholds->thr16, scale_codes, out,
                                              a.prefetch_l2)
                      : EncodeChunkBf16<false>(src, nb, a.thresholds->thr16, scale_codes, out,
                                               a.prefetch_l2);
      }
    }
#endif
#if HWY_TARGET == HWY_AVX3_DL
    if constexpr (!kBf16) {
      // f32 through the reciprocal (EncodeChunkF32Recip) where no element
      // is Inf or NaN and every block's code has a reciprocal; without the
      // clamp where every |y| stays below 8 (RecipCovers).
      if (!inf) {
        float amax_f;
        std::memcpy(&amax_f, &chunk_amax, 4);
        const int cover = RecipCovers(
            scale_codes, nb, a.thresholds->recip_min_code,
            static_cast<double>(amax_f) <= 2880.0 * static_cast<double>(a.tensor_scale));
        const internal::Nvfp4ThresholdTable& tab = *a.thresholds;
        if (cover == 2) {
          return padded ? EncodeChunkF32Recip<true, false>(src, nb, tab, scale_codes, out,
                                                           a.prefetch_l2)
                        : EncodeChunkF32Recip<false, false>(src, nb, tab, scale_codes, out,
                                                            a.prefetch_l2);
        }
        if (cover == 1) {
          return padded ? EncodeChunkF32Recip<true, true>(src, nb, tab, scale_codes, out,
                                                          a.prefetch_l2)
                        : EncodeChunkF32Recip<false, true>(src, nb, tab, scale_codes, out,
                                                           a.prefetch_l2);
        }
      }
    }
#endif
    const bool any_nan = std::memchr(scale_codes, kNanScale, nb) != nullptr;
    EncodeChunk(src, nullptr, nullptr, nullptr, nb * kBlock, nvalid,
                any_nan ? scale_codes : nullptr, padded, out, a.prefetch_l2, nullptr,
                /*clamp=*/inf, a.thresholds->thr[0], scale_codes);
  }

#if HWY_TARGET == HWY_AVX3_DL
  // Pass 3 of NVFP4 kExact from bf16 without Inf or NaN elements: 64
  // elements (four blocks) per step by Nvfp4ExactOps::Bf16Codes64, then the
  // last 1..3 blocks through zero-padded buffers.
  template <bool kPadded>
  static HWY_NOINLINE void EncodeChunkBf16(const uint8_t* HWY_RESTRICT src, size_t nb,
                                           const uint16_t (*thr16)[8],
                                           const uint8_t* HWY_RESTRICT codes,
                                           uint8_t* HWY_RESTRICT out, bool prefetch_l2) {
    const typename Exact::Bf16Consts k = Exact::template MakeBf16Consts<kPadded>();
    Steps64<2>(src, nb * kBlock, out, prefetch_l2,
               [&](const uint8_t* HWY_RESTRICT p, size_t i, auto tail) {
                 uint8_t code_buf[4];
                 return Exact::Bf16Codes64<kPadded>(reinterpret_cast<const uint16_t*>(p), thr16,
                                                    StepCodes4(codes, i, nb, tail, code_buf), k);
               });
  }
#endif

#if HWY_TARGET == HWY_AVX3_DL
  // Pass 3 of NVFP4 kExact from bf16 without Inf or NaN elements whose
  // scale codes all have byte rows: 64 elements (four blocks) per step by
  // Nvfp4ExactOps::Bf16TableCodes64, then the last 1..3 blocks through
  // zero-padded buffers (+0 gives code 0 in any row).
  template <bool kPadded>
  static HWY_NOINLINE void EncodeChunkBf16Table(const uint8_t* HWY_RESTRICT src, size_t nb,
                                                const internal::Nvfp4ThresholdTable& tab,
                                                const uint8_t* HWY_RESTRICT codes,
                                                uint8_t* HWY_RESTRICT out, bool prefetch_l2) {
    static_assert(kMaxBlocks % 64 == 0, "whole vectors of block bytes");
    // The blocks' ebase and slot8 bytes (codes <= 0x7E: 7-bit vpermt2b
    // indices; lanes past nb read code 0).
    HWY_ALIGN uint8_t ebase[kMaxBlocks];
    HWY_ALIGN uint8_t slot8[kMaxBlocks];
    {
      const __m512i eb_lo = _mm512_load_si512(tab.bf16_ebase);
      const __m512i eb_hi = _mm512_load_si512(tab.bf16_ebase + 64);
      const __m512i sl_lo = _mm512_load_si512(tab.bf16_slot8);
      const __m512i sl_hi = _mm512_load_si512(tab.bf16_slot8 + 64);
      for (size_t b = 0; b < nb; b += 64) {
        const __mmask64 lanes = nb - b >= 64 ? ~__mmask64{0} : (__mmask64{1} << (nb - b)) - 1;
        const __m512i c = _mm512_maskz_loadu_epi8(lanes, codes + b);
        _mm512_store_si512(ebase + b, _mm512_permutex2var_epi8(eb_lo, c, eb_hi));
        _mm512_store_si512(slot8 + b, _mm512_permutex2var_epi8(sl_lo, c, sl_hi));
      }
    }
    const typename Exact::Bf16TableConsts k =
        Exact::template MakeBf16TableConsts<kPadded>(tab.bf16_base, tab.bf16_t1, tab.bf16_t2);
    // (The tail's blocks past nb read ebase / slot8 of code 0.)
    Steps64<2>(src, nb * kBlock, out, prefetch_l2,
               [&](const uint8_t* HWY_RESTRICT p, size_t i, auto /*tail*/) {
                 const size_t b = i / kBlock;
                 return Exact::template Bf16TableCodes64<kPadded>(
                     reinterpret_cast<const uint16_t*>(p), ebase + b, slot8 + b, k);
               });
  }

  // 0 unless every scale code of the nb blocks is 0 or at least min_code
  // (Nvfp4ThresholdTable::recip_min_code: a reciprocal exists); then 2 if
  // every code is also 0 or a ue4m3 normal below the maximum (8..0x7D), or
  // the maximum 0x7E with max_ok (the chunk's amax at most 2880 t), else 1.
  // In blocks of code 8..0x7D every mode rounds amax / (6 t) to a d at
  // least amax / (6 t) / (1 + 2^-3) (rz: less than one ulp of d below it;
  // rn, rp: closer or above), so |x| / (d t) <= 6.75; under code 0x7E with
  // amax / (6 t) <= 480 it is at most 6 * 480 / 448 < 6.5: every |y| lies
  // below 8 = 2^(emax + 1) (the reciprocal's and the product's rounding add
  // a few ulps), which EncodeChunkF32Recip's unclamped encoder requires.
  // (Code 0: R = 0, y = +-0, the thresholds' steps.)
  static HWY_INLINE int RecipCovers(const uint8_t* HWY_RESTRICT codes, size_t nb,
                                    unsigned min_code, bool max_ok) {
    const __m128i below = _mm_set1_epi8(static_cast<char>(min_code - 1));
    const __m128i one = _mm_set1_epi8(1);
    const __m128i eight = _mm_set1_epi8(8);
    // c - 8 (mod 256) above this: codes 1..7 and those above the range.
    const __m128i span = _mm_set1_epi8(static_cast<char>(max_ok ? 0x7E - 8 : 0x7D - 8));
    __mmask16 clamp = 0;
    for (size_t b = 0; b < nb; b += 16) {
      const __mmask16 lanes = nb - b >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << (nb - b)) - 1);
      const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(codes + b));
      // c - 1 wraps code 0 to 0xFF; codes 1..min_code - 1 lie below.
      if (_mm_mask_cmplt_epu8_mask(lanes, _mm_sub_epi8(c, one), below) != 0) return 0;
      clamp |= _mm_mask_cmpgt_epu8_mask(_mm_mask_test_epi8_mask(lanes, c, c),
                                        _mm_sub_epi8(c, eight), span);
    }
    return clamp == 0 ? 2 : 1;
  }

  // Pass 3 of NVFP4 kExact from f32 without Inf or NaN elements: 64
  // elements (four blocks) per step as y = x * R in f32 rounded toward zero
  // (explicit rz), R = Nvfp4ThresholdTable::recip[c] of the block's scale
  // code c (the smallest f32 at or above 1 / (d t)), encoded rn, satfinite.
  // So |x| R is at least the exact quotient |q|, and |y| is at least every
  // f32 at or below |q| and at most |q| (1 + 2^-23), 2 ulps above it. Every
  // e2m1 decision point m_i (0.25 .. 5) is an f32 with its low 21 bits
  // zero: an m_i at or below |q| stays at or below |y|, and one above |q|
  // but not above |y| lies at most 2 ulps below |y|. So where no |y| lies 0
  // to 7 ulps above such a value (its low 21 bits are 8 or more), q and y
  // lie strictly on the same side of every m_i, and rn(y) = rn(q). Other
  // steps take the thresholds (Nvfp4ExactOps::ThresholdCodes); among them
  // every step with a y of +-0 (a zero x, R = 0 for d t = 0 or for codes
  // without a reciprocal, an x that DAZ reads as 0, a flushed product). A
  // product beyond f32 max becomes +-f32 max (rz), which the clamping
  // encoder saturates like q. A subnormal y means |q| < 2^-126, which
  // encodes as +-0 like y. The caller keeps chunks with codes below
  // recip_min_code (RecipCovers), whose steps would all take the
  // thresholds, on the threshold path. !kClamp: every |y| lies below 8
  // (RecipCovers returned 2), so MX e2m1's table codec at scale exponent 0
  // (MxE2m1FromBf16, the bf16 high halves of y) encodes them, with z empty:
  // its buckets are 2^21 ulps of y wide, and a y at a bucket's lower end
  // (low 21 bits zero) is among those the window sends to the thresholds.
  // kClamp: RangeEncodeF32 with its clamp.
  template <bool kPadded, bool kClamp>
  static HWY_NOINLINE void EncodeChunkF32Recip(const uint8_t* HWY_RESTRICT src, size_t nb,
                                               const internal::Nvfp4ThresholdTable& tab,
                                               const uint8_t* HWY_RESTRICT codes,
                                               uint8_t* HWY_RESTRICT out, bool prefetch_l2) {
    using Range = RangeEncodeF32<Format::kE2M1>;
    constexpr int kRz = _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC;
    const size_t n = nb * kBlock;
    __m512i window = _mm512_set1_epi32(0x1FFFF8);
    typename Range::Consts k = Range::Unscaled();
    // Kept in registers: GCC would rebuild them in every step.
    asm volatile("" : "+v"(window), "+v"(k.max), "+v"(k.offset), "+v"(k.sub));
    const MxE2m1FromBf16::Consts tk = MxE2m1FromBf16::Make<kPadded>();
    const __m512i tk2 = MxE2m1FromBf16::K2(_mm512_setzero_si512());
    const auto step = [&](const uint8_t* HWY_RESTRICT p, const uint8_t* HWY_RESTRICT c) {
      const auto* x = reinterpret_cast<const float*>(p);
      __m512i y[4];
      __mmask16 near = 0;
      for (int k = 0; k < 4; ++k) {
        y[k] = _mm512_castps_si512(
            _mm512_mul_round_ps(_mm512_loadu_ps(x + 16 * k), _mm512_set1_ps(tab.recip[c[k]]), kRz));
        near |= _mm512_testn_epi32_mask(y[k], window);
      }
      if (HWY_LIKELY(near == 0)) {
        if constexpr (!kClamp) {
          // Every |y| < 8 and no y at a bucket's lower end (its bits below
          // the bucket, 0..20, would be zero): MX e2m1's table codec at
          // scale exponent 0 on the high halves, z empty.
          const __m512i ha = _mm512_permutex2var_epi16(y[0], tk.f32.high_idx, y[1]);
          const __m512i hb = _mm512_permutex2var_epi16(y[2], tk.f32.high_idx, y[3]);
          return MxE2m1FromBf16::Pack<kPadded>(MxE2m1FromBf16::Codes32(ha, 0, tk2, tk),
                                               MxE2m1FromBf16::Codes32(hb, 0, tk2, tk), tk);
        } else {
          return kPadded
                     ? Range::template EncodeB4x16<true, kClamp>(y[0], y[1], y[2], y[3], k, k, k, k)
                     : Range::template Encode64<true, kClamp>(y[0], y[1], y[2], y[3], k, k, k, k);
        }
      }
      const DU du;
      const hn::Repartition<uint8_t, DU> d8;
      const auto codes_at = [&](int k) {
        return Exact::ThresholdCodes<false>(Load(du, p + 64 * k, 0), tab.thr[c[k]]);
      };
      auto v = U8From4U32(du, codes_at(0), codes_at(1), codes_at(2), codes_at(3));
      if constexpr (kPadded) v = PaddedCodec::Compact4<0>(d8, v);
      return v.raw;
    };
    Steps64<4>(src, n, out, prefetch_l2, [&](const uint8_t* HWY_RESTRICT p, size_t i, auto tail) {
      uint8_t code_buf[4];
      return step(p, StepCodes4(codes, i, nb, tail, code_buf));
    });
  }
#endif

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
