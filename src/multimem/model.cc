// Scalar reference of the multimem reductions (docs/semantics.md section 4) and the
// host model of a multicast object with N replicas.
//
// Every float rounding goes through scalar::Convert (one rounding from an
// exact or provably sufficient source value). Two facts make that possible
// without a second rounder:
//  * Two-operand adds: the double sum a + b of two values of a format with
//    p <= 24 significand bits is rounded once by the hardware to 53 bits;
//    RNE_p(RNE_53(a + b)) == RNE_p(a + b) because 53 >= 2p + 2 (Figueroa,
//    "When is double rounding innocuous?", 1995). So Convert(f64 -> A) of the
//    double sum is the correctly rounded sum in A (e4m3, e5m2, f16, bf16,
//    f32). f64 sums use the hardware double add directly.
//  * kExactOnce: the exact fixed-point sum is rounded to odd at 53 bits (the
//    discarded bits are OR-ed into the last kept bit, no rounding decision);
//    RNE_p(RO_53(S)) == RNE_p(S) for p <= 51 (Boldo & Melquiond, "Emulation
//    of FMA and correctly rounded sums: proved algorithms using rounding to
//    odd", 2008). For f64 results the sum is split as hi + lo with lo rounded
//    to odd at 106 bits and the hardware double add rounds once.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "mxpack/multimem.h"
#include "mxpack/scalar.h"
#include "src/multimem/reduce_args.h"
#include "src/util/fp_env.h"
#include "src/util/little_endian.h"

namespace mxpack {
namespace {

bool IsFp8Format(Format f) { return f == Format::kE4M3 || f == Format::kE5M2; }

EncodePolicy Rne(Saturation s) {
  EncodePolicy p;
  p.rounding = Rounding::kRN;
  p.saturation = s;
  return p;
}

// fp8 results (and fp8 accumulators) are satfinite; IEEE formats overflow to
// Inf (nosat).
Saturation SatFor(Format f) {
  return IsFp8Format(f) ? Saturation::kSatFinite : Saturation::kNoSat;
}

uint64_t CanonicalNan(Format f) { return Traits(f).canonical_nan; }

bool IsNan(Format f, uint64_t code) {
  return scalar::Classify(f, code) == scalar::ValueClass::kNaN;
}

// Rounds a double once (RNE) to format `to` (never f64).
uint64_t RoundDouble(Format to, double v) {
  return scalar::Convert(Format::kF64, to, scalar::F64Bits(v), Rne(SatFor(to)));
}

// Correctly rounded a + b in format `a_fmt` (see the file comment).
uint64_t Add2(Format f, uint64_t a, uint64_t b) {
  if (f == Format::kF64) {
    const double s = scalar::F64FromBits(a) + scalar::F64FromBits(b);
    return std::isnan(s) ? CanonicalNan(Format::kF64) : scalar::F64Bits(s);
  }
  return RoundDouble(f, scalar::ToDouble(f, a) + scalar::ToDouble(f, b));
}

// Exact widening of an element code to the accumulation format.
uint64_t Widen(Format from, Format to, uint64_t code) {
  if (from == to) return code;
  return scalar::Convert(from, to, code, Rne(Saturation::kNoSat));
}

// Final rounding of an accumulator in `acc` to the element format `elem`:
// RNE, fp8 satfinite (so an e5m2 Inf becomes max finite, as docs/semantics.md says
// "fp8 results satfinite"), NaN canonical.
uint64_t Narrow(Format acc, Format elem, uint64_t code) {
  if (elem == Format::kF64) {
    return IsNan(Format::kF64, code) ? CanonicalNan(Format::kF64) : code;
  }
  return RoundDouble(elem, scalar::ToDouble(acc, code));
}

Format AccFormat(const ReduceSpec& spec) {
  const Format e = MmTypeTraits(spec.type).element;
  if (spec.acc == AccPrec::kF32) return Format::kF32;
  if (spec.acc == AccPrec::kF16) return Format::kF16;
  return e;
}

// ---------------------------------------------------------------------------
// Exact fixed-point accumulator for kExactOnce: two's complement integer of
// kLimbs 64-bit limbs counting units of 2^-1074 (the smallest f64 subnormal,
// below every element format's grid). 2304 bits hold any sum of up to 2^200
// finite f64 values.
// ---------------------------------------------------------------------------
class ExactAccumulator {
 public:
  static constexpr int kLimbs = 36;
  static constexpr int kLsbExp = -1074;

  // Adds a finite double exactly.
  void Add(double v) {
    if (v == 0) return;
    int e = 0;
    const double m = std::frexp(std::fabs(v), &e);  // |v| = m * 2^e, m in [0.5,1)
    // |v| = sig * 2^(e - 53) with a 53-bit integer sig; every finite double is
    // a multiple of 2^-1074, so shift the grid down when e - 53 < -1074.
    int shift = e - 53 - kLsbExp;
    uint64_t sig = static_cast<uint64_t>(std::ldexp(m, 53));
    if (shift < 0) {
      sig >>= -shift;  // Exact: the dropped bits are zero.
      shift = 0;
    }
    AddShifted(sig, shift, std::signbit(v));
  }

  bool IsZero() const {
    for (uint64_t l : limb_) {
      if (l != 0) return false;
    }
    return true;
  }

  // Returns the exact sum rounded to odd at 53 bits (as a double; exact when
  // the sum has <= 53 significant bits), or, with `f64_result`, the sum
  // rounded to nearest even as a double via hi + lo.
  double Result(bool f64_result) const {
    std::vector<uint64_t> mag(limb_, limb_ + kLimbs);
    const bool neg = (mag[kLimbs - 1] >> 63) != 0;
    if (neg) Negate(mag);
    int top = -1;
    for (int i = kLimbs - 1; i >= 0 && top < 0; --i) {
      if (mag[i] != 0) top = i * 64 + 63 - __builtin_clzll(mag[i]);
    }
    if (top < 0) return 0.0;
    double out;
    if (top - 1074 >= 1024) {
      out = HUGE_VAL;  // Beyond every format: overflows to Inf (or satfinite).
    } else if (top <= 52) {
      out = std::ldexp(static_cast<double>(Bits(mag, 0, top + 1)), kLsbExp);
    } else {
      const int hi_lsb = top - 52;
      uint64_t hi = Bits(mag, hi_lsb, 53);
      if (!f64_result) {
        if (AnyBelow(mag, hi_lsb)) hi |= 1;  // Round to odd at 53 bits.
        out = std::ldexp(static_cast<double>(hi), hi_lsb + kLsbExp);
      } else {
        const int lo_lsb = std::max(0, hi_lsb - 53);
        uint64_t lo = Bits(mag, lo_lsb, hi_lsb - lo_lsb);
        if (AnyBelow(mag, lo_lsb)) lo |= 1;  // Round to odd at 106 bits.
        // Both parts are exact doubles; the hardware add rounds once (RNE).
        out = std::ldexp(static_cast<double>(hi), hi_lsb + kLsbExp) +
              std::ldexp(static_cast<double>(lo), lo_lsb + kLsbExp);
      }
    }
    return neg ? -out : out;
  }

 private:
  void AddShifted(uint64_t sig, int shift, bool negative) {
    uint64_t add[kLimbs] = {};
    const int li = shift / 64, bi = shift % 64;
    add[li] = sig << bi;
    if (bi != 0 && li + 1 < kLimbs) add[li + 1] = sig >> (64 - bi);
    if (negative) {
      // limb_ -= add
      uint64_t borrow = 0;
      for (int i = 0; i < kLimbs; ++i) {
        const uint64_t a = limb_[i], b = add[i];
        const uint64_t d = a - b - borrow;
        borrow = (a < b || (a == b && borrow)) ? 1 : 0;
        limb_[i] = d;
      }
    } else {
      uint64_t carry = 0;
      for (int i = 0; i < kLimbs; ++i) {
        const uint64_t a = limb_[i], b = add[i];
        const uint64_t s = a + b + carry;
        carry = (s < a || (carry && s == a)) ? 1 : 0;
        limb_[i] = s;
      }
    }
  }
  static void Negate(std::vector<uint64_t>& v) {
    uint64_t carry = 1;
    for (uint64_t& l : v) {
      l = ~l + carry;
      carry = (carry && l == 0) ? 1 : 0;
    }
  }
  static uint64_t Bit(const std::vector<uint64_t>& v, int i) {
    return (v[i / 64] >> (i % 64)) & 1;
  }
  // `count` (<= 64) bits starting at bit `lsb`.
  static uint64_t Bits(const std::vector<uint64_t>& v, int lsb, int count) {
    uint64_t r = 0;
    for (int i = count - 1; i >= 0; --i) r = (r << 1) | Bit(v, lsb + i);
    return r;
  }
  static bool AnyBelow(const std::vector<uint64_t>& v, int bit) {
    for (int i = 0; i < bit / 64; ++i) {
      if (v[i] != 0) return true;
    }
    const int rem = bit % 64;
    return rem != 0 && (v[bit / 64] & ((uint64_t{1} << rem) - 1)) != 0;
  }
  uint64_t limb_[kLimbs] = {};
};

uint64_t ExactOnce(Format elem, absl::Span<const uint64_t> codes) {
  bool nan = false, pos_inf = false, neg_inf = false, all_neg_zero = true;
  ExactAccumulator acc;
  for (uint64_t c : codes) {
    const scalar::ValueClass k = scalar::Classify(elem, c);
    const double v = scalar::ToDouble(elem, c);
    if (k != scalar::ValueClass::kZero || !std::signbit(v)) all_neg_zero = false;
    if (k == scalar::ValueClass::kNaN) {
      nan = true;
    } else if (k == scalar::ValueClass::kInf) {
      (v > 0 ? pos_inf : neg_inf) = true;
    } else {
      acc.Add(v);
    }
  }
  double r;
  if (nan || (pos_inf && neg_inf)) {
    r = std::nan("");
  } else if (pos_inf || neg_inf) {
    r = pos_inf ? HUGE_VAL : -HUGE_VAL;
  } else if (acc.IsZero()) {
    // IEEE RNE: an exact zero sum is +0 unless every operand is -0.
    r = all_neg_zero ? -0.0 : 0.0;
  } else {
    r = acc.Result(elem == Format::kF64);
  }
  if (elem == Format::kF64) {
    return std::isnan(r) ? CanonicalNan(Format::kF64) : scalar::F64Bits(r);
  }
  return RoundDouble(elem, r);
}

uint64_t FloatAdd(const ReduceSpec& spec, absl::Span<const uint64_t> codes) {
  const Format e = MmTypeTraits(spec.type).element;
  switch (spec.model) {
    case ReduceModel::kSequential: {
      const Format a = AccFormat(spec);
      uint64_t acc = Widen(e, a, codes[0]);
      for (size_t i = 1; i < codes.size(); ++i) {
        acc = Add2(a, acc, Widen(e, a, codes[i]));
      }
      return Narrow(a, e, acc);
    }
    case ReduceModel::kPairwiseTree: {
      const Format a = AccFormat(spec);
      std::vector<uint64_t> level(codes.size());
      for (size_t i = 0; i < codes.size(); ++i) level[i] = Widen(e, a, codes[i]);
      while (level.size() > 1) {
        std::vector<uint64_t> next;
        for (size_t i = 0; i + 1 < level.size(); i += 2) {
          next.push_back(Add2(a, level[i], level[i + 1]));
        }
        if (level.size() % 2) next.push_back(level.back());
        level.swap(next);
      }
      return Narrow(a, e, level[0]);
    }
    case ReduceModel::kExactOnce:
      return ExactOnce(e, codes);
    case ReduceModel::kNcclSoftware: {
      if (codes.size() == 1) return Narrow(e, e, codes[0]);
      uint64_t acc = codes[0];
      if (IsFp8Format(e)) {
        // fp8 -> f16, f16 add (RNE), f16 -> fp8 satfinite after every add.
        for (size_t i = 1; i < codes.size(); ++i) {
          const uint64_t h = Add2(Format::kF16, Widen(e, Format::kF16, acc),
                                  Widen(e, Format::kF16, codes[i]));
          acc = Narrow(Format::kF16, e, h);
        }
        return acc;
      }
      // f16/bf16: f32 add then RNE to the element type after every add, which
      // equals the correctly rounded add in the element type (24 >= 2*11+2);
      // f32/f64: the sequential fold.
      for (size_t i = 1; i < codes.size(); ++i) acc = Add2(e, acc, codes[i]);
      return acc;
    }
  }
  return 0;
}

// Float min/max: NaN loses to a number; both NaN -> canonical NaN; -0 < +0.
uint64_t FloatMinMax(Format e, bool is_min, uint64_t a, uint64_t b) {
  const bool na = IsNan(e, a), nb = IsNan(e, b);
  if (na && nb) return CanonicalNan(e);
  if (na) return b;
  if (nb) return a;
  const double x = scalar::ToDouble(e, a), y = scalar::ToDouble(e, b);
  if (x == y) {
    if (std::signbit(x) == std::signbit(y)) return a;  // Same value and code.
    const uint64_t neg = std::signbit(x) ? a : b;  // -0 < +0.
    const uint64_t pos = std::signbit(x) ? b : a;
    return is_min ? neg : pos;
  }
  return ((x < y) == is_min) ? a : b;
}

uint64_t IntReduce(const ReduceSpec& spec, absl::Span<const uint64_t> codes) {
  const MmTypeInfo& ti = MmTypeTraits(spec.type);
  const uint64_t mask = ti.bits == 64 ? ~uint64_t{0} : (uint64_t{1} << ti.bits) - 1;
  auto as_signed = [&](uint64_t v) -> int64_t {
    v &= mask;
    if (ti.bits == 32) return static_cast<int32_t>(static_cast<uint32_t>(v));
    return static_cast<int64_t>(v);
  };
  uint64_t acc = codes[0] & mask;
  for (size_t i = 1; i < codes.size(); ++i) {
    const uint64_t v = codes[i] & mask;
    switch (spec.op) {
      case ReduceOp::kAdd: acc = (acc + v) & mask; break;
      case ReduceOp::kAnd: acc &= v; break;
      case ReduceOp::kOr: acc |= v; break;
      case ReduceOp::kXor: acc ^= v; break;
      case ReduceOp::kMin:
      case ReduceOp::kMax: {
        const bool less = ti.is_signed ? as_signed(v) < as_signed(acc) : v < acc;
        const bool greater = ti.is_signed ? as_signed(v) > as_signed(acc) : v > acc;
        if (spec.op == ReduceOp::kMin ? less : greater) acc = v;
        break;
      }
      case ReduceOp::kNone: break;
    }
  }
  return acc;
}

using internal::LoadLE;
using internal::StoreLE;

}  // namespace

absl::string_view ReduceModelName(ReduceModel m) {
  switch (m) {
    case ReduceModel::kSequential: return "sequential";
    case ReduceModel::kPairwiseTree: return "tree";
    case ReduceModel::kExactOnce: return "exact";
    case ReduceModel::kNcclSoftware: return "nccl";
  }
  return "?";
}

absl::StatusOr<ReduceModel> ParseReduceModel(absl::string_view name) {
  if (name == "sequential" || name == "seq") return ReduceModel::kSequential;
  if (name == "tree" || name == "pairwise") return ReduceModel::kPairwiseTree;
  if (name == "exact" || name == "exact_once") return ReduceModel::kExactOnce;
  if (name == "nccl") return ReduceModel::kNcclSoftware;
  return absl::InvalidArgumentError(absl::StrFormat(
      "model='%s': expected one of sequential, tree, exact, nccl", name));
}

absl::Status ValidateReduceSpec(const ReduceSpec& spec) {
  if (static_cast<int>(spec.type) >= kNumMmTypes) {
    return absl::InvalidArgumentError("type: enum value out of range");
  }
  // The table rules of ld_reduce with the vec rule neutralized: use the
  // widest legal access of the type (the array APIs reduce any count).
  MultimemInstruction in;
  in.kind = MultimemKind::kLdReduce;
  in.op = spec.op;
  in.acc = spec.acc;
  in.type = spec.type;
  const int bits = MmTypeTraits(spec.type).bits;
  in.vec = (!MmTypeTraits(spec.type).is_float || spec.type == MmType::kF64)
               ? 1
               : 128 / bits > 8 ? 8 : 128 / bits;
  return ValidateMultimem(in);
}

ReduceSpec SpecOf(const MultimemInstruction& instr, ReduceModel model) {
  ReduceSpec s;
  s.type = instr.type;
  s.op = instr.op;
  s.acc = instr.acc;
  s.model = model;
  return s;
}

namespace internal {

absl::StatusOr<size_t> CheckReduceArgs(
    const ReduceSpec& spec, absl::Span<const absl::Span<const uint8_t>> sources,
    absl::Span<const uint8_t> out) {
  if (absl::Status s = ValidateReduceSpec(spec); !s.ok()) return s;
  const MmTypeInfo& ti = MmTypeTraits(spec.type);
  const size_t eb = static_cast<size_t>(ti.element_bytes);
  if (sources.empty()) {
    return absl::InvalidArgumentError(
        "sources: expected at least 1 replica array, got 0");
  }
  for (size_t r = 0; r < sources.size(); ++r) {
    if (sources[r].size() != sources[0].size()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "sources[%u]: expected %u bytes (the size of sources[0]), got %u", r,
          sources[0].size(), sources[r].size()));
    }
  }
  if (sources[0].size() % eb != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "sources: %u bytes is not a multiple of the .%s element size (%u "
        "bytes)",
        sources[0].size(), ti.name, eb));
  }
  if (out.size() != sources[0].size()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "out: expected %u bytes (the size of each source), got %u",
        sources[0].size(), out.size()));
  }
  return out.size() / eb;
}

}  // namespace internal

namespace scalar {

uint64_t ReduceElement(const ReduceSpec& spec, absl::Span<const uint64_t> codes) {
  const MmTypeInfo& ti = MmTypeTraits(spec.type);
  if (!ti.is_float) return IntReduce(spec, codes);
  const Format e = ti.element;
  if (spec.op == ReduceOp::kMin || spec.op == ReduceOp::kMax) {
    uint64_t acc = codes[0];
    if (codes.size() == 1 && IsNan(e, acc)) return CanonicalNan(e);
    for (size_t i = 1; i < codes.size(); ++i) {
      acc = FloatMinMax(e, spec.op == ReduceOp::kMin, acc, codes[i]);
    }
    return acc;
  }
  return FloatAdd(spec, codes);
}

static absl::Status ReduceArraysInDefaultEnv(
    const ReduceSpec& spec, absl::Span<const absl::Span<const uint8_t>> sources,
    absl::Span<uint8_t> out) {
  absl::StatusOr<size_t> count = internal::CheckReduceArgs(spec, sources, out);
  if (!count.ok()) return count.status();
  const size_t eb = static_cast<size_t>(MmTypeTraits(spec.type).element_bytes);
  const size_t n = *count;
  std::vector<uint64_t> codes(sources.size());
  for (size_t i = 0; i < n; ++i) {
    for (size_t r = 0; r < sources.size(); ++r) {
      codes[r] = LoadLE(sources[r].data() + i * eb, static_cast<int>(eb));
    }
    StoreLE(out.data() + i * eb, static_cast<int>(eb), ReduceElement(spec, codes));
  }
  return absl::OkStatus();
}

absl::Status ReduceArrays(const ReduceSpec& spec,
                          absl::Span<const absl::Span<const uint8_t>> sources,
                          absl::Span<uint8_t> out) {
  return internal::InDefaultFpEnv(
      [&] { return ReduceArraysInDefaultEnv(spec, sources, out); });
}

}  // namespace scalar

// ---------------------------------------------------------------------------
// MulticastObject.
// ---------------------------------------------------------------------------

MulticastObject::MulticastObject(size_t num_replicas, size_t bytes_per_replica)
    : bytes_(bytes_per_replica),
      replicas_(num_replicas, std::vector<uint8_t>(bytes_per_replica, 0)) {}

absl::Status MulticastObject::CheckAccess(const MultimemInstruction& instr,
                                          MultimemKind kind, size_t offset,
                                          size_t operand_bytes) const {
  if (absl::Status s = ValidateMultimem(instr); !s.ok()) return s;
  if (instr.kind != kind) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "instr: expected a multimem.%s instruction, got %s",
        MultimemKindName(kind), instr.ToString()));
  }
  if (replicas_.empty()) {
    return absl::FailedPreconditionError(
        "multicast object: expected at least 1 replica, got 0");
  }
  const size_t access = static_cast<size_t>(instr.AccessBytes());
  if (offset % access != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "offset: %s accesses %u bytes and needs %u-byte alignment; got offset "
        "%u",
        instr.ToString(), access, access, offset));
  }
  if (offset > bytes_ || bytes_ - offset < access) {
    return absl::OutOfRangeError(absl::StrFormat(
        "offset: %u + %u bytes exceeds the %u-byte replica", offset, access,
        bytes_));
  }
  if (kind != MultimemKind::kLdReduce && operand_bytes != access) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "b: expected %u bytes for %s, got %u", access, instr.ToString(),
        operand_bytes));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<uint8_t>> MulticastObject::LdReduce(
    const MultimemInstruction& instr, size_t offset, ReduceModel model) const {
  if (absl::Status s = CheckAccess(instr, MultimemKind::kLdReduce, offset, 0);
      !s.ok()) {
    return s;
  }
  const ReduceSpec spec = SpecOf(instr, model);
  const int eb = MmTypeTraits(instr.type).element_bytes;
  const size_t access = static_cast<size_t>(instr.AccessBytes());
  std::vector<uint8_t> out(access);
  std::vector<uint64_t> codes(replicas_.size());
  for (size_t pos = 0; pos < access; pos += static_cast<size_t>(eb)) {
    for (size_t r = 0; r < replicas_.size(); ++r) {
      codes[r] = LoadLE(replicas_[r].data() + offset + pos, eb);
    }
    StoreLE(out.data() + pos, eb, scalar::ReduceElement(spec, codes));
  }
  return out;
}

absl::Status MulticastObject::St(const MultimemInstruction& instr, size_t offset,
                                 absl::Span<const uint8_t> b) {
  if (absl::Status s = CheckAccess(instr, MultimemKind::kSt, offset, b.size());
      !s.ok()) {
    return s;
  }
  for (auto& rep : replicas_) std::memcpy(rep.data() + offset, b.data(), b.size());
  return absl::OkStatus();
}

absl::Status MulticastObject::Red(const MultimemInstruction& instr, size_t offset,
                                  absl::Span<const uint8_t> b, ReduceModel model) {
  if (absl::Status s = CheckAccess(instr, MultimemKind::kRed, offset, b.size());
      !s.ok()) {
    return s;
  }
  const ReduceSpec spec = SpecOf(instr, model);
  const int eb = MmTypeTraits(instr.type).element_bytes;
  for (auto& rep : replicas_) {
    for (size_t pos = 0; pos < b.size(); pos += static_cast<size_t>(eb)) {
      const uint64_t two[2] = {LoadLE(rep.data() + offset + pos, eb),
                               LoadLE(b.data() + pos, eb)};
      StoreLE(rep.data() + offset + pos, eb, scalar::ReduceElement(spec, two));
    }
  }
  return absl::OkStatus();
}

}  // namespace mxpack
