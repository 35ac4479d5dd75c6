#include <cfloat>
#include <cstdint>

#include "kernels/cuda/predict_devices.h"

namespace semmoe::kernels::cuda {
namespace {

__global__ void PredictKernel(PredictDevicesArgs a) {
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= a.tokens) return;
  const int g = a.devices;
  const int32_t id = a.ids[t];
  int64_t row = id >= 0 && id < a.vocab ? a.row_of_token[id] : -1;
  if (row < 0) row = a.unseen_row;
  const float* src = a.shares + row * g;
  if (a.previous != nullptr && a.contexts > 0 && a.previous[t] >= 0 && id >= 0) {
    const uint64_t key = (static_cast<uint64_t>(a.previous[t]) << 32) | static_cast<uint32_t>(id);
    int64_t lo = 0, hi = a.contexts;  // The first key >= `key`.
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (a.context_keys[mid] < key) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    if (lo < a.contexts && a.context_keys[lo] == key) src = a.context_shares + lo * g;
  }
  float* out = a.scores + t * g;
  float best = -FLT_MAX;
  for (int d = 0; d < g; ++d) {
    out[d] = src[d];
    best = fmaxf(best, src[d]);
  }
  if (a.prev1 == nullptr || a.a_device == nullptr) return;
  const int p1 = static_cast<int>(a.prev1[t]);
  const int p2 = a.prev2 == nullptr ? -1 : static_cast<int>(a.prev2[t]);
  if (p1 < 0 || p1 >= g || p2 < -1 || p2 >= g) return;
  const int slot = (p2 + 1) * g + p1;
  const int device = a.a_device[slot];
  if (device >= 0 && device < g && a.a_confidence[slot] > best) {
    for (int d = 0; d < g; ++d) out[d] = 0.0f;
    out[device] = a.a_confidence[slot];
  }
}

}  // namespace

CudaError LaunchPredictDevices(const PredictDevicesArgs& a, Stream stream) {
  if (a.tokens <= 0) return cudaSuccess;
  if (a.devices <= 0) return cudaErrorInvalidValue;
  constexpr int kThreads = 128;
  const int blocks = static_cast<int>((a.tokens + kThreads - 1) / kThreads);
  PredictKernel<<<blocks, kThreads, 0, stream>>>(a);
  return cudaGetLastError();
}

}  // namespace semmoe::kernels::cuda
