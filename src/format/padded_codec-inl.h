// PaddedCodec: the in-register codecs of the padded layouts (docs/semantics.md
// section 2), shared by the packed-layout kernels (pack-inl.h) and the MX
// quantizer's fused pass (src/mx/quantize-inl.h). Not available on HWY_SCALAR (one-lane
// vectors cannot hold a 16-byte group).

// Per-target include guard (Highway convention).
#if defined(MXPACK_SRC_FORMAT_PADDED_CODEC_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MXPACK_SRC_FORMAT_PADDED_CODEC_INL_H_
#undef MXPACK_SRC_FORMAT_PADDED_CODEC_INL_H_
#else
#define MXPACK_SRC_FORMAT_PADDED_CODEC_INL_H_
#endif

#include <cstdint>

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace mxpack {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET != HWY_SCALAR
// Vector-level codecs. kShift is where the code sits in its output byte: 0
// for plain codes, 2 for 4-bit containers (00xxxx00), 0/1 for 6-bit low6 /
// mid6 containers. Every op stays within 128-bit blocks, so one 16-byte
// padded group maps to one block on every target.
class PaddedCodec {
 public:
  using D = hn::ScalableTag<uint8_t>;
  using V = hn::Vec<D>;

  // Highway 1.0.3's only x86 target with VBMI (vpmultishiftqb) is AVX3_DL;
  // later Highway versions add more (they would take the generic path here).
#if HWY_TARGET == HWY_AVX3_DL
  // One padded group per block -> one code per byte (kBits 4: b4x16_p64,
  // 6: b6x16_p32), the code at bit kShift. pshufb moves the group's bytes
  // holding codes 0..7 and 8..15 (4 or 6 bytes each) to the block's two u64;
  // then byte j of each u64 takes the 8 bits from bit kBits*j - kShift
  // (vpmultishiftqb; offsets wrap mod 64) and the mask keeps the code.
  template <int kBits, int kShift>
  static HWY_INLINE V ExpandMultishift(D d, V v) {
    alignas(16) static constexpr uint8_t kQuads[16] = {0, 1, 2, 3, 0x80, 0x80, 0x80, 0x80,
                                                       4, 5, 6, 7, 0x80, 0x80, 0x80, 0x80};
    alignas(16) static constexpr uint8_t kSextets[16] = {0, 1, 2, 3,  4,  5,  0x80, 0x80,
                                                         6, 7, 8, 9, 10, 11, 0x80, 0x80};
    const V words = hn::TableLookupBytesOr0(v, hn::LoadDup128(d, kBits == 4 ? kQuads : kSextets));
    constexpr uint64_t kOffsets = [] {
      uint64_t o = 0;
      for (int j = 0; j < 8; ++j) {
        o |= static_cast<uint64_t>((kBits * j - kShift) & 63) << (8 * j);
      }
      return o;
    }();
    const V fields{_mm512_multishift_epi64_epi8(_mm512_set1_epi64(static_cast<int64_t>(kOffsets)),
                                                words.raw)};
    return hn::And(fields, hn::Set(d, static_cast<uint8_t>(((1u << kBits) - 1) << kShift)));
  }
#endif

  // 16 bytes b4x16_p64 per block -> 16 bytes (one per element).
  template <int kShift>
  static HWY_INLINE V Expand4(D d, V v) {
#if HWY_TARGET == HWY_AVX3_DL
    return ExpandMultishift<4, kShift>(d, v);  // 3 ops instead of 5
#else
    // Duplicate byte k into bytes 2k and 2k+1 (bytes 8..15 = padding unused).
    alignas(16) static constexpr uint8_t kDup[16] = {0, 0, 1, 1, 2, 2, 3, 3,
                                                     4, 4, 5, 5, 6, 6, 7, 7};
    const hn::Repartition<uint16_t, D> d16;
    const auto w = hn::BitCast(d16, hn::TableLookupBytes(v, hn::LoadDup128(d, kDup)));
    // u16 lane = b:b. Low byte keeps the low nibble, high byte the high one:
    //   15..12 11..8 7..4 3..0  ->  high nibble to [8+kShift+3 : 8+kShift],
    //   low nibble to [kShift+3 : kShift].
    const auto lo = hn::And(hn::ShiftLeft<kShift>(w),
                            hn::Set(d16, static_cast<uint16_t>(0x000F << kShift)));
    const auto hi = hn::And(hn::ShiftRight<4 - kShift>(w),
                            hn::Set(d16, static_cast<uint16_t>(0x0F00 << kShift)));
    return hn::BitCast(d, hn::Or(lo, hi));
#endif
  }

  // 16 bytes b6x16_p32 per block -> 16 bytes (one per element).
  template <int kShift>
  static HWY_INLINE V Expand6(D d, V v) {
#if HWY_TARGET == HWY_AVX3_DL
    return ExpandMultishift<6, kShift>(d, v);  // 3 ops instead of 7-8
#else
    // u32 lane g = 24-bit word of group g (bytes 3g..3g+2; byte 3 unused).
    alignas(16) static constexpr uint8_t kGroups[16] = {0, 1, 2,  2,  3,  4,  5,  5,
                                                        6, 7, 8,  8,  9, 10, 11, 11};
    const hn::Repartition<uint32_t, D> d32;
    const auto w = hn::BitCast(d32, hn::TableLookupBytes(v, hn::LoadDup128(d, kGroups)));
    // word: [23:18]=c3 [17:12]=c2 [11:6]=c1 [5:0]=c0; c_j goes to byte j.
    // Two spreading steps (fewer ops than four field extractions):
    //   12-bit halves to u16 halves:  t = c1c0 in [11:0], c3c2 in [27:16]
    //   6-bit fields to bytes:        r = c0, c1, c2, c3 in bytes 0..3
    const auto t = hn::OrAnd(hn::And(w, hn::Set(d32, 0x00000FFFu)), hn::ShiftLeft<4>(w),
                             hn::Set(d32, 0x0FFF0000u));
    const auto r = hn::OrAnd(hn::And(t, hn::Set(d32, 0x003F003Fu)), hn::ShiftLeft<2>(t),
                             hn::Set(d32, 0x3F003F00u));
    return hn::BitCast(d, hn::ShiftLeft<kShift>(r));
#endif
  }

  // 16 bytes (one per element) per block -> b4x16_p64 with zero padding.
  template <int kShift>
  static HWY_INLINE V Compact4(D d, V v) {
    const hn::Repartition<uint16_t, D> d16;
    const auto w = hn::BitCast(d16, v);  // c[2k] low byte, c[2k+1] high byte
    const auto b = hn::OrAnd(
        hn::And(hn::ShiftRight<kShift>(w), hn::Set(d16, uint16_t{0x000F})),
        hn::ShiftRight<4 + kShift>(w), hn::Set(d16, uint16_t{0x00F0}));
    // Gather the low byte of each u16 into bytes 0..7; 0x80 zeroes 8..15.
    alignas(16) static constexpr uint8_t kEven[16] = {
        0, 2, 4, 6, 8, 10, 12, 14, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80};
    return hn::TableLookupBytesOr0(hn::BitCast(d, b), hn::LoadDup128(d, kEven));
  }

  // 16 bytes (one per element) per block -> b6x16_p32 with zero padding.
  template <int kShift>
  static HWY_INLINE V Compact6(D d, V v) {
    const hn::Repartition<uint32_t, D> d32;
    const auto x = hn::BitCast(d32, v);  // bytes c0 c1 c2 c3
    // c_j at [8j+kShift+5 : 8j+kShift] -> [6j+5 : 6j].
    auto w = hn::And(hn::ShiftRight<kShift>(x), hn::Set(d32, 0x3Fu));
    w = hn::OrAnd(w, hn::ShiftRight<2 + kShift>(x), hn::Set(d32, 0xFC0u));
    w = hn::OrAnd(w, hn::ShiftRight<4 + kShift>(x), hn::Set(d32, 0x3F000u));
    w = hn::OrAnd(w, hn::ShiftRight<6 + kShift>(x), hn::Set(d32, 0xFC0000u));
    alignas(16) static constexpr uint8_t kPackWords[16] = {
        0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, 0x80, 0x80, 0x80, 0x80};
    return hn::TableLookupBytesOr0(hn::BitCast(d, w), hn::LoadDup128(d, kPackWords));
  }
};
#endif  // HWY_TARGET != HWY_SCALAR

}  // namespace HWY_NAMESPACE
}  // namespace mxpack
HWY_AFTER_NAMESPACE();

#endif  // MXPACK_SRC_FORMAT_PADDED_CODEC_INL_H_
