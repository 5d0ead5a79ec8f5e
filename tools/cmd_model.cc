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
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "mxpack/model.h"
#include "mxpack/mx.h"
#include "mxpack/safetensors.h"
#include "src/util/output_file.h"
#include "tools/cli.h"

// --layout is defined by tools/cmd_pack.cc (there: a packed layout; here:
// dense or tcgen05).
ABSL_DECLARE_FLAG(std::string, layout);

ABSL_FLAG(std::string, format, "",
          "MX format: mxfp8_e4m3, mxfp8_e5m2, mxfp6_e2m3, mxfp6_e3m2, mxfp4, nvfp4 "
          "(quantize-model: empty = the scheme's default)");
ABSL_FLAG(std::string, scheme, "",
          "quantize-model: export scheme: compressed-tensors (vLLM / transformers; "
          "the default), modelopt, gpt-oss, or mxpack (native records; the default "
          "when --layout or --scale-mode is given)");
ABSL_FLAG(std::string, scale_mode, "",
          "Scale mode: floor, rceil, ceil, even (empty: floor for MX formats, "
          "even for nvfp4; mxpack scheme only)");
ABSL_FLAG(std::string, include, "",
          "quantize-model: also quantize tensors whose name matches this "
          "ECMAScript regex (searched anywhere in the name)");
ABSL_FLAG(std::string, ignore, "",
          "quantize-model: never quantize tensors whose name matches this regex "
          "(wins over --include)");
ABSL_FLAG(bool, dry_run, false,
          "quantize-model: print the plan (tensors, shapes, outputs, bytes) and "
          "write nothing");
ABSL_FLAG(std::string, max_shard_size, "5GB",
          "quantize-model: largest output shard, bytes or with a unit "
          "(KB, MB, GB = 10^3.., KiB, MiB, GiB = 2^10..)");
ABSL_FLAG(int32_t, threads, 0, "Worker threads (0: all cores)");
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

void PrintReport(const CheckpointReport& r) {
  const std::string s =
      absl::GetFlag(FLAGS_json) ? CheckpointReportJson(r) : CheckpointReportText(r);
  std::fwrite(s.data(), 1, s.size(), stdout);
}

// "5GB", "100MiB", "12345" -> bytes.
absl::StatusOr<uint64_t> ParseSize(const std::string& text) {
  size_t i = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
  const std::string unit = text.substr(i);
  uint64_t mul = 0;
  const std::pair<const char*, uint64_t> units[] = {
      {"", 1},           {"B", 1},
      {"KB", 1000},      {"MB", 1000000},
      {"GB", 1000000000}, {"KiB", 1024},
      {"MiB", 1 << 20},  {"GiB", uint64_t{1} << 30}};
  for (const auto& [name, m] : units) {
    if (unit == name) mul = m;
  }
  if (i == 0 || i > 15 || mul == 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--max-shard-size: expected a number of bytes with an optional unit (B, KB, "
        "MB, GB, KiB, MiB, GiB), got '%s'",
        text));
  }
  const uint64_t n = std::stoull(text.substr(0, i)) * mul;
  if (n == 0) {
    return absl::InvalidArgumentError("--max-shard-size: expected more than 0 bytes");
  }
  return n;
}

int RunQuantizeModel(const std::vector<std::string>& args) {
  const char* cmd = "quantize-model";
  if (args.size() != 2) {
    return Fail(cmd, absl::InvalidArgumentError(absl::StrFormat(
                         "expected IN (file or model directory) and OUT, got %d "
                         "arguments",
                         args.size())));
  }
  CheckpointOptions o;
  if (!absl::GetFlag(FLAGS_scheme).empty()) o.scheme = absl::GetFlag(FLAGS_scheme);
  if (!absl::GetFlag(FLAGS_format).empty()) {
    absl::StatusOr<MxFormat> f = ParseMxFormat(absl::GetFlag(FLAGS_format));
    if (!f.ok()) return Fail(cmd, Prefixed("--format", f.status()));
    o.format = *f;
  }
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
  // --layout and --scale-mode are options of the mxpack scheme: without an
  // explicit --scheme they select it.
  const bool mxpack_flags = o.scale_mode.has_value() || !layout.empty();
  if (mxpack_flags && absl::GetFlag(FLAGS_scheme).empty()) o.scheme = "mxpack";
  if (o.scheme != "mxpack" && mxpack_flags) {
    return Fail(cmd, absl::InvalidArgumentError(absl::StrFormat(
                         "--scale-mode and --layout apply to --scheme=mxpack only; "
                         "scheme '%s' fixes its own",
                         o.scheme)));
  }
  absl::StatusOr<size_t> threads = ThreadsFromFlag();
  if (!threads.ok()) return Fail(cmd, threads.status());
  o.threads = *threads;
  absl::StatusOr<uint64_t> shard = ParseSize(absl::GetFlag(FLAGS_max_shard_size));
  if (!shard.ok()) return Fail(cmd, shard.status());
  o.max_shard_bytes = *shard;
  o.include = absl::GetFlag(FLAGS_include);
  o.ignore = absl::GetFlag(FLAGS_ignore);
  o.dry_run = absl::GetFlag(FLAGS_dry_run);
  CheckpointReport report;
  {
    ProgressBar bar("quantize");
    o.progress = bar.Callback();
    absl::StatusOr<CheckpointReport> r = QuantizeCheckpoint(args[0], args[1], o);
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
                         "expected IN (file or model directory) and OUT, got %d "
                         "arguments",
                         args.size())));
  }
  DequantizeModelOptions o;
  if (!absl::GetFlag(FLAGS_to).empty()) {
    absl::StatusOr<Format> to = ParseFormat(absl::GetFlag(FLAGS_to));
    if (!to.ok()) return Fail(cmd, Prefixed("--to", to.status()));
    o.to = *to;
  }
  absl::StatusOr<size_t> threads = ThreadsFromFlag();
  if (!threads.ok()) return Fail(cmd, threads.status());
  o.threads = *threads;
  absl::StatusOr<CheckpointReport> r = DequantizeCheckpoint(args[0], args[1], o);
  if (!r.ok()) return Fail(cmd, r.status());
  PrintReport(*r);
  return 0;
}

int RunInspect(const std::vector<std::string>& args) {
  const char* cmd = "inspect";
  if (args.size() != 1) {
    return Fail(cmd, absl::InvalidArgumentError(absl::StrFormat(
                         "expected exactly one FILE.safetensors or model directory, "
                         "got %d arguments",
                         args.size())));
  }
  absl::StatusOr<std::string> s = absl::GetFlag(FLAGS_json)
                                      ? InspectCheckpointJson(args[0])
                                      : InspectCheckpointText(args[0]);
  if (!s.ok()) return Fail(cmd, s.status());
  std::fwrite(s->data(), 1, s->size(), stdout);
  return 0;
}

const bool kQuantizeModel = RegisterCommand(
    {"quantize-model",
     "quantize a Hugging Face checkpoint for vLLM / transformers (NVFP4, MXFP4, MXFP8)",
     "quantize-model IN OUT [--scheme=compressed-tensors|modelopt|gpt-oss|mxpack] "
     "[--format=FMT]\n"
     "       [--include=REGEX] [--ignore=REGEX] [--dry-run] [--max-shard-size=5GB]\n"
     "       [--layout=dense|tcgen05] [--scale-mode=MODE] [--threads=N] [--json] "
     "[--quiet]\n\n"
     "IN is a .safetensors file or a model directory (model.safetensors, or the "
     "shards of\nmodel.safetensors.index.json; read one shard at a time). OUT is a "
     "directory mirroring\nit: shards of at most --max-shard-size with their index, "
     "every other file copied and\nconfig.json given the scheme's "
     "quantization_config (OUT ending in .safetensors: one\nfile). OUT is written "
     "under a temporary name and renamed at the end; a failed run\nleaves nothing.\n\n"
     "Selected by default: linear-layer weights (2-D *.weight, 3-D fused experts "
     "[E, out, in]);\nnot embeddings, lm_head, norms, biases, MoE routers/gates. "
     "--include adds, --ignore\nremoves (and wins). The report gives each tensor's "
     "reason; selecting nothing is an error.\n\n"
     "--scheme (docs/checkpoints.md):\n"
     "  compressed-tensors  nvfp4 (default): X.weight_packed, X.weight_scale "
     "(F8_E4M3 / 16),\n"
     "                      X.weight_global_scale; mxfp4: weight_packed + U8 "
     "weight_scale / 32;\n"
     "                      mxfp8_e4m3: F8_E4M3 X.weight + U8 weight_scale / 32. "
     "Loads in vLLM as is.\n"
     "  modelopt            nvfp4 (default): X.weight (packed), X.weight_scale, "
     "X.weight_scale_2;\n"
     "                      mxfp8_e4m3: F8_E4M3 X.weight + U8 X.weight_scale / 32; "
     "both with\n"
     "                      hf_quant_config.json (ModelOpt's unified HF checkpoint)\n"
     "  gpt-oss             mxfp4 of the MoE experts only: *_blocks [E, out, in/32, 16] "
     "and\n"
     "                      *_scales (quant_method mxfp4, as OpenAI's gpt-oss "
     "checkpoints)\n"
     "  mxpack              every MX format and nvfp4 as NAME.qdata/.scales(/.tscale) "
     "with\n"
     "                      mxpack.tensor.NAME records; --layout dense (default) or "
     "tcgen05:\n"
     "    dense    elements codes (fp8) / dense6 (fp6) / dense4 (fp4), linear scales "
     "[rows, blocks]\n"
     "    tcgen05  elements codes (fp8) / b6x16_p32 (fp6) / b4x16_p64 (fp4), scales "
     "in the tcgen05\n"
     "             block-scaled MMA tile layout [row_tiles, k_tiles, 512]",
     {"format", "scheme", "layout", "scale_mode", "include", "ignore", "dry_run",
      "max_shard_size", "threads", "json", "quiet"},
     RunQuantizeModel});

const bool kDequantizeModel = RegisterCommand(
    {"dequantize-model", "turn a quantized checkpoint (any scheme) back into f32/bf16/f16",
     "dequantize-model IN OUT [--to=f32|bf16|f16] [--threads=N] [--json]\n\n"
     "IN is a file or a model directory written by quantize-model (any scheme) or "
     "another\ncompressed-tensors exporter. Every quantized tensor becomes its plain "
     "tensor again (mxpack\nrecords: the original dtype; compressed-tensors: bf16, "
     "as its decompressor does; --to\noverrides), the other tensors and files are "
     "copied and quantization_config is dropped\nfrom config.json.",
     {"to", "threads", "json", "quiet"},
     RunDequantizeModel});

const bool kInspect = RegisterCommand(
    {"inspect", "list a checkpoint's tensors and quantized tensors of every scheme",
     "inspect FILE.safetensors|DIR [--json]\n\n"
     "Validates every shard and lists every tensor (name, dtype, shape, bytes), the "
     "metadata,\nevery mxpack quantization record, every compressed-tensors "
     "quantized tensor and the\nconfig.json quantization_config.",
     {"json"},
     RunInspect});

}  // namespace
}  // namespace mxpack::cli
