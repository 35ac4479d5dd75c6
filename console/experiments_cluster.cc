#include <algorithm>
#include <map>
#include <numeric>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/json_fields.h"
#include "common/security.h"
#include "console/commands.h"
#include "console/rpc_util.h"
#include "console/table.h"
#include "console/tui_model.h"
#include "engine/proto/engine.grpc.pb.h"
#include "google/protobuf/util/json_util.h"
#include "grpcpp/grpcpp.h"
#include "nlohmann/json.hpp"
#include "planner/placement/holder_choice.h"
#include "planner/placement/hot_experts.h"

namespace semmoe::console {

namespace {
constexpr int kHotExperts = 8;  // The hottest experts per layer in --json.
}  // namespace

void Console::PrintExperiment(const prpc::Experiment& e) {
  out_ << "experiment " << e.id() << " (" << e.name() << ", " << e.model() << "): " << e.status()
       << "\n";
  Table t({"arm", "version", "share", "requests", "done", "TTFT p50", "TTFT p99", "TPOT p50",
           "E2E p50", "E2E p99", "goodput/s", "LAR", "a2a B/tok", "MoE ms"});
  for (const prpc::ExperimentArm& a : e.arms()) {
    const nlohmann::json m = ParseJsonOrDiscarded(a.latest_metrics_json());
    const bool has = m.is_object();
    auto f = [&](double x, int d) { return has ? Fixed(x, d) : std::string("-"); };
    t.Add({a.name(), absl::StrCat(a.version()), absl::StrCat(a.share_percent(), "%"),
           has ? absl::StrCat(static_cast<int64_t>(Get(m, "received"))) : "-",
           has ? absl::StrCat(static_cast<int64_t>(Get(m, "completed"))) : "-",
           f(Get(m, "ttft_ms", "p50"), 1), f(Get(m, "ttft_ms", "p99"), 1),
           f(Get(m, "tpot_ms", "p50"), 1), f(Get(m, "e2e_ms", "p50"), 1),
           f(Get(m, "e2e_ms", "p99"), 1), f(Get(m, "goodput_rps"), 2), f(Get(m, "lar"), 3),
           f(Get(m, "a2a_bytes_per_token"), 0), f(Get(m, "moe_layer_ms"), 3)});
  }
  out_ << t.Render();
  for (const prpc::ExperimentArm& a : e.arms()) {
    if (const std::string why = NotRoutedAsPlanned(a); !why.empty()) {
      out_ << "!! arm " << a.name() << " was not routed as planned: " << why << "\n";
    }
  }
  for (const std::string& line : MeasuredSlowerLines(e)) out_ << line << "\n";
  const std::string verdict = Verdict(e);
  out_ << "verdict: " << (verdict.empty() ? "waiting for both arms' metrics" : verdict) << "\n";
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
      const nlohmann::json m = ParseJsonOrDiscarded(a.latest_metrics_json());
      if (!m.is_object() || !NotRoutedAsPlanned(a).empty()) continue;
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
  request.set_force(o_.force);
  prpc::Experiment done;
  PLANNER(PromoteExperiment, request, &done);
  out_ << (o_.json ? Json(done)
                   : absl::StrCat("experiment ", id, ": arm ", arm, " promoted; version ", version,
                                  " is active (experiment ", done.status(), ")"))
       << "\n";
  // Every group behind the router, the other arm's too, serves the winner.
  return o_.wait ? AwaitRollout(version, /*push=*/true) : absl::OkStatus();
}

void Console::PrintDrift(const nlohmann::json& d, const std::string& who) {
  if (d.contains("error")) {
    out_ << "!! drift of " << who << " (version " << d["version"]
         << "): " << d["error"].get<std::string>() << "\n";
    return;
  }
  out_ << "drift of " << who << ", version " << d["version"] << " on " << d["live_tokens"]
       << " live tokens: LAR " << Fixed(Get(d, "live_lar"), 3) << " live vs "
       << Fixed(Get(d, "planned_lar"), 3) << " planned (drift " << Fixed(Get(d, "lar_drift"), 3)
       << "), expert load " << Fixed(Get(d, "live_expert_load"), 2) << " vs "
       << Fixed(Get(d, "planned_expert_load"), 2) << "\n";
  Table t({"MoE layer", "planned LAR", "live LAR", "drift", "planned load", "live load"});
  for (const auto& l : d["layers"]) {
    auto f = [&](const char* key, int digits) {
      return l[key].is_number() ? Fixed(l[key].get<double>(), digits) : std::string("-");
    };
    t.Add({l["layer"].dump(), f("planned_lar", 3), f("live_lar", 3), f("lar_drift", 3),
           f("planned_expert_load", 2), f("live_expert_load", 2)});
  }
  out_ << t.Render();
}

absl::Status Console::ClusterStatus() {
  rrpc::RouterStats stats;
  ROUTER(GetStats, rrpc::GetStatsRequest(), &stats);
  // LAR per MoE layer over every rank, from the engines themselves.
  std::map<int, std::pair<int64_t, int64_t>> layers;  // layer → (local, remote)
  // (arm, layer) → each of its engines' expert activations served: the layer's expert load.
  std::map<std::pair<std::string, int>, std::vector<int64_t>> served;
  // (arm, layer) → activations per expert summed over its engines: the hottest experts.
  std::map<std::pair<std::string, int>, std::vector<int64_t>> per_expert;
  // (arm, rank) → all-to-all bytes it sent each rank: the group's rank × rank traffic matrix.
  std::map<std::pair<std::string, int>, std::vector<int64_t>> traffic;
  // layer → (cross-node, intra-node) all-to-all bytes every rank sent; arm → its topology.
  std::map<int, std::pair<int64_t, int64_t>> node_bytes;
  std::map<std::string, std::string> topology;
  int reachable = 0;
  // Per group (arm): the version its engines serve and their live routing traces, for drift.
  std::map<std::string, std::pair<int64_t, std::vector<std::string>>> live;
  for (const rrpc::RankStats& r : stats.ranks()) {
    auto stub = engine::rpc::EngineService::NewStub(semmoe::NewChannel(r.address()));
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(2)));
    engine::rpc::EngineStats e;
    if (!stub->GetStats(&context, engine::rpc::GetStatsRequest(), &e).ok()) continue;
    ++reachable;
    auto& [version, traces] = live[r.arm()];
    version = e.placement_version();
    if (e.has_routing_samples() && e.routing_samples().flushes() > 0 &&
        e.routing_samples().error().empty()) {
      traces.push_back(e.routing_samples().path());
    }
    if (e.peer_bytes_sent_size() > 0) {
      traffic[{r.arm(), e.rank()}].assign(e.peer_bytes_sent().begin(), e.peer_bytes_sent().end());
    }
    topology[r.arm()] = (e.topology().empty() ? std::string("one node") : e.topology()) +
                        (e.node_dedup() ? " (node dedup)" : "");
    for (const engine::rpc::MoeLayerStats& l : e.layers()) {
      layers[l.layer()].first += l.local_activations();
      layers[l.layer()].second += l.remote_activations();
      node_bytes[l.layer()].first += l.cross_node_bytes_sent();
      node_bytes[l.layer()].second += l.intra_node_bytes_sent();
      served[{r.arm(), l.layer()}].push_back(l.served_activations());
      planner::AddActivations(l.expert_activations(), per_expert[{r.arm(), l.layer()}]);
    }
  }
  // Drift: each group's version over its engines' live traces (planner/cli/drift.h).
  nlohmann::json drift = nlohmann::json::array();
  for (const auto& [arm, group] : live) {
    const auto& [version, traces] = group;
    if (version <= 0 || traces.empty()) continue;
    prpc::DriftRequest request;
    request.set_version(version);
    for (const std::string& t : traces) request.add_traces(t);
    prpc::Report report;
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + o_.deadline));
    const absl::Status got =
        Rpc(planner_->GetDrift(&context, request, &report), "planner", o_.planner);
    nlohmann::json d =
        got.ok() ? ParseJsonOrDiscarded(report.json())
                 : nlohmann::json{{"version", version}, {"error", std::string(got.message())}};
    d["arm"] = arm;
    drift.push_back(d);
  }
  if (o_.json) {
    nlohmann::json j = nlohmann::json::parse(Json(stats));
    j["drift"] = drift;
    nlohmann::json per_layer = nlohmann::json::array();
    for (const auto& [layer, c] : layers) {
      const int64_t all = c.first + c.second;
      per_layer.push_back({{"layer", layer},
                           {"lar", all == 0 ? 0.0 : double(c.first) / all},
                           {"cross_node_bytes", node_bytes[layer].first},
                           {"intra_node_bytes", node_bytes[layer].second}});
    }
    j["lar_per_layer"] = per_layer;
    j["topology"] = topology;
    nlohmann::json load = nlohmann::json::array();
    for (const auto& [key, ranks] : served) {
      nlohmann::json hot = nlohmann::json::array();
      for (const planner::HotExpert& h : planner::HottestExperts(per_expert[key], kHotExperts)) {
        hot.push_back({{"expert", h.expert}, {"activations", h.activations}});
      }
      load.push_back({{"arm", key.first},
                      {"layer", key.second},
                      {"served_activations", ranks},
                      {"imbalance", planner::LoadImbalance(ranks)},
                      {"hot_experts", hot}});
    }
    j["expert_load_per_layer"] = load;
    nlohmann::json matrix = nlohmann::json::array();
    for (const auto& [key, to] : traffic) {
      matrix.push_back({{"arm", key.first}, {"rank", key.second}, {"bytes_to", to}});
    }
    j["all_to_all_bytes"] = matrix;
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
  if (!stats.tables_error().empty()) out_ << "!! tables: " << stats.tables_error() << "\n";
  for (const std::string& line : RolloutBanners(stats)) out_ << line << "\n";
  Table ranks({"arm", "rank", "address", "health", "placement", "in flight", "tokens in flight",
               "assigned", "KV free", "LAR"});
  for (const rrpc::RankStats& r : stats.ranks()) {
    ranks.Add({r.arm().empty() ? "-" : r.arm(), absl::StrCat(r.rank()), r.address(),
               r.usable() ? "serving" : "DOWN", PlacementCell(r),
               absl::StrCat(r.requests_in_flight()), absl::StrCat(r.tokens_in_flight()),
               absl::StrCat(r.assigned()), absl::StrCat(r.kv_free_tokens()), Fixed(r.lar(), 3)});
  }
  out_ << ranks.Render();
  for (const std::string& line : DownRankBanners(stats)) out_ << line << "\n";
  Table arms({"arm", "share", "tables", "throughput/s", "goodput/s", "TTFT p50", "TTFT p99",
              "TPOT p50", "E2E p99", "LAR", "a2a B/tok"});
  for (const rrpc::ArmStats& a : stats.arms()) {
    arms.Add({a.name().empty() ? "-" : a.name(), absl::StrCat(a.share_percent(), "%"),
              a.placement_version() > 0 ? absl::StrCat("v", a.placement_version())
                                        : (a.tables_error().empty() ? "none" : "NONE (!!)"),
              Fixed(a.throughput_rps(), 2), Fixed(a.goodput_rps(), 2), Fixed(a.ttft_ms().p50(), 1),
              Fixed(a.ttft_ms().p99(), 1), Fixed(a.tpot_ms().p50(), 1), Fixed(a.e2e_ms().p99(), 1),
              Fixed(a.lar(), 3), Fixed(a.a2a_bytes_per_token(), 0)});
  }
  out_ << arms.Render();
  for (const auto& [arm, t] : topology) {
    out_ << "topology" << (arm.empty() ? "" : " of arm " + arm) << ": " << t << "\n";
  }
  // Per MoE layer: LAR, and the all-to-all MiB every rank sent across nodes and inside its node.
  Table per_layer({"MoE layer", "LAR", "", "cross-node MiB", "intra-node MiB"});
  for (const auto& [layer, c] : layers) {
    const int64_t all = c.first + c.second;
    const double lar = all == 0 ? 0.0 : double(c.first) / all;
    per_layer.Add({absl::StrCat(layer), Fixed(lar, 3), std::string(static_cast<int>(lar * 40), '#'),
                   Fixed(node_bytes[layer].first / 1048576.0, 2),
                   Fixed(node_bytes[layer].second / 1048576.0, 2)});
  }
  if (!per_layer.empty()) out_ << per_layer.Render();
  // Expert load per MoE layer over each group's ranks: (max − mean) / mean of the activations
  // their experts ran over the router's load window (the balance now, not since the engines
  // started), with the hottest experts: their shares of the layer's activations.
  for (const rrpc::ArmStats& arm : stats.arms()) {
    if (arm.layer_loads_size() == 0) continue;
    out_ << "expert load" << (arm.name().empty() ? "" : " of arm " + arm.name()) << " over the "
         << (arm.load_window_s() > 0 ? absl::StrCat("last ", Fixed(arm.load_window_s(), 0), " s")
                                     : std::string("engines' time so far"))
         << "\n";
  }
  Table load({"arm", "MoE layer", "load imbalance", "busiest rank's activations",
              "hottest experts (share)"});
  for (const rrpc::ArmStats& arm : stats.arms()) {
    for (const rrpc::LayerLoad& l : arm.layer_loads()) {
      std::string hot;
      for (int i = 0; i < std::min(3, l.hot_experts_size()); ++i) {
        const rrpc::HotExpert& h = l.hot_experts(i);
        absl::StrAppend(
            &hot, hot.empty() ? "" : "  ", "e", h.expert(), " ",
            Fixed(l.activations() > 0 ? 100.0 * h.activations() / l.activations() : 0.0, 1), "%");
      }
      load.Add(
          {arm.name().empty() ? "-" : arm.name(), absl::StrCat(l.layer()), Fixed(l.imbalance(), 3),
           absl::StrCat(l.busiest(), " (rank ", l.busiest_rank(), ")"), hot.empty() ? "-" : hot});
    }
  }
  if (!load.empty()) out_ << load.Render();
  // All-to-all MiB each rank sent each rank (dispatch and combine, since the engines started).
  size_t width = 0;
  for (const auto& [key, to] : traffic) width = std::max(width, to.size());
  std::vector<std::string> header = {"arm", "a2a MiB from rank"};
  for (size_t d = 0; d < width; ++d) header.push_back(absl::StrCat("to ", d));
  Table matrix(header);
  for (const auto& [key, to] : traffic) {
    std::vector<std::string> row = {key.first.empty() ? "-" : key.first, absl::StrCat(key.second)};
    for (size_t d = 0; d < width; ++d) {
      row.push_back(d < to.size() ? Fixed(static_cast<double>(to[d]) / (1 << 20), 2) : "-");
    }
    matrix.Add(row);
  }
  if (!matrix.empty()) out_ << matrix.Render();
  for (const nlohmann::json& d : drift) {
    const std::string who = d["arm"].get<std::string>().empty()
                                ? std::string("the group")
                                : absl::StrCat("arm ", d["arm"].get<std::string>());
    PrintDrift(d, who);
  }
  return absl::OkStatus();
}

}  // namespace semmoe::console
