// engine: one Sem-MoE engine rank, and its offline subcommands.
//
//   engine generate --model DIR --prompt TEXT [--max_tokens N] [--greedy] [--json] ...
//   engine score    --model DIR --input IN.jsonl --out OUT.jsonl
//   engine trace    --model DIR --prompts PROMPTS.jsonl --out TRACE
//   engine serve    --model DIR --rank R --ranks G --rendezvous file:DIR|grpc:HOST:PORT
//                   [--attn dp|tp] [--placement vanilla|FILE] [--affinity FILE] [--port P]
//                   [--placement VERSION --planner HOST:PORT]  (a version and its tables from
//                                                               the planner)
//                   [--follow_active MODEL]  (with --planner: roll out each new active version)
//
// Exit status: 0 on success, 1 when the work failed (the error is printed), 2 for bad usage.

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/file.h"
#include "common/logging.h"
#include "common/progress.h"
#include "common/security.h"
#include "common/security_flags.h"
#include "common/status_macros.h"
#include "common/stop_signals.h"
#include "engine/backend/device_backend.h"
#include "engine/model/model.h"
#include "engine/offline/cpu_prefill.h"
#include "engine/offline/jsonl.h"
#include "engine/offline/score.h"
#include "engine/offline/trace_run.h"
#include "engine/runtime/batch_engine.h"
#include "engine/server/rank_server.h"
#include "engine/text/generation_config.h"
#include "nlohmann/json.hpp"

ABSL_FLAG(std::string, model, "",
          "checkpoint directory (config.json, *.safetensors, tokenizer.json)");
ABSL_FLAG(std::string, device, "cpu",
          "cpu, or cuda / cuda:N: the forward passes on CUDA device N (default 0); serve: one "
          "GPU per rank, --attn dp. cuda needs a build made where the CUDA toolkit is "
          "(docs/BUILD.md)");
ABSL_FLAG(std::string, precision, "auto",
          "the weights on a GPU: bf16 (as checkpoints store them: tensor-core products with f32 "
          "accumulation, experts grouped; the default on cuda), fp8 (an FP8 checkpoint's FP8 "
          "layers stay FP8 in GPU memory, half of bf16's bytes, each layer dequantised to bf16 "
          "before it runs: the bf16 forward's results) or f32 (the CPU forward's function, for "
          "differential checks); the CPU forward computes in f32");
ABSL_FLAG(int, cuda_graph_max_batch, 0,
          "with --device cuda and bf16: decode steps of up to this many sequences replay as CUDA "
          "graphs, one per power-of-two bucket (0: off; not yet run on a GPU, so off by default)");
ABSL_FLAG(std::string, prompt, "", "generate: the prompt text (special tokens are parsed)");
ABSL_FLAG(int, max_tokens, 64, "generate: tokens to generate at most");
ABSL_FLAG(bool, greedy, false,
          "generate: greedy decoding (else the checkpoint's "
          "generation_config.json, overridden by the flags below)");
ABSL_FLAG(float, temperature, -1, "generate: sampling temperature (-1: generation_config.json)");
ABSL_FLAG(float, top_p, -1, "generate: nucleus sampling mass (-1: generation_config.json)");
ABSL_FLAG(int, top_k, -1, "generate: top-k sampling (-1: generation_config.json, 0: off)");
ABSL_FLAG(uint64_t, seed, 0, "generate: sampling seed");
ABSL_FLAG(std::vector<std::string>, stop, {}, "generate: comma-separated stop strings");
ABSL_FLAG(bool, ignore_eos, false, "generate: keep going past EOS");
ABSL_FLAG(bool, json, false, "generate: print one JSON object instead of the text");
ABSL_FLAG(bool, quiet, false,
          "score/trace: no progress line on stderr (it is shown only on a terminal anyway)");
ABSL_FLAG(std::string, input, "", "score: input JSONL ({\"id\", \"token_ids\"} per line)");
ABSL_FLAG(std::string, prompts, "", "trace: prompts JSONL ({\"id\", \"text\" or \"token_ids\"})");
ABSL_FLAG(std::string, out, "", "score/trace: output file");
ABSL_FLAG(int, max_batch_tokens, 2048, "tokens per forward pass");
ABSL_FLAG(int, max_prompt_tokens, 0, "trace: cut longer prompts (0: the model's positions)");
ABSL_FLAG(int, verbosity, 0, "VLOG level");
ABSL_FLAG(int, rank, 0, "serve: this rank");
ABSL_FLAG(int, ranks, 1, "serve: ranks in the expert-parallel group");
ABSL_FLAG(std::string, topology, "",
          "serve: which ranks share a node: NxM (N nodes x M ranks, N*M = --ranks; ranks "
          "numbered node by node) or a topology file (a rank-cost matrix); empty: one node. With "
          "several nodes a token crosses to each remote node once; a placement built for another "
          "topology is refused");
ABSL_FLAG(std::string, rendezvous, "",
          "serve: where the group meets: file:DIR (one host, a fresh "
          "directory per run) or grpc:HOST:PORT (planner serve)");
ABSL_FLAG(std::string, attn, "dp", "serve: attention parallelism, dp or tp");
ABSL_FLAG(std::string, placement, "vanilla",
          "serve: vanilla, a placement JSON file, or with --planner a version number");
ABSL_FLAG(std::string, planner, "",
          "serve: planner HOST:PORT: --placement names a version, fetched with its tables");
ABSL_FLAG(std::string, affinity, "",
          "serve: token affinity tables (planner export) for the "
          "Attention-TP shuffled collectives");
ABSL_FLAG(std::string, layer_tables, "",
          "serve: the placement's A tables (with --affinity): "
          "predict from the devices of the previous layers too");
ABSL_FLAG(std::string, follow_active, "",
          "serve (with --planner): follow the planner's active version of this model (its name "
          "in the planner): the group rolls out each new one while serving");
ABSL_FLAG(double, rollout_mb_per_s, 100,
          "serve: cap how fast a rollout loads the experts a rank gains (MB/s of f32 + bf16 "
          "weights; 0: no cap); the default keeps serving's steps within 2x the median on 2 "
          "cores (docs/PERFORMANCE.md, \"Live rollout\")");
ABSL_FLAG(double, sample_routing, 0,
          "serve (dp): sample this share of requests' routing into --routing_trace, a live trace "
          "for `planner build --traces` (0: off)");
ABSL_FLAG(std::string, routing_trace, "", "serve: the live routing trace file (--sample_routing)");
ABSL_FLAG(int64_t, routing_sample_tokens, 1 << 18,
          "serve: tokens the live trace keeps at most (the oldest are dropped)");
ABSL_FLAG(bool, tp_layer_tables, true,
          "serve (tp): predict from the A tables too when the placement has them; false: from "
          "the token (T) tables alone");
ABSL_FLAG(std::string, host, "127.0.0.1", "serve: address to listen on");
ABSL_FLAG(int, port, 0, "serve: EngineService port (0: any free port)");
ABSL_FLAG(std::string, port_file, "", "serve: write the bound port here once serving");
ABSL_FLAG(double, stall_s, 3,
          "serve: a collective waiting longer than this for the other ranks marks the rank "
          "unavailable (stats, router) and ends its calls with UNAVAILABLE");
ABSL_FLAG(double, collective_timeout_s, 60,
          "serve: bound on the group's rendezvous and on every collective; a peer silent longer "
          "fails the group (> 0)");
ABSL_FLAG(int, metrics_port, -1,
          "serve: Prometheus GET /metrics on this port (0: a free one; -1: off)");
ABSL_FLAG(std::string, metrics_port_file, "", "serve: write the bound metrics port here");
ABSL_FLAG(int, kv_cache_mb, 256, "serve: KV cache per rank, MiB");
ABSL_FLAG(double, token_balance_eps, 0.05,
          "serve (tp with --affinity): a rank's share of a batch may reach (1 + eps) x the mean");
ABSL_FLAG(int, max_running, 64, "serve: sequences in a rank's batch at most");
ABSL_FLAG(int, max_waiting, 1024, "serve: queued requests per rank at most");

namespace semmoe::engine {
namespace {

constexpr char kUsage[] =
    "engine <command> [flags]\n\n"
    "commands:\n"
    "  generate --model DIR --prompt TEXT [--max_tokens N] [--greedy] [--json]\n"
    "  score    --model DIR --input IN.jsonl --out OUT.jsonl\n"
    "  trace    --model DIR --prompts PROMPTS.jsonl --out TRACE\n"
    "  serve    --model DIR --rank R --ranks G --rendezvous file:DIR|grpc:HOST:PORT\n"
    "           [--attn dp|tp] [--placement vanilla|FILE] [--affinity FILE] [--port P]\n"
    "           [--placement VERSION --planner HOST:PORT [--follow_active MODEL]]\n\n"
    "Run `engine --help` for every flag.";

int Usage(const std::string& message) {
  std::cerr << "engine: " << message << "\n\n" << kUsage << "\n";
  return 2;
}

int Fail(const absl::Status& status) {
  std::cerr << "engine: " << status << "\n";
  return 1;
}

// `bazel run` starts binaries in the runfiles tree: resolve relative paths against the caller's.
// On a CUDA `device` with --precision fp8, FP8 weights load FP8-only (the host never holds them
// dequantised).
absl::StatusOr<std::unique_ptr<model::Model>> Load(bool need_tokenizer, int device) {
  model::ModelOptions options{.require_tokenizer = need_tokenizer};
  options.load.fp8_in_memory = device >= 0 && absl::GetFlag(FLAGS_precision) == "fp8";
  return model::LoadModel(UserPath(absl::GetFlag(FLAGS_model)), options);
}

// CUDA `device` with --precision (auto: bf16).
DeviceTarget Target(int device) {
  return {.device = device,
          .bf16 = absl::GetFlag(FLAGS_precision) != "f32",
          .fp8 = absl::GetFlag(FLAGS_precision) == "fp8",
          .decode_graphs = absl::GetFlag(FLAGS_cuda_graph_max_batch)};
}

// `device`: the CUDA device for the forward passes, or −1 for the CPU.
int Generate(int device) {
  const std::string prompt = absl::GetFlag(FLAGS_prompt);
  if (prompt.empty()) return Usage("generate needs --prompt");
  auto m = Load(/*need_tokenizer=*/true, device);
  if (!m.ok()) return Fail(m.status());
  const model::Model& model = **m;
  auto gen = model::LoadGenerationConfig(model.dir, model.config);
  if (!gen.ok()) return Fail(gen.status());
  auto ids = model.tokenizer->Encode(prompt);
  if (!ids.ok()) return Fail(ids.status());

  runtime::SamplingParams sampling;
  if (gen->do_sample) {
    sampling = {.temperature = gen->temperature, .top_k = gen->top_k, .top_p = gen->top_p};
  }
  // -1 (the default) leaves generation_config.json's value; anything else is taken and checked
  // (a NaN or -7 used to fall back to the default silently).
  if (absl::GetFlag(FLAGS_temperature) != -1)
    sampling.temperature = absl::GetFlag(FLAGS_temperature);
  if (absl::GetFlag(FLAGS_top_p) != -1) sampling.top_p = absl::GetFlag(FLAGS_top_p);
  if (absl::GetFlag(FLAGS_top_k) != -1) sampling.top_k = absl::GetFlag(FLAGS_top_k);
  if (absl::GetFlag(FLAGS_greedy)) sampling.temperature = 0;
  sampling.seed = absl::GetFlag(FLAGS_seed);
  if (absl::Status valid = runtime::ValidateSamplingParams(sampling); !valid.ok()) {
    return Usage(absl::StrCat("--temperature, --top_p, --top_k: ", valid.message()));
  }

  runtime::BatchEngine::Options options{.max_batch_tokens = absl::GetFlag(FLAGS_max_batch_tokens),
                                        .tokenizer = model.tokenizer.get(),
                                        .eos_ids = gen->eos_token_ids};
  std::unique_ptr<DeviceSession> on_device;  // Outlives the engine.
  if (device >= 0) {
    auto backend = GetDeviceBackend("cuda");
    if (!backend.ok()) return Fail(backend.status());
    auto session = (*backend)->UseForBatch(model.config, *model.weights, Target(device), options);
    if (!session.ok()) return Fail(session.status());
    on_device = std::move(*session);
    options.forward = on_device->batch_forward();
    std::cerr << "engine: forward on " << on_device->Describe() << "\n";
  }
  // On the device its forward; on the CPU the engine's own (the op-set forward over the host
  // weights).
  auto engine = on_device != nullptr
                    ? runtime::BatchEngine::Create(model.config, options)
                    : runtime::BatchEngine::Create(model.config, *model.weights, options);
  if (!engine.ok()) return Fail(engine.status());
  absl::Status submitted = (*engine)->Submit({.id = "generate",
                                              .prompt = *ids,
                                              .max_tokens = absl::GetFlag(FLAGS_max_tokens),
                                              .sampling = sampling,
                                              .stop = absl::GetFlag(FLAGS_stop),
                                              .ignore_eos = absl::GetFlag(FLAGS_ignore_eos)});
  if (!submitted.ok()) return Fail(submitted);

  const bool json = absl::GetFlag(FLAGS_json);
  const auto start = std::chrono::steady_clock::now();
  std::vector<runtime::GenerationResult> done;
  std::vector<runtime::TokenEvent> events;
  double first_token_s = 0;
  while (!(*engine)->idle()) {
    events.clear();
    absl::Status step = (*engine)->Step(done, &events);
    if (!step.ok()) return Fail(step);
    if (!events.empty() && first_token_s == 0) {
      first_token_s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    if (json) continue;
    // Stream the text as the batch loop decodes it (the pieces joined are the result's text).
    for (const auto& e : events) std::cout << e.text;
    std::cout << std::flush;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const runtime::GenerationResult& r = done.at(0);
  if (json) {
    nlohmann::json out = {{"prompt", prompt},
                          {"prompt_tokens", r.prompt_tokens},
                          {"text", r.text},
                          {"token_ids", r.tokens},
                          {"completion_tokens", r.tokens.size()},
                          {"finish_reason", runtime::FinishReasonName(r.finish)},
                          {"time_to_first_token_s", first_token_s},
                          {"seconds", seconds}};
    std::cout << out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    std::cout << "\n";
    std::cerr << "[" << r.tokens.size()
              << " tokens, finish: " << runtime::FinishReasonName(r.finish) << ", " << seconds
              << " s]\n";
  }
  return 0;
}

// Where score/trace run: the CPU product's forward (device < 0) or CUDA `device`'s. Fills in
// *backend, which is valid while the returned object lives.
struct PrefillForward {
  std::unique_ptr<offline::CpuPrefill> cpu;
  std::unique_ptr<DeviceSession> device;
};
absl::StatusOr<PrefillForward> PrefillOn(const model::Model& model, int device,
                                         offline::PrefillBackend* backend) {
  PrefillForward on;
  if (device < 0) {
    ASSIGN_OR_RETURN(on.cpu, offline::CreateCpuPrefill(model.config, *model.weights,
                                                       absl::GetFlag(FLAGS_max_batch_tokens)));
    *backend = on.cpu->backend();
    return on;
  }
  ASSIGN_OR_RETURN(DeviceBackend * cuda, GetDeviceBackend("cuda"));
  ASSIGN_OR_RETURN(on.device, cuda->UseForPrefill(model.config, *model.weights, Target(device),
                                                  absl::GetFlag(FLAGS_max_batch_tokens)));
  *backend = on.device->prefill_backend();
  std::cerr << "engine: forward on " << on.device->Describe() << "\n";
  return on;
}

// A progress line over the lines of `path` (stderr, on a terminal, unless --quiet).
std::unique_ptr<Progress> ProgressOver(const std::string& path, const std::string& label,
                                       const std::string& unit) {
  ProgressOptions o;
  o.label = label;
  o.unit = unit;
  o.enabled = ProgressEnabled(absl::GetFlag(FLAGS_quiet));
  if (o.enabled) o.total = offline::CountJsonlLines(path).value_or(0);
  return std::make_unique<Progress>(o);
}

int Score(int device) {
  if (absl::GetFlag(FLAGS_input).empty() || absl::GetFlag(FLAGS_out).empty()) {
    return Usage("score needs --input and --out");
  }
  auto m = Load(/*need_tokenizer=*/false, device);
  if (!m.ok()) return Fail(m.status());
  offline::PrefillBackend backend;
  auto on_device = PrefillOn(**m, device, &backend);
  if (!on_device.ok()) return Fail(on_device.status());
  const std::string input = UserPath(absl::GetFlag(FLAGS_input));
  std::unique_ptr<Progress> progress = ProgressOver(input, "engine score", "inputs");
  auto n =
      offline::RunScore((*m)->config, {.input = input,
                                       .output = UserPath(absl::GetFlag(FLAGS_out)),
                                       .max_batch_tokens = absl::GetFlag(FLAGS_max_batch_tokens),
                                       .backend = backend,
                                       .progress = progress.get()});
  progress.reset();  // Its last line before the summary.
  if (!n.ok()) return Fail(n.status());
  std::cerr << "scored " << *n << " inputs into " << absl::GetFlag(FLAGS_out) << "\n";
  return 0;
}

int Trace(int device) {
  if (absl::GetFlag(FLAGS_prompts).empty() || absl::GetFlag(FLAGS_out).empty()) {
    return Usage("trace needs --prompts and --out");
  }
  auto m = Load(/*need_tokenizer=*/false, device);
  if (!m.ok()) return Fail(m.status());
  offline::PrefillBackend backend;
  auto on_device = PrefillOn(**m, device, &backend);
  if (!on_device.ok()) return Fail(on_device.status());
  const auto start = std::chrono::steady_clock::now();
  const std::string prompts = UserPath(absl::GetFlag(FLAGS_prompts));
  std::unique_ptr<Progress> progress = ProgressOver(prompts, "engine trace", "prompts");
  auto summary = offline::RunTrace((*m)->config, (*m)->tokenizer.get(),
                                   {.prompts = prompts,
                                    .output = UserPath(absl::GetFlag(FLAGS_out)),
                                    .max_batch_tokens = absl::GetFlag(FLAGS_max_batch_tokens),
                                    .max_prompt_tokens = absl::GetFlag(FLAGS_max_prompt_tokens),
                                    .backend = backend,
                                    .progress = progress.get()});
  progress.reset();
  if (!summary.ok()) return Fail(summary.status());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cerr << "traced " << summary->prompts << " prompts, " << summary->tokens << " tokens in "
            << seconds << " s into " << absl::GetFlag(FLAGS_out) << "\n";
  return 0;
}

// SIGINT/SIGTERM stop `serve` within this, whatever the group is doing.
constexpr absl::Duration kStopBound = absl::Seconds(10);

// Until SIGINT/SIGTERM (then the whole group stops cleanly) or until the group fails. `device`:
// the CUDA device for the forward passes, or −1 for the CPU.
int Serve(int device) {
  RankServerOptions o;
  o.cuda_device = device;
  o.cuda_bf16 = Target(device).bf16;
  o.cuda_fp8 = Target(device).fp8;
  o.model_dir = UserPath(absl::GetFlag(FLAGS_model));
  o.rank = absl::GetFlag(FLAGS_rank);
  o.ranks = absl::GetFlag(FLAGS_ranks);
  o.rendezvous = absl::GetFlag(FLAGS_rendezvous);
  if (o.rendezvous.empty()) return Usage("serve: --rendezvous is required");
  if (const std::string spec = absl::GetFlag(FLAGS_topology); !spec.empty()) {
    absl::StatusOr<planner::Topology> topology = planner::Topology::FromFlag(spec);
    if (!topology.ok()) return Usage(absl::StrCat("--topology: ", topology.status().message()));
    if (topology->num_ranks() != o.ranks) {
      return Usage(absl::StrCat("--topology ", topology->Describe(), " has ", topology->num_ranks(),
                                " ranks; --ranks is ", o.ranks));
    }
    o.topology = std::make_shared<const planner::Topology>(*std::move(topology));
  }
  const std::string attn = absl::GetFlag(FLAGS_attn);
  if (attn != "dp" && attn != "tp") return Usage("--attn must be dp or tp");
  o.attention = attn == "dp" ? AttentionMode::kDp : AttentionMode::kTp;
  o.planner = absl::GetFlag(FLAGS_planner);
  o.placement = absl::GetFlag(FLAGS_placement) == "vanilla" || !o.planner.empty()
                    ? absl::GetFlag(FLAGS_placement)
                    : UserPath(absl::GetFlag(FLAGS_placement));
  if (!o.planner.empty() && !absl::GetFlag(FLAGS_affinity).empty()) {
    return Usage("--planner brings the version's own tables; drop --affinity");
  }
  o.affinity = UserPath(absl::GetFlag(FLAGS_affinity));
  o.layer_tables = UserPath(absl::GetFlag(FLAGS_layer_tables));
  o.use_layer_tables = absl::GetFlag(FLAGS_tp_layer_tables);
  o.follow_model = absl::GetFlag(FLAGS_follow_active);
  o.rollout_mb_per_s = absl::GetFlag(FLAGS_rollout_mb_per_s);
  o.sample_routing = absl::GetFlag(FLAGS_sample_routing);
  o.routing_trace = UserPath(absl::GetFlag(FLAGS_routing_trace));
  o.routing_sample_tokens = absl::GetFlag(FLAGS_routing_sample_tokens);
  if (o.sample_routing > 0 && o.routing_trace.empty()) {
    return Usage("--sample_routing needs --routing_trace");
  }
  if (o.rollout_mb_per_s < 0) return Usage("--rollout_mb_per_s must be ≥ 0");
  if (!(absl::GetFlag(FLAGS_collective_timeout_s) > 0)) {
    return Usage("--collective_timeout_s must be > 0");
  }
  o.connect_timeout = absl::Seconds(absl::GetFlag(FLAGS_collective_timeout_s));
  if (!(absl::GetFlag(FLAGS_stall_s) > 0)) return Usage("--stall_s must be > 0");
  o.stall_after = absl::Seconds(absl::GetFlag(FLAGS_stall_s));
  o.host = absl::GetFlag(FLAGS_host);
  o.port = absl::GetFlag(FLAGS_port);
  o.port_file = UserPath(absl::GetFlag(FLAGS_port_file));
  o.metrics_port = absl::GetFlag(FLAGS_metrics_port);
  o.metrics_port_file = UserPath(absl::GetFlag(FLAGS_metrics_port_file));
  if (absl::GetFlag(FLAGS_kv_cache_mb) <= 0 || absl::GetFlag(FLAGS_max_running) <= 0 ||
      absl::GetFlag(FLAGS_max_waiting) <= 0 || absl::GetFlag(FLAGS_max_batch_tokens) <= 0) {
    return Usage("--kv_cache_mb, --max_running, --max_waiting and --max_batch_tokens must be > 0");
  }
  o.token_balance_eps = absl::GetFlag(FLAGS_token_balance_eps);
  if (!(o.token_balance_eps >= 0 && o.token_balance_eps <= 1)) {
    return Usage("--token_balance_eps must be in [0, 1]");
  }
  o.engine.batch.kv_cache_bytes = int64_t{absl::GetFlag(FLAGS_kv_cache_mb)} << 20;
  o.engine.batch.max_running = absl::GetFlag(FLAGS_max_running);
  o.engine.batch.max_waiting = absl::GetFlag(FLAGS_max_waiting);
  o.engine.batch.max_batch_tokens = absl::GetFlag(FLAGS_max_batch_tokens);
  o.engine.max_inbox = absl::GetFlag(FLAGS_max_waiting);
  o.on_serving = [&](int port, const std::string& serving_with) {
    std::cout << "engine rank " << o.rank << "/" << o.ranks << " serving on " << o.host << ":"
              << port << " (" << serving_with << ")" << std::endl;
  };

  // Signals go to one thread (blocked everywhere else: threads inherit the mask). The group
  // agrees on its stop within a few collectives; a peer that is gone (or stopped) cannot hold
  // the process past kStopBound.
  StopSignals& stop = WatchStopSignals(absl::StrCat("engine rank ", o.rank), kStopBound);
  WarnIfPlaintext(o.host, absl::StrCat("engine rank ", o.rank));
  const absl::Status status = RunRankServer(o, stop.stopped());
  if (!status.ok()) return Fail(status);
  return 0;
}

}  // namespace
}  // namespace semmoe::engine

int main(int argc, char** argv) {
  using semmoe::engine::Usage;
  absl::SetProgramUsageMessage(semmoe::engine::kUsage);
  std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  semmoe::InitLogging(argv[0],
                      {.verbosity = absl::GetFlag(FLAGS_verbosity), .stderr_threshold = 1});
  if (absl::Status security = semmoe::InstallSecurityFromFlags(); !security.ok()) {
    std::cerr << "engine: " << security.message() << "\n";
    return 2;
  }
  if (args.size() != 2) return semmoe::engine::Usage("expected exactly one command");
  const std::string command = args[1];
  if (absl::GetFlag(FLAGS_model).empty()) return Usage("--model is required");
  const std::string device = absl::GetFlag(FLAGS_device);
  int cuda_device = -1;
  if (device == "cuda") {
    cuda_device = 0;
  } else if (absl::StartsWith(device, "cuda:")) {
    if (!absl::SimpleAtoi(device.substr(5), &cuda_device) || cuda_device < 0) {
      return Usage("--device cuda:N needs a device number N >= 0");
    }
  } else if (device != "cpu") {
    return Usage("--device must be cpu, cuda or cuda:N");
  }
  const std::string precision = absl::GetFlag(FLAGS_precision);
  if (precision != "auto" && precision != "bf16" && precision != "fp8" && precision != "f32") {
    return Usage("--precision must be auto, bf16, fp8 or f32");
  }
  if (cuda_device < 0 && (precision == "bf16" || precision == "fp8")) {
    return Usage(absl::StrCat("--precision ", precision,
                              " needs --device cuda: the CPU forward computes in f32 (FP8 "
                              "checkpoints dequantised at load)"));
  }
  if (absl::GetFlag(FLAGS_cuda_graph_max_batch) < 0 ||
      (absl::GetFlag(FLAGS_cuda_graph_max_batch) > 0 && (cuda_device < 0 || precision == "f32"))) {
    return Usage("--cuda_graph_max_batch needs --device cuda with bf16 weights (and is >= 0)");
  }
  if (cuda_device >= 0) {
    absl::StatusOr<semmoe::engine::DeviceBackend*> cuda = semmoe::engine::GetDeviceBackend("cuda");
    if (!cuda.ok()) {
      std::cerr << "engine: --device " << device << ": " << cuda.status().message() << "\n";
      return 1;
    }
    absl::StatusOr<int> devices = (*cuda)->DeviceCount();
    if (!devices.ok() || *devices == 0) {
      std::cerr << "engine: --device " << device << ": this machine has no CUDA device"
                << (devices.ok() ? "" : absl::StrCat(" (", devices.status().message(), ")"))
                << "; use --device cpu\n";
      return 1;
    }
  }
  if (command == "generate") return semmoe::engine::Generate(cuda_device);
  if (command == "score") return semmoe::engine::Score(cuda_device);
  if (command == "trace") return semmoe::engine::Trace(cuda_device);
  if (command == "serve") return semmoe::engine::Serve(cuda_device);
  return semmoe::engine::Usage(absl::StrCat("unknown command '", command, "'"));
}
