// MoeLayerCounters: what one rank's expert-parallel exchange did at one MoE layer, accumulated
// over passes (engine/forward/ep_exchange.h fills it, on the CPU and the GPU; EngineService
// reports it).
#ifndef SEMMOE_ENGINE_PARALLEL_MOE_LAYER_COUNTERS_H_
#define SEMMOE_ENGINE_PARALLEL_MOE_LAYER_COUNTERS_H_

#include <cstdint>
#include <vector>

namespace semmoe::engine {

struct MoeLayerCounters {
  int64_t tokens = 0;              // Rows this rank routed.
  int64_t local_activations = 0;   // (token, expert) pairs whose expert is on this rank.
  int64_t remote_activations = 0;  // ... on another rank.
  int64_t served_activations = 0;  // Pairs this rank's experts ran (its own tokens' and peers').
  // [experts]: served_activations per expert id (0 for experts this rank does not hold).
  std::vector<int64_t> expert_activations;
  int64_t dispatch_bytes_sent = 0, dispatch_bytes_received = 0;  // Payload, peers only.
  int64_t combine_bytes_sent = 0, combine_bytes_received = 0;
  // The same payload (dispatch + combine) split by where its peer is: on another node or on
  // this rank's (under a topology, engine/parallel/node_dispatch.h; without one every peer
  // shares the node).
  int64_t cross_node_bytes_sent = 0, cross_node_bytes_received = 0;
  int64_t intra_node_bytes_sent = 0, intra_node_bytes_received = 0;
  // [ranks]: dispatch + combine payload sent to each rank (this rank's own: 0).
  std::vector<int64_t> bytes_to_peer;
  double dispatch_seconds = 0, expert_seconds = 0, combine_seconds = 0;
  // Of dispatch_seconds, the time in the row-count exchange that starts it: mostly waiting for
  // the slowest peer to reach this layer (compute imbalance, CPU sharing), hardly the link.
  double dispatch_wait_seconds = 0;
  // With the holder choice: calls whose routing was all-gathered (one collective, no row-count
  // exchange; engine/forward/ep_exchange.h), of all calls.
  int64_t routing_gathers = 0;
  int64_t calls = 0;  // Times this rank ran the layer's exchange (zero-token calls included).
};

}  // namespace semmoe::engine

#endif  // SEMMOE_ENGINE_PARALLEL_MOE_LAYER_COUNTERS_H_
