#include "planner/cli/commands.h"

#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/file.h"
#include "common/json_fields.h"
#include "common/status_macros.h"
#include "kernels/safetensors.h"
#include "nlohmann/json.hpp"
#include "planner/affinity/layer_affinity.h"
#include "planner/affinity/token_affinity.h"
#include "planner/affinity/token_affinity_builder.h"
#include "planner/eval/dp_bound.h"
#include "planner/eval/evaluate.h"
#include "planner/eval/schedule.h"
#include "planner/placement/topology.h"
#include "planner/solver/balance_curve.h"
#include "planner/solver/baselines.h"
#include "planner/solver/dp_solver.h"
#include "planner/solver/migration.h"
#include "planner/solver/node_grouping.h"
#include "planner/solver/paper_placement.h"
#include "planner/solver/replicas.h"
#include "planner/solver/scale.h"
#include "planner/solver/tp_solver.h"
#include "planner/store/placement_store.h"
#include "planner/trace/array_trace.h"

namespace semmoe::planner::cli {
namespace {

// The steps of a command on its Progress (if any): Next() ends the running step and names the
// next; Done() ends the last one.
class Step {
 public:
  explicit Step(Progress* progress) : progress_(progress) {}
  // On an error return too: the line ends before the caller prints the error.
  ~Step() {
    if (progress_ != nullptr) progress_->Finish();
  }
  void Next(std::string what) {
    if (progress_ == nullptr) return;
    if (running_) progress_->Add(1);
    running_ = true;
    progress_->SetDetail(std::move(what));
  }
  void Done() {
    if (progress_ == nullptr) return;
    if (running_) progress_->Add(1);
    running_ = false;
  }

 private:
  Progress* const progress_;
  bool running_ = false;
};

bool IsDirectory(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

absl::Status Append(trace::TraceSet& all, trace::TraceSet&& more, const std::string& path) {
  if (all.request_names.empty() && all.tokens.empty() && all.header.moe_layers.empty()) {
    all = std::move(more);  // The first (often the only) trace: no copy.
    return absl::OkStatus();
  }
  if (all.header.moe_layers != more.header.moe_layers ||
      all.header.num_experts != more.header.num_experts || all.header.top_k != more.header.top_k) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": layers, experts or top-k differ from the traces before it"));
  }
  for (int r = 0; r < more.num_requests(); ++r) RETURN_IF_ERROR(all.CopyRequest(more, r));
  return absl::OkStatus();
}

// `balance`: the expert-load cap applied (-1: none), for the version's parameters.
absl::StatusOr<Placement> BuildPlacement(const trace::TraceSet& trace, const BuildOptions& o,
                                         const Topology* topology, double* balance) {
  *balance = o.expert_balance_eps == kBalanceAuto ? -1 : o.expert_balance_eps;
  const std::vector<int> layers(trace.header.moe_layers.begin(), trace.header.moe_layers.end());
  const int n = static_cast<int>(trace.header.num_experts);
  if (o.algo == "vanilla") return Placement::Vanilla(layers, n, o.devices);
  if (o.algo != "random") RETURN_IF_ERROR(CheckSolverScale(trace.header.num_experts));
  if (o.algo == "random") return Placement::Random(layers, n, o.devices, o.seed);
  if (o.algo == "eplb") return EplbPlacement(trace, o.devices);
  if (o.algo == "coact") return CoactPlacement(trace, o.devices);
  if (o.algo == "paper") {  // The paper's Algorithm 1 (a DP co-schedule; its placement in TP).
    ASSIGN_OR_RETURN(PaperSolution solution,
                     SolvePaper(trace, {.num_devices = o.devices,
                                        .token_balance_eps = o.token_balance_eps,
                                        .seed = o.seed}));
    return solution.placement;
  }
  if (o.algo == "semantic") {
    DpSolverOptions solver{.num_devices = o.devices,
                           .token_balance_eps = o.token_balance_eps,
                           .seed = o.seed,
                           .expert_balance_eps = *balance,
                           .balance_groups = o.balance_groups};
    if (topology != nullptr && o.node_weight > 0) {
      solver.credit = TopologyCredit(*topology, o.node_weight);
    }
    if (o.mode == "tp") return SolveTp(trace, solver);
    solver.paper_start = true;  // One more start: the paper's algorithm's (dp_solver.h).
    if (o.expert_balance_eps == kBalanceAuto && trace.num_requests() >= 2) {
      ASSIGN_OR_RETURN(BalanceCurve curve,
                       TraceBalanceCurve(trace, solver,
                                         {.num_devices = o.devices,
                                          .token_balance_eps = o.token_balance_eps,
                                          .link_cost = o.link_cost,
                                          .balance_groups = o.balance_groups,
                                          .seed = o.seed}));
      *balance = curve.points[curve.chosen].eps;
      return curve.points[curve.chosen].placement;
    }
    ASSIGN_OR_RETURN(DpSolution solution, SolveDp(trace, solver));
    return solution.placement;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "--algo '", o.algo, "' is not one of semantic, vanilla, random, eplb, coact, paper"));
}

// All-to-all traffic counted in token rows (one value per row): rows per token over every MoE
// layer, dispatch plus combine, with the per-rank dedup. Bytes = rows × hidden × bytes per value.
constexpr planner::EvalOptions kRowsPerToken = {.hidden_size = 1, .bytes_per_value = 1};

std::string Pct(double x) { return absl::StrFormat("%.4f", x); }

// The version a build is relative to: same model, layers, experts and devices.
absl::StatusOr<Placement> ServedPlacement(const BuildOptions& o, const trace::TraceSet& trace) {
  ASSIGN_OR_RETURN(auto store, PlacementStore::Open(o.db));
  absl::StatusOr<PlacementVersion> v = store->Get(o.relative_to);
  if (!v.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--relative_to ", o.relative_to, ": ", v.status().message()));
  }
  const Placement& p = v->placement;
  if (v->model != o.model) {
    return absl::InvalidArgumentError(absl::StrCat("--relative_to ", o.relative_to,
                                                   " is a version of model '", v->model, "', not '",
                                                   o.model, "'"));
  }
  if (const std::string mode = AttentionModeOf(*v); mode != o.mode) {
    // A re-plan moves the served experts by the least; the other mode's placement is not what
    // serves this build's groups (and its tables are of the other kind).
    return absl::InvalidArgumentError(absl::StrCat("--relative_to ", o.relative_to,
                                                   " is an Attention-", absl::AsciiStrToUpper(mode),
                                                   " version; this build is --mode ", o.mode));
  }
  if (p.num_devices() != o.devices || p.num_experts() != trace.header.num_experts ||
      p.num_layers() != trace.num_layers()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--relative_to ", o.relative_to, " has ", p.num_devices(), " devices, ", p.num_experts(),
        " experts and ", p.num_layers(), " MoE layers; this build has ", o.devices, ", ",
        trace.header.num_experts, " and ", trace.num_layers()));
  }
  return p;
}

// Build and EvalRows on traces in memory (the loading step done or skipped).
absl::StatusOr<int64_t> BuildOn(const BuildOptions& o, trace::TraceSet trace, Step& step,
                                std::ostream& out);
absl::StatusOr<nlohmann::ordered_json> EvalRowsOn(const EvalOptions& o,
                                                  const trace::TraceSet& trace, Step& step);

}  // namespace

absl::StatusOr<trace::TraceSet> LoadTraces(const std::vector<std::string>& paths) {
  if (paths.empty()) return absl::InvalidArgumentError("no traces given");
  trace::TraceSet all;
  for (const std::string& path : paths) {
    absl::StatusOr<trace::TraceSet> one =
        IsDirectory(path) ? trace::ImportArrayTrace(path) : trace::LoadTraceSet(path);
    if (!one.ok()) return one.status();
    RETURN_IF_ERROR(Append(all, *std::move(one), path));
  }
  if (all.num_tokens() == 0) return absl::InvalidArgumentError("the traces hold no tokens");
  return all;
}

// The model's input embeddings as nearest-neighbour fallback for unseen token ids: the
// checkpoint's model.embed_tokens.weight, [vocab, hidden] (the planner reads no model config).
absl::Status AddEmbeddingFallback(const std::string& dir, TokenAffinity& affinity) {
  ASSIGN_OR_RETURN(auto checkpoint, kernels::Checkpoint::Open(dir));
  ASSIGN_OR_RETURN(kernels::Tensor embed, checkpoint->ReadF32("model.embed_tokens.weight"));
  if (embed.shape().size() != 2 || embed.shape()[1] <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(dir, ": model.embed_tokens.weight is not a [vocab, hidden] matrix"));
  }
  const int64_t hidden = embed.shape()[1];
  const absl::Status added = affinity.AddEmbeddingFallback(
      absl::Span<const float>(embed.data<float>(), static_cast<size_t>(embed.shape()[0] * hidden)),
      hidden);
  if (!added.ok()) return absl::InvalidArgumentError(absl::StrCat(dir, ": ", added.message()));
  return absl::OkStatus();
}

absl::StatusOr<int64_t> Build(const BuildOptions& o, std::ostream& out) {
  Step step(o.progress);
  step.Next("loading traces");
  ASSIGN_OR_RETURN(trace::TraceSet trace, LoadTraces(o.traces));
  return BuildOn(o, std::move(trace), step, out);
}

absl::StatusOr<int64_t> BuildFrom(const BuildOptions& o, trace::TraceSet trace, std::ostream& out) {
  if (trace.num_tokens() == 0) return absl::InvalidArgumentError("the traces hold no tokens");
  Step step(o.progress);
  return BuildOn(o, std::move(trace), step, out);
}

namespace {

// The version's stored predictions against vanilla (planner build --cluster), by cluster and
// topology: each with predicted_moe_layer_ms, predicted_vs_vanilla and
// predicted_max_rate_vs_vanilla (what the activation guard reads).
absl::StatusOr<nlohmann::ordered_json> PredictionsJson(PlacementStore& store, int64_t version) {
  ASSIGN_OR_RETURN(const auto predictions, store.Predictions(version));
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const auto& [key, text] : predictions) {
    nlohmann::ordered_json p = nlohmann::ordered_json::parse(text, nullptr, false);
    if (!p.is_discarded()) out[key] = std::move(p);
  }
  return out;
}

absl::StatusOr<int64_t> BuildOn(const BuildOptions& o, trace::TraceSet trace, Step& step,
                                std::ostream& out) {
  if (o.mode != "dp" && o.mode != "tp") {
    return absl::InvalidArgumentError(absl::StrCat("--mode '", o.mode, "' is not dp or tp"));
  }
  // Weights and margins enter the solver's objective: an infinite or NaN one never converges
  // (--node_weight inf ran without end) or compares false everywhere.
  if (!std::isfinite(o.node_weight) || o.node_weight < 0 ||
      o.node_weight > BuildOptions::kMaxNodeWeight) {
    return absl::InvalidArgumentError(absl::StrCat("--node_weight must be a number between 0 and ",
                                                   BuildOptions::kMaxNodeWeight, ", got ",
                                                   o.node_weight));
  }
  for (const auto& [flag, v] : {std::pair{"--max_lar_loss", o.max_lar_loss},
                                std::pair{"--balance_eps", o.token_balance_eps},
                                std::pair{"--expert_balance_eps", o.expert_balance_eps},
                                std::pair{"--link_cost", o.link_cost}}) {
    if (!std::isfinite(v)) {
      return absl::InvalidArgumentError(absl::StrCat(flag, " must be a finite number, got ", v));
    }
  }
  if (o.max_lar_loss > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max_lar_loss is LAR given up (at most 1), got ", o.max_lar_loss));
  }
  std::optional<Topology> topology;
  if (!o.topology.empty()) {
    ASSIGN_OR_RETURN(Topology t, Topology::FromFlag(o.topology));
    if (t.num_ranks() != o.devices) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--topology ", t.Describe(), " has ", t.num_ranks(), " ranks; --devices is ", o.devices));
    }
    topology = std::move(t);
  }
  std::optional<Placement> served;
  if (o.relative_to > 0) {
    ASSIGN_OR_RETURN(served, ServedPlacement(o, trace));
    if (served->topology() != nullptr && !topology.has_value()) {
      topology = *served->topology();  // A re-plan keeps the served version's topology.
    }
  }
  step.Next(absl::StrCat("solving (", o.algo, ", ", o.mode,
                         topology ? absl::StrCat(", ", topology->Describe()) : "", ")"));
  double balance = -1;
  ASSIGN_OR_RETURN(Placement placement,
                   o.algo == "eplb" && topology.has_value()
                       ? EplbHierarchicalPlacement(trace, *topology)
                       : BuildPlacement(trace, o, topology ? &*topology : nullptr, &balance));
  step.Next("affinity tables");
  // In-sample metrics under the blind and the affinity data policies of the chosen mode.
  TokenAffinity affinity = BuildTokenAffinity(trace);
  uint32_t vocab = 0;
  for (uint32_t t : trace.tokens) vocab = std::max(vocab, t + 1);
  if (!o.model_dir.empty()) RETURN_IF_ERROR(AddEmbeddingFallback(o.model_dir, affinity));
  // Where the traced tokens run under the mode's affinity policy.
  auto schedule = [&](const Placement& p) {
    return o.mode == "dp"
               ? TokensOfRequests(trace, AffinityRequests(trace, affinity.DpScores(p, vocab),
                                                          o.devices, o.token_balance_eps))
               : SrsTokens(trace, affinity, p, kSrsBatchTokens, nullptr, o.token_balance_eps);
  };
  nlohmann::ordered_json grouping;
  if (topology.has_value() && (o.algo == "semantic" || o.algo == "paper" || o.algo == "coact")) {
    // The ranks that exchange most share a node (one relabelling for all layers).
    ASSIGN_OR_RETURN(std::vector<int64_t> traffic,
                     RankTraffic(trace, placement, schedule(placement)));
    ASSIGN_OR_RETURN(std::vector<int> relabel, NodeGrouping(traffic, *topology, {.seed = o.seed}));
    std::vector<int> identity(o.devices);
    std::iota(identity.begin(), identity.end(), 0);
    grouping = {{"relabel", relabel},
                {"traffic_cost_as_solved", PlacedTrafficCost(traffic, *topology, identity)},
                {"traffic_cost_grouped", PlacedTrafficCost(traffic, *topology, relabel)}};
    ASSIGN_OR_RETURN(placement, RelabelDevices(placement, relabel));
  }
  nlohmann::ordered_json migration;
  if (served.has_value()) {
    ASSIGN_OR_RETURN(MigrationPlan m, MigrateFrom(*served, placement, trace, schedule(placement),
                                                  {.max_moved = o.max_moved_experts,
                                                   .max_lar_loss = o.max_lar_loss}));
    placement = std::move(m.placement);
    migration = {{"relative_to", o.relative_to},
                 {"relabel", m.relabel},
                 {"moved_as_built", m.moved_as_built},
                 {"moved_relabelled", m.moved_relabelled},
                 {"moved_homes", m.moved},
                 {"cycles_applied", m.cycles_applied},
                 {"cycles_total", m.cycles_total},
                 {"schedule_lar_served", m.lar_served},
                 {"schedule_lar_candidate", m.lar_candidate},
                 {"schedule_lar_result", m.lar_result}};
  }
  if (o.replicas > 0) {
    // Hot experts copied where the time model gains most (solver/replicas.h).
    ASSIGN_OR_RETURN(placement, AddHotReplicas(trace, placement, schedule(placement), o.replicas));
    if (served.has_value()) {
      int budget = o.max_moved_experts < 0
                       ? -1
                       : std::max(0, o.max_moved_experts - migration["moved_homes"].get<int>());
      int shipped = 0;
      ASSIGN_OR_RETURN(placement, LimitReplicaChanges(*served, placement, &budget, &shipped));
      migration["replica_weights_shipped"] = shipped;
    }
  }
  if (served.has_value()) {
    migration["moved"] =
        migration["moved_homes"].get<int>() + migration.value("replica_weights_shipped", 0);
  }
  if (topology.has_value()) {
    if (served.has_value() && served->topology() != nullptr && *served->topology() != *topology) {
      return absl::InvalidArgumentError(
          absl::StrCat("--relative_to ", o.relative_to, " was built for topology ",
                       served->topology()->Describe(), ", this build for ", topology->Describe()));
    }
    ASSIGN_OR_RETURN(placement, placement.WithTopology(*topology));
  }
  step.Next("in-sample metrics");
  nlohmann::ordered_json metrics;
  if (o.mode == "dp") {
    ASSIGN_OR_RETURN(Metrics blind,
                     EvaluateDp(trace, placement, RoundRobinRequests(trace, o.devices)));
    ASSIGN_OR_RETURN(
        Metrics aff,
        EvaluateDp(trace, placement,
                   AffinityRequests(trace, affinity.DpScores(placement, vocab), o.devices,
                                    o.token_balance_eps),
                   {.hidden_size = 1, .bytes_per_value = 1, .link_cost = o.link_cost}));
    metrics = {{"lar_blind", blind.lar},
               {"lar_affinity", aff.lar},
               {"bound", DpRequestBound(trace, o.devices)},
               {"expert_load_imbalance", aff.expert_load_imbalance},
               {"moe_time_per_token", aff.moe_time_per_token},
               {"token_load_imbalance", aff.token_load_imbalance},
               {"a2a_rows_per_token", aff.a2a_bytes_per_token},
               {"lar_affinity_per_layer", aff.lar_per_layer},
               {"expert_load_imbalance_per_layer", aff.expert_load_imbalance_per_layer}};
  } else {
    ASSIGN_OR_RETURN(Metrics blind,
                     EvaluateTp(trace, placement, ContiguousChunks(trace, o.devices, 256)));
    ASSIGN_OR_RETURN(Metrics srs, EvaluateTp(trace, placement,
                                             SrsTokens(trace, affinity, placement, kSrsBatchTokens,
                                                       nullptr, o.token_balance_eps),
                                             kRowsPerToken));
    metrics = {{"lar_blind", blind.lar},
               {"lar_affinity", srs.lar},
               {"bound", TpTokenOracle(trace, placement)},
               {"expert_load_imbalance", srs.expert_load_imbalance},
               {"token_load_imbalance", srs.token_load_imbalance},
               {"a2a_rows_per_token", srs.a2a_bytes_per_token},
               {"lar_affinity_per_layer", srs.lar_per_layer},
               {"expert_load_imbalance_per_layer", srs.expert_load_imbalance_per_layer}};
  }
  if (topology.has_value()) {
    ASSIGN_OR_RETURN(Metrics nodes,
                     o.mode == "dp"
                         ? EvaluateDp(trace, placement,
                                      AffinityRequests(trace, affinity.DpScores(placement, vocab),
                                                       o.devices, o.token_balance_eps),
                                      kRowsPerToken)
                         : EvaluateTp(trace, placement,
                                      SrsTokens(trace, affinity, placement, kSrsBatchTokens,
                                                nullptr, o.token_balance_eps),
                                      kRowsPerToken));
    metrics["topology"] = topology->Describe();
    metrics["node_lar"] = nodes.node_lar;
    metrics["cross_node_rows_per_token"] = nodes.cross_node_rows_per_token;
    if (!grouping.is_null()) metrics["node_grouping"] = grouping;
  }
  if (!migration.is_null()) {
    // The LAR given up for the budget: the candidate as solved (relabelled), scored as the result.
    metrics["migration"] = migration;
  }
  step.Next("storing");
  ASSIGN_OR_RETURN(auto store, PlacementStore::Open(o.db));
  RETURN_IF_ERROR(store->AddModel(o.model, trace.num_layers(), trace.header.num_experts));
  PlacementVersion v;
  v.model = o.model;
  v.name = o.name.empty() ? absl::StrCat(o.algo, "-", o.mode, "-g", o.devices,
                                         o.replicas > 0 ? absl::StrCat("-r", o.replicas) : "")
                          : o.name;
  v.algorithm = o.algo;
  v.params_json =
      nlohmann::ordered_json({{"mode", o.mode},
                              {"devices", o.devices},
                              {"seed", o.seed},
                              {"token_balance_eps", o.token_balance_eps},
                              {"expert_balance_eps", balance},
                              {"expert_balance_auto", o.expert_balance_eps == kBalanceAuto},
                              {"balance_groups", o.balance_groups},
                              {"replicas", o.replicas},
                              {"relative_to", o.relative_to},
                              {"max_moved_experts", o.max_moved_experts},
                              {"max_lar_loss", o.max_lar_loss},
                              {"topology", topology ? topology->Describe() : "flat"},
                              {"node_weight", topology ? o.node_weight : 0.0},
                              {"traces", o.traces}})
          .dump();
  v.metrics_json = metrics.dump();
  v.placement = placement;
  // The version keeps the token affinity it was built from (routers and `eval` use it) and the
  // A tables for this placement (Attention-TP engines predict token devices with both).
  const std::string layer_tables = LayerAffinity::Build(trace, placement).Table().Serialize();
  ASSIGN_OR_RETURN(int64_t version, store->Create(v, affinity.Serialize(), layer_tables));
  step.Done();
  out << "version " << version << " (" << v.name << ", draft): in-sample " << o.mode
      << " LAR blind " << Pct(metrics["lar_blind"]) << ", affinity " << Pct(metrics["lar_affinity"])
      << ", bound " << Pct(metrics["bound"]) << "\n";
  if (topology.has_value()) {
    out << "topology " << topology->Describe() << ": node-local activations "
        << Pct(metrics["node_lar"])
        << absl::StrFormat(", %.3f rows per token cross nodes (node dedup)",
                           metrics["cross_node_rows_per_token"].get<double>())
        << "\n";
  }
  if (!migration.is_null()) {
    out << "relative to version " << o.relative_to << ": " << migration["moved"].get<int>()
        << " expert weights move (" << migration["moved_as_built"].get<int>()
        << " homes as solved, " << migration["moved_relabelled"].get<int>()
        << " after relabelling the devices, " << migration["moved_homes"].get<int>()
        << " within the limits";
    if (migration.contains("replica_weights_shipped")) {
      out << ", plus " << migration["replica_weights_shipped"].get<int>() << " replicas";
    }
    out << absl::StrFormat("); schedule LAR %.4f served, %.4f candidate, %.4f built",
                           migration["schedule_lar_served"].get<double>(),
                           migration["schedule_lar_candidate"].get<double>(),
                           migration["schedule_lar_result"].get<double>())
        << "\n";
  }
  return version;
}

// A schedule's node figures as "<mode>_<figure>_<policy>" keys: node LAR, rows crossing nodes
// per token (node-level dedup, there and back) and, with a hidden size,
// bytes crossing nodes (with node dedup and without: the per-rank dispatch) and within nodes.
void AddNodeFigures(nlohmann::ordered_json& row, const std::string& mode, const std::string& policy,
                    const Metrics& m, int64_t hidden_size) {
  auto key = [&](const char* figure) { return absl::StrCat(mode, "_", figure, "_", policy); };
  row[key("node_lar")] = m.node_lar;
  row[key("cross_node_rows_per_token")] = m.cross_node_rows_per_token;
  if (hidden_size > 0) {
    row[key("cross_node_bytes_per_token")] = m.cross_node_bytes_per_token;
    row[key("cross_node_bytes_per_token_rank_dedup")] = m.cross_node_bytes_per_token_rank_dedup;
    row[key("intra_node_bytes_per_token")] = m.intra_node_bytes_per_token;
  }
}

absl::StatusOr<nlohmann::ordered_json> EvalRowsOn(const EvalOptions& o,
                                                  const trace::TraceSet& trace, Step& step) {
  std::optional<TokenAffinity> affinity;
  if (!o.profile.empty()) {
    ASSIGN_OR_RETURN(trace::TraceSet profile, LoadTraces(o.profile));
    affinity = BuildTokenAffinity(profile);
  }
  uint32_t vocab = 0;
  for (uint32_t t : trace.tokens) vocab = std::max(vocab, t + 1);
  std::optional<Topology> given;
  if (!o.topology.empty()) {
    ASSIGN_OR_RETURN(Topology t, Topology::FromFlag(o.topology));
    given = std::move(t);
  }
  ASSIGN_OR_RETURN(auto store, PlacementStore::Open(o.db));
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  // G → fitted optimum, in-sample router figure, capacity bound.
  std::map<int, std::array<double, 3>> dp_bounds;
  for (int64_t version : o.versions) {
    step.Next(absl::StrCat("version ", version));
    ASSIGN_OR_RETURN(PlacementVersion v, store->Get(version));
    const Placement& p = v.placement;
    const int g = p.num_devices();
    const Topology* topology = p.topology() ? p.topology() : given ? &*given : nullptr;
    if (topology != nullptr && topology->num_ranks() != g) {
      return absl::InvalidArgumentError(absl::StrCat("--topology ", topology->Describe(), " has ",
                                                     topology->num_ranks(), " ranks; version ",
                                                     version, " has ", g, " devices"));
    }
    const planner::EvalOptions eval{.hidden_size = o.hidden_size, .topology = topology};
    ASSIGN_OR_RETURN(Metrics dp, EvaluateDp(trace, p, RoundRobinRequests(trace, g), eval));
    ASSIGN_OR_RETURN(Metrics tp,
                     EvaluateTp(trace, p, ContiguousChunks(trace, g, o.tp_batch_tokens), eval));
    nlohmann::ordered_json row = {{"version", version},
                                  {"name", v.name},
                                  {"algorithm", v.algorithm},
                                  {"devices", g},
                                  {"dp_lar_blind", dp.lar},
                                  {"tp_lar_blind", tp.lar},
                                  {"dp_bound", DpRequestBound(trace, g)},
                                  {"tp_oracle", TpTokenOracle(trace, p)},
                                  {"expert_load_imbalance", dp.expert_load_imbalance}};
    ASSIGN_OR_RETURN(row["predictions"], PredictionsJson(*store, version));
    if (o.hidden_size > 0) {
      row["dp_a2a_bytes_per_token_blind"] = dp.a2a_bytes_per_token;
      row["tp_a2a_bytes_per_token_blind"] = tp.a2a_bytes_per_token;
    }
    if (topology != nullptr) {
      row["topology"] = topology->Describe();
      row["topology_recorded"] = p.topology() != nullptr;
      AddNodeFigures(row, "dp", "blind", dp, o.hidden_size);
      AddNodeFigures(row, "tp", "blind", tp, o.hidden_size);
    }
    // Affinity: --profile's if given, else the tables stored with the version (if any).
    std::optional<TokenAffinity> stored;
    if (!affinity.has_value()) {
      auto tables = store->GetAffinityTables(version);
      if (tables.ok()) {
        ASSIGN_OR_RETURN(TokenAffinity parsed, TokenAffinity::Deserialize(*tables));
        stored = std::move(parsed);
      } else if (!absl::IsNotFound(tables.status())) {
        return tables.status();
      }
    }
    const TokenAffinity* use = affinity.has_value() ? &*affinity : stored ? &*stored : nullptr;
    std::vector<int> routed = RoundRobinRequests(trace, g);  // The router's, with affinity.
    if (use != nullptr) {
      RETURN_IF_ERROR(use->CheckMatches(
          p, affinity.has_value()
                 ? absl::StrCat("the --profile traces' affinity tables")
                 : absl::StrCat("version ", version, "'s stored affinity tables")));
      routed = AffinityRequests(trace, use->DpScores(p, vocab), g, o.token_balance_eps);
      ASSIGN_OR_RETURN(Metrics dpa, EvaluateDp(trace, p, routed, eval));
      ASSIGN_OR_RETURN(Metrics tpa, EvaluateTp(trace, p,
                                               SrsTokens(trace, *use, p, o.tp_batch_tokens, nullptr,
                                                         o.token_balance_eps),
                                               eval));
      row["dp_lar_affinity"] = dpa.lar;
      row["dp_moe_time_per_token"] = dpa.moe_time_per_token;
      row["dp_token_load_imbalance"] = dpa.token_load_imbalance;
      // The expert load under the router's schedule (`imbal.` is round-robin's): the busiest
      // device over the mean, the worst layer and the mean over layers (bench_ep's figure).
      row["dp_expert_load_imbalance_affinity"] = dpa.expert_load_imbalance;
      double mean = 0;
      for (double x : dpa.expert_load_imbalance_per_layer) mean += x;
      row["dp_expert_load_imbalance_affinity_mean"] =
          dpa.expert_load_imbalance_per_layer.empty()
              ? 0.0
              : mean / dpa.expert_load_imbalance_per_layer.size();
      row["tp_lar_srs"] = tpa.lar;
      if (o.hidden_size > 0) {
        row["dp_a2a_bytes_per_token_affinity"] = dpa.a2a_bytes_per_token;
        row["tp_a2a_bytes_per_token_srs"] = tpa.a2a_bytes_per_token;
      }
      if (topology != nullptr) {
        AddNodeFigures(row, "dp", "affinity", dpa, o.hidden_size);
        AddNodeFigures(row, "tp", "srs", tpa, o.hidden_size);
      }
    }
    if (o.dp_bounds) {
      if (dp_bounds.count(g) == 0) {
        ASSIGN_OR_RETURN(DpSolution fitted,
                         SolveDp(trace, {.num_devices = g,
                                         .token_balance_eps = o.token_balance_eps,
                                         .router_rounds = 0}));
        // `planner build`'s semantic DP run on these very traces: its placement and C have seen
        // them, its schedule is the router's rule (the in-sample figure of the same pipeline).
        ASSIGN_OR_RETURN(DpSolution in_sample,
                         SolveDp(trace, {.num_devices = g,
                                         .token_balance_eps = o.token_balance_eps,
                                         .paper_start = true}));
        ASSIGN_OR_RETURN(DpBound bound,
                         DpCapacityBound(trace, {.num_devices = g,
                                                 .token_balance_eps = o.token_balance_eps,
                                                 .lower = fitted.lar}));
        dp_bounds[g] = {fitted.lar, in_sample.lar, bound.capacity};
      }
      row["dp_fitted_optimum"] = dp_bounds[g][0];
      row["dp_fitted_router"] = dp_bounds[g][1];
      row["dp_capacity_bound"] = dp_bounds[g][2];
      // Where this placement's router loses: the same online rule fed the true routing, and the
      // offline schedule (from the router's) that knows every request and activation.
      ASSIGN_OR_RETURN(Metrics perfect,
                       EvaluateDp(trace, p, PerfectRequests(trace, p, o.token_balance_eps), eval));
      row["dp_lar_perfect"] = perfect.lar;
      if (p.replicas_per_device() == 0) {
        ASSIGN_OR_RETURN(row["dp_lar_offline"],
                         OfflineScheduleLar(trace, p, routed, o.token_balance_eps));
      }
    }
    if (topology != nullptr) {  // The headline: DP under the router's rule (else blind).
      const bool routed_by_affinity = row.contains("dp_node_lar_affinity");
      const std::string policy = routed_by_affinity ? "affinity" : "blind";
      row["node_lar"] = row["dp_node_lar_" + policy];
      row["lar"] = row[routed_by_affinity ? "dp_lar_affinity" : "dp_lar_blind"];
      row["cross_node_rows_per_token"] = row["dp_cross_node_rows_per_token_" + policy];
      if (o.hidden_size > 0) {
        row["cross_node_bytes_per_token"] = row["dp_cross_node_bytes_per_token_" + policy];
      }
    }
    if (o.balanced_bound) {
      row["tp_balanced_bound"] = TpBalancedBound(trace, p, o.tp_batch_tokens, o.token_balance_eps);
    }
    rows.push_back(std::move(row));
  }
  step.Done();
  return rows;
}

}  // namespace

absl::StatusOr<nlohmann::ordered_json> EvalRows(const EvalOptions& o) {
  if (o.versions.empty()) return absl::InvalidArgumentError("--versions is required");
  if (o.hidden_size < 0 || o.hidden_size > (int64_t{1} << 20)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--hidden_size ", o.hidden_size, " must be from 0 (not reported) to 1048576"));
  }
  Step step(o.progress);
  step.Next("loading traces");
  ASSIGN_OR_RETURN(trace::TraceSet trace, LoadTraces(o.traces));
  return EvalRowsOn(o, trace, step);
}

absl::StatusOr<nlohmann::ordered_json> EvalRowsOn(const EvalOptions& o,
                                                  const trace::TraceSet& trace) {
  if (o.versions.empty()) return absl::InvalidArgumentError("--versions is required");
  if (trace.num_tokens() == 0) return absl::InvalidArgumentError("the traces hold no tokens");
  Step step(o.progress);
  return EvalRowsOn(o, trace, step);
}

absl::Status Eval(const EvalOptions& o, std::ostream& out) {
  ASSIGN_OR_RETURN(const nlohmann::ordered_json rows, EvalRows(o));
  if (o.json) {
    out << rows.dump() << "\n";
    return absl::OkStatus();
  }
  out << absl::StrFormat("%-8s %-22s %4s %9s %9s %9s %8s %10s %8s %9s %9s %9s %9s\n", "version",
                         "name", "G", "DP blind", "DP affin", "DP bound", "imbal.", "imbal. aff",
                         "DP time", "TP blind", "TP SRS", "TP bound", "TP oracle");
  for (const auto& r : rows) {
    auto get = [&](const char* key) {
      return r.contains(key) ? absl::StrFormat("%9.4f", r[key].get<double>()) : std::string(9, '-');
    };
    out << absl::StrFormat(
        "%-8d %-22s %4d %s %s %s %8.3f %10s %s %s %s %s %s\n", r["version"].get<int64_t>(),
        r["name"].get<std::string>(), r["devices"].get<int>(), get("dp_lar_blind"),
        get("dp_lar_affinity"), get("dp_bound"), r["expert_load_imbalance"].get<double>(),
        r.contains("dp_expert_load_imbalance_affinity")
            ? absl::StrFormat("%10.3f", r["dp_expert_load_imbalance_affinity"].get<double>())
            : std::string(10, '-'),
        r.contains("dp_moe_time_per_token")
            ? absl::StrFormat("%8.2f", r["dp_moe_time_per_token"].get<double>())
            : std::string(8, '-'),
        get("tp_lar_blind"), get("tp_lar_srs"), get("tp_balanced_bound"), get("tp_oracle"));
  }
  std::set<int> shown;
  for (const auto& r : rows) {
    const int g = r["devices"].get<int>();
    if (!r.contains("dp_fitted_optimum") || !shown.insert(g).second) continue;
    out << absl::StrFormat(
        "G=%d, DP on these traces: in-sample router %.4f (planner build's DP fitted to these "
        "requests, the router's rule), fitted optimum %.4f (the solver co-scheduling these very "
        "requests offline), capacity bound %.4f, per-request bound %.4f\n",
        g, r["dp_fitted_router"].get<double>(), r["dp_fitted_optimum"].get<double>(),
        r["dp_capacity_bound"].get<double>(), r["dp_bound"].get<double>());
  }
  bool header = false;
  for (const auto& r : rows) {
    if (!r.contains("dp_lar_perfect")) continue;
    if (!header) {
      out << "DP router rule against the same online rule fed the true routing (perfect) and the "
             "offline schedule that knows every request (offline; no replicas):\n";
      header = true;
    }
    auto get = [&](const char* key) {
      return r.contains(key) ? absl::StrFormat("%.4f", r[key].get<double>()) : std::string("-");
    };
    out << absl::StrFormat("%-8d %-22s G=%d  router %s  perfect %s  offline %s\n",
                           r["version"].get<int64_t>(), r["name"].get<std::string>(),
                           r["devices"].get<int>(), get("dp_lar_affinity"), get("dp_lar_perfect"),
                           get("dp_lar_offline"));
  }
  return absl::OkStatus();
}

absl::Status List(const std::string& db, const std::string& model, std::ostream& out) {
  ASSIGN_OR_RETURN(auto store, PlacementStore::Open(db));
  ASSIGN_OR_RETURN(auto versions, store->List(model));
  for (const PlacementVersion& v : versions) {
    out << absl::StrFormat("%-6d %-8s %-22s %-9s G=%d parent=%s created=%s\n", v.version, v.status,
                           v.name, v.algorithm, v.placement.num_devices(),
                           v.parent ? absl::StrCat(*v.parent) : "-",
                           absl::FormatTime(absl::RFC3339_sec, v.created, absl::UTCTimeZone()));
  }
  return absl::OkStatus();
}

absl::Status Show(const std::string& db, int64_t version, std::ostream& out) {
  ASSIGN_OR_RETURN(auto store, PlacementStore::Open(db));
  ASSIGN_OR_RETURN(PlacementVersion v, store->Get(version));
  const std::string what = absl::StrCat(db, ": version ", version, "'s ");
  ASSIGN_OR_RETURN(nlohmann::json params, ParseJson(v.params_json, what + "params"));
  ASSIGN_OR_RETURN(nlohmann::json metrics, ParseJson(v.metrics_json, what + "metrics"));
  ASSIGN_OR_RETURN(nlohmann::json placement, ParseJson(v.placement.ToJson(), what + "placement"));
  nlohmann::ordered_json j = {{"version", v.version},
                              {"model", v.model},
                              {"name", v.name},
                              {"status", v.status},
                              {"algorithm", v.algorithm},
                              {"params", std::move(params)},
                              {"metrics", std::move(metrics)},
                              {"placement", std::move(placement)}};
  ASSIGN_OR_RETURN(j["predictions"], PredictionsJson(*store, version));
  if (v.parent) j["parent"] = *v.parent;
  out << j.dump(2) << "\n";
  return absl::OkStatus();
}

absl::Status Activate(const std::string& db, int64_t version, std::ostream& out, bool force) {
  ASSIGN_OR_RETURN(auto store, PlacementStore::Open(db));
  if (absl::Status guard = store->CheckPredictedNotSlower(version); !guard.ok()) {
    if (!force) return guard;
    out << "--force: activating although " << guard.message() << "\n";
  }
  RETURN_IF_ERROR(store->Activate(version));
  out << "version " << version << " is active\n";
  return absl::OkStatus();
}

absl::Status Rollback(const std::string& db, const std::string& model, std::ostream& out) {
  ASSIGN_OR_RETURN(auto store, PlacementStore::Open(db));
  ASSIGN_OR_RETURN(int64_t version, store->Rollback(model));
  out << "rolled back: version " << version << " is active again\n";
  return absl::OkStatus();
}

absl::Status Export(const std::string& db, int64_t version, const std::string& file) {
  ASSIGN_OR_RETURN(auto store, PlacementStore::Open(db));
  ASSIGN_OR_RETURN(PlacementVersion v, store->Get(version));
  return WriteFileAtomically(file, v.placement.ToJson() + "\n");
}

absl::StatusOr<nlohmann::ordered_json> DiffReport(const std::string& db, int64_t from, int64_t to) {
  ASSIGN_OR_RETURN(auto store, PlacementStore::Open(db));
  ASSIGN_OR_RETURN(PlacementVersion a, store->Get(from));
  ASSIGN_OR_RETURN(PlacementVersion b, store->Get(to));
  if (a.model != b.model || a.placement.num_layers() != b.placement.num_layers()) {
    return absl::InvalidArgumentError(
        absl::StrCat("versions ", from, " and ", to, " belong to different models"));
  }
  nlohmann::ordered_json moved_per_layer = nlohmann::ordered_json::array();
  int total = 0;
  for (int l = 0; l < a.placement.num_layers(); ++l) {
    int moved = 0;
    for (int e = 0; e < a.placement.num_experts(); ++e) {
      // Devices are interchangeable only by relabelling; count raw moves, as the weights move.
      moved += a.placement.Device(l, e) != b.placement.Device(l, e);
    }
    total += moved;
    moved_per_layer.push_back(moved);
  }
  // The metrics each version recorded when it was built (in-sample: LAR under the blind and the
  // affinity data policy, the bound, imbalance), and their change.
  const auto ma = ParseJsonOrDiscarded(a.metrics_json);
  const auto mb = ParseJsonOrDiscarded(b.metrics_json);
  nlohmann::ordered_json change = nlohmann::ordered_json::object();
  if (ma.is_object() && mb.is_object()) {
    for (const auto& [key, value] : mb.items()) {
      if (value.is_number() && ma.contains(key) && ma[key].is_number()) {
        change[key] = value.get<double>() - ma[key].get<double>();
      }
    }
  }
  return nlohmann::ordered_json{{"from", from},
                                {"to", to},
                                {"model", a.model},
                                {"experts", a.placement.num_layers() * a.placement.num_experts()},
                                {"moved", total},
                                {"moved_per_layer", moved_per_layer},
                                {"devices_from", a.placement.num_devices()},
                                {"devices_to", b.placement.num_devices()},
                                {"metrics_from", ma.is_object() ? ma : nlohmann::json::object()},
                                {"metrics_to", mb.is_object() ? mb : nlohmann::json::object()},
                                {"change", change}};
}

absl::Status Diff(const std::string& db, int64_t from, int64_t to, std::ostream& out) {
  ASSIGN_OR_RETURN(const nlohmann::ordered_json d, DiffReport(db, from, to));
  std::string per_layer;
  for (const auto& m : d["moved_per_layer"])
    absl::StrAppend(&per_layer, per_layer.empty() ? "" : " ", m.get<int>());
  out << "version " << from << " → " << to << ": " << d["moved"].get<int>() << " of "
      << d["experts"].get<int>() << " experts move (per layer: " << per_layer << ")";
  if (d["devices_from"] != d["devices_to"]) {
    out << "; devices " << d["devices_from"].get<int>() << " → " << d["devices_to"].get<int>();
  }
  const auto& ma = d["metrics_from"];
  const auto& mb = d["metrics_to"];
  if (d["change"].contains("lar_affinity")) {
    out << absl::StrFormat("; recorded in-sample LAR %.4f → %.4f (%+.4f)",
                           ma["lar_affinity"].get<double>(), mb["lar_affinity"].get<double>(),
                           d["change"]["lar_affinity"].get<double>());
  }
  out << "\n";
  return absl::OkStatus();
}

absl::StatusOr<int64_t> Import(const std::string& db, const std::string& model,
                               const std::string& file, const std::string& name,
                               std::ostream& out) {
  ASSIGN_OR_RETURN(std::string text, ReadFile(file));
  absl::StatusOr<Placement> placement = Placement::FromJson(text);
  if (!placement.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(file, ": ", placement.status().message()));
  }
  ASSIGN_OR_RETURN(auto store, PlacementStore::Open(db));
  PlacementVersion v;
  v.model = model;
  v.name = name.empty() ? "imported" : name;
  v.algorithm = "import";
  v.params_json = nlohmann::json({{"file", file}}).dump();
  v.placement = *placement;
  ASSIGN_OR_RETURN(int64_t version, store->Create(v));
  out << "imported " << file << " as version " << version << " (draft)\n";
  return version;
}

}  // namespace semmoe::planner::cli
