// Running a BatchEngine's forward passes on the GPU: the engine keeps scheduling, paging and
// sampling on the host; the GpuTransformer keeps the weights and the keys and values on the
// device, in as many pages as the host cache hands out.
#ifndef SEMMOE_ENGINE_GPU_GPU_BATCH_H_
#define SEMMOE_ENGINE_GPU_GPU_BATCH_H_

#include <memory>

#include "absl/status/statusor.h"
#include "engine/gpu/gpu_transformer.h"
#include "engine/model/weights.h"
#include "engine/runtime/batch_engine.h"
#include "engine/text/config.h"

namespace semmoe::engine::gpu {

// A GPU forward whose device cache has the pages a BatchEngine created with `options` hands out
// (its page_size and kv_cache_bytes); `ep` as GpuForwardOptions (placement, comm; null: one
// device), `tp` Attention-TP over that group (`config` and `weights` then the rank's heads).
// Errors as GpuTransformer::Create.
absl::StatusOr<std::unique_ptr<GpuTransformer>> CreateGpuForward(
    const model::ModelConfig& config, const model::ModelWeights& weights, const GpuTarget& target,
    const runtime::BatchEngine::Options& options, const planner::Placement* placement = nullptr,
    Communicator* comm = nullptr, const GpuTpOptions& tp = {});

}  // namespace semmoe::engine::gpu

#endif  // SEMMOE_ENGINE_GPU_GPU_BATCH_H_
