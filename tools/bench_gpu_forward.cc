// bench_gpu_forward: the engine's forward pass on the GPU (engine/gpu), with f32 and with bf16
// weights, against the CPU forward, side by side in one run, on a real checkpoint: a prefill
// batch and decode steps at several batch sizes. Prints milliseconds per pass, the speed-ups (CPU
// time / GPU time), the bf16 GPU's tokens per second, and the largest logit difference of each
// GPU pass from the CPU's (a sanity check; the tests hold the tolerances). For decode it also
// prints the bytes a bf16 step must read (the weights of attention, lm_head and the experts the
// batch routes to, plus the KV cache) over the step's time, as a share of the device's copy
// bandwidth measured in the same run (device-to-device cudaMemcpy of 1 GiB): issue 23's
// "weight-bandwidth bound" figure. Needs a GPU; built by tests/gpu/build.sh, run by
// tests/gpu/run.sh.
//
//   bench_gpu_forward [--json] [MODEL_DIR]   (default: $SEMMOE_SHARED_DIR/models/qwen3-moe-a)
#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <set>
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
  double cpu_s, f32_s, bf16_s, f32_diff, bf16_diff;
  double bytes = 0;  // Decode: what a bf16 step reads.
};

// Device-to-device copy bandwidth (read + write bytes per second) over 1 GiB, best of 5.
double CopyBandwidth() {
  const size_t bytes = size_t{1} << 30;
  void *a = nullptr, *b = nullptr;
  if (cudaMalloc(&a, bytes) != cudaSuccess || cudaMalloc(&b, bytes) != cudaSuccess) return 0;
  double best = 0;
  for (int i = 0; i < 6; ++i) {
    cudaDeviceSynchronize();
    const auto start = std::chrono::steady_clock::now();
    cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice);
    cudaDeviceSynchronize();
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (i > 0) best = std::max(best, 2.0 * bytes / s);
  }
  cudaFree(a);
  cudaFree(b);
  return best;
}

// Bytes one bf16 decode step reads: per layer q, k, v, o (bf16), the router (f32), the experts
// the step routes to (bf16, from `routing`), the KV cache over `context` positions of each
// sequence (f32); lm_head (bf16) once.
double DecodeBytes(const semmoe::engine::model::ModelConfig& c,
                   const std::vector<semmoe::engine::model::Routing>& routing, int sequences,
                   int context) {
  const double hidden = c.hidden_size, inter = c.moe_intermediate_size;
  double bytes = 2.0 * c.vocab_size * hidden;
  for (int l = 0; l < c.num_layers; ++l) {
    bytes += 2.0 * hidden * (2.0 * c.q_size() + 2.0 * c.kv_size());  // q, o; k, v.
    bytes += 4.0 * c.num_experts * hidden;
    bytes += 2.0 * 4.0 * context * c.kv_size() * sequences;
  }
  for (const auto& r : routing) {
    const std::set<int32_t> used(r.expert_ids.begin(), r.expert_ids.end());
    bytes += 2.0 * 3.0 * hidden * inter * used.size();
  }
  return bytes;
}

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
            "GPU forward (f32)");
  const auto gpu16 =
      OrDie(GpuTransformer::Create(config, *weights,
                                   {.bf16 = true, .num_pages = pages, .page_size = page_size}),
            "GPU forward (bf16)");
  const double copy_bandwidth = CopyBandwidth();
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
                     int gpu_reps, bool decode) {
    ForwardOutput c = OrDie(cpu->Forward(batch), "CPU pass");
    ForwardOutput g = OrDie(gpu->Forward(batch), "GPU pass (f32)");
    ForwardOutput h = OrDie(gpu16->Forward(batch, {.collect_routing = true}), "GPU pass (bf16)");
    int tokens = 0;
    for (const SequenceInput& s : batch) tokens += static_cast<int>(s.tokens.size());
    Row row{pass,
            static_cast<int>(batch.size()),
            tokens,
            Time([&] { return OrDie(cpu->Forward(batch), "CPU pass"); }, cpu_reps),
            Time([&] { return OrDie(gpu->Forward(batch), "GPU pass (f32)"); }, gpu_reps),
            Time([&] { return OrDie(gpu16->Forward(batch), "GPU pass (bf16)"); }, gpu_reps),
            (g.logits - c.logits).cwiseAbs().maxCoeff(),
            (h.logits - c.logits).cwiseAbs().maxCoeff()};
    if (decode) row.bytes = DecodeBytes(config, h.routing, row.sequences, context);
    rows.push_back(row);
  };
  // Every sequence's context, prefilled on both sides first: the decode steps attend to it.
  std::vector<SequenceInput> prefill;
  for (int s = 0; s < max_sequences; ++s) {
    prefill.push_back({prompts[s], 0, seqs[s].get(), LogitsMode::kLast});
  }
  OrDie(cpu->Forward(prefill), "CPU prefill");
  OrDie(gpu->Forward(prefill), "GPU prefill (f32)");
  OrDie(gpu16->Forward(prefill), "GPU prefill (bf16)");
  measure("prefill 8 x 256", std::vector<SequenceInput>(prefill.begin(), prefill.begin() + 8), 2,
          10, false);
  const int32_t next = 11;
  for (int batch_size : {1, 16, 64}) {
    std::vector<SequenceInput> decode;
    for (int s = 0; s < batch_size; ++s) {
      decode.push_back({absl::MakeConstSpan(&next, 1), context, seqs[s].get(), LogitsMode::kLast});
    }
    measure("decode at context 256", decode, 5, 50, true);
  }

  std::printf("bench_gpu_forward on %s (%d layers, hidden %d, %d experts, top-%d)\n", dir.c_str(),
              config.num_layers, config.hidden_size, config.num_experts, config.top_k);
  std::printf("device copy bandwidth %.0f GB/s\n", copy_bandwidth / 1e9);
  std::printf("%-22s %4s %6s %9s %9s %9s %8s %8s %11s %9s %9s %8s %7s\n", "pass", "seqs", "tokens",
              "cpu ms", "f32 ms", "bf16 ms", "cpu/f32", "cpu/bf16", "bf16 tok/s", "f32 |dl|",
              "bf16 |dl|", "MB/step", "of copy");
  for (const Row& r : rows) {
    std::printf("%-22s %4d %6d %9.3f %9.3f %9.3f %8.2f %8.2f %11.0f %9.2e %9.2e", r.pass.c_str(),
                r.sequences, r.tokens, r.cpu_s * 1e3, r.f32_s * 1e3, r.bf16_s * 1e3,
                r.cpu_s / r.f32_s, r.cpu_s / r.bf16_s, r.tokens / r.bf16_s, r.f32_diff,
                r.bf16_diff);
    if (r.bytes > 0 && copy_bandwidth > 0) {
      std::printf(" %8.2f %6.1f%%", r.bytes / 1e6, 100.0 * r.bytes / r.bf16_s / copy_bandwidth);
    }
    std::printf("\n");
  }
  if (json) {
    std::printf("{\"model\":\"%s\",\"passes\":[", dir.c_str());
    for (size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      std::printf(
          "%s{\"pass\":\"%s\",\"sequences\":%d,\"tokens\":%d,\"cpu_ms\":%.4f,"
          "\"gpu_f32_ms\":%.4f,\"gpu_bf16_ms\":%.4f,\"f32_max_logit_diff\":%.3e,"
          "\"bf16_max_logit_diff\":%.3e,\"bf16_bytes_per_step\":%.0f,\"copy_bandwidth\":%.0f}",
          i ? "," : "", r.pass.c_str(), r.sequences, r.tokens, r.cpu_s * 1e3, r.f32_s * 1e3,
          r.bf16_s * 1e3, r.f32_diff, r.bf16_diff, r.bytes, copy_bandwidth);
    }
    std::printf("]}\n");
  }
  return 0;
}
