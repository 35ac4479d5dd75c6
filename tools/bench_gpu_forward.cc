// bench_gpu_forward: the engine's forward pass on the GPU (engine/gpu) against the CPU forward,
// side by side in one run, on a real checkpoint: a prefill batch and decode steps at several
// batch sizes. Prints milliseconds per pass, the speed-up (CPU time / GPU time) and the GPU's
// tokens per second, plus the largest logit difference between the two (a sanity check; the
// tests hold the tolerances). Needs a GPU; built by tests/gpu/build.sh, run by tests/gpu/run.sh.
//
//   bench_gpu_forward [--json] [MODEL_DIR]   (default: $SEMMOE_SHARED_DIR/models/qwen3-moe-a)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/gpu/gpu_transformer.h"
#include "engine/model/config.h"
#include "engine/model/transformer.h"
#include "engine/model/weights.h"
#include "engine/runtime/kv_cache.h"
#include "kernels/safetensors.h"

namespace {

using semmoe::engine::gpu::GpuTransformer;
using semmoe::engine::model::ForwardOutput;
using semmoe::engine::model::LogitsMode;
using semmoe::engine::model::SequenceInput;
using semmoe::engine::runtime::PagedKvCache;
using semmoe::engine::runtime::PagedSequence;

template <typename T>
T OrDie(absl::StatusOr<T> v, const char* what) {
  if (!v.ok()) {
    std::fprintf(stderr, "bench_gpu_forward: %s: %s\n", what, v.status().ToString().c_str());
    std::exit(1);
  }
  return std::move(*v);
}

// Mean seconds per call over `reps` calls after one warm-up.
double Time(const std::function<ForwardOutput()>& run, int reps) {
  run();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < reps; ++i) run();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / reps;
}

struct Row {
  std::string pass;
  int sequences, tokens;
  double cpu_s, gpu_s, max_diff;
};

}  // namespace

int main(int argc, char** argv) {
  bool json = false;
  std::string dir;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--json") == 0) {
      json = true;
    } else {
      dir = argv[i];
    }
  }
  if (dir.empty()) {
    const char* shared = std::getenv("SEMMOE_SHARED_DIR");
    if (shared == nullptr) {
      std::fprintf(stderr, "bench_gpu_forward: give MODEL_DIR or set SEMMOE_SHARED_DIR\n");
      return 1;
    }
    dir = std::string(shared) + "/models/qwen3-moe-a";
  }
  namespace model = semmoe::engine::model;
  const model::ModelConfig config = OrDie(model::LoadModelConfig(dir), "config");
  const auto checkpoint = OrDie(semmoe::kernels::Checkpoint::Open(dir), "checkpoint");
  const auto weights = OrDie(model::LoadWeights(config, *checkpoint), "weights");
  const auto cpu = OrDie(model::Transformer::Create(config, *weights), "CPU forward");
  const int page_size = 16, context = 256, max_sequences = 64;
  const int pages = max_sequences * (context / page_size + 1);
  const auto gpu =
      OrDie(GpuTransformer::Create(config, *weights, {.num_pages = pages, .page_size = page_size}),
            "GPU forward");
  const auto cache = OrDie(PagedKvCache::Create({.num_layers = config.num_layers,
                                                 .shape = config.kv_shape(),
                                                 .page_size = page_size,
                                                 .num_pages = pages}),
                           "KV cache");
  std::vector<std::unique_ptr<PagedSequence>> seqs;
  std::vector<std::vector<int32_t>> prompts(max_sequences);
  for (int s = 0; s < max_sequences; ++s) {
    seqs.push_back(cache->NewSequence());
    if (!cache->Reserve(*seqs.back(), context + 1).ok()) return 1;
    for (int t = 0; t < context; ++t) {
      prompts[s].push_back((s * 7919 + t * 104729) % config.vocab_size);
    }
  }

  std::vector<Row> rows;
  auto measure = [&](const std::string& pass, const std::vector<SequenceInput>& batch, int cpu_reps,
                     int gpu_reps) {
    ForwardOutput c = OrDie(cpu->Forward(batch), "CPU pass");
    ForwardOutput g = OrDie(gpu->Forward(batch), "GPU pass");
    const double diff = (g.logits - c.logits).cwiseAbs().maxCoeff();
    int tokens = 0;
    for (const SequenceInput& s : batch) tokens += static_cast<int>(s.tokens.size());
    rows.push_back({pass, static_cast<int>(batch.size()), tokens,
                    Time([&] { return OrDie(cpu->Forward(batch), "CPU pass"); }, cpu_reps),
                    Time([&] { return OrDie(gpu->Forward(batch), "GPU pass"); }, gpu_reps), diff});
  };
  // Every sequence's context, prefilled on both sides first: the decode steps attend to it.
  std::vector<SequenceInput> prefill;
  for (int s = 0; s < max_sequences; ++s) {
    prefill.push_back({prompts[s], 0, seqs[s].get(), LogitsMode::kLast});
  }
  OrDie(cpu->Forward(prefill), "CPU prefill");
  OrDie(gpu->Forward(prefill), "GPU prefill");
  measure("prefill 8 x 256", std::vector<SequenceInput>(prefill.begin(), prefill.begin() + 8), 2,
          10);
  const int32_t next = 11;
  for (int batch_size : {1, 16, 64}) {
    std::vector<SequenceInput> decode;
    for (int s = 0; s < batch_size; ++s) {
      decode.push_back({absl::MakeConstSpan(&next, 1), context, seqs[s].get(), LogitsMode::kLast});
    }
    measure("decode at context 256", decode, 5, 50);
  }

  std::printf("bench_gpu_forward on %s (%d layers, hidden %d, %d experts, top-%d)\n", dir.c_str(),
              config.num_layers, config.hidden_size, config.num_experts, config.top_k);
  std::printf("%-24s %5s %7s %10s %10s %9s %12s %10s\n", "pass", "seqs", "tokens", "cpu ms",
              "gpu ms", "speed-up", "gpu tok/s", "max|dlogit|");
  for (const Row& r : rows) {
    std::printf("%-24s %5d %7d %10.3f %10.3f %9.2f %12.0f %10.2e\n", r.pass.c_str(), r.sequences,
                r.tokens, r.cpu_s * 1e3, r.gpu_s * 1e3, r.cpu_s / r.gpu_s, r.tokens / r.gpu_s,
                r.max_diff);
  }
  if (json) {
    std::printf("{\"model\":\"%s\",\"passes\":[", dir.c_str());
    for (size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      std::printf(
          "%s{\"pass\":\"%s\",\"sequences\":%d,\"tokens\":%d,\"cpu_ms\":%.4f,\"gpu_ms\":%.4f,"
          "\"speedup\":%.3f,\"max_logit_diff\":%.3e}",
          i ? "," : "", r.pass.c_str(), r.sequences, r.tokens, r.cpu_s * 1e3, r.gpu_s * 1e3,
          r.cpu_s / r.gpu_s, r.max_diff);
    }
    std::printf("]}\n");
  }
  return 0;
}
