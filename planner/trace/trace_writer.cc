#include "planner/trace/trace_writer.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "kernels/dtype.h"

namespace semmoe::planner::trace {
namespace {

template <typename T>
void Put(std::string& out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));  // Little-endian hosts only (x86-64, aarch64).
  out.append(bytes, sizeof(T));
}

}  // namespace

absl::StatusOr<std::unique_ptr<TraceWriter>> TraceWriter::Create(const std::string& path,
                                                                 const TraceHeader& header) {
  if (header.moe_layers.empty() || header.moe_layers.size() > 65535) {
    return absl::InvalidArgumentError("trace header: 1..65535 MoE layers required");
  }
  if (header.top_k == 0 || header.top_k > header.num_experts || header.num_experts > 65536) {
    return absl::InvalidArgumentError(absl::StrCat("trace header: top_k ", header.top_k,
                                                   " and num_experts ", header.num_experts,
                                                   " are inconsistent"));
  }
  const std::string partial = path + ".partial";
  std::FILE* file = std::fopen(partial.c_str(), "wb");
  if (file == nullptr) {
    return absl::InternalError(absl::StrCat("cannot create ", partial, ": ", std::strerror(errno)));
  }
  std::setvbuf(file, nullptr, _IOFBF, 1 << 20);
  std::unique_ptr<TraceWriter> writer(new TraceWriter(path, header, file));
  std::string h(kTraceMagic, 8);
  const uint32_t unpadded = 8 + 4 + 4 + 4 + 4 + 2 + 2 + 4 + 2 * header.moe_layers.size();
  const uint32_t header_bytes = (unpadded + 7) / 8 * 8;
  Put<uint32_t>(h, kTraceVersion);
  Put<uint32_t>(h, header_bytes);
  Put<uint32_t>(h, header.num_experts);
  Put<uint32_t>(h, header.vocab_size);
  Put<uint16_t>(h, static_cast<uint16_t>(header.moe_layers.size()));
  Put<uint16_t>(h, header.top_k);
  Put<uint32_t>(h, header.has_weights ? 1u : 0u);
  for (uint16_t layer : header.moe_layers) Put<uint16_t>(h, layer);
  h.append(header_bytes - unpadded, '\0');
  RETURN_IF_ERROR(writer->Write(h.data(), h.size()));
  return writer;
}

TraceWriter::~TraceWriter() {
  if (file_ != nullptr) {
    std::fclose(file_);
    std::remove((path_ + ".partial").c_str());
  }
}

absl::Status TraceWriter::Write(const void* data, size_t bytes) {
  if (file_ == nullptr) return absl::FailedPreconditionError("trace writer is closed");
  if (std::fwrite(data, 1, bytes, file_) != bytes) {
    return absl::InternalError(absl::StrCat("writing ", path_, ".partial: ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> TraceWriter::AddRequest(absl::string_view name) {
  if (name.size() > kMaxRequestNameBytes) {
    return absl::InvalidArgumentError(absl::StrCat("request name longer than ",
                                                   kMaxRequestNameBytes, " bytes"));
  }
  record_.clear();
  Put<uint8_t>(record_, kRecordRequest);
  Put<uint64_t>(record_, num_requests_);
  Put<uint32_t>(record_, static_cast<uint32_t>(name.size()));
  record_.append(name.data(), name.size());
  RETURN_IF_ERROR(Write(record_.data(), record_.size()));
  return num_requests_++;
}

absl::Status TraceWriter::AddToken(uint64_t request, uint32_t position, uint32_t token,
                                   absl::Span<const int32_t> experts,
                                   absl::Span<const float> weights) {
  const size_t n = header_.moe_layers.size() * header_.top_k;
  if (request >= num_requests_) {
    return absl::InvalidArgumentError(absl::StrCat("token of undeclared request ", request));
  }
  if (experts.size() != n || (header_.has_weights && weights.size() != n)) {
    return absl::InvalidArgumentError(
        absl::StrCat("token record needs ", n, " expert ids and weights, got ", experts.size(),
                     " and ", weights.size()));
  }
  record_.clear();
  Put<uint8_t>(record_, kRecordToken);
  Put<uint64_t>(record_, request);
  Put<uint32_t>(record_, position);
  Put<uint32_t>(record_, token);
  for (int32_t e : experts) {
    if (e < 0 || static_cast<uint32_t>(e) >= header_.num_experts) {
      return absl::InvalidArgumentError(absl::StrCat("expert id ", e, " out of range"));
    }
    Put<uint16_t>(record_, static_cast<uint16_t>(e));
  }
  if (header_.has_weights) {
    for (float w : weights) Put<uint16_t>(record_, kernels::F32ToF16(w).bits);
  }
  ++num_tokens_;
  return Write(record_.data(), record_.size());
}

absl::Status TraceWriter::Close() {
  record_.clear();
  Put<uint8_t>(record_, kRecordEnd);
  Put<uint64_t>(record_, num_requests_);
  Put<uint64_t>(record_, num_tokens_);
  RETURN_IF_ERROR(Write(record_.data(), record_.size()));
  std::FILE* file = file_;
  file_ = nullptr;
  const std::string partial = path_ + ".partial";
  if (std::fflush(file) != 0 || fsync(fileno(file)) != 0) {
    std::fclose(file);
    return absl::InternalError(absl::StrCat("flushing ", partial, ": ", std::strerror(errno)));
  }
  std::fclose(file);
  if (std::rename(partial.c_str(), path_.c_str()) != 0) {
    return absl::InternalError(absl::StrCat("renaming ", partial, " to ", path_, ": ",
                                            std::strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace semmoe::planner::trace
