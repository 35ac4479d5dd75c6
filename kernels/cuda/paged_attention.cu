#include <cuda_bf16.h>

#include <cfloat>

#include "kernels/cuda/paged_attention.h"

namespace semmoe::kernels::cuda {
namespace {

constexpr unsigned kFull = 0xffffffffu;
// A lane holds head_dim / 32 (rounded up) floats of q, and value_dim / 32 of the output: up to 8
// (≤ 256, the standard heads) or 32 (≤ 1024: MLA's absorbed latent heads, 512 + 64 for
// DeepSeek-V3).
constexpr int kSmallPerLane = 8, kLargePerLane = 32;
constexpr int kWarpsPerBlock = 4;

__device__ float Load(const float* p, int64_t i) { return p[i]; }
__device__ float Load(const uint16_t* p, int64_t i) {
  return __bfloat162float(__ushort_as_bfloat16(p[i]));
}

// T: the cache's element type (f32, or bf16 bits read widened); kMaxPerLane: registers per lane.
template <typename T, int kMaxPerLane>
__global__ void PagedAttentionKernel(PagedAttentionArgs a, const T* k_cache, const T* v_cache) {
  const int lane = threadIdx.x % 32;
  const int64_t warp = blockIdx.x * static_cast<int64_t>(kWarpsPerBlock) + threadIdx.x / 32;
  const int64_t total = a.tokens * a.q_heads;
  if (warp >= total) return;
  const int64_t t = warp / a.q_heads;
  const int head = static_cast<int>(warp % a.q_heads);
  const int kv_head = head / (a.q_heads / a.kv_heads);
  const int dim = a.head_dim, vdim = a.v_head_dim > 0 ? a.v_head_dim : a.head_dim;
  float q[kMaxPerLane], acc[kMaxPerLane];
  const float* qrow = a.q + (t * a.q_heads + head) * dim;
#pragma unroll
  for (int i = 0; i < kMaxPerLane; ++i) {
    q[i] = lane + 32 * i < dim ? qrow[lane + 32 * i] : 0.0f;
    acc[i] = 0.0f;
  }
  const int32_t* pages = a.page_table + static_cast<int64_t>(a.seq_of_token[t]) * a.max_pages;
  float m = -FLT_MAX, l = 0.0f;
  for (int p = 0; p <= a.position[t]; ++p) {
    const int64_t slot =
        static_cast<int64_t>(pages[p / a.page_size]) * a.page_size + p % a.page_size;
    const int64_t base = (slot * a.kv_heads + kv_head) * dim;
    const int64_t vbase = (slot * a.kv_heads + kv_head) * vdim;
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < kMaxPerLane; ++i) {
      if (lane + 32 * i < dim) s += q[i] * Load(k_cache, base + lane + 32 * i);
    }
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(kFull, s, o);
    s *= a.scale;
    const float m_new = fmaxf(m, s);
    const float correction = expf(m - m_new), w = expf(s - m_new);
    l = l * correction + w;
#pragma unroll
    for (int i = 0; i < kMaxPerLane; ++i) {
      if (lane + 32 * i < vdim) {
        acc[i] = acc[i] * correction + w * Load(v_cache, vbase + lane + 32 * i);
      }
    }
    m = m_new;
  }
  float* orow = a.out + (t * a.q_heads + head) * vdim;
#pragma unroll
  for (int i = 0; i < kMaxPerLane; ++i) {
    if (lane + 32 * i < vdim) orow[lane + 32 * i] = acc[i] / l;
  }
}

}  // namespace

template <typename T>
static void Launch(const PagedAttentionArgs& a, const T* k_cache, const T* v_cache, unsigned blocks,
                   Stream stream) {
  if (a.head_dim <= 32 * kSmallPerLane && a.value_dim() <= 32 * kSmallPerLane) {
    PagedAttentionKernel<T, kSmallPerLane>
        <<<blocks, 32 * kWarpsPerBlock, 0, stream>>>(a, k_cache, v_cache);
  } else {
    PagedAttentionKernel<T, kLargePerLane>
        <<<blocks, 32 * kWarpsPerBlock, 0, stream>>>(a, k_cache, v_cache);
  }
}

CudaError LaunchPagedAttention(const PagedAttentionArgs& a, Stream stream) {
  if (a.q_heads <= 0 || a.kv_heads <= 0 || a.q_heads % a.kv_heads != 0 || a.head_dim <= 0 ||
      a.head_dim > 32 * kLargePerLane || a.v_head_dim < 0 || a.value_dim() > 32 * kLargePerLane ||
      a.page_size <= 0) {
    return cudaErrorInvalidValue;
  }
  const int64_t warps = a.tokens * a.q_heads;
  if (warps <= 0) return cudaSuccess;
  const int64_t blocks = (warps + kWarpsPerBlock - 1) / kWarpsPerBlock;
  if (blocks > 2147483647) return cudaErrorInvalidValue;
  if (a.k_cache16 != nullptr) {
    Launch(a, a.k_cache16, a.v_cache16, static_cast<unsigned>(blocks), stream);
  } else {
    Launch(a, a.k_cache, a.v_cache, static_cast<unsigned>(blocks), stream);
  }
  return cudaGetLastError();
}

}  // namespace semmoe::kernels::cuda
