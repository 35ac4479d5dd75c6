// Google Benchmark of the Eigen GEMM at the shapes an MoE layer uses (tokens x hidden x ffn).
//   bazel run -c opt //kernels/cpu:gemm_benchmark
// Reports FLOP/s per shape; the README of docs/PERFORMANCE.md records the machine's numbers.
#include <random>

#include "benchmark/benchmark.h"
#include "kernels/cpu/gemm.h"

namespace semmoe::kernels::cpu {
namespace {

void BM_Gemm(benchmark::State& state) {
  const int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  Tensor a = *Tensor::Zeros(DType::kF32, {m, k});
  Tensor w = *Tensor::Zeros(DType::kF32, {n, k});  // HF layout [out, in].
  Tensor c = *Tensor::Zeros(DType::kF32, {m, n});
  for (int64_t i = 0; i < a.numel(); ++i) a.data<float>()[i] = dist(rng);
  for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] = dist(rng);
  Tensor wt = *w.Transpose(0, 1);
  for (auto _ : state) {
    absl::Status status = Gemm({.a = a, .b = wt, .c = c});
    if (!status.ok()) state.SkipWithError(std::string(status.message()).c_str());
    benchmark::DoNotOptimize(c.raw_data());
  }
  state.counters["FLOP/s"] = benchmark::Counter(2.0 * m * k * n, benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK(BM_Gemm)->Args({1, 1024, 1024})->Args({16, 1024, 1024})->Args({64, 1024, 512})->Args({256, 512, 512});

}  // namespace
}  // namespace semmoe::kernels::cpu

BENCHMARK_MAIN();
