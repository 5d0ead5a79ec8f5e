// Shared device helpers of the CUDA backend's .cu files.
#ifndef MXPACK_SRC_CUDA_KERNELS_COMMON_CUH_
#define MXPACK_SRC_CUDA_KERNELS_COMMON_CUH_

#include <cuda_runtime.h>

#include <string>

// MXPACK_SM100A: this device pass targets sm_100a (tcgen05, fp4/fp6/ue8m0
// cvt, cvt.rs, fp8 multimem). MXPACK_SM90: compute capability >= 9.0 (the
// sm_90 pass and the sm_100a pass).
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM100_ALL)
#define MXPACK_SM100A 1
#else
#define MXPACK_SM100A 0
#endif
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define MXPACK_SM90 1
#else
#define MXPACK_SM90 0
#endif

// Keep `...` (a switch case) only in device passes that can assemble it.
#if MXPACK_SM100A
#define MXPACK_IF_kSm100a(...) __VA_ARGS__
#else
#define MXPACK_IF_kSm100a(...)
#endif
#if MXPACK_SM90
#define MXPACK_IF_kSm90(...) __VA_ARGS__
#else
#define MXPACK_IF_kSm90(...)
#endif

namespace mxpack {
namespace cuda {
namespace internal {

inline std::string CudaError(const char* what, cudaError_t e) {
  return std::string(what) + ": " + cudaGetErrorName(e) + " (" +
         cudaGetErrorString(e) + ")";
}

// Device buffer that frees itself.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (ptr_ != nullptr) cudaFree(ptr_);
  }
  cudaError_t Alloc(size_t bytes) { return cudaMalloc(&ptr_, bytes > 0 ? bytes : 1); }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }

 private:
  void* ptr_ = nullptr;
};

}  // namespace internal
}  // namespace cuda
}  // namespace mxpack

#define MXPACK_CUDA_TRY(what, expr)                                  \
  do {                                                               \
    const cudaError_t mxpack_err_ = (expr);                          \
    if (mxpack_err_ != cudaSuccess) return CudaError(what, mxpack_err_); \
  } while (0)

#endif  // MXPACK_SRC_CUDA_KERNELS_COMMON_CUH_
