#include "common/cpu_guard.h"

#include <unistd.h>

// Everything here is built for the baseline x86-64 (no VEX encodings), so that the check cannot
// itself be the illegal instruction.
#if defined(__x86_64__)
#define SEMMOE_BASELINE __attribute__((target("arch=x86-64")))
#else
#define SEMMOE_BASELINE
#endif

namespace semmoe {
namespace {

SEMMOE_BASELINE void Append(const char* text, char* out, size_t cap, size_t& at) {
  for (; *text != '\0'; ++text, ++at) {
    if (at + 1 < cap) out[at] = *text;
  }
}

}  // namespace

SEMMOE_BASELINE size_t CpuGuardMessage(bool avx2, bool fma, char* out, size_t cap) {
  if (cap > 0) out[0] = '\0';
  if (avx2 && fma) return 0;
  size_t at = 0;
  Append("semmoe: this binary was built for x86-64-v3 (bazel --config=opt: -march=x86-64-v3, "
         "AVX2 + FMA) but this CPU lacks ",
         out, cap, at);
  Append(!avx2 && !fma ? "AVX2 and FMA" : !avx2 ? "AVX2" : "FMA", out, cap, at);
  Append(". Rebuild without --config=opt (plain `bazel build`, or `./semmoe demo`, which checks "
         "the CPU and leaves -march out on such a machine).\n",
         out, cap, at);
  if (cap > 0) out[at < cap ? at : cap - 1] = '\0';
  return at;
}

namespace {

#if defined(__AVX2__) && defined(__x86_64__)
// Before any other static initialiser of the binary (priority 101).
__attribute__((constructor(101))) SEMMOE_BASELINE void CheckCpuBeforeMain() {
  __builtin_cpu_init();
  char message[512];
  const size_t n = CpuGuardMessage(__builtin_cpu_supports("avx2"), __builtin_cpu_supports("fma"),
                                   message, sizeof(message));
  if (n == 0) return;
  (void)!write(2, message, n < sizeof(message) ? n : sizeof(message) - 1);
  _exit(2);
}
#endif

}  // namespace
}  // namespace semmoe
