// Test fixtures of the scale model: a profile and a model shape of round numbers, so that the
// tests' expected times are worked out by hand.
#ifndef SEMMOE_PLANNER_SIM_TESTING_FIXTURES_H_
#define SEMMOE_PLANNER_SIM_TESTING_FIXTURES_H_

#include "planner/sim/cluster_profile.h"
#include "planner/sim/model_shape.h"

namespace semmoe::planner::sim::testing {

// flops 1e9, mem_bw 1e6, intra 1000 and inter 100 B/s at efficiency 0.5, latencies 1 s a
// collective and 0.25 s a peer, 1 ms a kernel, no step overhead, 2 bytes a value.
inline ClusterProfile RoundProfile() {
  ClusterProfile p;
  p.ranks_per_node = {2, "test"};
  p.flops = {1e9, "test"};
  p.mem_bw = {1e6, "test"};
  p.intra_bw = {1000, "test"};
  p.inter_bw = {100, "test"};
  p.inter_per_node = {0, "test"};
  p.a2a_efficiency = {0.5, "test"};
  p.collective_latency = {1, "test"};
  p.message_latency = {0.25, "test"};
  p.kernel_overhead = {0.001, "test"};
  p.step_overhead = {0, "test"};
  p.weight_bytes = {2, "test"};
  p.wire_bytes = {2, "test"};
  p.kv_bytes = {2, "test"};
  return p;
}

// hidden 10, one MoE layer of 4 experts (width 20), top-2, attention 400 weights, 2 heads of 5.
inline ModelShape TinyShape() {
  ModelShape s;
  s.name = "tiny";
  s.hidden = 10;
  s.vocab = 100;
  s.moe_layer = {true};
  s.attention_params = 400;
  s.attention_heads = 2;
  s.qk_head_dim = s.v_head_dim = 5;
  s.kv_values = 20;
  s.num_experts = 4;
  s.top_k = 2;
  s.expert_intermediate = 20;
  return s;
}

}  // namespace semmoe::planner::sim::testing

#endif  // SEMMOE_PLANNER_SIM_TESTING_FIXTURES_H_
