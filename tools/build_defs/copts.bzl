"""Compiler options shared by BUILD files."""

# Compute-heavy libraries (Eigen kernels, the model forward) are optimised even in the default
# fastbuild mode: at -O0 Eigen is ~50x slower and the reference-model tests would take minutes.
COMPUTE_COPTS = ["-O2", "-DEIGEN_NO_DEBUG"]
