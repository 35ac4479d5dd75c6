// netlab: a Sem-MoE cluster across emulated hosts — Linux network namespaces on shaped links
// (lab_network.h) — started with the same per-host commands a real multi-host deployment runs.
//
//   netlab --model DIR [--hosts 2] [--ranks_per_host 1] [--link_mbit 1000] [--latency_us 0]
//          [--attn dp|tp] [--placement vanilla|FILE|VERSION --db DB] [--router_policy semantic]
//          [--run_dir DIR] [--endpoints_file F] [--down_after_s S --down_host H] [--pin_cores]
//          [--tp_layer_tables=false] [--node_topology]   (engines told which ranks share a host)
//
// Host 0 is the front host: `planner serve` (the placement store and the ranks' rendezvous) and,
// under Attention-DP, the router. Hosts 1..H run --ranks_per_host engine ranks each (rank r on
// host 1 + r / ranks_per_host): ranks on one host talk over its loopback, ranks on different
// hosts over the shaped links. Every process starts as `ip netns exec HOST <its command>`. The
// router's address is reachable from this machine (loadgen, the console, router_client).
// Ctrl-C stops everything and removes the namespaces, veths, bridge and qdiscs; after a kill -9
// the next run removes what was left. Needs root and iproute2.
//
// Exit status: 0 after a clean stop, 1 when the lab or the cluster failed, 2 for bad usage.
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "common/file.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"
#include "tools/cluster/binaries.h"
#include "tools/cluster/launch.h"
#include "tools/cluster/process.h"
#include "tools/cluster/supervise.h"
#include "tools/netlab/lab_network.h"

ABSL_FLAG(std::string, model, "", "model directory (Hugging Face layout)");
ABSL_FLAG(int, hosts, 2, "engine hosts (a front host for the planner and router comes on top)");
ABSL_FLAG(int, ranks_per_host, 1, "engine ranks per host");
ABSL_FLAG(bool, node_topology, false,
          "tell the engines and the router which ranks share a host (--topology "
          "HOSTSxRANKS_PER_HOST):"
          " a token then crosses to each other host once (node-level dedup) and the counters "
          "split cross-host from same-host bytes; false: every rank alike (the flat dispatch)");
ABSL_FLAG(double, link_mbit, 1000, "each host's link, Mbit/s both ways (0: unshaped)");
ABSL_FLAG(int, latency_us, 0, "added one-way latency, µs (needs netem in the kernel)");
ABSL_FLAG(std::string, subnet, "10.213.0", "the lab's /24 (first three octets)");
ABSL_FLAG(std::string, attn, "dp", "attention parallelism: dp or tp");
ABSL_FLAG(std::string, placement, "vanilla",
          "vanilla, a placement JSON file, or a version number in --db");
ABSL_FLAG(std::string, db, "", "planner database (default: a fresh one in the run directory)");
ABSL_FLAG(std::string, router_policy, "semantic",
          "Attention-DP: semantic, round_robin or least_loaded; none: no router");
ABSL_FLAG(int, kv_cache_mb, 256, "KV cache per rank, MiB");
ABSL_FLAG(std::string, run_dir, "", "logs and ports (default: a fresh /tmp dir)");
ABSL_FLAG(std::string, endpoints_file, "", "write the endpoints here as JSON once serving");
ABSL_FLAG(bool, pin_cores, false,
          "pin engine rank r to CPU core r mod cores (taskset), so ranks do not share a core");
ABSL_FLAG(bool, tp_layer_tables, true,
          "Attention-TP with a version: predict from its A tables too (false: T tables alone)");
ABSL_FLAG(int, startup_timeout_s, 180, "seconds to wait for every process to serve");
ABSL_FLAG(double, down_after_s, 0, "take --down_host's link down this long after serving");
ABSL_FLAG(int, down_host, 1, "with --down_after_s: the host whose link fails");
ABSL_FLAG(std::string, engine_binary, "", "engine binary (default: from the runfiles)");
ABSL_FLAG(std::string, planner_binary, "", "planner binary (default: from the runfiles)");
ABSL_FLAG(std::string, router_binary, "", "router binary (default: from the runfiles)");

namespace semmoe::tools {
namespace {

std::string argv0;

absl::Status Start(LabNetwork& lab, Cluster& c, sigset_t& stop) {
  const std::string model = UserPath(absl::GetFlag(FLAGS_model));
  const int per_host = absl::GetFlag(FLAGS_ranks_per_host);
  const int g = absl::GetFlag(FLAGS_hosts) * per_host;
  const std::string attn = absl::GetFlag(FLAGS_attn);
  std::string placement = absl::GetFlag(FLAGS_placement);
  const absl::Time deadline = absl::Now() + absl::Seconds(absl::GetFlag(FLAGS_startup_timeout_s));
  ASSIGN_OR_RETURN(const std::string engine_bin,
                   FindBinary(argv0, absl::GetFlag(FLAGS_engine_binary), "engine/engine"));
  ASSIGN_OR_RETURN(const std::string planner_bin,
                   FindBinary(argv0, absl::GetFlag(FLAGS_planner_binary), "planner/planner"));
  std::string db = UserPath(absl::GetFlag(FLAGS_db));
  if (IsVersionNumber(placement) && db.empty()) {
    return absl::InvalidArgumentError("--placement VERSION needs --db");
  }
  if (db.empty()) db = JoinPath(c.run_dir, "planner.db");
  if (!IsVersionNumber(placement) && placement != "vanilla") placement = UserPath(placement);

  // The front host: the planner (placement versions and the ranks' rendezvous).
  const std::string front = lab.Address(0);
  std::vector<std::string> argv = lab.Exec(0);
  argv.insert(argv.end(), {planner_bin, "serve", "--db", db, "--listen", front, "--port", "0",
                           "--port_file", JoinPath(c.run_dir, "planner.port")});
  ASSIGN_OR_RETURN(c.planner, Process::Spawn(argv, JoinPath(c.run_dir, "planner.log")));
  ASSIGN_OR_RETURN(c.planner_port, WaitForPort(*c.planner, JoinPath(c.run_dir, "planner.port"),
                                               "the planner", deadline));
  const std::string planner = absl::StrCat(front, ":", c.planner_port);

  EngineGroupSpec spec = {.engine_binary = engine_bin,
                          .model = model,
                          .attn = attn,
                          .placement = placement,
                          .rendezvous = absl::StrCat("grpc:", planner),
                          .ranks = g,
                          .kv_cache_mb = absl::GetFlag(FLAGS_kv_cache_mb),
                          .run_dir = c.run_dir};
  if (IsVersionNumber(placement)) spec.planner = planner;
  if (absl::GetFlag(FLAGS_node_topology)) {
    spec.extra_flags.push_back(
        absl::StrCat("--topology=", absl::GetFlag(FLAGS_hosts), "x", per_host));
  }
  spec.use_layer_tables = absl::GetFlag(FLAGS_tp_layer_tables);
  spec.host = [&lab, per_host](int r) { return lab.Address(1 + r / per_host); };
  const bool pin = absl::GetFlag(FLAGS_pin_cores);
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  spec.launcher = [&lab, per_host, pin, cores](int r) {
    std::vector<std::string> prefix = lab.Exec(1 + r / per_host);
    if (pin) prefix.insert(prefix.end(), {"taskset", "-c", absl::StrCat(r % cores)});
    return prefix;
  };
  std::cout << "starting " << g << " engine ranks on " << absl::GetFlag(FLAGS_hosts) << " hosts ("
            << attn << ", placement " << placement << ") ... logs in " << c.run_dir << std::endl;
  c.groups.emplace_back();
  RETURN_IF_ERROR(LaunchEngines(spec, deadline, stop, c.groups.back()));

  const std::string policy = absl::GetFlag(FLAGS_router_policy);
  if (policy == "none") return absl::OkStatus();
  ASSIGN_OR_RETURN(const std::string router_bin,
                   FindBinary(argv0, absl::GetFlag(FLAGS_router_binary), "router/router"));
  argv = lab.Exec(0);
  // Attention-TP: rank 0 takes every request and the router fronts it; nothing to place.
  argv.insert(argv.end(),
              {router_bin, "--model", model, "--listen", front, "--port", "0", "--port_file",
               JoinPath(c.run_dir, "router.port"), "--policy",
               attn == "tp" ? "least_loaded" : policy, "--engines", c.groups[0].Addresses()});
  if (IsVersionNumber(placement) && attn == "dp") {
    argv.insert(argv.end(), {"--planner", planner, "--version", placement});
  }
  if (absl::GetFlag(FLAGS_node_topology) && attn == "dp") {  // The router places by host too.
    argv.push_back(absl::StrCat("--topology=", absl::GetFlag(FLAGS_hosts), "x", per_host));
  }
  ASSIGN_OR_RETURN(c.router, Process::Spawn(argv, JoinPath(c.run_dir, "router.log")));
  ASSIGN_OR_RETURN(c.router_port, WaitForPort(*c.router, JoinPath(c.run_dir, "router.port"),
                                              "the router", deadline));
  return absl::OkStatus();
}

void PrintEndpoints(const LabNetwork& lab, const Cluster& c) {
  const int per_host = absl::GetFlag(FLAGS_ranks_per_host);
  std::cout << "\nSem-MoE network lab is serving: " << lab.Describe() << "\n"
            << "  host 0 (front)  " << lab.Address(0) << "   netns " << lab.Namespace(0) << "\n"
            << "  planner   " << lab.Address(0) << ":" << c.planner_port << "\n";
  nlohmann::json engines = nlohmann::json::array();
  const EngineGroup& g = c.groups[0];
  for (size_t r = 0; r < g.ports.size(); ++r) {
    const int host = 1 + static_cast<int>(r) / per_host;
    const std::string address = absl::StrCat(g.hosts[r], ":", g.ports[r]);
    std::cout << "  rank " << r << " on host " << host << " (" << lab.Namespace(host) << ")  "
              << address << (g.accepts[r] ? "" : "   (Attention-TP follower)") << "\n";
    engines.push_back({{"rank", r},
                       {"host", host},
                       {"namespace", lab.Namespace(host)},
                       {"address", address},
                       {"accepts_requests", bool(g.accepts[r])}});
  }
  nlohmann::json j = {{"engines", engines},
                      {"run_dir", c.run_dir},
                      {"planner", absl::StrCat(lab.Address(0), ":", c.planner_port)},
                      {"lab", lab.Describe()}};
  if (c.router_port > 0) {
    const std::string router = absl::StrCat(lab.Address(0), ":", c.router_port);
    j["router"] = router;
    std::cout << "  router    " << router << "   (RouterService, reachable from this machine)\n"
              << "\nsend a request:\n  bazel run //tools:router_client -- generate --target "
              << router << " --prompt 'The history of' --max_tokens 32\n";
  }
  std::cout << "Ctrl-C stops the lab and removes its namespaces.\n" << std::endl;
  const std::string file = UserPath(absl::GetFlag(FLAGS_endpoints_file));
  if (!file.empty()) (void)WriteFileAtomically(file, j.dump() + "\n");
}

int Main() {
  if (absl::GetFlag(FLAGS_model).empty()) {
    std::cerr << "netlab: --model is required\n";
    return 2;
  }
  if (absl::GetFlag(FLAGS_hosts) < 1 || absl::GetFlag(FLAGS_ranks_per_host) < 1 ||
      (absl::GetFlag(FLAGS_attn) != "dp" && absl::GetFlag(FLAGS_attn) != "tp")) {
    std::cerr << "netlab: --hosts and --ranks_per_host must be ≥ 1, --attn dp or tp\n";
    return 2;
  }
  sigset_t stop = BlockStopSignals();
  Cluster c;
  absl::StatusOr<std::string> run_dir =
      MakeRunDir(UserPath(absl::GetFlag(FLAGS_run_dir)), "netlab");
  if (!run_dir.ok()) {
    std::cerr << "netlab: " << run_dir.status().message() << "\n";
    return 1;
  }
  c.run_dir = *run_dir;
  absl::StatusOr<std::unique_ptr<LabNetwork>> lab =
      LabNetwork::Create({.hosts = absl::GetFlag(FLAGS_hosts) + 1,
                          .link_mbit = absl::GetFlag(FLAGS_link_mbit),
                          .latency_us = absl::GetFlag(FLAGS_latency_us),
                          .subnet = absl::GetFlag(FLAGS_subnet),
                          .run_dir = c.run_dir});
  if (!lab.ok()) {
    std::cerr << "netlab: " << lab.status().message() << "\n";
    return 1;
  }
  absl::Status started = Start(**lab, c, stop);
  if (!started.ok()) {
    std::cerr << "netlab: " << started.message() << "\n";
    StopAll(c);
    return 1;
  }
  PrintEndpoints(**lab, c);
  std::thread failure;
  absl::Notification stopped;
  if (absl::GetFlag(FLAGS_down_after_s) > 0) {  // A failed network, for tests and drills.
    failure = std::thread([&] {
      if (stopped.WaitForNotificationWithTimeout(
              absl::Seconds(absl::GetFlag(FLAGS_down_after_s)))) {
        return;
      }
      const int host = absl::GetFlag(FLAGS_down_host);
      const absl::Status down = (*lab)->SetLinkUp(host, false);
      std::cout << "netlab: host " << host << "'s link is "
                << (down.ok() ? "down" : absl::StrCat("still up (", down.message(), ")"))
                << std::endl;
    });
  }
  const int rc = Supervise(c, stop, "netlab");
  stopped.Notify();
  if (failure.joinable()) failure.join();
  return rc;  // The lab's namespaces go with `lab`.
}

}  // namespace
}  // namespace semmoe::tools

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  char resolved[PATH_MAX];
  semmoe::tools::argv0 = realpath(argv[0], resolved) != nullptr ? resolved : argv[0];
  return semmoe::tools::Main();
}
