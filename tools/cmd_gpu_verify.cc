// `mxpack gpu-verify`: runs every host-vs-device comparison the present GPU
// supports (mxpack/cuda.h VerifyAll) and prints a table of the checks run,
// passed and skipped with the reason. Without a GPU it says so and exits 0.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "mxpack/cuda.h"
#include "tools/cli.h"

ABSL_FLAG(bool, gpu_quick, false,
          "gpu-verify: cvt from f32 on a structured sweep + 2^22 random inputs "
          "instead of all 2^32");
ABSL_FLAG(std::string, gpu_groups, "cvt,tcgen05,multimem",
          "gpu-verify: comma-separated check groups to run (cvt, tcgen05, multimem)");
ABSL_FLAG(int32_t, gpu_trials, 4,
          "gpu-verify: random replica fillings per multimem form");
ABSL_FLAG(int32_t, gpu_threads, 0,
          "gpu-verify: host-model threads (0 = hardware concurrency)");

namespace mxpack::cli {
namespace {

void PrintTable(const std::vector<cuda::CheckResult>& rows) {
  size_t w_group = 5, w_name = 5;
  for (const auto& r : rows) {
    w_group = std::max(w_group, r.group.size());
    w_name = std::max(w_name, r.name.size());
  }
  const int g = static_cast<int>(w_group), n = static_cast<int>(w_name);
  std::printf("%-*s  %-*s  %-7s  %12s  %s\n", g, "group", n, "check", "result",
              "compared", "detail");
  int passed = 0, failed = 0, skipped = 0;
  for (const auto& r : rows) {
    std::printf("%-*s  %-*s  %-7s  %12llu  %s\n", g, r.group.c_str(), n, r.name.c_str(),
                std::string(cuda::OutcomeName(r.outcome)).c_str(),
                static_cast<unsigned long long>(r.compared), r.detail.c_str());
    passed += r.outcome == cuda::Outcome::kPassed;
    failed += r.outcome == cuda::Outcome::kFailed;
    skipped += r.outcome == cuda::Outcome::kSkipped;
  }
  std::printf("checks: %d run, %d passed, %d failed, %d skipped\n", passed + failed,
              passed, failed, skipped);
}

int RunGpuVerify(const std::vector<std::string>& args) {
  if (!args.empty()) {
    return Fail("gpu-verify",
                absl::InvalidArgumentError(absl::StrFormat(
                    "expected no positional arguments, got \"%s\"", args[0])));
  }
  cuda::VerifyOptions options;
  options.exhaustive_cvt = !absl::GetFlag(FLAGS_gpu_quick);
  options.seed = absl::GetFlag(FLAGS_seed);
  options.multimem_trials = absl::GetFlag(FLAGS_gpu_trials);
  options.threads = absl::GetFlag(FLAGS_gpu_threads);
  // Progress on stderr; the table goes to stdout at the end.
  options.on_result = [](const cuda::CheckResult& r) {
    std::fprintf(stderr, "[%s] %s: %s\n", r.group.c_str(), r.name.c_str(),
                 std::string(cuda::OutcomeName(r.outcome)).c_str());
  };
  bool cvt = false, tmem = false, multimem = false;
  for (absl::string_view group :
       absl::StrSplit(absl::GetFlag(FLAGS_gpu_groups), ',', absl::SkipEmpty())) {
    if (group == "cvt") {
      cvt = true;
    } else if (group == "tcgen05") {
      tmem = true;
    } else if (group == "multimem") {
      multimem = true;
    } else {
      return Fail(
          "gpu-verify",
          absl::InvalidArgumentError(absl::StrFormat(
              "--gpu_groups: expected cvt, tcgen05 or multimem, got \"%s\"", group)));
    }
  }

  auto device = cuda::QueryDevice(0);
  if (!device.ok()) {
    if (device.status().code() != absl::StatusCode::kUnavailable) {
      return Fail("gpu-verify", device.status());
    }
    std::printf("gpu-verify: no GPU verification possible: %s\n",
                std::string(device.status().message()).c_str());
    std::printf("checks: 0 run, 0 passed, 0 failed, 0 skipped\n");
    return 0;
  }
  std::printf(
      "device 0: %s, compute capability %d.%d, %d visible device(s), multicast %s, "
      "driver %d, runtime %d\n",
      device->name.c_str(), device->cc_major, device->cc_minor, device->device_count,
      device->multicast ? "yes" : "no", device->driver_version, device->runtime_version);
  std::vector<cuda::CheckResult> rows;
  auto add = [&rows](std::vector<cuda::CheckResult> more) {
    rows.insert(rows.end(), more.begin(), more.end());
  };
  if (cvt) add(cuda::VerifyCvt(options));
  if (tmem) add(cuda::VerifyTmem(options));
  if (multimem) add(cuda::VerifyMultimem(options));
  PrintTable(rows);
  for (const auto& r : rows) {
    if (r.outcome == cuda::Outcome::kFailed) return 1;
  }
  return 0;
}

const bool kGpuVerify = RegisterCommand(
    {"gpu-verify",
     "compare the GPU's cvt / tcgen05 / multimem with the host model",
     "gpu-verify [--gpu_quick] [--gpu_groups=cvt,tcgen05,multimem] [--gpu_trials=N]\n"
     "           [--gpu_threads=N] [--seed=S]\n\n"
     "Runs every comparison the present GPU supports against the host model and\n"
     "prints one row per check (passed / FAILED / skipped with the reason) and a\n"
     "summary. cvt: every cvt form the backend issues, on all 2^32 f32 inputs\n"
     "(--gpu_quick: a structured sweep), all f16/bf16 inputs and every narrow code.\n"
     "tcgen05: every tcgen05.cp shape / multicast / decompression form (reports\n"
     "the FP6 container placement), swizzled tiles, tcgen05.shift, tcgen05.ld\n"
     "fragments. multimem: every ld_reduce / st / red form over a multicast object\n"
     "spanning all GPUs, naming the ReduceModel that matches. Needs the CUDA\n"
     "backend (MXPACK_CUDA) and a GPU: without one it says so and exits 0.\n"
     "Exit status 1 when a check failed, 2 on usage errors. See docs/gpu_verify.md.",
     {"gpu_quick", "gpu_groups", "gpu_trials", "gpu_threads", "seed"},
     RunGpuVerify});

}  // namespace
}  // namespace mxpack::cli
