// The grouped SwiGLU on tensor cores (WMMA bf16 × bf16 → f32, 16×16×16 fragments).
//
// Rows are tiled 16 at a time within each expert's range (a tile never mixes experts); a block of
// 4 warps computes 16 rows × 64 output columns, each warp a 16×16 tile. Operand tiles are staged
// through shared memory with zero fill, so any hidden/inter size and ragged expert ranges work.
// Pass 1 computes the gate and up tiles together and writes act = silu(gate) · up (f32); pass 2
// rounds act to bf16 as it stages it and multiplies by the down projection.
#include <cuda_bf16.h>
#include <mma.h>

#include "kernels/cuda/grouped_swiglu.h"

namespace semmoe::kernels::cuda {
namespace {

using namespace nvcuda;  // NOLINT: wmma.

constexpr int kTile = 16;
constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kColumns = kWarps * kTile;  // Output columns per block.

using FragA = wmma::fragment<wmma::matrix_a, kTile, kTile, kTile, __nv_bfloat16, wmma::row_major>;
using FragB = wmma::fragment<wmma::matrix_b, kTile, kTile, kTile, __nv_bfloat16, wmma::col_major>;
using FragC = wmma::fragment<wmma::accumulator, kTile, kTile, kTile, float>;

// Row tiles are numbered expert by expert, ceil(rows_e / 16) each. Finds tile `t`'s expert and
// row range [*begin, *end) (at most 16 rows); false past the last tile.
__device__ bool FindTile(const int64_t* offsets, int experts, int64_t t, int* expert,
                         int64_t* begin, int64_t* end) {
  for (int e = 0; e < experts; ++e) {
    const int64_t n = offsets[e + 1] - offsets[e];
    const int64_t tiles = (n + kTile - 1) / kTile;
    if (t < tiles) {
      *expert = e;
      *begin = offsets[e] + t * kTile;
      *end = *begin + kTile < offsets[e + 1] ? *begin + kTile : offsets[e + 1];
      return true;
    }
    t -= tiles;
  }
  return false;
}

__device__ __nv_bfloat16 Bits(uint16_t b) { return __ushort_as_bfloat16(b); }

// act[r, i] = silu(x[r] · gate_e[i]) · (x[r] · up_e[i]) for the block's 16 rows × 64 columns.
__global__ void ActTcKernel(GroupedSwiGluArgs a) {
  __shared__ __align__(32) __nv_bfloat16 xs[kTile * kTile];          // [row][k]
  __shared__ __align__(32) __nv_bfloat16 gs[kWarps][kTile * kTile];  // [col][k] (col-major B)
  __shared__ __align__(32) __nv_bfloat16 us[kWarps][kTile * kTile];
  __shared__ __align__(32) float cs[kWarps][2][kTile * kTile];  // [row][col]
  int e;
  int64_t begin, end;
  if (!FindTile(a.offsets, a.experts, blockIdx.x, &e, &begin, &end)) return;  // Whole block.
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t col0 = static_cast<int64_t>(blockIdx.y) * kColumns + warp * kTile;
  const uint16_t* gate = a.gate + static_cast<int64_t>(e) * a.inter * a.hidden;
  const uint16_t* up = a.up + static_cast<int64_t>(e) * a.inter * a.hidden;
  FragA fa;
  FragB fg, fu;
  FragC acc_g, acc_u;
  wmma::fill_fragment(acc_g, 0.0f);
  wmma::fill_fragment(acc_u, 0.0f);
  for (int64_t k0 = 0; k0 < a.hidden; k0 += kTile) {
    for (int i = threadIdx.x; i < kTile * kTile; i += kThreads) {
      const int64_t r = begin + i / kTile, k = k0 + i % kTile;
      xs[i] = Bits(r < end && k < a.hidden ? a.x[r * a.hidden + k] : 0);
    }
    for (int i = lane; i < kTile * kTile; i += 32) {
      const int64_t c = col0 + i / kTile, k = k0 + i % kTile;
      const bool in = c < a.inter && k < a.hidden;
      gs[warp][i] = Bits(in ? gate[c * a.hidden + k] : 0);
      us[warp][i] = Bits(in ? up[c * a.hidden + k] : 0);
    }
    __syncthreads();
    wmma::load_matrix_sync(fa, xs, kTile);
    wmma::load_matrix_sync(fg, gs[warp], kTile);
    wmma::load_matrix_sync(fu, us[warp], kTile);
    wmma::mma_sync(acc_g, fa, fg, acc_g);
    wmma::mma_sync(acc_u, fa, fu, acc_u);
    __syncthreads();
  }
  wmma::store_matrix_sync(cs[warp][0], acc_g, kTile, wmma::mem_row_major);
  wmma::store_matrix_sync(cs[warp][1], acc_u, kTile, wmma::mem_row_major);
  __syncwarp();
  for (int i = lane; i < kTile * kTile; i += 32) {
    const int64_t r = begin + i / kTile, c = col0 + i % kTile;
    if (r < end && c < a.inter) {
      const float g = cs[warp][0][i], u = cs[warp][1][i];
      a.act[r * a.inter + c] = g / (1.0f + expf(-g)) * u;
    }
  }
}

// out[r, h] = bf16(act[r]) · down_e[h] for the block's 16 rows × 64 columns.
__global__ void DownTcKernel(GroupedSwiGluArgs a) {
  __shared__ __align__(32) __nv_bfloat16 as[kTile * kTile];
  __shared__ __align__(32) __nv_bfloat16 ds[kWarps][kTile * kTile];
  __shared__ __align__(32) float cs[kWarps][kTile * kTile];
  int e;
  int64_t begin, end;
  if (!FindTile(a.offsets, a.experts, blockIdx.x, &e, &begin, &end)) return;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t col0 = static_cast<int64_t>(blockIdx.y) * kColumns + warp * kTile;
  const uint16_t* down = a.down + static_cast<int64_t>(e) * a.hidden * a.inter;
  FragA fa;
  FragB fd;
  FragC acc;
  wmma::fill_fragment(acc, 0.0f);
  for (int64_t k0 = 0; k0 < a.inter; k0 += kTile) {
    for (int i = threadIdx.x; i < kTile * kTile; i += kThreads) {
      const int64_t r = begin + i / kTile, k = k0 + i % kTile;
      as[i] = __float2bfloat16_rn(r < end && k < a.inter ? a.act[r * a.inter + k] : 0.0f);
    }
    for (int i = lane; i < kTile * kTile; i += 32) {
      const int64_t c = col0 + i / kTile, k = k0 + i % kTile;
      ds[warp][i] = Bits(c < a.hidden && k < a.inter ? down[c * a.inter + k] : 0);
    }
    __syncthreads();
    wmma::load_matrix_sync(fa, as, kTile);
    wmma::load_matrix_sync(fd, ds[warp], kTile);
    wmma::mma_sync(acc, fa, fd, acc);
    __syncthreads();
  }
  wmma::store_matrix_sync(cs[warp], acc, kTile, wmma::mem_row_major);
  __syncwarp();
  for (int i = lane; i < kTile * kTile; i += 32) {
    const int64_t r = begin + i / kTile, c = col0 + i % kTile;
    if (r < end && c < a.hidden) a.out[r * a.hidden + c] = cs[warp][i];
  }
}

unsigned Blocks(int64_t n) { return static_cast<unsigned>((n + kColumns - 1) / kColumns); }

}  // namespace

CudaError LaunchGroupedSwiGluTensorCore(const GroupedSwiGluArgs& args, Stream stream) {
  if (args.experts <= 0 || args.hidden < 0 || args.inter < 0) return cudaErrorInvalidValue;
  if (args.rows <= 0 || args.hidden == 0) return cudaSuccess;
  // An upper bound on the row tiles: each expert's range adds at most one partial tile.
  const int64_t tiles = (args.rows + kTile - 1) / kTile + args.experts;
  if (tiles > 0x7fffffff || Blocks(args.inter) > 65535 || Blocks(args.hidden) > 65535) {
    return cudaErrorInvalidValue;
  }
  if (args.inter > 0) {
    ActTcKernel<<<dim3(static_cast<unsigned>(tiles), Blocks(args.inter)), kThreads, 0, stream>>>(
        args);
  }
  DownTcKernel<<<dim3(static_cast<unsigned>(tiles), Blocks(args.hidden)), kThreads, 0, stream>>>(
      args);
  return cudaGetLastError();
}

}  // namespace semmoe::kernels::cuda
