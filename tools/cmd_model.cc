// `mxpack quantize-model | dequantize-model | inspect`: whole safetensors
// checkpoints through the MX/NVFP4 quantizer (include/mxpack/model.h).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "mxpack/model.h"
#include "mxpack/mx.h"
#include "mxpack/safetensors.h"
#include "tools/cli.h"

// --layout is defined by tools/cmd_pack.cc (there: a packed layout; here:
// dense or tcgen05).
ABSL_DECLARE_FLAG(std::string, layout);

ABSL_FLAG(std::string, format, "",
          "MX format: mxfp8_e4m3, mxfp8_e5m2, mxfp6_e2m3, mxfp6_e3m2, mxfp4, nvfp4");
ABSL_FLAG(std::string, scale_mode, "",
          "Scale mode: floor, rceil, ceil, even (empty: floor for MX formats, "
          "even for nvfp4)");
ABSL_FLAG(std::string, include, "",
          "quantize-model: quantize only tensors whose name matches this "
          "ECMAScript regex (searched anywhere in the name; empty: all)");
ABSL_FLAG(std::string, exclude, "",
          "quantize-model: never quantize tensors whose name matches this regex");
ABSL_FLAG(int32_t, threads, 0, "Worker threads (0: all cores)");
ABSL_FLAG(bool, error_stats, false,
          "quantize-model: compute per-tensor error statistics (SQNR, max and "
          "RMS error, saturated count) against an f64 dequantization; much "
          "slower than quantizing");
ABSL_FLAG(bool, json, false, "Print the report as JSON instead of a table");
ABSL_FLAG(bool, quiet, false, "No progress bar on stderr");

namespace mxpack::cli {
namespace {

absl::Status Prefixed(absl::string_view flag, const absl::Status& s) {
  return absl::InvalidArgumentError(absl::StrCat(flag, ": ", s.message()));
}

absl::StatusOr<size_t> ThreadsFromFlag() {
  const int32_t t = absl::GetFlag(FLAGS_threads);
  if (t < 0 || t > 1024) {
    return absl::InvalidArgumentError(
        absl::StrFormat("--threads: expected 0 (all cores) .. 1024, got %d", t));
  }
  return static_cast<size_t>(t);
}

// A one-line progress bar on stderr, redrawn at most 10 times a second; only
// when stderr is a terminal and --quiet is not given.
class ProgressBar {
 public:
  explicit ProgressBar(const char* what)
      : what_(what), on_(!absl::GetFlag(FLAGS_quiet) && isatty(STDERR_FILENO)) {}
  ~ProgressBar() {
    if (drawn_) std::fprintf(stderr, "\n");
  }
  std::function<void(const ModelProgress&)> Callback() {
    if (!on_) return nullptr;
    return [this](const ModelProgress& p) { Draw(p); };
  }

 private:
  void Draw(const ModelProgress& p) {
    const bool last = p.bytes_done == p.bytes_total;
    if (!last && drawn_ && p.seconds - last_ < 0.1) return;
    last_ = p.seconds;
    drawn_ = true;
    const double frac = p.bytes_total == 0 ? 1.0
                                           : static_cast<double>(p.bytes_done) /
                                                 static_cast<double>(p.bytes_total);
    const int width = 30;
    const int fill = static_cast<int>(frac * width);
    const double mib = static_cast<double>(p.bytes_done) / 1048576.0;
    std::fprintf(stderr, "\r%s [%s%s] %3d%%  tensors %zu/%zu  %.1f/%.1f MiB  %.1f MiB/s ",
                 what_, std::string(static_cast<size_t>(fill), '#').c_str(),
                 std::string(static_cast<size_t>(width - fill), '.').c_str(),
                 static_cast<int>(frac * 100), p.tensors_done, p.tensors_total, mib,
                 static_cast<double>(p.bytes_total) / 1048576.0,
                 p.seconds > 0 ? mib / p.seconds : 0.0);
    std::fflush(stderr);
  }
  const char* what_;
  bool on_;
  bool drawn_ = false;
  double last_ = 0;
};

void PrintReport(const ModelReport& r) {
  const std::string s = absl::GetFlag(FLAGS_json) ? ModelReportJson(r) : ModelReportText(r);
  std::fwrite(s.data(), 1, s.size(), stdout);
}

int RunQuantizeModel(const std::vector<std::string>& args) {
  const char* cmd = "quantize-model";
  if (args.size() != 2) {
    return Fail(cmd, absl::InvalidArgumentError(absl::StrFormat(
                         "expected IN.safetensors OUT.safetensors, got %d arguments",
                         args.size())));
  }
  if (absl::Status s = CheckOutputs({args[1]}, {args[0]}); !s.ok()) return Fail(cmd, s);
  QuantizeModelOptions o;
  if (absl::GetFlag(FLAGS_format).empty()) {
    return Fail(cmd, absl::InvalidArgumentError(
                         "--format is required: mxfp8_e4m3, mxfp8_e5m2, mxfp6_e2m3, "
                         "mxfp6_e3m2, mxfp4 or nvfp4"));
  }
  absl::StatusOr<MxFormat> f = ParseMxFormat(absl::GetFlag(FLAGS_format));
  if (!f.ok()) return Fail(cmd, Prefixed("--format", f.status()));
  o.format = *f;
  if (!absl::GetFlag(FLAGS_scale_mode).empty()) {
    absl::StatusOr<ScaleMode> m = ParseScaleMode(absl::GetFlag(FLAGS_scale_mode));
    if (!m.ok()) return Fail(cmd, Prefixed("--scale-mode", m.status()));
    o.scale_mode = *m;
  }
  const std::string layout = absl::GetFlag(FLAGS_layout);
  if (!layout.empty()) {
    absl::StatusOr<ModelLayout> l = ParseModelLayout(layout);
    if (!l.ok()) return Fail(cmd, l.status());
    o.layout = *l;
  }
  absl::StatusOr<size_t> threads = ThreadsFromFlag();
  if (!threads.ok()) return Fail(cmd, threads.status());
  o.threads = *threads;
  o.include = absl::GetFlag(FLAGS_include);
  o.exclude = absl::GetFlag(FLAGS_exclude);
  o.error_stats = absl::GetFlag(FLAGS_error_stats);
  ModelReport report;
  {
    ProgressBar bar("quantize");
    o.progress = bar.Callback();
    absl::StatusOr<ModelReport> r = QuantizeModelFile(args[0], args[1], o);
    if (!r.ok()) return Fail(cmd, r.status());
    report = *std::move(r);
  }
  PrintReport(report);
  return 0;
}

int RunDequantizeModel(const std::vector<std::string>& args) {
  const char* cmd = "dequantize-model";
  if (args.size() != 2) {
    return Fail(cmd, absl::InvalidArgumentError(absl::StrFormat(
                         "expected IN.safetensors OUT.safetensors, got %d arguments",
                         args.size())));
  }
  if (absl::Status s = CheckOutputs({args[1]}, {args[0]}); !s.ok()) return Fail(cmd, s);
  DequantizeModelOptions o;
  if (!absl::GetFlag(FLAGS_to).empty()) {
    absl::StatusOr<Format> to = ParseFormat(absl::GetFlag(FLAGS_to));
    if (!to.ok()) return Fail(cmd, Prefixed("--to", to.status()));
    o.to = *to;
  }
  absl::StatusOr<size_t> threads = ThreadsFromFlag();
  if (!threads.ok()) return Fail(cmd, threads.status());
  o.threads = *threads;
  ModelReport report;
  {
    ProgressBar bar("dequantize");
    o.progress = bar.Callback();
    absl::StatusOr<ModelReport> r = DequantizeModelFile(args[0], args[1], o);
    if (!r.ok()) return Fail(cmd, r.status());
    report = *std::move(r);
  }
  PrintReport(report);
  return 0;
}

int RunInspect(const std::vector<std::string>& args) {
  const char* cmd = "inspect";
  if (args.size() != 1) {
    return Fail(cmd, absl::InvalidArgumentError(absl::StrFormat(
                         "expected exactly one FILE.safetensors, got %d arguments",
                         args.size())));
  }
  absl::StatusOr<std::unique_ptr<MappedFile>> file = MappedFile::Open(args[0]);
  if (!file.ok()) return Fail(cmd, file.status());
  absl::StatusOr<SafetensorsView> view = ParseSafetensors((*file)->bytes());
  if (!view.ok()) {
    return Fail(cmd, absl::Status(view.status().code(),
                                  absl::StrCat(args[0], ": ", view.status().message())));
  }
  absl::StatusOr<std::string> s =
      absl::GetFlag(FLAGS_json) ? InspectJson(*view) : InspectText(*view);
  if (!s.ok()) {
    return Fail(cmd, absl::Status(s.status().code(),
                                  absl::StrCat(args[0], ": ", s.status().message())));
  }
  if (!absl::GetFlag(FLAGS_json)) std::printf("%s: ", args[0].c_str());
  std::fwrite(s->data(), 1, s->size(), stdout);
  return 0;
}

const bool kQuantizeModel = RegisterCommand(
    {"quantize-model", "quantize a safetensors checkpoint to MXFP8/6/4 or NVFP4",
     "quantize-model IN.safetensors OUT.safetensors --format=FMT "
     "[--layout=dense|tcgen05]\n"
     "       [--scale-mode=floor|rceil|ceil|even] [--include=REGEX] "
     "[--exclude=REGEX]\n       [--threads=N] [--error-stats] [--json] [--quiet]\n\n"
     "Quantizes every 2-D F32/F16/BF16 tensor whose name matches --include and "
     "not --exclude\nalong its rows ([rows, cols] = [out features, in features]; "
     "blocks of 32, 16 for nvfp4);\nother tensors are copied unchanged. Tensor "
     "NAME becomes NAME.qdata (elements),\nNAME.scales (U8 scale bytes) and, for "
     "nvfp4, NAME.tscale (F32 [1]); __metadata__\n\"mxpack.tensor.NAME\" records "
     "format, layouts, scale mode, original shape and dtype.\n\n"
     "--layout (default tcgen05):\n"
     "  dense    elements codes (fp8) / dense6 (fp6) / dense4 (fp4), linear scales "
     "[rows, blocks]\n"
     "  tcgen05  elements codes (fp8) / b6x16_p32 (fp6) / b4x16_p64 (fp4), scales "
     "in the tcgen05\n"
     "           block-scaled MMA tile layout [row_tiles, k_tiles, 512] (what TMA + "
     "tcgen05.cp load)\n\n"
     "Prints per-tensor sizes and throughput, with --error-stats also SQNR, max "
     "abs error,\nRMSE and saturated count per tensor and in total (--json: as JSON).\nThe "
     "output is identical for every --threads; it is written to a temporary file "
     "next to OUT\nand renamed, so errors leave no output file.",
     {"format", "layout", "scale_mode", "include", "exclude", "threads", "error_stats",
      "json", "quiet"},
     RunQuantizeModel});

const bool kDequantizeModel = RegisterCommand(
    {"dequantize-model", "rebuild a quantize-model checkpoint in f32/bf16/f16",
     "dequantize-model IN.safetensors OUT.safetensors [--to=f32|bf16|f16] "
     "[--threads=N] [--json] [--quiet]\n\n"
     "Replaces every NAME.qdata/.scales(/.tscale) group recorded in the "
     "metadata by NAME in its\noriginal dtype (or --to), dequantized exactly as "
     "mxpack::DequantizeMx does; copies the\nother tensors and drops the mxpack.* "
     "metadata keys.",
     {"to", "threads", "json", "quiet"},
     RunDequantizeModel});

const bool kInspect = RegisterCommand(
    {"inspect", "list a safetensors file's tensors and quantization metadata",
     "inspect FILE.safetensors [--json]\n\n"
     "Validates the file and lists every tensor (name, dtype, shape, bytes), the "
     "metadata and\nevery mxpack quantization record (format, layouts, scale "
     "mode, original shape).",
     {"json"},
     RunInspect});

}  // namespace
}  // namespace mxpack::cli
