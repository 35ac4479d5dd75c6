#include "console/commands.h"

#include <algorithm>
#include <map>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "console/table.h"
#include "engine/proto/engine.grpc.pb.h"
#include "google/protobuf/util/json_util.h"
#include "grpcpp/grpcpp.h"
#include "nlohmann/json.hpp"

namespace semmoe::console {
namespace {

namespace prpc = planner::rpc;
namespace rrpc = router::rpc;

// One line: which service, what it said.
absl::Status Rpc(const grpc::Status& s, const std::string& service, const std::string& address) {
  if (s.ok()) return absl::OkStatus();
  std::string message = s.error_message();
  std::replace(message.begin(), message.end(), '\n', ' ');
  if (s.error_code() == grpc::StatusCode::UNAVAILABLE ||
      s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
    return absl::UnavailableError(
        absl::StrCat("the ", service, " at ", address, " is unreachable (", message, ")"));
  }
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                      absl::StrCat(service, ": ", message));
}

std::string Json(const google::protobuf::Message& m) {
  std::string out;
  google::protobuf::util::JsonPrintOptions o;
  o.preserve_proto_field_names = true;
  o.always_print_primitive_fields = true;
  (void)google::protobuf::util::MessageToJsonString(m, &out, o);
  return out;
}

absl::StatusOr<int64_t> Number(const std::string& word, const char* what) {
  int64_t n = 0;
  if (!absl::SimpleAtoi(word, &n) || n <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(what, " '", word, "' is not a positive number"));
  }
  return n;
}

std::string Time(int64_t unix_micros) {
  return absl::FormatTime("%Y-%m-%d %H:%M:%S", absl::FromUnixMicros(unix_micros),
                          absl::UTCTimeZone());
}

double Get(const nlohmann::json& j, const char* key, const char* sub = nullptr) {
  if (!j.is_object() || !j.contains(key)) return 0;
  const nlohmann::json& v = sub == nullptr ? j[key] : j[key].value(sub, nlohmann::json());
  return v.is_number() ? v.get<double>() : 0;
}

}  // namespace

Console::Console(const ConsoleOptions& options, std::ostream& out, std::istream& in)
    : o_(options), out_(out), in_(in) {
  planner_ = prpc::PlannerService::NewStub(
      grpc::CreateChannel(o_.planner, grpc::InsecureChannelCredentials()));
  router_ = rrpc::RouterService::NewStub(
      grpc::CreateChannel(o_.router, grpc::InsecureChannelCredentials()));
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

#define SEMMOE_CALL(stub, method, request, response, service, address)                     \
  do {                                                                                     \
    grpc::ClientContext context_;                                                          \
    context_.set_deadline(absl::ToChronoTime(absl::Now() + o_.deadline));                  \
    absl::Status s_ = Rpc((stub)->method(&context_, request, response), service, address); \
    if (!s_.ok()) return s_;                                                               \
  } while (false)
#define PLANNER(method, request, response) \
  SEMMOE_CALL(planner_, method, request, response, "planner", o_.planner)
#define ROUTER(method, request, response) \
  SEMMOE_CALL(router_, method, request, response, "router", o_.router)

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
  const nlohmann::json metrics = nlohmann::json::parse(v.metrics_json(), nullptr, false);
  if (metrics.is_object() && !metrics.empty()) {
    Table t({"metric (in-sample)", "value"});
    for (const auto& [key, value] : metrics.items()) {
      t.Add({key, value.is_number() ? Fixed(value.get<double>(), 4) : value.dump()});
    }
    out_ << t.Render();
  }
  // Which experts each device holds, per MoE layer, from the placement JSON.
  const nlohmann::json p = nlohmann::json::parse(v.placement_json(), nullptr, false);
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
  const nlohmann::json d = nlohmann::json::parse(report.json(), nullptr, false);
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
  prpc::ActivateRequest request;
  request.set_version(version);
  prpc::ActivateResponse response;
  PLANNER(Activate, request, &response);
  out_ << (o_.json ? absl::StrCat("{\"active\":", version, "}")
                   : absl::StrCat("version ", version, " is active"))
       << "\n";
  return absl::OkStatus();
}

absl::Status Console::PlacementsRollback() {
  if (o_.model.empty()) return absl::InvalidArgumentError("'placements rollback' needs --model");
  if (absl::Status s = Confirm(absl::StrCat("roll ", o_.model, " back to its previous version?"));
      !s.ok()) {
    return s;
  }
  prpc::GetActiveRequest request;
  request.set_model(o_.model);
  prpc::PlacementVersion v;
  PLANNER(Rollback, request, &v);
  out_ << (o_.json ? Json(v)
                   : absl::StrCat("rolled back: version ", v.version(), " (", v.name(),
                                  ") is active again"))
       << "\n";
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
  const nlohmann::json rows = nlohmann::json::parse(report.json(), nullptr, false);
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

void Console::PrintExperiment(const prpc::Experiment& e) {
  out_ << "experiment " << e.id() << " (" << e.name() << ", " << e.model() << "): " << e.status()
       << "\n";
  Table t({"arm", "version", "share", "requests", "done", "TTFT p50", "TTFT p99", "TPOT p50",
           "E2E p50", "E2E p99", "goodput/s", "LAR", "a2a B/tok"});
  for (const prpc::ExperimentArm& a : e.arms()) {
    const nlohmann::json m = nlohmann::json::parse(a.latest_metrics_json(), nullptr, false);
    const bool has = m.is_object();
    auto f = [&](double x, int d) { return has ? Fixed(x, d) : std::string("-"); };
    t.Add({a.name(), absl::StrCat(a.version()), absl::StrCat(a.share_percent(), "%"),
           has ? absl::StrCat(static_cast<int64_t>(Get(m, "received"))) : "-",
           has ? absl::StrCat(static_cast<int64_t>(Get(m, "completed"))) : "-",
           f(Get(m, "ttft_ms", "p50"), 1), f(Get(m, "ttft_ms", "p99"), 1),
           f(Get(m, "tpot_ms", "p50"), 1), f(Get(m, "e2e_ms", "p50"), 1),
           f(Get(m, "e2e_ms", "p99"), 1), f(Get(m, "goodput_rps"), 2), f(Get(m, "lar"), 3),
           f(Get(m, "a2a_bytes_per_token"), 0)});
  }
  out_ << t.Render();
}

absl::Status Console::ExperimentsCreate() {
  if (o_.model.empty() || o_.a <= 0 || o_.b <= 0 || o_.share < 1 || o_.share > 99) {
    return absl::InvalidArgumentError(
        "'experiments create' needs --model, --a V1, --b V2 and --share P (B's percent, 1-99)");
  }
  prpc::CreateExperimentRequest request;
  request.set_model(o_.model);
  request.set_name(o_.name.empty() ? absl::StrCat("v", o_.a, " vs v", o_.b) : o_.name);
  prpc::ExperimentArm* a = request.add_arms();
  a->set_name("A");
  a->set_version(o_.a);
  a->set_share_percent(100 - o_.share);
  prpc::ExperimentArm* b = request.add_arms();
  b->set_name("B");
  b->set_version(o_.b);
  b->set_share_percent(o_.share);
  prpc::Experiment created, started;
  PLANNER(CreateExperiment, request, &created);
  prpc::ExperimentId id;
  id.set_id(created.id());
  PLANNER(StartExperiment, id, &started);
  if (o_.json) {
    out_ << Json(started) << "\n";
  } else {
    out_ << "experiment " << started.id() << " is running: A = version " << o_.a << " ("
         << 100 - o_.share << "%), B = version " << o_.b << " (" << o_.share
         << "%). Serve it with local_cluster --experiment " << started.id() << "\n";
  }
  return absl::OkStatus();
}

absl::Status Console::ExperimentsList() {
  if (o_.model.empty()) return absl::InvalidArgumentError("'experiments list' needs --model");
  prpc::ListExperimentsRequest request;
  request.set_model(o_.model);
  prpc::ListExperimentsResponse response;
  PLANNER(ListExperiments, request, &response);
  if (o_.json) {
    out_ << Json(response) << "\n";
    return absl::OkStatus();
  }
  Table t({"id", "status", "name", "arms"});
  for (const prpc::Experiment& e : response.experiments()) {
    std::string arms;
    for (const prpc::ExperimentArm& a : e.arms()) {
      absl::StrAppend(&arms, arms.empty() ? "" : ", ", a.name(), "=v", a.version(), " ",
                      a.share_percent(), "%");
    }
    t.Add({absl::StrCat(e.id()), e.status(), e.name(), arms});
  }
  out_ << t.Render();
  return absl::OkStatus();
}

absl::Status Console::ExperimentsStatus(int64_t id) {
  prpc::ExperimentId request;
  request.set_id(id);
  prpc::Experiment e;
  PLANNER(GetExperiment, request, &e);
  if (o_.json) {
    out_ << Json(e) << "\n";
    return absl::OkStatus();
  }
  PrintExperiment(e);
  return absl::OkStatus();
}

absl::Status Console::ExperimentsStop(int64_t id) {
  if (absl::Status s = Confirm(absl::StrCat("stop experiment ", id, "?")); !s.ok()) return s;
  prpc::ExperimentId request;
  request.set_id(id);
  prpc::Experiment e;
  PLANNER(StopExperiment, request, &e);
  out_ << (o_.json ? Json(e) : absl::StrCat("experiment ", id, " is ", e.status())) << "\n";
  return absl::OkStatus();
}

absl::Status Console::ExperimentsPromote(int64_t id) {
  prpc::ExperimentId get;
  get.set_id(id);
  prpc::Experiment e;
  PLANNER(GetExperiment, get, &e);
  std::string arm = o_.arm;
  if (arm.empty()) {  // The winner: most goodput recorded (then the lower E2E p50).
    double best = -1, best_e2e = 0;
    for (const prpc::ExperimentArm& a : e.arms()) {
      const nlohmann::json m = nlohmann::json::parse(a.latest_metrics_json(), nullptr, false);
      if (!m.is_object()) continue;
      const double goodput = Get(m, "goodput_rps"), e2e = Get(m, "e2e_ms", "p50");
      if (goodput > best || (goodput == best && e2e < best_e2e)) {
        best = goodput, best_e2e = e2e, arm = a.name();
      }
    }
    if (arm.empty()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "experiment ", id, " has no recorded metrics to pick a winner; name one with --arm"));
    }
  }
  int64_t version = 0;
  for (const prpc::ExperimentArm& a : e.arms()) {
    if (a.name() == arm) version = a.version();
  }
  if (version == 0) {
    return absl::NotFoundError(absl::StrCat("experiment ", id, " has no arm '", arm, "'"));
  }
  if (absl::Status s = Confirm(absl::StrCat("promote arm ", arm, " of experiment ", id,
                                            " (activate version ", version, ")?"));
      !s.ok()) {
    return s;
  }
  prpc::PromoteExperimentRequest request;
  request.set_id(id);
  request.set_arm(arm);
  prpc::Experiment done;
  PLANNER(PromoteExperiment, request, &done);
  out_ << (o_.json ? Json(done)
                   : absl::StrCat("experiment ", id, ": arm ", arm, " promoted; version ", version,
                                  " is active (experiment ", done.status(), ")"))
       << "\n";
  return absl::OkStatus();
}

absl::Status Console::ClusterStatus() {
  rrpc::RouterStats stats;
  ROUTER(GetStats, rrpc::GetStatsRequest(), &stats);
  // LAR per MoE layer over every rank, from the engines themselves.
  std::map<int, std::pair<int64_t, int64_t>> layers;  // layer → (local, remote)
  int reachable = 0;
  for (const rrpc::RankStats& r : stats.ranks()) {
    auto stub = engine::rpc::EngineService::NewStub(
        grpc::CreateChannel(r.address(), grpc::InsecureChannelCredentials()));
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(2)));
    engine::rpc::EngineStats e;
    if (!stub->GetStats(&context, engine::rpc::GetStatsRequest(), &e).ok()) continue;
    ++reachable;
    for (const engine::rpc::MoeLayerStats& l : e.layers()) {
      layers[l.layer()].first += l.local_activations();
      layers[l.layer()].second += l.remote_activations();
    }
  }
  if (o_.json) {
    nlohmann::json j = nlohmann::json::parse(Json(stats));
    nlohmann::json per_layer = nlohmann::json::array();
    for (const auto& [layer, c] : layers) {
      const int64_t all = c.first + c.second;
      per_layer.push_back({{"layer", layer}, {"lar", all == 0 ? 0.0 : double(c.first) / all}});
    }
    j["lar_per_layer"] = per_layer;
    out_ << j.dump() << "\n";
    return absl::OkStatus();
  }
  out_ << "router " << o_.router << ": policy " << stats.policy() << ", " << stats.ranks_size()
       << " ranks (" << reachable << " answering), " << stats.received() << " requests ("
       << stats.completed() << " done, " << stats.failed() << " failed, " << stats.rejected()
       << " rejected), LAR " << Fixed(stats.lar(), 3) << ", "
       << Fixed(stats.a2a_bytes_per_token(), 0) << " all-to-all B/token"
       << (stats.experiment_id() > 0 ? absl::StrCat(", experiment ", stats.experiment_id()) : "")
       << "\n";
  Table ranks({"arm", "rank", "address", "health", "in flight", "tokens in flight", "assigned",
               "KV free", "LAR"});
  for (const rrpc::RankStats& r : stats.ranks()) {
    ranks.Add({r.arm().empty() ? "-" : r.arm(), absl::StrCat(r.rank()), r.address(),
               r.usable() ? "serving" : "DOWN", absl::StrCat(r.requests_in_flight()),
               absl::StrCat(r.tokens_in_flight()), absl::StrCat(r.assigned()),
               absl::StrCat(r.kv_free_tokens()), Fixed(r.lar(), 3)});
  }
  out_ << ranks.Render();
  Table arms({"arm", "share", "throughput/s", "goodput/s", "TTFT p50", "TTFT p99", "TPOT p50",
              "E2E p99", "LAR", "a2a B/tok"});
  for (const rrpc::ArmStats& a : stats.arms()) {
    arms.Add({a.name().empty() ? "-" : a.name(), absl::StrCat(a.share_percent(), "%"),
              Fixed(a.throughput_rps(), 2), Fixed(a.goodput_rps(), 2), Fixed(a.ttft_ms().p50(), 1),
              Fixed(a.ttft_ms().p99(), 1), Fixed(a.tpot_ms().p50(), 1), Fixed(a.e2e_ms().p99(), 1),
              Fixed(a.lar(), 3), Fixed(a.a2a_bytes_per_token(), 0)});
  }
  out_ << arms.Render();
  Table per_layer({"MoE layer", "LAR", ""});
  for (const auto& [layer, c] : layers) {
    const int64_t all = c.first + c.second;
    const double lar = all == 0 ? 0.0 : double(c.first) / all;
    per_layer.Add(
        {absl::StrCat(layer), Fixed(lar, 3), std::string(static_cast<int>(lar * 40), '#')});
  }
  if (!per_layer.empty()) out_ << per_layer.Render();
  return absl::OkStatus();
}

}  // namespace semmoe::console
