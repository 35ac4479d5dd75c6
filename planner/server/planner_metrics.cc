#include "planner/server/planner_metrics.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "common/json_fields.h"
#include "common/metrics.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"
#include "planner/store/autopilot_store.h"
#include "planner/store/experiment_store.h"

namespace semmoe::planner {
namespace {

// A number from the arm's recorded metrics JSON (`path` like "ttft_ms.p50"); nullopt if absent.
std::optional<double> Field(const nlohmann::json& j, std::initializer_list<const char*> path) {
  const nlohmann::json* at = &j;
  for (const char* key : path) {
    if (!at->is_object() || !at->contains(key)) return std::nullopt;
    at = &(*at)[key];
  }
  if (!at->is_number()) return std::nullopt;
  return at->get<double>();
}

}  // namespace

absl::StatusOr<std::string> PlannerMetricsText(PlacementStore& store) {
  metrics::Families f;
  ASSIGN_OR_RETURN(std::vector<std::string> models, store.Models());
  ExperimentStore experiments(store);
  for (const std::string& model : models) {
    ASSIGN_OR_RETURN(std::vector<PlacementVersion> versions, store.List(model));
    std::map<std::string, int> by_status = {{"draft", 0}, {"active", 0}, {"retired", 0}};
    int64_t active = 0;
    for (const PlacementVersion& v : versions) {
      ++by_status[v.status];
      if (v.status == "active") active = v.version;
    }
    for (const auto& [status, n] : by_status) {
      f.Gauge("semmoe_planner_placement_versions", "Placement versions per model, by status.",
              {{"model", model}, {"status", status}}, n);
    }
    f.Gauge("semmoe_planner_active_version", "The model's active placement version (0: none).",
            {{"model", model}}, active);
    if (active > 0) {  // The active version's predictions against vanilla (build --cluster).
      ASSIGN_OR_RETURN(const auto predictions, store.Predictions(active));
      for (const auto& [cluster, text] : predictions) {
        const nlohmann::json p = nlohmann::json::parse(text, nullptr, false);
        const metrics::Labels l = {{"model", model}, {"cluster", cluster}};
        if (const auto moe = Field(p, {"predicted_vs_vanilla"})) {
          f.Gauge("semmoe_planner_active_predicted_vs_vanilla",
                  "The active version's predicted MoE layer over vanilla's on the cluster "
                  "(planner build --cluster); above 1.02 it was activated with --force.",
                  l, *moe);
        }
        if (const auto rate = Field(p, {"predicted_max_rate_vs_vanilla"})) {
          f.Gauge("semmoe_planner_active_predicted_max_rate_vs_vanilla",
                  "The active version's predicted max rate in SLO over vanilla's on the cluster.",
                  l, *rate);
        }
      }
    }
    // The autopilot's decisions (planner serve --autopilot), from its log.
    AutopilotStore decisions(store);
    ASSIGN_OR_RETURN(auto counts, decisions.Counts(model));
    for (const auto& [action, n] : counts) {
      f.Counter("semmoe_planner_autopilot_decisions_total",
                "The autopilot's decisions per model, by action (steady, wait, refuse, rollout, "
                "rollback, error); the reasons are in `console autopilot`.",
                {{"model", model}, {"action", action}}, n);
    }
    ASSIGN_OR_RETURN(std::vector<AutopilotDecision> last, decisions.Latest(model, 1));
    if (!last.empty()) {
      f.Gauge("semmoe_planner_autopilot_last_decision",
              "1 for the action of the autopilot's latest decision.",
              {{"model", model}, {"action", last[0].action}}, 1);
      f.Gauge("semmoe_planner_autopilot_last_decision_timestamp_seconds",
              "When the autopilot last decided (Unix time).", {{"model", model}},
              absl::ToDoubleSeconds(last[0].at - absl::UnixEpoch()));
    }
    ASSIGN_OR_RETURN(std::vector<Experiment> list, experiments.List(model));
    for (const Experiment& e : list) {
      const std::string id = absl::StrCat(e.id);
      ASSIGN_OR_RETURN(const MeasuredAgainstVanilla measured, experiments.MeasuredVsVanilla(e));
      f.Gauge("semmoe_planner_experiment_running", "1 while the A/B experiment runs.",
              {{"model", model}, {"experiment", id}}, e.status == "running" ? 1 : 0);
      for (const ExperimentArm& arm : e.arms) {
        const metrics::Labels l = {{"model", model}, {"experiment", id}, {"arm", arm.name}};
        f.Gauge("semmoe_planner_experiment_arm_version", "The placement version the arm runs.", l,
                arm.version);
        f.Gauge("semmoe_planner_experiment_arm_share_percent", "The arm's share of traffic.", l,
                arm.share_percent);
        if (arm.latest_metrics_json.empty()) continue;
        const nlohmann::json m = ParseJsonOrDiscarded(arm.latest_metrics_json);
        if (m.is_discarded()) continue;
        f.Gauge("semmoe_planner_experiment_arm_routed_as_planned",
                "1 when the router placed the arm's requests with its version's tables.", l,
                NotRoutedAsPlanned(arm).empty() ? 1 : 0);
        if (auto r = measured.moe_ratio.find(arm.name); r != measured.moe_ratio.end()) {
          f.Gauge("semmoe_planner_experiment_arm_measured_vs_vanilla",
                  "The arm's measured MoE layer over the vanilla arm's; above 1.02 promoting it "
                  "is refused without --force.",
                  l, r->second);
        }
        const struct {
          const char* name;
          const char* help;
          std::initializer_list<const char*> path;
          double scale;
        } kFields[] = {
            {"semmoe_planner_experiment_arm_completed_requests",
             "Requests the arm completed, as last recorded.",
             {"completed"},
             1},
            {"semmoe_planner_experiment_arm_goodput_requests_per_second",
             "The arm's goodput, as last recorded.",
             {"goodput_rps"},
             1},
            {"semmoe_planner_experiment_arm_throughput_requests_per_second",
             "The arm's throughput, as last recorded.",
             {"throughput_rps"},
             1},
            {"semmoe_planner_experiment_arm_local_activation_ratio",
             "The arm's engines' LAR, as last recorded.",
             {"lar"},
             1},
            {"semmoe_planner_experiment_arm_all_to_all_bytes_per_token",
             "The arm's all-to-all bytes per token, as last recorded.",
             {"a2a_bytes_per_token"},
             1},
            {"semmoe_planner_experiment_arm_moe_layer_seconds",
             "The arm's ranks' mean time in one MoE layer call, as last recorded.",
             {"moe_layer_ms"},
             1e-3},
        };
        for (const auto& field : kFields) {
          if (std::optional<double> v = Field(m, field.path)) {
            f.Gauge(field.name, field.help, l, *v * field.scale);
          }
        }
        for (const char* latency : {"ttft", "tpot", "e2e"}) {
          for (const char* q : {"p50", "p99"}) {
            const std::string key = absl::StrCat(latency, "_ms");
            if (std::optional<double> v = Field(m, {key.c_str(), q})) {
              metrics::Labels ql = l;
              ql.emplace_back("quantile", q[1] == '5' ? "0.5" : "0.99");
              f.Gauge(absl::StrCat("semmoe_planner_experiment_arm_", latency, "_seconds"),
                      absl::StrCat("The arm's ", latency, " quantiles, as last recorded."), ql,
                      *v / 1000);
            }
          }
        }
      }
    }
  }
  return f.Text();
}

}  // namespace semmoe::planner
