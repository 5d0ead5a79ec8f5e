// Host side of the CUDA backend (built only with MXPACK_CUDA): device
// queries, argument checks and data marshalling around the kernels of
// kernels_*.cu, and the multicast object of kernel 3 through the driver API.
// The driver (libcuda.so) is never linked: its entry points come from the
// CUDA runtime's cudaGetDriverEntryPointByVersion, so binaries start and
// report kUnavailable on machines without a driver.
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "mxpack/cuda.h"
#include "src/cuda/kernels.h"

namespace mxpack {
namespace cuda {
namespace {

using internal::CvtKind;

std::string ErrorText(cudaError_t e) {
  return absl::StrCat(cudaGetErrorName(e), " (", cudaGetErrorString(e), ")");
}

absl::Status FromCuda(const char* what, cudaError_t e) {
  if (e == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(what, ": ", ErrorText(e)));
}

absl::Status FromKernel(const std::string& error) {
  if (error.empty()) return absl::OkStatus();
  return absl::InternalError(error);
}

// Driver API entry point `name` (introduced in CUDA `version`, e.g. 12010).
template <typename Fn>
absl::StatusOr<Fn> DriverEntry(const char* name, unsigned version) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
  const cudaError_t e =
      cudaGetDriverEntryPointByVersion(name, &fn, version, cudaEnableDefault, &q);
  if (e != cudaSuccess || q != cudaDriverEntryPointSuccess || fn == nullptr) {
    return absl::UnavailableError(absl::StrFormat(
        "CUDA driver entry point %s (CUDA %d.%d) not available: %s, query result %d",
        name, version / 1000, version % 1000 / 10, ErrorText(e), static_cast<int>(q)));
  }
  return reinterpret_cast<Fn>(fn);
}

absl::Status FromDriver(const char* what, CUresult r) {
  if (r == CUDA_SUCCESS) return absl::OkStatus();
  return absl::InternalError(
      absl::StrFormat("%s: CUresult %d", what, static_cast<int>(r)));
}

#define MXPACK_DRIVER(fn, version)                           \
  auto fn##_or = DriverEntry<decltype(&::fn)>(#fn, version); \
  if (!fn##_or.ok()) return fn##_or.status();                \
  auto fn = *fn##_or

absl::StatusOr<bool> MulticastSupported(int ordinal) {
  MXPACK_DRIVER(cuDeviceGet, 12000);
  MXPACK_DRIVER(cuDeviceGetAttribute, 12000);
  CUdevice dev;
  absl::Status s = FromDriver("cuDeviceGet", cuDeviceGet(&dev, ordinal));
  if (!s.ok()) return s;
  int value = 0;
  s = FromDriver(
      "cuDeviceGetAttribute(MULTICAST_SUPPORTED)",
      cuDeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, dev));
  if (!s.ok()) return s;
  return value != 0;
}

}  // namespace

absl::StatusOr<DeviceInfo> QueryDevice(int ordinal) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    return absl::UnavailableError(
        absl::StrCat("no CUDA GPU: cudaGetDeviceCount failed: ", ErrorText(e)));
  }
  if (count == 0) return absl::UnavailableError("no CUDA GPU: no device visible");
  if (ordinal < 0 || ordinal >= count) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "ordinal: expected 0 .. %d (visible devices), got %d", count - 1, ordinal));
  }
  cudaDeviceProp p;
  absl::Status s =
      FromCuda("cudaGetDeviceProperties", cudaGetDeviceProperties(&p, ordinal));
  if (!s.ok()) return s;
  DeviceInfo info;
  info.ordinal = ordinal;
  info.name = p.name;
  info.cc_major = p.major;
  info.cc_minor = p.minor;
  info.device_count = count;
  info.smem_per_block_optin = p.sharedMemPerBlockOptin;
  cudaDriverGetVersion(&info.driver_version);
  cudaRuntimeGetVersion(&info.runtime_version);
  auto mc = MulticastSupported(ordinal);
  info.multicast = mc.ok() && *mc;
  return info;
}

absl::Status RequireArch(Arch arch) {
  auto info = QueryDevice(0);
  if (!info.ok()) return info.status();
  const int cc = info->cc_major * 10 + info->cc_minor;
  const bool ok = arch == Arch::kSm90 ? cc >= 90 : cc == 100;
  if (ok) return absl::OkStatus();
  return absl::UnavailableError(absl::StrFormat(
      "wrong architecture: device 0 (%s) has compute capability %d.%d; this "
      "needs %s",
      info->name, info->cc_major, info->cc_minor,
      arch == Arch::kSm90 ? "9.0 or newer (code built for sm_90)"
                          : "10.0 (code built for sm_100a)"));
}

// ---------------------------------------------------------------------------
// cvt

namespace {

CvtKind KindOf(size_t form) {
  static const auto* kinds = new std::vector<CvtKind>{
#define F32X2(...) CvtKind::kF32x2,
#define F32X2_B8(...) CvtKind::kF32x2B8,
#define PACK_W2N(...) CvtKind::kPackW2N,
#define PACK_N2W(...) CvtKind::kPackN2W,
#define PACK_B8(...) CvtKind::kPackB8,
#define RS_F32X4(...) CvtKind::kRsF32x4,
#define RS_F32X4_B16(...) CvtKind::kRsF32x4B16,
#define RS_F32X2(...) CvtKind::kRsF32x2,
#include "src/cuda/cvt_forms.inc"
#undef F32X2
#undef F32X2_B8
#undef PACK_W2N
#undef PACK_N2W
#undef PACK_B8
#undef RS_F32X4
#undef RS_F32X4_B16
#undef RS_F32X2
  };
  return (*kinds)[form];
}

// Bits one element occupies in the packed PTX register.
int LaneBits(Format f) {
  if (f == Format::kE2M1) return 4;
  return IsNarrow(f) ? 8 : 16;
}

}  // namespace

absl::Status DeviceConvert(size_t form, absl::Span<const uint8_t> in,
                           absl::Span<uint8_t> out, absl::Span<const uint32_t> rbits) {
  const auto& forms = CvtForms();
  if (form >= forms.size()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "form: expected an index below %d (CvtForms()), got %d", forms.size(), form));
  }
  const CvtForm& f = forms[form];
  const CvtKind kind = KindOf(form);
  const size_t sb = static_cast<size_t>(Traits(f.from).storage_bytes);
  const size_t db = static_cast<size_t>(Traits(f.to).storage_bytes);
  if (in.size() % sb != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("in: expected a multiple of %d bytes (%s elements), got %d bytes",
                        sb, FormatName(f.from), in.size()));
  }
  const size_t n = in.size() / sb;
  if (out.size() != n * db) {
    return absl::InvalidArgumentError(
        absl::StrFormat("out: expected %d bytes (%d %s elements), got %d", n * db, n,
                        FormatName(f.to), out.size()));
  }
  if (n % static_cast<size_t>(f.width) != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "in: %s converts groups of %d elements; expected a multiple of %d, got %d", f.ptx,
        f.width, f.width, n));
  }
  const size_t groups = n / static_cast<size_t>(f.width);
  const bool rs = f.policy.rounding == Rounding::kRS;
  if (rbits.size() != (rs ? groups : 0)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "rbits: expected %d words (%s), got %d", rs ? groups : 0,
        rs ? "one per instruction" : "none without cvt.rs", rbits.size()));
  }
  if (IsNarrow(f.from)) {
    const uint8_t mask = static_cast<uint8_t>((1u << Traits(f.from).bits) - 1);
    for (size_t i = 0; i < n; ++i) {
      if ((in[i] & ~mask) != 0) {
        return absl::InvalidArgumentError(
            absl::StrFormat("in[%d]: expected a %d-bit %s code, got 0x%02X", i,
                            Traits(f.from).bits, FormatName(f.from), in[i]));
      }
    }
  }
  absl::Status arch = RequireArch(f.arch);
  if (!arch.ok()) return arch;

  const bool f32_source = f.from == Format::kF32;
  const int src_lane = LaneBits(f.from), dst_lane = LaneBits(f.to);
  constexpr size_t kChunkGroups = size_t{1} << 24;
  std::vector<float> in_f32;
  std::vector<uint32_t> in_packed, result;
  for (size_t g0 = 0; g0 < groups; g0 += kChunkGroups) {
    const size_t gn = std::min(kChunkGroups, groups - g0);
    const size_t e0 = g0 * static_cast<size_t>(f.width);
    if (f32_source) {
      in_f32.resize(gn * static_cast<size_t>(f.width));
      std::memcpy(in_f32.data(), in.data() + e0 * 4, in_f32.size() * 4);
    } else {
      in_packed.assign(gn, 0);
      for (size_t g = 0; g < gn; ++g) {
        for (int k = 0; k < f.width; ++k) {
          const size_t e = e0 + g * static_cast<size_t>(f.width) + static_cast<size_t>(k);
          uint32_t v = in[e * sb];
          if (sb == 2) v |= static_cast<uint32_t>(in[e * sb + 1]) << 8;
          in_packed[g] |= v << (k * src_lane);
        }
      }
    }
    result.assign(gn, 0);
    absl::Status s = FromKernel(internal::RunCvtKernel(
        static_cast<int>(form), kind, f.width, f32_source ? in_f32.data() : nullptr,
        f32_source ? nullptr : in_packed.data(), rs ? rbits.data() + g0 : nullptr,
        result.data(), gn));
    if (!s.ok()) return s;
    const uint32_t mask = (1u << dst_lane) - 1;
    for (size_t g = 0; g < gn; ++g) {
      for (int k = 0; k < f.width; ++k) {
        const size_t e = e0 + g * static_cast<size_t>(f.width) + static_cast<size_t>(k);
        const uint32_t v = (result[g] >> (k * dst_lane)) & mask;
        out[e * db] = static_cast<uint8_t>(v);
        if (db == 2) out[e * db + 1] = static_cast<uint8_t>(v >> 8);
      }
    }
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// tcgen05

absl::StatusOr<std::vector<uint32_t>> RunTmemCp(const TmemCpJob& job) {
  if (job.cp_form >= TmemCpForms().size()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("cp_form: expected an index below %d (TmemCpForms()), got %d",
                        TmemCpForms().size(), job.cp_form));
  }
  if (tcgen05::TaddrLane(job.cp_taddr) >= 128 ||
      tcgen05::TaddrColumn(job.cp_taddr) >= 512) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "cp_taddr: expected lane < 128 and column < 512, got lane %d column %d",
        tcgen05::TaddrLane(job.cp_taddr), tcgen05::TaddrColumn(job.cp_taddr)));
  }
  if (job.shift && (tcgen05::TaddrLane(job.shift_taddr) % 32 != 0 ||
                    tcgen05::TaddrLane(job.shift_taddr) >= 128 ||
                    tcgen05::TaddrColumn(job.shift_taddr) + 8 > 512)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "shift_taddr: expected lane 0/32/64/96 and column <= 504, got lane %d column %d",
        tcgen05::TaddrLane(job.shift_taddr), tcgen05::TaddrColumn(job.shift_taddr)));
  }
  auto info = QueryDevice(0);
  if (!info.ok()) return info.status();
  absl::Status s = RequireArch(Arch::kSm100a);
  if (!s.ok()) return s;
  if (job.smem.size() + 1024 > info->smem_per_block_optin) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "smem: expected at most %d bytes (device limit minus 1024 for alignment), got %d",
        info->smem_per_block_optin - 1024, job.smem.size()));
  }
  std::vector<uint32_t> cells(size_t{128} * 512);
  s = FromKernel(internal::RunTmemCpKernel(static_cast<int>(job.cp_form), job.smem.data(),
                                           job.smem.size(), job.desc, job.cp_taddr,
                                           job.shift, job.shift_taddr, job.fill,
                                           info->smem_per_block_optin, cells.data()));
  if (!s.ok()) return s;
  return cells;
}

namespace {

// Form `index` of `forms` (argument `arg`, table `table` in messages) parsed
// by ParseFragmentForm, checked to fit in TMEM at `column`.
absl::StatusOr<tcgen05::Instruction> FragmentFormAt(const char* arg, const char* table,
                                                    const std::vector<const char*>& forms,
                                                    size_t index, int column) {
  if (index >= forms.size()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: expected an index below %d (%s), got %d", arg, forms.size(), table, index));
  }
  auto inst = ParseFragmentForm(forms[index]);
  if (!inst.ok()) return inst.status();
  auto cols = tcgen05::NumColumns(*inst);
  if (!cols.ok()) return cols.status();
  if (column < 0 || column + *cols > 512) {
    return absl::InvalidArgumentError(
        absl::StrFormat("column: expected 0 .. %d (the form spans %d columns), got %d",
                        512 - *cols, *cols, column));
  }
  return inst;
}

}  // namespace

absl::StatusOr<std::vector<std::vector<std::vector<uint32_t>>>> RunTmemLd(size_t ld_form,
                                                                          int column) {
  auto inst = FragmentFormAt("ld_form", "TmemLdForms()", TmemLdForms(), ld_form, column);
  if (!inst.ok()) return inst.status();
  absl::Status s = RequireArch(Arch::kSm100a);
  if (!s.ok()) return s;
  const int nregs = tcgen05::NumRegisters(*inst);
  std::vector<uint32_t> flat(size_t{128} * nregs);
  s = FromKernel(
      internal::RunTmemLdKernel(static_cast<int>(ld_form), nregs, column, flat.data()));
  if (!s.ok()) return s;
  std::vector<std::vector<std::vector<uint32_t>>> regs(4);
  for (int w = 0; w < 4; ++w) {
    regs[w].resize(32);
    for (int t = 0; t < 32; ++t) {
      const uint32_t* p = flat.data() + (w * 32 + t) * nregs;
      regs[w][t].assign(p, p + nregs);
    }
  }
  return regs;
}

absl::StatusOr<std::vector<uint32_t>> RunTmemSt(size_t st_form, int column) {
  auto inst = FragmentFormAt("st_form", "TmemStForms()", TmemStForms(), st_form, column);
  if (!inst.ok()) return inst.status();
  absl::Status s = RequireArch(Arch::kSm100a);
  if (!s.ok()) return s;
  std::vector<uint32_t> cells(size_t{128} * 512);
  s = FromKernel(
      internal::RunTmemStKernel(static_cast<int>(st_form), column, cells.data()));
  if (!s.ok()) return s;
  return cells;
}

// ---------------------------------------------------------------------------
// multimem

namespace {

// Devices that support multicast (all of them must, with compute
// capability >= 9.0).
absl::StatusOr<std::vector<int>> MulticastDevices() {
  auto info = QueryDevice(0);
  if (!info.ok()) return info.status();
  std::vector<int> devices;
  std::string lacking;
  for (int d = 0; d < info->device_count; ++d) {
    auto mc = MulticastSupported(d);
    if (!mc.ok()) return mc.status();
    if (*mc) {
      devices.push_back(d);
    } else {
      absl::StrAppend(&lacking, lacking.empty() ? "" : ", ", d);
    }
  }
  if (devices.empty()) {
    return absl::UnavailableError(
        absl::StrCat("no multicast support: CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED is 0 "
                     "on device(s) ",
                     lacking,
                     " (needs sm_90+ with NVLink / NVSwitch multicast, or a single "
                     "device with driver support)"));
  }
  return devices;
}

// A multicast object over `devices` with one physical allocation per
// device, each mapped for host copies, and the multicast mapping on the
// first device. Everything is released in the destructor.
class Multicast {
 public:
  ~Multicast() { Release(); }

  absl::Status Create(const std::vector<int>& devices, size_t min_bytes) {
    MXPACK_DRIVER(cuMulticastGetGranularity, 12010);
    MXPACK_DRIVER(cuMulticastCreate, 12010);
    MXPACK_DRIVER(cuMulticastAddDevice, 12010);
    MXPACK_DRIVER(cuMulticastBindMem, 12010);
    MXPACK_DRIVER(cuMemGetAllocationGranularity, 12000);
    MXPACK_DRIVER(cuMemCreate, 12000);
    MXPACK_DRIVER(cuMemAddressReserve, 12000);
    MXPACK_DRIVER(cuMemMap, 12000);
    MXPACK_DRIVER(cuMemSetAccess, 12000);
    MXPACK_DRIVER(cuDeviceGet, 12000);
    devices_ = devices;
    for (int d : devices) {  // Primary contexts for the driver calls.
      absl::Status s = FromCuda("cudaSetDevice", cudaSetDevice(d));
      if (s.ok()) s = FromCuda("cudaFree(0)", cudaFree(nullptr));
      if (!s.ok()) return s;
    }
    CUmulticastObjectProp prop;
    std::memset(&prop, 0, sizeof(prop));
    prop.numDevices = static_cast<unsigned>(devices.size());
    prop.handleTypes = 0;
    prop.size = min_bytes;
    size_t gran = 0;
    absl::Status s = FromDriver(
        "cuMulticastGetGranularity",
        cuMulticastGetGranularity(&gran, &prop, CU_MULTICAST_GRANULARITY_RECOMMENDED));
    if (!s.ok()) return s;
    CUmemAllocationProp aprop;
    std::memset(&aprop, 0, sizeof(aprop));
    aprop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    aprop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    aprop.location.id = devices[0];
    size_t agran = 0;
    s = FromDriver("cuMemGetAllocationGranularity",
                   cuMemGetAllocationGranularity(&agran, &aprop,
                                                 CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
    if (!s.ok()) return s;
    const size_t unit = std::max(gran, agran);
    bytes_ = (min_bytes + unit - 1) / unit * unit;
    prop.size = bytes_;
    s = FromDriver("cuMulticastCreate", cuMulticastCreate(&mc_, &prop));
    if (!s.ok()) return s;
    have_mc_ = true;
    for (int d : devices) {
      CUdevice dev;
      s = FromDriver("cuDeviceGet", cuDeviceGet(&dev, d));
      if (s.ok()) s = FromDriver("cuMulticastAddDevice", cuMulticastAddDevice(mc_, dev));
      if (!s.ok()) return s;
    }
    for (int d : devices) {
      aprop.location.id = d;
      CUmemGenericAllocationHandle h;
      s = FromDriver("cuMemCreate", cuMemCreate(&h, bytes_, &aprop, 0));
      if (!s.ok()) return s;
      phys_.push_back(h);
      CUdeviceptr va = 0;
      s = FromDriver("cuMemAddressReserve", cuMemAddressReserve(&va, bytes_, unit, 0, 0));
      if (!s.ok()) return s;
      unicast_.push_back(va);
      s = FromDriver("cuMemMap", cuMemMap(va, bytes_, 0, h, 0));
      if (!s.ok()) return s;
      mapped_.push_back(va);
      CUmemAccessDesc access;
      std::memset(&access, 0, sizeof(access));
      access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
      access.location.id = d;
      access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
      s = FromDriver("cuMemSetAccess", cuMemSetAccess(va, bytes_, &access, 1));
      if (!s.ok()) return s;
      CUdevice dev;
      s = FromDriver("cuDeviceGet", cuDeviceGet(&dev, d));
      if (s.ok())
        s = FromDriver("cuMulticastBindMem", cuMulticastBindMem(mc_, 0, h, 0, bytes_, 0));
      if (!s.ok()) return s;
      bound_.push_back(dev);
    }
    s = FromDriver("cuMemAddressReserve",
                   cuMemAddressReserve(&mc_va_, bytes_, unit, 0, 0));
    if (!s.ok()) return s;
    s = FromDriver("cuMemMap(multicast)", cuMemMap(mc_va_, bytes_, 0, mc_, 0));
    if (!s.ok()) return s;
    mc_mapped_ = true;
    CUmemAccessDesc access;
    std::memset(&access, 0, sizeof(access));
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id = devices[0];
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    return FromDriver("cuMemSetAccess(multicast)",
                      cuMemSetAccess(mc_va_, bytes_, &access, 1));
  }

  size_t bytes() const { return bytes_; }
  void* replica(size_t i) const { return reinterpret_cast<void*>(unicast_[i]); }
  void* multicast() const { return reinterpret_cast<void*>(mc_va_); }

 private:
  void Release() {
    auto unmap = DriverEntry<decltype(&::cuMemUnmap)>("cuMemUnmap", 12000);
    auto free_va = DriverEntry<decltype(&::cuMemAddressFree)>("cuMemAddressFree", 12000);
    auto release = DriverEntry<decltype(&::cuMemRelease)>("cuMemRelease", 12000);
    auto unbind = DriverEntry<decltype(&::cuMulticastUnbind)>("cuMulticastUnbind", 12010);
    if (!unmap.ok() || !free_va.ok() || !release.ok() || !unbind.ok()) return;
    cudaDeviceSynchronize();
    if (mc_mapped_) (*unmap)(mc_va_, bytes_);
    if (mc_va_ != 0) (*free_va)(mc_va_, bytes_);
    for (CUdevice dev : bound_) (*unbind)(mc_, dev, 0, bytes_);
    for (CUdeviceptr va : mapped_) (*unmap)(va, bytes_);
    for (CUdeviceptr va : unicast_) (*free_va)(va, bytes_);
    for (CUmemGenericAllocationHandle h : phys_) (*release)(h);
    if (have_mc_) (*release)(mc_);
  }

  std::vector<int> devices_;
  size_t bytes_ = 0;
  CUmemGenericAllocationHandle mc_ = 0;
  bool have_mc_ = false;
  std::vector<CUmemGenericAllocationHandle> phys_;
  std::vector<CUdeviceptr> unicast_, mapped_;
  std::vector<CUdevice> bound_;
  CUdeviceptr mc_va_ = 0;
  bool mc_mapped_ = false;
};

}  // namespace

absl::StatusOr<int> MulticastDeviceCount() {
  auto devices = MulticastDevices();
  if (!devices.ok()) return devices.status();
  return static_cast<int>(devices->size());
}

absl::StatusOr<MultimemRun> RunMultimem(size_t form,
                                        const std::vector<std::vector<uint8_t>>& replicas,
                                        absl::Span<const uint8_t> b) {
  if (form >= MultimemForms().size()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("form: expected an index below %d (MultimemForms()), got %d",
                        MultimemForms().size(), form));
  }
  auto instr = ParseMultimem(MultimemForms()[form]);
  if (!instr.ok()) return instr.status();
  const size_t access = static_cast<size_t>(instr->AccessBytes());
  if (replicas.empty()) {
    return absl::InvalidArgumentError(
        "replicas: expected at least one replica, got none");
  }
  const size_t bytes = replicas[0].size();
  for (size_t r = 0; r < replicas.size(); ++r) {
    if (replicas[r].size() != bytes || bytes % access != 0 || bytes == 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "replicas[%d]: expected a non-zero multiple of %d bytes equal to replicas[0] "
          "(%d bytes), got %d",
          r, access, bytes, replicas[r].size()));
    }
  }
  const bool stores = instr->kind != MultimemKind::kLdReduce;
  if (b.size() != (stores ? bytes : 0)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "b: expected %d bytes (%s), got %d", stores ? bytes : 0,
        stores ? "one operand per access" : "none for ld_reduce", b.size()));
  }
  absl::Status s =
      RequireArch(MultimemNeedsFp8Target(*instr) ? Arch::kSm100a : Arch::kSm90);
  if (!s.ok()) return s;
  auto devices = MulticastDevices();
  if (!devices.ok()) return devices.status();
  if (devices->size() != replicas.size()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("replicas: expected %d (one per multicast-capable GPU), got %d",
                        devices->size(), replicas.size()));
  }
  Multicast mc;
  s = mc.Create(*devices, bytes);
  if (!s.ok()) return s;
  for (size_t r = 0; r < replicas.size(); ++r) {
    s = FromCuda("cudaMemcpy(replica)",
                 cudaMemcpy(mc.replica(r), replicas[r].data(), bytes, cudaMemcpyDefault));
    if (!s.ok()) return s;
  }
  s = FromCuda("cudaSetDevice", cudaSetDevice((*devices)[0]));
  if (!s.ok()) return s;
  MultimemRun run;
  run.num_replicas = static_cast<int>(replicas.size());
  const internal::MultimemKind kind =
      instr->kind == MultimemKind::kLdReduce ? internal::MultimemKind::kLdReduce
      : instr->kind == MultimemKind::kSt     ? internal::MultimemKind::kSt
                                             : internal::MultimemKind::kRed;
  if (!stores) run.ld_result.resize(bytes);
  s = FromKernel(internal::RunMultimemKernel(static_cast<int>(form), kind,
                                             static_cast<int>(access), mc.multicast(),
                                             bytes / access, stores ? b.data() : nullptr,
                                             stores ? nullptr : run.ld_result.data()));
  if (!s.ok()) return s;
  if (stores) {
    run.replicas.resize(replicas.size());
    for (size_t r = 0; r < replicas.size(); ++r) {
      run.replicas[r].resize(bytes);
      s = FromCuda(
          "cudaMemcpy(replica back)",
          cudaMemcpy(run.replicas[r].data(), mc.replica(r), bytes, cudaMemcpyDefault));
      if (!s.ok()) return s;
    }
  }
  return run;
}

}  // namespace cuda
}  // namespace mxpack
