// Where an engine's forward passes run besides the host CPU. The CPU path is always built in; a
// device backend (CUDA: //engine/gpu:cuda_backend) registers itself when it is linked into a
// binary, which the build does only where the CUDA toolkit is present (docs/BUILD.md). A build
// without it links no CUDA at all and answers a request for a device with an error that says so.
//
// Thread-safety: registration happens during static initialisation, look-ups afterwards; both
// are safe from any thread.
#ifndef SEMMOE_ENGINE_BACKEND_DEVICE_BACKEND_H_
#define SEMMOE_ENGINE_BACKEND_DEVICE_BACKEND_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/model/weights.h"
#include "engine/offline/prefill_runner.h"
#include "engine/parallel/device_predictor.h"
#include "engine/parallel/rank_forward.h"
#include "engine/parallel/rendezvous.h"
#include "engine/runtime/batch_engine.h"
#include "engine/text/config.h"
#include "planner/placement/placement.h"

namespace semmoe::engine {

// Where a backend runs the forward and how: the device ordinal and the weights' precision there
// — bf16 as checkpoints store them (tensor-core products, f32 accumulation; the serving default)
// or f32 (the same function as the CPU forward, for differential checks). `engine --precision`.
struct DeviceTarget {
  int device = 0;
  bool bf16 = true;
  // With bf16: the linear layers an FP8 checkpoint stored in F8_E4M3 stay FP8 in device memory,
  // dequantised a layer at a time (engine/forward/fp8_view.h; `engine --precision fp8`).
  bool fp8 = false;
  // > 0: one-device decode steps of up to this many sequences as CUDA graphs (bf16 only;
  // `engine --cuda_graph_max_batch`).
  int decode_graphs = 0;
  // Serving: the group's nodes (borrowed; null: one node) — node-level dedup in the dispatch.
  const planner::Topology* topology = nullptr;
};

// Attention-TP serving on a device (UseForServing): the rank's slice of the heads and the rule of
// the shuffled chunks, as the rank's RankModel has them. All borrowed.
struct TpServing {
  const model::ModelConfig* local_config = nullptr;  // This rank's heads.
  const DevicePredictor* predictor = nullptr;        // Null: contiguous chunks.
  double token_balance_eps = 0;
};

// What a backend set up for one use (weights and KV cache on the device, its device group), and
// the forward it offers for that use; the caller puts it where it belongs (nothing of the
// caller's is rewritten). It must outlive every object given its forward.
class DeviceSession {
 public:
  virtual ~DeviceSession() = default;
  // One line for logs, e.g. "CUDA device 0 (1234 MiB of weights, 256 MiB of KV cache)".
  virtual std::string Describe() const = 0;
  // UseForBatch's: the passes of a BatchEngine made with the options it was given, keys and
  // values on the device (the engine's cache then needs no host arena); null for other uses.
  virtual runtime::BatchEngine::ForwardFn batch_forward() { return nullptr; }
  // UseForPrefill's: where `engine score` / `trace` run their passes; empty for other uses.
  virtual offline::PrefillBackend prefill_backend() { return {}; }
  // UseForServing's: the rank forward, for GroupEngineOptions::device and the placement rollout
  // (engine/parallel/rank_forward.h); null for other uses.
  virtual RankForward* rank_forward() { return nullptr; }
};

class DeviceBackend {
 public:
  virtual ~DeviceBackend() = default;

  // Devices this machine has; an error when the driver cannot be reached.
  virtual absl::StatusOr<int> DeviceCount() const = 0;

  // `engine generate`: a forward on `target` (the session's batch_forward()) with a device cache
  // for the pages a BatchEngine created with `options` hands out.
  virtual absl::StatusOr<std::unique_ptr<DeviceSession>> UseForBatch(
      const model::ModelConfig& config, const model::ModelWeights& weights,
      const DeviceTarget& target, const runtime::BatchEngine::Options& options) = 0;

  // `engine score` / `trace`: passes of up to `max_batch_tokens` (the session's
  // prefill_backend()).
  virtual absl::StatusOr<std::unique_ptr<DeviceSession>> UseForPrefill(
      const model::ModelConfig& config, const model::ModelWeights& weights,
      const DeviceTarget& target, int max_batch_tokens) = 0;

  // `engine serve`: this rank's forward on `device` (the session's rank_forward()), the experts'
  // exchange over a device group met through `rendezvous`, its KV cache sized for a BatchEngine
  // made with `batch`. `weights` are this rank's under `placement` (borrowed, outlives the
  // session or its next SwitchPlacement). `tp`: Attention-TP (null: Attention-DP), the weights
  // then this rank's heads.
  virtual absl::StatusOr<std::unique_ptr<DeviceSession>> UseForServing(
      const model::ModelConfig& config, const model::ModelWeights& weights,
      const planner::Placement& placement, const RendezvousOptions& rendezvous,
      const DeviceTarget& target, const TpServing* tp,
      const runtime::BatchEngine::Options& batch) = 0;
};

// Makes `backend` the one for `kind` (e.g. "cuda"). Called by a backend's registrar; a second
// registration of the same kind is a programming error (CHECK).
void RegisterDeviceBackend(std::string kind, std::unique_ptr<DeviceBackend> backend);

// The backend for `kind`, or FAILED_PRECONDITION saying that this binary was built without it
// and how to get one that has it.
absl::StatusOr<DeviceBackend*> GetDeviceBackend(absl::string_view kind);

// The kinds this binary has, sorted (for --help and errors).
std::vector<std::string> DeviceBackendKinds();

}  // namespace semmoe::engine

#endif  // SEMMOE_ENGINE_BACKEND_DEVICE_BACKEND_H_
