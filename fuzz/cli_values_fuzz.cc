// Fuzzer of the value parsers behind the CLI flags (format, rounding,
// saturation, layout, fp6 container, implementation, MX format, scale mode
// and layouts, model layout, multimem type/op/accumulation/model and target,
// safetensors dtype, tcgen05 swizzle and target, and the integer flags):
// arbitrary text never crashes a parser, and every accepted value round-trips
// through its name: Parse(Name(Parse(s))) == Parse(s). The case-insensitive
// parsers give the same answer for the upper- and lower-case text. Input:
// one byte choosing the parser, then the value.
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/flags/marshalling.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/string_view.h"
#include "fuzz/fuzz_input.h"
#include "mxpack/dispatch.h"
#include "mxpack/format.h"
#include "mxpack/model.h"
#include "mxpack/multimem.h"
#include "mxpack/mx.h"
#include "mxpack/pack.h"
#include "mxpack/safetensors.h"
#include "mxpack/scalar.h"
#include "mxpack/tcgen05.h"

namespace {

using mxpack::fuzz::Check;

constexpr uint8_t kNumParsers = 20;

// Parse(s) ok => Parse(Name(value)) gives the same value.
template <typename T, typename ParseFn, typename NameFn>
void RoundTrip(const char* what, const std::string& s, ParseFn parse,
               NameFn name) {
  absl::StatusOr<T> a = parse(s);
  if (!a.ok()) {
    Check(!a.status().message().empty(), what, s, "error without a message");
    return;
  }
  const std::string canonical(name(*a));
  absl::StatusOr<T> b = parse(canonical);
  Check(b.ok() && *b == *a, what, s, canonical);
}

// Case-insensitive parsers: upper and lower case agree with the text as given.
template <typename T, typename ParseFn>
void CaseInsensitive(const char* what, const std::string& s, ParseFn parse) {
  absl::StatusOr<T> a = parse(s);
  for (const std::string& v :
       {absl::AsciiStrToUpper(s), absl::AsciiStrToLower(s)}) {
    absl::StatusOr<T> b = parse(v);
    Check(a.ok() == b.ok() && (!a.ok() || *a == *b), what, s, v);
  }
}

template <typename T>
void IntegerFlag(const char* what, const std::string& s) {
  T v{};
  std::string error;
  if (!absl::ParseFlag(s, &v, &error)) return;
  const std::string canonical = absl::UnparseFlag(v);
  T w{};
  Check(absl::ParseFlag(canonical, &w, &error) && w == v, what, s, canonical);
}

// Parser `which` on the text `s`.
void OneParser(uint8_t which, const std::string& s) {
  using namespace mxpack;
  switch (which % kNumParsers) {
    case 0:
      RoundTrip<Format>("format", s, ParseFormat, FormatName);
      CaseInsensitive<Format>("format case", s, ParseFormat);
      break;
    case 1:
      RoundTrip<Rounding>("rounding", s, ParseRounding, RoundingName);
      break;
    case 2:
      RoundTrip<Saturation>("saturation", s, ParseSaturation, SaturationName);
      break;
    case 3:
      RoundTrip<Layout>("layout", s, ParseLayout, LayoutName);
      break;
    case 4:
      RoundTrip<Fp6Container>("fp6 container", s, ParseFp6Container,
                              Fp6ContainerName);
      break;
    case 5: {
      absl::StatusOr<Impl> a = ParseImpl(s);
      if (a.ok()) {
        const std::string canonical = ImplName(*a);
        absl::StatusOr<Impl> b = ParseImpl(canonical);
        Check(b.ok() && b->target == a->target, "impl", s, canonical);
      }
      for (const std::string& v :
           {absl::AsciiStrToUpper(s), absl::AsciiStrToLower(s)}) {
        absl::StatusOr<Impl> b = ParseImpl(v);
        Check(a.ok() == b.ok() && (!a.ok() || a->target == b->target),
              "impl case", s, v);
      }
      break;
    }
    case 6:
      RoundTrip<MxFormat>("mx format", s, ParseMxFormat, MxFormatName);
      break;
    case 7:
      RoundTrip<ScaleMode>("scale mode", s, ParseScaleMode, ScaleModeName);
      break;
    case 8:
      RoundTrip<ElementLayout>("element layout", s, ParseElementLayout,
                               ElementLayoutName);
      break;
    case 9:
      RoundTrip<ScaleLayout>("scale layout", s, ParseScaleLayout,
                             ScaleLayoutName);
      break;
    case 10:
      RoundTrip<ModelLayout>("model layout", s, ParseModelLayout,
                             ModelLayoutName);
      break;
    case 11:
      RoundTrip<ReduceOp>("reduce op", s, ParseReduceOp, ReduceOpName);
      break;
    case 12:
      RoundTrip<AccPrec>("acc prec", s, ParseAccPrec, AccPrecName);
      break;
    case 13:
      RoundTrip<ReduceModel>("reduce model", s, ParseReduceModel,
                             ReduceModelName);
      break;
    case 14:
      RoundTrip<MmType>("multimem type", s, ParseMmType, [](MmType t) {
        return absl::string_view(MmTypeTraits(t).name);
      });
      break;
    case 15:
      RoundTrip<StDtype>("safetensors dtype", s, ParseStDtype, StDtypeName);
      break;
    case 16:
      RoundTrip<tcgen05::Swizzle>("swizzle", s, tcgen05::ParseSwizzle,
                                  tcgen05::SwizzleName);
      break;
    case 17: {
      absl::StatusOr<PtxTarget> a = ParsePtxTarget(s);
      if (a.ok()) {
        const std::string canonical = a->ToString();
        absl::StatusOr<PtxTarget> b = ParsePtxTarget(canonical);
        Check(b.ok() && b->sm == a->sm && b->suffix == a->suffix, "ptx target",
              s, canonical);
      }
      break;
    }
    case 18: {
      absl::StatusOr<tcgen05::Target> a = tcgen05::ParseTarget(s);
      if (a.ok()) {
        const std::string canonical = tcgen05::TargetName(*a);
        absl::StatusOr<tcgen05::Target> b = tcgen05::ParseTarget(canonical);
        // TargetName names the SM only (no "@ptx" version).
        Check(b.ok() && b->sm == a->sm && b->suffix == a->suffix &&
                  b->ptx_version == 0,
              "tcgen05 target", s, canonical);
      }
      break;
    }
    case 19:
      IntegerFlag<int32_t>("int32 flag", s);
      IntegerFlag<int64_t>("int64 flag", s);
      IntegerFlag<uint64_t>("uint64 flag", s);
      break;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Byte 0 picks the parser, the rest is the flag value.
  if (size == 0 || size > 256) return 0;  // names are short
  OneParser(data[0],
            std::string(reinterpret_cast<const char*>(data) + 1, size - 1));
  return 0;
}
