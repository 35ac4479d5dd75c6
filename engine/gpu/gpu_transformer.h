// GpuTransformer: the forward pass on one CUDA device — the function the CPU product's CpuForward
// computes (the same batches, checks, routing and outputs; with f32 weights logits agree with
// the CPU's to float rounding, with bf16 ones to bf16's, docs/ENGINE.md "Precision"), with the
// weights (engine/gpu/gpu_weights.h) and the paged KV cache in GPU memory. The pass itself is
// ForwardRunner<CudaOps> (engine/forward/forward_runner.h); CpuForward is ForwardRunner<CpuOps>,
// which CI runs over the kernels' CPU references; gpu_transformer_test and gpu_reference_test
// check this class on a GPU.
//
// The KV cache: the caller's sequences are paged (engine/runtime/kv_cache.h) and carry page
// tables (KvSequence::page_table()); this class holds keys and values for `num_pages` pages of
// `page_size` positions in its own device arena and indexes it with those tables; the host cache
// only hands out pages.
//
// With a placement and an NCCL group (GpuForwardOptions) the routed experts are exchanged
// across ranks (engine/forward/ep_exchange.h); each output then counts its sequences' activations
// served here, and ep_counters() the exchange. Not counted on the GPU: attention time (it would
// need a device sync per layer).
//
// Thread-compatible: Forward() uses the object's stream, cuBLAS handle and scratch buffers.
#ifndef SEMMOE_ENGINE_GPU_GPU_TRANSFORMER_H_
#define SEMMOE_ENGINE_GPU_GPU_TRANSFORMER_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/model/forward_io.h"
#include "engine/model/weights.h"
#include "engine/parallel/communicator.h"
#include "engine/parallel/device_predictor.h"
#include "engine/parallel/moe_layer_counters.h"
#include "engine/text/config.h"
#include "planner/placement/placement.h"

namespace semmoe::engine::gpu {

// Which CUDA device, and the weights' precision there: bf16 (engine/forward/bf16_view.h:
// tensor-core products with f32 accumulation, experts as one grouped call per MoE layer) or f32
// (the CPU forward's function, to float rounding).
struct GpuTarget {
  int device = 0;
  bool bf16 = false;
  bool fp8 = false;  // With bf16: FP8 layers stay FP8 (DeviceTarget::fp8).
  int decode_graphs = 0;  // GpuForwardOptions::decode_graphs.
  const planner::Topology* topology = nullptr;  // GpuForwardOptions::topology.
};

// Attention-TP for a serving rank (GpuForwardOptions' fields of the same names).
struct GpuTpOptions {
  bool enabled = false;
  const DevicePredictor* predictor = nullptr;
  double token_balance_eps = 0;
};

struct GpuForwardOptions {
  int device = 0;      // CUDA device ordinal.
  bool bf16 = false;   // GpuTarget::bf16.
  bool fp8 = false;    // GpuTarget::fp8 (needs bf16).
  int num_pages = 0;   // KV pages (> 0), the same count as the host cache's.
  int page_size = 16;  // Positions per page, as the host cache's.
  // > 0: decode steps of up to this many sequences replay as CUDA graphs, one per power-of-two
  // bucket (engine/forward/decode_graphs.h). Needs bf16 on one device (no placement).
  int decode_graphs = 0;
  // Expert parallelism (Attention-DP): the placement and a group whose collectives take device
  // memory (NcclCommunicator); both borrowed. The weights then need only this rank's experts.
  const planner::Placement* placement = nullptr;
  Communicator* comm = nullptr;
  // Attention-TP over `comm` (engine/forward/tp_exchange.h): `weights` and `config` are then this
  // rank's slice of the heads (engine/parallel/tp_weights.h), every rank runs the same batch,
  // and `predictor` (borrowed; null: contiguous chunks) orders the shuffled chunks. Not yet
  // served by `engine serve --device cuda` (Attention-DP only there).
  bool attention_tp = false;
  const DevicePredictor* predictor = nullptr;
  double token_balance_eps = 0;
  // The group's nodes (borrowed; null: one node): node-level dedup in the dispatch
  // (forward::ExpertParallelOptions::topology).
  const planner::Topology* topology = nullptr;
};

class GpuTransformer {
 public:
  // UNAVAILABLE without a CUDA device; INVALID_ARGUMENT for shapes the kernels do not take
  // (engine/gpu/gpu_support.h: heads over 1024 floats, more than 1024 experts or 32 groups, top_k
  // over 32) or a placement that does not fit; FAILED_PRECONDITION if an expert this device runs is
  // not loaded; RESOURCE_EXHAUSTED if the GPU is full.
  static absl::StatusOr<std::unique_ptr<GpuTransformer>> Create(const model::ModelConfig& config,
                                                                const model::ModelWeights& weights,
                                                                const GpuForwardOptions& options);
  ~GpuTransformer();

  // As CpuForward::Forward (the same errors, from model::CheckBatch), plus INVALID_ARGUMENT for
  // a sequence without a page table or with pages outside this arena. CUDA and cuBLAS errors are
  // returned as INTERNAL naming the call.
  absl::StatusOr<model::ForwardOutput> Forward(absl::Span<const model::SequenceInput> batch,
                                               const model::ForwardOptions& options = {});

  // An expert a rank gains in a rollout: model layer, id, its host weights (borrowed for the call).
  struct GainedExpert {
    int layer = 0, expert = 0;
    const model::MlpWeights* weights = nullptr;
  };
  // A live rollout under expert parallelism (every rank between the same two passes): the gained
  // experts go up to the device, each MoE layer keeps exactly what `next` (borrowed, outlives
  // this) runs here and frees the rest, and the pass serves `next` — under Attention-TP with
  // `predictor`'s tables (borrowed; null: contiguous chunks). FAILED_PRECONDITION with nothing
  // changed when an expert `next` runs here is neither on the device nor gained, or without
  // expert parallelism; a CUDA error midway (the device full) leaves the rank unusable and is
  // returned as it is (the group then fails, as for a dead peer).
  absl::Status SwitchPlacement(const planner::Placement& next,
                               absl::Span<const GainedExpert> gained,
                               const DevicePredictor* predictor);

  const model::ModelConfig& config() const;
  int64_t weight_bytes() const;
  bool bf16() const;
  bool fp8() const;
  // Decode steps replayed as CUDA graphs so far (GpuForwardOptions::decode_graphs).
  int64_t graph_replays() const;
  int64_t kv_bytes() const;
  // Under expert parallelism, per placement layer: what the exchange did so far (else empty).
  // Thread-compatible with Forward().
  std::vector<MoeLayerCounters> ep_counters() const;

 private:
  struct Impl;
  explicit GpuTransformer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace semmoe::engine::gpu

#endif  // SEMMOE_ENGINE_GPU_GPU_TRANSFORMER_H_
