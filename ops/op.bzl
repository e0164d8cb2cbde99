"""tfm_op: builds one op folder from its conventional files.

    ops/<op>/<op>.h                 definition and typed entry points
    ops/<op>/<op>.cc                OpDef, validation, registration
    ops/<op>/<op>_cpu.cc            CPU kernels
    ops/<op>/<op>_cuda.cu           CUDA kernels (only with CUDA)
    ops/<op>/<op>_cuda.h            plain C++ declarations of the launchers
    ops/<op>/<op>_cuda_kernels.cc   registers the CUDA kernels (only with CUDA)
    ops/<op>/<op>_kernel_args.h     attribute parsing shared by CPU and CUDA kernels
    ops/<op>/<op>_test.cc           tests: every device x dtype + gradients

Files that are absent are simply left out. The library is alwayslink so its
static registrars survive linking.
"""

load("//third_party/cuda:cuda.bzl", "cuda_library")
load("//tools:build_defs.bzl", "tfm_cc_test")

# Headers that .cu files may include (nvcc runs in a genrule that sees only
# the files it is given).
CUDA_COMMON_HDRS = [
    "//core:philox.h",
    "//core:device.h",
]

def tfm_op(name, deps = [], extra_srcs = [], cuda_deps = [], test_deps = [], test_data = [],
           test_size = "small", test_args = []):
    """Declares :<name> (the op), :<name>_cuda (when present) and :<name>_test."""
    cuda_srcs = native.glob([name + "_cuda.cu"])
    op_deps = deps + [
        "//core",
    ]
    if cuda_srcs:
        cuda_library(
            name = name + "_cuda",
            srcs = cuda_srcs,
            hdrs = native.glob([name + "_cuda.h", name + "_kernel_args.h"]),
            nvcc_hdrs = CUDA_COMMON_HDRS,
            host_srcs = native.glob([name + "_cuda_kernels.cc"]),
            cuda_deps = cuda_deps,
            deps = ["//core"],
            alwayslink = True,
        )
        op_deps = op_deps + [":" + name + "_cuda"]
    native.cc_library(
        name = name,
        srcs = native.glob([name + ".cc", name + "_cpu.cc"]) + extra_srcs,
        hdrs = native.glob([name + ".h", name + "_kernel_args.h"]),
        deps = op_deps,
        alwayslink = True,
        visibility = ["//visibility:public"],
    )
    if native.glob([name + "_test.cc"]):
        tfm_cc_test(
            name = name + "_test",
            srcs = [name + "_test.cc"],
            deps = [":" + name] + test_deps,
            data = test_data,
            size = test_size,
            args = test_args,
        )
