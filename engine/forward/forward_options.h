// The options of a forward pass's KV arena and of its expert parallelism (forward_runner.h),
// apart so that wrappers of the runner (cpu_forward.h) need not include it.
#ifndef SEMMOE_ENGINE_FORWARD_FORWARD_OPTIONS_H_
#define SEMMOE_ENGINE_FORWARD_FORWARD_OPTIONS_H_

#include <cstdint>

#include "engine/parallel/communicator.h"
#include "engine/parallel/device_predictor.h"
#include "planner/placement/placement.h"
#include "planner/placement/topology.h"

namespace semmoe::engine::forward {

struct KvArenaOptions {
  int num_pages = 0;   // > 0.
  int page_size = 16;  // > 0.
  bool bf16 = false;   // Keys and values stored as bf16 (rounded, read back widened).
};

// ExpertParallelOptions::routing_gather_max_bytes's default: 8 ranks × 1,024 tokens × top-8.
inline constexpr int64_t kRoutingGatherMaxBytes = int64_t{256} << 10;

struct ExpertParallelOptions {  // Both null: every expert on this device.
  const planner::Placement* placement = nullptr;
  Communicator* comm = nullptr;
  // Attention-TP over `comm` (needs the placement and comm): every rank runs the same batch
  // through its slice of the heads. `predictor` (borrowed; null: plain contiguous chunks) orders
  // the shuffled chunks; with it a rank's chunk may hold up to ⌊(1 + token_balance_eps) · batch /
  // ranks⌋ tokens (tp_exchange.h).
  bool attention_tp = false;
  const DevicePredictor* predictor = nullptr;
  double token_balance_eps = 0;
  // With replicas in the placement: each batch, an expert a rank does not hold runs on the
  // least-loaded of its holders (planner/placement/holder_choice.h); false: on its home.
  bool holder_choice = true;
  // With it: a batch whose routing (all ranks') is at most this many bytes all-gathers it, one
  // collective a MoE layer instead of two (ep_exchange.h; 0: never).
  int64_t routing_gather_max_bytes = kRoutingGatherMaxBytes;
  // The group's nodes (borrowed; null: one node). With more than one node of more than one rank,
  // a token crosses to each remote node once and is fanned out inside (node_exchange.h), and
  // the counters split cross-node from intra-node bytes.
  const planner::Topology* topology = nullptr;
};

}  // namespace semmoe::engine::forward

#endif  // SEMMOE_ENGINE_FORWARD_FORWARD_OPTIONS_H_
