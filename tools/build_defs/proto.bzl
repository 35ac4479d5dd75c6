"""Protobuf/gRPC C++ generation with the system protoc and grpc_cpp_plugin (no downloads).

semmoe_proto_library(name = "x_proto", srcs = ["x.proto"], deps = [...], has_services = True)
creates, following the x_proto -> x_cc_proto -> x_cc_grpc naming:
  :x_proto     filegroup of the .proto files (and those of deps, for imports);
  :x_cc_proto  cc_library of the generated messages (x.pb.h);
  :x_cc_grpc   cc_library of the generated services (x.grpc.pb.h), when has_services.
Generated headers are included by workspace path, e.g. "engine/parallel/proto/x.pb.h".
`google/protobuf/*.proto` imports resolve from /usr/include.
"""

PROTOC = "/usr/bin/protoc"
GRPC_PLUGIN = "/usr/bin/grpc_cpp_plugin"

def _cc_name(proto_label, suffix):
    if not proto_label.endswith("_proto"):
        fail("proto dependency %s must be named *_proto" % proto_label)
    return proto_label[:-len("_proto")] + suffix

def semmoe_proto_library(name, srcs, deps = [], has_services = False, visibility = None):
    if not name.endswith("_proto"):
        fail("semmoe_proto_library %s: the name must end in _proto" % name)
    base = name[:-len("_proto")]
    native.filegroup(
        name = name,
        srcs = srcs + deps,
        visibility = visibility,
    )
    stems = [src[:-len(".proto")] for src in srcs]
    pkg = native.package_name()
    pb_hdrs = [s + ".pb.h" for s in stems]
    pb_srcs = [s + ".pb.cc" for s in stems]
    protoc_args = " ".join([
        "-I.",
        "-I/usr/include",
    ] + ["$(location %s)" % src for src in srcs])

    native.genrule(
        name = base + "_cc_proto_gen",
        srcs = srcs + [":" + name],
        outs = pb_hdrs + pb_srcs,
        cmd = "%s --cpp_out=$(GENDIR) %s" % (PROTOC, protoc_args),
        message = "protoc %s/%s" % (pkg, name),
    )
    native.cc_library(
        name = base + "_cc_proto",
        srcs = pb_srcs,
        hdrs = pb_hdrs,
        deps = [_cc_name(d, "_cc_proto") for d in deps] + ["@system//:protobuf"],
        visibility = visibility,
    )
    if not has_services:
        return

    grpc_hdrs = [s + ".grpc.pb.h" for s in stems]
    grpc_srcs = [s + ".grpc.pb.cc" for s in stems]
    native.genrule(
        name = base + "_cc_grpc_gen",
        srcs = srcs + [":" + name],
        outs = grpc_hdrs + grpc_srcs,
        cmd = "%s --grpc_out=$(GENDIR) --plugin=protoc-gen-grpc=%s %s" % (
            PROTOC,
            GRPC_PLUGIN,
            protoc_args,
        ),
        message = "grpc_cpp_plugin %s/%s" % (pkg, name),
    )
    native.cc_library(
        name = base + "_cc_grpc",
        srcs = grpc_srcs,
        hdrs = grpc_hdrs,
        deps = [":" + base + "_cc_proto", "@system//:grpc"],
        visibility = visibility,
    )
