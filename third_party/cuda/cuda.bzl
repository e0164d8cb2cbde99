"""cuda_library: compiles .cu files with nvcc for the GPUs we target.

Each .cu file is compiled by nvcc in a genrule (SASS for sm_80 and sm_90, plus
PTX for sm_90 so newer GPUs can JIT) into a position-independent object that a
cc_library links together with cudart. Without CUDA (no toolkit found, or
--config=nocuda) the library is built from `fallback_srcs` instead, which must
implement the same functions by reporting that CUDA is unavailable.
"""

load("@local_cuda//:defs.bzl", "CUDA_ENABLED", "CUDA_PATH", "NVCC")

CUDA_ARCHS = ["80", "90"]

def _gencode_flags():
    flags = ["-gencode=arch=compute_{0},code=sm_{0}".format(a) for a in CUDA_ARCHS]
    flags.append("-gencode=arch=compute_{0},code=compute_{0}".format(CUDA_ARCHS[-1]))
    return " ".join(flags)

def cuda_library(name, srcs, hdrs = [], deps = [], nvcc_hdrs = [], host_srcs = [], fallback_srcs = [], cuda_deps = [], **kwargs):
    """A C++ library whose `srcs` (.cu or .cc using the CUDA API) are built by nvcc.

    Args:
      name: target name.
      srcs: files compiled by nvcc; they may include `hdrs` and the headers of
        `deps` only if those are plain C++ without Abseil-heavy templates.
      hdrs: public headers (compiled by the host compiler of dependents).
      deps: cc_library dependencies.
      nvcc_hdrs: header files from other targets that `srcs` include (nvcc
        runs in a genrule, which sees only the files it is given).
      host_srcs: sources compiled by the host compiler, only when CUDA is
        available (e.g. kernel registrations that call into the .cu code).
      fallback_srcs: host-only sources used when CUDA is unavailable.
      cuda_deps: extra @local_cuda targets to link, e.g. "@local_cuda//:nccl".
      **kwargs: passed to the cc_library.
    """
    objs = []
    if CUDA_ENABLED:
        for src in srcs:
            obj = "_{}_objs/{}.o".format(name, src.replace("/", "_"))
            native.genrule(
                name = "{}_nvcc_{}".format(name, src.replace("/", "_").replace(".", "_")),
                srcs = [src] + hdrs + nvcc_hdrs,
                outs = [obj],
                cmd = " ".join([
                    NVCC,
                    "-c $(location {})".format(src),
                    "-o $@",
                    "-std=c++17 -O3",
                    "-Xcompiler -fPIC",
                    "-I. -I$(GENDIR)",
                    "-isystem " + CUDA_PATH + "/include",
                    _gencode_flags(),
                ]),
                message = "nvcc " + src,
            )
            objs.append(obj)
    native.cc_library(
        name = name,
        srcs = select({
            "//tools/cuda:cuda_disabled": fallback_srcs,
            "//conditions:default": (objs + host_srcs) if CUDA_ENABLED else fallback_srcs,
        }),
        hdrs = hdrs,
        deps = deps + select({
            "//tools/cuda:cuda_disabled": [],
            "//conditions:default": (["@local_cuda//:cudart"] + cuda_deps) if CUDA_ENABLED else [],
        }),
        **kwargs
    )
