#include "engine/server/engine_metrics.h"

#include "absl/strings/str_cat.h"
#include "common/metrics.h"
#include "planner/placement/hot_experts.h"

namespace semmoe::engine {
namespace {
constexpr int kHotExperts = 8;
}  // namespace

std::string EngineMetricsText(const rpc::EngineStats& s) {
  metrics::Families f;
  const std::string rank = absl::StrCat(s.rank());
  const metrics::Labels r = {{"rank", rank}};
  f.Gauge("semmoe_engine_info", "The rank's group: its size and attention mode (value 1).",
          {{"rank", rank}, {"ranks", absl::StrCat(s.ranks())}, {"attention", s.attention()}}, 1);
  f.Gauge("semmoe_engine_accepts_requests",
          "1 when this rank takes requests (Attention-DP, or "
          "TP rank 0).",
          r, s.accepts_requests() ? 1 : 0);
  const char* kRequests = "Requests that ended on this rank, by outcome.";
  f.Counter("semmoe_engine_requests_total", kRequests, {{"rank", rank}, {"outcome", "completed"}},
            s.completed());
  f.Counter("semmoe_engine_requests_total", kRequests, {{"rank", rank}, {"outcome", "failed"}},
            s.failed());
  f.Counter("semmoe_engine_requests_total", kRequests, {{"rank", rank}, {"outcome", "cancelled"}},
            s.cancelled());
  f.Gauge("semmoe_engine_requests_running", "Requests in the running batch.", r, s.running());
  f.Gauge("semmoe_engine_requests_waiting", "Requests queued for the batch (queue depth).", r,
          s.waiting());
  if (s.kv_free_tokens() >= 0) {
    f.Gauge("semmoe_engine_kv_cache_free_tokens", "Free KV-cache room, in token positions.", r,
            s.kv_free_tokens());
    f.Gauge("semmoe_engine_kv_cache_usage_ratio", "Share of the KV cache in use (0-1).", r,
            s.kv_total_tokens() > 0
                ? 1.0 - static_cast<double>(s.kv_free_tokens()) / s.kv_total_tokens()
                : 0.0);
  }
  f.Gauge("semmoe_engine_kv_cache_capacity_tokens", "KV-cache size, in token positions.", r,
          s.kv_total_tokens());
  f.Counter("semmoe_engine_prompt_tokens_total",
            "Prompt tokens prefilled (recomputation after "
            "preemption included).",
            r, s.prefill_tokens());
  f.Counter("semmoe_engine_generation_tokens_total", "Tokens decoded.", r, s.decode_tokens());
  f.Counter("semmoe_engine_preemptions_total", "Sequences preempted for KV-cache room.", r,
            s.preemptions());
  f.Counter("semmoe_engine_forward_passes_total", "Forward passes run by the group.", r,
            s.forward_passes());
  f.Gauge("semmoe_engine_local_activation_ratio",
          "Share of this rank's tokens' expert activations served on this rank (LAR), all MoE "
          "layers.",
          r, s.lar());
  for (int p = 0; p < s.peer_bytes_sent_size(); ++p) {
    if (p == s.rank()) continue;
    f.Counter("semmoe_engine_all_to_all_peer_bytes_total",
              "All-to-all payload this rank sent to each peer (dispatch and combine, all MoE "
              "layers): a row of the group's rank x rank traffic matrix.",
              {{"rank", rank}, {"peer", absl::StrCat(p)}}, s.peer_bytes_sent(p));
  }
  for (const rpc::MoeLayerStats& l : s.layers()) {
    const std::string layer = absl::StrCat(l.layer());
    auto labels = [&](std::initializer_list<std::pair<std::string, std::string>> more) {
      metrics::Labels out = {{"rank", rank}, {"layer", layer}};
      out.insert(out.end(), more.begin(), more.end());
      return out;
    };
    f.Gauge("semmoe_engine_moe_local_activation_ratio",
            "LAR per MoE layer: local expert activations over all of this rank's.", labels({}),
            l.lar());
    const char* kActivations =
        "Expert activations of this rank's tokens, per MoE layer, by "
        "where the expert ran.";
    f.Counter("semmoe_engine_moe_activations_total", kActivations, labels({{"where", "local"}}),
              l.local_activations());
    f.Counter("semmoe_engine_moe_activations_total", kActivations, labels({{"where", "remote"}}),
              l.remote_activations());
    f.Counter("semmoe_engine_moe_served_activations_total",
              "Expert activations this rank's experts ran per MoE layer (its own tokens' and its "
              "peers'): its expert load. Across ranks, (max - mean) / mean is the layer's load "
              "imbalance.",
              labels({}), l.served_activations());
    // The hottest experts, not every expert: at most kHotExperts series per layer.
    const std::vector<planner::HotExpert> hot =
        planner::HottestExperts(l.expert_activations(), kHotExperts);
    for (size_t i = 0; i < hot.size(); ++i) {
      f.Gauge("semmoe_engine_moe_hot_expert_activations",
              "This rank's most active experts per MoE layer (place 1 = the most), with their "
              "activations so far: a top-8, not every expert.",
              labels({{"place", absl::StrCat(i + 1)}, {"expert", absl::StrCat(hot[i].expert)}}),
              hot[i].activations);
    }
    const char* kBytes = "All-to-all bytes per MoE layer, by phase and direction.";
    f.Counter("semmoe_engine_all_to_all_bytes_total", kBytes,
              labels({{"phase", "dispatch"}, {"direction", "sent"}}), l.dispatch_bytes_sent());
    f.Counter("semmoe_engine_all_to_all_bytes_total", kBytes,
              labels({{"phase", "dispatch"}, {"direction", "received"}}),
              l.dispatch_bytes_received());
    f.Counter("semmoe_engine_all_to_all_bytes_total", kBytes,
              labels({{"phase", "combine"}, {"direction", "sent"}}), l.combine_bytes_sent());
    f.Counter("semmoe_engine_all_to_all_bytes_total", kBytes,
              labels({{"phase", "combine"}, {"direction", "received"}}),
              l.combine_bytes_received());
    const char* kNode =
        "All-to-all payload bytes per MoE layer (dispatch + combine) by link: cross_node (to or "
        "from a rank on another node: the slow links) or intra_node (a rank of this node).";
    f.Counter("semmoe_engine_node_bytes_total", kNode,
              labels({{"link", "cross_node"}, {"direction", "sent"}}), l.cross_node_bytes_sent());
    f.Counter("semmoe_engine_node_bytes_total", kNode,
              labels({{"link", "cross_node"}, {"direction", "received"}}),
              l.cross_node_bytes_received());
    f.Counter("semmoe_engine_node_bytes_total", kNode,
              labels({{"link", "intra_node"}, {"direction", "sent"}}), l.intra_node_bytes_sent());
    f.Counter("semmoe_engine_node_bytes_total", kNode,
              labels({{"link", "intra_node"}, {"direction", "received"}}),
              l.intra_node_bytes_received());
    const char* kSeconds = "Seconds spent per MoE layer, by phase.";
    f.Counter("semmoe_engine_moe_seconds_total", kSeconds, labels({{"phase", "dispatch"}}),
              l.dispatch_seconds());
    f.Counter("semmoe_engine_moe_seconds_total", kSeconds, labels({{"phase", "experts"}}),
              l.expert_seconds());
    f.Counter("semmoe_engine_moe_seconds_total", kSeconds, labels({{"phase", "combine"}}),
              l.combine_seconds());
  }
  for (const rpc::CollectiveStats& c : s.collectives()) {
    if (c.calls() == 0) continue;
    auto with = r;
    with.push_back({"kind", c.name()});
    f.Counter("semmoe_engine_collective_calls_total",
              "Collectives this rank ran, by kind (all_to_all, all_gather, reduce_scatter, ...).",
              with, c.calls());
    f.Counter("semmoe_engine_collective_seconds_total",
              "Seconds inside the collectives, by kind, waiting for the group's slowest rank "
              "included.",
              with, c.seconds());
  }
  {
    auto with = r;
    with.push_back({"topology", s.topology().empty() ? "one node" : s.topology()});
    f.Gauge("semmoe_engine_node_dedup",
            "1 when the dispatch crosses to each remote node once per token (node-level dedup "
            "under the group's topology, labelled), 0 when it sends to every remote rank.",
            with, s.node_dedup() ? 1 : 0);
  }
  f.Gauge("semmoe_engine_placement_version",
          "The placement version this rank serves (0: vanilla or a file).", r,
          s.placement_version());
  f.Gauge("semmoe_engine_rollout_target_version",
          "The version being rolled out to this rank (0: none).", r, s.rollout().target_version());
  f.Counter("semmoe_engine_rollout_refusals_total", "Placement versions this group refused.", r,
            s.rollout().refusals());
  return f.Text();
}

}  // namespace semmoe::engine
