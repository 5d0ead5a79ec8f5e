// Differential fuzzer of MX / NVFP4 block quantization: input bytes choose
// the format, scale mode, source format, element and scale layouts, shape,
// tensor scale and Highway target; the payload is the tensor. Every target
// must equal the scalar reference (status, elements, scales, tensor scale),
// and dequantization must agree between scalar and SIMD paths.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "fuzz/fuzz_input.h"
#include "mxpack/dispatch.h"
#include "mxpack/mx.h"
#include "mxpack/scalar.h"

namespace {

using namespace mxpack;  // NOLINT: a fuzzer entry point, not a header

[[noreturn]] void Die(const char* what, const std::string& impl, size_t i,
                      unsigned want, unsigned got) {
  std::fprintf(stderr,
               "mx_fuzz mismatch: %s impl=%s index=%zu expected=0x%02X got=0x%02X\n",
               what, impl.c_str(), i, want, got);
  std::abort();
}

void Same(const char* what, Impl impl, const std::vector<uint8_t>& want,
          const std::vector<uint8_t>& got) {
  if (want.size() != got.size()) Die(what, ImplName(impl), 0, 0, 0);
  for (size_t i = 0; i < want.size(); ++i) {
    if (want[i] != got[i]) Die(what, ImplName(impl), i, want[i], got[i]);
  }
}

using mxpack::fuzz::Reader;

constexpr ElementLayout kLayouts[] = {
    ElementLayout::kCodes, ElementLayout::kDense4, ElementLayout::kDense6,
    ElementLayout::kB4x16P64, ElementLayout::kB6x16P32};

constexpr Format kSources[] = {Format::kF32, Format::kBF16, Format::kF16};
constexpr Format kDestinations[] = {Format::kF32, Format::kBF16, Format::kF16,
                                    Format::kF64};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Reader r{data, size};
  const MxFormat format = static_cast<MxFormat>(r.Byte() % 6);
  MxOptions o;
  o.scale_mode = static_cast<ScaleMode>(r.Byte() % 4);
  const Format from = kSources[r.Byte() % 3];
  // Mostly legal layouts, sometimes an illegal one (both paths must refuse).
  const uint8_t lb = r.Byte();
  o.layout = kLayouts[lb % 5];
  o.scale_layout = (lb & 0x80) ? ScaleLayout::kTcgen05 : ScaleLayout::kLinear;
  const size_t rows = 1 + r.Byte() % 140;
  const size_t cols = 1 + (static_cast<size_t>(r.Byte()) << 2 | (r.Byte() & 3)) % 300;
  const uint8_t ts = r.Byte();
  if (format == MxFormat::kNvfp4 && (ts & 1)) {
    // A tensor scale from the input (sometimes invalid: 0, negative, NaN).
    uint32_t bits = static_cast<uint32_t>(ts) << 24 | r.Byte() << 16;
    float t;
    std::memcpy(&t, &bits, 4);
    o.tensor_scale = t;
  }
  const std::vector<int64_t> targets = AvailableTargets();
  const Impl impl{targets[r.Byte() % targets.size()]};
  // The tensor: the remaining bytes, repeated (an empty payload is zeros);
  // occasionally one byte short so that the size check fires.
  const size_t sb = static_cast<size_t>(Traits(from).storage_bytes);
  size_t n = rows * cols * sb;
  if ((lb & 0x40) && (lb & 0x20)) --n;
  std::vector<uint8_t> in(n, 0);
  for (size_t i = 0; i < n && r.n; ++i) in[i] = r.p[i % r.n];

  const absl::StatusOr<MxTensor> want =
      QuantizeMx(format, from, in, rows, cols, o, Impl{Impl::kScalar});
  const absl::StatusOr<MxTensor> got = QuantizeMx(format, from, in, rows, cols, o, impl);
  if (want.ok() != got.ok() ||
      (!want.ok() && want.status().message() != got.status().message())) {
    std::fprintf(stderr, "mx_fuzz status mismatch: scalar='%s' %s='%s'\n",
                 want.status().ToString().c_str(), ImplName(impl).c_str(),
                 got.status().ToString().c_str());
    std::abort();
  }
  if (!want.ok()) return 0;
  if (scalar::F32Bits(want->tensor_scale) != scalar::F32Bits(got->tensor_scale)) {
    Die("tensor_scale", ImplName(impl), 0, 0, 0);
  }
  Same("scales", impl, want->scales, got->scales);
  Same("elements", impl, want->elements, got->elements);

  // Dequantization: scalar and SIMD agree bit for bit.
  const Format to = kDestinations[lb % 4];
  std::vector<uint8_t> a(rows * cols * static_cast<size_t>(Traits(to).storage_bytes));
  std::vector<uint8_t> b(a.size());
  const absl::Status sa = DequantizeMx(View(*want), to, absl::MakeSpan(a), Impl{Impl::kScalar});
  const absl::Status sbs = DequantizeMx(View(*want), to, absl::MakeSpan(b), impl);
  if (!sa.ok() || !sbs.ok()) {
    std::fprintf(stderr, "mx_fuzz dequantize failed: %s / %s\n", sa.ToString().c_str(),
                 sbs.ToString().c_str());
    std::abort();
  }
  Same("dequantized", impl, a, b);
  return 0;
}
