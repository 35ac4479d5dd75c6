#include "engine/gpu/cuda_ops.h"

#include <cuda_runtime_api.h>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/forward_ops.h"
#include "kernels/cuda/grouped_swiglu.h"
#include "kernels/cuda/moe_routing.h"
#include "kernels/cuda/nn_ops.h"
#include "kernels/cuda/paged_attention.h"
#include "kernels/cuda/predict_devices.h"

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

absl::StatusOr<std::unique_ptr<CudaOps>> CudaOps::Create(int device) {
  ASSIGN_OR_RETURN(const int devices, kc::DeviceCount());
  if (devices == 0) return absl::UnavailableError("this machine has no CUDA device");
  if (device < 0 || device >= devices) {
    return absl::InvalidArgumentError(
        absl::StrCat("CUDA device ", device, " does not exist (", devices, " found)"));
  }
  std::unique_ptr<CudaOps> ops(new CudaOps(device));
  CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
  CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&ops->stream_, cudaStreamNonBlocking));
  CUBLAS_RETURN_IF_ERROR(cublasCreate(&ops->cublas_));
  CUBLAS_RETURN_IF_ERROR(cublasSetStream(ops->cublas_, ops->stream_));
  // Plain f32 products (no TF32): the same function as the CPU forward.
  CUBLAS_RETURN_IF_ERROR(cublasSetMathMode(ops->cublas_, CUBLAS_PEDANTIC_MATH));
  // A workspace of its own: cuBLAS allocates none while a graph is being captured.
  constexpr int64_t kWorkspace = 32 << 20;
  RETURN_IF_ERROR(ops->cublas_workspace_.Reserve(kWorkspace));
  CUBLAS_RETURN_IF_ERROR(
      cublasSetWorkspace(ops->cublas_, ops->cublas_workspace_.data(), kWorkspace));
  return ops;
}

CudaOps::~CudaOps() {
  for (auto& [key, exec] : graphs_) cudaGraphExecDestroy(exec);
  if (cublas_ != nullptr) cublasDestroy(cublas_);
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

absl::Status CudaOps::CopyBytes(void* dst, const void* src, int64_t bytes, cudaMemcpyKind kind,
                                bool wait) {
  if (bytes > 0) {
    CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes), kind, stream_));
  }
  if (wait) CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
  return absl::OkStatus();
}

// y [rows, w.rows] = x [rows, w.cols] · wᵀ. Row-major x and y are column-major xᵀ and yᵀ, so
// this is yᵀ = w · xᵀ with w read transposed from its row-major [rows, cols] storage.
absl::Status CudaOps::Linear(const float* x, int64_t rows, const forward::LinearView& w, float* y) {
  if (rows == 0) return absl::OkStatus();
  const float one = 1.0f, zero = 0.0f;
  if (w.w16 != nullptr) {
    // The input rounded to bf16, then bf16 × bf16 on tensor cores with f32 accumulation. The
    // handle's pedantic mode (for the f32 products) would keep this off the tensor cores.
    if (x16_.size() < rows * w.cols) ++scratch_generation_;
    RETURN_IF_ERROR(x16_.Reserve(rows * w.cols));
    RETURN_IF_ERROR(RoundToBf16(x, rows * w.cols, x16_.data()));
    CUBLAS_RETURN_IF_ERROR(cublasSetMathMode(cublas_, CUBLAS_DEFAULT_MATH));
    const cublasStatus_t status = cublasGemmEx(
        cublas_, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(w.rows), static_cast<int>(rows),
        static_cast<int>(w.cols), &one, w.w16, CUDA_R_16BF, static_cast<int>(w.cols), x16_.data(),
        CUDA_R_16BF, static_cast<int>(w.cols), &zero, y, CUDA_R_32F, static_cast<int>(w.rows),
        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    CUBLAS_RETURN_IF_ERROR(cublasSetMathMode(cublas_, CUBLAS_PEDANTIC_MATH));
    CUBLAS_RETURN_IF_ERROR(status);
    return absl::OkStatus();
  }
  CUBLAS_RETURN_IF_ERROR(cublasSgemm(cublas_, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(w.rows),
                                     static_cast<int>(rows), static_cast<int>(w.cols), &one, w.w,
                                     static_cast<int>(w.cols), x, static_cast<int>(w.cols), &zero,
                                     y, static_cast<int>(w.rows)));
  return absl::OkStatus();
}

absl::Status CudaOps::Copy2D(float* dst, int64_t dst_stride, const float* src, int64_t src_stride,
                             int64_t rows, int64_t width) {
  if (rows == 0 || width == 0) return absl::OkStatus();
  CUDA_RETURN_IF_ERROR(cudaMemcpy2DAsync(dst, sizeof(float) * dst_stride, src,
                                         sizeof(float) * src_stride, sizeof(float) * width, rows,
                                         cudaMemcpyDeviceToDevice, stream_));
  return absl::OkStatus();
}

// Per head h: y_h [rows, out] = x_h [rows, in] · W_hᵀ (or · W_h when transposed). Column-major,
// as Linear: y_hᵀ = op(W_h) · x_hᵀ, where the row-major [out, in] W_h is read transposed (lda in)
// and the row-major [in, out] one as it is (lda out); each operand steps by its head stride.
absl::Status CudaOps::HeadLinear(const kernels::HeadLinearArgs& a) {
  if (a.rows == 0 || a.heads == 0) return absl::OkStatus();
  const float one = 1.0f, zero = 0.0f;
  const cublasOperation_t op_w = a.transposed ? CUBLAS_OP_N : CUBLAS_OP_T;
  const int m = static_cast<int>(a.out), n = static_cast<int>(a.rows), k = static_cast<int>(a.in);
  const int lda = static_cast<int>(a.transposed ? a.out : a.in);
  if (a.w16 != nullptr) {  // x rounded to bf16 over the span the heads read, strides kept.
    const int64_t span = (a.rows - 1) * a.x_row_stride + (a.heads - 1) * a.x_head_stride + a.in;
    if (x16_.size() < span) ++scratch_generation_;
    RETURN_IF_ERROR(x16_.Reserve(span));
    RETURN_IF_ERROR(RoundToBf16(a.x, span, x16_.data()));
    CUBLAS_RETURN_IF_ERROR(cublasSetMathMode(cublas_, CUBLAS_DEFAULT_MATH));
    const cublasStatus_t status = cublasGemmStridedBatchedEx(
        cublas_, op_w, CUBLAS_OP_N, m, n, k, &one, a.w16, CUDA_R_16BF, lda, a.w_head_stride,
        x16_.data(), CUDA_R_16BF, static_cast<int>(a.x_row_stride), a.x_head_stride, &zero, a.y,
        CUDA_R_32F, static_cast<int>(a.y_row_stride), a.y_head_stride, a.heads, CUBLAS_COMPUTE_32F,
        CUBLAS_GEMM_DEFAULT);
    CUBLAS_RETURN_IF_ERROR(cublasSetMathMode(cublas_, CUBLAS_PEDANTIC_MATH));
    CUBLAS_RETURN_IF_ERROR(status);
    return absl::OkStatus();
  }
  CUBLAS_RETURN_IF_ERROR(cublasSgemmStridedBatched(
      cublas_, op_w, CUBLAS_OP_N, m, n, k, &one, a.w, lda, a.w_head_stride, a.x,
      static_cast<int>(a.x_row_stride), a.x_head_stride, &zero, a.y,
      static_cast<int>(a.y_row_stride), a.y_head_stride, a.heads));
  return absl::OkStatus();
}

absl::Status CudaOps::PartialRope(const kernels::PartialRopeArgs& a) {
  CUDA_RETURN_IF_ERROR(kc::LaunchPartialRope(a, stream_));
  return absl::OkStatus();
}

absl::Status CudaOps::RmsNorm(float* x, int64_t rows, int64_t width, int64_t stride,
                              const float* weight, float eps) {
  CUDA_RETURN_IF_ERROR(kc::LaunchRmsNorm(
      {.x = x, .rows = rows, .width = width, .row_stride = stride, .weight = weight, .eps = eps},
      stream_));
  return absl::OkStatus();
}

absl::Status CudaOps::QkNormRope(const kernels::QkNormRopeArgs& a) {
  CUDA_RETURN_IF_ERROR(kc::LaunchQkNormRope(a, stream_));
  return absl::OkStatus();
}

absl::Status CudaOps::SiluMul(float* gate, const float* up, int64_t n) {
  CUDA_RETURN_IF_ERROR(kc::LaunchSiluMul(gate, up, n, stream_));
  return absl::OkStatus();
}

absl::Status CudaOps::AddInPlace(float* x, const float* y, int64_t n) {
  CUDA_RETURN_IF_ERROR(kc::LaunchAddInPlace(x, y, n, stream_));
  return absl::OkStatus();
}

absl::Status CudaOps::AddRowBias(float* x, int64_t rows, int64_t width, int64_t stride,
                                 const float* bias) {
  CUDA_RETURN_IF_ERROR(kc::LaunchAddRowBias(x, rows, width, stride, bias, stream_));
  return absl::OkStatus();
}

absl::Status CudaOps::SigmoidGateAdd(float* out, const float* y, const float* gate, int64_t rows,
                                     int64_t width) {
  CUDA_RETURN_IF_ERROR(kc::LaunchSigmoidGateAdd(out, y, gate, rows, width, stream_));
  return absl::OkStatus();
}

absl::Status CudaOps::GatherRowsByIndex(const float* table, const int32_t* index, int64_t rows,
                                        int64_t width, float* out) {
  CUDA_RETURN_IF_ERROR(kc::LaunchGatherRowsByIndex(table, index, rows, width, out, stream_));
  return absl::OkStatus();
}

absl::Status CudaOps::StorePagedKv(const kernels::StorePagedKvArgs& a) {
  CUDA_RETURN_IF_ERROR(kc::LaunchStorePagedKv(a, stream_));
  return absl::OkStatus();
}

absl::Status CudaOps::PagedAttention(const kernels::PagedAttentionArgs& a) {
  CUDA_RETURN_IF_ERROR(kc::LaunchPagedAttention(a, stream_));
  return absl::OkStatus();
}

absl::Status CudaOps::RouterGating(const kernels::RouterGatingArgs& a) {
  CUDA_RETURN_IF_ERROR(kc::LaunchRouterGating(a, stream_));
  return absl::OkStatus();
}

absl::Status CudaOps::PermuteByExpert(const kernels::PermuteByExpertArgs& a) {
  CUDA_RETURN_IF_ERROR(kc::LaunchPermuteByExpert(a, stream_));
  return absl::OkStatus();
}

absl::Status CudaOps::GatherRows(const kernels::GatherRowsArgs& a) {
  CUDA_RETURN_IF_ERROR(kc::LaunchGatherRows(a, stream_));
  return absl::OkStatus();
}

absl::Status CudaOps::CombineRows(const kernels::CombineRowsArgs& a) {
  CUDA_RETURN_IF_ERROR(kc::LaunchCombineRows(a, stream_));
  return absl::OkStatus();
}

absl::Status CudaOps::ScatterAddRows(float* dst, const float* src, const int32_t* index,
                                     int64_t rows, int64_t width) {
  CUDA_RETURN_IF_ERROR(kc::LaunchScatterAddRows(dst, src, index, rows, width, stream_));
  return absl::OkStatus();
}

absl::Status CudaOps::Zero(float* x, int64_t n) {
  if (n > 0) CUDA_RETURN_IF_ERROR(cudaMemsetAsync(x, 0, sizeof(float) * n, stream_));
  return absl::OkStatus();
}

absl::Status CudaOps::BeginCapture() {
  CUDA_RETURN_IF_ERROR(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
  return absl::OkStatus();
}

absl::Status CudaOps::EndCapture(int key) {
  cudaGraph_t graph = nullptr;
  CUDA_RETURN_IF_ERROR(cudaStreamEndCapture(stream_, &graph));
  cudaGraphExec_t exec = nullptr;
  const cudaError_t instantiated = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  CUDA_RETURN_IF_ERROR(instantiated);
  auto [it, fresh] = graphs_.try_emplace(key, exec);
  if (!fresh) {
    cudaGraphExecDestroy(it->second);
    it->second = exec;
  }
  return absl::OkStatus();
}

absl::Status CudaOps::Replay(int key) {
  auto it = graphs_.find(key);
  if (it == graphs_.end()) {
    return absl::InternalError(absl::StrCat("no CUDA graph was captured for bucket ", key));
  }
  CUDA_RETURN_IF_ERROR(cudaGraphLaunch(it->second, stream_));
  return absl::OkStatus();
}

absl::Status CudaOps::Begin() {
  CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  return absl::OkStatus();
}

absl::Status CudaOps::Finish() {
  CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
  return absl::OkStatus();
}

absl::Status CudaOps::RoundToBf16(const float* x, int64_t n, uint16_t* out) {
  CUDA_RETURN_IF_ERROR(kc::LaunchRoundToBf16(x, n, out, stream_));
  return absl::OkStatus();
}

absl::Status CudaOps::DequantizeFp8(const kernels::Fp8DequantArgs& a) {
  CUDA_RETURN_IF_ERROR(kc::LaunchDequantizeFp8(a, stream_));
  return absl::OkStatus();
}

absl::Status CudaOps::ShufflePack(const float* x, const int32_t* order, int64_t rows, int64_t width,
                                  float* packed) {
  CUDA_RETURN_IF_ERROR(kc::LaunchShufflePack(x, order, rows, width, packed, stream_));
  return absl::OkStatus();
}

absl::Status CudaOps::PredictDevices(const kernels::PredictDevicesArgs& a) {
  CUDA_RETURN_IF_ERROR(kc::LaunchPredictDevices(a, stream_));
  return absl::OkStatus();
}

absl::Status CudaOps::ShuffleUnpack(const float* packed, const int32_t* order, int64_t rows,
                                    int64_t width, float* x) {
  CUDA_RETURN_IF_ERROR(kc::LaunchShuffleUnpack(packed, order, rows, width, x, stream_));
  return absl::OkStatus();
}

absl::Status CudaOps::GroupedSwiGlu(const kernels::GroupedSwiGluArgs& a) {
  CUDA_RETURN_IF_ERROR(kc::LaunchGroupedSwiGluTensorCore(a, stream_));
  return absl::OkStatus();
}

}  // namespace semmoe::engine::gpu
