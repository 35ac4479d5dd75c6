#include <cfloat>

#include "kernels/cuda/moe_routing.h"

namespace semmoe::kernels::cuda {
namespace {

constexpr unsigned kFull = 0xffffffffu;
constexpr int kMaxExperts = 1024;

int Blocks(int64_t work, int threads) {
  const int64_t wanted = (work + threads - 1) / threads;
  return static_cast<int>(wanted < 65535 ? (wanted > 0 ? wanted : 1) : 65535);
}

constexpr int kMaxGroups = 32;

// Warp argmax of one value per lane (ties: lower index); every lane gets the winner's index.
__device__ int WarpArgMax(float value, int index) {
  for (int s = 16; s > 0; s >>= 1) {
    const float other = __shfl_xor_sync(kFull, value, s);
    const int other_index = __shfl_xor_sync(kFull, index, s);
    if (other > value || (other == value && other_index < index)) value = other, index = other_index;
  }
  return index;
}

// One warp (blockDim 32) per token: the rule of RouterGatingArgs (kernels/op_args.h), as
// kernels/cpu/moe_routing.cc computes it.
__global__ void GatingKernel(RouterGatingArgs a) {
  __shared__ float scores[kMaxExperts], choice[kMaxExperts];
  __shared__ bool kept[kMaxGroups];
  const int lane = threadIdx.x;
  const int experts = a.experts, k = a.k;
  for (int64_t t = blockIdx.x; t < a.tokens; t += gridDim.x) {
    const float* row = a.logits + t * experts;
    if (a.scoring == GateScoring::kSoftmax) {
      float top = -FLT_MAX;
      for (int e = lane; e < experts; e += 32) top = fmaxf(top, row[e]);
      for (int s = 16; s > 0; s >>= 1) top = fmaxf(top, __shfl_xor_sync(kFull, top, s));
      float sum = 0.0f;
      for (int e = lane; e < experts; e += 32) {
        scores[e] = expf(row[e] - top);
        sum += scores[e];
      }
      for (int s = 16; s > 0; s >>= 1) sum += __shfl_xor_sync(kFull, sum, s);
      for (int e = lane; e < experts; e += 32) scores[e] /= sum;
    } else {
      for (int e = lane; e < experts; e += 32) scores[e] = 1.0f / (1.0f + expf(-row[e]));
    }
    for (int e = lane; e < experts; e += 32) {
      choice[e] = scores[e] + (a.bias != nullptr ? a.bias[e] : 0.0f);
    }
    __syncwarp();
    if (a.groups > 1) {  // Lane g scores group g; the best topk_groups stay in the running.
      const int size = experts / a.groups;
      float group = -INFINITY;
      if (lane < a.groups) {
        float best = -INFINITY, second = -INFINITY;
        for (int i = 0; i < size; ++i) {
          const float v = choice[lane * size + i];
          if (v > best) {
            second = best;
            best = v;
          } else if (v > second) {
            second = v;
          }
        }
        group = a.group_score == GroupScore::kMax ? best : best + second;
        kept[lane] = false;
      }
      __syncwarp();
      for (int j = 0; j < a.topk_groups; ++j) {
        const int g = WarpArgMax(lane < a.groups ? group : -INFINITY, lane);
        if (lane == g) {
          kept[g] = true;
          group = -INFINITY;
        }
        __syncwarp();
      }
      for (int e = lane; e < experts; e += 32) {
        if (!kept[e / size]) choice[e] = -INFINITY;
      }
      __syncwarp();
    }
    float chosen_sum = 0.0f;
    float chosen_value = 0.0f;  // Lane j keeps the j-th pick's score.
    int chosen_id = 0;
    for (int j = 0; j < k; ++j) {
      float best = -INFINITY;
      int best_id = experts;
      for (int e = lane; e < experts; e += 32) {
        if (choice[e] > best || (choice[e] == best && e < best_id)) best = choice[e], best_id = e;
      }
      best_id = min(WarpArgMax(best, best_id), experts - 1);
      const float score = scores[best_id];
      if (lane == j) chosen_value = score, chosen_id = best_id;
      chosen_sum += score;
      __syncwarp();
      if (lane == 0) choice[best_id] = -INFINITY;  // Taken.
      __syncwarp();
    }
    if (lane < k) {
      const float w = a.renormalize ? chosen_value / (chosen_sum + a.renormalize_epsilon) * a.scale
                                    : chosen_value * a.scale;
      a.ids[t * k + lane] = chosen_id;
      a.weights[t * k + lane] = w;
    }
    __syncwarp();
  }
}

// One warp per expert: how many entries chose it.
__global__ void CountKernel(const int32_t* __restrict__ ids, int64_t entries, int experts,
                            int64_t* __restrict__ counts) {
  const int e = blockIdx.x;
  const int lane = threadIdx.x;
  if (e >= experts) return;
  int64_t count = 0;
  for (int64_t base = 0; base < entries; base += 32) {
    const int64_t i = base + lane;
    const unsigned mask = __ballot_sync(kFull, i < entries && ids[i] == e);
    count += __popc(mask);
  }
  if (lane == 0) counts[e] = count;
}

__global__ void ScanKernel(const int64_t* __restrict__ counts, int experts,
                           int64_t* __restrict__ offsets) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  int64_t at = 0;
  for (int e = 0; e < experts; ++e) {
    offsets[e] = at;
    at += counts[e];
  }
  offsets[experts] = at;
}

// One warp per expert: positions in entry order (stable).
__global__ void PlaceKernel(const int32_t* __restrict__ ids, int64_t entries, int experts,
                            const int64_t* __restrict__ offsets,
                            int64_t* __restrict__ entry_of_position,
                            int64_t* __restrict__ position_of_entry) {
  const int e = blockIdx.x;
  const int lane = threadIdx.x;
  if (e >= experts) return;
  int64_t next = offsets[e];
  for (int64_t base = 0; base < entries; base += 32) {
    const int64_t i = base + lane;
    const bool mine = i < entries && ids[i] == e;
    const unsigned mask = __ballot_sync(kFull, mine);
    if (mine) {
      const int64_t pos = next + __popc(mask & ((1u << lane) - 1u));
      entry_of_position[pos] = i;
      position_of_entry[i] = pos;
    }
    next += __popc(mask);
  }
}

__global__ void GatherKernel(const float* __restrict__ x,
                             const int64_t* __restrict__ entry_of_position, int64_t entries, int k,
                             int64_t hidden, float* __restrict__ y) {
  const int64_t total = entries * hidden;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t p = i / hidden, h = i % hidden;
    y[i] = x[(entry_of_position[p] / k) * hidden + h];
  }
}

__global__ void CombineKernel(const float* __restrict__ y, const float* __restrict__ weights,
                              const int64_t* __restrict__ position_of_entry, int64_t tokens, int k,
                              int64_t hidden, float* __restrict__ out) {
  const int64_t total = tokens * hidden;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t t = i / hidden, h = i % hidden;
    float sum = 0.0f;
    for (int j = 0; j < k; ++j) {
      // Separate multiply and add, in slot order, as the CPU reference computes them.
      sum = __fadd_rn(sum,
                      __fmul_rn(weights[t * k + j], y[position_of_entry[t * k + j] * hidden + h]));
    }
    out[i] = sum;
  }
}

__global__ void PackKernel(const float* __restrict__ src, const int32_t* __restrict__ order,
                           int64_t rows, int64_t hidden, float* __restrict__ dst, bool pack) {
  const int64_t total = rows * hidden;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t p = i / hidden, h = i % hidden;
    if (pack) {
      dst[i] = src[static_cast<int64_t>(order[p]) * hidden + h];
    } else {
      dst[static_cast<int64_t>(order[p]) * hidden + h] = src[i];
    }
  }
}

}  // namespace

CudaError LaunchRouterGating(const RouterGatingArgs& a, Stream stream) {
  const int experts = a.experts, k = a.k;
  if (experts <= 0 || experts > kMaxExperts || k <= 0 || k > experts || k > 32 || a.groups <= 0 ||
      a.groups > kMaxGroups || experts % a.groups != 0 || a.topk_groups <= 0 ||
      a.topk_groups > a.groups) {
    return cudaErrorInvalidValue;
  }
  if (a.tokens <= 0) return cudaSuccess;
  GatingKernel<<<Blocks(a.tokens, 1), 32, 0, stream>>>(a);
  return cudaGetLastError();
}

CudaError LaunchPermuteByExpert(const PermuteByExpertArgs& a, Stream stream) {
  const int32_t* ids = a.ids;
  const int64_t entries = a.entries;
  const int experts = a.experts;
  int64_t* counts = a.counts;
  int64_t* offsets = a.offsets;
  int64_t* entry_of_position = a.entry_of_position;
  int64_t* position_of_entry = a.position_of_entry;
  if (experts <= 0) return cudaErrorInvalidValue;
  CountKernel<<<experts, 32, 0, stream>>>(ids, entries, experts, counts);
  ScanKernel<<<1, 1, 0, stream>>>(counts, experts, offsets);
  if (entries > 0) {
    PlaceKernel<<<experts, 32, 0, stream>>>(ids, entries, experts, offsets, entry_of_position,
                                            position_of_entry);
  }
  return cudaGetLastError();
}

CudaError LaunchGatherRows(const GatherRowsArgs& a, Stream stream) {
  const float* x = a.x;
  const int64_t* entry_of_position = a.entry_of_position;
  const int64_t entries = a.entries, hidden = a.hidden;
  const int k = a.k;
  float* y = a.y;
  if (entries * hidden <= 0) return cudaSuccess;
  GatherKernel<<<Blocks(entries * hidden, 256), 256, 0, stream>>>(x, entry_of_position, entries, k,
                                                                  hidden, y);
  return cudaGetLastError();
}

CudaError LaunchCombineRows(const CombineRowsArgs& a, Stream stream) {
  const float* y = a.y;
  const float* weights = a.weights;
  const int64_t* position_of_entry = a.position_of_entry;
  const int64_t tokens = a.tokens, hidden = a.hidden;
  const int k = a.k;
  float* out = a.out;
  if (tokens * hidden <= 0) return cudaSuccess;
  CombineKernel<<<Blocks(tokens * hidden, 256), 256, 0, stream>>>(y, weights, position_of_entry,
                                                                  tokens, k, hidden, out);
  return cudaGetLastError();
}

CudaError LaunchShufflePack(const float* x, const int32_t* order, int64_t rows, int64_t hidden,
                            float* packed, Stream stream) {
  if (rows * hidden <= 0) return cudaSuccess;
  PackKernel<<<Blocks(rows * hidden, 256), 256, 0, stream>>>(x, order, rows, hidden, packed, true);
  return cudaGetLastError();
}

CudaError LaunchShuffleUnpack(const float* packed, const int32_t* order, int64_t rows,
                              int64_t hidden, float* x, Stream stream) {
  if (rows * hidden <= 0) return cudaSuccess;
  PackKernel<<<Blocks(rows * hidden, 256), 256, 0, stream>>>(packed, order, rows, hidden, x, false);
  return cudaGetLastError();
}

}  // namespace semmoe::kernels::cuda
