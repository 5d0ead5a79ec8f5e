// How the MX / NVFP4 block quantizer (src/mx/quantize-inl.h) reads an
// L1-sized chunk: pass 1's per-block maxima of |x| (a max tree that leaves
// block j's maximum in lane j) and pass 3's prefetch of the next chunk.
// Per-target toggle guard (re-included once per Highway target).
#if defined(MXPACK_SRC_MX_CHUNK_READ_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MXPACK_SRC_MX_CHUNK_READ_INL_H_
#undef MXPACK_SRC_MX_CHUNK_READ_INL_H_
#else
#define MXPACK_SRC_MX_CHUNK_READ_INL_H_
#endif

#include <cstddef>
#include <cstdint>

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace mxpack {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// log2 of a power-of-two lane count: the levels of MaxTree.
constexpr size_t MaxTreeLevels(size_t n) { return n <= 1 ? 0 : 1 + MaxTreeLevels(n / 2); }

#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
// One merge step of the block-max trees over 16 u32 lanes: the lanes whose
// bit s is set take h's lanes, the others l's (`same`), and `partner` pairs
// each with the lane at distance 2^s in the same vector (one two-table
// permute), so lane i keeps the block of bit s and its partial maxima move
// to the higher bits. The caller takes the max of the two in its lane type.
// One permute (port 5 only) instead of the two of a concatenation, the
// blend taking either vector port, and no register copy for the permute
// that overwrites a table.
template <int s>
struct U32Butterfly {
  static_assert(s >= 0 && s < 4, "u32 butterfly step");
  HWY_INLINE U32Butterfly(__m512i l, __m512i h) {
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
    same = _mm512_mask_blend_epi32(kHi, l, h);
    partner = _mm512_permutex2var_epi32(l, _mm512_load_si512(kIdx.v), h);
  }
  __m512i same, partner;
};
#endif

// The block maxima of blocks [j0, j0 + 2^kLevel) in one vector (kPartial:
// 0 for blocks >= nb). Level 0 is a block's vertical max; level L merges
// two level-(L-1) vectors (lower blocks first) so that the lanes of each
// block halve; after log2(NL) levels lane j holds block j0 + j. Depth-
// first, so only one vector per level is live (no spills of NL vectors).
// Merges permute u32 lanes (x86's two-table u16 permute costs about 2.5
// times the u32 one) and take the max per lane of DL; 16-bit lanes merge
// first with blends and a rotate, which leaves u32 lane k = (block 2j,
// block 2j + 1) maxima of lanes 2k, 2k + 1.
template <size_t kBlock, size_t kLevel, bool kPartial, class DL, class LoadAbs>
HWY_INLINE hn::Vec<DL> MaxTree(DL dl, size_t nb, size_t j0, const LoadAbs& load_abs) {
  if constexpr (kLevel == 0) {
    if (kPartial && j0 >= nb) return hn::Zero(dl);
    const size_t NL = hn::Lanes(dl);
    auto vmax = load_abs(j0, 0);
    for (size_t i = NL; i < kBlock; i += NL) vmax = hn::Max(vmax, load_abs(j0, i));
    return vmax;
  } else {
#if HWY_TARGET != HWY_SCALAR  // (one lane: kLevels = 0)
    const auto lo = MaxTree<kBlock, kLevel - 1, kPartial>(dl, nb, j0, load_abs);
    const auto hi =
        MaxTree<kBlock, kLevel - 1, kPartial>(dl, nb, j0 + (size_t{1} << (kLevel - 1)), load_abs);
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
        // A butterfly instead of the concatenations (U32Butterfly). Lane j
        // still ends up holding block j0 + j.
        constexpr int s = static_cast<int>(kLevel) - (sizeof(hn::TFromD<DL>) == 2 ? 2 : 1);
        const U32Butterfly<s> b(l.raw, h.raw);
        const __m512i same = b.same, partner = b.partner;
        return hn::Max(hn::BitCast(dl, decltype(h){same}), hn::BitCast(dl, decltype(h){partner}));
      }
#endif
      return hn::Max(hn::BitCast(dl, hn::ConcatOdd(d32, h, l)),
                     hn::BitCast(dl, hn::ConcatEven(d32, h, l)));
    }
#endif
  }
}

// Pass 1 in lanes of DL: for every block b < nb, out[b] = the max over
// the block of load_abs(b, i) (the |x| bits of its lanes i, i + NL, ...),
// and out[b] = 0 for the missing blocks of the last group. NL blocks at a
// time through MaxTree, so that lane j holds block j's max. out must have
// room for nb rounded up to Lanes(dl).
template <size_t kBlock, class DL, class LoadAbs>
HWY_INLINE void BlockMaxima(DL dl, size_t nb, hn::TFromD<DL>* HWY_RESTRICT out,
                                   const LoadAbs& load_abs) {
  const size_t NL = hn::Lanes(dl);
  constexpr size_t kLevels = MaxTreeLevels(hn::MaxLanes(DL()));
  HWY_DASSERT(NL == hn::MaxLanes(dl));  // fixed-size vectors (x86, EMU128)
  size_t g = 0;
  for (; g + NL <= nb; g += NL) {  // whole groups: no per-block checks
    const auto v = MaxTree<kBlock, kLevels, false>(dl, NL, 0, [&](size_t j, size_t i) {
      return load_abs(g + j, i);
    });
    hn::StoreU(v, dl, out + g);
  }
  if (g < nb) {
    const auto v = MaxTree<kBlock, kLevels, true>(dl, nb - g, 0, [&](size_t j, size_t i) {
      return load_abs(g + j, i);
    });
    hn::StoreU(v, dl, out + g);
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
HWY_INLINE void PrefetchNextChunk(const uint8_t* p, size_t chunk_bytes, size_t bytes,
                              L2 /*l2*/) {
  for (size_t line = 0; line < bytes; line += 64) {
    if constexpr (L2::value) {
      __builtin_prefetch(p + chunk_bytes + line, 0, 2);
    } else {
      __builtin_prefetch(p + chunk_bytes + line, 0, 3);
    }
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace mxpack
HWY_AFTER_NAMESPACE();

#endif  // MXPACK_SRC_MX_CHUNK_READ_INL_H_
