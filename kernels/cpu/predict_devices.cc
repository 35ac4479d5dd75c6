#include "kernels/cpu/predict_devices.h"

#include <algorithm>
#include <cstdint>

namespace semmoe::kernels::cpu {

void PredictDevices(const PredictDevicesArgs& a) {
  const int g = a.devices;
  for (int64_t t = 0; t < a.tokens; ++t) {
    const int32_t id = a.ids[t];
    int64_t row = id >= 0 && id < a.vocab ? a.row_of_token[id] : -1;
    if (row < 0) row = a.unseen_row;
    const float* src = a.shares + row * g;
    if (a.previous != nullptr && a.contexts > 0 && a.previous[t] >= 0 && id >= 0) {
      const uint64_t key = (static_cast<uint64_t>(a.previous[t]) << 32) | static_cast<uint32_t>(id);
      const uint64_t* end = a.context_keys + a.contexts;
      const uint64_t* it = std::lower_bound(a.context_keys, end, key);
      if (it != end && *it == key) src = a.context_shares + (it - a.context_keys) * g;
    }
    float* out = a.scores + t * g;
    std::copy(src, src + g, out);
    if (a.prev1 == nullptr || a.a_device == nullptr) continue;
    const int p1 = static_cast<int>(a.prev1[t]);
    const int p2 = a.prev2 == nullptr ? -1 : static_cast<int>(a.prev2[t]);
    if (p1 < 0 || p1 >= g || p2 < -1 || p2 >= g) continue;
    const int slot = (p2 + 1) * g + p1;
    const int device = a.a_device[slot];
    if (device >= 0 && device < g && a.a_confidence[slot] > *std::max_element(out, out + g)) {
      std::fill(out, out + g, 0.0f);
      out[device] = a.a_confidence[slot];
    }
  }
}

}  // namespace semmoe::kernels::cpu
