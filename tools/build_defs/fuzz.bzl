"""semmoe_fuzzer: one libFuzzer entry point (LLVMFuzzerTestOneInput), two ways to run it.

- `name`: the fuzzer. Under `--config=fuzz` (clang, ASan + UBSan, `./semmoe fuzz`) it links
  libFuzzer; otherwise it links the replay driver (tools/fuzz/replay_main.cc), so it builds
  with the everyday compiler too.
- `name + "_replay_test"`: every input of `corpus` (seeds and kept crash inputs) and seeded
  mutations of them through the same entry point, in every `bazel test //...`.
"""

load("@rules_cc//cc:defs.bzl", "cc_binary", "cc_test")

def semmoe_fuzzer(name, srcs, deps, corpus):
    replay = select({
        "//tools/build_defs:fuzzing": [],
        "//conditions:default": ["//tools/fuzz:replay_main"],
    })
    cc_binary(
        name = name,
        srcs = srcs,
        deps = deps + replay,
        linkopts = select({
            "//tools/build_defs:fuzzing": ["-fsanitize=fuzzer"],
            "//conditions:default": [],
        }),
        testonly = True,
    )
    cc_test(
        name = name + "_replay_test",
        srcs = srcs,
        deps = deps + ["//tools/fuzz:replay_main"],
        args = ["$(locations %s)" % corpus],
        data = [corpus],
    )
