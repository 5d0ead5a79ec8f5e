// Scalar reference of docs/semantics.md section 1: one generic, traits-driven codec.
#include "mxpack/scalar.h"

#include <cmath>
#include <cstring>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "src/util/fp_env.h"
#include "src/util/little_endian.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "mxpack reads and writes little-endian element arrays directly");

namespace mxpack {
namespace {

// A decoded value: |x| = sig * 2^exp for kFinite (sig != 0).
struct Unpacked {
  enum Kind : uint8_t { kZero, kFinite, kInf, kNaN } kind;
  bool sign;
  uint64_t sig;
  int exp;
};

constexpr uint64_t LowMask(int n) {
  return n >= 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1;
}

uint64_t ExpField(const FormatTraits& t, uint64_t bits) {
  return (bits >> t.man_bits) & LowMask(t.exp_bits);
}

bool IsNanCode(const FormatTraits& t, uint64_t bits) {
  const uint64_t e = ExpField(t, bits);
  const uint64_t m = bits & LowMask(t.man_bits);
  switch (t.nan) {
    case NanKind::kNone:
      return false;
    case NanKind::kIeee:
      return e == LowMask(t.exp_bits) && m != 0;
    case NanKind::kAllOnes:
      return e == LowMask(t.exp_bits) && m == LowMask(t.man_bits);
  }
  return false;
}

// Exponent of the smallest normal binade. Formats without subnormals (ue8m0)
// use exponent field 0 as a normal binade.
int MinNormalExp(const FormatTraits& t) {
  return t.has_subnormals ? 1 - t.bias : -t.bias;
}

Unpacked Unpack(const FormatTraits& t, uint64_t bits) {
  bits &= LowMask(t.bits);
  Unpacked u{};
  u.sign = t.has_sign && ((bits >> (t.bits - 1)) & 1);
  const uint64_t e = ExpField(t, bits);
  const uint64_t m = bits & LowMask(t.man_bits);
  if (IsNanCode(t, bits)) {
    u.kind = Unpacked::kNaN;
  } else if (t.has_inf && e == LowMask(t.exp_bits) && m == 0) {
    u.kind = Unpacked::kInf;
  } else if (e == 0 && t.has_subnormals) {
    u.kind = m == 0 ? Unpacked::kZero : Unpacked::kFinite;
    u.sig = m;
    u.exp = MinNormalExp(t) - t.man_bits;
  } else {
    // Normal: implicit leading one above the mantissa field.
    u.kind = Unpacked::kFinite;
    u.sig = m | (uint64_t{1} << t.man_bits);
    u.exp = static_cast<int>(e) - t.bias - t.man_bits;
  }
  return u;
}

uint64_t SignBit(const FormatTraits& t) {
  return t.has_sign ? uint64_t{1} << (t.bits - 1) : 0;
}

// Result of an overflow (|x| rounded beyond max finite, or an Inf input).
// satfinite clamps. nosat follows IEEE 754: the result is Inf when the
// rounding direction points away from zero (rn, rs, rp for +, rm for -) or the
// input is Inf; otherwise max finite. Formats without Inf give NaN instead.
uint64_t Overflow(const FormatTraits& t, bool neg, const EncodePolicy& p,
                  bool is_inf) {
  const uint64_t sign = neg ? SignBit(t) : 0;
  const uint64_t max_finite = t.max_code | sign;
  if (p.saturation == Saturation::kSatFinite) return max_finite;
  bool to_inf = is_inf;
  switch (p.rounding) {
    case Rounding::kRN:
    case Rounding::kRS:
      to_inf = true;
      break;
    case Rounding::kRZ:
      break;
    case Rounding::kRM:
      to_inf |= neg;
      break;
    case Rounding::kRP:
      to_inf |= !neg;
      break;
  }
  if (!to_inf) return max_finite;
  if (t.has_inf) return (LowMask(t.exp_bits) << t.man_bits) | sign;
  if (t.nan != NanKind::kNone) return t.canonical_nan | sign;
  return max_finite;  // Unreachable: nosat is rejected for fp4/fp6.
}

// The one rounding helper. Rounds |x| = u.sig * 2^u.exp (finite, non-zero)
// to the grid of format t and returns the code (sign included).
//
//   sig:  1xxxxxxxxxxxxxxxxxxxxxxx   (source significand, p+1 bits)
//         |<- kept (man+1) ->|<-s->|  s = discarded bits below the ulp
//
// The ulp of the destination is 2^q with q = max(floor(log2|x|), emin) - man;
// below emin the grid is the subnormal grid, so subnormals fall out of the
// same code path.
uint64_t RoundFinite(const FormatTraits& t, const Unpacked& u, bool neg,
                     const EncodePolicy& p, uint32_t rbits) {
  const uint64_t sign = neg ? SignBit(t) : 0;
  const int top_bit = 63 - __builtin_clzll(u.sig);
  const int e_x = top_bit + u.exp;  // floor(log2 |x|)
  const int emin = MinNormalExp(t);
  if (!t.has_subnormals && e_x < emin) {
    // No zero and no subnormals (ue8m0): tiny values clamp to the smallest
    // code in every rounding mode (docs/semantics.md: "0 and tiny values give 0x00").
    return 0;
  }
  int q = (e_x > emin ? e_x : emin) - t.man_bits;
  const int s = q - u.exp;  // Number of discarded bits.
  uint64_t r;
  bool up = false;
  bool tie = false;
  if (s <= 0) {
    r = u.sig << -s;  // Exact; r < 2^(man+1) by construction.
  } else {
    const uint64_t rem = s >= 64 ? u.sig : u.sig & LowMask(s);
    r = s >= 64 ? 0 : u.sig >> s;
    // half = 2^(s-1); for s > 54, rem < 2^53 <= half so rem < half.
    const bool above_half = s <= 54 && rem > (uint64_t{1} << (s - 1));
    tie = s <= 54 && rem == (uint64_t{1} << (s - 1));
    switch (p.rounding) {
      case Rounding::kRN:
        up = above_half || (tie && (r & 1));
        break;
      case Rounding::kRZ:
        break;
      case Rounding::kRM:
        up = neg && rem != 0;
        break;
      case Rounding::kRP:
        up = !neg && rem != 0;
        break;
      case Rounding::kRS:
        if (s <= 32) {
          up = ((rem + (rbits & LowMask(s))) >> s) != 0;
        } else if (s <= 85) {
          // Left-align the 32 random bits to the top of the discarded field.
          const unsigned __int128 sum =
              static_cast<unsigned __int128>(rem) +
              (static_cast<unsigned __int128>(rbits) << (s - 32));
          up = (sum >> s) != 0;
        }  // s > 85: rem < 2^53 cannot reach the carry with 32 random bits.
        break;
    }
    r += up;
  }
  if (r >> (t.man_bits + 1)) {  // Carried into the next binade.
    r >>= 1;
    ++q;
  }
  uint64_t e_field = 0;
  uint64_t m_field = r;
  if (r >> t.man_bits) {  // Normal (or the carry out of the subnormals).
    e_field = static_cast<uint64_t>(q + t.man_bits + t.bias);
    m_field = r & LowMask(t.man_bits);
  }
  const uint64_t max_e = t.max_code >> t.man_bits;
  if (e_field > max_e ||
      (e_field == max_e && m_field > (t.max_code & LowMask(t.man_bits)))) {
    // OverflowTie::kToMaxFinite: an exact tie between max finite and the next
    // (unrepresentable) value stays at max finite. Rounding up adds one to
    // the magnitude code, so the truncated value was max finite exactly when
    // the rounded one is max_code + 1.
    if (up && tie && p.rounding == Rounding::kRN &&
        p.overflow_tie == OverflowTie::kToMaxFinite &&
        ((e_field << t.man_bits) | m_field) == t.max_code + 1) {
      return t.max_code | sign;
    }
    return Overflow(t, neg, p, /*is_inf=*/false);
  }
  return (e_field << t.man_bits) | m_field | sign;
}

uint64_t Encode(const FormatTraits& t, const Unpacked& u, const EncodePolicy& p,
                uint32_t rbits) {
  if (u.kind == Unpacked::kNaN) return t.canonical_nan;
  if (p.relu && u.sign) return 0;
  const bool neg = u.sign && t.has_sign;  // Unsigned formats encode |x|.
  switch (u.kind) {
    case Unpacked::kZero:
      return neg ? SignBit(t) : 0;
    case Unpacked::kInf:
      return Overflow(t, neg, p, /*is_inf=*/true);
    default:
      return RoundFinite(t, u, neg, p, rbits);
  }
}

// floor(log2) of the largest finite value and of the smallest ulp.
int MaxExp(const FormatTraits& t) {
  return static_cast<int>(t.max_code >> t.man_bits) - t.bias;
}
int MinLsbExp(const FormatTraits& t) { return MinNormalExp(t) - t.man_bits; }

using internal::LoadLE;
using internal::StoreLE;

}  // namespace

absl::string_view RoundingName(Rounding r) {
  switch (r) {
    case Rounding::kRN: return "rn";
    case Rounding::kRZ: return "rz";
    case Rounding::kRM: return "rm";
    case Rounding::kRP: return "rp";
    case Rounding::kRS: return "rs";
  }
  return "?";
}

absl::string_view SaturationName(Saturation s) {
  return s == Saturation::kSatFinite ? "satfinite" : "nosat";
}

absl::StatusOr<Rounding> ParseRounding(absl::string_view name) {
  const std::string n = absl::AsciiStrToLower(name);
  for (Rounding r : {Rounding::kRN, Rounding::kRZ, Rounding::kRM, Rounding::kRP,
                     Rounding::kRS}) {
    if (n == RoundingName(r)) return r;
  }
  return absl::InvalidArgumentError(absl::StrFormat(
      "unknown rounding '%s'; expected one of: rn, rz, rm, rp, rs", name));
}

absl::StatusOr<Saturation> ParseSaturation(absl::string_view name) {
  const std::string n = absl::AsciiStrToLower(name);
  if (n == "satfinite") return Saturation::kSatFinite;
  if (n == "nosat") return Saturation::kNoSat;
  return absl::InvalidArgumentError(absl::StrFormat(
      "unknown saturation '%s'; expected one of: satfinite, nosat", name));
}

std::string PolicyToString(const EncodePolicy& p) {
  return absl::StrCat(RoundingName(p.rounding), ".", SaturationName(p.saturation),
                      p.relu ? ".relu" : "",
                      p.overflow_tie == OverflowTie::kToMaxFinite
                          ? ".overflow_tie_to_max"
                          : "");
}

bool IsExactConversion(Format from, Format to) {
  if (to == Format::kF64) return from == Format::kF64;
  const FormatTraits& a = Traits(from);
  const FormatTraits& b = Traits(to);
  return b.man_bits >= a.man_bits && MaxExp(b) >= MaxExp(a) &&
         MinLsbExp(b) <= MinLsbExp(a) && (!a.has_inf || b.has_inf) &&
         (a.nan == NanKind::kNone || b.nan != NanKind::kNone) &&
         (!a.has_sign || b.has_sign);
}

absl::Status ValidateConversion(Format from, Format to, const EncodePolicy& p) {
  if (static_cast<int>(from) >= kNumFormats || static_cast<int>(to) >= kNumFormats) {
    return absl::InvalidArgumentError("format enum value out of range");
  }
  if (to == Format::kF64) {
    return absl::InvalidArgumentError(
        "to=f64: f64 is accepted only as a source format");
  }
  if (IsExactConversion(from, to)) return absl::OkStatus();  // A decode.
  const FormatTraits& t = Traits(to);
  if (IsNarrow(from) && !IsNarrow(to)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "from=%s to=%s: %s values do not all fit %s (decode to f32 or bf16 "
        "instead)",
        Traits(from).name, t.name, Traits(from).name, t.name));
  }
  if (t.nan == NanKind::kNone && p.saturation == Saturation::kNoSat) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "saturation=nosat is not available for %s (no Inf/NaN codes; PTX "
        "requires .satfinite); use satfinite",
        t.name));
  }
  if (to == Format::kUE8M0 && p.rounding != Rounding::kRZ &&
      p.rounding != Rounding::kRP) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "rounding=%s is not available for ue8m0; expected rz or rp (PTX "
        "cvt.frnd3)",
        RoundingName(p.rounding)));
  }
  if (!t.has_sign && p.relu) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "relu does not apply to the unsigned format %s (it encodes |x|)",
        t.name));
  }
  if (p.overflow_tie == OverflowTie::kToMaxFinite &&
      p.rounding != Rounding::kRN) {
    return absl::InvalidArgumentError(
        "overflow_tie=to_max_finite is defined only with rounding=rn");
  }
  return absl::OkStatus();
}

namespace {

// The OR of n bytes: u64 words with four independent accumulators (about 16x
// a byte loop, which compilers leave scalar at -O2), then the tail.
uint8_t OrAllBytes(const uint8_t* p, size_t n) {
  uint64_t acc[4] = {0, 0, 0, 0};
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    for (int k = 0; k < 4; ++k) {
      uint64_t w;
      std::memcpy(&w, p + i + 8 * k, sizeof(w));
      acc[k] |= w;
    }
  }
  uint64_t all = acc[0] | acc[1] | acc[2] | acc[3];
  for (; i < n; ++i) all |= p[i];
  for (int shift = 32; shift >= 8; shift /= 2) all |= all >> shift;
  return static_cast<uint8_t>(all);
}

}  // namespace

absl::StatusOr<size_t> CheckConvertArrayArgs(Format from, Format to,
                                             const EncodePolicy& policy,
                                             absl::Span<const uint8_t> in,
                                             absl::Span<const uint8_t> out,
                                             absl::Span<const uint32_t> rbits) {
  if (absl::Status s = ValidateConversion(from, to, policy); !s.ok()) return s;
  const FormatTraits& a = Traits(from);
  const FormatTraits& b = Traits(to);
  if (in.size() % a.storage_bytes != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "input: %u bytes is not a multiple of the %s element size (%d bytes)",
        in.size(), a.name, a.storage_bytes));
  }
  const size_t n = in.size() / a.storage_bytes;
  if (out.size() != n * b.storage_bytes) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "output: expected %u bytes (%u %s elements), got %u", n * b.storage_bytes,
        n, b.name, out.size()));
  }
  const bool needs_rbits =
      policy.rounding == Rounding::kRS && !IsExactConversion(from, to);
  if ((needs_rbits || !rbits.empty()) && rbits.size() != n) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "rbits: expected %u random words (one per element%s), got %u", n,
        needs_rbits ? " for rounding=rs" : "", rbits.size()));
  }
  // Bits a code may use: fp4/fp6 sit in the low bits of their byte, and
  // ue4m3 requires its (sign) MSB to be zero.
  const int width = a.exp_bits + a.man_bits + (a.has_sign ? 1 : 0);
  if (IsNarrow(from) && width < 8) {
    // OR every byte first, eight at a time; look for the index only when
    // some byte has a bit above the code width.
    if ((OrAllBytes(in.data(), n) >> width) == 0) return n;
    for (size_t i = 0; i < n; ++i) {
      if (in[i] >> width) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "input[%u] = 0x%02X is not a %s code (expected one code per byte "
            "in bits [%d:0], upper bits zero)",
            i, in[i], a.name, width - 1));
      }
    }
  }
  return n;
}

namespace scalar {

uint64_t Convert(Format from, Format to, uint64_t bits, const EncodePolicy& policy,
                 uint32_t rbits) {
  const Unpacked u = Unpack(Traits(from), bits);
  if (IsExactConversion(from, to)) {
    // Decode: exact, so rounding and saturation cannot matter (Inf stays Inf).
    EncodePolicy exact;
    exact.saturation = Saturation::kNoSat;
    exact.relu = policy.relu;
    return Encode(Traits(to), u, exact, 0);
  }
  return Encode(Traits(to), u, policy, rbits);
}

double ToDouble(Format f, uint64_t bits) {
  if (f == Format::kF64) return F64FromBits(bits);
  const Unpacked u = Unpack(Traits(f), bits);
  double v = 0;
  switch (u.kind) {
    case Unpacked::kZero: v = 0; break;
    case Unpacked::kFinite: v = std::ldexp(static_cast<double>(u.sig), u.exp); break;
    case Unpacked::kInf: v = HUGE_VAL; break;
    case Unpacked::kNaN: return std::nan("");
  }
  return u.sign ? -v : v;
}

ValueClass Classify(Format f, uint64_t bits) {
  const FormatTraits& t = Traits(f);
  const Unpacked u = Unpack(t, bits);
  switch (u.kind) {
    case Unpacked::kZero: return ValueClass::kZero;
    case Unpacked::kInf: return ValueClass::kInf;
    case Unpacked::kNaN: return ValueClass::kNaN;
    default:
      return (t.has_subnormals && ExpField(t, bits) == 0) ? ValueClass::kSubnormal
                                                           : ValueClass::kNormal;
  }
}

absl::string_view ValueClassName(ValueClass c) {
  switch (c) {
    case ValueClass::kZero: return "zero";
    case ValueClass::kSubnormal: return "subnormal";
    case ValueClass::kNormal: return "normal";
    case ValueClass::kInf: return "inf";
    case ValueClass::kNaN: return "nan";
  }
  return "?";
}

uint32_t F32Bits(float x) {
  uint32_t b;
  std::memcpy(&b, &x, 4);
  return b;
}
float F32FromBits(uint32_t b) {
  float x;
  std::memcpy(&x, &b, 4);
  return x;
}
uint64_t F64Bits(double x) {
  uint64_t b;
  std::memcpy(&b, &x, 8);
  return b;
}
double F64FromBits(uint64_t b) {
  double x;
  std::memcpy(&x, &b, 8);
  return x;
}

uint32_t EncodeF32(float x, Format to, const EncodePolicy& policy, uint32_t rbits) {
  return static_cast<uint32_t>(Convert(Format::kF32, to, F32Bits(x), policy, rbits));
}

float DecodeToF32(Format from, uint32_t code) {
  return F32FromBits(
      static_cast<uint32_t>(Convert(from, Format::kF32, code, EncodePolicy())));
}

static absl::Status ConvertArrayInDefaultEnv(Format from, Format to,
                                             const EncodePolicy& policy,
                                             absl::Span<const uint8_t> in,
                                             absl::Span<uint8_t> out,
                                             absl::Span<const uint32_t> rbits) {
  absl::StatusOr<size_t> n = CheckConvertArrayArgs(from, to, policy, in, out, rbits);
  if (!n.ok()) return n.status();
  const int ib = Traits(from).storage_bytes;
  const int ob = Traits(to).storage_bytes;
  for (size_t i = 0; i < *n; ++i) {
    const uint64_t v = LoadLE(in.data() + i * ib, ib);
    StoreLE(out.data() + i * ob, ob,
                 Convert(from, to, v, policy, rbits.empty() ? 0 : rbits[i]));
  }
  return absl::OkStatus();
}

absl::Status ConvertArray(Format from, Format to, const EncodePolicy& policy,
                          absl::Span<const uint8_t> in, absl::Span<uint8_t> out,
                          absl::Span<const uint32_t> rbits) {
  return internal::InDefaultFpEnv([&] {
    return ConvertArrayInDefaultEnv(from, to, policy, in, out, rbits);
  });
}

}  // namespace scalar
}  // namespace mxpack
