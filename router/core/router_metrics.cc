#include "router/core/router_metrics.h"

#include "absl/strings/str_cat.h"
#include "common/metrics.h"

namespace semmoe::router {

std::string RouterMetricsText(const rpc::RouterStats& s,
                              const std::vector<EngineGroup::Telemetry>& telemetry) {
  metrics::Families f;
  const char* kRequests =
      "Requests the router answered, by outcome (rejected: refused at "
      "admission, RESOURCE_EXHAUSTED; invalid: bad requests; neither is a "
      "failure).";
  f.Counter("semmoe_router_requests_total", kRequests, {{"outcome", "completed"}}, s.completed());
  f.Counter("semmoe_router_requests_total", kRequests, {{"outcome", "failed"}}, s.failed());
  f.Counter("semmoe_router_requests_total", kRequests, {{"outcome", "rejected"}}, s.rejected());
  f.Counter("semmoe_router_requests_total", kRequests, {{"outcome", "invalid"}}, s.invalid());
  f.Counter("semmoe_router_requests_received_total", "Requests received.", {}, s.received());
  f.Counter("semmoe_router_retries_total",
            "Requests placed again after their rank failed before the first token.", {},
            s.retried());
  f.Counter("semmoe_router_rejected_by_predicted_wait_total",
            "Of the rejected: refused because the predicted wait exceeded the request's deadline "
            "or --max_predicted_wait_ms.",
            {}, s.rejected_wait());
  f.Counter("semmoe_router_requeues_total",
            "Times a request found no rank able to take it and waited for one (--requeue_s).", {},
            s.requeued());
  f.Gauge("semmoe_router_queue_depth", "Requests waiting in the rebatching window.", {},
          s.queued());
  f.Counter("semmoe_router_engine_polls_total", "Rounds of engine stats polling.", {}, s.polls());
  if (s.policy() == "time") {
    const rpc::TimeRuleStats& t = s.time_rule();
    const char* kKept =
        "--policy time: rebatching windows by the rule whose placement was kept (time: faster "
        "predicted than least_loaded and round_robin on the same window).";
    f.Counter("semmoe_router_time_rule_windows_total", kKept, {{"kept", "time"}}, t.kept_time());
    f.Counter("semmoe_router_time_rule_windows_total", kKept, {{"kept", "least_loaded"}},
              t.kept_least_loaded());
    f.Counter("semmoe_router_time_rule_windows_total", kKept, {{"kept", "round_robin"}},
              t.kept_round_robin());
    f.Gauge("semmoe_router_time_rule_predicted_moe_layer_ms",
            "--policy time: the last window's predicted MoE layer, as kept and as the better "
            "vanilla rule's.",
            {{"rule", "kept"}, {"cluster", t.cluster()}}, t.last_predicted_ms());
    f.Gauge("semmoe_router_time_rule_predicted_moe_layer_ms",
            "--policy time: the last window's predicted MoE layer, as kept and as the better "
            "vanilla rule's.",
            {{"rule", "vanilla"}, {"cluster", t.cluster()}}, t.last_vanilla_ms());
  }
  f.Gauge("semmoe_router_experiment_id", "The A/B experiment the arms belong to (0: none).", {},
          s.experiment_id());
  for (int i = 0; i < s.arms_size(); ++i) {
    const rpc::ArmStats& a = s.arms(i);
    const std::string arm = a.name().empty() ? "default" : a.name();
    const metrics::Labels l = {{"arm", arm}};
    const char* kArmRequests = "Requests per engine group (A/B arm), by outcome.";
    f.Counter("semmoe_router_arm_requests_total", kArmRequests,
              {{"arm", arm}, {"outcome", "completed"}}, a.completed());
    f.Counter("semmoe_router_arm_requests_total", kArmRequests,
              {{"arm", arm}, {"outcome", "failed"}}, a.failed());
    if (i < static_cast<int>(telemetry.size())) {
      const EngineGroup::Telemetry& t = telemetry[i];
      f.Histogram("semmoe_router_time_to_first_token_seconds",
                  "Router received to first token at the router.", l, t.ttft);
      f.Histogram("semmoe_router_time_per_output_token_seconds",
                  "Mean time per output token after the first, per request.", l, t.tpot);
      f.Histogram("semmoe_router_e2e_request_latency_seconds", "Router received to finished.", l,
                  t.e2e);
      f.Histogram("semmoe_router_queue_time_seconds", "Time in the rebatching window.", l, t.queue);
      f.Counter("semmoe_router_prompt_tokens_total", "Prompt tokens of completed requests.", l,
                t.prompt_tokens);
    }
    f.Counter("semmoe_router_generation_tokens_total", "Tokens generated for completed requests.",
              l, a.completion_tokens());
    f.Gauge("semmoe_router_arm_share_percent", "Share of traffic the arm gets.", l,
            a.share_percent());
    f.Gauge("semmoe_router_arm_throughput_requests_per_second",
            "Completed requests per second since the router started.", l, a.throughput_rps());
    f.Gauge("semmoe_router_arm_goodput_requests_per_second",
            "Completed requests per second within the router's TTFT/TPOT SLO.", l, a.goodput_rps());
    f.Gauge("semmoe_router_arm_local_activation_ratio",
            "The arm's engines' local activation ratio (their counters at the last poll).", l,
            a.lar());
    f.Gauge("semmoe_router_arm_all_to_all_bytes_per_token",
            "The arm's engines' all-to-all bytes per token (at the last poll).", l,
            a.a2a_bytes_per_token());
    f.Gauge("semmoe_router_arm_moe_layer_seconds",
            "The arm's ranks' mean time in one MoE layer call, dispatch + experts + combine "
            "(their counters since they started, at the last poll).",
            l, a.moe_layer_ms() / 1e3);
    const char* kVersion =
        "Placement version per arm: of the tables the router places with, "
        "and the one its engines serve.";
    f.Gauge("semmoe_router_placement_version", kVersion, {{"arm", arm}, {"of", "tables"}},
            a.placement_version());
    f.Gauge("semmoe_router_placement_version", kVersion, {{"arm", arm}, {"of", "engines"}},
            a.engines_version());
    f.Gauge("semmoe_router_rollout_target_version",
            "The version the arm's engines are rolling out (0: none).", l, a.rollout_target());
    f.Gauge("semmoe_router_tables_ok",
            "1 when the arm places with the tables it should; 0 when it falls back (the reason "
            "is in GetStats and the console).",
            l, a.tables_error().empty() ? 1 : 0);
    if (a.layer_loads_size() > 0) {
      f.Gauge("semmoe_router_moe_expert_load_window_seconds",
              "How many seconds the expert-load series cover (0: since the engines started, "
              "until the router has polled them twice).",
              l, a.load_window_s());
    }
    for (const rpc::LayerLoad& load : a.layer_loads()) {
      f.Gauge("semmoe_router_moe_expert_load_imbalance",
              "Per MoE layer, (max - mean) / mean over the group's ranks of the expert activations "
              "their experts ran over the router's load window (--load_window_s: its last half to "
              "whole).",
              {{"arm", arm}, {"layer", absl::StrCat(load.layer())}}, load.imbalance());
      for (int i = 0; i < load.hot_experts_size(); ++i) {
        f.Gauge("semmoe_router_moe_hot_expert_activations",
                "The group's most active experts per MoE layer (place 1 = the most; replicas "
                "summed), with their activations over the load window: a top-8, not every "
                "expert.",
                {{"arm", arm},
                 {"layer", absl::StrCat(load.layer())},
                 {"place", absl::StrCat(i + 1)},
                 {"expert", absl::StrCat(load.hot_experts(i).expert())}},
                load.hot_experts(i).activations());
      }
    }
    for (const rpc::RankStats& r : a.ranks()) {
      const metrics::Labels rl = {{"arm", arm}, {"rank", absl::StrCat(r.rank())}};
      f.Gauge("semmoe_router_rank_usable", "1 when the rank answered the last stats poll.", rl,
              r.usable() ? 1 : 0);
      f.Gauge("semmoe_router_rank_down_seconds",
              "How long the rank has been unusable (0: it is usable); why is in GetStats.", rl,
              r.down_reason().empty() ? 0 : r.down_for_s());
      f.Gauge("semmoe_router_rank_requests_in_flight", "Requests the router has on the rank.", rl,
              r.requests_in_flight());
      f.Counter("semmoe_router_rank_requests_assigned_total", "Requests placed on the rank.", rl,
                r.assigned());
      if (r.kv_free_tokens() >= 0) {
        f.Gauge("semmoe_router_rank_kv_cache_free_tokens",
                "The rank's free KV-cache room at the last poll, in token positions.", rl,
                r.kv_free_tokens());
      }
      f.Gauge("semmoe_router_rank_local_activation_ratio", "The rank's LAR at the last poll.", rl,
              r.lar());
    }
  }
  return f.Text();
}

}  // namespace semmoe::router
