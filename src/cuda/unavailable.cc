// The CUDA backend's device entry points in a build without it
// (MXPACK_CUDA=OFF or no CUDA toolkit): every call reports kUnavailable
// "built without CUDA", so callers need no #ifdef.
#include "mxpack/cuda.h"

namespace mxpack {
namespace cuda {
namespace {

absl::Status NotBuilt() {
  return absl::UnavailableError(
      "built without CUDA (configure with -DMXPACK_CUDA=ON or AUTO and a CUDA "
      "toolkit to enable the backend)");
}

}  // namespace

absl::StatusOr<DeviceInfo> QueryDevice(int) { return NotBuilt(); }
absl::Status RequireArch(Arch) { return NotBuilt(); }
absl::Status DeviceConvert(size_t, absl::Span<const uint8_t>, absl::Span<uint8_t>,
                           absl::Span<const uint32_t>) {
  return NotBuilt();
}
absl::StatusOr<std::vector<uint32_t>> RunTmemCp(const TmemCpJob&) { return NotBuilt(); }
absl::StatusOr<std::vector<std::vector<std::vector<uint32_t>>>> RunTmemLd(size_t, int) {
  return NotBuilt();
}
absl::StatusOr<std::vector<uint32_t>> RunTmemSt(size_t, int) { return NotBuilt(); }
absl::StatusOr<MultimemRun> RunMultimem(size_t, const std::vector<std::vector<uint8_t>>&,
                                        absl::Span<const uint8_t>) {
  return NotBuilt();
}
absl::StatusOr<int> MulticastDeviceCount() { return NotBuilt(); }

}  // namespace cuda
}  // namespace mxpack
