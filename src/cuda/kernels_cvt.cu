// Kernel 2 of the CUDA backend: every cvt form of cvt_forms.inc, one PTX
// instruction per group of 2 (or 4) elements, grid-stride over the groups.
#include <cstdint>

#include "src/cuda/kernels.h"
#include "src/cuda/kernels_common.cuh"

namespace mxpack {
namespace cuda {
namespace internal {
namespace {

// Every row of cvt_forms.inc expands to nothing unless redefined.
#define F32X2(...)
#define F32X2_B8(...)
#define PACK_W2N(...)
#define PACK_N2W(...)
#define PACK_B8(...)
#define RS_F32X4(...)
#define RS_F32X4_B16(...)
#define RS_F32X2(...)

// d, a, b: a (element 2g+1) -> high half, b (element 2g) -> low half.
__global__ void CvtF32x2(int form, const float* in, uint32_t* out, size_t groups) {
  for (size_t g = blockIdx.x * size_t{blockDim.x} + threadIdx.x; g < groups;
       g += size_t{gridDim.x} * blockDim.x) {
    const float lo = in[2 * g], hi = in[2 * g + 1];
    (void)lo, (void)hi;  // Unused in passes without the forms.
    uint16_t d = 0;
    switch (form) {
#undef F32X2
#define F32X2(ID, PTX, from, to, rnd, sat, relu, width, arch) \
  MXPACK_IF_##arch(case ID: asm(PTX " %0, %1, %2;" : "=h"(d) : "f"(hi), "f"(lo)); break;)
#include "src/cuda/cvt_forms.inc"
#undef F32X2
#define F32X2(...)
      default: break;
    }
    out[g] = d;
  }
}

// e2m1x2 into a .b8 register, widened with mov.b16 {byte, 0}.
__global__ void CvtF32x2B8(int form, const float* in, uint32_t* out, size_t groups) {
  for (size_t g = blockIdx.x * size_t{blockDim.x} + threadIdx.x; g < groups;
       g += size_t{gridDim.x} * blockDim.x) {
    const float lo = in[2 * g], hi = in[2 * g + 1];
    (void)lo, (void)hi;  // Unused in passes without the forms.
    uint16_t d = 0;
    switch (form) {
#undef F32X2_B8
#define F32X2_B8(ID, PTX, from, to, rnd, sat, relu, width, arch)              \
  MXPACK_IF_##arch(case ID: asm("{\n\t.reg .b8 q;\n\t" PTX " q, %1, %2;\n\t" \
                                "mov.b16 %0, {q, 0};\n}"                     \
                                : "=h"(d)                                    \
                                : "f"(hi), "f"(lo));                         \
                   break;)
#include "src/cuda/cvt_forms.inc"
#undef F32X2_B8
#define F32X2_B8(...)
      default: break;
    }
    out[g] = d;
  }
}

// Packed source register -> packed destination register.
__global__ void CvtPacked(int form, const uint32_t* in, uint32_t* out, size_t groups) {
  for (size_t g = blockIdx.x * size_t{blockDim.x} + threadIdx.x; g < groups;
       g += size_t{gridDim.x} * blockDim.x) {
    const uint32_t a = in[g];
    uint32_t d = 0;
    switch (form) {
#undef PACK_W2N
#undef PACK_N2W
#undef PACK_B8
// .b32 source (f16x2 / bf16x2) -> .b16 destination.
#define PACK_W2N(ID, PTX, from, to, rnd, sat, relu, width, arch)               \
  MXPACK_IF_##arch(case ID: asm("{\n\t.reg .b16 q;\n\t" PTX " q, %1;\n\t"       \
                                "cvt.u32.u16 %0, q;\n}"                         \
                                : "=r"(d)                                       \
                                : "r"(a));                                      \
                   break;)
// .b16 source (two 8-bit codes) -> .b32 destination.
#define PACK_N2W(ID, PTX, from, to, rnd, sat, relu, width, arch)               \
  MXPACK_IF_##arch(case ID: asm("{\n\t.reg .b16 q;\n\t"                         \
                                "cvt.u16.u32 q, %1;\n\t" PTX " %0, q;\n}"       \
                                : "=r"(d)                                       \
                                : "r"(a));                                      \
                   break;)
// .b8 source (e2m1x2) -> .b32 destination.
#define PACK_B8(ID, PTX, from, to, rnd, sat, relu, width, arch)                \
  MXPACK_IF_##arch(case ID: asm("{\n\t.reg .b16 h;\n\t.reg .b8 q, z;\n\t"       \
                                "cvt.u16.u32 h, %1;\n\t"                        \
                                "mov.b16 {q, z}, h;\n\t" PTX " %0, q;\n}"       \
                                : "=r"(d)                                       \
                                : "r"(a));                                      \
                   break;)
#include "src/cuda/cvt_forms.inc"
#undef PACK_W2N
#undef PACK_N2W
#undef PACK_B8
#define PACK_W2N(...)
#define PACK_N2W(...)
#define PACK_B8(...)
      default: break;
    }
    out[g] = d;
  }
}

// cvt.rs: d, {a, b, e, f}, rbits with a = element 4g+3 ... f = element 4g
// (f lands in the lowest lane of d, like b of the two-input forms).
__global__ void CvtRsF32x4(int form, const float* in, const uint32_t* rbits,
                           uint32_t* out, size_t groups) {
  for (size_t g = blockIdx.x * size_t{blockDim.x} + threadIdx.x; g < groups;
       g += size_t{gridDim.x} * blockDim.x) {
    const float x0 = in[4 * g], x1 = in[4 * g + 1], x2 = in[4 * g + 2],
                x3 = in[4 * g + 3];
    const uint32_t r = rbits[g];
    (void)x0, (void)x1, (void)x2, (void)x3, (void)r;  // Unused without sm_100a.
    uint32_t d = 0;
    switch (form) {
#undef RS_F32X4
#undef RS_F32X4_B16
#define RS_F32X4(ID, PTX, from, to, rnd, sat, relu, width, arch)             \
  MXPACK_IF_##arch(case ID: asm(PTX " %0, {%1, %2, %3, %4}, %5;"              \
                                : "=r"(d)                                     \
                                : "f"(x3), "f"(x2), "f"(x1), "f"(x0), "r"(r)); \
                   break;)
#define RS_F32X4_B16(ID, PTX, from, to, rnd, sat, relu, width, arch)           \
  MXPACK_IF_##arch(case ID: {                                                   \
    uint16_t h;                                                                 \
    asm(PTX " %0, {%1, %2, %3, %4}, %5;"                                        \
        : "=h"(h)                                                               \
        : "f"(x3), "f"(x2), "f"(x1), "f"(x0), "r"(r));                          \
    d = h;                                                                      \
    break;                                                                      \
  })
#include "src/cuda/cvt_forms.inc"
#undef RS_F32X4
#undef RS_F32X4_B16
#define RS_F32X4(...)
#define RS_F32X4_B16(...)
      default: break;
    }
    out[g] = d;
  }
}

// cvt.rs to f16x2 / bf16x2: d, a, b, rbits (a = element 2g+1 -> high half).
__global__ void CvtRsF32x2(int form, const float* in, const uint32_t* rbits,
                           uint32_t* out, size_t groups) {
  for (size_t g = blockIdx.x * size_t{blockDim.x} + threadIdx.x; g < groups;
       g += size_t{gridDim.x} * blockDim.x) {
    const float lo = in[2 * g], hi = in[2 * g + 1];
    const uint32_t r = rbits[g];
    (void)lo, (void)hi, (void)r;  // Unused without sm_100a.
    uint32_t d = 0;
    switch (form) {
#undef RS_F32X2
#define RS_F32X2(ID, PTX, from, to, rnd, sat, relu, width, arch)   \
  MXPACK_IF_##arch(case ID: asm(PTX " %0, %1, %2, %3;"              \
                                : "=r"(d)                           \
                                : "f"(hi), "f"(lo), "r"(r));        \
                   break;)
#include "src/cuda/cvt_forms.inc"
#undef RS_F32X2
#define RS_F32X2(...)
      default: break;
    }
    out[g] = d;
  }
}

}  // namespace

std::string RunCvtKernel(int form, CvtKind kind, int width, const float* in_f32,
                         const uint32_t* in_packed, const uint32_t* rbits,
                         uint32_t* out, size_t groups) {
  if (groups == 0) return "";
  const bool f32_source = in_f32 != nullptr;
  const size_t in_bytes =
      f32_source ? groups * width * sizeof(float) : groups * sizeof(uint32_t);
  DeviceBuffer d_in, d_rbits, d_out;
  MXPACK_CUDA_TRY("cudaMalloc(input)", d_in.Alloc(in_bytes));
  MXPACK_CUDA_TRY("cudaMalloc(output)", d_out.Alloc(groups * sizeof(uint32_t)));
  MXPACK_CUDA_TRY("cudaMemcpy(input)",
                  cudaMemcpy(d_in.as<void>(),
                             f32_source ? static_cast<const void*>(in_f32) : in_packed,
                             in_bytes, cudaMemcpyHostToDevice));
  if (rbits != nullptr) {
    MXPACK_CUDA_TRY("cudaMalloc(rbits)", d_rbits.Alloc(groups * sizeof(uint32_t)));
    MXPACK_CUDA_TRY("cudaMemcpy(rbits)",
                    cudaMemcpy(d_rbits.as<void>(), rbits, groups * sizeof(uint32_t),
                               cudaMemcpyHostToDevice));
  }
  constexpr int kThreads = 256;
  const unsigned blocks = static_cast<unsigned>(
      groups / kThreads + 1 < 65536 ? groups / kThreads + 1 : 65536);
  switch (kind) {
    case CvtKind::kF32x2:
      CvtF32x2<<<blocks, kThreads>>>(form, d_in.as<float>(), d_out.as<uint32_t>(), groups);
      break;
    case CvtKind::kF32x2B8:
      CvtF32x2B8<<<blocks, kThreads>>>(form, d_in.as<float>(), d_out.as<uint32_t>(), groups);
      break;
    case CvtKind::kPackW2N:
    case CvtKind::kPackN2W:
    case CvtKind::kPackB8:
      CvtPacked<<<blocks, kThreads>>>(form, d_in.as<uint32_t>(), d_out.as<uint32_t>(),
                                      groups);
      break;
    case CvtKind::kRsF32x4:
    case CvtKind::kRsF32x4B16:
      CvtRsF32x4<<<blocks, kThreads>>>(form, d_in.as<float>(), d_rbits.as<uint32_t>(),
                                       d_out.as<uint32_t>(), groups);
      break;
    case CvtKind::kRsF32x2:
      CvtRsF32x2<<<blocks, kThreads>>>(form, d_in.as<float>(), d_rbits.as<uint32_t>(),
                                       d_out.as<uint32_t>(), groups);
      break;
  }
  MXPACK_CUDA_TRY("cvt kernel launch", cudaGetLastError());
  MXPACK_CUDA_TRY("cvt kernel", cudaDeviceSynchronize());
  MXPACK_CUDA_TRY("cudaMemcpy(output)",
                  cudaMemcpy(out, d_out.as<void>(), groups * sizeof(uint32_t),
                             cudaMemcpyDeviceToHost));
  return "";
}

}  // namespace internal
}  // namespace cuda
}  // namespace mxpack
