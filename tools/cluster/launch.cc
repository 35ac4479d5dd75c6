#include "tools/cluster/launch.h"

#include <unistd.h>

#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/file.h"
#include "common/security.h"
#include "common/status_macros.h"
#include "engine/proto/engine.grpc.pb.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"

namespace semmoe::tools {

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

bool IsVersionNumber(const std::string& placement) {
  return !placement.empty() && placement.find_first_not_of("0123456789") == std::string::npos;
}

absl::StatusOr<VersionInfo> CheckVersion(planner::PlacementStore& store, int64_t version,
                                         int ranks) {
  ASSIGN_OR_RETURN(planner::PlacementVersion v, store.Get(version));
  if (v.placement.num_devices() != ranks) {
    return absl::InvalidArgumentError(absl::StrCat("version ", version, " places experts on ",
                                                   v.placement.num_devices(),
                                                   " devices; --ranks is ", ranks));
  }
  VersionInfo info;
  info.description = absl::StrCat("version ", version, " (", v.name, ", ", v.algorithm, ")");
  info.has_tables = store.GetAffinityTables(version).ok();
  info.model = v.model;
  ASSIGN_OR_RETURN(std::optional<planner::PlacementVersion> active, store.Active(v.model));
  info.active = active.has_value() && active->version == version;
  return info;
}

std::string EngineGroup::Addresses() const {
  std::string out;
  for (size_t r = 0; r < ports.size(); ++r) {
    if (accepts[r]) absl::StrAppend(&out, out.empty() ? "" : ",", hosts[r], ":", ports[r]);
  }
  return out;
}

absl::Status LaunchEngines(const EngineGroupSpec& spec, absl::Time deadline, sigset_t& stop,
                           EngineGroup& out) {
  out.name = spec.name;
  const std::string prefix = spec.name.empty() ? "" : absl::StrCat(spec.name, "-");
  auto file = [&](int r, const char* ext) {
    return JoinPath(spec.run_dir, absl::StrCat(prefix, "rank", r, ext));
  };
  for (int r = 0; r < spec.ranks; ++r) {  // A reused run dir.
    unlink(file(r, ".port").c_str());
    unlink(file(r, ".metrics_port").c_str());
  }
  for (int r = 0; r < spec.ranks; ++r) {
    out.hosts.push_back(spec.host ? spec.host(r) : "127.0.0.1");
    std::vector<std::string> argv = {spec.engine_binary, "serve",
                                     "--model",          spec.model,
                                     "--rank",           absl::StrCat(r),
                                     "--ranks",          absl::StrCat(spec.ranks),
                                     "--rendezvous",     spec.rendezvous,
                                     "--attn",           spec.attn,
                                     "--placement",      spec.placement,
                                     "--port_file",      file(r, ".port"),
                                     "--kv_cache_mb",    absl::StrCat(spec.kv_cache_mb)};
    if (!spec.affinity.empty()) argv.insert(argv.end(), {"--affinity", spec.affinity});
    if (!spec.layer_tables.empty()) argv.insert(argv.end(), {"--layer_tables", spec.layer_tables});
    if (!spec.use_layer_tables) argv.push_back("--tp_layer_tables=false");
    if (!spec.follow_active.empty()) {
      argv.insert(argv.end(), {"--follow_active", spec.follow_active});
    }
    if (spec.sample_routing > 0) {
      argv.push_back(absl::StrCat("--sample_routing=", spec.sample_routing));
      argv.insert(argv.end(), {"--routing_trace", file(r, ".trace")});
    }
    if (spec.rollout_mb_per_s >= 0) {
      argv.push_back(absl::StrCat("--rollout_mb_per_s=", spec.rollout_mb_per_s));
    }
    if (!spec.planner.empty()) argv.insert(argv.end(), {"--planner", spec.planner});
    if (spec.metrics) {
      argv.insert(argv.end(),
                  {"--metrics_port", "0", "--metrics_port_file", file(r, ".metrics_port")});
    }
    if (spec.host) argv.insert(argv.end(), {"--host", out.hosts[r]});
    argv.insert(argv.end(), spec.extra_flags.begin(), spec.extra_flags.end());
    if (spec.launcher) {
      std::vector<std::string> prefix = spec.launcher(r);
      argv.insert(argv.begin(), prefix.begin(), prefix.end());
    }
    if (spec.cuda) {
      argv.insert(argv.end(), {"--device", absl::StrCat("cuda:", spec.first_cuda_device + r)});
    }
    ASSIGN_OR_RETURN(auto process, Process::Spawn(argv, file(r, ".log")));
    out.processes.push_back(std::move(process));
  }
  for (int r = 0; r < spec.ranks; ++r) {
    timespec none = {0, 0};
    if (sigtimedwait(&stop, nullptr, &none) > 0) {
      return absl::CancelledError("interrupted while starting");
    }
    ASSIGN_OR_RETURN(int port, WaitForPort(*out.processes[r], file(r, ".port"),
                                           absl::StrCat(prefix, "rank ", r), deadline));
    out.ports.push_back(port);
    if (spec.metrics) {  // Written before the serving port.
      ASSIGN_OR_RETURN(int metrics,
                       WaitForPort(*out.processes[r], file(r, ".metrics_port"),
                                   absl::StrCat(prefix, "rank ", r, "'s metrics"), deadline));
      out.metrics_ports.push_back(metrics);
    }
  }
  // Ready: every rank answers GetStats.
  for (int r = 0; r < spec.ranks; ++r) {
    auto stub = engine::rpc::EngineService::NewStub(
        semmoe::NewChannel(absl::StrCat(out.hosts[r], ":", out.ports[r])));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    engine::rpc::EngineStats stats;
    const grpc::Status s = stub->GetStats(&context, {}, &stats);
    if (!s.ok()) {
      return absl::UnavailableError(
          absl::StrCat(prefix, "rank ", r, " does not answer: ", s.error_message()));
    }
    out.accepts.push_back(stats.accepts_requests());
  }
  return absl::OkStatus();
}

}  // namespace semmoe::tools
