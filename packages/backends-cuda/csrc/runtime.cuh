// runtime.cuh: the one place the backend names its GPU runtime.
//
// The default build compiles csrc/*.cu with nvcc against CUDA. With
// LAMINA_CUDA_EMULATE (CMake option of the same name) the same files are
// compiled as C++ by the host compiler against HIP-CPU, a header-only HIP
// runtime that runs a grid on CPU threads and a block's threads as fibers, so
// every kernel can be executed and checked on a machine without a GPU. This
// header maps the CUDA names the backend uses onto HIP-CPU's and defines
// launch_kernel, through which every kernel launch goes: the triple-chevron
// launch under nvcc, hipLaunchKernelGGL under emulation. One source, two
// compilers. docs/guides/cuda-testing.md says what emulation can and cannot catch.
#pragma once

#ifndef LAMINA_CUDA_EMULATE
#include <cuda_runtime.h>
#else
#include <hip/hip_runtime.h>

#include <cmath>
#include <cstdint>

// HIP-CPU marks kernels `flatten, simd` and device functions `simd`: that
// multiplies compile time for no benefit to a correctness build.
#undef __global__
#define __global__
#undef __device__
#define __device__
#define __align__(n) __attribute__((aligned(n)))

using cudaError_t = hipError_t;
using cudaStream_t = hipStream_t;
#define cudaSuccess hipSuccess
#define cudaErrorMemoryAllocation hipErrorOutOfMemory
#define cudaMemcpyDeviceToDevice hipMemcpyDeviceToDevice
#define cudaMemcpyDeviceToHost hipMemcpyDeviceToHost
#define cudaMemcpyHostToDevice hipMemcpyHostToDevice
#define cudaStreamNonBlocking hipStreamNonBlocking
#define cudaFree hipFree
#define cudaGetDevice hipGetDevice
#define cudaGetDeviceCount hipGetDeviceCount
#define cudaGetErrorName hipGetErrorName
#define cudaGetErrorString hipGetErrorString
#define cudaGetLastError hipGetLastError
#define cudaMalloc hipMalloc
#define cudaMemsetAsync hipMemsetAsync
#define cudaSetDevice hipSetDevice
#define cudaStreamCreateWithFlags hipStreamCreateWithFlags
#define cudaStreamSynchronize hipStreamSynchronize

// CUDA's cudaMemcpyAsync between the device and pageable host memory (all
// the backend uses) has consumed the host buffer when it returns, so callers
// may free it at once; HIP-CPU would read it later on its stream's thread.
inline cudaError_t cudaMemcpyAsync(void* dst, const void* src, std::size_t bytes,
                                   hipMemcpyKind kind, cudaStream_t stream) {
  const cudaError_t err = hipMemcpyAsync(dst, src, bytes, kind, stream);
  if (err != hipSuccess || kind == hipMemcpyDeviceToDevice) return err;
  return hipStreamSynchronize(stream);
}

// HIP-CPU has no hipDeviceGetAttribute; the one attribute used is read from
// the device properties (HIP-CPU reports the CPU's cores as multiprocessors).
enum cudaDeviceAttr { cudaDevAttrMultiProcessorCount };
inline cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr, int device) {
  hipDeviceProp_t props{};
  const cudaError_t err = hipGetDeviceProperties(&props, device);
  if (err == hipSuccess) *value = props.multiProcessorCount;
  return err;
}

// The kernels' warps are 32 threads by their own layout (lane = tid % 32,
// xor masks below 32); HIP-CPU's warpSize is 64, so the width is given
// explicitly. HIP-CPU builds shuffles on block-wide barriers: every thread of
// the block must reach them the same number of times (docs/guides/cuda-testing.md).
template <class T>
inline T __shfl_xor_sync(unsigned /*mask*/, T v, int lane_mask) {
  return __shfl_xor(v, lane_mask, 32);
}

// Device code calls the maths functions unqualified, as CUDA allows.
using std::isfinite;
#endif

namespace lamina_cuda {

// True in the HIP-CPU build (python: _core.emulated()).
#ifdef LAMINA_CUDA_EMULATE
constexpr bool kEmulated = true;
#else
constexpr bool kEmulated = false;
#endif

// Whether host memory at p is page-locked (cudaHostRegister'ed, by an MPI
// library say): a copy from it is truly asynchronous, where the runtime stages
// a pageable source before cudaMemcpyAsync returns. HIP-CPU's host copies are
// synchronous (cudaMemcpyAsync above), so there the answer never matters.
inline bool page_locked(const void* p) {
#ifdef LAMINA_CUDA_EMULATE
  (void)p;
  return false;
#else
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, p) != cudaSuccess) {
    cudaGetLastError();  // not a pointer the runtime knows: pageable; clear the error
    return false;
  }
  return attr.type == cudaMemoryTypeHost;
#endif
}

#if defined(__CUDACC__) || defined(LAMINA_CUDA_EMULATE)
// Queues kernel(args...) on stream with grid x block threads and shmem bytes of
// dynamic shared memory. Arguments are converted to the kernel's parameter
// types here, so both launch paths pass exactly the same values.
template <class... Params, class... Args>
void launch_kernel(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t shmem,
                   cudaStream_t stream, Args&&... args) {
  static_assert(sizeof...(Params) == sizeof...(Args), "launch_kernel: argument count");
#ifdef LAMINA_CUDA_EMULATE
  hipLaunchKernelGGL(kernel, grid, block, shmem, stream, static_cast<Params>(args)...);
#else
  kernel<<<grid, block, shmem, stream>>>(static_cast<Params>(args)...);
#endif
}
#endif

}  // namespace lamina_cuda
