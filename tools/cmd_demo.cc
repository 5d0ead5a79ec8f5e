// `mxpack demo`: the README's main job on a built-in checkpoint. Writes a
// deterministic transformer-like safetensors file to a temporary directory,
// quantizes it to MXFP4 and NVFP4 (tcgen05 layouts) with quantize-model,
// dequantizes with dequantize-model, verifies every file against the library
// and prints the error/size/speed report.
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <utility>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "mxpack/model.h"
#include "mxpack/mx.h"
#include "mxpack/safetensors.h"
#include "tools/cli.h"

namespace mxpack::cli {
namespace {

struct Run {
  MxFormat format;
  std::string qpath, dqpath, fastpath;  // fastpath: without error statistics
  ModelReport q, dq, fast;
};

std::string MiB(uint64_t n) {
  return absl::StrFormat("%.2f MiB", static_cast<double>(n) / 1048576.0);
}

// Tensor indices sorted by name with digit runs compared as numbers, so
// layer 2 comes before layer 10 (files store tensors by dtype, then name).
std::vector<size_t> NaturalOrder(const std::vector<TensorReport>& t) {
  auto key = [](const std::string& s) {
    std::vector<std::pair<std::string, uint64_t>> k;
    for (size_t i = 0; i < s.size();) {
      size_t j = i;
      while (j < s.size() && !absl::ascii_isdigit(static_cast<unsigned char>(s[j]))) ++j;
      uint64_t n = 0;
      size_t e = j;
      while (e < s.size() && absl::ascii_isdigit(static_cast<unsigned char>(s[e]))) {
        n = n * 10 + static_cast<uint64_t>(s[e] - '0');
        ++e;
      }
      k.emplace_back(s.substr(i, j - i), n);
      i = e;
    }
    return k;
  };
  std::vector<size_t> order(t.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return key(t[a].name) < key(t[b].name); });
  return order;
}

// Checks one quantized file and its dequantization against the library:
// QuantizeMx of each original tensor gives the file's qdata/scales/tscale
// bytes, DequantizeMx of those gives the dequantized tensor bytes, every other
// tensor is byte-identical, and every 2-D float tensor has a complete record.
absl::Status Verify(const SafetensorsView& orig, const Run& run, size_t& checks) {
  absl::StatusOr<std::unique_ptr<MappedFile>> qf = MappedFile::Open(run.qpath);
  if (!qf.ok()) return qf.status();
  absl::StatusOr<std::unique_ptr<MappedFile>> df = MappedFile::Open(run.dqpath);
  if (!df.ok()) return df.status();
  absl::StatusOr<std::unique_ptr<MappedFile>> ff = MappedFile::Open(run.fastpath);
  if (!ff.ok()) return ff.status();
  if ((*ff)->bytes() != (*qf)->bytes()) {
    return absl::InternalError(absl::StrFormat(
        "%s: the file written without error statistics differs", MxFormatName(run.format)));
  }
  ++checks;
  absl::StatusOr<SafetensorsView> q = ParseSafetensors((*qf)->bytes());
  if (!q.ok()) return q.status();
  absl::StatusOr<SafetensorsView> d = ParseSafetensors((*df)->bytes());
  if (!d.ok()) return d.status();
  absl::StatusOr<std::vector<QuantizedTensorInfo>> records = ListQuantizedTensors(*q);
  if (!records.ok()) return records.status();
  size_t expected_records = 0;
  for (const StTensorInfo& t : orig.tensors) {
    auto fail = [&](const std::string& what) {
      return absl::InternalError(absl::StrFormat("%s: tensor '%s': %s",
                                                 MxFormatName(run.format), t.name, what));
    };
    const StTensorInfo* back = d->Find(t.name);
    if (back == nullptr || back->dtype != t.dtype || back->shape != t.shape) {
      return fail("missing from the dequantized file or wrong dtype/shape");
    }
    if (t.shape.size() != 2 || t.name == "model.embed_tokens.weight") {
      // Copied: byte-identical in both files.
      const StTensorInfo* qt = q->Find(t.name);
      if (qt == nullptr || q->Bytes(*qt) != orig.Bytes(t) ||
          d->Bytes(*back) != orig.Bytes(t)) {
        return fail("copied tensor differs");
      }
      checks += 2;
      continue;
    }
    ++expected_records;
    const QuantizedTensorInfo* rec = nullptr;
    for (const QuantizedTensorInfo& r : *records) rec = r.name == t.name ? &r : rec;
    if (rec == nullptr || rec->dtype != t.dtype || rec->shape.rows != t.shape[0] ||
        rec->shape.cols != t.shape[1] || rec->shape.format != run.format ||
        rec->layout != ModelLayout::kTcgen05 || rec->version.empty()) {
      return fail("quantization metadata missing or incomplete");
    }
    MxOptions o;
    o.layout = rec->shape.layout;
    o.scale_layout = rec->shape.scale_layout;
    absl::StatusOr<MxTensor> ref = QuantizeMx(run.format, *StDtypeFormat(t.dtype),
                                              orig.Bytes(t), t.shape[0], t.shape[1], o);
    if (!ref.ok()) return ref.status();
    absl::StatusOr<MxTensorView> file_view = QuantizedTensorView(*q, *rec);
    if (!file_view.ok()) return file_view.status();
    if (file_view->elements != absl::MakeConstSpan(ref->elements) ||
        file_view->scales != absl::MakeConstSpan(ref->scales) ||
        file_view->tensor_scale != ref->tensor_scale) {
      return fail("quantize-model bytes differ from QuantizeMx");
    }
    std::vector<uint8_t> deq(d->Bytes(*back).size());
    if (absl::Status s = DequantizeMx(View(*ref), *StDtypeFormat(t.dtype),
                                      absl::MakeSpan(deq));
        !s.ok()) {
      return s;
    }
    if (d->Bytes(*back) != absl::MakeConstSpan(deq)) {
      return fail("dequantize-model bytes differ from DequantizeMx");
    }
    checks += 3;
  }
  if (records->size() != expected_records) {
    return absl::InternalError(absl::StrFormat(
        "%s: %d quantization records, expected %d", MxFormatName(run.format),
        records->size(), expected_records));
  }
  ++checks;
  return absl::OkStatus();
}

int RunDemo(const std::vector<std::string>& args) {
  if (!args.empty()) {
    return Fail("demo", absl::InvalidArgumentError(
                            absl::StrFormat("unexpected argument '%s'", args[0])));
  }
  char tmpl[] = "/tmp/mxpack-demo-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) {
    return Fail("demo", absl::InternalError("cannot create a temporary directory"));
  }
  const std::string dir = tmpl;
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  } cleanup{dir};

  SyntheticModelConfig config;
  absl::StatusOr<std::vector<uint8_t>> ckpt = SyntheticCheckpoint(config);
  if (!ckpt.ok()) return Fail("demo", ckpt.status());
  const std::string model = dir + "/model.safetensors";
  absl::StatusOr<SafetensorsView> orig = ParseSafetensors(*ckpt);
  if (!orig.ok()) return Fail("demo", orig.status());
  if (absl::Status s = WriteSafetensors(model, [&] {
        std::vector<StTensorOut> t;
        for (const StTensorInfo& i : orig->tensors) {
          t.push_back({i.name, i.dtype, i.shape, orig->Bytes(i)});
        }
        return t;
      }(), orig->metadata);
      !s.ok()) {
    return Fail("demo", s);
  }
  std::printf(
      "mxpack demo: a built-in %zu-layer transformer-like checkpoint (hidden %zu, "
      "ffn %zu, vocab %zu;\nGaussian weights with log-normal row scales, outlier "
      "channels and spikes; odd layers BF16)\n",
      config.layers, config.hidden, config.ffn, config.vocab);
  std::printf("wrote %s: %zu tensors, %s\n\n", model.c_str(), orig->tensors.size(),
              MiB(orig->data.size()).c_str());

  // The same steps as:
  //   mxpack quantize-model model.safetensors model.F.safetensors --format=F
  //       --layout=tcgen05 --exclude=embed_tokens
  //   mxpack dequantize-model model.F.safetensors model.F.dequant.safetensors
  std::vector<Run> runs;
  for (MxFormat f : {MxFormat::kMxfp4, MxFormat::kNvfp4}) {
    Run r;
    r.format = f;
    r.qpath = absl::StrCat(dir, "/model.", MxFormatName(f), ".safetensors");
    r.dqpath = absl::StrCat(dir, "/model.", MxFormatName(f), ".dequant.safetensors");
    QuantizeModelOptions o;
    o.format = f;
    o.layout = ModelLayout::kTcgen05;
    o.exclude = "embed_tokens";
    o.error_stats = true;
    absl::StatusOr<ModelReport> q = QuantizeModelFile(model, r.qpath, o);
    if (!q.ok()) return Fail("demo", q.status());
    r.q = *std::move(q);
    r.fastpath = absl::StrCat(dir, "/model.", MxFormatName(f), ".nostats.safetensors");
    o.error_stats = false;
    absl::StatusOr<ModelReport> fast = QuantizeModelFile(model, r.fastpath, o);
    if (!fast.ok()) return Fail("demo", fast.status());
    r.fast = *std::move(fast);
    absl::StatusOr<ModelReport> d = DequantizeModelFile(r.qpath, r.dqpath, {});
    if (!d.ok()) return Fail("demo", d.status());
    r.dq = *std::move(d);
    runs.push_back(std::move(r));
  }

  // Per-tensor comparison table.
  size_t w = 6;
  for (const TensorReport& t : runs[0].q.tensors) w = std::max(w, t.name.size());
  std::printf("%-*s %-12s %-5s  %-25s %-25s\n", static_cast<int>(w), "", "", "",
              "MXFP4 (e2m1, ue8m0/32)", "NVFP4 (e2m1, ue4m3/16)");
  std::printf("%-*s %-12s %-5s  %8s %9s %6s %8s %9s %6s\n", static_cast<int>(w),
              "tensor", "shape", "dtype", "SQNR dB", "max err", "sat", "SQNR dB",
              "max err", "sat");
  for (size_t i : NaturalOrder(runs[0].q.tensors)) {
    const TensorReport& a = runs[0].q.tensors[i];
    const TensorReport& b = runs[1].q.tensors[i];
    std::string shape = absl::StrCat("[", a.shape[0]);
    for (size_t k = 1; k < a.shape.size(); ++k) absl::StrAppend(&shape, ", ", a.shape[k]);
    shape += "]";
    std::printf("%-*s %-12s %-5s  ", static_cast<int>(w), a.name.c_str(), shape.c_str(),
                std::string(StDtypeName(a.dtype)).c_str());
    if (!a.stats.has_value() || !b.stats.has_value()) {
      std::printf("%8s\n", "copied");
      continue;
    }
    std::printf("%8.2f %9.3g %6zu %8.2f %9.3g %6zu\n", a.stats->sqnr_db,
                a.stats->max_abs_error, a.stats->saturated, b.stats->sqnr_db,
                b.stats->max_abs_error, b.stats->saturated);
  }
  std::printf("%-*s %-12s %-5s  %8.2f %9.3g %6zu %8.2f %9.3g %6zu\n",
              static_cast<int>(w), "total (quantized tensors)", "", "",
              runs[0].q.total->sqnr_db, runs[0].q.total->max_abs_error,
              runs[0].q.total->saturated, runs[1].q.total->sqnr_db,
              runs[1].q.total->max_abs_error, runs[1].q.total->saturated);
  std::printf(
      "(SQNR = 10 log10(sum x^2 / sum err^2); sat = elements whose scaled value "
      "exceeded 6 and\n were clamped: MXFP4's floor scale and NVFP4's rn ue4m3 "
      "scale both allow it, by design)\n\n");

  for (const Run& r : runs) {
    std::printf(
        "%-5s quantize-model: %zu tensors quantized, %zu copied; data %s -> %s "
        "(%.2fx smaller);\n      %.0f MiB/s on %zu threads (%.0f MiB/s including error "
        "statistics)\n"
        "      dequantize-model: %s -> %s; %.0f MiB/s\n",
        std::string(MxFormatName(r.format)).c_str(), r.q.quantized_tensors,
        r.q.tensors.size() - r.q.quantized_tensors, MiB(r.q.in_bytes).c_str(),
        MiB(r.q.out_bytes).c_str(),
        static_cast<double>(r.q.in_bytes) / static_cast<double>(r.q.out_bytes),
        r.fast.processed_bytes_per_second() / 1048576.0, r.fast.threads,
        r.q.processed_bytes_per_second() / 1048576.0,
        MiB(r.dq.in_bytes).c_str(), MiB(r.dq.out_bytes).c_str(),
        r.dq.processed_bytes_per_second() / 1048576.0);
  }
  std::printf(
      "      layouts: elements b4x16_p64 (16 B per 16 e2m1 codes, TMA/tcgen05.cp "
      "ready), scales in\n      tcgen05 512-byte tiles (128 rows x 4 blocks); "
      "'mxpack inspect FILE' shows the records\n\n");

  size_t checks = 0;
  for (const Run& r : runs) {
    if (absl::Status s = Verify(*orig, r, checks); !s.ok()) {
      std::printf("verify: FAILED: %s\n", std::string(s.message()).c_str());
      return 1;
    }
  }
  std::printf(
      "verify: ok (%zu checks): quantize-model bytes == QuantizeMx (with and "
      "without statistics),\n        dequantize-model bytes == DequantizeMx, "
      "copied tensors byte-identical, metadata complete\n",
      checks);
  return 0;
}

const bool kDemo = RegisterCommand(
    {"demo", "the main job on a built-in checkpoint: quantize-model to MXFP4/NVFP4",
     "demo\n\nWrites a built-in deterministic transformer-like checkpoint "
     "(safetensors, 4 layers,\nF32 and BF16) to a temporary directory, "
     "quantizes it with quantize-model to MXFP4 and\nNVFP4 (tcgen05 layouts; "
     "embeddings kept), dequantizes with dequantize-model, verifies\nevery "
     "byte against QuantizeMx/DequantizeMx and prints per-tensor SQNR, max "
     "error,\nsaturated counts, sizes and throughput. The directory is removed "
     "afterwards.",
     {},
     RunDemo});

}  // namespace
}  // namespace mxpack::cli
