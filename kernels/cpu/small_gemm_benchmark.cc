// Google Benchmark of y = x · Wᵀ for an HF-layout weight W [out, in] at a handful of rows — the
// choice CpuOps makes per product (engine/forward/cpu_ops.cc kSmallGemmRows): Eigen's blocked
// GEMM, which packs both operands on every call, against the unpacked kernels/cpu/small_gemm on
// the f32 weight and on its exact bf16 copy (half the bytes). Side by side in one run:
//   bazel run -c opt --config=opt //kernels/cpu:small_gemm_benchmark
// Results and the machine they came from: docs/PERFORMANCE.md.
#include <cstdint>
#include <random>
#include <vector>

#include "Eigen/Core"
#include "benchmark/benchmark.h"
#include "kernels/cpu/small_gemm.h"
#include "kernels/dtype.h"

namespace semmoe::kernels::cpu {
namespace {

using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

enum class Kernel { kEigen, kSmall, kSmallBf16 };

// A weight whose values are bf16 (as a BF16 checkpoint's), so every kernel computes the same.
struct Operands {
  Matrix x, w, y;
  std::vector<uint16_t> w16;
  Operands(int64_t m, int64_t k, int64_t n) : x(m, k), w(n, k), y(m, n), w16(n * k) {
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (int64_t i = 0; i < x.size(); ++i) x.data()[i] = dist(rng);
    for (int64_t i = 0; i < w.size(); ++i) {
      const BF16 v = F32ToBf16(dist(rng));
      w16[i] = v.bits;
      w.data()[i] = Bf16ToF32(v);
    }
  }
};

void Run(benchmark::State& state, Kernel kernel) {
  const int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  Operands o(m, k, n);
  for (auto _ : state) {
    switch (kernel) {
      case Kernel::kEigen:
        o.y.noalias() = o.x * o.w.transpose();
        break;
      case Kernel::kSmall:
        SmallGemmAbt({o.x.data(), m, k, k, o.w.data(), n, k, o.y.data(), n});
        break;
      case Kernel::kSmallBf16:
        SmallGemmAbtBf16({o.x.data(), m, k, k, o.w16.data(), n, k, o.y.data(), n});
        break;
    }
    benchmark::DoNotOptimize(o.y.data());
    benchmark::ClobberMemory();
  }
  state.counters["FLOP/s"] =
      benchmark::Counter(2.0 * m * k * n, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_Eigen(benchmark::State& state) { Run(state, Kernel::kEigen); }
void BM_SmallGemm(benchmark::State& state) { Run(state, Kernel::kSmall); }
void BM_SmallGemmBf16(benchmark::State& state) { Run(state, Kernel::kSmallBf16); }

// Rows 1..64 through a Qwen3-30B-A3B expert's up projection (hidden 2048 → 768).
void Shapes(benchmark::internal::Benchmark* b) {
  for (int m : {1, 4, 8, 16, 32, 64}) b->Args({m, 2048, 768});
}

BENCHMARK(BM_Eigen)->Apply(Shapes);
BENCHMARK(BM_SmallGemm)->Apply(Shapes);
BENCHMARK(BM_SmallGemmBf16)->Apply(Shapes);

}  // namespace
}  // namespace semmoe::kernels::cpu

BENCHMARK_MAIN();
