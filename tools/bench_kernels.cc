// bench_kernels: the CUDA kernels' achieved bandwidth and FLOP rate, as ratios to what this GPU
// measures for a device-to-device copy and for a cuBLAS bf16 GEMM (f32 accumulation), measured
// in the same run. Needs a GPU; built by tests/gpu/build.sh, run by tests/gpu/run.sh.
//
//   bench_kernels [--json]
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "kernels/cuda/grouped_swiglu.h"
#include "kernels/cuda/moe_routing.h"
#include "kernels/cuda/nn_ops.h"
#include "kernels/cuda/paged_attention.h"
#include "kernels/cuda/predict_devices.h"

namespace {

using namespace semmoe::kernels::cuda;  // NOLINT: a benchmark's main file.

#define CHECK_CUDA(x)                                               \
  do {                                                              \
    const cudaError_t e_ = (x);                                     \
    if (e_ != cudaSuccess) {                                        \
      std::fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                 \
    }                                                               \
  } while (0)

void* Alloc(size_t bytes) {
  void* p = nullptr;
  CHECK_CUDA(cudaMalloc(&p, bytes));
  CHECK_CUDA(cudaMemset(p, 0, bytes));
  return p;
}

// Median-free but warm: one warm-up, then the mean over `reps` runs, in seconds.
double Time(const std::string& name, const std::function<void()>& run, int reps = 20) {
  run();
  if (const cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess) {
    std::fprintf(stderr, "bench_kernels: %s: %s\n", name.c_str(), cudaGetErrorString(e));
    std::exit(1);
  }
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  CHECK_CUDA(cudaEventRecord(start));
  for (int i = 0; i < reps; ++i) run();
  CHECK_CUDA(cudaEventRecord(stop));
  CHECK_CUDA(cudaEventSynchronize(stop));
  float ms = 0;
  CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return ms / 1000.0 / reps;
}

struct Row {
  std::string kernel, shape;
  double seconds, rate, ratio;
  bool flops;  // rate in TFLOP/s (else GB/s).
};

}  // namespace

int main(int argc, char** argv) {
  const bool json = argc > 1 && std::strcmp(argv[1], "--json") == 0;
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "bench_kernels: no CUDA device\n");
    return 1;
  }
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));

  // Baselines: copy bandwidth (read + write) and cuBLAS bf16 GEMM.
  const size_t copy_bytes = size_t{512} << 20;
  void* a = Alloc(copy_bytes);
  void* b = Alloc(copy_bytes);
  const double copy_s = Time("copy", [&] { cudaMemcpyAsync(b, a, copy_bytes, cudaMemcpyDeviceToDevice); });
  const double copy_gbs = 2.0 * copy_bytes / copy_s / 1e9;
  cudaFree(a);
  cudaFree(b);
  const int n = 8192;
  void* ga = Alloc(size_t{2} * n * n);
  void* gb = Alloc(size_t{2} * n * n);
  void* gc = Alloc(size_t{4} * n * n);
  cublasHandle_t handle;
  if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "bench_kernels: cublasCreate failed\n");
    return 1;
  }
  const float one = 1.0f, zero = 0.0f;
  const double gemm_s = Time(
      "cuBLAS GEMM",
      [&] {
        cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, ga, CUDA_R_16BF, n, gb,
                     CUDA_R_16BF, n, &zero, gc, CUDA_R_32F, n, CUBLAS_COMPUTE_32F,
                     CUBLAS_GEMM_DEFAULT);
      },
      10);
  const double gemm_tflops = 2.0 * n * n * n / gemm_s / 1e12;
  cudaFree(ga);
  cudaFree(gb);
  cudaFree(gc);

  std::vector<Row> rows;
  auto bandwidth = [&](const std::string& kernel, const std::string& shape, double bytes,
                       const std::function<void()>& run) {
    const double s = Time(kernel, run);
    const double gbs = bytes / s / 1e9;
    rows.push_back({kernel, shape, s, gbs, gbs / copy_gbs, false});
  };
  auto compute = [&](const std::string& kernel, const std::string& shape, double flops,
                     const std::function<void()>& run) {
    const double s = Time(kernel, run, 5);
    const double tf = flops / s / 1e12;
    rows.push_back({kernel, shape, s, tf, tf / gemm_tflops, true});
  };

  // Routing and shuffling at a prefill-sized step: 16k tokens, hidden 4096, top-8 of 128.
  const int64_t tokens = 16384, hidden = 4096;
  const int experts = 128, k = 8;
  const int64_t entries = tokens * k;
  float* logits = static_cast<float*>(Alloc(4 * tokens * experts));
  {  // Random logits: zeros would route every token to the same eight experts.
    std::mt19937 logit_rng(7);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> host(tokens * experts);
    for (float& v : host) v = normal(logit_rng);
    CHECK_CUDA(cudaMemcpy(logits, host.data(), 4 * host.size(), cudaMemcpyHostToDevice));
  }
  int32_t* ids = static_cast<int32_t*>(Alloc(4 * entries));
  float* weights = static_cast<float*>(Alloc(4 * entries));
  bandwidth("router gating", "16384 tok x 128 experts, top-8", 4.0 * tokens * experts, [&] {
    LaunchRouterGating({.logits = logits,
                        .tokens = tokens,
                        .experts = experts,
                        .k = k,
                        .renormalize = true,
                        .ids = ids,
                        .weights = weights},
                       nullptr);
  });
  int64_t* counts = static_cast<int64_t*>(Alloc(8 * experts));
  int64_t* offsets = static_cast<int64_t*>(Alloc(8 * (experts + 1)));
  int64_t* eop = static_cast<int64_t*>(Alloc(8 * entries));
  int64_t* poe = static_cast<int64_t*>(Alloc(8 * entries));
  bandwidth("permute by expert", "131072 entries, 128 experts", 4.0 * entries + 16.0 * entries,
            [&] {
              LaunchPermuteByExpert({.ids = ids,
                                     .entries = entries,
                                     .experts = experts,
                                     .counts = counts,
                                     .offsets = offsets,
                                     .entry_of_position = eop,
                                     .position_of_entry = poe},
                                    nullptr);
            });
  // Gather/combine on 8192 tokens × top-8 rows: the first 8192 tokens' routing, permuted alone
  // (the positions above index 16384 tokens, and x holds 8192).
  const int64_t rows_small = 8192;
  CHECK_CUDA(static_cast<cudaError_t>(LaunchPermuteByExpert({.ids = ids,
                                    .entries = rows_small * k,
                                    .experts = experts,
                                    .counts = counts,
                                    .offsets = offsets,
                                    .entry_of_position = eop,
                                    .position_of_entry = poe},
                                   nullptr)));
  float* x = static_cast<float*>(Alloc(4 * rows_small * hidden));
  float* y = static_cast<float*>(Alloc(4 * rows_small * k * hidden));
  bandwidth("gather rows", "65536 rows x 4096", 2.0 * 4 * rows_small * k * hidden, [&] {
    LaunchGatherRows({.x = x,
                      .entry_of_position = eop,
                      .entries = rows_small * k,
                      .k = k,
                      .hidden = hidden,
                      .y = y},
                     nullptr);
  });
  bandwidth("weighted combine", "8192 tok x top-8 x 4096",
            4.0 * (rows_small * k + rows_small) * hidden, [&] {
              LaunchCombineRows({.y = y,
                                 .weights = weights,
                                 .position_of_entry = poe,
                                 .tokens = rows_small,
                                 .k = k,
                                 .hidden = hidden,
                                 .out = x},
                                nullptr);
            });
  // The shuffled reduce-scatter's pack and the all-gather's unpack, over a random chunk order
  // (every row read or written once: the copy they do is what they are held to).
  std::vector<int32_t> host_order(rows_small);
  std::iota(host_order.begin(), host_order.end(), 0);
  std::mt19937 rng(1);
  std::shuffle(host_order.begin(), host_order.end(), rng);
  int32_t* order = static_cast<int32_t*>(Alloc(4 * rows_small));
  CHECK_CUDA(cudaMemcpy(order, host_order.data(), 4 * rows_small, cudaMemcpyHostToDevice));
  bandwidth("shuffle pack (SRS)", "8192 rows x 4096", 2.0 * 4 * rows_small * hidden,
            [&] { LaunchShufflePack(x, order, rows_small, hidden, y, nullptr); });
  bandwidth("shuffle unpack (SAG)", "8192 rows x 4096", 2.0 * 4 * rows_small * hidden,
            [&] { LaunchShuffleUnpack(y, order, rows_small, hidden, x, nullptr); });
  {
    // Attention-TP's prediction: 8192 tokens, 8 devices, tables at a 151,936-id vocabulary with
    // 32k seen rows and 64k contexts; bytes: ids, predecessors, history, a row read, scores.
    const int g = 8;
    const int64_t vocab = 151936, seen = 32768, contexts = 65536;
    std::vector<int32_t> row_of(vocab, -1), tok(rows_small), prev(rows_small);
    for (int64_t r = 0; r < seen; ++r) row_of[rng() % vocab] = static_cast<int32_t>(r);
    std::vector<uint64_t> keys(contexts);
    for (uint64_t& key : keys) key = (uint64_t{rng() % vocab} << 32) | (rng() % vocab);
    std::sort(keys.begin(), keys.end());
    for (int64_t t = 0; t < rows_small; ++t) {
      tok[t] = static_cast<int32_t>(rng() % vocab);
      prev[t] = static_cast<int32_t>(rng() % vocab);
    }
    auto upload = [&](const void* host, size_t bytes) {
      void* d = Alloc(bytes);
      CHECK_CUDA(cudaMemcpy(d, host, bytes, cudaMemcpyHostToDevice));
      return d;
    };
    const semmoe::kernels::PredictDevicesArgs args{
        .ids = static_cast<int32_t*>(upload(tok.data(), 4 * tok.size())),
        .previous = static_cast<int32_t*>(upload(prev.data(), 4 * prev.size())),
        .tokens = rows_small,
        .devices = g,
        .row_of_token = static_cast<int32_t*>(upload(row_of.data(), 4 * row_of.size())),
        .vocab = vocab,
        .shares = static_cast<float*>(Alloc(4 * (seen + 1) * g)),
        .unseen_row = seen,
        .context_keys = static_cast<uint64_t*>(upload(keys.data(), 8 * keys.size())),
        .contexts = contexts,
        .context_shares = static_cast<float*>(Alloc(4 * contexts * g)),
        .prev2 = static_cast<float*>(Alloc(4 * rows_small)),
        .prev1 = static_cast<float*>(Alloc(4 * rows_small)),
        .a_device = static_cast<int32_t*>(Alloc(4 * (g + 1) * g)),
        .a_confidence = static_cast<float*>(Alloc(4 * (g + 1) * g)),
        .scores = static_cast<float*>(Alloc(4 * rows_small * g))};
    bandwidth("predict devices (TP)", "8192 tok, 8 dev, 64k contexts",
              rows_small * (4.0 + 4 + 4 + 8 + 2 * 4.0 * g),
              [&] { LaunchPredictDevices(args, nullptr); });
  }
  float* w = static_cast<float*>(Alloc(4 * hidden));
  bandwidth("rmsnorm", "8192 x 4096", 2.0 * 4 * rows_small * hidden, [&] {
    LaunchRmsNorm({.x = x,
                   .rows = rows_small,
                   .width = hidden,
                   .row_stride = hidden,
                   .weight = w,
                   .eps = 1e-6f},
                  nullptr);
  });
  bandwidth("silu*mul", "8192 x 4096", 3.0 * 4 * rows_small * hidden,
            [&] { LaunchSiluMul(x, y, rows_small * hidden, nullptr); });

  // Decode attention: 64 sequences x 4096 positions, 32 q heads / 8 kv heads, head_dim 128.
  const int seqs = 64, context = 4096, page = 16, q_heads = 32, kv_heads = 8, head_dim = 128;
  const int max_pages = context / page;
  std::vector<int32_t> table(seqs * max_pages), seq_of(seqs), pos(seqs, context - 1);
  for (int s = 0; s < seqs; ++s) {
    seq_of[s] = s;
    for (int p = 0; p < max_pages; ++p) table[s * max_pages + p] = s * max_pages + p;
  }
  const size_t cache_floats = size_t{1} * seqs * context * kv_heads * head_dim;
  float* kc = static_cast<float*>(Alloc(4 * cache_floats));
  float* vc = static_cast<float*>(Alloc(4 * cache_floats));
  int32_t* d_table = static_cast<int32_t*>(Alloc(4 * table.size()));
  int32_t* d_seq = static_cast<int32_t*>(Alloc(4 * seqs));
  int32_t* d_pos = static_cast<int32_t*>(Alloc(4 * seqs));
  CHECK_CUDA(cudaMemcpy(d_table, table.data(), 4 * table.size(), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(d_seq, seq_of.data(), 4 * seqs, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(d_pos, pos.data(), 4 * seqs, cudaMemcpyHostToDevice));
  float* q = static_cast<float*>(Alloc(4 * seqs * q_heads * head_dim));
  float* out = static_cast<float*>(Alloc(4 * seqs * q_heads * head_dim));
  bandwidth("paged decode attention", "64 seq x 4096 ctx, 32/8 heads x 128", 2.0 * 4 * cache_floats,
            [&] {
              LaunchPagedAttention({q, seqs, q_heads, kv_heads, head_dim, kc, vc, page, d_table,
                                    max_pages, d_seq, d_pos, 0.088f, out},
                                   nullptr);
            });

  // Grouped SwiGLU: 4096 rows over 16 experts, hidden 2048, intermediate 768.
  const int g_experts = 16;
  const int64_t g_rows = 4096, g_hidden = 2048, g_inter = 768;
  std::vector<int64_t> g_offsets(g_experts + 1);
  for (int e = 0; e <= g_experts; ++e) g_offsets[e] = g_rows * e / g_experts;
  int64_t* d_offsets = static_cast<int64_t*>(Alloc(8 * (g_experts + 1)));
  CHECK_CUDA(cudaMemcpy(d_offsets, g_offsets.data(), 8 * (g_experts + 1), cudaMemcpyHostToDevice));
  auto* gx = static_cast<uint16_t*>(Alloc(2 * g_rows * g_hidden));
  auto* gg = static_cast<uint16_t*>(Alloc(2 * g_experts * g_inter * g_hidden));
  auto* gu = static_cast<uint16_t*>(Alloc(2 * g_experts * g_inter * g_hidden));
  auto* gd = static_cast<uint16_t*>(Alloc(2 * g_experts * g_hidden * g_inter));
  float* gact = static_cast<float*>(Alloc(4 * g_rows * g_inter));
  float* gout = static_cast<float*>(Alloc(4 * g_rows * g_hidden));
  const semmoe::kernels::GroupedSwiGluArgs swiglu{.x = gx,
                                                  .offsets = d_offsets,
                                                  .experts = g_experts,
                                                  .rows = g_rows,
                                                  .hidden = g_hidden,
                                                  .inter = g_inter,
                                                  .gate = gg,
                                                  .up = gu,
                                                  .down = gd,
                                                  .act = gact,
                                                  .out = gout};
  compute("grouped SwiGLU (direct)", "4096 rows, 16 experts, 2048 x 768",
          6.0 * g_rows * g_hidden * g_inter, [&] { LaunchGroupedSwiGlu(swiglu, nullptr); });
  compute("grouped SwiGLU (tensor core)", "4096 rows, 16 experts, 2048 x 768",
          6.0 * g_rows * g_hidden * g_inter,
          [&] { LaunchGroupedSwiGluTensorCore(swiglu, nullptr); });
  const double grouped_s = rows.back().seconds;
  // The same FLOPs as one dense cuBLAS bf16 GEMM (issue 23's yardstick for the grouped experts):
  // all 4096 rows through one [3 · 768, 2048] weight, x · Wᵀ as the forward multiplies.
  auto* dw = static_cast<uint16_t*>(Alloc(2 * 3 * g_inter * g_hidden));
  float* dy = static_cast<float*>(Alloc(4 * g_rows * 3 * g_inter));
  const int dm = static_cast<int>(3 * g_inter), dn = static_cast<int>(g_rows),
            dk = static_cast<int>(g_hidden);
  compute("cuBLAS dense bf16 (same FLOPs)", "4096 x 2048 x 2304", 2.0 * dm * dn * dk, [&] {
    cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, dm, dn, dk, &one, dw, CUDA_R_16BF, dk, gx,
                 CUDA_R_16BF, dk, &zero, dy, CUDA_R_32F, dm, CUBLAS_COMPUTE_32F,
                 CUBLAS_GEMM_DEFAULT);
  });
  const double dense_s = rows.back().seconds;
  CHECK_CUDA(cudaDeviceSynchronize());
  cublasDestroy(handle);

  std::printf(
      "bench_kernels on %s: copy %.0f GB/s, cuBLAS bf16 GEMM (8192^3, f32 acc) %.1f TFLOP/s\n",
      prop.name, copy_gbs, gemm_tflops);
  std::printf("grouped SwiGLU (tensor core) / cuBLAS dense bf16 of the same FLOPs: %.3f\n",
              dense_s / grouped_s);
  std::printf("%-26s %-38s %10s %12s %8s\n", "kernel", "shape", "us", "rate", "ratio");
  for (const Row& r : rows) {
    std::printf("%-26s %-38s %10.1f %8.1f %s %7.3f\n", r.kernel.c_str(), r.shape.c_str(),
                r.seconds * 1e6, r.rate, r.flops ? "TF/s" : "GB/s", r.ratio);
  }
  if (json) {
    std::printf("{\"device\":\"%s\",\"copy_gbs\":%.1f,\"gemm_tflops\":%.2f,\"kernels\":[",
                prop.name, copy_gbs, gemm_tflops);
    for (size_t i = 0; i < rows.size(); ++i) {
      std::printf("%s{\"kernel\":\"%s\",\"us\":%.2f,\"rate\":%.3f,\"unit\":\"%s\",\"ratio\":%.4f}",
                  i ? "," : "", rows[i].kernel.c_str(), rows[i].seconds * 1e6, rows[i].rate,
                  rows[i].flops ? "TFLOP/s" : "GB/s", rows[i].ratio);
    }
    std::printf("]}\n");
  }
  return 0;
}
