// CpuForward: the forward pass (forward_runner.h) on the CPU op set (cpu_ops.h), over host
// weights in place (HostView, no copy) and a KV arena in host memory: the CPU twin of the GPU's
// GpuTransformer. The callers' sequences are paged (engine/runtime/kv_cache.h with no host arena:
// the cache only hands out pages) and carry page tables into this object's arena of `num_pages`
// pages of `page_size` positions.
//
// One device, or one rank of an expert-parallel group (Attention-DP, or Attention-TP with the
// weights and config the rank's head slice) whose communicator takes host memory (Gloo): the
// routed experts run where the placement serves them, every rank runs each pass in lockstep.
// Each output carries the attention's wall time per layer.
//
// Thread-compatible: a pass uses the object's buffers and arena.
#ifndef SEMMOE_ENGINE_FORWARD_CPU_FORWARD_H_
#define SEMMOE_ENGINE_FORWARD_CPU_FORWARD_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/forward/forward_options.h"
#include "engine/model/forward_io.h"
#include "engine/model/weights.h"
#include "engine/parallel/device_predictor.h"
#include "engine/parallel/moe_layer_counters.h"
#include "engine/parallel/tp_counters.h"
#include "engine/text/config.h"
#include "planner/placement/placement.h"

namespace semmoe::engine::forward {

struct CpuForwardOptions {
  int num_pages = 0;         // KV arena pages (> 0).
  int page_size = 16;        // Positions per page (> 0).
  ExpertParallelOptions ep;  // None: every expert on this device.
};

class CpuForward {
 public:
  // `config` and `weights` borrowed (outlive this, or until SwitchPlacement's next weights),
  // as ep's placement, communicator and predictor. INVALID_ARGUMENT for an arena without pages or
  // a placement that does not fit; FAILED_PRECONDITION if an expert this rank runs is not loaded.
  static absl::StatusOr<std::unique_ptr<CpuForward>> Create(const model::ModelConfig& config,
                                                            const model::ModelWeights& weights,
                                                            const CpuForwardOptions& options);
  ~CpuForward();

  // model::CheckBatch's errors, plus INVALID_ARGUMENT for a sequence without a page table
  // or with pages outside the arena. Under expert parallelism errors of the collectives are
  // returned as they are (the group is then unusable).
  absl::StatusOr<model::ForwardOutput> Forward(absl::Span<const model::SequenceInput> batch,
                                               const model::ForwardOptions& options = {});

  // A live rollout, between two passes on every rank: from the next pass serve `next` (borrowed)
  // from `weights` (borrowed; they hold every expert `next` runs here — the experts it does not
  // are never read), under Attention-TP with `predictor`'s tables (null: contiguous chunks). On
  // an error nothing changed; FAILED_PRECONDITION without expert parallelism.
  absl::Status SwitchPlacement(const planner::Placement& next, const model::ModelWeights& weights,
                               const DevicePredictor* predictor);

  const model::ModelConfig& config() const;
  int64_t kv_bytes() const;
  // Under expert parallelism, per placement layer: what the exchange did so far (else empty).
  const std::vector<MoeLayerCounters>& ep_counters() const;
  // Under Attention-TP: what its exchange did so far (else null), and per token of the latest
  // pass the device its experts were homed on at the latest MoE layer (A tables only; else empty).
  const TpStageCounters* tp_counters() const;
  absl::StatusOr<std::vector<int32_t>> TpLastDevices();

 private:
  struct Impl;
  explicit CpuForward(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace semmoe::engine::forward

#endif  // SEMMOE_ENGINE_FORWARD_CPU_FORWARD_H_
