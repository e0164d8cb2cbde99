"""tfm_op: builds one op folder from its conventional files.

    ops/<op>/<op>.h                 definition and typed entry points
    ops/<op>/<op>.cc                OpDef, validation, registration
    ops/<op>/<op>_cpu.cc            CPU kernels
    ops/<op>/<op>_cuda.cu           CUDA kernels (only with CUDA)
    ops/<op>/<op>_cuda_*.cu         more CUDA kernels, when one file is not enough
    ops/<op>/<op>_cuda.h            plain C++ declarations of the launchers
    ops/<op>/<op>_cuda_*.cuh        device code shared by the .cu files
    ops/<op>/<op>_cuda_kernels.cc   registers the CUDA kernels (only with CUDA);
                                    launch errors through //ops:cuda_launch_status
    ops/<op>/<op>_kernel_args.h     attribute parsing shared by CPU and CUDA kernels
    ops/<op>/<op>_test.cc           tests: every device x dtype + gradients

Files that are absent are simply left out. The library is alwayslink so its
static registrars survive linking.

With per_isa_kernels, the CPU kernel files (every source whose name holds
"_cpu") are compiled once per instruction set (AVX2, AVX-512; see
ops/cpu_math/isa.h) into :<op>_cpu, registered with TFM_REGISTER_ISA_KERNEL,
and the test runs once per instruction set (:<op>_test_avx2,
:<op>_test_avx512; :<op>_test runs both).
"""

load("//third_party/cuda:cuda.bzl", "cuda_library")
load("//tools:build_defs.bzl", "tfm_cc_test", "tfm_isa_cc_library", "tfm_isa_test")

# Headers that .cu files may include (nvcc runs in a genrule that sees only
# the files it is given).
CUDA_COMMON_HDRS = [
    "//core:bit_rows.h",
    "//ops:cuda_column_sums.cuh",
    "//ops:cuda_row_reduce.cuh",
    "//core:env_setting.h",
    "//core:host_device.h",
    "//core:philox.h",
    "//core:device.h",
    "//ops:cuda_elementwise.cuh",
    "//ops:cuda_multi_tensor.cuh",
]

def tfm_op(name, deps = [], extra_srcs = [], cuda_deps = [], test_deps = [], test_data = [],
           test_size = "small", test_args = [], per_isa_kernels = False, cuda_hdrs = [],
           cuda_host_srcs = [], extra_hdrs = []):
    """Declares :<name> (the op), :<name>_cuda (when present) and :<name>_test.

    cuda_hdrs: more headers of the op that the CUDA host code includes (its
      parameter parsing, say); cuda_host_srcs: more host sources of the CUDA
      library, built only with CUDA; extra_hdrs: more public headers of the
      op (extra_srcs' headers are its own).
    """
    cuda_srcs = native.glob([name + "_cuda.cu", name + "_cuda_*.cu"])
    # Kernels made only of library calls (cuBLASLt GEMMs) need no .cu file.
    cuda_host_srcs = native.glob([name + "_cuda_kernels.cc"]) + cuda_host_srcs
    op_deps = deps + [
        "//core",
    ]
    if cuda_srcs or cuda_host_srcs:
        cuda_library(
            name = name + "_cuda",
            srcs = cuda_srcs,
            hdrs = native.glob([name + "_cuda.h", name + "_kernel_args.h"]) + cuda_hdrs,
            nvcc_hdrs = CUDA_COMMON_HDRS + native.glob([name + "_cuda_*.cuh"]),
            host_srcs = cuda_host_srcs,
            cuda_deps = cuda_deps,
            deps = ["//core", "//ops:cuda_launch_status"],
            alwayslink = True,
            # An op's CUDA kernels may launch another op's kernels (the
            # attention's gather of keys through key rows).
            visibility = ["//ops:__subpackages__"],
        )
        op_deps = op_deps + [":" + name + "_cuda"]
    srcs = native.glob([name + ".cc", name + "_cpu.cc"]) + extra_srcs
    hdrs = native.glob([name + ".h", name + "_kernel_args.h"]) + extra_hdrs
    if per_isa_kernels:
        tfm_isa_cc_library(
            name = name + "_cpu",
            srcs = [src for src in srcs if "_cpu" in src or src.endswith(".h")] + hdrs,
            deps = op_deps + ["//ops/cpu_math:isa_dispatch"],
            alwayslink = True,
        )
        srcs = [src for src in srcs if "_cpu" not in src]
        op_deps = op_deps + [":" + name + "_cpu"]
    native.cc_library(
        name = name,
        srcs = srcs,
        hdrs = hdrs,
        deps = op_deps,
        alwayslink = True,
        visibility = ["//visibility:public"],
    )
    if native.glob([name + "_test.cc"]):
        test_rule = tfm_isa_test if per_isa_kernels else tfm_cc_test
        test_rule(
            name = name + "_test",
            srcs = [name + "_test.cc"],
            deps = [":" + name] + test_deps,
            data = test_data,
            size = test_size,
            args = test_args,
        )
