#include "console/commands.h"

#include <algorithm>
#include <map>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/json_fields.h"
#include "common/security.h"
#include "console/rpc_util.h"
#include "console/table.h"
#include "engine/proto/engine.grpc.pb.h"
#include "google/protobuf/util/json_util.h"
#include "grpcpp/grpcpp.h"
#include "nlohmann/json.hpp"

namespace semmoe::console {

Console::Console(const ConsoleOptions& options, std::ostream& out, std::istream& in)
    : o_(options), out_(out), in_(in) {
  planner_ = prpc::PlannerService::NewStub(semmoe::NewChannel(o_.planner));
  router_ = rrpc::RouterService::NewStub(semmoe::NewChannel(o_.router));
}

absl::Status Console::Confirm(const std::string& question) {
  if (o_.yes) return absl::OkStatus();
  if (!o_.interactive) {
    return absl::FailedPreconditionError(
        absl::StrCat(question, " — not confirmed: pass --yes (stdin is not a terminal)"));
  }
  out_ << question << " [y/N] " << std::flush;
  std::string answer;
  std::getline(in_, answer);
  if (!answer.empty() && (answer[0] == 'y' || answer[0] == 'Y')) return absl::OkStatus();
  return absl::CancelledError("not confirmed; nothing changed");
}

absl::Status Console::Run(const std::vector<std::string>& args) {
  auto need = [&](size_t n) -> absl::Status {
    if (args.size() != n) {
      return absl::InvalidArgumentError(absl::StrCat("'", absl::StrJoin(args, " "), "' takes ",
                                                     n - 2, " argument", n == 3 ? "" : "s"));
    }
    return absl::OkStatus();
  };
  const std::string group = args.empty() ? "" : args[0];
  const std::string verb = args.size() < 2 ? "" : args[1];
  if (group == "placements") {
    if (verb == "list") return need(2).ok() ? PlacementsList() : need(2);
    if (verb == "rollback") return need(2).ok() ? PlacementsRollback() : need(2);
    if (verb == "drift") {
      if (absl::Status s = need(3); !s.ok()) return s;
      absl::StatusOr<int64_t> v = Number(args[2], "version");
      if (!v.ok()) return v.status();
      return PlacementsDrift(*v);
    }
    if (verb == "show" || verb == "activate") {
      if (absl::Status s = need(3); !s.ok()) return s;
      absl::StatusOr<int64_t> v = Number(args[2], "version");
      if (!v.ok()) return v.status();
      return verb == "show" ? PlacementsShow(*v) : PlacementsActivate(*v);
    }
    if (verb == "diff") {
      if (absl::Status s = need(4); !s.ok()) return s;
      absl::StatusOr<int64_t> a = Number(args[2], "version"), b = Number(args[3], "version");
      if (!a.ok()) return a.status();
      if (!b.ok()) return b.status();
      return PlacementsDiff(*a, *b);
    }
    if (verb == "eval") {
      std::vector<int64_t> versions;
      for (size_t i = 2; i < args.size(); ++i) {
        absl::StatusOr<int64_t> v = Number(args[i], "version");
        if (!v.ok()) return v.status();
        versions.push_back(*v);
      }
      if (versions.empty() || o_.traces.empty()) {
        return absl::InvalidArgumentError("'placements eval' needs versions and --traces");
      }
      return PlacementsEval(versions);
    }
  } else if (group == "experiments") {
    if (verb == "create") return need(2).ok() ? ExperimentsCreate() : need(2);
    if (verb == "list") return need(2).ok() ? ExperimentsList() : need(2);
    if (verb == "status" || verb == "stop" || verb == "promote") {
      if (absl::Status s = need(3); !s.ok()) return s;
      absl::StatusOr<int64_t> id = Number(args[2], "experiment");
      if (!id.ok()) return id.status();
      if (verb == "status") return ExperimentsStatus(*id);
      if (verb == "stop") return ExperimentsStop(*id);
      return ExperimentsPromote(*id);
    }
  } else if (group == "cluster" && verb == "status") {
    return need(2).ok() ? ClusterStatus() : need(2);
  } else if (group == "autopilot" && verb == "status") {
    return need(2).ok() ? AutopilotStatus() : need(2);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown command '", absl::StrJoin(args, " "), "'"));
}

absl::Status Console::PlacementsList() {
  if (o_.model.empty()) return absl::InvalidArgumentError("'placements list' needs --model");
  prpc::ListVersionsRequest request;
  request.set_model(o_.model);
  prpc::ListVersionsResponse response;
  PLANNER(ListVersions, request, &response);
  if (o_.json) {
    out_ << Json(response) << "\n";
    return absl::OkStatus();
  }
  Table t({"version", "status", "name", "algorithm", "G", "parent", "created (UTC)"});
  for (const prpc::PlacementVersion& v : response.versions()) {
    t.Add({absl::StrCat(v.version()), v.status(), v.name(), v.algorithm(),
           absl::StrCat(v.num_devices()), v.parent() > 0 ? absl::StrCat(v.parent()) : "-",
           Time(v.created_unix_micros())});
  }
  out_ << t.Render();
  return absl::OkStatus();
}

absl::Status Console::PlacementsShow(int64_t version) {
  prpc::GetVersionRequest request;
  request.set_version(version);
  prpc::PlacementVersion v;
  PLANNER(GetVersion, request, &v);
  if (o_.json) {
    out_ << Json(v) << "\n";
    return absl::OkStatus();
  }
  out_ << "version " << v.version() << " of " << v.model() << ": " << v.name() << " ("
       << v.algorithm() << ", " << v.status() << ", " << v.num_devices() << " devices, created "
       << Time(v.created_unix_micros())
       << (v.parent() > 0 ? absl::StrCat(", parent ", v.parent()) : "") << ")\n";
  out_ << "parameters: " << v.params_json() << "\n";
  const nlohmann::json metrics = ParseJsonOrDiscarded(v.metrics_json());
  if (metrics.is_object() && !metrics.empty()) {
    Table t({"metric (in-sample)", "value"});
    for (const auto& [key, value] : metrics.items()) {
      t.Add({key, value.is_number() ? Fixed(value.get<double>(), 4) : value.dump()});
    }
    out_ << t.Render();
  }
  // Which experts each device holds, per MoE layer, from the placement JSON.
  const nlohmann::json p = ParseJsonOrDiscarded(v.placement_json());
  if (p.is_object() && p.contains("device_of") && p["device_of"].is_array() &&
      p.contains("moe_layers")) {
    const int devices = p.value("num_devices", 0);
    std::vector<std::string> header = {"layer"};
    for (int d = 0; d < devices; ++d) header.push_back(absl::StrCat("device ", d));
    Table t(header);
    for (size_t l = 0; l < p["device_of"].size(); ++l) {
      std::vector<std::vector<int>> held(devices);
      int e = 0;
      for (const auto& d : p["device_of"][l]) {
        if (d.is_number_integer() && d.get<int>() >= 0 && d.get<int>() < devices) {
          held[d.get<int>()].push_back(e);
        }
        ++e;
      }
      std::vector<std::string> row = {l < p["moe_layers"].size() ? p["moe_layers"][l].dump() : "?"};
      for (const auto& experts : held) row.push_back(absl::StrJoin(experts, " "));
      t.Add(row);
    }
    out_ << t.Render();
  }
  return absl::OkStatus();
}

absl::Status Console::PlacementsDiff(int64_t from, int64_t to) {
  prpc::DiffRequest request;
  request.set_from(from);
  request.set_to(to);
  prpc::Report report;
  PLANNER(DiffVersions, request, &report);
  if (o_.json) {
    out_ << report.json() << "\n";
    return absl::OkStatus();
  }
  const nlohmann::json d = ParseJsonOrDiscarded(report.json());
  if (!d.is_object()) return absl::InternalError("planner: a malformed diff report");
  out_ << "version " << from << " → " << to << ": " << d.value("moved", 0) << " of "
       << d.value("experts", 0) << " experts move to another device\n";
  Table moved({"layer", "experts moved"});
  int layer = 0;
  for (const auto& m : d["moved_per_layer"]) moved.Add({absl::StrCat(layer++), m.dump()});
  out_ << moved.Render();
  const nlohmann::json& a = d["metrics_from"];
  const nlohmann::json& b = d["metrics_to"];
  Table t({"predicted (in-sample)", absl::StrCat("v", from), absl::StrCat("v", to), "change"});
  for (const auto& [key, change] : d["change"].items()) {
    t.Add({key, Fixed(a[key].get<double>(), 4), Fixed(b[key].get<double>(), 4),
           (change.get<double>() >= 0 ? "+" : "") + Fixed(change.get<double>(), 4)});
  }
  if (!t.empty()) out_ << t.Render();
  out_ << "(lar_*: local activation ratio under each data policy; bound: the upper bound no "
          "schedule beats; a2a_rows_per_token: all-to-all token rows per token over all MoE "
          "layers — bytes = rows × hidden × bytes per value; *_imbalance: max/mean load)\n";
  return absl::OkStatus();
}

absl::Status Console::PlacementsActivate(int64_t version) {
  if (absl::Status s = Confirm(absl::StrCat("activate version ", version, "?")); !s.ok()) return s;
  // What is active now, to return to if the engines refuse the version.
  prpc::GetVersionRequest get;
  get.set_version(version);
  prpc::PlacementVersion v, before;
  PLANNER(GetVersion, get, &v);
  prpc::GetActiveRequest active;
  active.set_model(v.model());
  {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + o_.deadline));
    if (!planner_->GetActive(&context, active, &before).ok()) before.Clear();  // None yet.
  }
  prpc::ActivateRequest request;
  request.set_version(version);
  request.set_force(o_.force);
  prpc::ActivateResponse response;
  PLANNER(Activate, request, &response);
  out_ << (o_.json ? absl::StrCat("{\"active\":", version, "}")
                   : absl::StrCat("version ", version, " is active"))
       << "\n";
  return Rollout(version, before.version() == version ? 0 : before.version());
}

absl::Status Console::PlacementsRollback() {
  if (o_.model.empty()) return absl::InvalidArgumentError("'placements rollback' needs --model");
  if (absl::Status s = Confirm(absl::StrCat("roll ", o_.model, " back to its previous version?"));
      !s.ok()) {
    return s;
  }
  prpc::GetActiveRequest request;
  request.set_model(o_.model);
  prpc::PlacementVersion before, v;
  PLANNER(GetActive, request, &before);
  PLANNER(Rollback, request, &v);
  out_ << (o_.json ? Json(v)
                   : absl::StrCat("rolled back: version ", v.version(), " (", v.name(),
                                  ") is active again"))
       << "\n";
  return Rollout(v.version(), before.version());
}

absl::Status Console::PlacementsDrift(int64_t version) {
  if (o_.traces.empty()) {
    return absl::InvalidArgumentError(
        "'placements drift' needs --traces (live routing traces, paths on the planner's host)");
  }
  prpc::DriftRequest request;
  request.set_version(version);
  for (const std::string& t : o_.traces) request.add_traces(t);
  prpc::Report report;
  PLANNER(GetDrift, request, &report);
  if (o_.json) {
    out_ << report.json() << "\n";
    return absl::OkStatus();
  }
  nlohmann::json d = ParseJsonOrDiscarded(report.json());
  d["arm"] = "";
  PrintDrift(d, "the live traces");
  return absl::OkStatus();
}

absl::Status Console::PlacementsEval(const std::vector<int64_t>& versions) {
  prpc::EvaluateRequest request;
  for (int64_t v : versions) request.add_versions(v);
  for (const std::string& t : o_.traces) request.add_traces(t);
  prpc::Report report;
  PLANNER(EvaluateVersions, request, &report);
  if (o_.json) {
    out_ << report.json() << "\n";
    return absl::OkStatus();
  }
  const nlohmann::json rows = ParseJsonOrDiscarded(report.json());
  Table t({"version", "name", "G", "DP blind", "DP affinity", "DP bound", "TP blind", "TP SRS",
           "TP oracle", "expert imb."});
  for (const auto& r : rows) {
    auto f = [&](const char* key) {
      return r.contains(key) ? Fixed(r[key].get<double>(), 4) : "-";
    };
    t.Add({r["version"].dump(), r.value("name", ""), r["devices"].dump(), f("dp_lar_blind"),
           f("dp_lar_affinity"), f("dp_bound"), f("tp_lar_blind"), f("tp_lar_srs"), f("tp_oracle"),
           f("expert_load_imbalance")});
  }
  out_ << t.Render();
  return absl::OkStatus();
}

}  // namespace semmoe::console
