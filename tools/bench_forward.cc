// bench_forward: prefill and decode throughput of the f32 CPU forward pass, each beside the
// Eigen GEMM rate measured right around it (1024³, one thread), so the share of the machine's
// dense-matmul rate that the model achieves is visible.
//
//   bazel run -c opt --config=opt //tools:bench_forward --
//   --model=$PWD/../shared/models/qwen3-moe-a[,OTHER_MODEL_DIR...]
//
// The passes run on the CPU product's forward (CpuForward, engine/forward/cpu_forward.h, over a
// paged arena of just the measured sequences' pages). Each model is a contender; several are
// measured interleaved (each batch size, each contender in turn) and compared side by side at
// the end: tokens/s against contender 0's. A prefill's first pass is a warm-up, untimed (a
// serving engine's buffers are grown once); decode steps follow an untimed prefill. `--rounds N` repeats the whole interleaved sweep N times and reports each row's median
// (this VM's speed drifts by ±15% within a minute).
//
// FLOPs are counted analytically per token: 2 × (attention projections + the k routed experts +
// router [+ shared expert]) + attention (QKᵀ and PV over the context) + lm_head where logits are
// produced. MLA is counted in its absorbed form (what a decode step runs): q/kv_a/o projections,
// kv_b folded into the query and output per head, scores and PV over the cached latent. Prefill
// runs `--prompt_tokens` per sequence; decode runs `--decode_steps` one-token steps per sequence
// after a prefill of `--context` tokens.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "Eigen/Core"
#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_split.h"
#include "engine/forward/cpu_forward.h"
#include "engine/model/model.h"
#include "engine/runtime/kv_cache.h"

ABSL_FLAG(std::vector<std::string>, model, {},
          "checkpoint directory, or several (comma-separated) to compare side by side");
ABSL_FLAG(std::vector<std::string>, batches, std::vector<std::string>({"1", "16", "64"}),
          "batch sizes");
ABSL_FLAG(int, prompt_tokens, 128, "prefill: tokens per sequence");
ABSL_FLAG(int, context, 128, "decode: context length before the measured steps");
ABSL_FLAG(int, decode_steps, 16, "decode: measured one-token steps");
ABSL_FLAG(double, min_seconds, 1.0, "repeat each measurement for at least this long");
ABSL_FLAG(int, rounds, 1,
          "measure every row this many times, interleaved, and report each row's median");

namespace semmoe::tools {
namespace {

using engine::model::LogitsMode;
using engine::model::ModelConfig;
using engine::model::SequenceInput;
using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

// Square f32 GEMM through Eigen (the kernels every model matmul uses), GFLOP/s.
double GemmGflops(int n, double min_seconds) {
  using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Matrix a = Matrix::Random(n, n), b = Matrix::Random(n, n), c(n, n);
  c.noalias() = a * b;  // Warm-up.
  int reps = 0;
  auto start = Clock::now();
  do {
    c.noalias() = a * b;
    ++reps;
  } while (Seconds(start) < min_seconds);
  return 2.0 * n * n * n * reps / Seconds(start) / 1e9;
}

// FLOPs of one token at context length `context` (attends to `context` positions).
// Multiply-adds of one token's attention at `context`: projections and QKᵀ/PV.
double AttentionMacs(const ModelConfig& c, double context) {
  const double h = c.hidden_size;
  if (!c.mla)
    return h * (2 * c.q_size() + 2 * c.kv_size()) + 2.0 * context * c.num_heads * c.head_dim;
  const engine::model::MlaConfig& m = c.mla_dims;
  const double r = m.kv_lora_rank, dr = m.qk_rope_head_dim, heads = c.num_heads;
  double macs = m.q_lora_rank > 0 ? h * m.q_lora_rank + m.q_lora_rank * c.q_size() : h * c.q_size();
  macs += h * (r + dr) + c.attn_out_size() * h;              // kv_a, o_proj
  macs += heads * (m.qk_nope_head_dim + c.v_head_dim) * r;   // kv_b absorbed
  macs += context * heads * (r + dr) + context * heads * r;  // scores, PV over the latent
  return macs;
}

double TokenFlops(const ModelConfig& c, double context, bool logits) {
  double flops = 0;
  for (int l = 0; l < c.num_layers; ++l) {
    double params = 0;
    if (c.IsMoeLayer(l)) {
      params += static_cast<double>(c.num_experts) * c.hidden_size;  // Router.
      params += 3.0 * c.top_k * c.hidden_size * c.moe_intermediate_size;
      params += 3.0 * c.hidden_size * c.shared_expert_intermediate_size;
    } else {
      params += 3.0 * c.hidden_size * c.intermediate_size;
    }
    flops += 2 * params + 2 * AttentionMacs(c, context);
  }
  if (logits) flops += 2.0 * c.hidden_size * c.vocab_size;
  return flops;
}

std::vector<int32_t> RandomTokens(int n, int vocab, std::mt19937& rng) {
  std::vector<int32_t> t(n);
  for (int32_t& x : t) x = static_cast<int32_t>(rng() % vocab);
  return t;
}

struct Measurement {
  double tokens_per_s;
  double gflops;
};

// The passes of one measurement, over `sequences` sequences of up to `capacity` positions: the
// CPU forward with an arena of just their pages.
class Runner {
 public:
  Runner(const engine::model::Model& m, int sequences, int capacity) {
    const int pages = (capacity + kPage - 1) / kPage * sequences;
    auto cache = engine::runtime::PagedKvCache::Create({.num_layers = m.config.num_layers,
                                                        .shape = m.config.kv_shape(),
                                                        .page_size = kPage,
                                                        .num_pages = pages});
    auto cpu = engine::forward::CpuForward::Create(m.config, *m.weights,
                                                   {.num_pages = pages, .page_size = kPage});
    if (!cache.ok() || !cpu.ok()) {
      std::fprintf(stderr, "bench_forward: %s\n",
                   (cache.ok() ? cpu.status() : cache.status()).ToString().c_str());
      std::exit(1);
    }
    cache_ = std::move(*cache);
    cpu_ = std::move(*cpu);
  }
  std::unique_ptr<engine::model::KvSequence> NewSequence(int capacity) {
    std::unique_ptr<engine::runtime::PagedSequence> seq = cache_->NewSequence();
    if (!cache_->Reserve(*seq, capacity).ok()) std::exit(1);
    return seq;
  }
  absl::StatusOr<engine::model::ForwardOutput> Forward(absl::Span<const SequenceInput> batch) {
    return cpu_->Forward(batch);
  }

 private:
  static constexpr int kPage = 16;
  std::unique_ptr<engine::runtime::PagedKvCache> cache_;
  std::unique_ptr<engine::forward::CpuForward> cpu_;
};

Measurement Prefill(const engine::model::Model& m, int batch, int tokens, double min_seconds) {
  Runner runner(m, batch, tokens);
  const ModelConfig& c = m.config;
  std::mt19937 rng(batch);
  std::vector<std::vector<int32_t>> prompts;
  for (int b = 0; b < batch; ++b) prompts.push_back(RandomTokens(tokens, c.vocab_size, rng));
  double flops_per_seq = 0;
  for (int t = 0; t < tokens; ++t) flops_per_seq += TokenFlops(c, t + 1, t == tokens - 1);
  int reps = -1;  // The first pass warms up (a serving engine's buffers are grown), untimed.
  double elapsed = 0;
  do {
    std::vector<std::unique_ptr<engine::model::KvSequence>> kvs;
    std::vector<SequenceInput> in;
    for (int b = 0; b < batch; ++b) {
      kvs.push_back(runner.NewSequence(tokens));
      in.push_back({prompts[b], 0, kvs.back().get(), LogitsMode::kLast});
    }
    auto start = Clock::now();
    auto out = runner.Forward(in);
    if (reps >= 0) elapsed += Seconds(start);
    if (!out.ok()) {
      std::fprintf(stderr, "%s\n", out.status().ToString().c_str());
      std::exit(1);
    }
    ++reps;
  } while (reps < 1 || elapsed < min_seconds);
  return {static_cast<double>(batch) * tokens * reps / elapsed,
          flops_per_seq * batch * reps / elapsed / 1e9};
}

Measurement Decode(const engine::model::Model& m, int batch, int context, int steps,
                   double min_seconds) {
  const ModelConfig& c = m.config;
  Runner runner(m, batch, context + steps);
  std::mt19937 rng(1000 + batch);
  double flops_per_step = 0;
  int reps = 0;
  double elapsed = 0;
  std::vector<std::unique_ptr<engine::model::KvSequence>> kvs;
  do {
    kvs.clear();  // Their pages back first.
    std::vector<std::vector<int32_t>> prompts;
    std::vector<SequenceInput> in;
    for (int b = 0; b < batch; ++b) {
      kvs.push_back(runner.NewSequence(context + steps));
      prompts.push_back(RandomTokens(context, c.vocab_size, rng));
      in.push_back({prompts.back(), 0, kvs.back().get(), LogitsMode::kNone});
    }
    if (!runner.Forward(in).ok()) std::exit(1);
    std::vector<int32_t> next(batch);
    for (int s = 0; s < steps; ++s) {
      in.clear();
      for (int b = 0; b < batch; ++b) {
        next[b] = static_cast<int32_t>(rng() % c.vocab_size);
        in.push_back(
            {absl::MakeConstSpan(&next[b], 1), context + s, kvs[b].get(), LogitsMode::kLast});
      }
      auto start = Clock::now();
      auto out = runner.Forward(in);
      elapsed += Seconds(start);
      if (!out.ok()) std::exit(1);
      if (reps == 0) flops_per_step += batch * TokenFlops(c, context + s + 1, true);
    }
    ++reps;
  } while (elapsed < min_seconds);
  return {static_cast<double>(batch) * steps * reps / elapsed,
          flops_per_step * reps / elapsed / 1e9};
}

int Main() {
  const std::vector<std::string> dirs = absl::GetFlag(FLAGS_model);
  if (dirs.empty()) {
    std::fprintf(stderr, "bench_forward: --model is required\n");
    return 2;
  }
  std::vector<std::unique_ptr<engine::model::Model>> models;
  for (const std::string& dir : dirs) {
    auto model = engine::model::LoadModel(dir);
    if (!model.ok()) {
      std::fprintf(stderr, "bench_forward: %s\n", model.status().ToString().c_str());
      return 1;
    }
    const ModelConfig& c = (*model)->config;
    const engine::model::KvShape kv = c.kv_shape();
    std::printf(
        "model %zu %s: %s, hidden %d, %d layers (%zu MoE), %d experts top-%d, expert ffn "
        "%d, shared ffn %d; KV cache %d floats per token per layer%s\n",
        models.size(), dir.c_str(), std::string(engine::model::ArchName(c.arch)).c_str(),
        c.hidden_size, c.num_layers, c.MoeLayers().size(), c.num_experts, c.top_k,
        c.moe_intermediate_size, c.shared_expert_intermediate_size, kv.floats(),
        c.mla ? " (MLA latent + rotary key)" : " (K and V)");
    models.push_back(std::move(*model));
  }
  const double min_s = absl::GetFlag(FLAGS_min_seconds);
  // Each row gets its own GEMM reference, measured right before and right after it and
  // averaged: on a shared VM the clock drifts by ±15% within a minute (more at times), and a
  // share should compare like with like.
  std::vector<int> batches;
  for (const std::string& b : absl::GetFlag(FLAGS_batches)) batches.push_back(std::stoi(b));
  struct Row {
    std::string phase;
    int batch;
    size_t model;
    Measurement m;
    double gemm;
  };
  std::vector<Row> rows;
  auto measure = [&](const std::string& phase, int batch, size_t model,
                     const std::function<Measurement()>& run) {
    const double before = GemmGflops(1024, min_s / 2);
    const Measurement m = run();
    const double after = GemmGflops(1024, min_s / 2);
    rows.push_back({phase, batch, model, m, (before + after) / 2});
  };
  const int rounds = absl::GetFlag(FLAGS_rounds);
  if (rounds < 1) {
    std::fprintf(stderr, "bench_forward: --rounds must be at least 1\n");
    return 2;
  }
  for (int round = 0; round < rounds; ++round) {
    for (int batch : batches) {
      for (size_t i = 0; i < models.size(); ++i) {
        measure("prefill", batch, i, [&] {
          return Prefill(*models[i], batch, absl::GetFlag(FLAGS_prompt_tokens), min_s);
        });
      }
    }
    for (int batch : batches) {
      for (size_t i = 0; i < models.size(); ++i) {
        measure("decode", batch, i, [&] {
          return Decode(*models[i], batch, absl::GetFlag(FLAGS_context),
                        absl::GetFlag(FLAGS_decode_steps), min_s);
        });
      }
    }
  }
  // With several rounds, each row's median over them (tokens/s, GFLOP/s and GEMM each).
  if (rounds > 1) {
    std::vector<Row> medians;
    for (size_t r = 0; r < rows.size() / rounds; ++r) {
      std::vector<double> tps, gf, gemm;
      for (int k = 0; k < rounds; ++k) {
        const Row& x = rows[k * (rows.size() / rounds) + r];
        tps.push_back(x.m.tokens_per_s);
        gf.push_back(x.m.gflops);
        gemm.push_back(x.gemm);
      }
      auto median = [](std::vector<double> v) {
        std::sort(v.begin(), v.end());
        return v.size() % 2 == 1 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
      };
      Row m = rows[r];
      m.m = {median(tps), median(gf)};
      m.gemm = median(gemm);
      medians.push_back(m);
    }
    rows = std::move(medians);
    std::printf("medians over %d rounds:\n", rounds);
  }
  std::printf("%-6s %-14s %12s %10s %16s %14s\n", "cont.", "phase batch", "tokens/s", "GFLOP/s",
              "GEMM GFLOP/s", "share of GEMM");
  for (const Row& r : rows) {
    std::printf("%-6zu %-14s %12.0f %10.2f %16.1f %13.0f%%\n", r.model,
                (r.phase + " " + std::to_string(r.batch)).c_str(), r.m.tokens_per_s, r.m.gflops,
                r.gemm, 100 * r.m.gflops / r.gemm);
  }
  if (models.size() > 1) {
    // Side by side: each contender's tokens/s over contender 0's, measured next to each other.
    std::printf("\nagainst contender 0 (tokens/s ratio, same phase and batch):\n");
    for (const Row& r : rows) {
      if (r.model == 0) continue;
      for (const Row& base : rows) {
        if (base.model == 0 && base.phase == r.phase && base.batch == r.batch) {
          std::printf("  contender %zu %-14s %.2fx\n", r.model,
                      (r.phase + " " + std::to_string(r.batch)).c_str(),
                      r.m.tokens_per_s / base.m.tokens_per_s);
        }
      }
    }
  }
  std::printf("\n(prefill: %d tokens per sequence; decode: context %d, %d steps per run)\n",
              absl::GetFlag(FLAGS_prompt_tokens), absl::GetFlag(FLAGS_context),
              absl::GetFlag(FLAGS_decode_steps));
  return 0;
}

}  // namespace
}  // namespace semmoe::tools

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return semmoe::tools::Main();
}
