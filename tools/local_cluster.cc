// local_cluster: an expert-parallel group of engine ranks on this machine.
//
//   bazel run //tools:local_cluster -- --model DIR [--ranks G] [--attn dp|tp]
//       [--placement vanilla|FILE|VERSION] [--db DB] [--router_policy semantic|round_robin|...]
//
// Starts G `engine serve` processes on loopback (plus `planner serve --db DB` when a database is
// given: the ranks then meet through the planner's gRPC rendezvous store, as ranks on several
// hosts would; without one they meet in a file store in the run directory), waits until every
// rank serves, then (Attention-DP) starts the router in front of them — placing requests with the
// placement's affinity tables when it has some — prints the endpoints and how to send a
// request, and runs until Ctrl-C, which stops
// the group cleanly. No process is left behind: the children die with this process, and if one
// rank dies the others fail fast (their collectives break) and the cluster exits with the dead
// rank's log.
//
// Exit status: 0 after a clean stop, 1 when the cluster failed, 2 for bad usage.
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/file.h"
#include "common/status_macros.h"
#include "engine/proto/engine.grpc.pb.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "nlohmann/json.hpp"
#include "planner/store/placement_store.h"
#include "tools/cluster/binaries.h"
#include "tools/cluster/process.h"

ABSL_FLAG(std::string, model, "", "model directory (Hugging Face layout)");
ABSL_FLAG(int, ranks, 2, "engine ranks (the EP group size)");
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
ABSL_FLAG(int, startup_timeout_s, 180, "seconds to wait for every rank to serve");
ABSL_FLAG(std::string, engine_binary, "", "engine binary (default: from the runfiles)");
ABSL_FLAG(std::string, planner_binary, "", "planner binary (default: from the runfiles)");
ABSL_FLAG(std::string, router_binary, "", "router binary (default: from the runfiles)");
ABSL_FLAG(std::string, router_policy, "semantic",
          "Attention-DP: the router's policy (semantic, round_robin, least_loaded); none: no "
          "router");

namespace semmoe::tools {
namespace {

std::string argv0;

bool IsNumber(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

// Waits for `port_file` while `process` runs; the port, or an error with the process's log.
absl::StatusOr<int> WaitForPort(Process& process, const std::string& port_file,
                                const std::string& what, absl::Time deadline) {
  while (true) {
    if (auto status = process.Poll()) {
      return absl::UnavailableError(absl::StrCat(what, " exited (", *status, ") before serving; ",
                                                 process.log_path(), ":\n",
                                                 Tail(process.log_path(), 15)));
    }
    absl::StatusOr<std::string> text = ReadFile(port_file);
    int port = 0;
    if (text.ok() && absl::SimpleAtoi(absl::StripAsciiWhitespace(*text), &port) && port > 0) {
      return port;
    }
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(absl::StrCat(what, " did not start serving in time; ",
                                                      process.log_path(), ":\n",
                                                      Tail(process.log_path(), 15)));
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
}

struct Cluster {
  std::string run_dir;
  std::unique_ptr<Process> planner;
  int planner_port = 0;
  std::vector<std::unique_ptr<Process>> engines;
  std::vector<int> ports;
  std::vector<bool> accepts;
  std::unique_ptr<Process> router;
  int router_port = 0;
};

// SIGTERM to every engine (each asks the group to stop), then the planner; SIGKILL stragglers.
bool StopAll(Cluster& c) {
  if (c.router != nullptr) {
    c.router->Signal(SIGTERM);
    if (!c.router->WaitFor(absl::Seconds(10))) c.router->Signal(SIGKILL);
  }
  for (auto& e : c.engines) e->Signal(SIGTERM);
  bool clean = true;
  for (size_t r = 0; r < c.engines.size(); ++r) {
    if (!c.engines[r]->WaitFor(absl::Seconds(20))) {
      std::cerr << "local_cluster: rank " << r << " did not stop; killing it\n";
      c.engines[r]->Signal(SIGKILL);
      c.engines[r]->WaitFor(absl::Seconds(5));
      clean = false;
    }
    clean &= c.engines[r]->exited_ok();
  }
  if (c.planner != nullptr) {
    c.planner->Signal(SIGTERM);
    if (!c.planner->WaitFor(absl::Seconds(10))) c.planner->Signal(SIGKILL);
  }
  return clean;
}

absl::Status Start(Cluster& c, sigset_t& stop_signals) {
  const std::string model = UserPath(absl::GetFlag(FLAGS_model));
  const int g = absl::GetFlag(FLAGS_ranks);
  const std::string attn = absl::GetFlag(FLAGS_attn);
  const std::string db = UserPath(absl::GetFlag(FLAGS_db));
  std::string placement = absl::GetFlag(FLAGS_placement);
  std::string affinity = UserPath(absl::GetFlag(FLAGS_affinity));
  std::string layer_tables;
  ASSIGN_OR_RETURN(const std::string engine_bin,
                   FindBinary(argv0, absl::GetFlag(FLAGS_engine_binary), "engine/engine"));

  c.run_dir = UserPath(absl::GetFlag(FLAGS_run_dir));
  if (c.run_dir.empty()) {
    char pattern[] = "/tmp/semmoe-cluster-XXXXXX";
    if (mkdtemp(pattern) == nullptr) return absl::UnavailableError("cannot create a run directory");
    c.run_dir = pattern;
  } else if (mkdir(c.run_dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return absl::UnavailableError(absl::StrCat("cannot create ", c.run_dir));
  }

  if (IsNumber(placement)) {  // A version in the database: export it for the engines.
    if (db.empty()) return absl::InvalidArgumentError("--placement VERSION needs --db");
    ASSIGN_OR_RETURN(auto store, planner::PlacementStore::Open(db));
    int64_t version = 0;
    (void)absl::SimpleAtoi(placement, &version);
    ASSIGN_OR_RETURN(planner::PlacementVersion v, store->Get(version));
    if (v.placement.num_devices() != g) {
      return absl::InvalidArgumentError(absl::StrCat("version ", version, " places experts on ",
                                                     v.placement.num_devices(),
                                                     " devices; --ranks is ", g));
    }
    const std::string file = JoinPath(c.run_dir, absl::StrCat("placement-v", version, ".json"));
    RETURN_IF_ERROR(WriteFileAtomically(file, v.placement.ToJson()));
    absl::StatusOr<std::string> tables = store->GetAffinityTables(version);
    if (tables.ok() && affinity.empty()) {
      affinity = JoinPath(c.run_dir, absl::StrCat("affinity-v", version, ".bin"));
      RETURN_IF_ERROR(WriteFileAtomically(affinity, *tables));
      absl::StatusOr<std::string> layers = store->GetLayerTables(version);
      if (layers.ok()) {
        layer_tables = JoinPath(c.run_dir, absl::StrCat("layers-v", version, ".bin"));
        RETURN_IF_ERROR(WriteFileAtomically(layer_tables, *layers));
      }
    }
    placement = file;
    std::cout << "placement: version " << version << " (" << v.name << ", " << v.algorithm
              << ") from " << db << "\n";
  } else if (placement != "vanilla") {
    placement = UserPath(placement);
  }

  // A reused run directory: stale port files would look like serving ranks.
  unlink(JoinPath(c.run_dir, "planner.port").c_str());
  unlink(JoinPath(c.run_dir, "router.port").c_str());
  for (int r = 0; r < g; ++r) unlink(JoinPath(c.run_dir, absl::StrCat("rank", r, ".port")).c_str());

  const absl::Time deadline = absl::Now() + absl::Seconds(absl::GetFlag(FLAGS_startup_timeout_s));
  std::string rendezvous;
  if (!db.empty()) {
    ASSIGN_OR_RETURN(const std::string planner_bin,
                     FindBinary(argv0, absl::GetFlag(FLAGS_planner_binary), "planner/planner"));
    const std::string port_file = JoinPath(c.run_dir, "planner.port");
    ASSIGN_OR_RETURN(c.planner, Process::Spawn({planner_bin, "serve", "--db", db, "--port", "0",
                                                "--port_file", port_file},
                                               JoinPath(c.run_dir, "planner.log")));
    ASSIGN_OR_RETURN(c.planner_port, WaitForPort(*c.planner, port_file, "the planner", deadline));
    rendezvous = absl::StrCat("grpc:127.0.0.1:", c.planner_port);
  } else {
    // Gloo's file store refuses keys of an earlier run: a fresh folder every time.
    std::string dir = JoinPath(c.run_dir, "rendezvous-XXXXXX");
    if (mkdtemp(dir.data()) == nullptr) {
      return absl::UnavailableError(
          absl::StrCat("cannot create a rendezvous folder in ", c.run_dir));
    }
    rendezvous = absl::StrCat("file:", dir);
  }

  std::cout << "starting " << g << " engine ranks (" << attn << ", placement " << placement
            << ") ... logs in " << c.run_dir << std::endl;
  for (int r = 0; r < g; ++r) {
    std::vector<std::string> argv = {
        engine_bin,      "serve",
        "--model",       model,
        "--rank",        absl::StrCat(r),
        "--ranks",       absl::StrCat(g),
        "--rendezvous",  rendezvous,
        "--attn",        attn,
        "--placement",   placement,
        "--port_file",   JoinPath(c.run_dir, absl::StrCat("rank", r, ".port")),
        "--kv_cache_mb", absl::StrCat(absl::GetFlag(FLAGS_kv_cache_mb))};
    if (!affinity.empty()) {
      argv.push_back("--affinity");
      argv.push_back(affinity);
    }
    if (!layer_tables.empty()) {
      argv.push_back("--layer_tables");
      argv.push_back(layer_tables);
    }
    ASSIGN_OR_RETURN(auto process,
                     Process::Spawn(argv, JoinPath(c.run_dir, absl::StrCat("rank", r, ".log"))));
    c.engines.push_back(std::move(process));
  }
  for (int r = 0; r < g; ++r) {
    // A Ctrl-C while starting stops everything.
    timespec none = {0, 0};
    if (sigtimedwait(&stop_signals, nullptr, &none) > 0) {
      return absl::CancelledError("interrupted while starting");
    }
    ASSIGN_OR_RETURN(
        int port, WaitForPort(*c.engines[r], JoinPath(c.run_dir, absl::StrCat("rank", r, ".port")),
                              absl::StrCat("rank ", r), deadline));
    c.ports.push_back(port);
  }
  // Ready: every rank answers GetStats.
  for (int r = 0; r < g; ++r) {
    auto stub = engine::rpc::EngineService::NewStub(grpc::CreateChannel(
        absl::StrCat("127.0.0.1:", c.ports[r]), grpc::InsecureChannelCredentials()));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    engine::rpc::EngineStats stats;
    const grpc::Status s = stub->GetStats(&context, {}, &stats);
    if (!s.ok()) {
      return absl::UnavailableError(
          absl::StrCat("rank ", r, " does not answer: ", s.error_message()));
    }
    c.accepts.push_back(stats.accepts_requests());
  }
  const std::string policy = absl::GetFlag(FLAGS_router_policy);
  if (attn != "dp" || policy == "none") return absl::OkStatus();
  ASSIGN_OR_RETURN(const std::string router_bin,
                   FindBinary(argv0, absl::GetFlag(FLAGS_router_binary), "router/router"));
  std::string engines;
  for (int port : c.ports)
    absl::StrAppend(&engines, engines.empty() ? "" : ",", "127.0.0.1:", port);
  std::vector<std::string> argv = {router_bin, "--engines",   engines,
                                   "--model",  model,         "--port",
                                   "0",        "--port_file", JoinPath(c.run_dir, "router.port"),
                                   "--policy", policy};
  // The tables of the placement the engines run (not the planner's active version, which the
  // engines do not follow).
  if (!affinity.empty() && placement != "vanilla") {
    argv.insert(argv.end(), {"--affinity", affinity, "--placement", placement});
    if (IsNumber(absl::GetFlag(FLAGS_placement))) {
      argv.insert(argv.end(), {"--version", absl::GetFlag(FLAGS_placement)});
    }
  }
  ASSIGN_OR_RETURN(c.router, Process::Spawn(argv, JoinPath(c.run_dir, "router.log")));
  ASSIGN_OR_RETURN(c.router_port, WaitForPort(*c.router, JoinPath(c.run_dir, "router.port"),
                                              "the router", deadline));
  return absl::OkStatus();
}

void PrintEndpoints(const Cluster& c) {
  nlohmann::json engines = nlohmann::json::array();
  std::cout << "\nSem-MoE local cluster is serving (" << c.engines.size() << " ranks)\n";
  if (c.planner_port > 0) std::cout << "  planner   127.0.0.1:" << c.planner_port << "\n";
  int first = -1;
  for (size_t r = 0; r < c.ports.size(); ++r) {
    std::cout << "  rank " << r << "    127.0.0.1:" << c.ports[r]
              << (c.accepts[r] ? "   (EngineService)" : "   (Attention-TP follower)") << "\n";
    engines.push_back({{"rank", r},
                       {"address", absl::StrCat("127.0.0.1:", c.ports[r])},
                       {"accepts_requests", bool(c.accepts[r])}});
    if (first < 0 && c.accepts[r]) first = static_cast<int>(r);
  }
  if (c.router_port > 0) {
    std::cout << "  router    127.0.0.1:" << c.router_port << "   (RouterService)\n"
              << "\nsend a request:\n  bazel run //tools:router_client -- generate --target "
                 "127.0.0.1:"
              << c.router_port << " --prompt 'The history of' --max_tokens 32\n"
              << "stats:  bazel run //tools:router_client -- stats --target 127.0.0.1:"
              << c.router_port << "\n";
  } else {
    std::cout << "\nsend a request:\n  bazel run //tools:engine_client -- generate --target "
                 "127.0.0.1:"
              << c.ports[first] << " --prompt 'The history of' --max_tokens 32\n"
              << "stats:  bazel run //tools:engine_client -- stats --target 127.0.0.1:"
              << c.ports[first] << "\n";
  }
  std::cout << "Ctrl-C stops the cluster.\n" << std::endl;
  const std::string file = UserPath(absl::GetFlag(FLAGS_endpoints_file));
  if (!file.empty()) {
    nlohmann::json j = {{"engines", engines}, {"run_dir", c.run_dir}};
    if (c.planner_port > 0) j["planner"] = absl::StrCat("127.0.0.1:", c.planner_port);
    if (c.router_port > 0) j["router"] = absl::StrCat("127.0.0.1:", c.router_port);
    (void)WriteFileAtomically(file, j.dump() + "\n");
  }
}

int Main() {
  if (absl::GetFlag(FLAGS_model).empty()) {
    std::cerr << "local_cluster: --model is required\n";
    return 2;
  }
  if (absl::GetFlag(FLAGS_ranks) < 1 ||
      (absl::GetFlag(FLAGS_attn) != "dp" && absl::GetFlag(FLAGS_attn) != "tp")) {
    std::cerr << "local_cluster: --ranks must be ≥ 1 and --attn dp or tp\n";
    return 2;
  }
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  Cluster c;
  absl::Status started = Start(c, stop);
  if (!started.ok()) {
    std::cerr << "local_cluster: " << started.message() << "\n";
    StopAll(c);
    return 1;
  }
  PrintEndpoints(c);
  while (true) {
    timespec tick = {0, 200 * 1000 * 1000};
    const int signal = sigtimedwait(&stop, nullptr, &tick);
    if (signal > 0) {
      std::cout << "local_cluster: stopping" << std::endl;
      const bool clean = StopAll(c);
      std::cout << (clean ? "local_cluster: stopped cleanly" : "local_cluster: stopped (unclean)")
                << std::endl;
      return clean ? 0 : 1;
    }
    // A rank that died: report the one killed by a signal (the cause) over those that exited
    // because their peers vanished.
    int dead = -1;
    for (size_t r = 0; r < c.engines.size(); ++r) {
      if (auto status = c.engines[r]->Poll()) {
        if (dead < 0 || absl::StartsWith(*status, "signal")) dead = static_cast<int>(r);
      }
    }
    if (dead >= 0) {
      absl::SleepFor(absl::Milliseconds(300));  // Let the others notice; then report the cause.
      for (size_t r = 0; r < c.engines.size(); ++r) {
        auto status = c.engines[r]->Poll();
        if (status.has_value() && absl::StartsWith(*status, "signal")) dead = static_cast<int>(r);
      }
      std::cerr << "local_cluster: rank " << dead << " exited (" << *c.engines[dead]->Poll()
                << "); stopping the cluster. " << c.engines[dead]->log_path() << ":\n"
                << Tail(c.engines[dead]->log_path(), 10);
      StopAll(c);
      return 1;
    }
    if (c.router != nullptr && c.router->Poll().has_value()) {
      std::cerr << "local_cluster: the router exited; stopping the cluster. "
                << c.router->log_path() << ":\n"
                << Tail(c.router->log_path(), 10);
      StopAll(c);
      return 1;
    }
    if (c.planner != nullptr && c.planner->Poll().has_value()) {
      std::cerr << "local_cluster: the planner exited; stopping the cluster\n";
      StopAll(c);
      return 1;
    }
  }
}

}  // namespace
}  // namespace semmoe::tools

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  char resolved[PATH_MAX];
  semmoe::tools::argv0 = realpath(argv[0], resolved) != nullptr ? resolved : argv[0];
  return semmoe::tools::Main();
}
