// Google Benchmark of the Eigen GEMM at MoE-layer shapes (tokens x hidden -> ffn), reading an
// HF-layout weight W [out, in] two ways side by side:
//   BM_GemmTransposedView  x · Wᵀ through W.Transpose(0, 1) (no copy: what the engine does);
//   BM_GemmContiguous      x · B with B = Wᵀ materialised row-major [in, out] (the baseline).
//   bazel run -c opt //kernels/cpu:gemm_benchmark
// Results and the machine they came from: docs/PERFORMANCE.md.
#include <random>
#include <string>

#include "benchmark/benchmark.h"
#include "kernels/cpu/gemm.h"

namespace semmoe::kernels::cpu {
namespace {

Tensor RandomMatrix(int64_t rows, int64_t cols, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  Tensor t = *Tensor::Zeros(DType::kF32, {rows, cols});
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(rng);
  return t;
}

void RunGemm(benchmark::State& state, bool transposed_view) {
  const int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  std::mt19937 rng(1);
  Tensor x = RandomMatrix(m, k, rng);
  Tensor w = RandomMatrix(n, k, rng);  // HF layout [out, in].
  Tensor wt = *w.Transpose(0, 1);
  Tensor b = transposed_view ? wt : wt.Clone();
  Tensor y = *Tensor::Zeros(DType::kF32, {m, n});
  for (auto _ : state) {
    absl::Status status = Gemm({.a = x, .b = b, .c = y});
    if (!status.ok()) state.SkipWithError(std::string(status.message()).c_str());
    benchmark::DoNotOptimize(y.raw_data());
    benchmark::ClobberMemory();
  }
  state.counters["FLOP/s"] =
      benchmark::Counter(2.0 * m * k * n, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_GemmTransposedView(benchmark::State& state) { RunGemm(state, true); }
void BM_GemmContiguous(benchmark::State& state) { RunGemm(state, false); }

void Shapes(benchmark::internal::Benchmark* b) {
  b->Args({1, 1024, 1024})->Args({16, 1024, 1024})->Args({64, 1024, 512})->Args({256, 512, 512});
}

BENCHMARK(BM_GemmTransposedView)->Apply(Shapes);
BENCHMARK(BM_GemmContiguous)->Apply(Shapes);

}  // namespace
}  // namespace semmoe::kernels::cpu

BENCHMARK_MAIN();
