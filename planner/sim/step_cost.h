// The scale model's time of one forward step (docs/SIMULATE.md, "The time model"), from what each
// rank does in it: the attention of its tokens, and at every MoE layer the rows it sends each
// peer, the expert rows it computes and the experts they touch. Every term is a roofline —
// max(FLOPs / flops, bytes streamed / mem_bw) plus kernel_overhead — or a collective:
// collective_latency + message_latency × peers messaged + the busiest link's bytes / (its rate ×
// a2a_efficiency), the slowest rank setting the time (a collective ends when its last rank does).
// A link inside a node runs at intra_bw per device; across nodes at inter_bw per device, or per
// node when inter_per_node (the lab's hosts share one link). Where the ranks share the host's
// processors (host_cores > 0), every term of theirs stretches by Stretch(): the share of the
// cores the rest of the host (router, loadgen) takes at the arrival rate.
#ifndef SEMMOE_PLANNER_SIM_STEP_COST_H_
#define SEMMOE_PLANNER_SIM_STEP_COST_H_

#include <cstdint>
#include <vector>

#include "planner/placement/topology.h"
#include "planner/sim/cluster_profile.h"
#include "planner/sim/model_shape.h"

namespace semmoe::planner::sim {

// One rank's attention work in a step, per layer (the same at every layer).
struct AttentionWork {
  int64_t tokens = 0;       // New tokens (prefill chunks and decodes).
  int64_t kv_read = 0;      // KV positions streamed (each sequence's context once).
  int64_t attended = 0;     // (query, key) pairs scored.
  int64_t logits_rows = 0;  // Rows through the LM head (one per sequence that samples).
};

// One MoE layer of a step: rows[s × G + d] token rows rank s sends rank d (s ≠ d; a token once
// per rank serving one of its experts), expert_rows[d] activations d computes, active_experts[d]
// the distinct experts it runs, own_tokens[d] tokens whose home d is (the shared expert's rows).
// With node-level dedup (two_stage, engine/forward/node_exchange.h) `rows` is stage 1 (a token
// once per remote node, to its gateway) and `local_rows` stage 2 (inside each node: own tokens
// to the ranks serving them, and the gateways' fan-out).
struct MoeTraffic {
  explicit MoeTraffic(int g = 0, bool two_stage = false) { Reset(g, two_stage); }
  void Reset(int g, bool two_stage = false);
  int g = 0;
  bool two_stage = false;
  std::vector<int64_t> rows, local_rows, expert_rows, active_experts, own_tokens;
};

// What a collective puts on each link: per rank its bytes out and in over NVLink-class links
// inside its node and over the links between nodes, per node its bytes out and in between nodes
// (for profiles whose hosts share one link), and the peers each rank messages (its caller counts
// them: Add does not).
struct LinkLoads {
  explicit LinkLoads(const planner::Topology& topo) { Reset(topo); }
  void Reset(const planner::Topology& topo);
  // `bytes` from rank s to rank d (s ≠ d).
  void Add(const planner::Topology& topo, int s, int d, double bytes);
  std::vector<double> intra_out, intra_in, inter_out, inter_in, node_out, node_in;
  std::vector<int> peers;
};

struct MoeTime {
  double wait = 0;      // The slowest rank's attention over the fastest's (their wait).
  double dispatch = 0;  // The row-count exchange and the dispatch collective.
  double experts = 0;   // The busiest rank's experts (routed and shared).
  double combine = 0;
  double total() const { return wait + dispatch + experts + combine; }
  double a2a() const { return dispatch + combine; }
};

class StepCost {
 public:
  // REQUIRES: CheckShape(shape) ok; topology.num_ranks() ≥ 1. All borrowed. `arrival_rate`:
  // requests/s, for the host's share of shared processors (Stretch).
  StepCost(const ModelShape& shape, const ClusterProfile& profile, const planner::Topology& topo,
           double arrival_rate = 0)
      : shape_(shape), profile_(profile), topo_(topo), stretch_(StretchAt(profile, arrival_rate)) {}

  // host_cores / (host_cores − rate × host_cpu_per_request), the host's share capped at 90% of
  // the cores; 1 without host_cores (GPUs: the ranks do not share the host's processors).
  static double StretchAt(const ClusterProfile& profile, double arrival_rate);
  double Stretch() const { return stretch_; }
  double StepOverhead() const { return profile_.step_overhead.value * stretch_; }
  double StepSkew() const { return profile_.step_skew.value * stretch_; }
  // What a MoE-layer call waits because ranks share processors (host_cores > 0 and fewer cores
  // than ranks): shared_core_wait per extra rank on a core. 0 on GPUs.
  double SharedCoreWait() const;
  const planner::Topology& topology() const { return topo_; }
  // A roofline operator: kernel_overhead + max(flops / profile.flops, bytes / mem_bw).
  double Roofline(double flops, double bytes) const;
  // One rank's attention at one layer (data-parallel: all heads; `shards` > 1: its share of the
  // heads and of the weights under attention-TP).
  double Attention(const AttentionWork& w, int shards = 1) const;
  // A dense layer's MLP over `tokens` (its share of the width under TP).
  double DenseMlp(int64_t tokens, int shards = 1) const;
  // The LM head over `rows` (vocab-parallel share under TP).
  double LmHead(int64_t rows, int shards = 1) const;
  // A collective moving bytes[s × G + d] (the diagonal ignored).
  double Collective(const std::vector<double>& bytes) const;
  // The same from the links' loads: collective_latency + the slowest rank's message latencies
  // and busiest link.
  double CollectiveTime(const LinkLoads& loads) const;
  // One rank's experts in a MoE layer: `expert_rows` activations over `active_experts` distinct
  // routed experts, and the shared expert over `own_tokens` (fractional counts allowed: the
  // router's predictions are expectations).
  double ExpertsTime(double expert_rows, double active_experts, double own_tokens) const;
  // A MoE layer: the row counts' exchange (when `counts_exchange`; an all-gather of G + nodes
  // counts with two stages), dispatch, experts, combine (each two collectives with two stages).
  MoeTime Moe(const MoeTraffic& t, const std::vector<double>& attention_per_rank,
              bool counts_exchange = true) const;
  // Bytes of a dispatched row (hidden values, an expert id and a weight per slot), of a stage-1
  // row of the two-stage exchange (also the serving rank per slot) and of a combined one (hidden
  // values), as the engine sends them.
  double DispatchRowBytes() const;
  double CrossRowBytes() const;
  double CombineRowBytes() const;

 private:
  const ModelShape& shape_;
  const ClusterProfile& profile_;
  const planner::Topology& topo_;
  const double stretch_;
};

}  // namespace semmoe::planner::sim

#endif  // SEMMOE_PLANNER_SIM_STEP_COST_H_
