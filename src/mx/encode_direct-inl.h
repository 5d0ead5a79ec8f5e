// Pass 3 of the MX block quantizer (src/mx/quantize-inl.h) for bf16 into
// fp8 elements (MXFP8) on x86, straight from the bf16 bits: EncodeDirect's
// integer rounding with the block scale folded into one addend, and, on CPUs
// with AVX512-FP16, the scale folded into the bf16 -> f16 rebias.
// Per-target toggle guard (re-included once per Highway target).
#if defined(MXPACK_SRC_MX_ENCODE_DIRECT_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MXPACK_SRC_MX_ENCODE_DIRECT_INL_H_
#undef MXPACK_SRC_MX_ENCODE_DIRECT_INL_H_
#else
#define MXPACK_SRC_MX_ENCODE_DIRECT_INL_H_
#endif

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "hwy/highway.h"
#include "mxpack/format.h"
#include "src/format/encode_fast-inl.h"
#include "src/mx/chunk_read-inl.h"

HWY_BEFORE_NAMESPACE();
namespace mxpack {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

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
template <Format kElem, class D16>
HWY_INLINE hn::Mask<D16> EncodeDirect(D16 d16, hn::Vec<D16> h, uint32_t add2, uint32_t low2,
                                      hn::Vec<D16>& code) {
  constexpr internal::FastFormat kElemT = internal::FastFormatOf(kElem);
  constexpr int kDirectShift = 7 - kElemT.man_bits;  // dropped bf16 mantissa bits
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

#ifdef MXPACK_HAVE_FP16_HALF_ENCODE
// Pass 3 of kFp16Direct chunks (MXFP8 e4m3 from bf16, Fp16EncodeHalf):
// one block (32 bf16) per vector, two
// blocks per step, codes one per byte. The elements are read again rather
// than stored as magnitudes in pass 1: the encoder derives them in one
// shift, cheaper than the extra store and load.
template <class Fp16Enc>
MXPACK_FP16_TARGET HWY_NOINLINE void EncodeChunkFp16(const uint8_t* HWY_RESTRICT src,
                                                     const uint32_t* HWY_RESTRICT rebias2, size_t nb,
                                                     uint8_t* HWY_RESTRICT out, bool prefetch_l2) {
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

}  // namespace HWY_NAMESPACE
}  // namespace mxpack
HWY_AFTER_NAMESPACE();

#endif  // MXPACK_SRC_MX_ENCODE_DIRECT_INL_H_
