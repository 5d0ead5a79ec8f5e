// Highway kernels of the stack-exact block quantizers (stack_blocks.h):
// compressed-tensors NVFP4 / MXFP4 / MXFP8 and ModelOpt NVFP4 / MXFP8,
// bit-identical to the scalar reference of stack_blocks_scalar.cc. Three
// passes over an L1-sized chunk of whole blocks: the block amax (pass 1; on
// AVX-512 sixteen blocks per reduction tree), the scale codes and per-block
// divisors or multipliers, a vector of blocks at a time (pass 2; from bf16
// without a division: NVFP4 on AVX-512 by a table of one binade of amax,
// ModelOpt MXFP8 from amax's bits), the elements (pass 3; from bf16 on
// AVX-512 in u16 lanes: NVFP4 by per-code threshold tables, MX where the
// power-of-two scale is an exponent shift of the input's bits, MXFP4 on
// AVX3_DL then through the MX quantizer's e2m1 byte table).
// Per-target toggle guard (re-included once per Highway target).
#if defined(MXPACK_SRC_CHECKPOINT_STACK_BLOCKS_INL_H_) == \
    defined(HWY_TARGET_TOGGLE)
#ifdef MXPACK_SRC_CHECKPOINT_STACK_BLOCKS_INL_H_
#undef MXPACK_SRC_CHECKPOINT_STACK_BLOCKS_INL_H_
#else
#define MXPACK_SRC_CHECKPOINT_STACK_BLOCKS_INL_H_
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "hwy/highway.h"
#include "mxpack/format.h"
#include "src/checkpoint/stack_blocks.h"
#include "src/format/codec-inl.h"  // WideSource
#include "src/format/encode_fast-inl.h"
#include "src/mx/encode_e2m1_bf16-inl.h"  // MxE2m1FromBf16
#include "src/util/lanes-inl.h"

HWY_BEFORE_NAMESPACE();
namespace mxpack {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET != HWY_SCALAR
// Vector-level helpers shared by the block quantizers, on f32 bits in u32
// lanes (at most 16 lanes, so that a vector never straddles a block).
struct StackOps {
  using DU = hn::CappedTag<uint32_t, 16>;
  using DI = hn::RebindToSigned<DU>;
  using DF = hn::RebindToFloat<DU>;
  using VU = hn::Vec<DU>;

  static HWY_INLINE hn::Vec<DF> AsF(VU v) { return hn::BitCast(DF(), v); }
  static HWY_INLINE VU AsU(hn::Vec<DF> v) { return hn::BitCast(DU(), v); }
  static HWY_INLINE auto ILt(VU a, VU b) {
    const DI di;
    return hn::RebindMask(DU(), hn::Lt(hn::BitCast(di, a), hn::BitCast(di, b)));
  }

  // |x| as bits, NaN lanes 0: the stacks' amax skips NaN (std::max), and
  // below NaN the integer order of |x|'s bits is the order of the values.
  static HWY_INLINE VU AbsNoNan(VU x) {
    const DU du;
    const VU a = hn::And(x, hn::Set(du, 0x7FFFFFFFu));
    return hn::IfThenZeroElse(ILt(hn::Set(du, 0x7F800000u), a), a);
  }

  // e4m3 code c (0..0x7F, no sign) -> f32 bits: normals rebias
  //   0 EEEE MMM -> 0 (E+120) MMM<<20,
  // subnormals are M * 2^-9 (exact), 0x7F is NaN.
  static HWY_INLINE VU DecodeE4M3(VU c) {
    const DU du;
    const DI di;
    const VU normal = hn::Add(hn::ShiftLeft<20>(c), hn::Set(du, 120u << 23));
    const VU m = hn::And(c, hn::Set(du, 7u));
    const VU sub = AsU(hn::Mul(hn::ConvertTo(DF(), hn::BitCast(di, m)),
                               hn::Set(DF(), 0x1p-9f)));
    const VU v = hn::IfThenElse(ILt(c, hn::Set(du, 8u)), sub, normal);
    return hn::IfThenElse(hn::Eq(c, hn::Set(du, 0x7Fu)),
                          hn::Set(du, 0x7FC00000u), v);
  }

  // f16 bits (u32 lanes) -> f32 bits, exact (WideSource<kF16>'s rule on
  // lanes already widened).
  static HWY_INLINE VU F16ToF32(VU h) {
    const DU du;
    const DI di;
    const VU sign = hn::ShiftLeft<16>(hn::And(h, hn::Set(du, 0x8000u)));
    const VU e = hn::And(hn::ShiftRight<10>(h), hn::Set(du, 0x1Fu));
    const VU m = hn::And(h, hn::Set(du, 0x3FFu));
    VU v = hn::Or(hn::ShiftLeft<23>(hn::Add(e, hn::Set(du, 112u))),
                  hn::ShiftLeft<13>(m));
    v = hn::IfThenElse(hn::Eq(e, hn::Set(du, 31u)),
                       hn::Or(hn::Set(du, 0x7F800000u), hn::ShiftLeft<13>(m)),
                       v);
    const VU sub = AsU(hn::Mul(hn::ConvertTo(DF(), hn::BitCast(di, m)),
                               hn::Set(DF(), 5.9604644775390625e-8f)));
    v = hn::IfThenElse(hn::Eq(e, hn::Zero(du)), sub, v);
    return hn::Or(v, sign);
  }

  // RoundToDtype(w, x) for a non-NaN x: rn to w, overflow to Inf. bf16 adds
  // half an ulp minus one plus the kept lsb (ties to even) and truncates;
  // the carry reaches Inf exactly where rn overflows.
  static HWY_INLINE VU RoundToDtype(Format w, VU x) {
    const DU du;
    if (w == Format::kBF16) {
      const VU lsb = hn::And(hn::ShiftRight<16>(x), hn::Set(du, 1u));
      return hn::And(hn::Add(hn::Add(x, hn::Set(du, 0x7FFFu)), lsb),
                     hn::Set(du, 0xFFFF0000u));
    }
    if (w == Format::kF16)
      return F16ToF32(FastEncodeF32<Format::kF16, false>::EncodeRn(du, x));
    return x;
  }

  // The nibble E2m1Nibble gives the scaled weight q (f32 bits): the shared
  // rn satfinite e2m1 encoder, whose NaN code 0x7 then takes q's sign bit,
  // and 0 where |q| <= zero_max (E2m1Nibble(+-0) = 0; for MX from bf16 / f16
  // also the q that RoundToDtype flushes to zero).
  static HWY_INLINE VU Nibble(VU q, VU zero_max) {
    const DU du;
    VU c = FastEncodeF32<Format::kE2M1, true>::EncodeRn(du, q);
    c = hn::OrAnd(c, hn::ShiftRight<28>(q), hn::Set(du, 8u));
    const VU a = hn::And(q, hn::Set(du, 0x7FFFFFFFu));
    return hn::IfThenZeroElse(hn::Not(ILt(zero_max, a)), c);
  }

  // Stores the N nibbles c (u32 lanes, < 16) as N / 2 bytes, the even lane
  // in the low nibble: in u64 lanes, c_even | c_odd << 4 is the low byte of
  // x | x >> 28.
  static HWY_INLINE void StoreNibbles(VU c, uint8_t* out) {
    const hn::Repartition<uint64_t, DU> d64;
    const hn::Rebind<uint8_t, decltype(d64)> d8;
    const auto x = hn::BitCast(d64, c);
    hn::StoreU(hn::TruncateTo(d8, hn::Or(x, hn::ShiftRight<28>(x))), d8, out);
  }
};

#if HWY_TARGET <= HWY_AVX3 && HWY_ARCH_X86
// The largest u32 lane of each of 16 vectors, in order, as one vector: a
// reduction tree that halves the lanes per vector at each level instead of
// 16 separate reductions. Levels (q = 128-bit quarter; "blk k" = lanes
// still holding partial maxima of v[k]):
//   a[k]: q0,q1 blk 2k | q2,q3 blk 2k+1            (256-bit halves)
//   b[k]: q0 blk 4k, q1 4k+1, q2 4k+2, q3 4k+3     (quarters)
//   c[k]: in quarter j, lanes 0-1 blk 8k+j, 2-3 blk 8k+4+j  (64-bit)
//   e[k]: the same lanes fully reduced (32-bit pairs)
//   f:    in quarter j, lanes blk j, 8+j, 4+j, 12+j; one permute orders it.
// Max16 from its first level a[k] (also what NVFP4 from bf16 loads directly:
// two 16-element blocks per vector). kU16: the maxima per u16 half instead
// (every shuffle moves whole u32 lanes), so each result lane holds its
// block's largest even and odd u16 lane.
template <bool kU16>
HWY_INLINE __m512i MaxLanes(__m512i a, __m512i b) {
  return kU16 ? _mm512_max_epu16(a, b) : _mm512_max_epu32(a, b);
}

template <bool kU16>
HWY_INLINE __m512i Max16FromPairs(const __m512i a[8]) {
  __m512i b[4], e[2];
  for (int k = 0; k < 4; ++k) {
    b[k] = MaxLanes<kU16>(_mm512_shuffle_i64x2(a[2 * k], a[2 * k + 1], 0x88),
                          _mm512_shuffle_i64x2(a[2 * k], a[2 * k + 1], 0xDD));
  }
  for (int k = 0; k < 2; ++k) {
    const __m512i c =
        MaxLanes<kU16>(_mm512_unpacklo_epi64(b[2 * k], b[2 * k + 1]),
                       _mm512_unpackhi_epi64(b[2 * k], b[2 * k + 1]));
    e[k] = MaxLanes<kU16>(c, _mm512_shuffle_epi32(c, _MM_PERM_CDAB));
  }
  const __m512i f = _mm512_mask_blend_epi32(0xAAAA, e[0], e[1]);
  const __m512i idx =
      _mm512_setr_epi32(0, 4, 8, 12, 2, 6, 10, 14, 1, 5, 9, 13, 3, 7, 11, 15);
  return _mm512_permutexvar_epi32(idx, f);
}

template <bool kU16>
HWY_INLINE __m512i Max16(const __m512i v[16]) {
  __m512i a[8];
  for (int k = 0; k < 8; ++k) {
    a[k] = MaxLanes<kU16>(_mm512_shuffle_i64x2(v[2 * k], v[2 * k + 1], 0x44),
                          _mm512_shuffle_i64x2(v[2 * k], v[2 * k + 1], 0xEE));
  }
  return Max16FromPairs<kU16>(a);
}
#endif

// StoreNibbles for four vectors (4N nibbles, 2N bytes): the codes as bytes
// in order (U8From4U32), then in u16 lanes c_even | c_odd << 4 is the low
// byte of w | w >> 4.
HWY_INLINE void StoreNibbles4(StackOps::VU c0, StackOps::VU c1, StackOps::VU c2,
                              StackOps::VU c3, uint8_t* out) {
  const StackOps::DU du;
  const hn::Repartition<uint16_t, StackOps::DU> d16;
  const hn::Rebind<uint8_t, decltype(d16)> d8;
  const auto w = hn::BitCast(d16, U8From4U32(du, c0, c1, c2, c3));
  hn::StoreU(hn::TruncateTo(d8, hn::Or(w, hn::ShiftRight<4>(w))), d8, out);
}

// The block quantizer of one stack arithmetic and input dtype.
template <internal::StackArith kArith, internal::SrcKind kSrc>
class StackBlockQuantizer : private StackOps {
 public:
  static constexpr size_t kBlock = internal::StackBlockSize(kArith);
  static constexpr bool kNvfp4 = kBlock == 16;
  static constexpr bool kFp8 = internal::StackFp8(kArith);
  // ModelOpt's amax is torch's: a NaN element makes it NaN.
  static constexpr bool kNanAmax =
      kArith == internal::StackArith::kModelOptMxfp8;
  static constexpr size_t kIn = WideSource<kSrc>::kBytes;
  static constexpr size_t kOutPerBlock = kFp8 ? kBlock : kBlock / 2;
  // Blocks per chunk: NVFP4 16 KiB of input (half of L1), which amortizes
  // its per-chunk work (the code span, the table checks, the tails), with
  // the next chunk prefetched during pass 3; MX 4 KiB (from DRAM, pass 1's
  // stream of a larger chunk leaves the memory idle for longer).
  static constexpr size_t kChunkBlocks =
      (kNvfp4 ? 16384 : 4096) / (kBlock * kIn);
#if HWY_TARGET <= HWY_AVX3 && HWY_ARCH_X86
  // The 128 input bytes at p's place in the next chunk, requested during
  // pass 3 (from DRAM the loads would otherwise wait for pass 1 of that
  // chunk, after a whole chunk of compute). An address past the input is
  // never dereferenced: prefetches do not fault.
  static HWY_INLINE void PrefetchNextChunk(const uint8_t* p) {
    const uintptr_t next =
        reinterpret_cast<uintptr_t>(p) + kChunkBlocks * kBlock * kIn;
    _mm_prefetch(reinterpret_cast<const char*>(next), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(next + 64), _MM_HINT_T0);
  }
#endif
  // MXFP8 from bf16 with 32 u16 lanes per vector (Mx8Bf16Codes).
  static constexpr bool kMx8Wide = kFp8 && kSrc == internal::SrcKind::kBF16 &&
                                   HWY_TARGET <= HWY_AVX3 && HWY_ARCH_X86 &&
                                   hn::MaxLanes(DU()) == 16;
  // compressed-tensors MXFP4 from bf16 likewise (Mx4Bf16Nibbles).
  static constexpr bool kMx4Wide = kArith == internal::StackArith::kCtMxfp4 &&
                                   kSrc == internal::SrcKind::kBF16 &&
                                   HWY_TARGET <= HWY_AVX3 && HWY_ARCH_X86 &&
                                   hn::MaxLanes(DU()) == 16;
  // kMx4Wide by the e2m1 byte table of the MX quantizer (Mx4TableIndex).
#ifdef MXPACK_HAVE_MX_E2M1_BF16
  static constexpr bool kMx4Table = kMx4Wide;
#else
  static constexpr bool kMx4Table = false;
#endif
  // NVFP4 from bf16 on AVX-512: scale codes by table (StackNvfp4Thresholds::
  // code_lut) and elements by per-code threshold tables.
  static constexpr bool kCompares = kNvfp4 &&
                                    kSrc == internal::SrcKind::kBF16 &&
                                    HWY_TARGET <= HWY_AVX3 && HWY_ARCH_X86 &&
                                    hn::MaxLanes(DU()) == 16;
  static constexpr Format kW = kSrc == internal::SrcKind::kF32 ? Format::kF32
                               : kSrc == internal::SrcKind::kBF16
                                   ? Format::kBF16
                                   : Format::kF16;

  static void Run(float tensor_scale, const uint8_t* HWY_RESTRICT in, size_t nb,
                  uint8_t* HWY_RESTRICT elements,
                  uint8_t* HWY_RESTRICT scales) {
    // NVFP4's tables per tensor scale, filled as codes appear and kept for
    // the next call with the same tensor scale (the callers quantize a
    // tensor in many calls).
    internal::StackNvfp4Thresholds* thr = nullptr;
    if constexpr (kCompares) {
      static thread_local internal::StackNvfp4Thresholds tables;
      tables.Reset(kArith, tensor_scale);
      tables.FillCodeTable();
      thr = &tables;
    }
    for (size_t b = 0; b < nb; b += kChunkBlocks) {
      Chunk(tensor_scale, in + b * kBlock * kIn, HWY_MIN(kChunkBlocks, nb - b),
            elements + b * kOutPerBlock, scales + b, thr);
    }
  }

 private:
  static HWY_INLINE VU Load(const uint8_t* p) {
    return WideSource<kSrc>::Load(DU(), p);
  }

  // |x| bits for the block amax: NaN lanes 0 (skipped), or above Inf
  // (kNanAmax: a NaN amax).
  static HWY_INLINE VU AbsBits(VU x) {
    if constexpr (kNanAmax) return hn::And(x, hn::Set(DU(), 0x7FFFFFFFu));
    return AbsNoNan(x);
  }

  // The elements as pass 3 divides them: the scalar reference reads an f16
  // NaN as the positive canonical NaN (which the quotient then carries into
  // the nibble's sign); a NaN the division itself creates (Inf / Inf) is the
  // CPU's default NaN in both.
  static HWY_INLINE VU LoadX(const uint8_t* p) {
    const VU x = Load(p);
    if constexpr (kW != Format::kF16) return x;
    const DU du;
    const VU a = hn::And(x, hn::Set(du, 0x7FFFFFFFu));
    return hn::IfThenElse(ILt(hn::Set(du, 0x7F800000u), a),
                          hn::Set(du, 0x7FC00000u), x);
  }

  static HWY_INLINE void Chunk(float tensor_scale,
                               const uint8_t* HWY_RESTRICT in, size_t nb,
                               uint8_t* HWY_RESTRICT elements,
                               uint8_t* HWY_RESTRICT scales,
                               internal::StackNvfp4Thresholds* thr) {
    (void)thr;
    const DU du;
    const size_t N = hn::Lanes(du);
    // Pass 1: block amax bits; lanes past nb 0 (zeroed after it).
    HWY_ALIGN uint32_t amax[kChunkBlocks + 16];
    // MXFP8 from bf16 on AVX-512: per 16 blocks, those that may hold a NaN
    // (pass 1 skips NaN in the amax; pass 3 must not skip it). ModelOpt's
    // NaN amax gives scale code 0, which pass 3 sends to the slow path.
    uint16_t nan16[kChunkBlocks / 16 + 1];
    for (uint16_t& m : nan16) m = kNanAmax ? 0 : 0xFFFF;
    // NVFP4 from bf16 on AVX-512: per 16 blocks, whether a scale code is
    // saturated at 448 (0x7E) or above (set for a group of fewer blocks).
    bool sat16[kCompares ? kChunkBlocks / 16 + 1 : 1];
    const auto block_max = [&](size_t b) {
      const uint8_t* p = in + b * kBlock * kIn;
      VU m = AbsBits(Load(p));
      for (size_t j = N; j < kBlock; j += N)
        m = hn::Max(m, AbsBits(Load(p + j * kIn)));
      return m;
    };
    size_t b1 = 0;
#if HWY_TARGET <= HWY_AVX3 && HWY_ARCH_X86
    if constexpr (hn::MaxLanes(DU()) == 16) {
      // From bf16: 32 elements (an MX block, two NVFP4 blocks) in one
      // vector of u16 lanes; |x| there, and the tree's maxima per u16 half,
      // merged once per sixteen blocks (rotate and max), then the low half
      // cleared: f32 bits. NaN counts here as the largest |x|; the blocks
      // whose amax comes out NaN are then redone with NaN skipped (unless
      // kNanAmax).
      constexpr bool kBf16 = kSrc == internal::SrcKind::kBF16;
      const auto block_max_bf16 = [&](size_t b) {
        return _mm512_and_si512(_mm512_loadu_si512(in + b * kBlock * kIn),
                                K16(0x7FFF).raw);
      };
      const auto finish = [&](__m512i m) {
        if constexpr (kBf16) {
          m = _mm512_and_si512(
              _mm512_max_epu16(m, _mm512_rol_epi32(m, 16)),
              _mm512_set1_epi32(static_cast<int>(0xFFFF0000u)));
        }
        _mm512_storeu_si512(amax + b1, m);
        if constexpr (kBf16 && !kNanAmax) {
          const __mmask16 nan =
              _mm512_cmpgt_epu32_mask(m, _mm512_set1_epi32(0x7F800000));
          nan16[b1 / 16] = nan;
          for (unsigned k = nan; k != 0; k &= k - 1) {
            const size_t b = b1 + static_cast<size_t>(__builtin_ctz(k));
            amax[b] = hn::GetLane(hn::MaxOfLanes(du, block_max(b)));
          }
        }
      };
      for (; b1 + 16 <= nb; b1 += 16) {
        if constexpr (kBf16 && kBlock == 16) {
          // NVFP4: the same vector holds two blocks, which is Max16's
          // first level (blocks 2k and 2k + 1 in its 256-bit halves).
          __m512i a[8];
          for (size_t k = 0; k < 8; ++k) a[k] = block_max_bf16(b1 + 2 * k);
          finish(Max16FromPairs<kBf16>(a));
          continue;
        }
        __m512i v[16];
        for (size_t k = 0; k < 16; ++k) {
          if constexpr (kBlock == 32 && kBf16) {
            v[k] = block_max_bf16(b1 + k);
          } else {
            v[k] = block_max(b1 + k).raw;
          }
        }
        finish(Max16<kBf16>(v));
      }
    }
#endif
    for (; b1 < nb; ++b1) {
      amax[b1] = hn::GetLane(hn::MaxOfLanes(du, block_max(b1)));
    }
    std::memset(amax + nb, 0, 16 * sizeof(amax[0]));
    // Pass 2: scale codes, and each block's divisor (NVFP4) or multiplier (MX).
    HWY_ALIGN uint8_t codes[kChunkBlocks + 16];
    HWY_ALIGN uint32_t factor[kChunkBlocks + 16];
    // (MX from bf16 on AVX-512: per block, two u16 constants of pass 3,
    // each in both halves of a u32; MXFP4: per 16 blocks, those whose
    // scale exponent the bucket table does not cover.)
    constexpr bool kMxWide = kMx8Wide || kMx4Wide;
    // The paths that compare or shift instead of dividing or multiplying
    // find a block's factor only where they fall back (FactorOf).
    constexpr bool kFactorLater = kCompares || kMxWide;
    HWY_ALIGN uint32_t mx_sub[kMxWide ? kChunkBlocks + 16 : 1];
    HWY_ALIGN uint32_t mx_bound[kMxWide ? kChunkBlocks + 16 : 1];
    uint16_t mx4_bad[kChunkBlocks / 16 + 1];
    // (NVFP4 from bf16 on AVX-512 compares with per-code thresholds and
    // finds the divisor only for the blocks that divide.)
    // (kCompares: the span of the codes' magnitudes and their largest
    // byte, over the chunk's blocks.)
    VU code_lo = hn::Set(du, 127u), code_hi = hn::Zero(du),
       code_max = hn::Zero(du);
#if HWY_TARGET <= HWY_AVX3 && HWY_ARCH_X86
    CodeLut lut;
    if constexpr (kCompares) LoadCodeLut(*thr, lut);
#endif
    for (size_t b = 0; b < nb; b += N) {
      VU code, f;
#if HWY_TARGET <= HWY_AVX3 && HWY_ARCH_X86
      if constexpr (kCompares) {
        if (!thr->code_table ||
            !Nvfp4Bf16TableCodes(lut, hn::Load(du, amax + b), nb - b, code)) {
          Scales(tensor_scale, hn::Load(du, amax + b), code, f, false);
        }
      } else
#endif
      {
        Scales(tensor_scale, hn::Load(du, amax + b), code, f, !kFactorLater);
      }
#if HWY_TARGET <= HWY_AVX3 && HWY_ARCH_X86
      if constexpr (hn::MaxLanes(DU()) == 16) {
        _mm_store_si128(reinterpret_cast<__m128i*>(codes + b),
                        _mm512_cvtepi32_epi8(code.raw));
      } else
#endif
      {
        StoreLanes<1>(du, code, codes + b);
      }
      if (!kFactorLater) hn::Store(f, du, factor + b);
      if constexpr (kCompares) {
        const VU c = hn::And(code, hn::Set(du, 0x7Fu));
        if (HWY_LIKELY(nb - b >= N)) {
          code_lo = hn::Min(code_lo, c);
          code_hi = hn::Max(code_hi, c);
          code_max = hn::Max(code_max, code);
#if HWY_TARGET <= HWY_AVX3 && HWY_ARCH_X86
          sat16[b / 16] = _mm512_cmpgt_epu32_mask(c.raw, lut.above_sat) != 0;
#endif
        } else {
          sat16[b / 16] = true;
          const auto valid = hn::FirstN(du, nb - b);
          code_lo = hn::IfThenElse(valid, hn::Min(code_lo, c), code_lo);
          code_hi = hn::IfThenElse(valid, hn::Max(code_hi, c), code_hi);
          code_max = hn::IfThenElse(valid, hn::Max(code_max, code), code_max);
        }
      }
#if HWY_TARGET <= HWY_AVX3 && HWY_ARCH_X86
      if constexpr (kMx8Wide) {
        // Mx8Bf16Codes' S - 7 = (code - 7) 128 - 7 and the slow-lane bound
        // s 128 + 0x3C7F = code 128 - 0x301, for s = code - 127 in
        // [-119, 126] and blocks without NaN; else S - 7 = 0xFFFF (every
        // lane fails the first test) and the bound 0xFFFF (every nonzero
        // lane slow). Inf lanes: their block's code is 255 (ct) or 254
        // (ModelOpt: amax / 448 is Inf), both slow.
        const __m512i c = code.raw;
        const __m512i c128 = _mm512_slli_epi32(c, 7);
        const __mmask16 ok =
            _mm512_mask_cmple_epu32_mask(
                _mm512_cmpge_epu32_mask(c, _mm512_set1_epi32(8)), c,
                _mm512_set1_epi32(253)) &
            static_cast<__mmask16>(~nan16[b / 16]);
        const __m512i shift = _mm512_mask_and_epi32(
            _mm512_set1_epi32(0xFFFF), ok,
            _mm512_sub_epi32(c128, _mm512_set1_epi32(7 * 128 + 7)),
            _mm512_set1_epi32(0xFFFF));
        const __m512i slow = _mm512_mask_sub_epi32(
            _mm512_set1_epi32(0xFFFF), ok, c128, _mm512_set1_epi32(0x301));
        const __m512i pair = _mm512_set1_epi32(0x00010001);
        _mm512_store_si512(mx_sub + b, _mm512_mullo_epi32(shift, pair));
        _mm512_store_si512(mx_bound + b, _mm512_mullo_epi32(slow, pair));
      }
      if constexpr (kMx4Wide) {
        // Mx4Bf16Nibbles' subtrahend (s << 7) + kMx4Origin and signed-lane
        // bound 0x8000 + z (CtMxfp4Bf16Block's z) for s = code - 127 in
        // [-124, 125] (else the block is bad); with the e2m1 byte table
        // (Mx4TableIndex) K + 1 = ((s + 124) << 7) + 1 and z + 1.
        const __m512i c = code.raw;
        const __m512i s = _mm512_sub_epi32(c, _mm512_set1_epi32(127));
        mx4_bad[b / 16] = static_cast<uint16_t>(~_mm512_mask_cmple_epu32_mask(
            _mm512_cmpge_epu32_mask(c, _mm512_set1_epi32(3)), c,
            _mm512_set1_epi32(252)));
        const __m512i sub = _mm512_and_si512(
            _mm512_add_epi32(
                _mm512_slli_epi32(s, 7),
                _mm512_set1_epi32(kMx4Table ? (124 << 7) + 1 : kMx4Origin)),
            _mm512_set1_epi32(0xFFFF));
        // z: (s - 7) << 7 for s >= 8, 1 << (s - 1) for 1 <= s <= 7, else 0.
        const __m512i one = _mm512_set1_epi32(1);
        __m512i z = _mm512_maskz_sllv_epi32(_mm512_cmpge_epi32_mask(s, one),
                                            one, _mm512_sub_epi32(s, one));
        z = _mm512_mask_slli_epi32(
            z, _mm512_cmpge_epi32_mask(s, _mm512_set1_epi32(8)),
            _mm512_sub_epi32(s, _mm512_set1_epi32(7)), 7);
        const __m512i bound =
            _mm512_add_epi32(z, _mm512_set1_epi32(kMx4Table ? 1 : 0x8000));
        const __m512i pair = _mm512_set1_epi32(0x00010001);
        _mm512_store_si512(mx_sub + b, _mm512_mullo_epi32(sub, pair));
        _mm512_store_si512(mx_bound + b, _mm512_mullo_epi32(bound, pair));
      }
#endif
    }
    std::memcpy(scales, codes, nb);
    // Pass 3: elements, q = x / divisor (NVFP4) or x * 2^-k (MX; equal to
    // x / 2^k, the scalar reference's division, both being one rounding of
    // the exact quotient).
    // Vectors lie within one block (N <= kBlock); four vectors at a time
    // share one store, then single vectors.
    const VU zero_max = hn::Set(du, ZeroMax());
    const auto codes_of = [&](size_t v) {
      const auto f = AsF(hn::Set(du, factor[v * N / kBlock]));
      const auto x = AsF(LoadX(in + v * N * kIn));
      const VU q = AsU(kNvfp4 ? hn::Div(x, f) : hn::Mul(x, f));
      if constexpr (kFp8) {
        return FastEncodeF32<Format::kE4M3, true>::EncodeRn(du, q);
      } else {
        return Nibble(q, zero_max);
      }
    };
#if HWY_TARGET <= HWY_AVX3 && HWY_ARCH_X86
    if constexpr (kNvfp4 && kSrc == internal::SrcKind::kBF16 &&
                  hn::MaxLanes(DU()) == 16) {
      // The thresholds of the scale codes this chunk meets (usually a few
      // binades: the span costs less to find than the set).
      const unsigned lo =
          static_cast<unsigned>(hn::GetLane(hn::MinOfLanes(du, code_lo)));
      const unsigned hi =
          static_cast<unsigned>(hn::GetLane(hn::MaxOfLanes(du, code_hi)));
      thr->Fill(lo, hi);
      // Usually every code of the span has a bucket table whose zero test
      // is |x| > 0 (Z = 0): then no pair needs a test of its own.
      bool all_buckets =
          hn::GetLane(hn::MaxOfLanes(du, code_max)) < 128 && lo <= hi;
      for (unsigned c = lo; c <= hi && all_buckets; ++c)
        all_buckets = thr->bucketed[c] && thr->bucket[c][30] == 0;
      const auto divide = [&](size_t b) {
        factor[b] = FactorOf(tensor_scale, amax[b]);
        for (size_t v = b * kBlock / N; v < (b + 1) * kBlock / N; ++v)
          StoreNibbles(codes_of(v), elements + v * N / 2);
      };
      size_t b = 0;
      const auto quads = [&](size_t end) {
        for (; b + 4 <= end; b += 4) {
          const uint8_t* p = in + b * kBlock * kIn;
          PrefetchNextChunk(p);
          const __m512i n0 = Nvfp4Bf16PairN(p, thr->bucket[codes[b]],
                                            thr->bucket[codes[b + 1]]);
          const __m512i n1 = Nvfp4Bf16PairN(p + 64, thr->bucket[codes[b + 2]],
                                            thr->bucket[codes[b + 3]]);
          _mm256_storeu_si256(
              reinterpret_cast<__m256i*>(elements + b * kOutPerBlock),
              NibblePairs2(n0, n1));
        }
      };
      // The add form of the tables, where every bucket index lies within
      // the table.
      const auto adds = [&](size_t end) {
        for (; b + 4 <= end; b += 4) {
          const uint8_t* p = in + b * kBlock * kIn;
          PrefetchNextChunk(p);
          const __m512i n0 = Nvfp4Bf16PairAdd(p, thr->bucket_add[codes[b]],
                                              thr->bucket_add[codes[b + 1]]);
          const __m512i n1 =
              Nvfp4Bf16PairAdd(p + 64, thr->bucket_add[codes[b + 2]],
                               thr->bucket_add[codes[b + 3]]);
          _mm256_storeu_si256(
              reinterpret_cast<__m256i*>(elements + b * kOutPerBlock),
              NibbleBytes2(n0, n1));
        }
      };
      if (all_buckets) {
        // Without NaN, and with no scale code saturated at 448 (0x7E), every
        // |x| <= amax lies within the tables' 29 buckets (Nvfp4Bf16PairN):
        // runs of such groups of 16 blocks take the add form, the others
        // the clamped lookup.
        const size_t groups = nb / 16;
        const auto plain = [&](size_t g) { return nan16[g] == 0 && !sat16[g]; };
        for (size_t g = 0; g < groups;) {
          while (g < groups && plain(g)) ++g;
          adds(16 * g);
          while (g < groups && !plain(g)) ++g;
          quads(16 * g);
        }
        quads(nb);
      }
      for (; b + 2 <= nb; b += 2) {
        const uint8_t c0 = codes[b], c1 = codes[b + 1];
        const bool codes_ok = (c0 | c1) < 128;
        if (HWY_LIKELY(codes_ok && (thr->bucketed[c0] & thr->bucketed[c1]))) {
          Nvfp4Bf16PairBuckets(in + b * kBlock * kIn, thr->bucket[c0],
                               thr->bucket[c1], elements + b * kOutPerBlock);
        } else if (codes_ok && thr->usable[c0] && thr->usable[c1]) {
          HWY_ALIGN uint64_t pair[8];
          PairThresholds(thr->row[c0], thr->row[c1], pair);
          Nvfp4Bf16Pair(in + b * kBlock * kIn, pair,
                        elements + b * kOutPerBlock);
        } else {
          divide(b);
          divide(b + 1);
        }
      }
      if (b < nb) divide(b);
      return;
    }
#endif
#if HWY_TARGET <= HWY_AVX3 && HWY_ARCH_X86
    if constexpr (kMx8Wide) {
      // Two blocks at a time; a block with a slow lane (below e4m3's
      // normal range after the scale, NaN, or a scale out of range) goes
      // to Mxfp8Bf16Block or the f32 path.
      const auto one = [&](size_t b) {
        const uint8_t* block_in = in + b * kBlock * kIn;
        if (Mxfp8Bf16Block(block_in, codes[b], elements + b * kBlock)) return;
        factor[b] = FactorOf(tensor_scale, amax[b]);
        for (size_t v = b * kBlock / N; v < (b + 1) * kBlock / N; ++v)
          StoreLanes<1>(du, codes_of(v), elements + v * N);
      };
      // The high bytes of two vectors of u16 lanes.
      HWY_ALIGN static constexpr uint8_t kOdd[64] = {
          1,   3,   5,   7,   9,   11,  13,  15,  17,  19,  21,  23,  25,
          27,  29,  31,  33,  35,  37,  39,  41,  43,  45,  47,  49,  51,
          53,  55,  57,  59,  61,  63,  65,  67,  69,  71,  73,  75,  77,
          79,  81,  83,  85,  87,  89,  91,  93,  95,  97,  99,  101, 103,
          105, 107, 109, 111, 113, 115, 117, 119, 121, 123, 125, 127};
      const __m512i odd = _mm512_load_si512(kOdd);
      size_t b = 0;
      for (; b + 2 <= nb; b += 2) {
        const uint8_t* p = in + b * kBlock * kIn;
        const __m512i x0 = _mm512_loadu_si512(p);
        const __m512i x1 = _mm512_loadu_si512(p + 64);
        const __m512i a0 = _mm512_and_si512(x0, K16(0x7FFF).raw);
        const __m512i a1 = _mm512_and_si512(x1, K16(0x7FFF).raw);
        const __m512i v0 = _mm512_subs_epu16(
            a0, _mm512_set1_epi32(static_cast<int>(mx_sub[b])));
        const __m512i v1 = _mm512_subs_epu16(
            a1, _mm512_set1_epi32(static_cast<int>(mx_sub[b + 1])));
        // v < 0x87 where |x| < S + 0x80 (below e4m3's smallest normal 2^-6
        // after the scale: the slow lanes, and +-0 among them), and in
        // every lane of a block without fast path (v = 0); only then the
        // exact test 0 < |x| < S + 0x80, or the block's bound 0xFFFF. (A
        // lane of either block below 0x87 is one of their minimum.)
        if (HWY_UNLIKELY(_mm512_cmplt_epu16_mask(_mm512_min_epu16(v0, v1),
                                                 K16(0x87).raw) != 0)) {
          const __mmask32 slow0 = _mm512_cmplt_epu16_mask(
              _mm512_sub_epi16(a0, K16(1).raw),
              _mm512_set1_epi32(static_cast<int>(mx_bound[b])));
          const __mmask32 slow1 = _mm512_cmplt_epu16_mask(
              _mm512_sub_epi16(a1, K16(1).raw),
              _mm512_set1_epi32(static_cast<int>(mx_bound[b + 1])));
          if (!_kortestz_mask32_u8(slow0, slow1)) {
            one(b);
            one(b + 1);
            continue;
          }
        }
        const __m512i c0 = Mx8Bf16Codes(x0, v0);
        const __m512i c1 = Mx8Bf16Codes(x1, v1);
#if HWY_TARGET <= HWY_AVX3_DL
        _mm512_storeu_si512(elements + b * kBlock,
                            _mm512_permutex2var_epi8(c0, odd, c1));
#else
        (void)odd;
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(elements + b * kBlock),
                            _mm512_cvtepi16_epi8(_mm512_srli_epi16(c0, 8)));
        _mm256_storeu_si256(
            reinterpret_cast<__m256i*>(elements + (b + 1) * kBlock),
            _mm512_cvtepi16_epi8(_mm512_srli_epi16(c1, 8)));
#endif
      }
      if (b < nb) one(b);
      return;
    }
    if constexpr (kMx4Wide) {
      // Sixteen blocks at a time, two per step, where all their scale
      // exponents are in range; else one block at a time.
      const auto one = [&](size_t b) {
        const uint8_t* block_in = in + b * kBlock * kIn;
        if (CtMxfp4Bf16Block(block_in, codes[b], elements + b * kOutPerBlock))
          return;
        factor[b] = FactorOf(tensor_scale, amax[b]);
        for (size_t v = b * kBlock / N; v < (b + 1) * kBlock / N; ++v)
          StoreNibbles(codes_of(v), elements + v * N / 2);
      };
#ifdef MXPACK_HAVE_MX_E2M1_BF16
      // The nibbles of two blocks by one lookup in the e2m1 byte table of
      // MxE2m1FromBf16::Encode64Bf16: the index bytes in element order (the
      // low byte of each u16 lane), the codes, then c_even + 16 c_odd in
      // u16 lanes (vpmaddubsw) and their low bytes.
      const MxE2m1FromBf16::Consts k = MxE2m1FromBf16::Make<false>();
      const __m512i weights = _mm512_set1_epi16(0x1001);
      for (size_t g = 0; g < nb; g += 16) {
        if (HWY_UNLIKELY(mx4_bad[g / 16] != 0 || nan16[g / 16] != 0 ||
                         nb - g < 16)) {
          for (size_t b = g; b < HWY_MIN(g + 16, nb); ++b) one(b);
          continue;
        }
        for (size_t b = g; b < g + 16; b += 2) {
          const uint8_t* p = in + b * kBlock * kIn;
          __m512i x0 = _mm512_loadu_si512(p);
          __m512i x1 = _mm512_loadu_si512(p + 64);
          // One load per block: GCC would otherwise fold it into each use.
          asm("" : "+v"(x0), "+v"(x1));  // NOLINT(hicpp-no-assembler)
          const __m512i i0 = Mx4TableIndex(
              x0, _mm512_set1_epi32(static_cast<int>(mx_sub[b])),
              _mm512_set1_epi32(static_cast<int>(mx_bound[b])), k);
          const __m512i i1 = Mx4TableIndex(
              x1, _mm512_set1_epi32(static_cast<int>(mx_sub[b + 1])),
              _mm512_set1_epi32(static_cast<int>(mx_bound[b + 1])), k);
          const __m512i idx = _mm512_permutex2var_epi8(i0, k.low_bytes, i1);
          const __m512i c = _mm512_permutex2var_epi8(k.bf16_lo, idx, k.bf16_hi);
          const __m512i pairs = _mm512_maddubs_epi16(c, weights);
          _mm256_storeu_si256(
              reinterpret_cast<__m256i*>(elements + b * kOutPerBlock),
              _mm512_castsi512_si256(
                  _mm512_permutexvar_epi8(k.low_bytes, pairs)));
        }
      }
      return;
#endif
      for (size_t g = 0; g < nb; g += 16) {
        if (HWY_UNLIKELY(mx4_bad[g / 16] != 0 || nb - g < 16)) {
          for (size_t b = g; b < HWY_MIN(g + 16, nb); ++b) one(b);
          continue;
        }
        const auto pairs = [&](auto clamp) {
          constexpr bool kClamp = decltype(clamp)::value;
          for (size_t b = g; b < g + 16; b += 2) {
            const uint8_t* p = in + b * kBlock * kIn;
            const __m512i n0 = Mx4Bf16Nibbles<kClamp>(
                _mm512_loadu_si512(p),
                _mm512_set1_epi32(static_cast<int>(mx_sub[b])),
                _mm512_set1_epi32(static_cast<int>(mx_bound[b])));
            const __m512i n1 = Mx4Bf16Nibbles<kClamp>(
                _mm512_loadu_si512(p + 64),
                _mm512_set1_epi32(static_cast<int>(mx_sub[b + 1])),
                _mm512_set1_epi32(static_cast<int>(mx_bound[b + 1])));
            _mm256_storeu_si256(
                reinterpret_cast<__m256i*>(elements + b * kOutPerBlock),
                NibblePairs2(n0, n1));
          }
        };
        if (nan16[g / 16] == 0) {
          pairs(std::false_type());
        } else {
          pairs(std::true_type());
        }
      }
      return;
    }
#endif
    if constexpr ((kArith == internal::StackArith::kCtMxfp4 || kFp8) &&
                  kSrc == internal::SrcKind::kBF16) {
      for (size_t b = 0; b < nb; ++b) {
        const uint8_t* block_in = in + b * kBlock * kIn;
        uint8_t* block_out = elements + b * kOutPerBlock;
        if (kFp8 ? Mxfp8Bf16Block(block_in, codes[b], block_out)
                 : CtMxfp4Bf16Block(block_in, codes[b], block_out)) {
          continue;
        }
        for (size_t v = b * kBlock / N; v < (b + 1) * kBlock / N; ++v) {
          if constexpr (kFp8) {
            StoreLanes<1>(du, codes_of(v), elements + v * N);
          } else {
            StoreNibbles(codes_of(v), elements + v * N / 2);
          }
        }
      }
      return;
    }
    const size_t nvec = nb * kBlock / N;
    size_t v = 0;
    for (; v + 4 <= nvec; v += 4) {
      const VU c0 = codes_of(v), c1 = codes_of(v + 1), c2 = codes_of(v + 2),
               c3 = codes_of(v + 3);
      if constexpr (kFp8) {
        StoreBytes4(du, c0, c1, c2, c3, elements + v * N);
      } else {
        StoreNibbles4(c0, c1, c2, c3, elements + v * N / 2);
      }
    }
    for (; v < nvec; ++v) {
      if constexpr (kFp8) {
        StoreLanes<1>(du, codes_of(v), elements + v * N);
      } else {
        StoreNibbles(codes_of(v), elements + v * N / 2);
      }
    }
  }

  // A constant u16-lane vector kept in a register: GCC otherwise rebuilds
  // broadcast constants from immediates inside the block loops.
  static HWY_INLINE hn::Vec<hn::RebindToSigned<hn::CappedTag<uint16_t, 32>>>
  K16(int v) {
    auto k = hn::Set(hn::RebindToSigned<hn::CappedTag<uint16_t, 32>>(),
                     static_cast<int16_t>(v));
#if HWY_ARCH_X86 && HWY_TARGET != HWY_EMU128 && \
    (HWY_COMPILER_GCC || HWY_COMPILER_CLANG)
    asm("" : "+v"(k.raw));
#endif
    return k;
  }

#if HWY_TARGET <= HWY_AVX3 && HWY_ARCH_X86
  // The count of a bucket table lookup (internal::MakeStackBuckets): the
  // entry e = below << 11 | offset plus 1 << 11 where the low 5 bits of d
  // (its place in the bucket) exceed the offset. (d & 31) | (e & ~31) is
  // above e exactly then: one bit select instead of a shift of d.
  static constexpr int kBucketOne = 1 << 11;
  // The sign bit of the nibble in the same place (8 << 11).
  static constexpr int kBucketSign = 8 << 11;
  static HWY_INLINE __m512i BucketCount(__m512i d, __m512i e) {
    const __m512i low = _mm512_ternarylogic_epi32(K16(31).raw, d, e, 0xCA);
    return _mm512_mask_add_epi16(e, _mm512_cmpgt_epu16_mask(low, e), e,
                                 K16(kBucketOne).raw);
  }
#endif

  // compressed-tensors MXFP4 from bf16: one block of 32 elements in u16
  // lanes; false (nothing written) where the scale exponent s = code - 127
  // is outside [-124, 125] (a threshold below bf16's normal range, or the
  // Inf scale). With scale 2^s, q = x 2^-s is exact wherever it is an f32
  // normal, so E2m1Nibble's comparisons of q with the e2m1 rounding
  // thresholds are comparisons of |x| with the thresholds times 2^s: bf16
  // numbers whose bits are the threshold's plus s << 7. On y = |x|'s bits -
  // (s << 7) (i16, saturating: NaN, Inf and huge |x| stay above every
  // threshold; tiny ones go below them), in the order of the values:
  //   |q| > 0.25, 1.25, 2.5, 5:    y > 0x3E80, 0x3FA0, 0x4020, 0x40A0
  //   |q| >= 0.75, 1.75, 3.5:      y > 0x3F3F, 0x3FDF, 0x405F
  // The nibble is that count (7 for NaN), plus the sign of x unless q is
  // zero after RoundToDtype: q below f32's normal range is rounded to bf16,
  // and is zero iff RN_f32(|x| 2^-s) <= 2^-134, i.e. |x| <= 2^(s-134)
  // (1 + 2^-16), whose bf16 round-down Z is 2^(s-134) (bits (s - 7) << 7
  // for s >= 8, the subnormal 1 << (s - 1) for 1 <= s <= 7) or 0 (s <= 0).
  using D16 = hn::CappedTag<uint16_t, 32>;
  using DI16 = hn::RebindToSigned<D16>;
  using VI16 = hn::Vec<DI16>;
  static HWY_INLINE bool CtMxfp4Bf16Block(const uint8_t* HWY_RESTRICT in,
                                          uint8_t code, uint8_t* out) {
    const int s = static_cast<int>(code) - 127;
    if (s < -124 || s > 125) return false;
    const DI16 di16;
    const hn::Repartition<uint32_t, DI16> d32;
    const size_t N16 = hn::Lanes(di16);
    const VI16 shift = hn::Set(di16, static_cast<int16_t>(s * 128));
    const int z = s >= 8 ? (s - 7) << 7 : s >= 1 ? 1 << (s - 1) : 0;
    const VI16 zero_max = hn::Set(di16, static_cast<int16_t>(z));
    // Thresholds on y (see above).
    constexpr int16_t kThr[7] = {0x3E80, 0x3F3F, 0x3FA0, 0x3FDF,
                                 0x4020, 0x405F, 0x40A0};
    for (size_t j = 0; j < 32; j += N16) {
      const VI16 x = hn::LoadU(di16, reinterpret_cast<const int16_t*>(in) + j);
      const VI16 a = hn::And(x, K16(0x7FFF));
      const VI16 y = hn::SaturatedSub(a, shift);
      VI16 c;
#if HWY_TARGET <= HWY_AVX3 && HWY_ARCH_X86
      if constexpr (hn::MaxLanes(di16) == 32) {
        // The count from the bucket table of the thresholds (as for NVFP4,
        // Nvfp4Bf16PairBuckets): d = |x| -sat ((s << 7) + B) is y - B, or
        // 0 where y <= B (u16: (s << 7) + B > 0, and no overflow).
        static constexpr unsigned kThrU[7] = {0x3E80, 0x3F3F, 0x3FA0, 0x3FDF,
                                              0x4020, 0x405F, 0x40A0};
        static constexpr unsigned kOrigin = 0x3E80 - 31;
        static constexpr internal::StackBuckets kBuckets =
            internal::MakeStackBuckets(kThrU, kOrigin);
        static_assert(kBuckets.ok, "one threshold per bucket");
        const __m512i d = _mm512_subs_epu16(
            a.raw, _mm512_set1_epi16(static_cast<int16_t>(s * 128 + kOrigin)));
        const __m512i e = _mm512_permutexvar_epi16(
            _mm512_min_epu16(_mm512_srli_epi16(d, 5), K16(29).raw),
            _mm512_loadu_si512(kBuckets.entry));
        __m512i n = BucketCount(d, e);
        // (z = 0, the usual case: a test instead of a broadcast compare.)
        const __mmask32 neg = _mm512_movepi16_mask(x.raw);
        const __mmask32 signed_q =
            z == 0 ? _mm512_mask_test_epi16_mask(neg, a.raw, a.raw)
                   : _mm512_mask_cmpgt_epu16_mask(neg, a.raw, zero_max.raw);
        n = _mm512_mask_add_epi16(n, signed_q, n, K16(kBucketSign).raw);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out + j / 2),
                         NibblePairs(n));
        continue;
      } else
#endif
      {
        const auto gt = [&](int i) {
          return hn::VecFromMask(di16, hn::Gt(y, K16(kThr[i])));
        };
        // Each comparison's all-ones lanes (-1) summed: minus the count.
        c = hn::Add(hn::Add(gt(0), gt(1)), hn::Add(gt(2), gt(3)));
        c = hn::Add(c, hn::Add(hn::Add(gt(4), gt(5)), gt(6)));
        c = hn::Sub(hn::Zero(di16), c);
      }
      // The sign (bit 15 -> bit 3) where q is not zero.
      const VI16 sign =
          hn::BitCast(di16, hn::And(hn::ShiftRight<12>(hn::BitCast(D16(), x)),
                                    hn::BitCast(D16(), K16(8))));
      c = hn::Or(c, hn::IfThenElseZero(hn::Gt(a, zero_max), sign));
      // Nibble pairs: in u32 lanes, c_even | c_odd << 4 is the low byte of
      // w | w >> 12.
      const auto w = hn::BitCast(d32, c);
      const auto pair = hn::Or(w, hn::ShiftRight<12>(w));
#if HWY_TARGET <= HWY_AVX3 && HWY_ARCH_X86
      if constexpr (hn::MaxLanes(d32) == 16) {
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out + j / 2),
                         _mm512_cvtepi32_epi8(pair.raw));
        continue;
      }
#endif
      const hn::RebindToSigned<decltype(d32)> di32;
      const hn::Rebind<uint8_t, decltype(d32)> d8;
      // (< 256 once masked: the saturating demotion keeps it.)
      const auto byte = hn::BitCast(di32, hn::And(pair, hn::Set(d32, 0xFFu)));
      hn::StoreU(hn::DemoteTo(d8, byte), d8, out + j / 2);
    }
    return true;
  }

  // MXFP8 (compressed-tensors and ModelOpt) from bf16: one block of 32
  // elements in u16 lanes; false where a lane needs the f32 path (then the
  // caller rewrites the whole block). As in CtMxfp4Bf16Block, y = |x|'s
  // bits - (s << 7) (saturating) are the bf16 bits of |q| = |x| 2^-s
  // wherever |x| is normal and q is an f32 normal; for s >= -120 a
  // subnormal x gives y < 0x3C80 = 2^-6. Where y >= 2^-6 (e4m3 normal), the
  // code is the rn of y to 3 mantissa bits, rebiased (127 - 7 = 120
  // exponents, 960 in code units), saturated at 0x7E (satfinite; ModelOpt's
  // clamp to +-448 gives the same), with the sign of x; +-Inf gives
  // 0x7E / 0xFE, +-0 0x00 / 0x80 and NaN 0x7F. Lanes with 0 < |x| and y < 2^-6
  // (e4m3 subnormals and below, where ct also rounds q to bf16) take the f32
  // path.
  static HWY_INLINE bool Mxfp8Bf16Block(const uint8_t* HWY_RESTRICT in,
                                        uint8_t code, uint8_t* out) {
    const int s = static_cast<int>(code) - 127;
    if (s < -120 || s > 127) return false;
    const DI16 di16;
    const D16 d16;
    const hn::Rebind<uint8_t, DI16> d8;
    const size_t N16 = hn::Lanes(di16);
    const VI16 shift = hn::Set(di16, static_cast<int16_t>(s * 128));
#if HWY_TARGET <= HWY_AVX3 && HWY_ARCH_X86
    if constexpr (hn::MaxLanes(di16) == 32) {
      // One vector; Inf and NaN lanes also take the f32 path (rare), so
      // that every lane left is +-0 or has y >= 2^-6: 0 < |x| < shift +
      // 2^-6 is |x| - 1 < shift + 0x3C80 - 1 in u16 (> 0 for s >= -120).
      const __m512i x = _mm512_loadu_si512(in);
      const __m512i a = _mm512_and_si512(x, K16(0x7FFF).raw);
      const __mmask32 slow =
          _mm512_cmplt_epu16_mask(
              _mm512_sub_epi16(a, K16(1).raw),
              _mm512_set1_epi16(static_cast<int16_t>(s * 128 + 0x3C80 - 1))) |
          _mm512_cmpgt_epu16_mask(a, K16(0x7F7F).raw);
      if (slow != 0) return false;
      const __m512i y = _mm512_subs_epi16(a, shift.raw);
      // rn to 3 mantissa bits and the rebias (960 << 4 = 15360) in one
      // add: y + 7 + lsb - 15360 > 0 for y >= 0x3C80.
      const __m512i lsb = _mm512_and_si512(_mm512_srli_epi16(y, 4), K16(1).raw);
      const __m512i rn = _mm512_srli_epi16(
          _mm512_add_epi16(_mm512_add_epi16(y, K16(7 - 15360).raw), lsb), 4);
      // Zeros 0, the rest saturated at 0x7E; then x's sign.
      const __m512i c = _mm512_maskz_min_epu16(_mm512_test_epi16_mask(a, a), rn,
                                               K16(0x7E).raw);
      const __m512i signed_c = _mm512_ternarylogic_epi32(
          c, _mm512_srli_epi16(x, 8), K16(0x80).raw, 0xF8);  // c | (s & 0x80)
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out),
                          _mm512_cvtepi16_epi8(signed_c));
      return true;
    }
#endif
    const VI16 min_normal = K16(0x3C80);
    const VI16 zero = hn::Zero(di16);
    for (size_t j = 0; j < 32; j += N16) {
      const VI16 x = hn::LoadU(di16, reinterpret_cast<const int16_t*>(in) + j);
      const VI16 a = hn::And(x, K16(0x7FFF));
      const VI16 y = hn::SaturatedSub(a, shift);
      if (!hn::AllFalse(di16,
                        hn::And(hn::Gt(a, zero), hn::Lt(y, min_normal)))) {
        return false;
      }
      // rn to 3 of bf16's 7 mantissa bits (u16: y + 8 < 2^16).
      const auto yu = hn::BitCast(d16, y);
      const auto lsb = hn::And(hn::ShiftRight<4>(yu), hn::BitCast(d16, K16(1)));
      const auto rn = hn::ShiftRight<4>(
          hn::Add(hn::Add(yu, hn::BitCast(d16, K16(7))), lsb));
      VI16 c = hn::Sub(hn::BitCast(di16, rn), K16(960));
      c = hn::Min(hn::IfThenZeroElse(hn::Eq(a, zero), c), K16(0x7E));
      // Inf (whose y is no longer Inf's bits) saturates too.
      c = hn::IfThenElse(hn::Eq(a, K16(0x7F80)), K16(0x7E), c);
      const VI16 sign =
          hn::BitCast(di16, hn::And(hn::ShiftRight<8>(hn::BitCast(d16, x)),
                                    hn::BitCast(d16, K16(0x80))));
      c = hn::IfThenElse(hn::Gt(a, K16(0x7F80)), K16(0x7F), hn::Or(c, sign));
      hn::StoreU(hn::DemoteTo(d8, c), d8, out + j);
    }
    return true;
  }

#if HWY_TARGET <= HWY_AVX3 && HWY_ARCH_X86
  // MXFP8 codes of one block of 32 bf16 x (a = |x|'s bits) whose lanes are
  // all +-0 or finite with y = a - (s << 7) >= 2^-6 (the caller checks), as
  // Mxfp8Bf16Block computes them, in fewer operations, each in the high
  // byte of its u16 lane. Both stacks' scales keep |q| = |x| 2^-s <= 448
  // for bf16 blocks without Inf and NaN (compressed-tensors: amax's
  // significand rounds up from 1.75; ModelOpt: 2^s >= amax / 448, as
  // amax / 448 in bf16 is never within f32's log2 rounding of a power of
  // two), so no lane saturates. With S = (s << 7) + 0x3C00 (y's rebias by
  // 120 exponents, 960 << 4), the code's magnitude is rn((a - S) / 16)
  // (+-0 lanes: a -sat S = 0):
  //   v = a -sat (S - 7) = v0 + 7 (or 0),
  //   code = (v0 + 7 + lsb) >> 4 = (v + lsb) >> 4,
  // where lsb (bit 4 of v0, ties to even) may be read from v: the + 7
  // carries into bit 4 only where v0's low bits are 9..15, which round up
  // whatever lsb is. Then (v + lsb) << 4 = (v << 4) + (v & 0x10)
  // (< 0x8000) puts the code in bits 8..14 and x's sign bit joins it. v:
  // a -sat (S - 7) (s >= -119).
  static HWY_INLINE __m512i Mx8Bf16Codes(__m512i x, __m512i v) {
    const __m512i r = _mm512_add_epi16(_mm512_slli_epi16(v, 4),
                                       _mm512_and_si512(v, K16(0x10).raw));
    return _mm512_ternarylogic_epi32(r, x, K16(0x8000).raw, 0xF8);
  }

  // The MXFP4 nibbles of one block of 32 bf16 x as CtMxfp4Bf16Block's
  // bucket table gives them, with both per-block constants ready in u16
  // lanes: sub = (s << 7) + kMx4Origin, bound = 0x8000 + z (x > bound as
  // u16: x negative and |x| > z, so q keeps its sign).
  static constexpr int kMx4Origin = 0x3E80 - 31;
  // !kClamp: the caller knows that the block holds no NaN; then every
  // bucket index is at most 19: |q| = |x| 2^-s <= amax 2^-s < 7 (amax
  // below 1.75 2^e gives s = e - 2; from 1.75 2^e up, s = e - 1), so
  // y < 0x40E0 and d < 0x40E0 - kMx4Origin = 639.
  template <bool kClamp = true>
  static HWY_INLINE __m512i Mx4Bf16Nibbles(__m512i x, __m512i sub,
                                           __m512i bound) {
    static constexpr unsigned kThrU[7] = {0x3E80, 0x3F3F, 0x3FA0, 0x3FDF,
                                          0x4020, 0x405F, 0x40A0};
    static constexpr internal::StackBuckets kBuckets =
        internal::MakeStackBuckets(kThrU, kMx4Origin);
    static_assert(kBuckets.ok, "one threshold per bucket");
    const __m512i d =
        _mm512_subs_epu16(_mm512_and_si512(x, K16(0x7FFF).raw), sub);
    const __m512i j = _mm512_srli_epi16(d, 5);
    const __m512i e =
        _mm512_permutexvar_epi16(kClamp ? _mm512_min_epu16(j, K16(29).raw) : j,
                                 _mm512_loadu_si512(kBuckets.entry));
    const __m512i n = BucketCount(d, e);
    return _mm512_mask_add_epi16(n, _mm512_cmpgt_epu16_mask(x, bound), n,
                                 K16(kBucketSign).raw);
  }

#ifdef MXPACK_HAVE_MX_E2M1_BF16
  // The e2m1 byte-table index (MxE2m1FromBf16::Encode64Bf16's p << 6 |
  // b' << 1 | s) of each of the 32 bf16 x of one block, which gives
  // compressed-tensors' nibble (as CtMxfp4Bf16Block) for blocks without
  // NaN: q = x 2^-s is exact where it is an f32 normal, |q| < 8 (see
  // Mx4Bf16Nibbles), and E2m1Nibble rounds q to nearest even as the table
  // does; k1: K + 1 = ((s + 124) << 7) + 1 in u16 lanes. The sign bit s
  // comes from x -sat (z + 1) (z1), which keeps bit 15 exactly where x is
  // negative and |x| > z (CtMxfp4Bf16Block's z: q is not zero after
  // RoundToDtype; -0 among the rest); lanes with |x| <= z < K have w1 = 0,
  // magnitude code 0 whatever p is.
  static HWY_INLINE __m512i Mx4TableIndex(__m512i x, __m512i k1, __m512i z1,
                                          const MxE2m1FromBf16::Consts& k) {
    const __m512i w1 = _mm512_subs_epu16(_mm512_and_si512(x, k.abs), k1);
    const __m512i u =
        _mm512_ternarylogic_epi32(_mm512_srli_epi16(w1, 5), x, _mm512_set1_epi16(0x20), 0xF8);
    return _mm512_shldi_epi16(u, _mm512_subs_epu16(x, z1), 1);
  }
#endif

  // Byte kByte of each u32 lane of p0, then of p1: 32 bytes.
  template <int kByte>
  static HWY_INLINE __m256i U32Bytes2(__m512i p0, __m512i p1) {
#if HWY_TARGET <= HWY_AVX3_DL
    constexpr int b = kByte * 0x01010101;
    const __m512i idx = _mm512_setr_epi32(
        0x0C080400 + b, 0x1C181410 + b, 0x2C282420 + b, 0x3C383430 + b, 0x4C484440 + b,
        0x5C585450 + b, 0x6C686460 + b, 0x7C787470 + b, 0, 0, 0, 0, 0, 0, 0, 0);
    return _mm512_castsi512_si256(_mm512_permutex2var_epi8(p0, idx, p1));
#else
    const auto low = [](__m512i p) {
      return _mm512_cvtepi32_epi8(kByte == 0 ? p : _mm512_srli_epi32(p, 8 * kByte));
    };
    return _mm256_set_m128i(low(p1), low(p0));
#endif
  }

  // NibblePairs of two vectors: 32 bytes.
  static HWY_INLINE __m256i NibblePairs2(__m512i n0, __m512i n1) {
    const __m512i m = _mm512_set1_epi32(kNibbleMadd);
    return U32Bytes2<2>(_mm512_madd_epi16(n0, m), _mm512_madd_epi16(n1, m));
  }

  // The scale codes of 16 blocks (of which `valid` are real) from their
  // amax bits `a` by StackNvfp4Thresholds' code table; false (code
  // unchanged) where a real block lies outside the table's range. The
  // table's byte index is bits 16..22 of A (vpermt2b reads 7 bits of each
  // index byte), the exponent term 8 e bits 20.. of A with the low three
  // (mantissa) bits cleared.
  // CodeLut: the table as LoadCodeLut holds it (where t.code_table), and
  // the constants of Nvfp4Bf16TableCodes and of the test for codes
  // saturated at 448 (above_sat), made once per chunk and kept in registers
  // (GCC otherwise rebuilds broadcast constants inside the loop).
  struct CodeLut {
    __m512i lut[4];
    __m512i low_byte, exp8, bias, min_bits, range, eight, max_code, above_sat;
  };
  static HWY_INLINE void LoadCodeLut(const internal::StackNvfp4Thresholds& t,
                                     CodeLut& k) {
    for (__m512i& v : k.lut) v = _mm512_setzero_si512();
    if (t.code_table) {
#if HWY_TARGET <= HWY_AVX3_DL
      k.lut[0] = _mm512_load_si512(t.code_lut);
      k.lut[1] = _mm512_load_si512(t.code_lut + 64);
#else
      // (Without VBMI: u16 entries, 32 per vector.)
      for (int j = 0; j < 4; ++j) {
        k.lut[j] = _mm512_cvtepu8_epi16(_mm256_load_si256(
            reinterpret_cast<const __m256i*>(t.code_lut + 32 * j)));
      }
#endif
    }
    k.low_byte = _mm512_set1_epi32(0xFF);
    k.exp8 = _mm512_set1_epi32(~7);
    k.bias = _mm512_set1_epi32(t.code_bias);
    k.min_bits = _mm512_set1_epi32(static_cast<int>(t.code_min_bits));
    k.range =
        _mm512_set1_epi32(static_cast<int>(0x7F800000u - t.code_min_bits));
    k.eight = _mm512_set1_epi32(8);
    k.max_code = _mm512_set1_epi32(0x7E);
    k.above_sat = _mm512_set1_epi32(0x7D);
    asm("" : "+v"(k.low_byte), "+v"(k.exp8), "+v"(k.bias), "+v"(k.min_bits),
        "+v"(k.range), "+v"(k.eight), "+v"(k.max_code),
        "+v"(k.above_sat));  // NOLINT(hicpp-no-assembler)
  }
  static HWY_INLINE bool Nvfp4Bf16TableCodes(const CodeLut& k, VU a,
                                             size_t valid, VU& code) {
    const __m512i* lut = k.lut;
    const __m512i idx = _mm512_srli_epi32(a.raw, 16);
#if HWY_TARGET <= HWY_AVX3_DL
    const __m512i lk = _mm512_permutex2var_epi8(lut[0], idx, lut[1]);
#else
    // Entries 0..63 and 64..127 by index bits 0..5, then bit 6 picks.
    const __m512i lk = _mm512_mask_blend_epi16(
        _mm512_test_epi16_mask(idx, _mm512_set1_epi16(0x40)),
        _mm512_permutex2var_epi16(lut[0], idx, lut[1]),
        _mm512_permutex2var_epi16(lut[2], idx, lut[3]));
#endif
    const __m512i e8 = _mm512_and_si512(_mm512_srli_epi32(a.raw, 20), k.exp8);
    const __m512i sum = _mm512_add_epi32(_mm512_and_si512(lk, k.low_byte),
                                         _mm512_add_epi32(e8, k.bias));
    const __mmask16 real =
        valid >= 16 ? __mmask16{0xFFFF}
                    : static_cast<__mmask16>((1u << valid) - 1u);
    // code_min_bits <= A < Inf (the scale of an Inf amax is not 2^k times
    // that of a finite one), and the sum >= 8.
    const __mmask16 ok = _mm512_mask_cmpge_epi32_mask(
        _mm512_cmplt_epu32_mask(_mm512_sub_epi32(a.raw, k.min_bits), k.range),
        sum, k.eight);
    if (HWY_UNLIKELY((ok & real) != real)) return false;
    code = VU{_mm512_min_epi32(sum, k.max_code)};
    return true;
  }

  // NVFP4 from bf16: two blocks (32 elements) in u16 lanes, each element's
  // nibble by comparison (internal::StackNvfp4Thresholds): the magnitude
  // code is the number of thresholds |x|'s bits exceed, the sign that of x
  // where q is not +-0 (NaN: 7 and x's sign, as x / div carries it). The
  // blocks' u32 element pairs are interleaved (pair j of block 0, then of
  // block 1), so that each threshold pair is one u64 broadcast (block 0's
  // u16 threshold twice, block 1's twice); the nibble bytes come out
  // interleaved the same way and one byte shuffle puts them back in order.
  //
  // PairThresholds: the u64 threshold pairs of blocks with rows row0, row1:
  // lane i of the unpacklo / unpackhi halves holds thresholds 0, 1, 4, 5 /
  // 2, 3, 6, 7 (kSlot).
  static HWY_INLINE void PairThresholds(const uint32_t* row0,
                                        const uint32_t* row1, uint64_t* pair) {
    const __m256i r0 =
        _mm256_load_si256(reinterpret_cast<const __m256i*>(row0));
    const __m256i r1 =
        _mm256_load_si256(reinterpret_cast<const __m256i*>(row1));
    _mm256_store_si256(reinterpret_cast<__m256i*>(pair),
                       _mm256_unpacklo_epi32(r0, r1));
    _mm256_store_si256(reinterpret_cast<__m256i*>(pair + 4),
                       _mm256_unpackhi_epi32(r0, r1));
  }

  // The same two blocks with each code from a table of 32-element buckets
  // of |x|'s bits (internal::StackNvfp4Thresholds::bucket): with
  // d = |x| -sat B, bucket min(d >> 5, 29) holds at most one threshold, so
  // the code is the bucket's base count plus one where d's low 5 bits
  // exceed the threshold's offset in the bucket (BucketCount; entry =
  // base << 11 | offset). vpermt2w looks up both blocks' tables at once (index
  // bit 5 picks block 1's), entries 30 and 31 give Z and B per lane.
  static HWY_INLINE void Nvfp4Bf16PairBuckets(const uint8_t* HWY_RESTRICT in,
                                              const uint16_t* tab0,
                                              const uint16_t* tab1,
                                              uint8_t* out) {
    const __m512i t0 = _mm512_load_si512(tab0);
    const __m512i t1 = _mm512_load_si512(tab1);
    // Index bit 5 (block 1's table) in lanes 16..31.
    const __m512i sel = _mm512_maskz_mov_epi16(0xFFFF0000u, K16(32).raw);
    const __m512i x = _mm512_loadu_si512(in);
    const __m512i a = _mm512_and_si512(x, K16(0x7FFF).raw);
    const __m512i base =
        _mm512_permutex2var_epi16(t0, _mm512_or_si512(sel, K16(31).raw), t1);
    const __m512i d = _mm512_subs_epu16(a, base);
    const __m512i idx = _mm512_or_si512(
        _mm512_min_epu16(_mm512_srli_epi16(d, 5), K16(29).raw), sel);
    const __m512i e = _mm512_permutex2var_epi16(t0, idx, t1);
    __m512i n = BucketCount(d, e);
    // The sign where q is not +-0: |x| > Z, usually Z = 0 for both blocks
    // (then a test instead of a lookup and a compare).
    const __mmask32 neg = _mm512_movepi16_mask(x);
    const __mmask32 signed_q =
        (tab0[30] | tab1[30]) == 0
            ? _mm512_mask_test_epi16_mask(neg, a, a)
            : _mm512_mask_cmpgt_epu16_mask(
                  neg, a,
                  _mm512_permutex2var_epi16(
                      t0, _mm512_or_si512(sel, K16(30).raw), t1));
    n = _mm512_mask_add_epi16(n, signed_q, n, K16(kBucketSign).raw);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), NibblePairs(n));
  }

  // The start of Nvfp4Bf16PairN for two blocks of bf16
  // x (one per 256-bit half): each half's table (tab0 for the low, tab1 for
  // the high; sel picks tab1 in a two-table u16 permute) and
  // d = |x| -sat base, the distance above its table's base (entry 31).
  struct PairDelta {
    HWY_INLINE PairDelta(const uint8_t* HWY_RESTRICT in, const uint16_t* tab0,
                         const uint16_t* tab1)
        : t0(_mm512_load_si512(tab0)),
          t1(_mm512_load_si512(tab1)),
          sel(_mm512_maskz_mov_epi16(0xFFFF0000u, K16(32).raw)),
          x(_mm512_loadu_si512(in)) {
      const __m512i a = _mm512_and_si512(x, K16(0x7FFF).raw);
      const __m512i base =
          _mm512_permutex2var_epi16(t0, _mm512_or_si512(sel, K16(31).raw), t1);
      d = _mm512_subs_epu16(a, base);
    }
    __m512i t0, t1, sel, x, d;
  };

  // Nvfp4Bf16PairBuckets' nibbles (u16 lanes, NibblePairs' form) where
  // both tables have Z = 0: the sign where x > 0x8000 as u16 (negative and
  // not -0). !kClamp: the caller knows that d >> 5 <= 29 in every lane, as
  // holds for blocks without NaN whose scale code is below 0x7E: then
  // |q| = |x| / div <= amax / div <= 6 s / e4m3(s) (1 + 2^-7) < 9.1 (s the
  // block scale before its rounding to e4m3: at most 2^-4 relative below
  // s for normal codes, and for subnormal codes at least 2 / 3 of s, or
  // above it), so |x| < 37 T_0 (T_0 ~ 0.25 div): 5.3 binades above T_0 in
  // bf16's bits (686 codes) where T_0 is normal, and below bit pattern 800
  // where it is subnormal, both below B + 29 * 32 = T_0 + 897.
  template <bool kClamp = true>
  static HWY_INLINE __m512i Nvfp4Bf16PairN(const uint8_t* HWY_RESTRICT in,
                                           const uint16_t* tab0,
                                           const uint16_t* tab1) {
    const PairDelta p(in, tab0, tab1);
    const __m512i t0 = p.t0, t1 = p.t1, sel = p.sel, x = p.x, d = p.d;
    const __m512i j = _mm512_srli_epi16(d, 5);
    const __m512i idx =
        _mm512_or_si512(kClamp ? _mm512_min_epu16(j, K16(29).raw) : j, sel);
    const __m512i e = _mm512_permutex2var_epi16(t0, idx, t1);
    const __m512i n = BucketCount(d, e);
    return _mm512_mask_add_epi16(
        n, _mm512_cmpgt_epu16_mask(x, K16(static_cast<int16_t>(0x8000)).raw), n,
        K16(kBucketSign).raw);
  }

  // Nvfp4Bf16PairN's nibbles by the add form of the tables
  // (internal::StackNvfp4Thresholds::bucket_add), under the same conditions
  // as Nvfp4Bf16PairN<false>: n = d + entry[d >> 5] holds the magnitude code
  // in bits 5..7 (n < 256), the sign adds 8 << 5; bits 0..4 are the
  // bucket place and are cleared (u16 lanes nibble << 5, NibbleBytes2's
  // form). Each half's base B comes from its table's entries 30 and 31
  // (both B) by one u32 broadcast load each, the high half's merged under
  // a mask, instead of a permute of the loaded tables.
  static HWY_INLINE __m512i Nvfp4Bf16PairAdd(const uint8_t* HWY_RESTRICT in,
                                             const uint16_t* tab0,
                                             const uint16_t* tab1) {
    const __m512i t0 = _mm512_load_si512(tab0);
    const __m512i t1 = _mm512_load_si512(tab1);
    const __m512i sel = _mm512_maskz_mov_epi16(0xFFFF0000u, K16(32).raw);
    __m512i x = _mm512_loadu_si512(in);
    // One load: GCC would otherwise fold it into both uses.
    asm("" : "+v"(x));  // NOLINT(hicpp-no-assembler)
    uint32_t b0, b1;
    std::memcpy(&b0, tab0 + 30, 4);
    std::memcpy(&b1, tab1 + 30, 4);
    const __m512i base = _mm512_mask_broadcastd_epi32(
        _mm512_set1_epi32(static_cast<int>(b0)), 0xFF00,
        _mm_cvtsi32_si128(static_cast<int>(b1)));
    const __m512i d =
        _mm512_subs_epu16(_mm512_and_si512(x, K16(0x7FFF).raw), base);
    const __m512i e = _mm512_permutex2var_epi16(
        t0, _mm512_or_si512(_mm512_srli_epi16(d, 5), sel), t1);
    __m512i n = _mm512_add_epi16(d, e);
    n = _mm512_mask_add_epi16(
        n, _mm512_cmpgt_epu16_mask(x, K16(static_cast<int16_t>(0x8000)).raw), n,
        K16(8 << 5).raw);
    return _mm512_and_si512(n, K16(0xF << 5).raw);
  }

  // The 32 bytes of the nibbles of n0, n1 (u16 lanes, nibble << 5): in u32
  // lanes (c_even << 8) + (c_odd << 12) (vpmaddwd by 8 and 128, below
  // 2^16), then byte 1 of each.
  static HWY_INLINE __m256i NibbleBytes2(__m512i n0, __m512i n1) {
    const __m512i m = _mm512_set1_epi32(0x00800008);
    return U32Bytes2<1>(_mm512_madd_epi16(n0, m), _mm512_madd_epi16(n1, m));
  }

  // The 16 bytes of 32 nibbles in u16 lanes as BucketCount and the sign
  // add leave them: nibble << 11 | offset (< 32), below 2^15. madd by 32
  // (even lane) and 512 (odd) gives u32 lanes
  //   c_odd << 20 | c_even << 16 | (off_odd << 9) + (off_even << 5),
  // the offsets below 2^15: byte 2 is c_even | c_odd << 4.
  static constexpr int kNibbleMadd = 0x02000020;
  static HWY_INLINE __m128i NibblePairs(__m512i n) {
    const __m512i pairs = _mm512_madd_epi16(n, _mm512_set1_epi32(kNibbleMadd));
#if HWY_TARGET <= HWY_AVX3_DL
    return _mm512_castsi512_si128(_mm512_permutexvar_epi8(
        _mm512_setr_epi32(0x0E0A0602, 0x1E1A1612, 0x2E2A2622, 0x3E3A3632, 0, 0,
                          0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
        pairs));
#else
    return _mm512_cvtepi32_epi8(_mm512_srli_epi32(pairs, 16));
#endif
  }

  static HWY_INLINE void Nvfp4Bf16Pair(const uint8_t* HWY_RESTRICT in,
                                       const uint64_t* pair, uint8_t* out) {
    static constexpr int kSlot[8] = {0, 1, 4, 5, 2, 3, 6, 7};
    const auto bcast = [pair](int i) {
      return _mm512_set1_epi64(static_cast<long long>(pair[kSlot[i]]));
    };
    const __m512i x = _mm512_permutexvar_epi32(
        _mm512_setr_epi32(0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15),
        _mm512_loadu_si512(in));
    const __m512i a = _mm512_and_si512(x, K16(0x7FFF).raw);
    const __m512i one = K16(1).raw;
    __m512i n = _mm512_setzero_si512();
    for (int i = 0; i < 7; ++i)
      n = _mm512_mask_add_epi16(n, _mm512_cmpgt_epu16_mask(a, bcast(i)), n,
                                one);
    const __mmask32 signed_q =
        _mm512_cmpgt_epu16_mask(a, bcast(7)) & _mm512_movepi16_mask(x);
    n = _mm512_mask_add_epi16(n, signed_q, n, K16(8).raw);
    // Nibble pairs: in u32 lanes, c_even | c_odd << 4 is the low byte of
    // n | n >> 12; then bytes 0, 2, .. (block 0) before 1, 3, .. (block 1).
    const __m128i bytes =
        _mm512_cvtepi32_epi8(_mm512_or_si512(n, _mm512_srli_epi32(n, 12)));
    _mm_storeu_si128(
        reinterpret_cast<__m128i*>(out),
        _mm_shuffle_epi8(bytes, _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3,
                                              5, 7, 9, 11, 13, 15)));
  }
#endif

  // The largest |q| whose nibble is 0: E2m1Nibble(+-0) = 0; for MX from
  // bf16 / f16, q below w's smallest normal is first rounded to w
  // (RoundToDtype), which flushes |q| <= half the smallest subnormal to
  // zero (the tie goes to even, 0): 2^-134 for bf16, 2^-25 for f16.
  static constexpr uint32_t ZeroMax() {
    if (kNvfp4 || kW == Format::kF32) return 0;
    return kW == Format::kBF16 ? 0x00008000u : 0x33000000u;
  }

  // The factor of one block (pass 2's f) whose amax bits are `amax`.
  static HWY_INLINE uint32_t FactorOf(float tensor_scale, uint32_t amax) {
    VU code, f;
    Scales(tensor_scale, hn::Set(DU(), amax), code, f, true);
    return hn::GetLane(f);
  }

  // Pass 2 for a vector of blocks whose amax bits are `a` (f only
  // `with_factor`).
  static HWY_INLINE void Scales(float tensor_scale, VU a, VU& code, VU& f,
                                bool with_factor) {
    const DU du;
    const DF df;
    using Enc = FastEncodeF32<Format::kE4M3, true>;
    if constexpr (kArith == internal::StackArith::kCtNvfp4) {
      // s = gs * w(amax / 6); code = e4m3(min(s, 448)) (the satfinite
      // encoder saturates s >= 448 and Inf to 448 itself); code 0 -> 0x20.
      const auto gs = hn::Set(df, tensor_scale);
      const VU a6 = RoundToDtype(kW, AsU(hn::Div(AsF(a), hn::Set(df, 6.0f))));
      code = Enc::EncodeRn(du, AsU(hn::Mul(gs, AsF(a6))));
      code =
          hn::IfThenElse(hn::Eq(code, hn::Zero(du)), hn::Set(du, 0x20u), code);
      if (with_factor) f = AsU(hn::Div(AsF(DecodeE4M3(code)), gs));
    } else if constexpr (kArith == internal::StackArith::kModelOptNvfp4) {
      // s = amax / (6 t); 0 -> 1; below 2^-9 -> 2^-9 (unsigned bits
      // compare: s >= 0, and NaN stays NaN, whichever its sign: Inf / Inf
      // is the CPU's default NaN, negative on x86); the encoder saturates
      // at 448, and its NaN code loses the sign (the scalar reference's
      // e4m3(NaN) = 0x7F).
      VU s = AsU(hn::Div(AsF(a), hn::Set(df, 6.0f * tensor_scale)));
      s = hn::IfThenElse(hn::Eq(s, hn::Zero(du)), hn::Set(du, 0x3F800000u), s);
      s = hn::IfThenElse(hn::Lt(s, hn::Set(du, 0x3B000000u)),
                         hn::Set(du, 0x3B000000u), s);
      code = hn::And(Enc::EncodeRn(du, s), hn::Set(du, 0x7Fu));
      if (with_factor)
        f = AsU(hn::Mul(AsF(DecodeE4M3(code)), hn::Set(df, tensor_scale)));
    } else if constexpr (kArith == internal::StackArith::kModelOptMxfp8) {
      ModelOptMxfp8Scales(a, code, f, with_factor);
    } else {
      MxScales(a, code, f, with_factor);
    }
  }

  // ModelOptMxfp8ScaleCode on a vector of blocks: descale = amax / 448 =
  // m 2^e (m in [1, 2)) has ceil(log2) = e where m = 1, else e + 1, unless
  // log2 rounded to f32 falls back onto e: possible only for m within a few
  // ulps of 1 (log2(m) below half an ulp of e, at most 2^-18 for |e| <=
  // 128) and for subnormal descales, whose lanes (rare) take the scalar
  // function. Zero and NaN: code 0. The multiplier is 2^(127 - code), as in
  // MxScales.
  static HWY_INLINE void ModelOptMxfp8Scales(VU a, VU& code, VU& f,
                                             bool with_factor) {
    const DU du;
    const DI di;
    if constexpr (kW == Format::kBF16) {
      // A bf16 amax = (1 + m7 / 128) 2^(E - 127) with E in [10, 254] gives
      // descale = (128 + m7) / 224 2^(E - 135), a normal f32 that is a
      // power of two only for m7 = 0x60 (1.75), and at least a factor
      // 225 / 224 from one otherwise, far beyond the rounding of the
      // division and of log2 to f32 (|log2| < 2^8: ulp <= 2^-15). So the
      // code is E - 8, plus 1 where m7 > 0x60: the carry of A + 0x1F << 16
      // into the exponent field. Zero gives 0; other amax (tiny, Inf,
      // NaN) take the division below.
      const VU fast =
          hn::Sub(hn::ShiftRight<23>(hn::Add(a, hn::Set(du, 0x1Fu << 16))),
                  hn::Set(du, 8u));
      const auto normal = hn::Lt(hn::Sub(a, hn::Set(du, 10u << 23)),
                                 hn::Set(du, 0x7F800000u - (10u << 23)));
      const auto zero = hn::Eq(a, hn::Zero(du));
      if (HWY_LIKELY(hn::AllTrue(du, hn::Or(normal, zero)))) {
        code = hn::IfThenZeroElse(zero, fast);
        f = hn::Zero(du);
        if (with_factor) f = MxFactor(code);
        return;
      }
    }
    const VU d = AsU(hn::Div(AsF(a), hn::Set(DF(), 448.0f)));
    const VU m = hn::And(d, hn::Set(du, 0x7FFFFFu));
    const VU biased = hn::ShiftRight<23>(d);  // e + 127 (d >= 0)
    // e + 1 - (m == 0) + 127, clamped to [0, 254].
    auto c = hn::BitCast(di, hn::Add(biased, hn::Set(du, 1u)));
    c = hn::IfThenElse(hn::RebindMask(di, hn::Eq(m, hn::Zero(du))),
                       hn::BitCast(di, biased), c);
    c = hn::Min(c, hn::Set(di, 254));
    code = hn::BitCast(du, c);
    const auto none =
        hn::Or(hn::Eq(d, hn::Zero(du)), ILt(hn::Set(du, 0x7F800000u), a));
    code = hn::IfThenZeroElse(none, code);
    const auto subnormal = hn::And(hn::Not(none), hn::Eq(biased, hn::Zero(du)));
    const auto near_one = hn::And(
        hn::Not(none), hn::And(ILt(hn::Zero(du), m), ILt(m, hn::Set(du, 65u))));
    const auto rare = hn::Or(subnormal, near_one);
    if (HWY_UNLIKELY(!hn::AllFalse(du, rare))) {
      HWY_ALIGN uint32_t amax[hn::MaxLanes(du)];
      HWY_ALIGN uint32_t codes[hn::MaxLanes(du)];
      hn::Store(a, du, amax);
      hn::Store(code, du, codes);
      for (size_t i = 0; i < hn::Lanes(du); ++i) {
        float x;
        std::memcpy(&x, &amax[i], 4);
        codes[i] = internal::ModelOptMxfp8ScaleCode(x);
      }
      code = hn::IfThenElse(rare, hn::Load(du, codes), code);
    }
    f = hn::Zero(du);
    if (with_factor) f = MxFactor(code);
  }

  // The multiplier 2^(127 - code) of MX scale codes below 255: biased
  // exponent 254 - code, 2^-127 (a subnormal) for code 254.
  static HWY_INLINE VU MxFactor(VU code) {
    const DU du;
    const VU f = hn::ShiftLeft<23>(hn::Sub(hn::Set(du, 254u), code));
    return hn::IfThenElse(hn::Eq(code, hn::Set(du, 254u)),
                          hn::Set(du, 0x00400000u), f);
  }

  // CtMxScale on a vector of blocks: the bits of amax in w, plus a quarter
  // binade, masked to sign and exponent, give the exponent field; code =
  // clamp(127 + field - bias - offset, 0, 255), 255 where the field is w's
  // Inf, 0 where nothing is left (f16: value 0 -> eps, code 127). The
  // multiplier is 1 / w(2^(code - 127)) = 2^(127 - code): biased exponent
  // 254 - code, 2^-127 (a subnormal) for code 254, 0 for code 255 (scale
  // Inf: x / Inf = x * 0, +-0 or NaN alike).
  static HWY_INLINE void MxScales(VU a, VU& code, VU& f, bool with_factor) {
    const DU du;
    const DI di;
    constexpr int kMant = kW == Format::kF32    ? 23
                          : kW == Format::kBF16 ? 7
                                                : 10;
    constexpr int kBias = kW == Format::kF16 ? 15 : 127;
    constexpr uint32_t kInfField = kW == Format::kF16 ? 0x1F : 0xFF;
    constexpr uint32_t kMask = (kW == Format::kF16 ? 0x3Fu : 0x1FFu) << kMant;
    constexpr int kOffset = kFp8 ? 8 : 2;
    VU bits = a;
    if constexpr (kW == Format::kBF16) bits = hn::ShiftRight<16>(a);
    if constexpr (kW == Format::kF16)
      bits = FastEncodeF32<Format::kF16, true>::EncodeRn(du, a);
    const VU p = hn::And(hn::Add(bits, hn::Set(du, 1u << (kMant - 2))),
                         hn::Set(du, kMask));
    const VU field = hn::ShiftRight<kMant>(p);
    auto c =
        hn::Add(hn::BitCast(di, field), hn::Set(di, 127 - kBias - kOffset));
    c = hn::Min(hn::Max(c, hn::Zero(di)), hn::Set(di, 255));
    code = hn::BitCast(du, c);
    code = hn::IfThenElse(hn::Eq(field, hn::Set(du, kInfField)),
                          hn::Set(du, 255u), code);
    const auto none = hn::Eq(p, hn::Zero(du));
    code =
        hn::IfThenElse(none, hn::Set(du, kW == Format::kF16 ? 127u : 0u), code);
    f = hn::Zero(du);
    if (!with_factor) return;
    f = hn::ShiftLeft<23>(hn::Sub(hn::Set(du, 254u), code));
    f = hn::IfThenElse(hn::Eq(code, hn::Set(du, 254u)),
                       hn::Set(du, 0x00400000u), f);
    f = hn::IfThenElse(hn::Eq(code, hn::Set(du, 255u)), hn::Zero(du), f);
    if constexpr (kW == Format::kF16)
      f = hn::IfThenElse(none, hn::Set(du, 0x3F800000u), f);
  }
};

// The largest |x| bits of n bf16 elements in their own 16-bit lanes (twice
// as many per vector as widened): the bits without the sign are below
// 0x8000, so the largest is the signed i16 maximum, and widening (<< 16)
// keeps the order.
inline uint32_t AbsMaxBitsOfBf16(const uint8_t* HWY_RESTRICT in, size_t n) {
  const hn::ScalableTag<int16_t> d;
  const size_t N = hn::Lanes(d);
  const auto abs = [d](const uint8_t* p) {
    return hn::And(hn::LoadU(d, reinterpret_cast<const int16_t*>(p)),
                   hn::Set(d, int16_t{0x7FFF}));
  };
  auto m0 = hn::Zero(d), m1 = hn::Zero(d);
  size_t i = 0;
  for (; i + 2 * N <= n; i += 2 * N) {
    m0 = hn::Max(m0, abs(in + 2 * i));
    m1 = hn::Max(m1, abs(in + 2 * (i + N)));
  }
  m0 = hn::Max(m0, m1);
  if (i < n) {
    HWY_ALIGN uint8_t buf[2 * hn::MaxLanes(d) * 2] = {};
    std::memcpy(buf, in + 2 * i, (n - i) * 2);
    m0 = hn::Max(m0, hn::Max(abs(buf), abs(buf + 2 * N)));
  }
  return static_cast<uint32_t>(
             static_cast<uint16_t>(hn::GetLane(hn::MaxOfLanes(d, m0))))
         << 16;
}

// The largest |x| bits of n elements (AbsMaxBits).
template <internal::SrcKind kSrc>
uint32_t AbsMaxBitsOf(const uint8_t* HWY_RESTRICT in, size_t n) {
  if constexpr (kSrc == internal::SrcKind::kBF16)
    return AbsMaxBitsOfBf16(in, n);
  const StackOps::DU du;
  const StackOps::DI di;
  constexpr size_t kIn = WideSource<kSrc>::kBytes;
  const size_t N = hn::Lanes(du);
  const auto abs = [du, di](const uint8_t* p) {
    return hn::BitCast(
        di, hn::And(WideSource<kSrc>::Load(du, p), hn::Set(du, 0x7FFFFFFFu)));
  };
  auto m0 = hn::Zero(di), m1 = hn::Zero(di);
  size_t i = 0;
  for (; i + 2 * N <= n; i += 2 * N) {
    m0 = hn::Max(m0, abs(in + i * kIn));
    m1 = hn::Max(m1, abs(in + (i + N) * kIn));
  }
  m0 = hn::Max(m0, m1);
  if (i < n) {
    HWY_ALIGN uint8_t buf[2 * hn::MaxLanes(du) * kIn] = {};
    std::memcpy(buf, in + i * kIn, (n - i) * kIn);
    m0 = hn::Max(m0, hn::Max(abs(buf), abs(buf + N * kIn)));
  }
  return static_cast<uint32_t>(hn::GetLane(hn::MaxOfLanes(di, m0)));
}
#endif  // HWY_TARGET != HWY_SCALAR

}  // namespace HWY_NAMESPACE
}  // namespace mxpack
HWY_AFTER_NAMESPACE();

#endif  // MXPACK_SRC_CHECKPOINT_STACK_BLOCKS_INL_H_
