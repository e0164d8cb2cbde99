"""Repository rule exposing ../shared/data (real public corpora) to tests.

The data sits beside the project root on developer machines and in CI and is
never copied into the project. Tests depend on @shared_data//:multi30k or
@shared_data//:ptb_sample and read the files from their runfiles.
"""

def _shared_data_impl(ctx):
    root = ctx.path(Label("//:WORKSPACE")).dirname
    data = ctx.path(str(root) + "/../shared/data")
    ctx.file("WORKSPACE", "workspace(name = \"shared_data\")\n")
    if not data.exists:
        fail("shared data not found at {}: the project expects ../shared/data beside its root".format(data))
    for entry in data.readdir():
        ctx.symlink(entry, entry.basename)
    ctx.file("BUILD", """package(default_visibility = ["//visibility:public"])

filegroup(name = "multi30k", srcs = glob(["multi30k/**"]))

filegroup(name = "ptb_sample", srcs = glob(["ptb_sample/**"]))

filegroup(name = "all", srcs = glob(["**"], exclude = ["BUILD", "WORKSPACE"]))
""")

shared_data = repository_rule(implementation = _shared_data_impl, local = True)
