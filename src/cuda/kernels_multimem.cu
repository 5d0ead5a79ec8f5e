// Kernel 3 of the CUDA backend: multimem.ld_reduce / st / red of
// multimem_forms.inc on a multicast address (one 32- or 64-bit access per
// thread at byte offset i * access_bytes).
#include <cstdint>

#include "src/cuda/kernels.h"
#include "src/cuda/kernels_common.cuh"

namespace mxpack {
namespace cuda {
namespace internal {
namespace {

#define LDR32(...)
#define LDR32V2(...)
#define LDR32V4(...)
#define LDR64(...)
#define ST32(...)
#define ST32V2(...)
#define ST32V4(...)
#define ST64(...)
#define RED32(...)
#define RED32V2(...)
#define RED32V4(...)
#define RED64(...)

// Vector forms move through .v2 of .b16 / .v4 of .b8 registers; element 0
// (lowest address) is the lowest half / byte of the .b32.
#define MXPACK_V2_REGS ".reg .b16 h<2>;\n\t"
#define MXPACK_V4_REGS ".reg .b8 h<4>;\n\t"
#define MXPACK_V2_LIST "{h0, h1}"
#define MXPACK_V4_LIST "{h0, h1, h2, h3}"

__global__ void LdReduceKernel(int form, uint8_t* mc, size_t count, uint8_t* result) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < count;
       i += size_t{gridDim.x} * blockDim.x) {
    uint32_t* r32 = reinterpret_cast<uint32_t*>(result) + i;
    unsigned long long* r64 = reinterpret_cast<unsigned long long*>(result) + i;
    const uint32_t* a32 = reinterpret_cast<const uint32_t*>(mc) + i;
    const unsigned long long* a64 = reinterpret_cast<const unsigned long long*>(mc) + i;
    (void)r32, (void)r64, (void)a32, (void)a64;
    switch (form) {
#undef LDR32
#undef LDR32V2
#undef LDR32V4
#undef LDR64
#define MXPACK_LDR_VEC(ID, PTX, arch, V)                                      \
  MXPACK_IF_##arch(case ID: {                                                   \
    uint32_t d;                                                                 \
    asm volatile("{\n\t" MXPACK_##V##_REGS PTX " " MXPACK_##V##_LIST           \
                 ", [%1];\n\tmov.b32 %0, " MXPACK_##V##_LIST ";\n}"             \
                 : "=r"(d) : "l"(a32) : "memory");                              \
    *r32 = d;                                                                   \
    break;                                                                      \
  })
#define LDR32V2(ID, PTX, arch) MXPACK_LDR_VEC(ID, PTX, arch, V2)
#define LDR32V4(ID, PTX, arch) MXPACK_LDR_VEC(ID, PTX, arch, V4)
#define LDR32(ID, PTX, arch)                                                   \
  MXPACK_IF_##arch(case ID: {                                                   \
    uint32_t d;                                                                 \
    asm volatile(PTX " %0, [%1];" : "=r"(d) : "l"(a32) : "memory");             \
    *r32 = d;                                                                   \
    break;                                                                      \
  })
#define LDR64(ID, PTX, arch)                                                   \
  MXPACK_IF_##arch(case ID: {                                                   \
    unsigned long long d;                                                       \
    asm volatile(PTX " %0, [%1];" : "=l"(d) : "l"(a64) : "memory");             \
    *r64 = d;                                                                   \
    break;                                                                      \
  })
#include "src/cuda/multimem_forms.inc"
#undef LDR32
#undef LDR32V2
#undef LDR32V4
#undef LDR64
#define LDR32(...)
#define LDR32V2(...)
#define LDR32V4(...)
#define LDR64(...)
      default: break;
    }
  }
}

// st and red: [a], b with b from `b`.
__global__ void StoreKernel(int form, uint8_t* mc, size_t count, const uint8_t* b) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < count;
       i += size_t{gridDim.x} * blockDim.x) {
    // In bounds for both access sizes (b holds count * access_bytes bytes).
    const uint32_t b32 = reinterpret_cast<const uint32_t*>(b)[i];
    uint32_t* a32 = reinterpret_cast<uint32_t*>(mc) + i;
    unsigned long long* a64 = reinterpret_cast<unsigned long long*>(mc) + i;
    (void)b32, (void)a32, (void)a64;
    switch (form) {
#undef ST32
#undef ST32V2
#undef ST32V4
#undef ST64
#undef RED32
#undef RED32V2
#undef RED32V4
#undef RED64
#define ST32(ID, PTX, arch)                                                    \
  MXPACK_IF_##arch(case ID:                                                     \
    asm volatile(PTX " [%0], %1;" ::"l"(a32), "r"(b32) : "memory");             \
    break;)
#define ST64(ID, PTX, arch)                                                    \
  MXPACK_IF_##arch(case ID:                                                     \
    asm volatile(PTX " [%0], %1;" ::"l"(a64),                                   \
                 "l"(reinterpret_cast<const unsigned long long*>(b)[i])        \
                 : "memory");                                                   \
    break;)
#define MXPACK_ST_VEC(ID, PTX, arch, V)                                       \
  MXPACK_IF_##arch(case ID:                                                     \
    asm volatile("{\n\t" MXPACK_##V##_REGS "mov.b32 " MXPACK_##V##_LIST        \
                 ", %1;\n\t" PTX " [%0], " MXPACK_##V##_LIST ";\n}"             \
                 ::"l"(a32), "r"(b32) : "memory");                              \
    break;)
#define ST32V2(ID, PTX, arch) MXPACK_ST_VEC(ID, PTX, arch, V2)
#define ST32V4(ID, PTX, arch) MXPACK_ST_VEC(ID, PTX, arch, V4)
#define RED32(ID, PTX, arch) ST32(ID, PTX, arch)
#define RED32V2(ID, PTX, arch) MXPACK_ST_VEC(ID, PTX, arch, V2)
#define RED32V4(ID, PTX, arch) MXPACK_ST_VEC(ID, PTX, arch, V4)
#define RED64(ID, PTX, arch) ST64(ID, PTX, arch)
#include "src/cuda/multimem_forms.inc"
      default: break;
    }
  }
}

}  // namespace

std::string RunMultimemKernel(int form, MultimemKind kind, int access_bytes, void* mc,
                              size_t count, const uint8_t* b, uint8_t* result) {
  if (count == 0) return "";
  const size_t bytes = count * static_cast<size_t>(access_bytes);
  constexpr int kThreads = 256;
  const unsigned blocks = static_cast<unsigned>(
      count / kThreads + 1 < 4096 ? count / kThreads + 1 : 4096);
  DeviceBuffer d_io;
  MXPACK_CUDA_TRY("cudaMalloc(operand)", d_io.Alloc(bytes));
  if (kind == MultimemKind::kLdReduce) {
    LdReduceKernel<<<blocks, kThreads>>>(form, static_cast<uint8_t*>(mc), count,
                                         d_io.as<uint8_t>());
  } else {
    MXPACK_CUDA_TRY("cudaMemcpy(operand)",
                    cudaMemcpy(d_io.as<void>(), b, bytes, cudaMemcpyHostToDevice));
    StoreKernel<<<blocks, kThreads>>>(form, static_cast<uint8_t*>(mc), count,
                                      d_io.as<uint8_t>());
  }
  MXPACK_CUDA_TRY("multimem kernel launch", cudaGetLastError());
  MXPACK_CUDA_TRY("multimem kernel", cudaDeviceSynchronize());
  if (kind == MultimemKind::kLdReduce) {
    MXPACK_CUDA_TRY("cudaMemcpy(result)",
                    cudaMemcpy(result, d_io.as<void>(), bytes, cudaMemcpyDeviceToHost));
  }
  return "";
}

}  // namespace internal
}  // namespace cuda
}  // namespace mxpack
