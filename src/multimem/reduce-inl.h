// Highway kernels of the multimem reductions over N sources (docs/semantics.md
// section 4), bit-identical to mxpack::scalar::ReduceElement: the model loops,
// float min / max, the exact-once sums and the per-kind dispatch. The value
// domain and rounding arguments are in reduce_core-inl.h, the AVX512-FP16
// kernels in reduce_fp16-inl.h, the AVX-512 e4m3 acc::f16 kSequential
// kernel in reduce_e4m3_avx3-inl.h. Included once per target by
// src/multimem/reduce.cc.

// Per-target include guard (Highway convention).
#if defined(MXPACK_SRC_MULTIMEM_REDUCE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MXPACK_SRC_MULTIMEM_REDUCE_INL_H_
#undef MXPACK_SRC_MULTIMEM_REDUCE_INL_H_
#else
#define MXPACK_SRC_MULTIMEM_REDUCE_INL_H_
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "hwy/highway.h"
#include "src/multimem/reduce_e4m3_avx3-inl.h"
#include "src/multimem/reduce_fp16-inl.h"

HWY_BEFORE_NAMESPACE();
namespace mxpack {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;


// ---------------------------------------------------------------------------
// bf16 acc::f32, kSequential (docs/semantics.md section 4): the f32 adds of
// ReduceLoop on bf16 data kept in u16 lanes, two elements per u32 lane, so
// that decode and encode are lane-wise (no widening or narrowing shuffles):
//   word w = b[2i+1] << 16 | b[2i]:  odd = w & 0xFFFF0000 (b[2i+1] as f32),
//                                    even = w << 16         (b[2i] as f32).
// The final RNE to bf16 is t = x + 0x7FFF + lsb (lsb = bit 16 of x): the odd
// sum keeps its code in the high word of t, the even sum's code is t >> 16,
// and OddEven merges them back into words. NaN sums become 0x7FFF: every NaN
// here is a quieted bf16 input (low word 0) or the default NaN, so its code
// keeps a magnitude above 0x7F80, which no finite sum or Inf rounds to.
// ---------------------------------------------------------------------------
#if HWY_TARGET != HWY_SCALAR
template <class DW>
HWY_INLINE hn::Vec<DW> Bf16RoundBiased(DW dw, hn::Vec<DW> x) {
  const hn::Vec<DW> lsb = hn::And(hn::ShiftRight<16>(x), hn::Set(dw, 1u));
  return hn::Add(hn::Add(x, hn::Set(dw, 0x7FFFu)), lsb);
}

inline void Bf16AccF32SeqLoop(const uint8_t* const* src, size_t nsrc, uint8_t* out,
                              size_t n) {
  const hn::ScalableTag<uint16_t> d16;
  const hn::RebindToSigned<decltype(d16)> di16;
  const hn::Repartition<uint32_t, decltype(d16)> dw;
  const hn::Repartition<float, decltype(d16)> df;
  const size_t N = hn::Lanes(d16);
  const auto hi_mask = hn::Set(dw, 0xFFFF0000u);
  const auto load = [&](const uint8_t* p, size_t pos) {
    return hn::BitCast(dw, hn::LoadU(d16, reinterpret_cast<const uint16_t*>(p) + pos));
  };
  const auto encode = [&](hn::Vec<decltype(df)> even, hn::Vec<decltype(df)> odd,
                          uint8_t* o, size_t pos) {
    const auto te = hn::ShiftRight<16>(Bf16RoundBiased(dw, hn::BitCast(dw, even)));
    const auto to = Bf16RoundBiased(dw, hn::BitCast(dw, odd));
    auto code = hn::OddEven(hn::BitCast(d16, to), hn::BitCast(d16, te));
    const auto mag = hn::BitCast(di16, hn::And(code, hn::Set(d16, 0x7FFFu)));
    code = hn::IfThenElse(hn::RebindMask(d16, hn::Gt(mag, hn::Set(di16, 0x7F80))),
                          hn::Set(d16, 0x7FFFu), code);
    hn::StoreU(code, d16, reinterpret_cast<uint16_t*>(o) + pos);
  };
  // Two vectors per step: four independent accumulator chains.
  ForEachChunkRange<2>(src, nsrc, out, n, 2 * N,
                       [&](const uint8_t* const* s, uint8_t* o, size_t end) {
    for (size_t pos = 0; pos < end; pos += 2 * N) {
      auto w0 = load(s[0], pos), w1 = load(s[0], pos + N);
      auto e0 = hn::BitCast(df, hn::ShiftLeft<16>(w0));
      auto o0 = hn::BitCast(df, hn::And(w0, hi_mask));
      auto e1 = hn::BitCast(df, hn::ShiftLeft<16>(w1));
      auto o1 = hn::BitCast(df, hn::And(w1, hi_mask));
      for (size_t r = 1; r < nsrc; ++r) {
        w0 = load(s[r], pos);
        w1 = load(s[r], pos + N);
        e0 = hn::Add(e0, hn::BitCast(df, hn::ShiftLeft<16>(w0)));
        o0 = hn::Add(o0, hn::BitCast(df, hn::And(w0, hi_mask)));
        e1 = hn::Add(e1, hn::BitCast(df, hn::ShiftLeft<16>(w1)));
        o1 = hn::Add(o1, hn::BitCast(df, hn::And(w1, hi_mask)));
      }
      encode(e0, o0, o, pos);
      encode(e1, o1, o, pos + N);
    }
  });
}
#endif  // HWY_TARGET != HWY_SCALAR

template <Elem E, Step S, bool kTree>
void ReduceLoopOv(const ReduceSpec& spec, const uint8_t* const* src, size_t nsrc,
                  uint8_t* out, size_t n) {
#if MXPACK_REDUCE_HAVE_FP16_KERNEL
  if constexpr (E == Elem::kE4M3 || E == Elem::kE5M2) {
    // The scaled e4m3 domain needs finite partial sums; NCCL's always are.
    if ((E == Elem::kE5M2 || S == Step::kF16Fp8 || nsrc <= kE4M3FiniteSources) &&
        UseF16Kernels()) {
      return F16Loop<E, S, kTree>(spec, src, nsrc, out, n);
    }
  }
#endif
#if MXPACK_REDUCE_HAVE_E4M3_AVX3_KERNEL
  if constexpr (E == Elem::kE4M3 && S == Step::kF16 && !kTree) {
    if (nsrc <= kE4M3FiniteSources) {
      return E4M3Avx3SeqLoop(spec, src, nsrc, out, n);
    }
  }
#endif
  // Finite e4m3 partial sums (kE4M3FiniteSources): no overflow check.
  if (E == Elem::kE4M3 && nsrc <= kE4M3FiniteSources) {
    ReduceLoop<E, S, false, kTree>(spec, src, nsrc, out, n);
  } else {
    ReduceLoop<E, S, true, kTree>(spec, src, nsrc, out, n);
  }
}

template <Elem E, Step S>
void ReduceModelSwitch(const ReduceSpec& spec, const uint8_t* const* src,
                       size_t nsrc, uint8_t* out, size_t n) {
  if (spec.model == ReduceModel::kPairwiseTree) {
    ReduceLoopOv<E, S, true>(spec, src, nsrc, out, n);
#if HWY_TARGET != HWY_SCALAR
  } else if constexpr (E == Elem::kBF16 && S == Step::kNone) {
    Bf16AccF32SeqLoop(src, nsrc, out, n);
#endif
  } else {
    ReduceLoopOv<E, S, false>(spec, src, nsrc, out, n);
  }
}

// ---------------------------------------------------------------------------
// Float min / max (docs/semantics.md section 4): exact, so any order gives the
// scalar fold's result. Codes are sign-magnitude; key = c ^ (sign ? mag_mask
// : 0) is a two's-complement integer with the same order as the values and
// -0 < +0 (0x80 -> -1 < 0 for fp8). NaN codes get the key that loses every
// comparison (int max for min, int min for max); that sentinel is itself the
// key of a NaN code (0x7F / 0xFF, 0x7FFF / 0xFFFF), so a sentinel result
// means "every operand was NaN" and becomes the canonical NaN.
// ---------------------------------------------------------------------------
enum class MinMaxFmt : int { kE4M3, kE5M2, kF16, kBF16 };

template <MinMaxFmt F>
struct MinMaxTraits {
  static constexpr bool k8 = F == MinMaxFmt::kE4M3 || F == MinMaxFmt::kE5M2;
  using T = std::conditional_t<k8, int8_t, int16_t>;
  static constexpr T kMagMask = k8 ? 0x7F : 0x7FFF;
  // |code| above this is NaN.
  static constexpr T kNanAbove = F == MinMaxFmt::kE4M3   ? 0x7E
                                 : F == MinMaxFmt::kE5M2 ? 0x7C
                                 : F == MinMaxFmt::kF16  ? 0x7C00
                                                         : 0x7F80;
  static constexpr T kCanonicalNan = kMagMask;  // 0x7F, 0x7FFF
};

template <MinMaxFmt F, bool kMin>
void MinMaxLoop(const uint8_t* const* src, size_t nsrc, uint8_t* out, size_t n) {
  using Tr = MinMaxTraits<F>;
  using T = typename Tr::T;
  const hn::ScalableTag<T> d;
  const size_t N = hn::Lanes(d);
  const auto mag_mask = hn::Set(d, Tr::kMagMask);
  const auto nan_above = hn::Set(d, Tr::kNanAbove);
  const auto sentinel = hn::Set(d, kMin ? hwy::LimitsMax<T>() : hwy::LimitsMin<T>());
  const auto canonical = hn::Set(d, Tr::kCanonicalNan);
  ForEachChunkRange<sizeof(T)>(src, nsrc, out, n, N,
                               [&](const uint8_t* const* s, uint8_t* o, size_t end) {
    for (size_t pos = 0; pos < end; pos += N) {
      auto acc = sentinel;
      for (size_t r = 0; r < nsrc; ++r) {
        const auto c = hn::LoadU(d, reinterpret_cast<const T*>(s[r] + pos * sizeof(T)));
        const auto nan = hn::Gt(hn::And(c, mag_mask), nan_above);
        const auto key = hn::Xor(c, hn::And(hn::BroadcastSignBit(c), mag_mask));
        acc = kMin ? hn::Min(acc, hn::IfThenElse(nan, sentinel, key))
                   : hn::Max(acc, hn::IfThenElse(nan, sentinel, key));
      }
      const auto code = hn::Xor(acc, hn::And(hn::BroadcastSignBit(acc), mag_mask));
      hn::StoreU(hn::IfThenElse(hn::Eq(acc, sentinel), canonical, code), d,
                 reinterpret_cast<T*>(o + pos * sizeof(T)));
    }
  });
}

template <MinMaxFmt F>
void MinMaxSwitch(bool is_min, const uint8_t* const* src, size_t nsrc, uint8_t* out,
                  size_t n) {
  if (is_min) {
    MinMaxLoop<F, true>(src, nsrc, out, n);
  } else {
    MinMaxLoop<F, false>(src, nsrc, out, n);
  }
}

// ---------------------------------------------------------------------------
// kExactOnce for e4m3, e5m2 and f16: every input is a multiple of the
// format's smallest subnormal (2^-9, 2^-16, 2^-24) below 2^16, so a sum of up
// to kExactF64Sources of them needs at most 40 + 13 = 53 bits: f64 adds are
// exact (Inf / NaN follow IEEE, a zero sum is -0 only when every operand is
// -0, as in the scalar model). The exact sum S is rounded to odd at 24 bits
// (the 29 dropped f64 mantissa bits are OR-ed into the last kept one), which
// makes the f64 -> f32 demotion exact, and RNE_p(RO_24(S)) == RNE_p(S) for
// p <= 22 (Boldo & Melquiond 2008; see src/multimem/model.cc), so the f32
// encoders round once. fp8 chunks holding NaN/Inf codes run the scalar
// reference (the fp8 decoders assume finite codes).
// ---------------------------------------------------------------------------
inline constexpr size_t kExactF64Sources = 8192;

template <Elem E>
void ExactOnceLoop(const ReduceSpec& spec, const uint8_t* const* src, size_t nsrc,
                   uint8_t* out, size_t n) {
  constexpr size_t kB = ElemBytes(E);
  const DF df;
  const size_t N = hn::Lanes(df);
#if HWY_HAVE_FLOAT64 && HWY_TARGET != HWY_SCALAR
  constexpr bool kFp8 = E == Elem::kE4M3 || E == Elem::kE5M2;
  const hn::Repartition<double, DF> dd;
  const hn::Half<DF> dfh;
  const hn::RebindToUnsigned<decltype(dd)> du64;
  ForEachChunk<kB>(spec, src, nsrc, out, n, N,
                   [&](const uint8_t* const* s, uint8_t* o, size_t pos) {
    if (kFp8 && HasSpecials<E>(s, nsrc, pos * kB, N * kB)) return false;
    auto lo = hn::Zero(dd), hi = hn::Zero(dd);
    for (size_t r = 0; r < nsrc; ++r) {
      const VF v = Decode<E>(s[r] + pos * kB);
      const auto vlo = hn::PromoteTo(dd, hn::LowerHalf(dfh, v));
      const auto vhi = hn::PromoteTo(dd, hn::UpperHalf(dfh, v));
      // The first operand keeps its sign (-0 + -0 stays -0; 0 + -0 would not).
      lo = r == 0 ? vlo : hn::Add(lo, vlo);
      hi = r == 0 ? vhi : hn::Add(hi, vhi);
    }
    // Round to odd at 24 bits: sticky = any of the low 29 bits.
    auto round_odd = [&](decltype(lo) x) {
      const auto u = hn::BitCast(du64, x);
      const auto low = hn::Set(du64, (uint64_t{1} << 29) - 1);
      const auto sticky = hn::Ne(hn::And(u, low), hn::Zero(du64));
      const auto kept = hn::AndNot(low, u);
      return hn::BitCast(dd, hn::IfThenElse(sticky, hn::Or(kept, hn::Set(du64, uint64_t{1} << 29)), kept));
    };
    const VF sum = hn::Combine(df, hn::DemoteTo(dfh, round_odd(hi)), hn::DemoteTo(dfh, round_odd(lo)));
    Encode<E>(sum, o + pos * kB);
    return true;
  });
#else
  // (No f64 lanes: the scalar reference.)
  (void)N;
  ForEachChunk<kB>(spec, src, nsrc, out, n, 1,
                   [](const uint8_t* const*, uint8_t*, size_t) { return false; });
#endif
}

// Entry point: `kind` selects the kernel (see reduce.cc KernelKind).
//   0 e4m3 step f16   1 e5m2 step f16   2 e4m3 nccl   3 e5m2 nccl
//   4 f16 acc f32     5 bf16 acc f32    6 f16 nccl    7 bf16 nccl   8 f32
//   9 + 2 * fmt + is_max: min / max, fmt = e4m3, e5m2, f16, bf16 (9 .. 16)
//   17 e4m3 exact     18 e5m2 exact     19 f16 exact
void ReduceFloatAdd(int kind, const ReduceSpec& spec, const uint8_t* const* src,
                    size_t nsrc, uint8_t* out, size_t n) {
  switch (kind) {
    case 0: return ReduceModelSwitch<Elem::kE4M3, Step::kF16>(spec, src, nsrc, out, n);
    case 1: return ReduceModelSwitch<Elem::kE5M2, Step::kF16>(spec, src, nsrc, out, n);
    case 2: return ReduceLoopOv<Elem::kE4M3, Step::kF16Fp8, false>(spec, src, nsrc, out, n);
    case 3: return ReduceLoopOv<Elem::kE5M2, Step::kF16Fp8, false>(spec, src, nsrc, out, n);
    case 4: return ReduceModelSwitch<Elem::kF16, Step::kNone>(spec, src, nsrc, out, n);
    case 5: return ReduceModelSwitch<Elem::kBF16, Step::kNone>(spec, src, nsrc, out, n);
    case 6: return ReduceLoop<Elem::kF16, Step::kF16, true, false>(spec, src, nsrc, out, n);
    case 7: return ReduceLoop<Elem::kBF16, Step::kBF16, false, false>(spec, src, nsrc, out, n);
    case 8: return ReduceModelSwitch<Elem::kF32, Step::kNone>(spec, src, nsrc, out, n);
    case 9: case 10: return MinMaxSwitch<MinMaxFmt::kE4M3>(kind == 9, src, nsrc, out, n);
    case 11: case 12: return MinMaxSwitch<MinMaxFmt::kE5M2>(kind == 11, src, nsrc, out, n);
    case 13: case 14: return MinMaxSwitch<MinMaxFmt::kF16>(kind == 13, src, nsrc, out, n);
    case 15: case 16: return MinMaxSwitch<MinMaxFmt::kBF16>(kind == 15, src, nsrc, out, n);
    case 17: return ExactOnceLoop<Elem::kE4M3>(spec, src, nsrc, out, n);
    case 18: return ExactOnceLoop<Elem::kE5M2>(spec, src, nsrc, out, n);
    case 19: return ExactOnceLoop<Elem::kF16>(spec, src, nsrc, out, n);
    default: return;
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace mxpack
HWY_AFTER_NAMESPACE();

#endif  // MXPACK_SRC_MULTIMEM_REDUCE_INL_H_
