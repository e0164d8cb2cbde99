// TFM_HOST_DEVICE marks a function that both the host compiler and nvcc
// compile: arithmetic that a CPU kernel and a CUDA kernel share, so that
// both compute it the same way (Philox, the loss scale's step, Adam's clip
// factor). __host__ __device__ under nvcc, inline elsewhere.
#ifndef TFM_CORE_HOST_DEVICE_H_
#define TFM_CORE_HOST_DEVICE_H_

#if defined(__CUDACC__)
#define TFM_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define TFM_HOST_DEVICE inline
#endif

#endif  // TFM_CORE_HOST_DEVICE_H_
