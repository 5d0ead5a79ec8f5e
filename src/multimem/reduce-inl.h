// Highway kernels of the multimem float add reductions over N sources
// (docs/semantics.md section 4), bit-identical to mxpack::scalar::ReduceElement.
// Included once per target by src/multimem/reduce.cc.
//
// Values live in f32 lanes ("acc domain"). Every rounding the scalar model
// does is done here either by an IEEE f32 add (RNE, subnormals kept: x86 and
// EMU128 never enable FTZ/DAZ in mxpack) or in integer lanes:
//  * fp8 -> acc: rebuild the code as f16 bits and promote (exact; see
//    DecodeFp8), so no f32 subnormal is ever an operand.
//  * an f16 add (acc::f16) is the f32 add followed by RNE to 11 significant
//    bits in integer lanes; RNE_11(RNE_24(a + b)) == RNE_11(a + b) because
//    24 >= 2*11 + 2 (double rounding is innocuous, Figueroa 1995). Every acc
//    value is a multiple of 2^-24 (fp8 and f16 grids), so values below the
//    f16 normal range are exact and the 10-bit mantissa rounding is a no-op
//    there: no separate subnormal path is needed.
//  * final encodes round in integer lanes (normal range) or by adding a
//    power-of-two "magic" constant whose f32 ulp is the destination's
//    subnormal quantum (one IEEE RNE add), then take the bits.
// fp8 kernels run only on chunks without NaN/Inf codes (checked per chunk on
// whole u8 vectors); other chunks run the scalar reference.

// AVX512-FP16 kernels (src/util/fp16_target.h): the fp8 acc::f16 models in
// f16 lanes with native f16 adds, used by the AVX3 targets on CPUs with
// AVX512-FP16 (Sapphire Rapids and later).
#include "src/util/fp16_target.h"

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
#include <type_traits>
#include <vector>

#include "hwy/aligned_allocator.h"
#include "hwy/highway.h"
#include "src/multimem/reduce_args.h"
#include "mxpack/multimem.h"

HWY_BEFORE_NAMESPACE();
namespace mxpack {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using DU = hn::RebindToUnsigned<DF>;
using DI = hn::RebindToSigned<DF>;
using VF = hn::Vec<DF>;
using VU = hn::Vec<DU>;

// Kernel kinds (one per element format; the model picks the step rounding).
enum class Elem : int { kE4M3, kE5M2, kF16, kBF16, kF32 };
// Rounding applied to every partial sum.
enum class Step : int {
  kNone,     // f32 accumulation (acc::f32, or f32 data).
  kF16,      // acc::f16: RNE to f16 (overflow -> Inf).
  kBF16,     // NCCL bf16: RNE to bf16.
  kF16Fp8,   // NCCL fp8: RNE to f16, then RNE satfinite to the fp8 format.
};

// RNE of f32 lanes to 11 significant bits (f16 precision). Values must be
// multiples of 2^-24 (see the file comment). NaN stays NaN: NaNs produced
// here have zero low 13 bits (decoded or default NaNs).
//   bits: s eeeeeeee mmmmmmmmmm|mmmmmmmmmmmmm
//                    kept (10) | dropped (13): add 0xFFF + lsb, clear.
template <bool kCheckOverflow>
HWY_INLINE VF RoundToF16(VF s) {
  const DU du;
  const VU u = hn::BitCast(du, s);
  const VU lsb = hn::And(hn::ShiftRight<13>(u), hn::Set(du, 1u));
  VU r = hn::And(hn::Add(u, hn::Add(hn::Set(du, 0xFFFu), lsb)),
                 hn::Set(du, ~0x1FFFu));
  if (kCheckOverflow) {
    // |r| >= 65536 (0x47800000) is beyond f16 max (65504 + half ulp rounds
    // up to it): Inf, unless NaN (abs bits > 0x7F800000).
    const DI di;
    const auto a = hn::BitCast(di, hn::And(r, hn::Set(du, 0x7FFFFFFFu)));
    // (Highway 1.0.3 has no integer Ge/Le: use Gt/Lt with adjusted bounds.)
    const auto big = hn::And(hn::Gt(a, hn::Set(di, 0x47800000 - 1)),
                             hn::Lt(a, hn::Set(di, 0x7F800000 + 1)));
    const VU inf = hn::Or(hn::And(r, hn::Set(du, 0x80000000u)),
                          hn::Set(du, 0x7F800000u));
    r = hn::IfThenElse(hn::RebindMask(du, big), inf, r);
  }
  return hn::BitCast(DF(), r);
}

// RNE of f32 lanes to bf16 precision (8 significant bits); NaN low bits are
// zero (see RoundToF16), so NaN stays NaN and Inf stays Inf.
HWY_INLINE VF RoundToBF16(VF s) {
  const DU du;
  const VU u = hn::BitCast(du, s);
  const VU lsb = hn::And(hn::ShiftRight<16>(u), hn::Set(du, 1u));
  const VU r = hn::And(hn::Add(u, hn::Add(hn::Set(du, 0x7FFFu), lsb)),
                       hn::Set(du, 0xFFFF0000u));
  return hn::BitCast(DF(), r);
}

// fp8 format constants.
template <Elem E>
struct Fp8 {
  static constexpr bool kE4 = E == Elem::kE4M3;
  static constexpr int kManBits = kE4 ? 3 : 2;
  static constexpr int kDrop = 23 - kManBits;              // f32 bits dropped
  static constexpr uint32_t kMinNormal = kE4 ? 0x3C800000u : 0x38800000u;
  static constexpr float kMagic = kE4 ? 16384.0f : 128.0f;   // ulp = quantum
  static constexpr uint32_t kMagicBits = kE4 ? 0x46800000u : 0x43000000u;
  static constexpr uint32_t kExpOffset = kE4 ? 960u : 448u;  // (127-bias)<<man
  static constexpr uint32_t kMaxCode = kE4 ? 0x7Eu : 0x7Bu;
  static constexpr float kMax = kE4 ? 448.0f : 57344.0f;
  static constexpr uint8_t kSpecialMask = kE4 ? 0x7F : 0x7C;  // NaN / Inf+NaN
};

// RNE satfinite of f32 lanes (finite or Inf, never NaN) to the fp8 grid,
// keeping the value in f32.
template <Elem E>
HWY_INLINE VF RoundToFp8(VF s) {
  using C = Fp8<E>;
  const DF df;
  const DU du;
  const DI di;
  const VU u = hn::BitCast(du, s);
  const VU sign = hn::And(u, hn::Set(du, 0x80000000u));
  const VU a = hn::AndNot(sign, u);
  const VU lsb = hn::And(hn::ShiftRight<C::kDrop>(a), hn::Set(du, 1u));
  const VU half = hn::Set(du, (1u << (C::kDrop - 1)) - 1u);
  const VU rn = hn::And(hn::Add(a, hn::Add(half, lsb)),
                        hn::Set(du, ~((1u << C::kDrop) - 1u)));
  const VF af = hn::BitCast(df, a);
  const VF magic = hn::Set(df, C::kMagic);
  const VF rs = hn::Sub(hn::Add(af, magic), magic);  // Subnormal grid (exact sub).
  const auto tiny = hn::Lt(hn::BitCast(di, a), hn::Set(di, static_cast<int32_t>(C::kMinNormal)));
  VF r = hn::IfThenElse(hn::RebindMask(df, tiny), rs, hn::BitCast(df, rn));
  r = hn::Min(r, hn::Set(df, C::kMax));  // satfinite (Inf included)
  return hn::Or(r, hn::BitCast(df, sign));
}

// Decodes Lanes(DF) fp8 codes (no NaN/Inf codes) to exact f32 values via
// f16 bits, so that no f32 subnormal is ever an operand (x86 multiplies with
// subnormal inputs take a ~100-cycle microcode assist):
//   e5m2 code << 8 is the f16 with the same value (e5m2 = top byte of f16).
//   e4m3: i8 sign-extended to i16, << 7:  s s eeee mmm 0000000, and 0xBF80
//   clears the copy of the sign in the top exponent bit: an f16 whose value
//   is the e4m3 value * 2^-8 (bias 15 vs 7; e4m3 subnormals are f16
//   subnormals). f16 -> f32 promotion is exact and the * 2^8 is exact.
template <Elem E>
HWY_INLINE VF DecodeFp8(const uint8_t* p) {
  const DF df;
  const hn::Rebind<hwy::float16_t, DF> df16;
  if constexpr (E == Elem::kE5M2) {
    const hn::Rebind<uint8_t, DF> du8;
    const hn::Rebind<uint16_t, DF> du16;
    const auto h = hn::ShiftLeft<8>(hn::PromoteTo(du16, hn::LoadU(du8, p)));
    return hn::PromoteTo(df, hn::BitCast(df16, h));
  } else {
    const hn::Rebind<int8_t, DF> di8;
    const hn::Rebind<int16_t, DF> di16;
    const auto c = hn::PromoteTo(di16, hn::LoadU(di8, reinterpret_cast<const int8_t*>(p)));
    const auto h = hn::And(hn::ShiftLeft<7>(c), hn::Set(di16, static_cast<int16_t>(0xBF80)));
    return hn::Mul(hn::PromoteTo(df, hn::BitCast(df16, h)), hn::Set(df, 256.0f));
  }
}

// Final encode of f32 lanes to fp8 codes: RNE satfinite (Inf -> max
// finite), NaN -> canonical 0x7F (a tree can meet +Inf and -Inf partial sums
// after f16 overflow).
template <Elem E>
HWY_INLINE void EncodeFp8(VF x, uint8_t* out) {
  using C = Fp8<E>;
  const DF df;
  const DU du;
  const DI di;
  const VU u = hn::BitCast(du, x);
  const VU sign = hn::And(u, hn::Set(du, 0x80000000u));
  const VU a = hn::AndNot(sign, u);
  // Normal range: RNE to the mantissa width, then rebias the exponent.
  const VU lsb = hn::And(hn::ShiftRight<C::kDrop>(a), hn::Set(du, 1u));
  const VU half = hn::Set(du, (1u << (C::kDrop - 1)) - 1u);
  const VU rn = hn::ShiftRight<C::kDrop>(hn::Add(a, hn::Add(half, lsb)));
  const VU code_n = hn::Min(hn::Sub(rn, hn::Set(du, C::kExpOffset)),
                            hn::Set(du, C::kMaxCode));
  // Subnormal range: |x| + magic rounds (IEEE RNE) to the subnormal quantum;
  // the low bits of the sum count quanta (0 .. first normal code).
  const VF t = hn::Add(hn::BitCast(df, a), hn::Set(df, C::kMagic));
  const VU code_s = hn::Sub(hn::BitCast(du, t), hn::Set(du, C::kMagicBits));
  const auto tiny = hn::Lt(hn::BitCast(di, a), hn::Set(di, static_cast<int32_t>(C::kMinNormal)));
  VU code = hn::IfThenElse(hn::RebindMask(du, tiny), code_s, code_n);
  code = hn::Or(code, hn::ShiftRight<24>(sign));
  const auto nan = hn::Gt(hn::BitCast(di, a), hn::Set(di, 0x7F800000));
  code = hn::IfThenElse(hn::RebindMask(du, nan), hn::Set(du, 0x7Fu), code);
  const hn::Rebind<uint8_t, DF> du8;
  hn::StoreU(hn::DemoteTo(du8, hn::BitCast(di, code)), du8, out);
}

// f16 codes -> exact f32, specials included. AVX2/AVX3 convert with F16C
// (exact). Highway 1.0.3's emulated f16 promotion on the other targets turns
// NaN into Inf, so those rebuild the f32 bits in integer lanes instead:
//   normal:    (em << 13) + (112 << 23)                 rebias 15 -> 127
//   subnormal: f32(bits (em << 13) + (113 << 23)) - 2^-14 (= m * 2^-24, exact,
//              and no f32 subnormal operand)
//   Inf/NaN:   (em << 13) | 0x7F800000
HWY_INLINE VF DecodeF16(const uint8_t* p) {
  const DF df;
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  const hn::Rebind<hwy::float16_t, DF> df16;
  return hn::PromoteTo(df, hn::LoadU(df16, reinterpret_cast<const hwy::float16_t*>(p)));
#else
  const DU du;
  const DI di;
  const hn::Rebind<uint16_t, DF> du16;
  const VU h = hn::PromoteTo(du, hn::LoadU(du16, reinterpret_cast<const uint16_t*>(p)));
  const VU em = hn::And(h, hn::Set(du, 0x7FFFu));
  const VU sign = hn::ShiftLeft<16>(hn::AndNot(em, h));
  const VU base = hn::ShiftLeft<13>(em);
  const VF normal = hn::BitCast(df, hn::Add(base, hn::Set(du, 112u << 23)));
  const VF sub = hn::Sub(hn::BitCast(df, hn::Add(base, hn::Set(du, 113u << 23))),
                         hn::Set(df, 0x1p-14f));
  const VF special = hn::BitCast(df, hn::Or(base, hn::Set(du, 0x7F800000u)));
  const auto emi = hn::BitCast(di, em);
  VF v = hn::IfThenElse(hn::RebindMask(df, hn::Lt(emi, hn::Set(di, 0x0400))), sub, normal);
  v = hn::IfThenElse(hn::RebindMask(df, hn::Gt(emi, hn::Set(di, 0x7C00 - 1))), special, v);
  return hn::Or(v, hn::BitCast(df, sign));
#endif
}

HWY_INLINE VF DecodeBF16(const uint8_t* p) {
  const DF df;
  const DU du;
  const hn::Rebind<uint16_t, DF> du16;
  const VU h = hn::PromoteTo(du, hn::LoadU(du16, reinterpret_cast<const uint16_t*>(p)));
  return hn::BitCast(df, hn::ShiftLeft<16>(h));
}

// f32 -> f16 RNE nosat (overflow -> Inf), NaN -> 0x7FFF.
HWY_INLINE void EncodeF16(VF x, uint8_t* out) {
  const DF df;
  const DU du;
  const DI di;
  const VU u = hn::BitCast(du, x);
  const VU sign = hn::And(u, hn::Set(du, 0x80000000u));
  const VU a = hn::AndNot(sign, u);
  const VU lsb = hn::And(hn::ShiftRight<13>(a), hn::Set(du, 1u));
  const VU rn = hn::ShiftRight<13>(hn::Add(a, hn::Add(hn::Set(du, 0xFFFu), lsb)));
  // Rebias 127 -> 15: (112 << 10). Beyond max rounds to >= 0x7C00: Inf.
  const VU code_n = hn::Min(hn::Sub(rn, hn::Set(du, 0x1C000u)), hn::Set(du, 0x7C00u));
  const VF t = hn::Add(hn::BitCast(df, a), hn::Set(df, 0.5f));  // ulp 2^-24
  const VU code_s = hn::Sub(hn::BitCast(du, t), hn::Set(du, 0x3F000000u));
  const auto ai = hn::BitCast(di, a);
  const auto tiny = hn::Lt(ai, hn::Set(di, 0x38800000));
  VU code = hn::IfThenElse(hn::RebindMask(du, tiny), code_s, code_n);
  code = hn::Or(code, hn::ShiftRight<16>(sign));
  const auto nan = hn::Gt(ai, hn::Set(di, 0x7F800000));
  code = hn::IfThenElse(hn::RebindMask(du, nan), hn::Set(du, 0x7FFFu), code);
  const hn::Rebind<uint16_t, DF> du16;
  hn::StoreU(hn::DemoteTo(du16, hn::BitCast(di, code)), du16,
             reinterpret_cast<uint16_t*>(out));
}

// f32 -> bf16 RNE, NaN -> 0x7FFF.
HWY_INLINE void EncodeBF16(VF x, uint8_t* out) {
  const DU du;
  const DI di;
  const VU u = hn::BitCast(du, x);
  const VU lsb = hn::And(hn::ShiftRight<16>(u), hn::Set(du, 1u));
  VU code = hn::ShiftRight<16>(hn::Add(u, hn::Add(hn::Set(du, 0x7FFFu), lsb)));
  const auto nan = hn::Gt(hn::BitCast(di, hn::And(u, hn::Set(du, 0x7FFFFFFFu))),
                          hn::Set(di, 0x7F800000));
  code = hn::IfThenElse(hn::RebindMask(du, nan), hn::Set(du, 0x7FFFu), code);
  // code <= 0xFFFF (the sign is bit 15), so the saturating i32 -> u16 demote
  // is exact.
  const hn::Rebind<uint16_t, DF> du16;
  hn::StoreU(hn::DemoteTo(du16, hn::BitCast(di, code)), du16,
             reinterpret_cast<uint16_t*>(out));
}

HWY_INLINE void EncodeF32(VF x, uint8_t* out) {
  const DF df;
  const DU du;
  const VF canon = hn::BitCast(df, hn::Set(du, 0x7FFFFFFFu));
  hn::StoreU(hn::IfThenElse(hn::IsNaN(x), canon, x), df, reinterpret_cast<float*>(out));
}

template <Elem E>
HWY_INLINE VF Decode(const uint8_t* p) {
  if constexpr (E == Elem::kE4M3 || E == Elem::kE5M2) {
    return DecodeFp8<E>(p);
  } else if constexpr (E == Elem::kF16) {
    return DecodeF16(p);
  } else if constexpr (E == Elem::kBF16) {
    return DecodeBF16(p);
  } else {
    return hn::LoadU(DF(), reinterpret_cast<const float*>(p));
  }
}

template <Elem E>
HWY_INLINE void Encode(VF x, uint8_t* out) {
  if constexpr (E == Elem::kE4M3 || E == Elem::kE5M2) {
    EncodeFp8<E>(x, out);
  } else if constexpr (E == Elem::kF16) {
    EncodeF16(x, out);
  } else if constexpr (E == Elem::kBF16) {
    EncodeBF16(x, out);
  } else {
    EncodeF32(x, out);
  }
}

template <Elem E, Step S, bool kCheckOverflow>
HWY_INLINE VF AddStep(VF a, VF b) {
  const VF s = hn::Add(a, b);
  if constexpr (S == Step::kF16) {
    return RoundToF16<kCheckOverflow>(s);
  } else if constexpr (S == Step::kBF16) {
    return RoundToBF16(s);
  } else if constexpr (S == Step::kF16Fp8) {
    return RoundToFp8<E>(RoundToF16<kCheckOverflow>(s));
  } else {
    return s;
  }
}

constexpr size_t ElemBytes(Elem e) {
  return e == Elem::kE4M3 || e == Elem::kE5M2 ? 1
         : e == Elem::kF32                    ? 4
                                              : 2;
}

// True if any of the `bytes` fp8 codes of any source is NaN/Inf.
template <Elem E>
HWY_INLINE bool HasSpecials(const uint8_t* const* src, size_t nsrc, size_t pos,
                            size_t bytes) {
  const hn::ScalableTag<uint8_t> d8;
  const size_t step = HWY_MIN(hn::Lanes(d8), bytes);
  const auto mask = hn::Set(d8, Fp8<E>::kSpecialMask);
  if (step == hn::Lanes(d8)) {
    auto any = hn::Zero(d8);
    for (size_t r = 0; r < nsrc; ++r) {
      for (size_t i = 0; i < bytes; i += step) {
        const auto v = hn::LoadU(d8, src[r] + pos + i);
        any = hn::Or(any, hn::VecFromMask(d8, hn::Eq(hn::And(v, mask), mask)));
      }
    }
    return !hn::AllFalse(d8, hn::MaskFromVec(any));
  }
  for (size_t r = 0; r < nsrc; ++r) {
    for (size_t i = 0; i < bytes; ++i) {
      if ((src[r][pos + i] & Fp8<E>::kSpecialMask) == Fp8<E>::kSpecialMask) return true;
    }
  }
  return false;
}

// Reduces Lanes(DF) elements at element index `i`.
template <Elem E, Step S, bool kCheckOverflow, bool kTree>
HWY_INLINE void ReduceBlock(const uint8_t* const* src, size_t nsrc, size_t i,
                            uint8_t* out, float* scratch) {
  constexpr size_t kB = ElemBytes(E);
  const DF df;
  const size_t off = i * kB;
  if constexpr (!kTree) {
    VF acc = Decode<E>(src[0] + off);
    for (size_t r = 1; r < nsrc; ++r) {
      acc = AddStep<E, S, kCheckOverflow>(acc, Decode<E>(src[r] + off));
    }
    Encode<E>(acc, out + off);
  } else {
    const size_t N = hn::Lanes(df);
    for (size_t r = 0; r < nsrc; ++r) {
      hn::Store(Decode<E>(src[r] + off), df, scratch + r * N);
    }
    size_t cnt = nsrc;
    while (cnt > 1) {
      for (size_t k = 0; k < cnt / 2; ++k) {
        const VF a = hn::Load(df, scratch + 2 * k * N);
        const VF b = hn::Load(df, scratch + (2 * k + 1) * N);
        hn::Store(AddStep<E, S, kCheckOverflow>(a, b), df, scratch + k * N);
      }
      if (cnt % 2) {
        hn::Store(hn::Load(df, scratch + (cnt - 1) * N), df, scratch + (cnt / 2) * N);
      }
      cnt = (cnt + 1) / 2;
    }
    Encode<E>(hn::Load(df, scratch), out + off);
  }
}

// The array driver: `fn(s, o, end)` reduces the elements [0, end) (a whole
// number of chunks of `chunk` elements) of sources s into o; it runs on all
// whole chunks, then once on a zero-padded copy of the tail (zero codes are
// +0, neutral for every op of the kernels).
template <size_t kB, class RangeFn>
void ForEachChunkRange(const uint8_t* const* src, size_t nsrc, uint8_t* out,
                       size_t n, size_t chunk, const RangeFn& fn) {
  const size_t whole = n - n % chunk;
  if (whole != 0) fn(src, out, whole);
  if (whole == n) return;
  const size_t rem = n - whole;
  std::vector<uint8_t> pad((nsrc + 1) * chunk * kB, 0);
  std::vector<const uint8_t*> psrc(nsrc);
  for (size_t r = 0; r < nsrc; ++r) {
    std::memcpy(pad.data() + r * chunk * kB, src[r] + whole * kB, rem * kB);
    psrc[r] = pad.data() + r * chunk * kB;
  }
  uint8_t* pout = pad.data() + nsrc * chunk * kB;
  fn(psrc.data(), pout, chunk);
  std::memcpy(out + whole * kB, pout, rem * kB);
}

// As ForEachChunkRange with a per-chunk `fn(s, o, pos)`; a chunk for which
// fn returns false runs the scalar reference instead (fp8 chunks with NaN/Inf
// codes).
template <size_t kB, class ChunkFn>
void ForEachChunk(const ReduceSpec& spec, const uint8_t* const* src, size_t nsrc,
                  uint8_t* out, size_t n, size_t chunk, const ChunkFn& fn) {
  std::vector<uint64_t> codes(nsrc);
  ForEachChunkRange<kB>(src, nsrc, out, n, chunk,
                        [&](const uint8_t* const* s, uint8_t* o, size_t end) {
    for (size_t pos = 0; pos < end; pos += chunk) {
      if (fn(s, o, pos)) continue;
      for (size_t k = pos; k < pos + chunk; ++k) {
        for (size_t r = 0; r < nsrc; ++r) {
          uint64_t c = 0;
          std::memcpy(&c, s[r] + k * kB, kB);
          codes[r] = c;
        }
        const uint64_t v = scalar::ReduceElement(spec, codes);
        std::memcpy(o + k * kB, &v, kB);
      }
    }
  });
}

template <Elem E, Step S, bool kCheckOverflow, bool kTree>
void ReduceLoop(const ReduceSpec& spec, const uint8_t* const* src, size_t nsrc,
                uint8_t* out, size_t n) {
  constexpr size_t kB = ElemBytes(E);
  constexpr bool kFp8 = E == Elem::kE4M3 || E == Elem::kE5M2;
  const DF df;
  const size_t N = hn::Lanes(df);
  const size_t chunk = 4 * N;  // elements; = one full u8 vector on x86
  auto scratch = hwy::AllocateAligned<float>(kTree ? nsrc * N : 1);
  ForEachChunk<kB>(spec, src, nsrc, out, n, chunk,
                   [&](const uint8_t* const* s, uint8_t* o, size_t pos) {
    if (kFp8 && HasSpecials<E>(s, nsrc, pos * kB, chunk * kB)) return false;
    if constexpr (!kTree) {
      // Four independent accumulator chains (the per-step rounding makes one
      // chain latency-bound).
      const size_t o0 = pos * kB, o1 = o0 + N * kB, o2 = o1 + N * kB,
                   o3 = o2 + N * kB;
      VF a0 = Decode<E>(s[0] + o0), a1 = Decode<E>(s[0] + o1);
      VF a2 = Decode<E>(s[0] + o2), a3 = Decode<E>(s[0] + o3);
      for (size_t r = 1; r < nsrc; ++r) {
        a0 = AddStep<E, S, kCheckOverflow>(a0, Decode<E>(s[r] + o0));
        a1 = AddStep<E, S, kCheckOverflow>(a1, Decode<E>(s[r] + o1));
        a2 = AddStep<E, S, kCheckOverflow>(a2, Decode<E>(s[r] + o2));
        a3 = AddStep<E, S, kCheckOverflow>(a3, Decode<E>(s[r] + o3));
      }
      Encode<E>(a0, o + o0);
      Encode<E>(a1, o + o1);
      Encode<E>(a2, o + o2);
      Encode<E>(a3, o + o3);
    } else {
      for (size_t j = 0; j < chunk; j += N) {
        ReduceBlock<E, S, kCheckOverflow, kTree>(s, nsrc, pos + j, o, scratch.get());
      }
    }
    return true;
  });
}

// e4m3 sources whose f16 partial sums provably stay finite: every acc::f16
// step adds |x| <= 448 and rounds by at most half an f16 ulp (<= 16 below
// 65536), so after k <= 127 steps |acc| <= 128 * 448 + 127 * 16 = 59376 <
// 65504 for any association (sequential or tree).
inline constexpr size_t kE4M3FiniteSources = 128;

#undef MXPACK_REDUCE_HAVE_FP16_KERNEL
#if MXPACK_FP16_INTRIN && (HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL)
#define MXPACK_REDUCE_HAVE_FP16_KERNEL 1
// ---------------------------------------------------------------------------
// AVX512-FP16 kernels of the fp8 acc::f16 models (kSequential, kPairwiseTree)
// and NCCL's fp8 path: 64 elements per chunk in two vectors of 32 f16 lanes,
// each add one IEEE f16 add (vaddph: RNE, subnormals kept, overflow to Inf;
// mxpack never sets MXCSR.FTZ/DAZ), i.e. exactly the model's step.
//
// Lane layout: a chunk's 64 codes are read as 32 16-bit words w = c[2i+1] <<
// 8 | c[2i]; the "even" vector holds the elements 2i, the "odd" vector the
// elements 2i+1, each as f16 bits, so decoding needs no shuffles and the
// encode writes both bytes of a word.
//
// Domains (f16 bits per element):
//  * e5m2: the code is the top byte of the f16 with the same value, c << 8
//    (Inf and NaN included):  odd = w & 0xFF00,  even = w << 8.
//  * e4m3: the f16 of value * 2^-8,  s 0 m6..m0 0000000  (m = exponent and
//    mantissa of the code): the e4m3 exponent field becomes the f16 exponent
//    field (bias 7 vs 15) and e4m3 subnormals become f16 subnormals. Every
//    model value is a multiple of 2^-9 below 2^16 (kE4M3FiniteSources), so
//    the scaled values are multiples of 2^-17 below 2^8: where f16 is
//    subnormal (scaled < 2^-14) both the scaled and the unscaled sums are
//    exact, elsewhere both are normal with the same 11-bit rounding. Hence
//    the scaled f16 add equals the scaled acc::f16 add.
//      odd  = (w >>arith 1) & 0xBF80     s s m6..m0 x -> s 0 m6..m0 0000000
//      even = (128 * int8(c[2i])) & 0xBF80   (pmaddubsw: s s m6..m0 0000000)
//    The NaN codes 0x7F / 0xFF are not NaN in this domain: chunks holding
//    them (signed byte max 0x7F or unsigned byte max 0xFF) run the scalar
//    reference.
// ---------------------------------------------------------------------------

MXPACK_FP16_INLINE __m512i F16Add(__m512i a, __m512i b) {
  return _mm512_castph_si512(
      _mm512_add_ph(_mm512_castsi512_ph(a), _mm512_castsi512_ph(b)));
}

// 64 fp8 codes -> even / odd vectors of f16 bits; for e4m3 folds the signed
// and unsigned byte maxima into *smax / *umax (NaN-code detection).
template <Elem E>
MXPACK_FP16_INLINE void F16Decode(__m512i w, __m512i* even, __m512i* odd, __m512i* smax,
                                  __m512i* umax) {
  if constexpr (E == Elem::kE5M2) {
    (void)smax;
    (void)umax;
    *odd = _mm512_and_si512(w, _mm512_set1_epi16(static_cast<short>(0xFF00)));
    // w << 8 as a byte shuffle (port 5; the shift port also runs vaddph):
    // byte 2i+1 <- byte 2i, byte 2i <- 0 (index bit 7 zeroes).
    const long long lo = 0x0680048002800080LL, hi = 0x0E800C800A800880LL;  // per 128 bits
    *even = _mm512_shuffle_epi8(w, _mm512_set_epi64(hi, lo, hi, lo, hi, lo, hi, lo));
  } else {
    *smax = _mm512_max_epi8(*smax, w);
    *umax = _mm512_max_epu8(*umax, w);
    const __m512i mask = _mm512_set1_epi16(static_cast<short>(0xBF80));
    *odd = _mm512_and_si512(_mm512_srai_epi16(w, 1), mask);
    // pmaddubsw(u8 a, s8 b) per word: a.lo * b.lo + a.hi * b.hi = 128 * c[2i].
    *even = _mm512_and_si512(_mm512_maddubs_epi16(_mm512_set1_epi16(0x0080), w), mask);
  }
}

template <Elem E>
MXPACK_FP16_INLINE bool F16SawNanCode(__m512i smax, __m512i umax) {
  if constexpr (E == Elem::kE4M3) {
    return (_mm512_cmpeq_epi8_mask(smax, _mm512_set1_epi8(0x7F)) |
            _mm512_cmpeq_epi8_mask(umax, _mm512_set1_epi8(static_cast<char>(0xFF)))) != 0;
  } else {
    (void)smax;
    (void)umax;
    return false;
  }
}

// RNE of f16 lanes (domain above) to the fp8 magnitude code, unsaturated, in
// 16-bit integer lanes:  a = |h|,  t = a + half - 1 + lsb,  code = t >> drop
// with drop = 7 (e4m3: 10 - 3 mantissa bits) or 8 (e5m2). The fp8 exponent
// field is the f16 one, and fp8 subnormals sit on the f16 grid in the same
// place, so one shift serves both. Returns t (the caller shifts).
template <Elem E>
MXPACK_FP16_INLINE __m512i F16RoundBiased(__m512i a) {
  constexpr int kDrop = E == Elem::kE4M3 ? 7 : 8;
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi16(a, kDrop), _mm512_set1_epi16(1));
  return _mm512_add_epi16(_mm512_add_epi16(a, _mm512_set1_epi16((1 << (kDrop - 1)) - 1)), lsb);
}

// Final encode of the even / odd f16 vectors to 64 fp8 codes: RNE satfinite.
// Magnitudes are rounded in 16-bit lanes and merged into words (even -> low
// byte, odd -> high byte); saturation, NaN and sign are applied to bytes:
//   e4m3: every caller's sums are finite, |h| < 0x5C00 (|sum| < 2^16 scaled
//         by 2^-8; kE4M3FiniteSources, NCCL's per-step rounding), so there
//         is no NaN to override and no absolute value to take: one vpavgw
//           t = avg(h, 62 | lsb) = (h + 63 + lsb) >> 1,  lsb = bit 7 of h,
//         keeps the sign at bit 14 and the biased magnitude below it
//         (a + 64 < 2^15), so t >> 6 is code | s << 8 and t << 2 has the
//         code in bits 8..15 (13 operations per 64 elements; rounding
//         absolute values as the e5m2 path below does took 19);
//   e5m2: NaN (a NaN code, or Inf - Inf) -> 0x7F; Inf and NaN both round
//         to 0x7C..0x7F, so NaN lanes are forced to 0xFF first and the
//         magnitudes 0xFF told apart by one byte compare.
template <Elem E>
MXPACK_FP16_INLINE __m512i F16EncodeFp8(__m512i even, __m512i odd) {
  // Signs: odd's bit 15 is in place, even's bit 15 moves to bit 7.
  // sign = 0x8000 ? odd : even >> 8 (0xE4 = C ? A : B), then the code |
  // (sign & 0x8080) (0xF8 = A | (B & C)).
  const auto with_sign = [&](__m512i code) MXPACK_FP16_TARGET {
    const __m512i sign = _mm512_ternarylogic_epi32(
        odd, _mm512_srli_epi16(even, 8), _mm512_set1_epi16(static_cast<short>(0x8000)), 0xE4);
    return _mm512_ternarylogic_epi32(code, sign, _mm512_set1_epi16(static_cast<short>(0x8080)),
                                     0xF8);
  };
  const __m512i max_code = _mm512_set1_epi8(static_cast<char>(Fp8<E>::kMaxCode));
  const __m512i low_bytes = _mm512_set1_epi16(0x00FF);
  if constexpr (E == Elem::kE4M3) {
    const __m512i one = _mm512_set1_epi16(1);
    const __m512i bias = _mm512_set1_epi16(62);
    // 62 | (h >> 7 & 1)  (0xF8 with A = 62).
    const __m512i be = _mm512_ternarylogic_epi32(bias, _mm512_srli_epi16(even, 7), one, 0xF8);
    const __m512i bo = _mm512_ternarylogic_epi32(bias, _mm512_srli_epi16(odd, 7), one, 0xF8);
    const __m512i te = _mm512_srli_epi16(_mm512_avg_epu16(even, be), 6);  // code | s << 8
    const __m512i to = _mm512_slli_epi16(_mm512_avg_epu16(odd, bo), 2);   // code << 8 + junk
    // Word = (te & 0x00FF) | (to & 0xFF00)  (0xE4 with C = 0x00FF).
    const __m512i mag = _mm512_ternarylogic_epi32(te, to, low_bytes, 0xE4);
    return with_sign(_mm512_min_epu8(mag, max_code));
  } else {
    const __m512i abs_mask = _mm512_set1_epi16(0x7FFF);
    const __m512i ae = _mm512_and_si512(even, abs_mask);
    const __m512i ao = _mm512_and_si512(odd, abs_mask);
    const __m512i nan_code = _mm512_set1_epi16(0x7C00);
    __m512i te = _mm512_srli_epi16(F16RoundBiased<E>(ae), 8);  // 0 .. 0xFF
    __m512i to = F16RoundBiased<E>(ao);                        // code << 8 + junk
    te = _mm512_mask_mov_epi16(te, _mm512_cmpgt_epu16_mask(ae, nan_code), _mm512_set1_epi16(0xFF));
    to = _mm512_mask_mov_epi16(to, _mm512_cmpgt_epu16_mask(ao, nan_code),
                               _mm512_set1_epi16(static_cast<short>(0xFF00)));
    const __m512i mag = _mm512_ternarylogic_epi32(te, to, low_bytes, 0xE4);
    const __mmask64 finite = _mm512_cmplt_epu8_mask(mag, _mm512_set1_epi8(static_cast<char>(0xFF)));
    // NaN -> 0x7F whatever its sign.
    return _mm512_mask_mov_epi8(_mm512_set1_epi8(0x7F), finite,
                                with_sign(_mm512_min_epu8(mag, max_code)));
  }
}

// NCCL step rounding: the f16 sum rounded RNE satfinite to the fp8 grid, kept
// as f16 bits (NaN stays NaN).
template <Elem E>
MXPACK_FP16_INLINE __m512i F16RoundToFp8(__m512i h) {
  constexpr int kDrop = E == Elem::kE4M3 ? 7 : 8;
  const __m512i a = _mm512_and_si512(h, _mm512_set1_epi16(0x7FFF));
  __m512i r = _mm512_srli_epi16(F16RoundBiased<E>(a), kDrop);
  r = _mm512_min_epu16(r, _mm512_set1_epi16(static_cast<short>(Fp8<E>::kMaxCode)));
  r = _mm512_slli_epi16(r, kDrop);
  // r | (h & 0x8000)  (ternary-logic 0xF8 = A | (B & C))
  r = _mm512_ternarylogic_epi32(r, h, _mm512_set1_epi16(static_cast<short>(0x8000)), 0xF8);
  const __mmask32 nan = _mm512_cmpgt_epu16_mask(a, _mm512_set1_epi16(0x7C00));
  return _mm512_mask_mov_epi16(r, nan, h);
}

template <Elem E, Step S>
MXPACK_FP16_INLINE __m512i F16Step(__m512i a, __m512i b) {
  const __m512i s = F16Add(a, b);
  if constexpr (S == Step::kF16Fp8) {
    return F16RoundToFp8<E>(s);
  } else {
    return s;
  }
}

inline constexpr size_t kF16PrefetchBytes = 1024;

// kSequential over kK consecutive chunks of 64 elements at `pos`; false if
// they hold e4m3 NaN codes (nothing written). Each source's kK lines are read
// back to back and prefetched kF16PrefetchBytes ahead: with 8 sources the
// hardware prefetchers alone leave the L2-resident loop waiting on loads
// (2 or 8 chunks and half or twice the distance do no better).
template <Elem E, Step S, size_t kK>
MXPACK_FP16_INLINE bool F16SeqChunks(const uint8_t* const* s, size_t nsrc, size_t pos,
                                     uint8_t* o) {
  __m512i smax = _mm512_set1_epi8(-128), umax = _mm512_setzero_si512();
  __m512i even[kK], odd[kK];
  const uint8_t* p = s[0] + pos;
  for (size_t j = 0; j < kK; ++j) {
    _mm_prefetch(reinterpret_cast<const char*>(p + kF16PrefetchBytes + 64 * j), _MM_HINT_T0);
    F16Decode<E>(_mm512_loadu_si512(p + 64 * j), &even[j], &odd[j], &smax, &umax);
  }
  for (size_t r = 1; r < nsrc; ++r) {
    p = s[r] + pos;
    for (size_t j = 0; j < kK; ++j) {
      __m512i e2, o2;
      _mm_prefetch(reinterpret_cast<const char*>(p + kF16PrefetchBytes + 64 * j), _MM_HINT_T0);
      F16Decode<E>(_mm512_loadu_si512(p + 64 * j), &e2, &o2, &smax, &umax);
      even[j] = F16Step<E, S>(even[j], e2);
      odd[j] = F16Step<E, S>(odd[j], o2);
    }
  }
  if (F16SawNanCode<E>(smax, umax)) return false;
  for (size_t j = 0; j < kK; ++j) {
    _mm512_storeu_si512(o + pos + 64 * j, F16EncodeFp8<E>(even[j], odd[j]));
  }
  return true;
}

// One chunk of 64 elements at element `pos`; false if it holds e4m3 NaN
// codes (nothing written). `scratch` holds 2 * nsrc vectors (tree only).
template <Elem E, Step S, bool kTree>
MXPACK_FP16_INLINE bool F16Chunk(const uint8_t* const* s, size_t nsrc, size_t pos,
                                 uint8_t* o, __m512i* scratch) {
  if constexpr (!kTree) {
    (void)scratch;
    return F16SeqChunks<E, S, 1>(s, nsrc, pos, o);
  } else {
    __m512i smax = _mm512_set1_epi8(-128), umax = _mm512_setzero_si512();
    for (size_t r = 0; r < nsrc; ++r) {
      F16Decode<E>(_mm512_loadu_si512(s[r] + pos), &scratch[2 * r], &scratch[2 * r + 1],
                   &smax, &umax);
    }
    size_t cnt = nsrc;
    while (cnt > 1) {
      for (size_t k = 0; k < cnt / 2; ++k) {
        scratch[2 * k] = F16Step<E, S>(scratch[4 * k], scratch[4 * k + 2]);
        scratch[2 * k + 1] = F16Step<E, S>(scratch[4 * k + 1], scratch[4 * k + 3]);
      }
      if (cnt % 2) {
        scratch[cnt - 1] = scratch[2 * (cnt - 1)];
        scratch[cnt] = scratch[2 * (cnt - 1) + 1];
      }
      cnt = (cnt + 1) / 2;
    }
    if (F16SawNanCode<E>(smax, umax)) return false;
    _mm512_storeu_si512(o + pos, F16EncodeFp8<E>(scratch[0], scratch[1]));
    return true;
  }
}

// Reduces the whole chunks below `end`; appends the positions of chunks it
// could not do (e4m3 NaN codes) to *fallback.
template <Elem E, Step S, bool kTree>
MXPACK_FP16_TARGET void F16Range(const uint8_t* const* s, size_t nsrc, uint8_t* o,
                                 size_t end, __m512i* scratch, std::vector<size_t>* fallback) {
  size_t pos = 0;
  if constexpr (!kTree) {
    constexpr size_t kK = 4;  // 2 and 8 are no faster
    for (; pos + 64 * kK <= end; pos += 64 * kK) {
      if (!F16SeqChunks<E, S, kK>(s, nsrc, pos, o)) {
        for (size_t j = 0; j < kK; ++j) fallback->push_back(pos + 64 * j);
      }
    }
  }
  for (; pos < end; pos += 64) {
    if (!F16Chunk<E, S, kTree>(s, nsrc, pos, o, scratch)) fallback->push_back(pos);
  }
}

template <Elem E, Step S, bool kTree>
void F16Loop(const ReduceSpec& spec, const uint8_t* const* src, size_t nsrc, uint8_t* out,
             size_t n) {
  auto scratch = hwy::AllocateAligned<__m512i>(kTree ? 2 * nsrc : 1);
  __m512i* sc = scratch.get();
  std::vector<size_t> fallback;
  std::vector<uint64_t> codes(nsrc);
  ForEachChunkRange<1>(src, nsrc, out, n, 64,
                       [&](const uint8_t* const* s, uint8_t* o, size_t end) {
    fallback.clear();
    F16Range<E, S, kTree>(s, nsrc, o, end, sc, &fallback);
    for (size_t pos : fallback) {
      for (size_t k = pos; k < pos + 64; ++k) {
        for (size_t r = 0; r < nsrc; ++r) codes[r] = s[r][k];
        o[k] = static_cast<uint8_t>(scalar::ReduceElement(spec, codes));
      }
    }
  });
}

// Whether this CPU runs the AVX512-FP16 kernels (and they are enabled).
inline bool UseF16Kernels() {
  return internal::CpuHasAvx512Fp16() && internal::ReduceNativeF16Enabled();
}
#else
#define MXPACK_REDUCE_HAVE_FP16_KERNEL 0
#endif

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
