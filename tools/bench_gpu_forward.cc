// bench_gpu_forward: the engine's forward pass on the GPU (engine/gpu) against the CPU forward,
// side by side in one run, on two models: a real checkpoint (the shared qwen3-moe-a: hidden 256,
// 32 experts — small enough that every GPU pass is launch-bound) and a random model of
// Qwen3-30B-A3B's shape (hidden 2048, 32 query / 4 KV heads of 128, 128 experts of 768, top-8,
// vocabulary 151,936; `--synthetic_layers` of its 48 layers, 4 by default, 0 to skip), where a
// decode step reads gigabytes of expert weights. For each: a prefill batch and decode steps at
// batch 1, 16 and 64, timed on the GPU with bf16 weights, the bf16 GPU with decode steps replayed
// as CUDA graphs, the GPU with f32 weights (the checkpoint only) and the CPU (f32, one thread: on
// the random model decode at batch 1 only, after prefilling one sequence). Prints milliseconds
// per pass, the speed-ups over the CPU, tokens per second of the faster bf16 pass and the largest
// logit differences (bf16 and f32 against the CPU, graphs against eager bf16; a sanity check —
// the tests hold the tolerances). For decode it also prints the bytes a bf16 step must read
// (attention, router and lm_head weights, the experts the batch routes to, the bf16 KV cache) over
// the step's time, as a share of the device's copy bandwidth measured in the same run
// (device-to-device cudaMemcpy of 1 GiB): issue 23's "weight-bandwidth bound" figure. Each model's
// table is printed as soon as it is measured. Needs a GPU; built by tests/gpu/build.sh, run by
// tests/gpu/run.sh.
//
//   bench_gpu_forward [--json] [--synthetic_layers N] [MODEL_DIR]
//       (MODEL_DIR default: $SEMMOE_SHARED_DIR/models/qwen3-moe-a)
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "engine/forward/cpu_forward.h"
#include "engine/forward/testing/random_model.h"
#include "engine/gpu/gpu_transformer.h"
#include "engine/model/forward_io.h"
#include "engine/model/weights.h"
#include "engine/runtime/kv_cache.h"
#include "engine/text/config.h"
#include "kernels/safetensors.h"

namespace {

using semmoe::engine::gpu::GpuTransformer;
using semmoe::engine::model::ForwardOutput;
using semmoe::engine::model::LogitsMode;
using semmoe::engine::model::SequenceInput;
using semmoe::engine::runtime::PagedKvCache;
using semmoe::engine::runtime::PagedSequence;

void Check(const absl::Status& status, const char* what) {
  if (!status.ok()) {
    std::fprintf(stderr, "bench_gpu_forward: %s: %s\n", what, status.ToString().c_str());
    std::exit(1);
  }
}

template <typename T>
T OrDie(absl::StatusOr<T> v, const char* what) {
  Check(v.status(), what);
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
  double cpu_s, f32_s, bf16_s, graph_s;  // NaN: not measured.
  double f32_diff, bf16_diff, graph_diff;
  double bytes = 0;  // Decode: what a bf16 step reads.
};

constexpr double kNone = std::numeric_limits<double>::quiet_NaN();

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
// sequence (bf16); lm_head (bf16) once.
double DecodeBytes(const semmoe::engine::model::ModelConfig& c,
                   const std::vector<semmoe::engine::model::Routing>& routing, int sequences,
                   int context) {
  const double hidden = c.hidden_size, inter = c.moe_intermediate_size;
  double bytes = 2.0 * c.vocab_size * hidden;
  for (int l = 0; l < c.num_layers; ++l) {
    bytes += 2.0 * hidden * (2.0 * c.q_size() + 2.0 * c.kv_size());  // q, o; k, v.
    bytes += 4.0 * c.num_experts * hidden;
    bytes += 2.0 * 2.0 * context * c.kv_size() * sequences;
  }
  for (const auto& r : routing) {
    const std::set<int32_t> used(r.expert_ids.begin(), r.expert_ids.end());
    bytes += 2.0 * 3.0 * hidden * inter * used.size();
  }
  return bytes;
}

double MaxDiff(const ForwardOutput& a, const ForwardOutput& b) {
  return (a.logits - b.logits).cwiseAbs().maxCoeff();
}

std::string Ms(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", s * 1e3);
  return std::isnan(s) ? "-" : buf;
}
std::string Ratio(double a, double b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", a / b);
  return std::isnan(a) || std::isnan(b) ? "-" : buf;
}
std::string Json(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return std::isnan(v) ? "null" : buf;
}

// One model: a prefill batch (8 x 256) and decode steps at batch 1, 16 and 64 at context 256 on
// the GPU in bf16, bf16 with decode graphs and (`with_f32`) f32, and on the CPU for the passes
// over its first `cpu_sequences` sequences only (the CPU forward is one thread: at a production
// shape it prefills one sequence's context, not 64); prints the model's table.
void BenchModel(const std::string& name, const semmoe::engine::model::ModelConfig& config,
                const semmoe::engine::model::ModelWeights& weights, bool with_f32,
                int cpu_sequences, double copy_bandwidth, bool json) {
  namespace model = semmoe::engine::model;
  const int page_size = 16, context = 256, max_sequences = 64;
  const int pages = max_sequences * (context / page_size + 1);
  // The CPU product's forward, its arena indexed by the same page tables as the GPUs'.
  const auto cpu = OrDie(semmoe::engine::forward::CpuForward::Create(
                             config, weights, {.num_pages = pages, .page_size = page_size}),
                         "CPU forward");
  std::unique_ptr<GpuTransformer> gpu;
  if (with_f32) {
    gpu =
        OrDie(GpuTransformer::Create(config, weights, {.num_pages = pages, .page_size = page_size}),
              "GPU forward (f32)");
  }
  const auto gpu16 =
      OrDie(GpuTransformer::Create(config, weights,
                                   {.bf16 = true, .num_pages = pages, .page_size = page_size}),
            "GPU forward (bf16)");
  const auto graphs = OrDie(GpuTransformer::Create(config, weights,
                                                   {.bf16 = true,
                                                    .num_pages = pages,
                                                    .page_size = page_size,
                                                    .decode_graphs = max_sequences}),
                            "GPU forward (bf16, decode graphs)");
  const auto cache = OrDie(PagedKvCache::Create({.num_layers = config.num_layers,
                                                 .shape = config.kv_shape(),
                                                 .page_size = page_size,
                                                 .num_pages = pages}),
                           "KV cache");
  std::vector<std::unique_ptr<PagedSequence>> seqs;
  std::vector<std::vector<int32_t>> prompts(max_sequences);
  for (int s = 0; s < max_sequences; ++s) {
    seqs.push_back(cache->NewSequence());
    Check(cache->Reserve(*seqs.back(), context + 1), "KV pages");
    for (int t = 0; t < context; ++t) {
      prompts[s].push_back((s * 7919 + t * 104729) % config.vocab_size);
    }
  }
  std::vector<GpuTransformer*> gpus = {gpu16.get(), graphs.get()};
  if (gpu) gpus.push_back(gpu.get());

  std::vector<Row> rows;
  auto measure = [&](const std::string& pass, const std::vector<SequenceInput>& batch, int cpu_reps,
                     int gpu_reps, bool decode) {
    const bool with_cpu = static_cast<int>(batch.size()) <= cpu_sequences;
    const ForwardOutput h =
        OrDie(gpu16->Forward(batch, {.collect_routing = true}), "GPU pass (bf16)");
    int tokens = 0;
    for (const SequenceInput& s : batch) tokens += static_cast<int>(s.tokens.size());
    Row row{pass, static_cast<int>(batch.size()), tokens, kNone, kNone, kNone, kNone, kNone, kNone,
            kNone};
    ForwardOutput c;
    if (with_cpu) {
      c = OrDie(cpu->Forward(batch), "CPU pass");
      row.cpu_s = Time([&] { return OrDie(cpu->Forward(batch), "CPU pass"); }, cpu_reps);
      row.bf16_diff = MaxDiff(h, c);
    }
    if (gpu) {
      if (with_cpu) row.f32_diff = MaxDiff(OrDie(gpu->Forward(batch), "GPU pass (f32)"), c);
      row.f32_s = Time([&] { return OrDie(gpu->Forward(batch), "GPU pass (f32)"); }, gpu_reps);
    }
    row.bf16_s = Time([&] { return OrDie(gpu16->Forward(batch), "GPU pass (bf16)"); }, gpu_reps);
    if (decode) {  // Prefill passes are never graphed.
      // The graphs' pass twice first: a bucket runs eagerly once, then is captured.
      OrDie(graphs->Forward(batch), "GPU pass (bf16, graphs)");
      row.graph_diff = MaxDiff(OrDie(graphs->Forward(batch), "GPU pass (bf16, graphs)"), h);
      row.graph_s =
          Time([&] { return OrDie(graphs->Forward(batch), "GPU pass (bf16, graphs)"); }, gpu_reps);
      row.bytes = DecodeBytes(config, h.routing, row.sequences, context);
    }
    rows.push_back(row);
  };
  // Every sequence's context, prefilled on each side first: the decode steps attend to it.
  std::vector<SequenceInput> prefill;
  for (int s = 0; s < max_sequences; ++s) {
    prefill.push_back({prompts[s], 0, seqs[s].get(), LogitsMode::kLast});
  }
  OrDie(cpu->Forward(std::vector<SequenceInput>(prefill.begin(), prefill.begin() + cpu_sequences)),
        "CPU prefill");
  for (GpuTransformer* g : gpus) OrDie(g->Forward(prefill), "GPU prefill");
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

  std::printf(
      "\nbench_gpu_forward: %s (%d layers, hidden %d, %d experts of %d, top-%d, vocab %d)\n",
      name.c_str(), config.num_layers, config.hidden_size, config.num_experts,
      config.moe_intermediate_size, config.top_k, config.vocab_size);
  std::printf("device copy bandwidth %.0f GB/s; decode graphs replayed %lld steps\n",
              copy_bandwidth / 1e9, static_cast<long long>(graphs->graph_replays()));
  // |dl|: the largest logit difference, bf16 and f32 against the CPU, the graphs against eager
  // bf16 (the same kernels: expect 0). Bandwidth: the step's bytes over its time / copy bandwidth.
  std::printf("%-22s %4s %6s %9s %9s %9s %9s %8s %8s %8s %11s %9s %9s %9s %8s %7s %7s\n", "pass",
              "seqs", "tokens", "cpu ms", "f32 ms", "bf16 ms", "graph ms", "cpu/f32", "cpu/bf16",
              "cpu/grph", "tok/s", "f32 |dl|", "bf16 |dl|", "grph |dl|", "MB/step", "bf16 bw",
              "grph bw");
  for (const Row& r : rows) {
    const double best = std::isnan(r.graph_s) ? r.bf16_s : std::min(r.bf16_s, r.graph_s);
    std::printf("%-22s %4d %6d %9s %9s %9s %9s %8s %8s %8s %11.0f %9.2e %9.2e %9.2e",
                r.pass.c_str(), r.sequences, r.tokens, Ms(r.cpu_s).c_str(), Ms(r.f32_s).c_str(),
                Ms(r.bf16_s).c_str(), Ms(r.graph_s).c_str(), Ratio(r.cpu_s, r.f32_s).c_str(),
                Ratio(r.cpu_s, r.bf16_s).c_str(), Ratio(r.cpu_s, r.graph_s).c_str(),
                r.tokens / best, r.f32_diff, r.bf16_diff, r.graph_diff);
    if (r.bytes > 0 && copy_bandwidth > 0) {
      std::printf(" %8.2f %6.1f%% %6.1f%%", r.bytes / 1e6,
                  100.0 * r.bytes / r.bf16_s / copy_bandwidth,
                  100.0 * r.bytes / r.graph_s / copy_bandwidth);
    }
    std::printf("\n");
  }
  if (json) {
    std::printf("{\"model\":\"%s\",\"copy_bandwidth\":%.0f,\"passes\":[", name.c_str(),
                copy_bandwidth);
    for (size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      std::printf(
          "%s{\"pass\":\"%s\",\"sequences\":%d,\"tokens\":%d,\"cpu_ms\":%s,\"gpu_f32_ms\":%s,"
          "\"gpu_bf16_ms\":%s,\"gpu_bf16_graph_ms\":%s,\"f32_max_logit_diff\":%s,"
          "\"bf16_max_logit_diff\":%s,\"graph_max_logit_diff\":%s,\"bf16_bytes_per_step\":%.0f}",
          i ? "," : "", r.pass.c_str(), r.sequences, r.tokens, Json(r.cpu_s * 1e3).c_str(),
          Json(r.f32_s * 1e3).c_str(), Json(r.bf16_s * 1e3).c_str(), Json(r.graph_s * 1e3).c_str(),
          Json(r.f32_diff).c_str(), Json(r.bf16_diff).c_str(), Json(r.graph_diff).c_str(), r.bytes);
    }
    std::printf("]}\n");
  }
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  bool json = false;
  int synthetic_layers = 4;
  std::string dir;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--json") == 0) {
      json = true;
    } else if (std::strcmp(argv[i], "--synthetic_layers") == 0 && i + 1 < argc) {
      if (!absl::SimpleAtoi(argv[++i], &synthetic_layers) || synthetic_layers < 0 ||
          synthetic_layers > 48) {
        std::fprintf(stderr, "bench_gpu_forward: --synthetic_layers %s: not a count of 0..48\n",
                     argv[i]);
        return 2;
      }
    } else if (argv[i][0] == '-') {
      std::fprintf(stderr,
                   "usage: bench_gpu_forward [--json] [--synthetic_layers N] [MODEL_DIR]\n");
      return 2;
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
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "bench_gpu_forward: this machine has no CUDA device\n");
    return 1;
  }
  const double copy_bandwidth = CopyBandwidth();
  {
    const model::ModelConfig config = OrDie(model::LoadModelConfig(dir), "config");
    const auto checkpoint = OrDie(semmoe::kernels::Checkpoint::Open(dir), "checkpoint");
    const auto weights = OrDie(model::LoadWeights(config, *checkpoint), "weights");
    BenchModel(dir, config, *weights, /*with_f32=*/true, /*cpu_sequences=*/64, copy_bandwidth,
               json);
  }
  if (synthetic_layers > 0) {
    const model::ModelConfig config = OrDie(
        semmoe::engine::forward::testing::Qwen3A3bConfig(synthetic_layers), "Qwen3-30B-A3B config");
    const auto start = std::chrono::steady_clock::now();
    const model::ModelWeights weights = semmoe::engine::forward::testing::RandomWeights(
        config, 1, {.fast_uniform = true, .stddev = 0.02f});
    std::printf("\nrandom Qwen3-30B-A3B-shaped weights, %d layers: %.1f s\n", synthetic_layers,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    BenchModel("random, Qwen3-30B-A3B shape", config, weights, /*with_f32=*/false,
               /*cpu_sequences=*/1, copy_bandwidth, json);
  }
  return 0;
}
