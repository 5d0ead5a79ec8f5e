// Optional CUDA backend: runs the real tcgen05.cp / shift / ld,
// cvt and multimem instructions on a GPU and compares them byte for byte
// with the host models (scalar.h, pack.h, tmem.h, multimem.h).
//
// Every entry point works in every build: without the backend
// (MXPACK_CUDA=OFF or no toolkit) it returns kUnavailable "built without
// CUDA"; with it, kUnavailable names the reason when there is no driver or
// device, the architecture is wrong (tcgen05 and the fp4/fp6/ue8m0 cvt need
// compute capability 10.0, the code is built for sm_100a and sm_90), or the
// devices cannot multicast. Nothing here needs a GPU to compile or link:
// the driver is loaded at run time through the CUDA runtime.
//
//   auto dev = mxpack::cuda::QueryDevice();
//   if (!dev.ok()) { /* kUnavailable: dev.status().message() says why */ }
//   auto report = mxpack::cuda::VerifyAll({});  // What `mxpack gpu-verify` runs.
#ifndef MXPACK_CUDA_H_
#define MXPACK_CUDA_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "mxpack/format.h"
#include "mxpack/multimem.h"
#include "mxpack/pack.h"
#include "mxpack/scalar.h"
#include "mxpack/tcgen05.h"
#include "mxpack/tmem.h"

namespace mxpack {
namespace cuda {

// True when this binary contains the CUDA backend (MXPACK_CUDA on).
bool BuiltWithCuda();

struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  int cc_major = 0;  // Compute capability.
  int cc_minor = 0;
  int device_count = 0;    // Visible devices.
  bool multicast = false;  // CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED.
  int driver_version = 0;  // 13000 = CUDA 13.0.
  int runtime_version = 0;
  size_t smem_per_block_optin = 0;
};

// Device `ordinal`, or kUnavailable: "built without CUDA ...", or "no CUDA
// GPU: ..." with the runtime's error (no driver, no device visible).
// InvalidArgument for an ordinal out of range.
absl::StatusOr<DeviceInfo> QueryDevice(int ordinal = 0);

// What a feature needs. kSm90: the sm_90 code (fp8 cvt, f16/bf16/f32/int
// multimem) runs on compute capability >= 9.0 (sm_90 SASS, compute_90 PTX
// for newer GPUs). kSm100a: tcgen05, fp4/fp6/ue8m0/cvt.rs, fp8 multimem run
// only on compute capability 10.0 (sm_100a SASS).
enum class Arch : uint8_t { kSm90, kSm100a };
// OK when device 0 can run code of `arch`, else kUnavailable naming the
// device, its compute capability and what is needed.
absl::Status RequireArch(Arch arch);

// ---------------------------------------------------------------------------
// Kernel 2: device cvt. Each form is one PTX instruction; the host-model
// conversion it implements is (from, to, policy).
// ---------------------------------------------------------------------------
struct CvtForm {
  const char* ptx;  // Opcode, e.g. "cvt.rn.satfinite.relu.e4m3x2.f32".
  Format from;
  Format to;
  EncodePolicy policy;
  int width;  // Elements per instruction (2, or 4 for cvt.rs).
  Arch arch;
};
// Every cvt the backend issues (the PTX-inspection test checks each one).
const std::vector<CvtForm>& CvtForms();

// Runs form `form` (index into CvtForms()) over raw little-endian arrays:
// `in` holds n source elements (f32: 4 bytes, f16/bf16: 2, narrow: one code
// per byte), `out` n destination elements (narrow: one code per byte).
// Element 2i / 4i of a group is the low half / lowest byte of the packed
// PTX register (PTX: input b, resp. the last of {a, b, e, f}, goes to the
// low bits). n must be a multiple of width. For cvt.rs, `rbits` holds one
// word per instruction (n / width words): all `width` elements of group g
// use rbits[g]; otherwise rbits must be empty.
absl::Status DeviceConvert(size_t form, absl::Span<const uint8_t> in,
                           absl::Span<uint8_t> out,
                           absl::Span<const uint32_t> rbits = {});

// ---------------------------------------------------------------------------
// Kernel 1: tensor memory. One CTA of 4 warps allocates all 512 TMEM columns
// (tcgen05.alloc), fills every cell with `fill` (tcgen05.st), copies `smem`
// (to a 1024-byte aligned shared-memory buffer, with plain loads) into TMEM
// with the tcgen05.cp form, optionally runs tcgen05.shift.down, waits
// (tcgen05.commit -> mbarrier), reads all 128 x 512 cells back with
// tcgen05.ld.32x32b (tcgen05.wait::ld) and deallocates.
// ---------------------------------------------------------------------------
// Every tcgen05.cp form the backend issues: .cta_group::1, each shape and
// multicast, without and with .b8x16.b6x16_p32 / .b8x16.b4x16_p64.
const std::vector<const char*>& TmemCpForms();

struct TmemCpJob {
  size_t cp_form = 0;         // Index into TmemCpForms().
  std::vector<uint8_t> smem;  // Shared-memory image (from address 0).
  uint64_t desc = 0;          // Descriptor relative to the image start.
  uint32_t cp_taddr = 0;      // Relative to the allocation (lane, column).
  bool shift = false;
  uint32_t shift_taddr = 0;  // Lane a multiple of 32.
  uint32_t fill = 0;
};
// Returns the 128 x 512 cells, cells[lane * 512 + column].
absl::StatusOr<std::vector<uint32_t>> RunTmemCp(const TmemCpJob& job);

// The job gpu-verify runs for cp form `form` (host only, no device): a
// K-major tile of the form's rows (no swizzle: LBO 128, SBO 128 x chunks per
// row; swizzled: row pitch = swizzle width, SBO 8 x width) of random bytes
// whose decompression payloads cycle through every code, copied to lane 0,
// column 16 of TMEM filled with kCpFill; no shift. Unimplemented when the
// host model has no address walk for `swizzle`.
inline constexpr uint32_t kCpFill = 0xDEADBEEF;
absl::StatusOr<TmemCpJob> MakeCpJob(size_t form, tcgen05::Swizzle swizzle, uint64_t seed);
// What the host model says TMEM holds after `job` (Tmem::Cp with the 6-bit
// container placement `fp6`, then Tmem::Shift when job.shift).
absl::StatusOr<Tmem> ModelCp(const TmemCpJob& job, Fp6Container fp6);

// tcgen05.ld fragment forms issued after filling TMEM with FragmentPattern()
// through tcgen05.st.32x32b; 16x32bx2 forms use immHalfSplitoff 8.
const std::vector<const char*>& TmemLdForms();
inline constexpr int kLdHalfSplitOffset = 8;
// tcgen05::Parse() of a TmemLdForms() / TmemStForms() spelling with the
// immHalfSplitoff the kernels use (kLdHalfSplitOffset) set for 16x32bx2.
absl::StatusOr<tcgen05::Instruction> ParseFragmentForm(const char* spelling);
// Cell value written at (lane, column): low 16 bits lane * 512 + column
// (unique per cell), high 16 bits 0xC0DE ^ lane.
inline constexpr uint32_t FragmentPattern(int lane, int column) {
  return (static_cast<uint32_t>(0xC0DE ^ lane) << 16) |
         static_cast<uint32_t>(lane * 512 + column);
}
// Warps 0..3 each issue the ld form at lane 32 * warp, column `column`.
// Returns per warp the 32 x NumRegisters registers (regs[warp][t][j]).
absl::StatusOr<std::vector<std::vector<std::vector<uint32_t>>>> RunTmemLd(size_t ld_form,
                                                                          int column);

// tcgen05.st fragment forms (same shapes as TmemLdForms(), with
// .unpack::16b): TMEM is filled with FragmentPattern(), warp w stores
// register j of thread t = StPattern(w, t, j) at lane 32 * w, column
// `column`, then all 128 x 512 cells are read back (cells[lane * 512 +
// column]).
const std::vector<const char*>& TmemStForms();
// Low and high 16 bits distinct across every (warp, thread, register).
inline constexpr uint32_t StPattern(int warp, int thread, int reg) {
  const uint32_t lo = static_cast<uint32_t>(((warp * 32 + thread) * 4 + reg) * 2);
  return (((lo + 1) | 0x4000u) << 16) | lo;
}
absl::StatusOr<std::vector<uint32_t>> RunTmemSt(size_t st_form, int column);

// ---------------------------------------------------------------------------
// Kernel 3: multimem over a multicast object that spans every visible GPU
// with multicast support (driver API cuMulticastCreate / AddDevice /
// BindMem, cuMemMap of the multicast handle), issued from device 0.
// ---------------------------------------------------------------------------
// Every multimem form the backend issues (ld_reduce, st, red).
const std::vector<const char*>& MultimemForms();

struct MultimemRun {
  int num_replicas = 0;                        // GPUs in the object.
  std::vector<uint8_t> ld_result;              // ld_reduce: the results.
  std::vector<std::vector<uint8_t>> replicas;  // st / red: replicas after.
};
// Replica r holds `replicas[r]` (all equally long, a multiple of the form's
// access size; replicas.size() must equal MulticastDeviceCount()). Thread i
// accesses byte offset i * AccessBytes(); st and red use operand bytes
// `b` (same length as one replica).
absl::StatusOr<MultimemRun> RunMultimem(size_t form,
                                        const std::vector<std::vector<uint8_t>>& replicas,
                                        absl::Span<const uint8_t> b = {});
// Devices a multicast object would span, or kUnavailable with the reason.
absl::StatusOr<int> MulticastDeviceCount();

// ---------------------------------------------------------------------------
// Verification (`mxpack gpu-verify`).
// ---------------------------------------------------------------------------
enum class Outcome : uint8_t { kPassed, kFailed, kSkipped };
absl::string_view OutcomeName(Outcome o);  // "passed", "FAILED", "skipped"

struct CheckResult {
  std::string group;  // "cvt", "tcgen05.cp", "tcgen05.ld", "multimem", ...
  std::string name;   // The PTX spelling (and variant) checked.
  Outcome outcome = Outcome::kSkipped;
  uint64_t compared = 0;  // Values compared.
  std::string detail;     // First mismatch, matching model, or skip reason.
};

struct VerifyOptions {
  // cvt from f32: all 2^32 inputs when true, else a structured sweep plus
  // 2^22 random inputs. f16/bf16 sources and decodes are always exhaustive.
  bool exhaustive_cvt = true;
  uint64_t seed = 1;
  int multimem_trials = 4;  // Random replica fillings per multimem form.
  int threads = 0;          // Host-model threads; 0 = hardware concurrency.
  // Called with each finished check (progress for long exhaustive runs).
  std::function<void(const CheckResult&)> on_result;
};

// Runs every comparison the present hardware supports against the host
// model. Fails (kUnavailable) only when there is no usable device at all;
// unsupported checks are reported as skipped with the reason.
absl::StatusOr<std::vector<CheckResult>> VerifyAll(const VerifyOptions& options);

// The individual groups (each returns its rows; skipped rows when the
// hardware lacks the feature).
std::vector<CheckResult> VerifyCvt(const VerifyOptions& options);
std::vector<CheckResult> VerifyTmem(const VerifyOptions& options);
std::vector<CheckResult> VerifyMultimem(const VerifyOptions& options);

}  // namespace cuda
}  // namespace mxpack

#endif  // MXPACK_CUDA_H_
