"""semmoe_fuzzer: one libFuzzer entry point (LLVMFuzzerTestOneInput), two ways to run it.

- `name`: the fuzzer. Under `--config=fuzz` (clang, ASan + UBSan, `./semmoe fuzz`) it links
  libFuzzer; otherwise it links the replay driver (tools/fuzz/replay_main.cc), so it builds
  with the everyday compiler too.
- `name + "_replay_test"`: every input of `corpus` (seeds and kept crash inputs) and seeded
  mutations of them through the same entry point, in every `bazel test //...`.

The sources compile once (`name + "_entry"`, a library kept whole by `alwayslink`: nothing
else references LLVMFuzzerTestOneInput by name); the fuzzer and its replay test only link it.
"""

load("@rules_cc//cc:defs.bzl", "cc_binary", "cc_library", "cc_test")

def semmoe_fuzzer(name, srcs, deps, corpus):
    cc_library(
        name = name + "_entry",
        srcs = srcs,
        deps = deps,
        alwayslink = True,
        testonly = True,
    )
    cc_binary(
        name = name,
        deps = [":" + name + "_entry"] + select({
            "//tools/build_defs:fuzzing": [],
            "//conditions:default": ["//tools/fuzz:replay_main"],
        }),
        linkopts = select({
            "//tools/build_defs:fuzzing": ["-fsanitize=fuzzer"],
            "//conditions:default": [],
        }),
        testonly = True,
    )
    cc_test(
        name = name + "_replay_test",
        deps = [":" + name + "_entry", "//tools/fuzz:replay_main"],
        args = ["$(locations %s)" % corpus],
        data = [corpus],
    )
