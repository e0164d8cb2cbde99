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
