"""cc_proto: C++ code for .proto files from Debian's protoc and libprotobuf.

Bazel 4's native proto rules want to build protoc from source (a download);
this macro runs the installed protoc instead, which matches the installed
library exactly.
"""

def cc_proto(name, srcs, deps = [], visibility = None):
    """Generates <name> as a cc_library from `srcs` (.proto files).

    Args:
      name: target name.
      srcs: .proto files, imported by their workspace-relative path.
      deps: other cc_proto targets whose .proto files these import.
      visibility: as usual.
    """
    hdrs = [s[:-len(".proto")] + ".pb.h" for s in srcs]
    ccs = [s[:-len(".proto")] + ".pb.cc" for s in srcs]
    native.genrule(
        name = name + "_protoc",
        srcs = srcs + [d + "_srcs" for d in deps],
        outs = hdrs + ccs,
        cmd = "protoc --proto_path=. --proto_path=/usr/include --cpp_out=$(GENDIR) " +
              " ".join(["$(location {})".format(s) for s in srcs]),
        message = "protoc " + " ".join(srcs),
    )
    native.filegroup(name = name + "_srcs", srcs = srcs + [d + "_srcs" for d in deps], visibility = visibility)
    native.cc_library(
        name = name,
        srcs = ccs,
        hdrs = hdrs,
        deps = deps + ["@protobuf//:lib"],
        visibility = visibility,
    )

    # The generated header alone, for plugins that resolve the code from the
    # executable that loads them.
    native.cc_library(
        name = name + "_headers",
        hdrs = hdrs,
        deps = [d + "_headers" for d in deps] + ["@protobuf//:lib"],
        visibility = visibility,
    )
