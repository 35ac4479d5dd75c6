"""CUDA build macros.

cuda_library compiles `.cu` files with nvcc (sm_90 SASS + compute_90 PTX) in a genrule and wraps
the objects in a cc_library that any cc_* target can depend on. Without a CUDA toolkit on the
machine (see //third_party/cuda:cuda_configure.bzl) the targets are marked incompatible, so
`bazel build //...` skips them and says so instead of failing.

gpu_cc_test is a cc_test tagged `gpu` (excluded from a plain `bazel test //...`, built always),
linked with an $ORIGIN rpath so tests/gpu/build.sh can ship it with its shared libraries.
"""

load("@local_cuda//:defs.bzl", "CUDA_AVAILABLE", "NVCC")

NVCC_FLAGS = [
    "-std=c++17",
    "-O3",
    "-Xcompiler",
    "-fPIC",
    "-gencode",
    "arch=compute_90,code=[sm_90,compute_90]",
    "--expt-relaxed-constexpr",
]

_INCOMPATIBLE = ["@local_cuda//:missing"]

# Headers every .cu may include beyond its own: nvcc runs in a genrule, which sees only its srcs.
_COMMON_HDRS = ["//kernels/cuda:launch.h", "//kernels:op_args.h"]

def if_cuda(if_true, if_false = []):
    """`if_true` where this build has the CUDA toolkit, else `if_false` (e.g. deps of a binary)."""
    return if_true if CUDA_AVAILABLE else if_false

def cuda_library(name, srcs, hdrs = [], deps = [], copts = [], visibility = None, testonly = False):
    """A library of CUDA kernels and launchers.

    Args:
      name: target name.
      srcs: `.cu` files; each becomes one object file.
      hdrs: public headers (host-only: they must not include CUDA headers).
      deps: cc_library dependencies (headers visible to the .cu files via -I.).
      copts: extra nvcc flags.
      visibility: as for cc_library.
      testonly: as for cc_library.
    """
    if not CUDA_AVAILABLE:
        native.cc_library(
            name = name,
            hdrs = hdrs,
            deps = deps,
            target_compatible_with = _INCOMPATIBLE,
            visibility = visibility,
            testonly = testonly,
        )
        return

    objects = []
    for src in srcs:
        if not src.endswith(".cu"):
            fail("cuda_library %s: %s is not a .cu file" % (name, src))
        obj = "_objs_cuda/%s/%s.o" % (name, src[:-len(".cu")])
        native.genrule(
            name = "%s_%s_nvcc" % (name, src[:-len(".cu")].replace("/", "_")),
            # The headers every launcher includes (CUDA-free types and argument structs).
            srcs = [src] + hdrs + _COMMON_HDRS,
            outs = [obj],
            cmd = " ".join([NVCC] + NVCC_FLAGS + copts + [
                "-I.",
                "-I$(GENDIR)",
                "-c",
                "$(location %s)" % src,
                "-o",
                "$@",
            ]),
            message = "nvcc %s" % src,
            testonly = testonly,
        )
        objects.append(obj)

    native.cc_library(
        name = name,
        srcs = objects,
        hdrs = hdrs,
        # The static runtime keeps test binaries portable to machines with only a driver.
        deps = deps + ["@local_cuda//:cudart_static"],
        linkstatic = True,
        visibility = visibility,
        testonly = testonly,
    )

def gpu_cc_test(name, tags = [], linkopts = [], **kwargs):
    """A cc_test that needs a GPU: tagged `gpu`, skipped where the toolkit is missing."""
    native.cc_test(
        name = name,
        tags = tags + ["gpu"],
        # $ORIGIN first: tests/gpu/build.sh copies the shared libraries beside the binary.
        linkopts = linkopts + ["-Wl,--disable-new-dtags,-rpath,$$ORIGIN"],
        linkstatic = True,
        target_compatible_with = [] if CUDA_AVAILABLE else _INCOMPATIBLE,
        **kwargs
    )
