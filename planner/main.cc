// planner: builds, evaluates and versions expert placements from routing traces.
//
//   planner build    --db DB --model NAME --traces T[,T...] --devices G --mode dp|tp
//                    --algo semantic|paper|vanilla|random|eplb|coact [--name N] [--seed S]
//                    [--model_dir DIR]   (embedding fallback for unseen tokens)
//                    [--expert_balance_eps E [--balance_groups K]]   (expert compute balance)
//                    [--replicas R]   (R replicated hot experts per device per layer)
//                    [--topology NxM|FILE]   (nodes of ranks: the ranks exchanging most share a
//                                             node; eplb runs hierarchically; recorded)
//                    [--relative_to V [--max_moved_experts M] [--max_lar_loss X]]
//                                     (few experts moved from version V: relabelled devices and
//                                      at most M weights shipped / X of LAR given up)
//                    [--cluster C [--shape NAME|FILE] [--choose time|none]]   (semantic: the
//                                     candidates predicted on the cluster, the fastest kept,
//                                     EPLB beside; none: the build as given, predicted)
//   planner drift    --db DB --version V --traces LIVE[,...] [--json]   (live vs planned)
//   planner eval     --db DB --versions V[,V...] --traces HELDOUT[,...] [--profile T,...]
//                    [--json] [--hidden_size H]
//                    [--topology NxM|FILE]   (node LAR and cross-node bytes of flat versions
//                                             under this topology; built ones use their own)
//                    [--balanced_bound]   (the TP bound under the balance constraint too)
//                    [--dp_bounds]   (the DP in-sample router figure, fitted optimum and capacity
//                                     bound on these traces; per version, the router against
//                                     perfect prediction and the offline schedule)
//   planner eval     --pareto --profile T --traces HELDOUT [--devices G] [--link_cost C]
//   planner eval     --zero_shot --profile T --traces HELDOUT [--domains PROMPTS.jsonl]
//   planner list     --db DB --model NAME
//   planner show     --db DB --version V
//   planner diff     --db DB --versions V1,V2
//   planner activate --db DB --version V [--force]   (refused when predicted slower than vanilla)
//   planner predict  --db DB --version V --traces T --cluster C [--topology NxM]
//                                    [--shape NAME|FILE]   (the MoE layer and max rate against
//                                     vanilla's, stored for the activation guard)
//   planner rollback --db DB --model NAME
//   planner export   --db DB --version V --out FILE
//   planner import   --db DB --model NAME --file FILE [--name N]
//   planner serve    --db DB [--listen 127.0.0.1] [--port 7070]   (PlannerService + rendezvous)
//                    [--autopilot --model NAME --autopilot_traces LIVE[,...]]   (re-plans by
//                                     itself on drift; --autopilot_* tune it)
//   planner experiment create --db DB --model NAME --a V1 --b V2 --share P [--name N]
//   planner experiment start|stop|show --db DB --id ID
//   planner experiment promote --db DB --id ID --arm A|B
//   planner experiment list --db DB --model NAME
//
// A trace is a file written by `engine trace` or a flat-array trace directory. Exit status: 0 on
// success, 1 when the command failed (the error is printed), 2 for bad usage.

#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "common/file.h"
#include "common/logging.h"
#include "common/progress.h"
#include "common/security.h"
#include "common/security_flags.h"
#include "common/status_macros.h"
#include "common/stop_signals.h"
#include "nlohmann/json.hpp"
#include "planner/cli/choose.h"
#include "planner/cli/commands.h"
#include "planner/cli/drift.h"
#include "planner/cli/experiments.h"
#include "planner/cli/studies.h"
#include "planner/eval/evaluate.h"
#include "planner/server/serve.h"
#include "planner/sim/cluster_profile.h"
#include "planner/sim/model_shape.h"
#include "planner/sim/prediction.h"
#include "planner/store/placement_store.h"

ABSL_FLAG(std::string, db, "", "planner SQLite database (created if missing)");
ABSL_FLAG(std::string, model, "", "model name in the database");
ABSL_FLAG(std::vector<std::string>, traces, {}, "comma-separated trace files or directories");
ABSL_FLAG(std::vector<std::string>, profile, {}, "eval: traces to learn token affinity from");
ABSL_FLAG(int, devices, 8, "build: devices (EP ranks)");
ABSL_FLAG(std::string, mode, "dp", "build: dp or tp");
ABSL_FLAG(std::string, algo, "semantic",
          "build: semantic, vanilla, random, eplb, coact or paper (the paper's Algorithm 1)");
ABSL_FLAG(std::string, name, "", "build/import: version name");
ABSL_FLAG(uint64_t, seed, 0, "build: seed");
ABSL_FLAG(std::string, cluster, "",
          "build/predict: the cluster profile (lab, h100, h200 or a file) to predict the version's "
          "MoE layer and max rate against vanilla's on (with --topology NxM: its nodes); stored, "
          "and activation refuses a version predicted more than 2% slower");
ABSL_FLAG(std::string, choose, "time",
          "build --cluster with --algo semantic: time builds the candidates (flat, node-aware, "
          "node credit; replicas; expert-load caps) and keeps the one predicted fastest on the "
          "cluster, with EPLB predicted beside (docs/PLANNER.md, \"Chosen by predicted time\"); "
          "none builds the options as given and predicts that alone");
ABSL_FLAG(std::string, shape, "",
          "build/predict --cluster: the model's shape for the prediction — deepseek-v3, "
          "qwen3-235b, or a file from `simulate --model DIR --print_shape` (default: the model's "
          "name as a built-in shape)");
ABSL_FLAG(bool, force, false,
          "activate / experiment promote: activate a version predicted slower than vanilla");
ABSL_FLAG(std::string, model_dir, "",
          "build: checkpoint directory; unseen tokens then use their "
          "nearest seen token's affinity (embedding space)");
ABSL_FLAG(int, balance_groups, 1,
          "build: with --expert_balance_eps, the cap also holds for each of this many request "
          "clusters (robust to a different traffic mix)");
ABSL_FLAG(std::string, expert_balance_eps, "auto",
          "build: expert load per device ≤ (1 + eps) · mean (compute balance): a number, off, "
          "or auto (semantic DP: the cap with the least modelled MoE time on held-back profile "
          "requests, docs/PLANNER.md \"Balance\"; otherwise off)");
ABSL_FLAG(int, replicas, 0, "build: extra slots per device per layer for replicated hot experts");
ABSL_FLAG(int64_t, relative_to, 0,
          "build: the version being served; the new one relabels its devices and limits its "
          "moves to ship few expert weights (0: a fresh build)");
ABSL_FLAG(int, max_moved_experts, -1,
          "build --relative_to: at most this many expert weights shipped (negative: no cap)");
ABSL_FLAG(double, max_lar_loss, 0.01,
          "build --relative_to: give up at most this much of the candidate's LAR to move fewer "
          "experts (negative: apply every move)");
ABSL_FLAG(double, balance_eps, 0.05,
          "build/eval: token load per device ≤ (1 + eps) · mean (DP: over the requests; TP: per "
          "batch)");
ABSL_FLAG(std::vector<std::string>, versions, {}, "eval: comma-separated versions");
ABSL_FLAG(int64_t, version, 0, "show/activate/export: version");
ABSL_FLAG(std::string, topology, "",
          "build: the cluster's topology, NxM (N nodes x M ranks per node, N*M = --devices) or a "
          "topology file (a rank-cost matrix); the placement minds which ranks share a node and "
          "records it. eval: node figures for flat versions under this topology");
ABSL_FLAG(double, node_weight, semmoe::planner::cli::BuildOptions::kDefaultNodeWeight,
          "build with --topology: what an activation served on another rank of the token's node "
          "is worth to the semantic solver (1 on its own rank, 0 on another node); 0: only the "
          "node grouping");
ABSL_FLAG(int64_t, hidden_size, 0, "eval: hidden size for all-to-all bytes (0: not reported)");
ABSL_FLAG(bool, json, false, "eval, drift: one JSON line");
ABSL_FLAG(bool, pareto, false,
          "eval: LAR against expert-load imbalance (DP) for a grid of balance caps, planned on "
          "--profile, evaluated on --traces, with the MoE time model (--devices G)");
ABSL_FLAG(bool, zero_shot, false,
          "eval: plan on each domain of --profile, evaluate on each domain of --traces");
ABSL_FLAG(std::string, domains, "",
          "eval --zero_shot: JSONL with \"id\" and \"domain\" per request (e.g. the prompts "
          "file); otherwise a request's domain is its name up to the first '-'");
ABSL_FLAG(double, link_cost, semmoe::planner::EvalOptions::kLinkCost,
          "time model: one exchanged row costs this many expert rows");
ABSL_FLAG(bool, dp_bounds, false,
          "eval: per G, the DP solver fitted to the traces themselves (offline and with the "
          "router's rule) and the capacity bound; per version, the router rule against perfect "
          "prediction and the offline schedule");
ABSL_FLAG(bool, balanced_bound, false,
          "eval: also the TP bound under the token balance constraint (slower)");
ABSL_FLAG(std::string, out, "", "export: output file");
ABSL_FLAG(std::string, file, "", "import: placement JSON file");
ABSL_FLAG(std::string, listen, "127.0.0.1", "serve: address to listen on");
ABSL_FLAG(bool, autopilot, false,
          "serve: re-plan --model by itself when the live routing traces (--autopilot_traces) "
          "drift from its active version (docs/PLANNER.md \"Autopilot\")");
ABSL_FLAG(std::vector<std::string>, autopilot_traces, {},
          "serve --autopilot: the live routing traces the ranks sample (engine serve "
          "--sample_routing FILE), re-read each tick");
ABSL_FLAG(absl::Duration, autopilot_period, absl::Seconds(30), "serve --autopilot: tick period");
ABSL_FLAG(double, autopilot_drift, 0.03,
          "serve --autopilot: re-plan when live LAR is this far below the active version's plan");
ABSL_FLAG(double, autopilot_shift, 0.1,
          "serve --autopilot: re-plan when the live share of activations per expert moved this "
          "far (total variation) from the traffic the active version was planned from");
ABSL_FLAG(absl::Duration, autopilot_min_interval, absl::Minutes(2),
          "serve --autopilot: at least this long between rollouts and rollbacks");
ABSL_FLAG(int, autopilot_expert_budget, -1,
          "serve --autopilot: expert weights a rollout may ship (negative: a quarter of the "
          "model's experts)");
ABSL_FLAG(double, autopilot_min_gain, 0.01,
          "serve --autopilot: LAR a candidate must gain on the held-back half of the window");
ABSL_FLAG(int64_t, autopilot_min_window_tokens, 4096,
          "serve --autopilot: fewer sampled tokens are too few to plan from");
ABSL_FLAG(double, autopilot_max_lar_loss, 0.002,
          "serve --autopilot: LAR a rollout may give up (against its candidate) to move fewer "
          "experts within the budget");
ABSL_FLAG(int, autopilot_migration_retries, 1,
          "serve --autopilot: times a migration (rollouts that spend the whole expert budget) is "
          "tried again after a refused candidate, each on a window that has turned over");
ABSL_FLAG(absl::Duration, autopilot_confirm, absl::Seconds(10),
          "serve --autopilot: a drift must be seen this long before a candidate is built");
ABSL_FLAG(absl::Duration, autopilot_rollout_timeout, absl::Minutes(10),
          "serve --autopilot: a rollout the following groups do not serve this long after it is "
          "rolled back");
ABSL_FLAG(double, autopilot_served_margin, 0.03,
          "serve --autopilot: served LAR (the groups' own) a rollout may lose against the version "
          "before it before it is rolled back");
ABSL_FLAG(double, autopilot_served_latency_margin, 0.5,
          "serve --autopilot: how much longer per output token (submission to last token, the "
          "groups' completed requests) a rollout may serve than the version before it before it "
          "is rolled back (0.5: 50%; wide, as the time per token also follows the load)");
ABSL_FLAG(int, autopilot_min_served_requests, 16,
          "serve --autopilot: requests served before and after a rollout's switch (the groups', "
          "from their reports) to compare their LAR, failed share and time per output token");
ABSL_FLAG(int, port, 7070, "serve: port (0: pick a free one)");
ABSL_FLAG(std::string, port_file, "", "serve: write the bound port here once serving");
ABSL_FLAG(int64_t, a, 0, "experiment create: arm A's version");
ABSL_FLAG(int64_t, b, 0, "experiment create: arm B's version");
ABSL_FLAG(int, share, 0, "experiment create: arm B's percent of the traffic (1-99)");
ABSL_FLAG(int64_t, id, 0, "experiment: its id");
ABSL_FLAG(std::string, arm, "", "experiment promote: the arm whose version to activate");
ABSL_FLAG(int, metrics_port, -1,
          "serve: Prometheus GET /metrics on this port (0: a free one; -1: off)");
ABSL_FLAG(std::string, metrics_port_file, "", "serve: write the bound metrics port here");
ABSL_FLAG(bool, quiet, false,
          "build/eval: no progress line on stderr (it is shown only on a terminal anyway)");

namespace semmoe::planner {
namespace {

constexpr char kUsage[] =
    "planner <command> [flags]\n\n"
    "commands: build, eval, drift, list, show, diff, activate, rollback, export, import, serve,\n"
    "          experiment create|start|stop|show|list|promote\n"
    "Run `planner --help` for every flag; docs/PLANNER.md for what they do.";

int Usage(const std::string& message) {
  std::cerr << "planner: " << message << "\n\n" << kUsage << "\n";
  return 2;
}

int Done(const absl::Status& status) {
  if (status.ok()) return 0;
  std::cerr << "planner: " << status << "\n";
  return 1;
}

std::vector<std::string> UserPaths(const std::vector<std::string>& paths) {
  std::vector<std::string> out;
  for (const std::string& p : paths) out.push_back(UserPath(p));
  return out;
}

int Experiment(const std::string& db, const std::string& sub) {
  const int64_t id = absl::GetFlag(FLAGS_id);
  const std::string model = absl::GetFlag(FLAGS_model);
  if (sub == "create") {
    if (model.empty() || absl::GetFlag(FLAGS_a) <= 0 || absl::GetFlag(FLAGS_b) <= 0) {
      return Usage("experiment create needs --model, --a and --b");
    }
    return Done(cli::ExperimentCreate(db, model, absl::GetFlag(FLAGS_name), absl::GetFlag(FLAGS_a),
                                      absl::GetFlag(FLAGS_b), absl::GetFlag(FLAGS_share), std::cout)
                    .status());
  }
  if (sub == "list") {
    if (model.empty()) return Usage("experiment list needs --model");
    return Done(cli::ExperimentList(db, model, std::cout));
  }
  if (id <= 0) return Usage(absl::StrCat("experiment ", sub, " needs --id"));
  if (sub == "start") return Done(cli::ExperimentStart(db, id, std::cout));
  if (sub == "stop") return Done(cli::ExperimentStop(db, id, std::cout));
  if (sub == "show") return Done(cli::ExperimentShow(db, id, std::cout));
  if (sub == "promote") {
    if (absl::GetFlag(FLAGS_arm).empty()) return Usage("experiment promote needs --arm");
    return Done(cli::ExperimentPromote(db, id, absl::GetFlag(FLAGS_arm), std::cout,
                                       absl::GetFlag(FLAGS_force)));
  }
  return Usage(absl::StrCat("unknown experiment command '", sub, "'"));
}

// The scale model's shape of --model: --shape (a built-in name, or a file `simulate --model DIR
// --print_shape` wrote), else a built-in shape named as the model (deepseek-v3, qwen3-235b).
absl::StatusOr<sim::ModelShape> ShapeForPrediction(const std::string& model) {
  const std::string given = absl::GetFlag(FLAGS_shape);
  absl::StatusOr<sim::ModelShape> known = sim::KnownShape(given.empty() ? model : given);
  if (known.ok()) return known;
  if (given.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--cluster: the prediction needs the model's shape: give --shape (a built-in shape, ",
        absl::StrJoin(sim::KnownShapes(), ", "),
        ", or the file `simulate --model DIR --print_shape` writes), or name the model as a "
        "built-in shape; '",
        model, "' is neither"));
  }
  ASSIGN_OR_RETURN(const std::string text, ReadFlagFile("shape", UserPath(given)));
  return sim::ShapeFromJson(text, UserPath(given));
}

// --cluster, --topology and --shape as the prediction's options, on `traces`.
absl::StatusOr<cli::PredictOptions> PredictFlags(const std::string& model,
                                                 const std::vector<std::string>& traces) {
  ASSIGN_OR_RETURN(sim::ModelShape shape, ShapeForPrediction(model));
  return cli::PredictOptions{.cluster = sim::ClusterFlagValue(absl::GetFlag(FLAGS_cluster)),
                             .topology = absl::GetFlag(FLAGS_topology),
                             .traces = traces,
                             .shape = std::move(shape)};
}

// Predicts `version` on --cluster (--topology) against vanilla, prints and stores it.
absl::Status Predict(const std::string& db, int64_t version,
                     const std::vector<std::string>& traces) {
  ASSIGN_OR_RETURN(auto store, PlacementStore::Open(db));
  ASSIGN_OR_RETURN(const PlacementVersion v, store->Get(version));
  ASSIGN_OR_RETURN(const cli::PredictOptions options, PredictFlags(v.model, traces));
  return cli::PredictVersion(db, version, options, std::cout).status();
}

int Run(const std::string& command, const std::string& sub) {
  const std::string db = UserPath(absl::GetFlag(FLAGS_db));
  const bool study = absl::GetFlag(FLAGS_pareto) || absl::GetFlag(FLAGS_zero_shot);
  if (db.empty() && !(command == "eval" && study)) return Usage("--db is required");
  const std::string model = absl::GetFlag(FLAGS_model);
  const int64_t version = absl::GetFlag(FLAGS_version);
  if (command == "experiment") return Experiment(db, sub);
  if (!sub.empty()) return Usage(absl::StrCat("unexpected argument '", sub, "'"));
  if (command == "build") {
    if (model.empty() || absl::GetFlag(FLAGS_traces).empty()) {
      return Usage("build needs --model and --traces");
    }
    Progress progress({.label = "planner build",
                       .unit = "steps",
                       .total = cli::kBuildSteps,
                       .enabled = ProgressEnabled(absl::GetFlag(FLAGS_quiet))});
    const std::string balance_flag = absl::GetFlag(FLAGS_expert_balance_eps);
    double balance = cli::kBalanceAuto;
    if (balance_flag == "off") {
      balance = -1;
    } else if (balance_flag != "auto" && !absl::SimpleAtod(balance_flag, &balance)) {
      return Usage(
          absl::StrCat("--expert_balance_eps: '", balance_flag, "' is not a number, off or auto"));
    }
    if (balance < 0 && balance != cli::kBalanceAuto) balance = -1;
    if (!absl::GetFlag(FLAGS_cluster).empty() && absl::GetFlag(FLAGS_mode) != "dp" &&
        absl::GetFlag(FLAGS_mode) != "tp") {
      return Usage("--mode must be dp or tp");
    }
    const cli::BuildOptions options{.db = db,
                                    .model = model,
                                    .traces = UserPaths(absl::GetFlag(FLAGS_traces)),
                                    .devices = absl::GetFlag(FLAGS_devices),
                                    .mode = absl::GetFlag(FLAGS_mode),
                                    .algo = absl::GetFlag(FLAGS_algo),
                                    .name = absl::GetFlag(FLAGS_name),
                                    .seed = absl::GetFlag(FLAGS_seed),
                                    .token_balance_eps = absl::GetFlag(FLAGS_balance_eps),
                                    .expert_balance_eps = balance,
                                    .balance_groups = absl::GetFlag(FLAGS_balance_groups),
                                    .link_cost = absl::GetFlag(FLAGS_link_cost),
                                    .replicas = absl::GetFlag(FLAGS_replicas),
                                    .topology = absl::GetFlag(FLAGS_topology),
                                    .node_weight = absl::GetFlag(FLAGS_node_weight),
                                    .relative_to = absl::GetFlag(FLAGS_relative_to),
                                    .max_moved_experts = absl::GetFlag(FLAGS_max_moved_experts),
                                    .max_lar_loss = absl::GetFlag(FLAGS_max_lar_loss),
                                    .model_dir = UserPath(absl::GetFlag(FLAGS_model_dir)),
                                    .progress = &progress};
    const std::string choose = absl::GetFlag(FLAGS_choose);
    if (choose != "time" && choose != "none") {
      return Usage(absl::StrCat("--choose: '", choose, "' is not time or none"));
    }
    if (!absl::GetFlag(FLAGS_cluster).empty() && choose == "time" && options.algo == "semantic") {
      absl::StatusOr<cli::PredictOptions> predict = PredictFlags(model, options.traces);
      if (!predict.ok()) return Done(predict.status());
      progress.Finish();  // The candidates print a line each instead.
      return Done(cli::BuildChosenByTime(options, *predict, std::cout).status());
    }
    absl::StatusOr<int64_t> built = cli::Build(options, std::cout);
    if (!built.ok() || absl::GetFlag(FLAGS_cluster).empty()) return Done(built.status());
    return Done(Predict(db, *built, options.traces));
  }
  if (command == "predict") {
    if (version <= 0 || absl::GetFlag(FLAGS_traces).empty() ||
        absl::GetFlag(FLAGS_cluster).empty()) {
      return Usage("predict needs --version, --traces and --cluster");
    }
    return Done(Predict(db, version, UserPaths(absl::GetFlag(FLAGS_traces))));
  }
  if (command == "drift") {
    if (absl::GetFlag(FLAGS_version) <= 0 || absl::GetFlag(FLAGS_traces).empty()) {
      return Usage("drift needs --version and --traces (live routing traces)");
    }
    std::vector<std::string> traces;
    for (const std::string& t : absl::GetFlag(FLAGS_traces)) traces.push_back(UserPath(t));
    return Done(cli::Drift({.db = db,
                            .version = absl::GetFlag(FLAGS_version),
                            .live = traces,
                            .json = absl::GetFlag(FLAGS_json)},
                           std::cout));
  }
  if (command == "eval" && study) {  // Plans in memory from --profile: no database.
    if (absl::GetFlag(FLAGS_traces).empty() || absl::GetFlag(FLAGS_profile).empty()) {
      return Usage("eval --pareto / --zero_shot need --profile and --traces");
    }
    const cli::StudyOptions study{.profile = UserPaths(absl::GetFlag(FLAGS_profile)),
                                  .traces = UserPaths(absl::GetFlag(FLAGS_traces)),
                                  .devices = absl::GetFlag(FLAGS_devices),
                                  .token_balance_eps = absl::GetFlag(FLAGS_balance_eps),
                                  .link_cost = absl::GetFlag(FLAGS_link_cost),
                                  .balance_groups = absl::GetFlag(FLAGS_balance_groups),
                                  .domains = UserPath(absl::GetFlag(FLAGS_domains)),
                                  .json = absl::GetFlag(FLAGS_json),
                                  .seed = absl::GetFlag(FLAGS_seed)};
    return Done(absl::GetFlag(FLAGS_pareto) ? cli::Pareto(study, std::cout)
                                            : cli::ZeroShot(study, std::cout));
  }
  if (command == "eval") {
    std::vector<int64_t> versions;
    for (const std::string& v : absl::GetFlag(FLAGS_versions)) {
      int64_t n;
      if (!absl::SimpleAtoi(v, &n))
        return Usage(absl::StrCat("--versions: '", v, "' is not a number"));
      versions.push_back(n);
    }
    if (versions.empty() || absl::GetFlag(FLAGS_traces).empty()) {
      return Usage("eval needs --versions and --traces");
    }
    cli::EvalOptions eval{.db = db, .versions = versions};
    Progress progress({.label = "planner eval",
                       .unit = "steps",
                       .total = cli::EvalSteps(eval),
                       .enabled = ProgressEnabled(absl::GetFlag(FLAGS_quiet))});
    return Done(cli::Eval({.db = db,
                           .versions = versions,
                           .traces = UserPaths(absl::GetFlag(FLAGS_traces)),
                           .profile = UserPaths(absl::GetFlag(FLAGS_profile)),
                           .hidden_size = absl::GetFlag(FLAGS_hidden_size),
                           .token_balance_eps = absl::GetFlag(FLAGS_balance_eps),
                           .json = absl::GetFlag(FLAGS_json),
                           .balanced_bound = absl::GetFlag(FLAGS_balanced_bound),
                           .dp_bounds = absl::GetFlag(FLAGS_dp_bounds),
                           .topology = absl::GetFlag(FLAGS_topology),
                           .progress = &progress},
                          std::cout));
  }
  if (command == "serve") {
    // The stop signals are taken before gRPC starts its threads; the stop (the autopilot's
    // step, the server's calls) is bounded by the watchdog.
    StopSignals& stop = WatchStopSignals("planner", absl::Seconds(5));
    PlannerServiceImpl::Options service;
    service.diff = [db](int64_t from, int64_t to) -> absl::StatusOr<std::string> {
      absl::StatusOr<nlohmann::ordered_json> d = cli::DiffReport(db, from, to);
      if (!d.ok()) return d.status();
      return d->dump();
    };
    service.drift = [db](const rpc::DriftRequest& r) -> absl::StatusOr<std::string> {
      absl::StatusOr<nlohmann::ordered_json> d = cli::DriftReport(
          {.db = db, .version = r.version(), .live = {r.traces().begin(), r.traces().end()}});
      if (!d.ok()) return d.status();
      return d->dump();
    };
    service.evaluate = [db](const rpc::EvaluateRequest& r) -> absl::StatusOr<std::string> {
      absl::StatusOr<nlohmann::ordered_json> rows =
          cli::EvalRows({.db = db,
                         .versions = {r.versions().begin(), r.versions().end()},
                         .traces = {r.traces().begin(), r.traces().end()},
                         .profile = {r.profile().begin(), r.profile().end()},
                         .hidden_size = r.hidden_size(),
                         .balanced_bound = r.balanced_bound()});
      if (!rows.ok()) return rows.status();
      return rows->dump();
    };
    WarnIfPlaintext(absl::GetFlag(FLAGS_listen), "the planner");
    std::optional<AutopilotOptions> autopilot;
    if (absl::GetFlag(FLAGS_autopilot)) {
      if (model.empty() || absl::GetFlag(FLAGS_autopilot_traces).empty()) {
        return Usage("serve --autopilot needs --model and --autopilot_traces (live traces)");
      }
      autopilot = AutopilotOptions{
          .db = db,
          .model = model,
          .traces = UserPaths(absl::GetFlag(FLAGS_autopilot_traces)),
          .drift_threshold = absl::GetFlag(FLAGS_autopilot_drift),
          .shift_threshold = absl::GetFlag(FLAGS_autopilot_shift),
          .min_window_tokens = absl::GetFlag(FLAGS_autopilot_min_window_tokens),
          .min_interval = absl::GetFlag(FLAGS_autopilot_min_interval),
          .max_moved_experts = absl::GetFlag(FLAGS_autopilot_expert_budget),
          .max_lar_loss = absl::GetFlag(FLAGS_autopilot_max_lar_loss),
          .migration_retries = absl::GetFlag(FLAGS_autopilot_migration_retries),
          .min_gain = absl::GetFlag(FLAGS_autopilot_min_gain),
          .drift_confirm = absl::GetFlag(FLAGS_autopilot_confirm),
          .rollout_timeout = absl::GetFlag(FLAGS_autopilot_rollout_timeout),
          .min_served_requests = absl::GetFlag(FLAGS_autopilot_min_served_requests),
          .served_lar_margin = absl::GetFlag(FLAGS_autopilot_served_margin),
          .served_latency_margin = absl::GetFlag(FLAGS_autopilot_served_latency_margin)};
    }
    auto server = PlannerServer::Start(
        {.db = db,
         .address = absl::StrCat(absl::GetFlag(FLAGS_listen), ":", absl::GetFlag(FLAGS_port)),
         .metrics_port = absl::GetFlag(FLAGS_metrics_port),
         .metrics_listen = absl::GetFlag(FLAGS_listen),
         .service = service,
         .autopilot = autopilot,
         .autopilot_period = absl::GetFlag(FLAGS_autopilot_period)});
    if (!server.ok()) return Done(server.status());
    std::cout << "planner serving " << db << " on " << absl::GetFlag(FLAGS_listen) << ":"
              << (*server)->port() << " (PlannerService, RendezvousStore, health)" << std::endl;
    if (!absl::GetFlag(FLAGS_port_file).empty()) {
      absl::Status written = WriteFileAtomically(UserPath(absl::GetFlag(FLAGS_port_file)),
                                                 absl::StrCat((*server)->port(), "\n"));
      if (!written.ok()) return Done(written);
    }
    if ((*server)->metrics_port() > 0) {
      std::cout << "planner: Prometheus metrics on http://" << absl::GetFlag(FLAGS_listen) << ":"
                << (*server)->metrics_port() << "/metrics" << std::endl;
    }
    if (!absl::GetFlag(FLAGS_metrics_port_file).empty()) {
      absl::Status written = WriteFileAtomically(UserPath(absl::GetFlag(FLAGS_metrics_port_file)),
                                                 absl::StrCat((*server)->metrics_port(), "\n"));
      if (!written.ok()) return Done(written);
    }
    stop.stopped().WaitForNotification();
    std::cout << "planner: stopping on signal " << stop.signal() << std::endl;
    (*server)->Shutdown();
    return 0;
  }
  if (command == "diff") {
    const auto& v = absl::GetFlag(FLAGS_versions);
    int64_t a, b;
    if (v.size() != 2 || !absl::SimpleAtoi(v[0], &a) || !absl::SimpleAtoi(v[1], &b)) {
      return Usage("diff needs --versions V1,V2");
    }
    return Done(cli::Diff(db, a, b, std::cout));
  }
  if (command == "list") {
    if (model.empty()) return Usage("list needs --model");
    return Done(cli::List(db, model, std::cout));
  }
  if (command == "rollback") {
    if (model.empty()) return Usage("rollback needs --model");
    return Done(cli::Rollback(db, model, std::cout));
  }
  if (command == "import") {
    if (model.empty() || absl::GetFlag(FLAGS_file).empty())
      return Usage("import needs --model and --file");
    return Done(cli::Import(db, model, UserPath(absl::GetFlag(FLAGS_file)),
                            absl::GetFlag(FLAGS_name), std::cout)
                    .status());
  }
  if (command == "show" || command == "activate" || command == "export") {
    if (version <= 0) return Usage(absl::StrCat(command, " needs --version"));
    if (command == "show") return Done(cli::Show(db, version, std::cout));
    if (command == "activate") {
      return Done(cli::Activate(db, version, std::cout, absl::GetFlag(FLAGS_force)));
    }
    if (absl::GetFlag(FLAGS_out).empty()) return Usage("export needs --out");
    return Done(cli::Export(db, version, UserPath(absl::GetFlag(FLAGS_out))));
  }
  return Usage(absl::StrCat("unknown command '", command, "'"));
}

}  // namespace
}  // namespace semmoe::planner

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(semmoe::planner::kUsage);
  std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  semmoe::InitLogging(argv[0], {.stderr_threshold = 1});
  if (absl::Status security = semmoe::InstallSecurityFromFlags(); !security.ok()) {
    std::cerr << "planner: " << security.message() << "\n";
    return 2;
  }
  const bool experiment = args.size() == 3 && std::string(args[1]) == "experiment";
  if (args.size() != 2 && !experiment) {
    return semmoe::planner::Usage("expected exactly one command");
  }
  return semmoe::planner::Run(args[1], experiment ? args[2] : "");
}
