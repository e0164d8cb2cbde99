"""Conventions for the project's C++ targets."""

# Binaries and tests export their symbols so that plugins loaded with dlopen
# bind to the engine's registries instead of carrying private copies.
_EXPORT_SYMBOLS = ["-rdynamic"]

def tfm_cc_binary(name, linkopts = [], **kwargs):
    native.cc_binary(name = name, linkopts = linkopts + _EXPORT_SYMBOLS, **kwargs)

def tfm_cc_test(name, deps = [], linkopts = [], **kwargs):
    """A GoogleTest test with gtest_main."""
    native.cc_test(
        name = name,
        deps = deps + ["@gtest_main//:lib"],
        linkopts = linkopts + _EXPORT_SYMBOLS,
        **kwargs
    )

# Instruction sets our own CPU kernels are compiled for (ops/cpu_math/isa.h),
# each with the define that selects it.
CPU_ISAS = {
    "avx2": "TFM_KERNEL_ISA_AVX2",
    "avx512": "TFM_KERNEL_ISA_AVX512",
}

def tfm_isa_cc_library(name, srcs, hdrs = [], deps = [], **kwargs):
    """:<name>, the sources compiled once per instruction set in CPU_ISAS.

    The sources put their code between TFM_ISA_BEGIN and TFM_ISA_END; each
    copy lands in its own namespace (tfm::avx2, tfm::avx512), and the
    callers choose one at run time (ops/cpu_math/isa_dispatch.h). hdrs are
    the baseline entry points that :<name> exports.
    """
    for isa, define in CPU_ISAS.items():
        native.cc_library(
            name = name + "_" + isa,
            srcs = srcs + hdrs,
            local_defines = [define],
            deps = deps,
            **kwargs
        )
    native.cc_library(
        name = name,
        hdrs = hdrs,
        deps = [":" + name + "_" + isa for isa in CPU_ISAS],
        **kwargs
    )

def tfm_isa_test(name, srcs, deps = [], compile_per_isa = False, env = {}, **kwargs):
    """:<name>_avx2 and :<name>_avx512, and :<name> running both.

    Each copy runs with TFM_CPU_ISA set to its instruction set, so the ops
    it calls take that build of their kernels; a host that cannot run it
    skips the copy's tests with the reason. With compile_per_isa the test
    sources themselves are compiled per instruction set (for tests of the
    vector helpers, which they call directly).
    """
    tests = []
    for isa, define in CPU_ISAS.items():
        test_env = dict(env)
        test_env["TFM_CPU_ISA"] = isa
        tfm_cc_test(
            name = name + "_" + isa,
            srcs = srcs,
            local_defines = [define] if compile_per_isa else [],
            deps = deps + ["//ops/cpu_math:isa_test_environment"],
            env = test_env,
            **kwargs
        )
        tests.append(":" + name + "_" + isa)
    native.test_suite(name = name, tests = tests)
