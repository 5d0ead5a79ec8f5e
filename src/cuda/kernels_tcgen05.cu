// Kernel 1 of the CUDA backend: the tensor-memory round trip. One CTA of
// four warps: tcgen05.alloc (all 512 columns) -> tcgen05.st fill ->
// shared-memory tile (plain loads) -> tcgen05.cp (tmem_forms.inc) ->
// optional tcgen05.shift.down -> tcgen05.ld -> global memory ->
// tcgen05.dealloc, with tcgen05.commit + mbarrier waits for the
// asynchronous cp / shift and tcgen05.wait::ld / ::st for ld / st. Two
// more kernels check the tcgen05.ld / tcgen05.st register fragments.
#include <cstdint>

#include "src/cuda/kernels.h"
#include "src/cuda/kernels_common.cuh"

namespace mxpack {
namespace cuda {
namespace internal {
namespace {

constexpr int kThreads = 128;  // Four warps: warp w owns lanes 32w .. 32w+31.
constexpr uint32_t kColumns = 512;

#if MXPACK_SM100A

__device__ __forceinline__ uint32_t SmemAddress(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void FenceBeforeSync() {
  asm volatile("tcgen05.fence::before_thread_sync;" ::: "memory");
}
__device__ __forceinline__ void FenceAfterSync() {
  asm volatile("tcgen05.fence::after_thread_sync;" ::: "memory");
}
// Orders all threads' tcgen05 operations before everything after it.
__device__ __forceinline__ void TcgenSync() {
  FenceBeforeSync();
  __syncthreads();
  FenceAfterSync();
}

// Warp 0 allocates all columns; the address lands in *slot.
__device__ void Alloc(uint32_t* slot) {
  if (threadIdx.x / 32 == 0) {
    asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], %1;"
                 ::"r"(SmemAddress(slot)), "r"(kColumns) : "memory");
    asm volatile("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;" ::: "memory");
  }
}
__device__ void Dealloc(uint32_t taddr) {
  TcgenSync();
  if (threadIdx.x / 32 == 0) {
    asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, %1;"
                 ::"r"(taddr), "r"(kColumns) : "memory");
  }
}

__device__ void MbarrierInit(uint64_t* bar) {
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(SmemAddress(bar)) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
}
// Thread 0 makes the mbarrier track completion of its earlier tcgen05.cp /
// tcgen05.shift; every thread waits for phase `parity` to complete.
__device__ void CommitAndWait(uint64_t* bar, uint32_t parity) {
  if (threadIdx.x == 0) {
    asm volatile(
        "tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%0];"
        ::"r"(SmemAddress(bar)) : "memory");
  }
  uint32_t done = 0;
  while (!done) {
    asm volatile(
        "{\n\t.reg .pred p;\n\t"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
        "selp.u32 %0, 1, 0, p;\n}"
        : "=r"(done) : "r"(SmemAddress(bar)), "r"(parity) : "memory");
  }
  FenceAfterSync();
}

// Every cell of the warp's 32 lanes := value(lane, column), 8 columns at a
// time with tcgen05.st.32x32b.x8 (thread t writes lane 32w + t).
template <typename ValueFn>
__device__ void FillTmem(uint32_t base, ValueFn value) {
  const uint32_t warp = threadIdx.x / 32, t = threadIdx.x % 32;
  const uint32_t lane = 32 * warp + t;
  for (uint32_t c = 0; c < kColumns; c += 8) {
    uint32_t v[8];
    for (int j = 0; j < 8; ++j) v[j] = value(lane, c + j);
    asm volatile(
        "tcgen05.st.sync.aligned.32x32b.x8.b32 [%0], {%1, %2, %3, %4, %5, %6, %7, %8};"
        ::"r"(base + ((32 * warp) << 16) + c), "r"(v[0]), "r"(v[1]), "r"(v[2]),
        "r"(v[3]), "r"(v[4]), "r"(v[5]), "r"(v[6]), "r"(v[7]) : "memory");
  }
  asm volatile("tcgen05.wait::st.sync.aligned;" ::: "memory");
}

// Allocates TMEM into *taddr_slot (shared) and fills it with FragmentPattern
// (mxpack/cuda.h, restated for the device): the start of the ld/st kernels.
// Returns the base address.
__device__ uint32_t AllocFragmentPatternTmem(uint32_t* taddr_slot) {
  Alloc(taddr_slot);
  TcgenSync();
  const uint32_t base = *taddr_slot;
  FillTmem(base, [](uint32_t lane, uint32_t col) {
    return ((0xC0DEu ^ lane) << 16) | (lane * 512u + col);
  });
  TcgenSync();
  return base;
}

// All 128 x 512 cells -> out[lane * 512 + column] (tcgen05.ld.32x32b.x8).
__device__ void ReadTmem(uint32_t base, uint32_t* out) {
  const uint32_t warp = threadIdx.x / 32, t = threadIdx.x % 32;
  const uint32_t lane = 32 * warp + t;
  for (uint32_t c = 0; c < kColumns; c += 8) {
    uint32_t v[8];
    asm volatile(
        "tcgen05.ld.sync.aligned.32x32b.x8.b32 {%0, %1, %2, %3, %4, %5, %6, %7}, [%8];"
        : "=r"(v[0]), "=r"(v[1]), "=r"(v[2]), "=r"(v[3]), "=r"(v[4]), "=r"(v[5]),
          "=r"(v[6]), "=r"(v[7])
        : "r"(base + ((32 * warp) << 16) + c) : "memory");
    asm volatile("tcgen05.wait::ld.sync.aligned;" ::: "memory");
    for (int j = 0; j < 8; ++j) out[lane * kColumns + c + j] = v[j];
  }
}

__device__ void IssueCp(int form, uint32_t taddr, uint64_t desc) {
  switch (form) {
#define CP(ID, PTX) \
  case ID:          \
    asm volatile(PTX " [%0], %1;" ::"r"(taddr), "l"(desc) : "memory"); \
    break;
#include "src/cuda/tmem_forms.inc"
#undef CP
    default: break;
  }
}

#endif  // MXPACK_SM100A

__global__ void __launch_bounds__(kThreads)
    TmemCpKernel(int cp_form, const uint8_t* image, uint32_t image_bytes,
                 uint64_t desc, uint32_t cp_taddr, int shift, uint32_t shift_taddr,
                 uint32_t fill, uint32_t* cells) {
#if MXPACK_SM100A
  extern __shared__ uint8_t dynamic_smem[];
  __shared__ uint32_t taddr_slot;
  __shared__ uint64_t bar;
  // The descriptor and the host model address shared memory from the tile
  // start; aligning it to 1024 bytes keeps the swizzle patterns (address
  // bits [9:4]) identical.
  const uint32_t raw = SmemAddress(dynamic_smem);
  uint8_t* tile = dynamic_smem + ((1024 - (raw & 1023)) & 1023);
  for (uint32_t i = threadIdx.x; i < image_bytes; i += kThreads) tile[i] = image[i];
  Alloc(&taddr_slot);
  MbarrierInit(&bar);
  // Generic-proxy smem writes must be visible to tcgen05.cp (async proxy).
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  TcgenSync();
  const uint32_t base = taddr_slot;
  FillTmem(base, [fill](uint32_t, uint32_t) { return fill; });
  TcgenSync();
  // Relocate the descriptor's start address (bits [13:0], >> 4) to the tile.
  const uint64_t start = ((desc & 0x3FFF) + (SmemAddress(tile) >> 4)) & 0x3FFF;
  const uint64_t dev_desc = (desc & ~uint64_t{0x3FFF}) | start;
  if (threadIdx.x == 0) IssueCp(cp_form, base + cp_taddr, dev_desc);
  CommitAndWait(&bar, 0);
  if (shift) {
    if (threadIdx.x == 0) {
      asm volatile("tcgen05.shift.cta_group::1.down [%0];" ::"r"(base + shift_taddr)
                   : "memory");
    }
    CommitAndWait(&bar, 1);
  }
  ReadTmem(base, cells);
  Dealloc(base);
#else
  (void)cp_form, (void)image, (void)image_bytes, (void)desc, (void)cp_taddr;
  (void)shift, (void)shift_taddr, (void)fill, (void)cells;
  __trap();
#endif
}

// Fills TMEM with FragmentPattern (mxpack/cuda.h), then every warp issues
// the ld form at its lane quadrant, column `column`.
__global__ void __launch_bounds__(kThreads)
    TmemLdKernel(int ld_form, int nregs, uint32_t column, uint32_t* regs) {
#if MXPACK_SM100A
  __shared__ uint32_t taddr_slot;
  const uint32_t base = AllocFragmentPatternTmem(&taddr_slot);
  const uint32_t warp = threadIdx.x / 32, t = threadIdx.x % 32;
  const uint32_t taddr = base + ((32 * warp) << 16) + column;
  uint32_t v[4] = {0, 0, 0, 0};
  switch (ld_form) {
#define LD2(ID, PTX)                                                   \
  case ID:                                                             \
    asm volatile(PTX " {%0, %1}, [%2];"                                \
                 : "=r"(v[0]), "=r"(v[1]) : "r"(taddr) : "memory");    \
    break;
#define LD2H(ID, PTX)                                                  \
  case ID:                                                             \
    asm volatile(PTX " {%0, %1}, [%2], 8;"                             \
                 : "=r"(v[0]), "=r"(v[1]) : "r"(taddr) : "memory");    \
    break;
#define LD4(ID, PTX)                                                   \
  case ID:                                                             \
    asm volatile(PTX " {%0, %1, %2, %3}, [%4];"                        \
                 : "=r"(v[0]), "=r"(v[1]), "=r"(v[2]), "=r"(v[3])      \
                 : "r"(taddr) : "memory");                             \
    break;
#include "src/cuda/tmem_ld_forms.inc"
#undef LD2
#undef LD2H
#undef LD4
    default: break;
  }
  asm volatile("tcgen05.wait::ld.sync.aligned;" ::: "memory");
  for (int j = 0; j < nregs && j < 4; ++j) regs[(warp * 32 + t) * nregs + j] = v[j];
  Dealloc(base);
#else
  (void)ld_form, (void)nregs, (void)column, (void)regs;
  __trap();
#endif
}

// Fills TMEM with FragmentPattern, then every warp stores StPattern
// registers with the st form at its lane quadrant, column `column`, and the
// whole TMEM is read back.
__global__ void __launch_bounds__(kThreads)
    TmemStKernel(int st_form, uint32_t column, uint32_t* cells) {
#if MXPACK_SM100A
  __shared__ uint32_t taddr_slot;
  const uint32_t base = AllocFragmentPatternTmem(&taddr_slot);
  const uint32_t warp = threadIdx.x / 32, t = threadIdx.x % 32;
  const uint32_t taddr = base + ((32 * warp) << 16) + column;
  uint32_t v[4];
  for (uint32_t j = 0; j < 4; ++j) {
    const uint32_t lo = ((warp * 32 + t) * 4 + j) * 2;
    v[j] = ((lo + 1) | 0x4000u) << 16 | lo;
  }
  switch (st_form) {
#define ST2(ID, PTX)                                                        \
  case ID:                                                                  \
    asm volatile(PTX " [%0], {%1, %2};" ::"r"(taddr), "r"(v[0]), "r"(v[1])  \
                 : "memory");                                               \
    break;
#define ST2H(ID, PTX)                                                       \
  case ID:                                                                  \
    asm volatile(PTX " [%0], 8, {%1, %2};" ::"r"(taddr), "r"(v[0]),         \
                 "r"(v[1]) : "memory");                                     \
    break;
#define ST4(ID, PTX)                                                        \
  case ID:                                                                  \
    asm volatile(PTX " [%0], {%1, %2, %3, %4};" ::"r"(taddr), "r"(v[0]),    \
                 "r"(v[1]), "r"(v[2]), "r"(v[3]) : "memory");               \
    break;
#include "src/cuda/tmem_st_forms.inc"
#undef ST2
#undef ST2H
#undef ST4
    default: break;
  }
  asm volatile("tcgen05.wait::st.sync.aligned;" ::: "memory");
  TcgenSync();
  ReadTmem(base, cells);
  Dealloc(base);
#else
  (void)st_form, (void)column, (void)cells;
  __trap();
#endif
}

}  // namespace

std::string RunTmemCpKernel(int cp_form, const uint8_t* image, size_t image_bytes,
                            uint64_t desc, uint32_t cp_taddr, bool shift,
                            uint32_t shift_taddr, uint32_t fill,
                            size_t max_dynamic_smem, uint32_t* cells_out) {
  const size_t cells_bytes = size_t{128} * kColumns * sizeof(uint32_t);
  const size_t smem_bytes = image_bytes + 1024;
  if (smem_bytes > max_dynamic_smem) {
    return "shared-memory image of " + std::to_string(image_bytes) +
           " bytes exceeds the device limit";
  }
  DeviceBuffer d_image, d_cells;
  MXPACK_CUDA_TRY("cudaMalloc(image)", d_image.Alloc(image_bytes));
  MXPACK_CUDA_TRY("cudaMalloc(cells)", d_cells.Alloc(cells_bytes));
  MXPACK_CUDA_TRY("cudaMemcpy(image)", cudaMemcpy(d_image.as<void>(), image, image_bytes,
                                                  cudaMemcpyHostToDevice));
  MXPACK_CUDA_TRY("cudaFuncSetAttribute",
                  cudaFuncSetAttribute(TmemCpKernel,
                                       cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       static_cast<int>(smem_bytes)));
  TmemCpKernel<<<1, kThreads, smem_bytes>>>(
      cp_form, d_image.as<uint8_t>(), static_cast<uint32_t>(image_bytes), desc, cp_taddr,
      shift ? 1 : 0, shift_taddr, fill, d_cells.as<uint32_t>());
  MXPACK_CUDA_TRY("tcgen05.cp kernel launch", cudaGetLastError());
  MXPACK_CUDA_TRY("tcgen05.cp kernel", cudaDeviceSynchronize());
  MXPACK_CUDA_TRY("cudaMemcpy(cells)", cudaMemcpy(cells_out, d_cells.as<void>(),
                                                  cells_bytes, cudaMemcpyDeviceToHost));
  return "";
}

std::string RunTmemLdKernel(int ld_form, int nregs, int column, uint32_t* regs_out) {
  const size_t bytes = size_t{kThreads} * nregs * sizeof(uint32_t);
  DeviceBuffer d_regs;
  MXPACK_CUDA_TRY("cudaMalloc(regs)", d_regs.Alloc(bytes));
  TmemLdKernel<<<1, kThreads>>>(ld_form, nregs, static_cast<uint32_t>(column),
                                d_regs.as<uint32_t>());
  MXPACK_CUDA_TRY("tcgen05.ld kernel launch", cudaGetLastError());
  MXPACK_CUDA_TRY("tcgen05.ld kernel", cudaDeviceSynchronize());
  MXPACK_CUDA_TRY("cudaMemcpy(regs)",
                  cudaMemcpy(regs_out, d_regs.as<void>(), bytes, cudaMemcpyDeviceToHost));
  return "";
}

std::string RunTmemStKernel(int st_form, int column, uint32_t* cells_out) {
  const size_t bytes = size_t{128} * kColumns * sizeof(uint32_t);
  DeviceBuffer d_cells;
  MXPACK_CUDA_TRY("cudaMalloc(cells)", d_cells.Alloc(bytes));
  TmemStKernel<<<1, kThreads>>>(st_form, static_cast<uint32_t>(column),
                                d_cells.as<uint32_t>());
  MXPACK_CUDA_TRY("tcgen05.st kernel launch", cudaGetLastError());
  MXPACK_CUDA_TRY("tcgen05.st kernel", cudaDeviceSynchronize());
  MXPACK_CUDA_TRY("cudaMemcpy(cells)",
                  cudaMemcpy(cells_out, d_cells.as<void>(), bytes, cudaMemcpyDeviceToHost));
  return "";
}

}  // namespace internal
}  // namespace cuda
}  // namespace mxpack
