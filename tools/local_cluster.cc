// local_cluster: an expert-parallel group of engine ranks on this machine.
//
//   bazel run //tools:local_cluster -- --model DIR [--ranks G] [--attn dp|tp]
//       [--placement vanilla|FILE|VERSION] [--db DB] [--router_policy semantic|round_robin|...]
//       [--device cpu|cuda]   (cuda: one GPU per rank)
//       [--topology NxM|FILE]   (which ranks share a node: engines dedup per node, router by node)
//   bazel run //tools:local_cluster -- --model DIR --ranks G --db DB --experiment ID
//       (an A/B test: one engine group per arm, each on its arm's version, behind one router)
//
// Starts G `engine serve` processes on loopback (plus `planner serve --db DB` when a database is
// given: the ranks then meet through the planner's gRPC rendezvous store, as ranks on several
// hosts would; without one they meet in a file store in the run directory), waits until every
// rank serves, then starts the router in front of them (under Attention-TP, in front of rank 0,
// which takes the requests) — under Attention-DP placing requests with the
// placement's affinity tables when it has some — prints the endpoints and how to send a
// request, and runs until Ctrl-C, which stops
// the group cleanly. No process is left behind: the children die with this process. It is the
// local supervisor: a rank, the router or the planner that exits is named with its log's tail and
// restarted on its ports after a backoff (0.5 s doubling to 10 s); a restarted rank rejoins its
// group, which re-forms (its peers never exit), and serving never needs the planner. With
// --restart=false the first exit stops the cluster instead.
//
// Exit status: 0 after a clean stop, 1 when the cluster failed, 2 for bad usage.
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/file.h"
#include "common/security_flags.h"
#include "common/status_macros.h"
#include "engine/proto/engine.grpc.pb.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "nlohmann/json.hpp"
#include "planner/placement/topology.h"
#include "planner/store/experiment_store.h"
#include "planner/store/placement_store.h"
#include "tools/cluster/binaries.h"
#include "tools/cluster/launch.h"
#include "tools/cluster/process.h"
#include "tools/cluster/supervise.h"

ABSL_FLAG(std::string, model, "", "model directory (Hugging Face layout)");
ABSL_FLAG(int, ranks, 2, "engine ranks (the EP group size)");
ABSL_FLAG(std::string, topology, "",
          "which ranks share a node, NxM or a topology file: passed to every engine (node-level "
          "dedup; a version built for another topology is refused) and the router (placing by "
          "node); empty: one node");
ABSL_FLAG(std::string, attn, "dp", "attention parallelism: dp or tp");
ABSL_FLAG(std::string, placement, "vanilla",
          "vanilla, a placement JSON file, or a version number in --db");
ABSL_FLAG(std::string, db, "", "planner database: serve it (planner serve) and read versions");
ABSL_FLAG(std::string, affinity, "",
          "token affinity tables for Attention-TP shuffling (a "
          "version from --db brings its own)");
ABSL_FLAG(std::string, run_dir, "", "logs, ports and the rendezvous (default: a fresh /tmp dir)");
ABSL_FLAG(std::string, endpoints_file, "", "write the endpoints here as JSON once serving");
ABSL_FLAG(int, kv_cache_mb, 256, "KV cache per rank, MiB");
ABSL_FLAG(int, max_running, 0, "sequences in a rank's batch at most (0: the engine's default)");
ABSL_FLAG(std::vector<std::string>, router_flags, {},
          "more flags for the router, comma-separated (e.g. --http_threads=4)");
ABSL_FLAG(std::string, device, "cpu",
          "cpu, or cuda: rank r serves from CUDA device r (one GPU per rank; A/B arms take "
          "consecutive devices)");
ABSL_FLAG(int, startup_timeout_s, 180, "seconds to wait for every rank to serve");
ABSL_FLAG(std::string, engine_binary, "", "engine binary (default: from the runfiles)");
ABSL_FLAG(std::string, planner_binary, "", "planner binary (default: from the runfiles)");
ABSL_FLAG(std::string, router_binary, "", "router binary (default: from the runfiles)");
ABSL_FLAG(int64_t, experiment, 0,
          "A/B: a running experiment in --db; one Attention-DP group of --ranks per arm");
ABSL_FLAG(bool, follow_active, true,
          "with --placement VERSION (the active one): the group follows the planner's active "
          "version, rolling out each one activated while it serves; false: the placement stays");
ABSL_FLAG(double, rollout_mb_per_s, -1,
          "cap how fast a rollout loads experts on each rank (MB/s of weights; 0: no cap; "
          "-1: the engine's default)");
ABSL_FLAG(double, sample_routing, 0,
          "sample this share of requests' routing on every rank into RUN_DIR/rank<r>.trace (live "
          "traces for `planner build --traces`; Attention-DP)");
ABSL_FLAG(int64_t, routing_sample_tokens, 0,
          "with --sample_routing: tokens each rank's live trace keeps at most, the oldest dropped "
          "first (0: the engine's default)");
ABSL_FLAG(bool, autopilot, false,
          "with --db, the active version as --placement (followed) and --sample_routing: the "
          "planner re-plans by itself from the ranks' live traces (planner serve --autopilot, "
          "docs/PLANNER.md \"Autopilot\")");
ABSL_FLAG(std::vector<std::string>, planner_flags, {},
          "more flags for `planner serve` (e.g. --autopilot_period=5s)");
ABSL_FLAG(int, http_port, 0, "the router's OpenAI-compatible HTTP port (0: a free one; -1: none)");
ABSL_FLAG(bool, restart, true,
          "restart a rank, the router or the planner that exits (backoff 0.5 s doubling to 10 s); "
          "false: the first exit stops the cluster");
ABSL_FLAG(std::string, router_policy, "semantic",
          "the router's policy (semantic, round_robin, least_loaded, time; Attention-TP: one rank "
          "takes requests, so any); none: no router");
ABSL_FLAG(std::string, router_cluster, "",
          "--router_policy time: the cluster profile it predicts with (default lab: the profile "
          "fitted to ranks sharing one host's processors, as here)");

namespace semmoe::tools {
namespace {

std::string argv0;

// A fresh file rendezvous (Gloo's file store refuses keys of an earlier run).
absl::StatusOr<std::string> FileRendezvous(const std::string& run_dir) {
  std::string dir = JoinPath(run_dir, "rendezvous-XXXXXX");
  if (mkdtemp(dir.data()) == nullptr) {
    return absl::UnavailableError(absl::StrCat("cannot create a rendezvous folder in ", run_dir));
  }
  return absl::StrCat("file:", dir);
}

// --topology for the children ("" without one): NxM as given; a topology file read once here
// (checked before anything starts, and a pipe is consumed once) and handed on as a copy in the
// run directory. Set by Start.
std::string topology_for_children;

absl::StatusOr<std::string> TopologyForChildren(const std::string& run_dir) {
  const std::string value = absl::GetFlag(FLAGS_topology);
  if (value.empty()) return std::string();
  if (planner::Topology::IsNodesSpec(value)) {
    absl::StatusOr<planner::Topology> t = planner::Topology::FromFlag(value);
    if (!t.ok())
      return absl::InvalidArgumentError(absl::StrCat("--topology: ", t.status().message()));
    return value;
  }
  ASSIGN_OR_RETURN(const std::string text, ReadFlagFile("topology", UserPath(value)));
  absl::StatusOr<planner::Topology> t = planner::Topology::FromJson(text);
  if (!t.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--topology: ", value, ": ", t.status().message()));
  }
  const std::string copy = JoinPath(run_dir, "topology.json");
  RETURN_IF_ERROR(WriteFileAtomically(copy, text));
  return copy;
}

absl::Status StartRouter(Cluster& c, const std::string& model, std::vector<std::string> extra,
                         absl::Time deadline) {
  ASSIGN_OR_RETURN(const std::string router_bin,
                   FindBinary(argv0, absl::GetFlag(FLAGS_router_binary), "router/router"));
  std::vector<std::string> argv = {router_bin,
                                   "--model",
                                   model,
                                   "--port",
                                   "0",
                                   "--port_file",
                                   JoinPath(c.run_dir, "router.port"),
                                   "--policy",
                                   absl::GetFlag(FLAGS_router_policy)};
  if (absl::GetFlag(FLAGS_router_policy) == "time") {
    const std::string cluster = absl::GetFlag(FLAGS_router_cluster);
    argv.insert(argv.end(), {"--cluster", cluster.empty() ? "lab" : cluster});
  }
  const int http = absl::GetFlag(FLAGS_http_port);
  if (http >= 0) {
    argv.insert(argv.end(), {"--http_port", absl::StrCat(http), "--http_port_file",
                             JoinPath(c.run_dir, "router.http_port")});
  }
  argv.insert(argv.end(), extra.begin(), extra.end());
  if (!topology_for_children.empty()) {
    argv.push_back(absl::StrCat("--topology=", topology_for_children));
  }
  for (const std::string& flag : absl::GetFlag(FLAGS_router_flags)) argv.push_back(flag);
  const std::vector<std::string> security = SecurityFlagsForChild();
  argv.insert(argv.end(), security.begin(), security.end());
  unlink(JoinPath(c.run_dir, "router.port").c_str());
  unlink(JoinPath(c.run_dir, "router.http_port").c_str());
  ASSIGN_OR_RETURN(c.router, Process::Spawn(argv, JoinPath(c.run_dir, "router.log")));
  ASSIGN_OR_RETURN(c.router_port, WaitForPort(*c.router, JoinPath(c.run_dir, "router.port"),
                                              "the router", deadline));
  if (http >= 0) {
    ASSIGN_OR_RETURN(c.http_port, WaitForPort(*c.router, JoinPath(c.run_dir, "router.http_port"),
                                              "the router's HTTP frontend", deadline));
  }
  return absl::OkStatus();
}

absl::Status Start(Cluster& c, sigset_t& stop_signals) {
  const std::string model = UserPath(absl::GetFlag(FLAGS_model));
  const int g = absl::GetFlag(FLAGS_ranks);
  const std::string attn = absl::GetFlag(FLAGS_attn);
  const std::string db = UserPath(absl::GetFlag(FLAGS_db));
  const int64_t experiment = absl::GetFlag(FLAGS_experiment);
  std::string placement = absl::GetFlag(FLAGS_placement);
  std::string affinity = UserPath(absl::GetFlag(FLAGS_affinity));
  bool version_has_tables = false;
  std::string follow;  // The model whose active version the group follows ("": none).
  ASSIGN_OR_RETURN(const std::string engine_bin,
                   FindBinary(argv0, absl::GetFlag(FLAGS_engine_binary), "engine/engine"));
  if (experiment > 0 && (db.empty() || attn != "dp")) {
    return absl::InvalidArgumentError("--experiment needs --db and Attention-DP");
  }

  ASSIGN_OR_RETURN(c.run_dir, MakeRunDir(UserPath(absl::GetFlag(FLAGS_run_dir)), "cluster"));
  ASSIGN_OR_RETURN(topology_for_children, TopologyForChildren(c.run_dir));

  // The engine groups: one, or one per arm of the experiment, with their versions' files.
  std::vector<EngineGroupSpec> specs;
  EngineGroupSpec base = {.engine_binary = engine_bin,
                          .model = model,
                          .attn = attn,
                          .ranks = g,
                          .kv_cache_mb = absl::GetFlag(FLAGS_kv_cache_mb),
                          .run_dir = c.run_dir,
                          .cuda = absl::GetFlag(FLAGS_device) == "cuda",
                          .rollout_mb_per_s = absl::GetFlag(FLAGS_rollout_mb_per_s),
                          .sample_routing = absl::GetFlag(FLAGS_sample_routing),
                          .extra_flags = SecurityFlagsForChild()};
  if (absl::GetFlag(FLAGS_max_running) < 0) {
    return absl::InvalidArgumentError("--max_running must be ≥ 0");
  }
  if (!topology_for_children.empty()) {
    base.extra_flags.push_back(absl::StrCat("--topology=", topology_for_children));
  }
  if (absl::GetFlag(FLAGS_max_running) > 0) {
    base.extra_flags.push_back(absl::StrCat("--max_running=", absl::GetFlag(FLAGS_max_running)));
  }
  if (absl::GetFlag(FLAGS_routing_sample_tokens) < 0) {
    return absl::InvalidArgumentError("--routing_sample_tokens must be ≥ 0");
  }
  if (absl::GetFlag(FLAGS_routing_sample_tokens) > 0) {
    base.extra_flags.push_back(
        absl::StrCat("--routing_sample_tokens=", absl::GetFlag(FLAGS_routing_sample_tokens)));
  }
  if (absl::GetFlag(FLAGS_device) != "cpu" && absl::GetFlag(FLAGS_device) != "cuda") {
    return absl::InvalidArgumentError("--device must be cpu or cuda");
  }
  if (experiment > 0) {
    ASSIGN_OR_RETURN(auto store, planner::PlacementStore::Open(db));
    planner::ExperimentStore experiments(*store);
    ASSIGN_OR_RETURN(planner::Experiment e, experiments.Get(experiment));
    if (e.status != "running") {
      return absl::FailedPreconditionError(
          absl::StrCat("experiment ", experiment, " is ", e.status,
                       "; start it first (planner experiment start)"));
    }
    for (const planner::ExperimentArm& arm : e.arms) {
      ASSIGN_OR_RETURN(VersionInfo info, CheckVersion(*store, arm.version, g));
      EngineGroupSpec spec = base;
      spec.name = arm.name;
      spec.placement = absl::StrCat(arm.version);  // Fetched from the planner, with its tables.
      spec.first_cuda_device = static_cast<int>(specs.size()) * g;
      specs.push_back(spec);
      std::cout << "arm " << arm.name << " (" << arm.share_percent << "%): " << info.description
                << "\n";
    }
  } else {
    if (IsVersionNumber(
            placement)) {  // A version in the database: the ranks fetch it from the planner.
      if (db.empty()) return absl::InvalidArgumentError("--placement VERSION needs --db");
      if (!affinity.empty()) {
        return absl::InvalidArgumentError(
            "--placement VERSION brings the version's own tables; drop --affinity");
      }
      ASSIGN_OR_RETURN(auto store, planner::PlacementStore::Open(db));
      ASSIGN_OR_RETURN(VersionInfo info, CheckVersion(*store, std::stoll(placement), g));
      version_has_tables = info.has_tables;
      std::cout << "placement: " << info.description << " from " << db
                << (info.has_tables ? "" : " (no affinity tables stored with it)") << "\n";
      if (absl::GetFlag(FLAGS_follow_active) && info.active &&
          absl::GetFlag(FLAGS_device) == "cpu") {
        follow = info.model;
        std::cout << "the group follows the active version of '" << follow
                  << "': `console placements activate V` rolls V out while it serves\n";
      } else if (absl::GetFlag(FLAGS_follow_active)) {
        std::cout << "the group serves this version fixed ("
                  << (info.active ? "live rollouts run on CPU groups only"
                                  : "it is not the active version of '" + info.model + "'")
                  << ")\n";
      }
    } else if (placement != "vanilla") {
      placement = UserPath(placement);
    }
    EngineGroupSpec spec = base;
    spec.placement = placement;
    spec.affinity = affinity;
    spec.follow_active = follow;
    specs.push_back(spec);
  }

  if (absl::GetFlag(FLAGS_autopilot) &&
      (follow.empty() || absl::GetFlag(FLAGS_sample_routing) <= 0 || attn != "dp")) {
    return absl::InvalidArgumentError(
        "--autopilot needs --db, the active version as --placement (the group follows it), "
        "--sample_routing > 0 (its live traces) and Attention-DP");
  }
  const absl::Time deadline = absl::Now() + absl::Seconds(absl::GetFlag(FLAGS_startup_timeout_s));
  if (!db.empty()) {
    ASSIGN_OR_RETURN(const std::string planner_bin,
                     FindBinary(argv0, absl::GetFlag(FLAGS_planner_binary), "planner/planner"));
    const std::string port_file = JoinPath(c.run_dir, "planner.port");
    unlink(port_file.c_str());
    const std::string metrics_file = JoinPath(c.run_dir, "planner.metrics_port");
    unlink(metrics_file.c_str());
    std::vector<std::string> argv = {planner_bin,
                                     "serve",
                                     "--db",
                                     db,
                                     "--port",
                                     "0",
                                     "--port_file",
                                     port_file,
                                     "--metrics_port",
                                     "0",
                                     "--metrics_port_file",
                                     metrics_file};
    const std::vector<std::string> security = SecurityFlagsForChild();
    argv.insert(argv.end(), security.begin(), security.end());
    if (absl::GetFlag(FLAGS_autopilot)) {  // The ranks' live traces, as launch.h names them.
      std::vector<std::string> traces;
      for (int r = 0; r < g; ++r) {
        traces.push_back(JoinPath(c.run_dir, absl::StrCat("rank", r, ".trace")));
      }
      argv.insert(argv.end(), {"--autopilot", "--model", follow, "--autopilot_traces",
                               absl::StrJoin(traces, ",")});
      std::cout << "the planner's autopilot re-plans '" << follow
                << "' from the ranks' live traces (console autopilot status)\n";
    }
    for (const std::string& flag : absl::GetFlag(FLAGS_planner_flags)) argv.push_back(flag);
    ASSIGN_OR_RETURN(c.planner, Process::Spawn(argv, JoinPath(c.run_dir, "planner.log")));
    ASSIGN_OR_RETURN(c.planner_port, WaitForPort(*c.planner, port_file, "the planner", deadline));
    ASSIGN_OR_RETURN(c.planner_metrics_port,
                     WaitForPort(*c.planner, metrics_file, "the planner's metrics", deadline));
  }
  for (EngineGroupSpec& spec : specs) {
    // One group meets through the planner's rendezvous when there is one, as ranks on several
    // hosts would; the arms of an experiment each get their own file rendezvous.
    if (c.planner_port > 0 && specs.size() == 1) {
      spec.rendezvous = absl::StrCat("grpc:127.0.0.1:", c.planner_port);
    } else {
      ASSIGN_OR_RETURN(spec.rendezvous, FileRendezvous(c.run_dir));
    }
    if (IsVersionNumber(spec.placement)) spec.planner = absl::StrCat("127.0.0.1:", c.planner_port);
    std::cout << "starting " << g << " engine ranks" << (spec.name.empty() ? "" : " for arm ")
              << spec.name << " (" << attn << ", placement " << spec.placement << ") ... logs in "
              << c.run_dir << std::endl;
    c.groups.emplace_back();
    RETURN_IF_ERROR(LaunchEngines(spec, deadline, stop_signals, c.groups.back()));
  }

  const std::string policy = absl::GetFlag(FLAGS_router_policy);
  if (policy == "none") return absl::OkStatus();
  // Attention-TP: rank 0 takes every request; the router fronts it (one rank: placement is moot,
  // but clients, loadgen and the console talk to the router as under Attention-DP).
  if (experiment > 0) {
    std::string arms;
    for (const EngineGroup& group : c.groups) {
      absl::StrAppend(&arms, arms.empty() ? "" : ";", group.name, "=", group.Addresses());
    }
    return StartRouter(c, model,
                       {"--experiment", absl::StrCat(experiment), "--planner",
                        absl::StrCat("127.0.0.1:", c.planner_port), "--arms", arms},
                       deadline);
  }
  std::vector<std::string> extra = {"--engines", c.groups[0].Addresses()};
  if (attn == "tp") {  // One rank takes requests: nothing to place, no tables.
    extra.insert(extra.end(), {"--policy", "least_loaded"});
    return StartRouter(c, model, extra, deadline);
  }
  // The tables of the placement the engines run (not the planner's active version, which the
  // engines do not follow).
  if (IsVersionNumber(placement) && version_has_tables) {
    extra.insert(extra.end(),
                 {"--planner", absl::StrCat("127.0.0.1:", c.planner_port), "--version", placement});
  } else if (!affinity.empty() && placement != "vanilla" && !IsVersionNumber(placement)) {
    extra.insert(extra.end(), {"--affinity", affinity, "--placement", placement});
  } else if (policy == "semantic") {
    std::cout << "router: WARNING: policy semantic without affinity tables (placement "
              << absl::GetFlag(FLAGS_placement)
              << " has none): requests are placed by load alone; router_client stats says so "
                 "too\n";
  }
  return StartRouter(c, model, extra, deadline);
}

void PrintEndpoints(const Cluster& c) {
  nlohmann::json engines = nlohmann::json::array();
  int ranks = 0;
  for (const EngineGroup& g : c.groups) ranks += static_cast<int>(g.ports.size());
  std::cout << "\nSem-MoE local cluster is serving (" << ranks << " ranks)\n";
  if (c.planner_port > 0) std::cout << "  planner   127.0.0.1:" << c.planner_port << "\n";
  std::string first;
  for (const EngineGroup& g : c.groups) {
    for (size_t r = 0; r < g.ports.size(); ++r) {
      const std::string address = absl::StrCat("127.0.0.1:", g.ports[r]);
      std::cout << "  " << g.name << (g.name.empty() ? "" : " ") << "rank " << r << "    "
                << address << (g.accepts[r] ? "   (EngineService)" : "   (Attention-TP follower)")
                << "\n";
      nlohmann::json e = {
          {"rank", r}, {"address", address}, {"accepts_requests", bool(g.accepts[r])}};
      if (r < static_cast<int>(g.metrics_ports.size())) {
        e["metrics"] = absl::StrCat(g.hosts[r], ":", g.metrics_ports[r]);
      }
      if (!g.name.empty()) e["arm"] = g.name;
      engines.push_back(e);
      if (first.empty() && g.accepts[r]) first = address;
    }
  }
  if (c.router_port > 0) {
    std::cout << "  router    127.0.0.1:" << c.router_port << "   (RouterService)\n"
              << "\nsend a request:\n  bazel run //tools:router_client -- generate --target "
                 "127.0.0.1:"
              << c.router_port << " --prompt 'The history of' --max_tokens 32\n"
              << "stats:  bazel run //tools:router_client -- stats --target 127.0.0.1:"
              << c.router_port << "\n";
    if (c.http_port > 0) {
      std::cout << "  OpenAI-compatible HTTP: http://127.0.0.1:" << c.http_port << "/v1\n"
                << "  curl http://127.0.0.1:" << c.http_port
                << "/v1/completions -H 'Content-Type: application/json' -d '{\"prompt\": "
                   "\"The history of\", \"max_tokens\": 32}'\n";
    }
  } else {
    std::cout << "\nsend a request:\n  bazel run //tools:engine_client -- generate --target "
              << first << " --prompt 'The history of' --max_tokens 32\n"
              << "stats:  bazel run //tools:engine_client -- stats --target " << first << "\n";
  }
  std::cout << "Ctrl-C stops the cluster.\n" << std::endl;
  const std::string file = UserPath(absl::GetFlag(FLAGS_endpoints_file));
  if (!file.empty()) {
    nlohmann::json j = {{"engines", engines}, {"run_dir", c.run_dir}};
    if (c.planner_port > 0) j["planner"] = absl::StrCat("127.0.0.1:", c.planner_port);
    if (c.planner_metrics_port > 0) {
      j["planner_metrics"] = absl::StrCat("127.0.0.1:", c.planner_metrics_port);
    }
    if (c.router_port > 0) j["router"] = absl::StrCat("127.0.0.1:", c.router_port);
    if (c.http_port > 0) j["http"] = absl::StrCat("127.0.0.1:", c.http_port);
    (void)WriteFileAtomically(file, j.dump() + "\n");
  }
}

// Every rank is a process on this host: 128 is already more than any host has GPUs.
constexpr int kMaxLocalRanks = 128;

int Main() {
  if (absl::GetFlag(FLAGS_model).empty()) {
    std::cerr << "local_cluster: --model is required\n";
    return 2;
  }
  if (absl::GetFlag(FLAGS_ranks) < 1 || absl::GetFlag(FLAGS_ranks) > kMaxLocalRanks ||
      (absl::GetFlag(FLAGS_attn) != "dp" && absl::GetFlag(FLAGS_attn) != "tp")) {
    std::cerr << "local_cluster: --ranks must be from 1 to " << kMaxLocalRanks
              << " (one process each, on this host) and --attn dp or tp\n";
    return 2;
  }
  if (absl::GetFlag(FLAGS_http_port) < -1 || absl::GetFlag(FLAGS_http_port) > 65535) {
    std::cerr << "local_cluster: --http_port " << absl::GetFlag(FLAGS_http_port)
              << " is not a TCP port (0 to 65535; 0: a free one; -1: none)\n";
    return 2;
  }
  sigset_t stop = BlockStopSignals();
  Cluster c;
  absl::Status started = Start(c, stop);
  if (!started.ok()) {
    std::cerr << "local_cluster: " << started.message() << "\n";
    StopAll(c);
    return 1;
  }
  PrintEndpoints(c);
  return Supervise(c, stop, "local_cluster", {.restart = absl::GetFlag(FLAGS_restart)});
}

}  // namespace
}  // namespace semmoe::tools

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  if (absl::Status security = semmoe::InstallSecurityFromFlags(); !security.ok()) {
    std::cerr << "local_cluster: " << security.message() << "\n";
    return 2;
  }
  char resolved[PATH_MAX];
  semmoe::tools::argv0 = realpath(argv[0], resolved) != nullptr ? resolved : argv[0];
  return semmoe::tools::Main();
}
