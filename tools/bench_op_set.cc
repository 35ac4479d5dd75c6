// bench_op_set: the CPU Transformer (engine/model/transformer.h) against the op-set forward on the
// CPU op set (ForwardRunner<CpuOps>, engine/forward/forward_runner.h), f32, one thread, side by
// side in one run: for batch 1, 16 and 64, a prefill of 128 tokens per sequence and 16 decode steps
// after it, each measured three times alternating the two after an untimed warm-up of each;
// prints tokens/s of each and the ratio (op set over Transformer). Issue 36 moves the CPU product
// onto the op set; this is the gate.
//
//   bazel run -c opt //tools:bench_op_set -- MODEL_DIR [prefill|decode]
// (a phase named: only that phase's lines, e.g. to profile it).
#include <chrono>
#include <cstdio>
#include <random>
#include <string>

#include "engine/forward/cpu_ops.h"
#include "engine/forward/forward_runner.h"
#include "engine/forward/model_view.h"
#include "engine/model/model.h"
#include "engine/runtime/kv_cache.h"

using namespace semmoe::engine;
using Clock = std::chrono::steady_clock;
double Sec(Clock::time_point s) { return std::chrono::duration<double>(Clock::now() - s).count(); }

int main(int argc, char** argv) {
  const std::string only = argc == 3 ? argv[2] : "";
  if (argc < 2 || argc > 3 || (argc == 3 && only != "prefill" && only != "decode")) {
    std::fprintf(stderr, "usage: bench_op_set MODEL_DIR [prefill|decode]\n");
    return 2;
  }
  auto m = model::LoadModel(argv[1]);
  if (!m.ok()) {
    std::printf("%s\n", m.status().ToString().c_str());
    return 1;
  }
  const model::ModelConfig& c = (*m)->config;
  const int page = 16, pages = 64 * 20;
  auto cache = runtime::PagedKvCache::Create(
      {.num_layers = c.num_layers, .shape = c.kv_shape(), .page_size = page, .num_pages = pages});
  forward::CpuOps ops;
  forward::ForwardRunner<forward::CpuOps> runner(c, forward::HostView(*(*m)->weights),
                                                 {pages, page}, ops);
  if (absl::Status s = runner.Init(); !s.ok()) {
    std::printf("%s\n", s.ToString().c_str());
    return 1;
  }
  std::mt19937 rng(1);
  for (int batch : {1, 16, 64}) {
    for (int phase = 0; phase < 2; ++phase) {
      if (!only.empty() && only != (phase == 0 ? "prefill" : "decode")) continue;
      double t[2] = {0, 0};
      int64_t toks = 0;
      for (int rep = -1; rep < 3; ++rep) {  // rep −1 warms up, untimed.
        for (int impl = 0; impl < 2; ++impl) {
          std::vector<std::unique_ptr<runtime::PagedSequence>> seqs;
          std::vector<std::vector<int32_t>> prompts;
          std::vector<model::SequenceInput> in;
          for (int b = 0; b < batch; ++b) {
            seqs.push_back((*cache)->NewSequence());
            if (!(*cache)->Reserve(*seqs.back(), 128 + 16).ok()) return 2;
            std::vector<int32_t> p(128);
            for (auto& x : p) x = rng() % c.vocab_size;
            prompts.push_back(p);
            in.push_back({prompts.back(), 0, seqs.back().get(),
                          phase == 0 ? model::LogitsMode::kLast : model::LogitsMode::kNone});
          }
          auto run = [&](absl::Span<const model::SequenceInput> b) {
            if (impl == 0) return (*m)->transformer->Forward(b);
            return runner.Forward(b, {});
          };
          auto s = Clock::now();
          auto out = run(in);
          if (!out.ok()) {
            std::printf("%s\n", out.status().ToString().c_str());
            return 3;
          }
          const bool timed = rep >= 0;
          if (phase == 0) {
            if (timed) t[impl] += Sec(s);
            if (timed && impl == 0) toks += batch * 128;
            continue;
          }
          std::vector<int32_t> next(batch);
          for (int st = 0; st < 16; ++st) {
            in.clear();
            for (int b = 0; b < batch; ++b) {
              next[b] = rng() % c.vocab_size;
              in.push_back({absl::MakeConstSpan(&next[b], 1), 128 + st, seqs[b].get(),
                            model::LogitsMode::kLast});
            }
            auto s2 = Clock::now();
            if (!run(in).ok()) return 4;
            if (timed) t[impl] += Sec(s2);
            if (timed && impl == 0) toks += batch;
          }
        }
      }
      std::printf("%s batch %2d: transformer %9.0f tok/s  op set %9.0f tok/s  ratio %.2f\n",
                  phase == 0 ? "prefill" : "decode ", batch, toks / t[0], toks / t[1], t[0] / t[1]);
      std::fflush(stdout);
    }
  }
}
