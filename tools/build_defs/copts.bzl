"""Compiler options shared by BUILD files."""

# Compute-heavy libraries (Eigen kernels, the model forward) are optimised even in the default
# fastbuild mode: at -O0 Eigen is ~50x slower and the reference-model tests would take minutes.
# -Wno-psabi: 32-byte GCC vector types in inline helpers (kernels/cpu/small_gemm.h) warn about
# an ABI that only matters across non-inlined calls between differently compiled objects.
COMPUTE_COPTS = ["-O2", "-DEIGEN_NO_DEBUG", "-Wno-psabi"]
