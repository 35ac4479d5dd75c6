#include "engine/gpu/gpu_transformer.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "engine/gpu/batch_layout.h"
#include "engine/gpu/device_array.h"
#include "engine/gpu/gpu_weights.h"
#include "kernels/cpu/nn_ops.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/forward_ops.h"
#include "kernels/cuda/moe_routing.h"
#include "kernels/cuda/nn_ops.h"
#include "kernels/cuda/paged_attention.h"

#define CUBLAS_RETURN_IF_ERROR(call)                                                               \
  do {                                                                                             \
    const cublasStatus_t semmoe_cublas_status = (call);                                            \
    if (semmoe_cublas_status != CUBLAS_STATUS_SUCCESS) {                                           \
      return absl::InternalError(absl::StrCat(#call, " failed at ", __FILE__, ":", __LINE__, ": ", \
                                              cublasGetStatusString(semmoe_cublas_status)));       \
    }                                                                                              \
  } while (false)

namespace semmoe::engine::gpu {

namespace kc = ::semmoe::kernels::cuda;
using model::ForwardOptions;
using model::ForwardOutput;
using model::ModelConfig;
using model::SequenceInput;

namespace {

// Per-pass buffers, grown to the largest batch seen and reused.
struct Scratch {
  DeviceArray<float> x, h, q, k, v, attn, o, router_logits, gate_weights, y, g, u, z, moe;
  DeviceArray<float> shared, shared_gate, last, logits;
  DeviceArray<int32_t> ids, positions, seq_of_token, page_table, logit_rows, expert_ids;
  DeviceArray<int64_t> counts, offsets, entry_of_position, position_of_entry;
};

}  // namespace

struct GpuTransformer::Impl {
  ModelConfig config;
  GpuForwardOptions options;
  std::unique_ptr<GpuWeights> weights;
  DeviceArray<float> kv;  // Per layer: keys, then values; each [num_pages, page_size, kv_size].
  int64_t layer_kv_floats = 0;
  DeviceArray<float> rope_cos, rope_sin;  // [max_position, head_dim / 2]
  cudaStream_t stream = nullptr;
  cublasHandle_t cublas = nullptr;
  Scratch s;

  ~Impl() {
    if (cublas != nullptr) cublasDestroy(cublas);
    if (stream != nullptr) cudaStreamDestroy(stream);
  }

  float* Keys(int layer) const { return kv.data() + (2 * int64_t{layer}) * layer_kv_floats; }
  float* Values(int layer) const { return kv.data() + (2 * int64_t{layer} + 1) * layer_kv_floats; }

  absl::Status Reserve(int64_t tokens, int64_t logit_rows, int64_t page_entries);
  absl::Status Upload(const BatchLayout& b);
  // y [rows, w.rows] = x [rows, w.cols] · wᵀ. Row-major x and y are column-major xᵀ and yᵀ, so
  // this is yᵀ = w · xᵀ with w read transposed from its row-major [rows, cols] storage.
  absl::Status Linear(const float* x, int64_t rows, const GpuLinear& w, float* y) const;
  absl::Status Mlp(const float* x, int64_t rows, const GpuMlp& mlp, float* out) const;
  absl::Status Attention(int layer, int64_t tokens, int max_pages);
  absl::Status Ffn(int layer, int64_t tokens, model::Routing* routing);
};

absl::Status GpuTransformer::Impl::Reserve(int64_t tokens, int64_t logit_rows,
                                           int64_t page_entries) {
  const ModelConfig& c = config;
  const int64_t hidden = c.hidden_size, entries = tokens * std::max(1, c.top_k);
  const int64_t inter = std::max({entries * c.moe_intermediate_size, tokens * c.intermediate_size,
                                  tokens * c.shared_expert_intermediate_size});
  for (DeviceArray<float>* a : {&s.x, &s.h, &s.o, &s.moe, &s.shared}) {
    RETURN_IF_ERROR(a->Reserve(tokens * hidden));
  }
  RETURN_IF_ERROR(s.q.Reserve(tokens * c.q_size()));
  RETURN_IF_ERROR(s.attn.Reserve(tokens * c.q_size()));
  RETURN_IF_ERROR(s.k.Reserve(tokens * c.kv_size()));
  RETURN_IF_ERROR(s.v.Reserve(tokens * c.kv_size()));
  RETURN_IF_ERROR(s.router_logits.Reserve(tokens * std::max(1, c.num_experts)));
  RETURN_IF_ERROR(s.gate_weights.Reserve(entries));
  RETURN_IF_ERROR(s.expert_ids.Reserve(entries));
  RETURN_IF_ERROR(s.entry_of_position.Reserve(entries));
  RETURN_IF_ERROR(s.position_of_entry.Reserve(entries));
  RETURN_IF_ERROR(s.counts.Reserve(std::max(1, c.num_experts)));
  RETURN_IF_ERROR(s.offsets.Reserve(c.num_experts + 1));
  RETURN_IF_ERROR(s.y.Reserve(entries * hidden));
  RETURN_IF_ERROR(s.z.Reserve(entries * hidden));
  RETURN_IF_ERROR(s.g.Reserve(inter));
  RETURN_IF_ERROR(s.u.Reserve(inter));
  RETURN_IF_ERROR(s.shared_gate.Reserve(tokens));
  RETURN_IF_ERROR(s.last.Reserve(logit_rows * hidden));
  RETURN_IF_ERROR(s.logits.Reserve(logit_rows * c.vocab_size));
  for (DeviceArray<int32_t>* a : {&s.ids, &s.positions, &s.seq_of_token}) {
    RETURN_IF_ERROR(a->Reserve(tokens));
  }
  RETURN_IF_ERROR(s.logit_rows.Reserve(logit_rows));
  return s.page_table.Reserve(page_entries);
}

absl::Status GpuTransformer::Impl::Upload(const BatchLayout& b) {
  RETURN_IF_ERROR(s.ids.CopyFromHost(b.ids.data(), b.ids.size(), stream));
  RETURN_IF_ERROR(s.positions.CopyFromHost(b.positions.data(), b.positions.size(), stream));
  RETURN_IF_ERROR(
      s.seq_of_token.CopyFromHost(b.seq_of_token.data(), b.seq_of_token.size(), stream));
  RETURN_IF_ERROR(s.logit_rows.CopyFromHost(b.logit_rows.data(), b.logit_rows.size(), stream));
  return s.page_table.CopyFromHost(b.page_table.data(), b.page_table.size(), stream);
}

absl::Status GpuTransformer::Impl::Linear(const float* x, int64_t rows, const GpuLinear& w,
                                          float* y) const {
  if (rows == 0) return absl::OkStatus();
  const float one = 1.0f, zero = 0.0f;
  CUBLAS_RETURN_IF_ERROR(cublasSgemm(cublas, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(w.rows),
                                     static_cast<int>(rows), static_cast<int>(w.cols), &one,
                                     w.w.data(), static_cast<int>(w.cols), x,
                                     static_cast<int>(w.cols), &zero, y, static_cast<int>(w.rows)));
  return absl::OkStatus();
}

// out = down(silu(gate(x)) ⊙ up(x)), with s.g / s.u as the intermediate.
absl::Status GpuTransformer::Impl::Mlp(const float* x, int64_t rows, const GpuMlp& mlp,
                                       float* out) const {
  RETURN_IF_ERROR(Linear(x, rows, mlp.gate, s.g.data()));
  RETURN_IF_ERROR(Linear(x, rows, mlp.up, s.u.data()));
  CUDA_RETURN_IF_ERROR(kc::LaunchSiluMul(s.g.data(), s.u.data(), rows * mlp.gate.rows, stream));
  return Linear(s.g.data(), rows, mlp.down, out);
}

// x += o_proj(attention(norm(x))), the new keys and values written to the cache first.
absl::Status GpuTransformer::Impl::Attention(int layer, int64_t tokens, int max_pages) {
  const ModelConfig& c = config;
  const GpuLayer& w = weights->layers[layer];
  const int64_t hidden = c.hidden_size;
  CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(s.h.data(), s.x.data(), sizeof(float) * tokens * hidden,
                                       cudaMemcpyDeviceToDevice, stream));
  CUDA_RETURN_IF_ERROR(kc::LaunchRmsNorm(s.h.data(), tokens, hidden, hidden, w.input_norm.data(),
                                         c.rms_norm_eps, stream));
  RETURN_IF_ERROR(Linear(s.h.data(), tokens, w.q, s.q.data()));
  RETURN_IF_ERROR(Linear(s.h.data(), tokens, w.k, s.k.data()));
  RETURN_IF_ERROR(Linear(s.h.data(), tokens, w.v, s.v.data()));
  if (c.attention_bias) {
    CUDA_RETURN_IF_ERROR(
        kc::LaunchAddRowBias(s.q.data(), tokens, c.q_size(), c.q_size(), w.q_bias.data(), stream));
    CUDA_RETURN_IF_ERROR(kc::LaunchAddRowBias(s.k.data(), tokens, c.kv_size(), c.kv_size(),
                                              w.k_bias.data(), stream));
    CUDA_RETURN_IF_ERROR(kc::LaunchAddRowBias(s.v.data(), tokens, c.kv_size(), c.kv_size(),
                                              w.v_bias.data(), stream));
  }
  CUDA_RETURN_IF_ERROR(kc::LaunchQkNormRope(s.q.data(), tokens, c.q_size(), c.num_heads, c.head_dim,
                                            c.qk_norm ? w.q_norm.data() : nullptr, c.rms_norm_eps,
                                            s.positions.data(), rope_cos.data(), rope_sin.data(),
                                            stream));
  CUDA_RETURN_IF_ERROR(kc::LaunchQkNormRope(s.k.data(), tokens, c.kv_size(), c.num_kv_heads,
                                            c.head_dim, c.qk_norm ? w.k_norm.data() : nullptr,
                                            c.rms_norm_eps, s.positions.data(), rope_cos.data(),
                                            rope_sin.data(), stream));
  for (int kind = 0; kind < 2; ++kind) {
    CUDA_RETURN_IF_ERROR(kc::LaunchStorePagedKv({.rows = kind == 0 ? s.k.data() : s.v.data(),
                                                 .tokens = tokens,
                                                 .width = c.kv_size(),
                                                 .seq_of_token = s.seq_of_token.data(),
                                                 .position = s.positions.data(),
                                                 .page_table = s.page_table.data(),
                                                 .max_pages = max_pages,
                                                 .page_size = options.page_size,
                                                 .cache = kind == 0 ? Keys(layer) : Values(layer)},
                                                stream));
  }
  CUDA_RETURN_IF_ERROR(
      kc::LaunchPagedAttention({.q = s.q.data(),
                                .tokens = tokens,
                                .q_heads = c.num_heads,
                                .kv_heads = c.num_kv_heads,
                                .head_dim = c.head_dim,
                                .k_cache = Keys(layer),
                                .v_cache = Values(layer),
                                .page_size = options.page_size,
                                .page_table = s.page_table.data(),
                                .max_pages = max_pages,
                                .seq_of_token = s.seq_of_token.data(),
                                .position = s.positions.data(),
                                .scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim)),
                                .out = s.attn.data()},
                               stream));
  RETURN_IF_ERROR(Linear(s.attn.data(), tokens, w.o, s.o.data()));
  CUDA_RETURN_IF_ERROR(kc::LaunchAddInPlace(s.x.data(), s.o.data(), tokens * hidden, stream));
  return absl::OkStatus();
}

// x += FFN(norm(x)): the MoE block (routed experts grouped by expert, plus a shared expert) or
// the dense MLP.
absl::Status GpuTransformer::Impl::Ffn(int layer, int64_t tokens, model::Routing* routing) {
  const ModelConfig& c = config;
  const GpuLayer& w = weights->layers[layer];
  const int64_t hidden = c.hidden_size;
  CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(s.h.data(), s.x.data(), sizeof(float) * tokens * hidden,
                                       cudaMemcpyDeviceToDevice, stream));
  CUDA_RETURN_IF_ERROR(kc::LaunchRmsNorm(s.h.data(), tokens, hidden, hidden,
                                         w.post_attention_norm.data(), c.rms_norm_eps, stream));
  if (!w.is_moe) {
    RETURN_IF_ERROR(Mlp(s.h.data(), tokens, w.dense, s.o.data()));
    CUDA_RETURN_IF_ERROR(kc::LaunchAddInPlace(s.x.data(), s.o.data(), tokens * hidden, stream));
    return absl::OkStatus();
  }
  const int experts = c.num_experts, k = c.top_k;
  const int64_t entries = tokens * k, inter = c.moe_intermediate_size;
  RETURN_IF_ERROR(Linear(s.h.data(), tokens, w.router, s.router_logits.data()));
  CUDA_RETURN_IF_ERROR(kc::LaunchRouterGating(s.router_logits.data(), tokens, experts, k,
                                              c.norm_topk_prob, s.expert_ids.data(),
                                              s.gate_weights.data(), stream));
  CUDA_RETURN_IF_ERROR(kc::LaunchPermuteByExpert(
      s.expert_ids.data(), entries, experts, s.counts.data(), s.offsets.data(),
      s.entry_of_position.data(), s.position_of_entry.data(), stream));
  // The GEMM shapes are the experts' row counts: the host needs them.
  std::vector<int64_t> offsets(experts + 1);
  CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(offsets.data(), s.offsets.data(),
                                       sizeof(int64_t) * offsets.size(), cudaMemcpyDeviceToHost,
                                       stream));
  CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  CUDA_RETURN_IF_ERROR(kc::LaunchGatherRows(s.h.data(), s.entry_of_position.data(), entries, k,
                                            hidden, s.y.data(), stream));
  for (int e = 0; e < experts; ++e) {
    const int64_t begin = offsets[e], rows = offsets[e + 1] - offsets[e];
    RETURN_IF_ERROR(
        Linear(s.y.data() + begin * hidden, rows, w.experts[e].gate, s.g.data() + begin * inter));
    RETURN_IF_ERROR(
        Linear(s.y.data() + begin * hidden, rows, w.experts[e].up, s.u.data() + begin * inter));
  }
  CUDA_RETURN_IF_ERROR(kc::LaunchSiluMul(s.g.data(), s.u.data(), entries * inter, stream));
  for (int e = 0; e < experts; ++e) {
    const int64_t begin = offsets[e], rows = offsets[e + 1] - offsets[e];
    RETURN_IF_ERROR(
        Linear(s.g.data() + begin * inter, rows, w.experts[e].down, s.z.data() + begin * hidden));
  }
  CUDA_RETURN_IF_ERROR(kc::LaunchCombineRows(s.z.data(), s.gate_weights.data(),
                                             s.position_of_entry.data(), tokens, k, hidden,
                                             s.moe.data(), stream));
  if (w.has_shared_expert) {
    RETURN_IF_ERROR(Mlp(s.h.data(), tokens, w.shared_expert, s.shared.data()));
    RETURN_IF_ERROR(Linear(s.h.data(), tokens, w.shared_expert_gate, s.shared_gate.data()));
    CUDA_RETURN_IF_ERROR(kc::LaunchSigmoidGateAdd(s.moe.data(), s.shared.data(),
                                                  s.shared_gate.data(), tokens, hidden, stream));
  }
  CUDA_RETURN_IF_ERROR(kc::LaunchAddInPlace(s.x.data(), s.moe.data(), tokens * hidden, stream));
  if (routing != nullptr) {
    routing->top_k = k;
    routing->expert_ids.resize(entries);
    routing->weights.resize(entries);
    CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(routing->expert_ids.data(), s.expert_ids.data(),
                                         sizeof(int32_t) * entries, cudaMemcpyDeviceToHost,
                                         stream));
    CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(routing->weights.data(), s.gate_weights.data(),
                                         sizeof(float) * entries, cudaMemcpyDeviceToHost, stream));
    CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  }
  return absl::OkStatus();
}

GpuTransformer::GpuTransformer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GpuTransformer::~GpuTransformer() = default;

const ModelConfig& GpuTransformer::config() const { return impl_->config; }
int64_t GpuTransformer::weight_bytes() const { return impl_->weights->bytes; }
int64_t GpuTransformer::kv_bytes() const { return impl_->kv.size() * 4; }

absl::StatusOr<std::unique_ptr<GpuTransformer>> GpuTransformer::Create(
    const ModelConfig& c, const model::ModelWeights& weights, const GpuForwardOptions& options) {
  ASSIGN_OR_RETURN(const int devices, kc::DeviceCount());
  if (devices == 0) return absl::UnavailableError("this machine has no CUDA device");
  if (options.device < 0 || options.device >= devices) {
    return absl::InvalidArgumentError(
        absl::StrCat("CUDA device ", options.device, " does not exist (", devices, " found)"));
  }
  if (options.num_pages <= 0 || options.page_size <= 0) {
    return absl::InvalidArgumentError("the GPU KV cache needs num_pages and page_size > 0");
  }
  if (c.head_dim % 32 != 0 || c.head_dim > 256 || c.num_kv_heads <= 0 ||
      c.num_heads % c.num_kv_heads != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("the GPU attention needs head_dim a multiple of 32 up to 256 and whole GQA "
                     "groups (head_dim ",
                     c.head_dim, ", ", c.num_heads, " heads, ", c.num_kv_heads, " KV heads)"));
  }
  if (!c.MoeLayers().empty() && (c.num_experts > 1024 || c.top_k > 32 || c.top_k <= 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("the GPU gating takes up to 1024 experts and top_k up to 32 (", c.num_experts,
                     " experts, top_k ", c.top_k, ")"));
  }
  CUDA_RETURN_IF_ERROR(cudaSetDevice(options.device));
  auto impl = std::make_unique<Impl>();
  impl->config = c;
  impl->options = options;
  ASSIGN_OR_RETURN(impl->weights, UploadWeights(c, weights));
  const int64_t half = c.head_dim / 2;
  std::vector<float> cos(static_cast<size_t>(c.max_position_embeddings) * half), sin(cos.size());
  kernels::cpu::RopeTables(c.max_position_embeddings, c.head_dim, c.rope_theta, cos.data(),
                           sin.data());
  RETURN_IF_ERROR(impl->rope_cos.Assign(cos.data(), cos.size()));
  RETURN_IF_ERROR(impl->rope_sin.Assign(sin.data(), sin.size()));
  impl->layer_kv_floats = static_cast<int64_t>(options.num_pages) * options.page_size * c.kv_size();
  RETURN_IF_ERROR(impl->kv.Reserve(2 * c.num_layers * impl->layer_kv_floats));
  CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&impl->stream, cudaStreamNonBlocking));
  CUBLAS_RETURN_IF_ERROR(cublasCreate(&impl->cublas));
  CUBLAS_RETURN_IF_ERROR(cublasSetStream(impl->cublas, impl->stream));
  // Plain f32 products (no TF32): the same function as the CPU forward.
  CUBLAS_RETURN_IF_ERROR(cublasSetMathMode(impl->cublas, CUBLAS_PEDANTIC_MATH));
  return std::unique_ptr<GpuTransformer>(new GpuTransformer(std::move(impl)));
}

absl::StatusOr<ForwardOutput> GpuTransformer::Forward(absl::Span<const SequenceInput> batch,
                                                      const ForwardOptions& options) {
  Impl& m = *impl_;
  const ModelConfig& c = m.config;
  ASSIGN_OR_RETURN(const model::BatchShape shape, model::CheckBatch(c, batch));
  ForwardOutput out;
  out.logits.resize(shape.logit_rows, c.vocab_size);
  if (shape.tokens == 0) return out;
  ASSIGN_OR_RETURN(const BatchLayout b,
                   LayOutBatch(batch, m.options.page_size, m.options.num_pages));
  CUDA_RETURN_IF_ERROR(cudaSetDevice(m.options.device));  // Per thread: callers may differ.
  RETURN_IF_ERROR(m.Reserve(shape.tokens, shape.logit_rows, b.page_table.size()));
  RETURN_IF_ERROR(m.Upload(b));
  CUDA_RETURN_IF_ERROR(kc::LaunchGatherRowsByIndex(m.weights->embed.data(), m.s.ids.data(),
                                                   shape.tokens, c.hidden_size, m.s.x.data(),
                                                   m.stream));
  for (int layer = 0; layer < c.num_layers; ++layer) {
    RETURN_IF_ERROR(m.Attention(layer, shape.tokens, b.max_pages));
    const bool collect = options.collect_routing && m.weights->layers[layer].is_moe;
    model::Routing routing;
    RETURN_IF_ERROR(m.Ffn(layer, shape.tokens, collect ? &routing : nullptr));
    if (collect) out.routing.push_back(std::move(routing));
  }
  CUDA_RETURN_IF_ERROR(kc::LaunchGatherRowsByIndex(m.s.x.data(), m.s.logit_rows.data(),
                                                   shape.logit_rows, c.hidden_size, m.s.last.data(),
                                                   m.stream));
  CUDA_RETURN_IF_ERROR(kc::LaunchRmsNorm(m.s.last.data(), shape.logit_rows, c.hidden_size,
                                         c.hidden_size, m.weights->final_norm.data(),
                                         c.rms_norm_eps, m.stream));
  RETURN_IF_ERROR(
      m.Linear(m.s.last.data(), shape.logit_rows, m.weights->lm_head, m.s.logits.data()));
  if (shape.logit_rows > 0) {
    CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(out.logits.data(), m.s.logits.data(),
                                         sizeof(float) * out.logits.size(), cudaMemcpyDeviceToHost,
                                         m.stream));
  }
  CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(m.stream));
  return out;
}

}  // namespace semmoe::engine::gpu
