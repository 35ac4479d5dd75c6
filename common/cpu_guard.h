// The instruction set a binary was built for, checked against the CPU before main.
//
// `--config=opt` builds with -march=x86-64-v3 (AVX2 + FMA). On a CPU without them such a binary
// would die on an illegal instruction somewhere in its first kernel; linking `//common:cpu_guard`
// makes it stop first, with a message naming what is missing and how to rebuild (exit status 2).
// Builds without -march=x86-64-v3 check nothing.
#ifndef SEMMOE_COMMON_CPU_GUARD_H_
#define SEMMOE_COMMON_CPU_GUARD_H_

#include <cstddef>

namespace semmoe {

// The message a binary built for AVX2 + FMA prints on a CPU that has (`avx2`, `fma`), written to
// `out` (NUL-terminated, cut at `cap`); returns its length, 0 when nothing is missing. Plain
// C, compiled for the baseline x86-64: it runs before the CPU is known to have more.
size_t CpuGuardMessage(bool avx2, bool fma, char* out, size_t cap);

}  // namespace semmoe

#endif  // SEMMOE_COMMON_CPU_GUARD_H_
