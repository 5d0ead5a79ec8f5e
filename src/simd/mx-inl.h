// Highway kernel of MX / NVFP4 block quantization, fused in one pass over the
// input (in L1-sized chunks): per block, amax of the magnitudes (integer max of the f32 bits) and
// NaN detection, the scale code (integer formula of src/mx/mx_internal.h),
// then every element scaled into the element's range (x * 2^-s, exact; or
// x / (d * t) for NVFP4) and encoded by the shared rn/satfinite encoder
// (src/simd/encode_fast-inl.h) straight to one code per byte.
// Per-target toggle guard as in STYLE.md.
#if defined(MXPACK_SRC_SIMD_MX_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MXPACK_SRC_SIMD_MX_INL_H_
#undef MXPACK_SRC_SIMD_MX_INL_H_
#else
#define MXPACK_SRC_SIMD_MX_INL_H_
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "hwy/highway.h"
#include "mxpack/format.h"
#include "mxpack/mx.h"
#include "src/mx/mx_internal.h"
#include "src/simd/convert-inl.h"  // StoreBytes4
#include "src/simd/encode_fast-inl.h"

// Target-independent: the per-call constants of the block kernel.
#ifndef MXPACK_SRC_SIMD_MX_ARGS_
#define MXPACK_SRC_SIMD_MX_ARGS_
namespace mxpack::internal {
struct MxBlockArgs {
  MxScaleParams scale;  // MX
  ScaleMode mode;       // NVFP4 scale rounding
  float tensor_scale;   // NVFP4
  const float* ue4m3;   // NVFP4: decode table of the 128 scale codes
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
  // The scale code of a block holding a NaN.
  static constexpr uint8_t kNanScale = kNvfp4 ? 0x7F : 0xFF;
  // Pass 3 encodes through F16cEncodeF32 (x86 AVX2/AVX-512).
#ifdef MXPACK_HAVE_F16C_ENCODE
  static constexpr bool kF16c = true;
#else
  static constexpr bool kF16c = false;
#endif

  // Quantizes `nb` (<= kMaxBlocks) whole blocks of `src` into codes (one per
  // byte) and scale codes (one per block). Three passes over the L1-resident
  // chunk keep the per-block horizontal reductions and scalar scale formulas
  // off the encoder's critical path: (1) amax of every block, (2) scale codes
  // and multipliers, (3) scale + encode + store.
  static void Run(const internal::MxBlockArgs& a, const uint8_t* HWY_RESTRICT src,
                  size_t nb, uint8_t* HWY_RESTRICT codes,
                  uint8_t* HWY_RESTRICT scale_codes) {
    const D d;
    const DU du;
    const DI di;
    const size_t N = hn::Lanes(d);
    constexpr size_t kSrcBytes = kBf16 ? 2 : 4;
    const VU abs_mask = hn::Set(du, 0x7FFFFFFFu);
    HWY_ALIGN uint32_t amax[kMaxBlocks];
    HWY_ALIGN float mult[kMaxBlocks] = {};  // (GCC 12 -Wmaybe-uninitialized, SCALAR)

    // (1) amax as the integer max of |x| bits (NaN bits exceed Inf's), N
    // blocks at a time: a vertical max per block, then a max tree of
    // ConcatOdd/ConcatEven so that lane j holds block j's amax (lanes of
    // missing blocks past nb are 0, which also defines the tail of amax[]).
    for (size_t g = 0; g < nb; g += N) {
      VU v[16];  // N <= 16
      for (size_t j = 0; j < N; ++j) {
        if (g + j >= nb) {
          v[j] = hn::Zero(du);
          continue;
        }
        const uint8_t* p = src + (g + j) * kBlock * kSrcBytes;
        VU vmax = hn::And(Load(du, p, 0), abs_mask);
        for (size_t i = N; i < kBlock; i += N) {
          vmax = hn::Max(vmax, hn::And(Load(du, p, i), abs_mask));
        }
        v[j] = vmax;
      }
#if HWY_TARGET != HWY_SCALAR  // one lane: nothing to reduce
      for (size_t w = N; w > 1; w /= 2) {
        for (size_t j = 0; j < w / 2; ++j) {
          v[j] = hn::Max(hn::ConcatOdd(du, v[2 * j + 1], v[2 * j]),
                         hn::ConcatEven(du, v[2 * j + 1], v[2 * j]));
        }
      }
#endif
      hn::StoreU(v[0], du, amax + g);
    }

    // (2) Scale codes and the value each element is multiplied (MX) or
    // divided (NVFP4) by. Blocks holding an Inf (and no NaN) first get their
    // amax over the finite elements.
    for (size_t b = 0; b < nb; ++b) {
      if (HWY_UNLIKELY(amax[b] == 0x7F800000u)) {
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
    if (kNvfp4 && a.mode == ScaleMode::kEven) {
      // The default NVFP4 scale (rn): encode_ue4m3(amax / (6 * t)), a vector
      // of blocks at a time with the shared encoder (NaN amax -> 0x7F).
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
            scalar::Nvfp4ScaleCode(a.mode, amax_f, a.tensor_scale, has_nan);
        mult[b] = a.ue4m3[code & 0x7F] * a.tensor_scale;
        scale_codes[b] = code;
      }
    } else {
      ScaleCodes(a.scale, amax, nb, scale_codes, mult);
    }

    // (3) Scale, encode, store one code per byte. On x86 it runs with FTZ
    // (products below 2^-126 flush to +-0, which encode to +-0 anyway; the
    // F16C encoder would otherwise take microcode assists) and with DAZ
    // cleared even if the caller set it: elements are scaled, possibly up,
    // before the encoder sees them, so subnormal inputs must stay exact.
    // Passes 1-2 run in the caller's environment (NVFP4 scale products may be
    // subnormal).
#if HWY_ARCH_X86
    EncodeChunkFtz(src, mult, nb * kBlock, codes);
#else
    EncodeChunk(src, mult, nb * kBlock, codes);
#endif
    for (size_t b = 0; b < nb; ++b) {
      if (HWY_UNLIKELY(scale_codes[b] == kNanScale)) {
        // A NaN block: every element is encode(NaN) (x / NaN), satfinite.
        std::memset(codes + b * kBlock,
                    static_cast<int>(internal::FastFormatOf(kElem).nan_code), kBlock);
      }
    }
  }

 private:
#if HWY_ARCH_X86
  // EncodeChunk under ScopedFlushDenormals(daz = false). Both functions are
  // non-inlined, so no floating-point work of the caller or of EncodeChunk
  // can move across the MXCSR writes.
  static HWY_NOINLINE void EncodeChunkFtz(const uint8_t* HWY_RESTRICT src,
                                          const float* HWY_RESTRICT mult, size_t n,
                                          uint8_t* HWY_RESTRICT codes) {
    const internal::ScopedFlushDenormals ftz(/*daz=*/false);
    EncodeChunk(src, mult, n, codes);
  }
#endif

  // Pass 3 over the chunk's n elements: scale, encode, store one code per
  // byte; a flat loop, four vectors per step (EncodeToU8x4, or StoreBytes4
  // with two saturating packs and one permute), each vector with its block's
  // multiplier. NaN blocks are overwritten by Run afterwards. Not inlined:
  // EncodeChunkFtz changes MXCSR around it.
  static HWY_NOINLINE void EncodeChunk(const uint8_t* HWY_RESTRICT src,
                                       const float* HWY_RESTRICT mult, size_t n,
                                       uint8_t* HWY_RESTRICT codes) {
    const D d;
    const DU du;
    const size_t N = hn::Lanes(d);
    size_t i = 0;
#ifdef MXPACK_HAVE_F16C_ENCODE
    if constexpr (kF16c) {
      using Enc = F16cEncodeF32<kElem, true>;
      const hn::Repartition<uint8_t, DU> d8x4;
      for (; i + 4 * N <= n; i += 4 * N) {
        hn::StoreU(Enc::EncodeToU8x4(du, ScaledAt(d, src, mult, i), ScaledAt(d, src, mult, i + N),
                                     ScaledAt(d, src, mult, i + 2 * N),
                                     ScaledAt(d, src, mult, i + 3 * N)),
                   d8x4, codes + i);
      }
    }
#endif
    for (; i + 4 * N <= n; i += 4 * N) {
      const VU c0 = EncodeAt(d, src, mult, i);
      const VU c1 = EncodeAt(d, src, mult, i + N);
      const VU c2 = EncodeAt(d, src, mult, i + 2 * N);
      const VU c3 = EncodeAt(d, src, mult, i + 3 * N);
      StoreBytes4(du, c0, c1, c2, c3, codes + i);
    }
    for (; i < n; i += N) {
      StoreLanes<1>(du, EncodeAt(d, src, mult, i), codes + i);
    }
  }

  // Codes of the N elements starting at element i of the chunk: x * 2^-s
  // (MX) or x / (d * t), x * 0 when d * t == 0 (NVFP4), then the shared
  // rn/satfinite encoder.
  static HWY_INLINE VU EncodeAt(D d, const uint8_t* HWY_RESTRICT src,
                                const float* HWY_RESTRICT mult, size_t i) {
    return FastEncodeF32<kElem, true>::EncodeRn(DU(), ScaledAt(d, src, mult, i));
  }
  // The f32 bits the encoder sees for the N elements starting at element i.
  static HWY_INLINE VU ScaledAt(D d, const uint8_t* HWY_RESTRICT src,
                                const float* HWY_RESTRICT mult, size_t i) {
    const DU du;
    const hn::Vec<D> x = hn::BitCast(d, Load(du, src, i));
    const hn::Vec<D> vm = hn::Set(d, mult[i / kBlock]);
    if (kNvfp4) {
      return hn::BitCast(du, hn::IfThenElse(hn::Eq(vm, hn::Zero(d)), hn::Mul(x, vm), hn::Div(x, vm)));
    }
    return hn::BitCast(du, hn::Mul(x, vm));
  }

  // MX scale codes and multipliers 2^-s of `nb` blocks from their amax bits,
  // a vector of blocks at a time: the integer formula of
  // internal::MxScaleCodeFromBits (tests/mx_test.cc checks both against the
  // reference on every target).
  static HWY_INLINE void ScaleCodes(const internal::MxScaleParams& p,
                                    const uint32_t* HWY_RESTRICT amax, size_t nb,
                                    uint8_t* HWY_RESTRICT scale_codes,
                                    float* HWY_RESTRICT mult) {
    const DU du;
    const DI di;
    const size_t N = hn::Lanes(du);
    using VI = hn::Vec<DI>;
    for (size_t b = 0; b < nb; b += N) {
      // Lanes past nb read the zeroed tail of amax[] (pass 1); their results
      // land in the tail of scale_codes/mult (both sized kMaxBlocks), unused.
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
      // 2^-s: exponent field 254 - code; code 254 -> the subnormal 2^-127.
      // (NaN blocks get a multiplier too; pass 3 does not use it.)
      const VU field = hn::Sub(hn::Set(du, 254u), hn::Min(code, hn::Set(du, 254u)));
      VU m = hn::ShiftLeft<23>(field);
      m = hn::IfThenElse(hn::RebindMask(du, hn::Eq(field, hn::Zero(du))),
                         hn::Set(du, 0x00400000u), m);
      StoreLanes<1>(du, code, scale_codes + b);
      hn::StoreU(m, du, reinterpret_cast<uint32_t*>(mult) + b);
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

#endif  // MXPACK_SRC_SIMD_MX_INL_H_
