// An engine rank's Prometheus metrics (GET /metrics on `engine serve --metrics_port`), from the
// stats it answers on GetStats: requests by outcome, running and waiting (queue depth), KV-cache
// use, tokens in and out, and per MoE layer the local activation ratio, expert activations
// local and remote, all-to-all bytes and seconds; the placement version served.
#ifndef SEMMOE_ENGINE_SERVER_ENGINE_METRICS_H_
#define SEMMOE_ENGINE_SERVER_ENGINE_METRICS_H_

#include <string>

#include "engine/proto/engine.pb.h"

namespace semmoe::engine {

// The text exposition format. Every series carries the rank's `rank` label.
std::string EngineMetricsText(const rpc::EngineStats& stats);

}  // namespace semmoe::engine

#endif  // SEMMOE_ENGINE_SERVER_ENGINE_METRICS_H_
