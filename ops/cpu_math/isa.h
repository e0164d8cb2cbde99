// Kernel code compiled once per instruction set, in one source.
//
// tfm_op (ops/op.bzl) compiles every CPU kernel file twice, with
// -DTFM_KERNEL_ISA_AVX2 and with -DTFM_KERNEL_ISA_AVX512. The file includes
// its headers first, then puts its code between TFM_ISA_BEGIN and
// TFM_ISA_END, which
//   - switch GCC's code generation to the instruction set for the code in
//     between (#pragma GCC target), and
//   - open namespace tfm::avx2 or tfm::avx512, so the two copies of every
//     function, inline ones included, have different names.
//
// Why a pragma rather than -mavx512f on the whole file: with per-file flags,
// the file's out-of-line copies of library templates (std::vector, absl,
// ...) are compiled for AVX-512 too, and the linker may keep that copy for
// the whole binary, which then dies with SIGILL on a CPU without AVX-512.
// Code outside the region (everything the headers above it define) stays
// baseline x86-64. For the same reason nothing inside the region may run
// before dispatch: no static objects with constructors in it.
//
// The CPU-kernel helper headers (vec.h, simd_math.h, ...) open their own
// region, so they are included like any header.
#ifndef TFM_OPS_CPU_MATH_ISA_H_
#define TFM_OPS_CPU_MATH_ISA_H_

#if defined(TFM_KERNEL_ISA_AVX512)
// x86-64-v4: AVX-512 F/BW/DQ/VL on top of x86-64-v3. 512-bit vectors for
// loops the compiler vectorises itself too (GCC's default prefers 256).
#define TFM_ISA_NAMESPACE avx512
// (_Pragma takes one string literal, hence the long line.)
#define TFM_ISA_PUSH_TARGET       \
  _Pragma("GCC push_options")     \
  _Pragma("GCC target(\"avx2,fma,f16c,bmi,bmi2,lzcnt,avx512f,avx512bw,avx512dq,avx512vl,prefer-vector-width=512\")")
#elif defined(TFM_KERNEL_ISA_AVX2)
// x86-64-v3: AVX2, FMA, F16C (every x86 server since 2013).
#define TFM_ISA_NAMESPACE avx2
#define TFM_ISA_PUSH_TARGET \
  _Pragma("GCC push_options") _Pragma("GCC target(\"avx2,fma,f16c,bmi,bmi2,lzcnt\")")
#else
#error "CPU kernel code is compiled per instruction set: build it with tfm_op (ops/op.bzl)"
#endif

#define TFM_ISA_BEGIN \
  TFM_ISA_PUSH_TARGET namespace tfm {  \
  namespace TFM_ISA_NAMESPACE {

#define TFM_ISA_END \
  }                 \
  }                 \
  _Pragma("GCC pop_options")

// "avx2" / "avx512": the instruction set this copy of the code is for.
#define TFM_ISA_STRINGIFY_(x) #x
#define TFM_ISA_STRINGIFY(x) TFM_ISA_STRINGIFY_(x)
#define TFM_ISA_NAME TFM_ISA_STRINGIFY(TFM_ISA_NAMESPACE)

#endif  // TFM_OPS_CPU_MATH_ISA_H_
