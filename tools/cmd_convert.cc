// `mxpack table` and `mxpack convert`: the scalar reference on the command line.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "mxpack/convert.h"
#include "mxpack/dispatch.h"
#include "mxpack/format.h"
#include "mxpack/scalar.h"
#include "tools/cli.h"

ABSL_FLAG(std::string, impl, "best",
          "Implementation: best (fastest SIMD target), scalar (the reference) "
          "or a Highway target name (avx3, avx2, sse4, ssse3, ...)");

namespace mxpack::cli {
namespace {

// Exact decimal expansion of a finite double (glibc prints exact digits when
// asked for enough of them); trailing zeros are trimmed.
std::string ExactDecimal(double v) {
  int exp = 0;
  std::frexp(v, &exp);
  // A double's lowest set bit is >= 2^(exp-53): that many fraction digits
  // suffice for an exact expansion.
  const int digits = exp - 53 < 0 ? 53 - exp : 0;
  std::string s = absl::StrFormat("%.*f", digits, v);
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  return s;
}

std::string BitFields(const FormatTraits& t, uint32_t code) {
  std::string s;
  for (int b = t.bits - 1; b >= 0; --b) {
    s += ((code >> b) & 1) ? '1' : '0';
    if ((t.has_sign && b == t.bits - 1) || (b == t.man_bits && t.man_bits > 0)) {
      s += '.';
    }
  }
  return s;
}

int RunTable(const std::vector<std::string>& args) {
  if (args.size() != 1) {
    return Fail("table", absl::InvalidArgumentError(absl::StrFormat(
                             "expected exactly one FORMAT argument, got %d",
                             args.size())));
  }
  absl::StatusOr<Format> f = ParseFormat(args[0]);
  if (!f.ok()) return Fail("table", f.status());
  if (!IsNarrow(*f)) {
    return Fail("table", absl::InvalidArgumentError(absl::StrFormat(
                             "FORMAT=%s: expected a narrow format (e2m1, e2m3, "
                             "e3m2, e4m3, e5m2, ue8m0, ue4m3)",
                             args[0])));
  }
  const FormatTraits& t = Traits(*f);
  std::printf("# %s: %d bits, %s%d exponent, %d mantissa, bias %d\n", t.name,
              t.bits, t.has_sign ? "sign, " : "", t.exp_bits, t.man_bits, t.bias);
  std::printf("# code  bits%*s  class      value\n", t.bits, "");
  for (uint32_t c = 0; c < (1u << t.bits); ++c) {
    const scalar::ValueClass cls = scalar::Classify(*f, c);
    const double v = scalar::ToDouble(*f, c);
    std::string value;
    if (cls == scalar::ValueClass::kNaN) {
      value = "nan";
    } else if (cls == scalar::ValueClass::kInf) {
      value = v < 0 ? "-inf" : "inf";
    } else {
      value = (std::signbit(v) && v == 0) ? "-0" : ExactDecimal(v);
    }
    std::printf("0x%02X  %-*s  %-9s  %s\n", c, t.bits + 2,
                BitFields(t, c).c_str(),
                std::string(scalar::ValueClassName(cls)).c_str(), value.c_str());
  }
  return 0;
}

int RunConvert(const std::vector<std::string>& args) {
  if (!args.empty()) {
    return Fail("convert", absl::InvalidArgumentError(absl::StrFormat(
                               "unexpected argument '%s' (use --in/--out)", args[0])));
  }
  absl::StatusOr<Format> from = ParseFormat(absl::GetFlag(FLAGS_from));
  if (!from.ok()) return Fail("convert", absl::InvalidArgumentError(absl::StrCat("--from: ", from.status().message())));
  absl::StatusOr<Format> to = ParseFormat(absl::GetFlag(FLAGS_to));
  if (!to.ok()) return Fail("convert", absl::InvalidArgumentError(absl::StrCat("--to: ", to.status().message())));
  absl::StatusOr<EncodePolicy> policy = PolicyFromFlags();
  if (!policy.ok()) return Fail("convert", policy.status());
  absl::StatusOr<Impl> impl = ParseImpl(absl::GetFlag(FLAGS_impl));
  if (!impl.ok()) {
    return Fail("convert", absl::InvalidArgumentError(
                               absl::StrCat("--impl: ", impl.status().message())));
  }
  if (absl::Status s = ValidateConversion(*from, *to, *policy); !s.ok()) {
    return Fail("convert", s);
  }
  if (absl::Status s = CheckOutputs({absl::GetFlag(FLAGS_out)}, {absl::GetFlag(FLAGS_in)});
      !s.ok()) {
    return Fail("convert", s);
  }
  absl::StatusOr<std::string> in = ReadInput(absl::GetFlag(FLAGS_in));
  if (!in.ok()) return Fail("convert", in.status());
  const int ib = Traits(*from).storage_bytes;
  const int ob = Traits(*to).storage_bytes;
  // A size that is not a whole number of elements is reported by
  // ConvertArray's argument check, before anything is written.
  const size_t n = in->size() / ib;
  std::vector<uint32_t> rbits;
  if (policy->rounding == Rounding::kRS && !IsExactConversion(*from, *to)) {
    rbits.resize(n);
    const uint64_t seed = absl::GetFlag(FLAGS_seed);
    for (size_t i = 0; i < n; ++i) rbits[i] = RandomBits(seed, i);
  }
  std::string out(n * ob, '\0');
  const absl::Span<const uint8_t> in_span(
      reinterpret_cast<const uint8_t*>(in->data()), in->size());
  const absl::Span<uint8_t> out_span(reinterpret_cast<uint8_t*>(out.data()),
                                     out.size());
  absl::Status s = ConvertArray(*from, *to, *policy, in_span, out_span, rbits, *impl);
  if (!s.ok()) return Fail("convert", s);
  s = WriteOutput(absl::GetFlag(FLAGS_out), out);
  if (!s.ok()) return Fail("convert", s);
  return 0;
}

const bool kTable = RegisterCommand(
    {"table", "list every code of a narrow format with its exact value",
     "table FORMAT\n\nPrints every code of FORMAT (e2m1, e2m3, e3m2, e4m3, e5m2, "
     "ue8m0, ue4m3): hex code, bits split\ninto sign.exponent.mantissa, class and "
     "exact decimal value.",
     {},
     RunTable});

const bool kConvert = RegisterCommand(
    {"convert", "convert raw little-endian element arrays between formats",
     "convert --from=FMT --to=FMT [--rounding=rn|rz|rm|rp|rs]\n"
     "               [--saturation=satfinite|nosat] [--relu] [--seed=N]\n"
     "               [--in=PATH] [--out=PATH] [--impl=best|scalar|TARGET]\n\n"
     "Raw little-endian data; narrow formats are one code per byte (low bits,\n"
     "high bits zero). Decodes (every source code exact in the destination)\n"
     "ignore rounding and saturation. Errors write nothing to the output.",
     {"from", "to", "rounding", "saturation", "relu", "seed", "in", "out", "impl"},
     RunConvert});

}  // namespace
}  // namespace mxpack::cli
