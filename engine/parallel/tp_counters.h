// TpStageCounters: what one rank's Attention-TP exchange (engine/forward/tp_exchange.h) did,
// accumulated over passes (EngineService reports it).
#ifndef SEMMOE_ENGINE_PARALLEL_TP_COUNTERS_H_
#define SEMMOE_ENGINE_PARALLEL_TP_COUNTERS_H_

#include <cstdint>
#include <vector>

namespace semmoe::engine {

struct TpStageCounters {
  int64_t tokens = 0;          // Tokens through the stage (each counted once per layer).
  double srs_seconds = 0;      // Pack + reduce-scatter + residual.
  double sag_seconds = 0;      // All-gather + unpack.
  double predict_seconds = 0;  // Device prediction and shuffle planning.
  std::vector<double> srs_seconds_per_layer, sag_seconds_per_layer;  // [model layers]
};

}  // namespace semmoe::engine

#endif  // SEMMOE_ENGINE_PARALLEL_TP_COUNTERS_H_
