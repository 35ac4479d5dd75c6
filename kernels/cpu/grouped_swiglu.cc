#include "kernels/cpu/grouped_swiglu.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/dtype.h"

namespace semmoe::kernels::cpu {
namespace {

float Bf16(uint16_t bits) {
  const uint32_t word = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &word, sizeof f);
  return f;
}

}  // namespace

void GroupedSwiGlu(const GroupedSwiGluArgs& a) {
  std::vector<float> act(a.inter);
  for (int e = 0; e < a.experts; ++e) {
    const uint16_t* g = a.gate + static_cast<int64_t>(e) * a.inter * a.hidden;
    const uint16_t* u = a.up + static_cast<int64_t>(e) * a.inter * a.hidden;
    const uint16_t* d = a.down + static_cast<int64_t>(e) * a.hidden * a.inter;
    for (int64_t r = a.offsets[e]; r < a.offsets[e + 1]; ++r) {
      const uint16_t* x = a.x + r * a.hidden;
      for (int64_t i = 0; i < a.inter; ++i) {
        float gs = 0, us = 0;
        for (int64_t h = 0; h < a.hidden; ++h) {
          const float xv = Bf16(x[h]);
          gs += Bf16(g[i * a.hidden + h]) * xv;
          us += Bf16(u[i * a.hidden + h]) * xv;
        }
        act[i] = gs / (1.0f + std::exp(-gs)) * us;
        if (a.bf16_activation) act[i] = Bf16ToF32(F32ToBf16(act[i]));
      }
      for (int64_t h = 0; h < a.hidden; ++h) {
        float s = 0;
        for (int64_t i = 0; i < a.inter; ++i) s += Bf16(d[h * a.inter + i]) * act[i];
        a.out[r * a.hidden + h] = s;
      }
    }
  }
}

}  // namespace semmoe::kernels::cpu
