// `mxpack demo`: quantizes a built-in, deterministic weight-like tensor to
// every narrow format and prints error statistics per format.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "mxpack/format.h"
#include "mxpack/scalar.h"
#include "tools/cli.h"

namespace mxpack::cli {
namespace {

// 4096 weights: a Gaussian body (Box-Muller over RandomBits) scaled per
// 256-element "row", plus a few large outliers, as in real checkpoints.
std::vector<float> BuiltinTensor() {
  std::vector<float> w(4096);
  for (size_t i = 0; i < w.size(); i += 2) {
    const double u1 = (RandomBits(7, i) + 1.0) / 4294967296.0;
    const double u2 = RandomBits(7, i + 1) / 4294967296.0;
    const double r = std::sqrt(-2.0 * std::log(u1));
    const double row_scale = 0.02 * (1.0 + static_cast<double>((i / 256) % 4));
    w[i] = static_cast<float>(row_scale * r * std::cos(6.283185307179586 * u2));
    w[i + 1] = static_cast<float>(row_scale * r * std::sin(6.283185307179586 * u2));
  }
  for (size_t i = 97; i < w.size(); i += 811) w[i] *= 40.0f;  // Outliers.
  return w;
}

int RunDemo(const std::vector<std::string>& args) {
  if (!args.empty()) {
    return Fail("demo", absl::InvalidArgumentError(
                            absl::StrFormat("unexpected argument '%s'", args[0])));
  }
  const std::vector<float> w = BuiltinTensor();
  double amax = 0, energy = 0;
  for (float x : w) {
    amax = std::fmax(amax, std::fabs(x));
    energy += static_cast<double>(x) * x;
  }
  std::printf("built-in tensor: %zu f32 weights, amax %.6g, rms %.6g\n", w.size(),
              amax, std::sqrt(energy / static_cast<double>(w.size())));
  std::printf("per-tensor scale: x / amax * max_finite(format), then encode rn.satfinite "
              "(ue8m0: rp)\n\n");
  std::printf("%-6s %10s %12s %12s %10s %6s %6s\n", "format", "max_finite",
              "max_abs_err", "rmse", "sqnr_dB", "zeros", "at_max");
  for (Format f : {Format::kE2M1, Format::kE2M3, Format::kE3M2, Format::kE4M3,
                   Format::kE5M2, Format::kUE4M3, Format::kUE8M0, Format::kBF16,
                   Format::kF16}) {
    const FormatTraits& t = Traits(f);
    EncodePolicy p;
    if (f == Format::kUE8M0) p.rounding = Rounding::kRP;
    const double max_finite = scalar::ToDouble(f, t.max_code);
    const double scale = max_finite / amax;
    double max_err = 0, err_energy = 0;
    size_t zeros = 0, at_max = 0;
    for (float x : w) {
      // Unsigned formats hold |x|: compare against |x| there.
      const double ref = t.has_sign ? x : std::fabs(x);
      const float scaled = static_cast<float>(ref * scale);
      const uint64_t code = scalar::Convert(Format::kF32, f, scalar::F32Bits(scaled), p);
      const double back = scalar::ToDouble(f, code) / scale;
      const double err = back - ref;
      max_err = std::fmax(max_err, std::fabs(err));
      err_energy += err * err;
      zeros += (back == 0 && ref != 0);
      at_max += ((code & t.max_code) == t.max_code);  // |code| == max finite
    }
    const double rmse = std::sqrt(err_energy / static_cast<double>(w.size()));
    const double sqnr = 10.0 * std::log10(energy / std::fmax(err_energy, 1e-300));
    std::printf("%-6s %10.6g %12.6g %12.6g %10.2f %6zu %6zu\n", t.name, max_finite,
                max_err, rmse, sqnr, zeros, at_max);
  }
  return 0;
}

const bool kDemo = RegisterCommand(
    {"demo", "quantize a built-in weight tensor to every format and report errors",
     "demo\n\nQuantizes a built-in deterministic 4096-element weight tensor "
     "(Gaussian rows\nwith outliers) to every format with a per-tensor scale and "
     "prints max error,\nRMSE, SQNR, underflows to zero and codes at max finite magnitude.",
     {},
     RunDemo});

}  // namespace
}  // namespace mxpack::cli
