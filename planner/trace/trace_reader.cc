#include "planner/trace/trace_reader.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/file.h"
#include "common/status_macros.h"
#include "kernels/dtype.h"

namespace semmoe::planner::trace {

absl::StatusOr<std::unique_ptr<TraceReader>> TraceReader::Open(const std::string& path) {
  absl::StatusOr<int> fd = OpenInputFile(path);
  if (!fd.ok()) {
    return absl::Status(fd.status().code(), absl::StrCat("trace: ", fd.status().message()));
  }
  std::FILE* file = fdopen(*fd, "rb");
  if (file == nullptr) {
    const int err = errno;
    close(*fd);
    return absl::InternalError(absl::StrCat("cannot open trace ", path, ": ", std::strerror(err)));
  }
  std::setvbuf(file, nullptr, _IOFBF, 1 << 20);
  std::unique_ptr<TraceReader> reader(new TraceReader(path, file));
  RETURN_IF_ERROR(reader->ReadHeader());
  return reader;
}

TraceReader::~TraceReader() { std::fclose(file_); }

absl::Status TraceReader::Corrupt(const std::string& what) const {
  return absl::InvalidArgumentError(absl::StrCat(path_, ": ", what));
}

absl::Status TraceReader::Read(void* data, size_t bytes, const char* what) {
  const size_t got = std::fread(data, 1, bytes, file_);
  if (got != bytes) {
    return Corrupt(absl::StrCat("truncated at byte ", offset_ + got, " while reading ", what,
                                " (a writer that did not finish?)"));
  }
  offset_ += bytes;
  return absl::OkStatus();
}

absl::Status TraceReader::ReadHeader() {
  char magic[8];
  RETURN_IF_ERROR(Read(magic, 8, "the magic"));
  if (std::memcmp(magic, kTraceMagic, 8) != 0) return Corrupt("not a Sem-MoE routing trace");
  uint32_t version, header_bytes, flags;
  uint16_t layers, top_k;
  RETURN_IF_ERROR(Read(&version, 4, "the version"));
  if (version != kTraceVersion) {
    return Corrupt(absl::StrCat("trace version ", version,
                                " is not supported (this reader: ", kTraceVersion, ")"));
  }
  RETURN_IF_ERROR(Read(&header_bytes, 4, "the header size"));
  RETURN_IF_ERROR(Read(&header_.num_experts, 4, "num_experts"));
  RETURN_IF_ERROR(Read(&header_.vocab_size, 4, "vocab_size"));
  RETURN_IF_ERROR(Read(&layers, 2, "num_moe_layers"));
  RETURN_IF_ERROR(Read(&top_k, 2, "top_k"));
  RETURN_IF_ERROR(Read(&flags, 4, "flags"));
  header_.top_k = top_k;
  header_.has_weights = (flags & 1u) != 0;
  if (layers == 0 || top_k == 0 || top_k > header_.num_experts || header_.num_experts > 65536) {
    return Corrupt(absl::StrCat("inconsistent header: ", layers, " layers, top_k ", top_k, ", ",
                                header_.num_experts, " experts"));
  }
  const uint64_t unpadded = 32 + 2ull * layers;
  if (header_bytes < unpadded || header_bytes > unpadded + 4096) {
    return Corrupt(absl::StrCat("header size ", header_bytes, " does not fit ", layers, " layers"));
  }
  header_.moe_layers.resize(layers);
  RETURN_IF_ERROR(Read(header_.moe_layers.data(), 2ull * layers, "the layer list"));
  std::vector<char> rest(header_bytes - unpadded);
  if (!rest.empty()) RETURN_IF_ERROR(Read(rest.data(), rest.size(), "the header"));
  return absl::OkStatus();
}

absl::StatusOr<bool> TraceReader::Next(TraceToken& token) {
  if (ended_) return false;
  const size_t n = header_.moe_layers.size() * header_.top_k;
  while (true) {
    const uint64_t record_at = offset_;
    uint8_t kind;
    RETURN_IF_ERROR(Read(&kind, 1, "a record kind"));
    if (kind == kRecordRequest) {
      uint64_t request;
      uint32_t bytes;
      RETURN_IF_ERROR(Read(&request, 8, "a request number"));
      RETURN_IF_ERROR(Read(&bytes, 4, "a request name length"));
      if (request != names_.size()) {
        return Corrupt(absl::StrCat("request record at byte ", record_at, " has number ", request,
                                    ", expected ", names_.size()));
      }
      if (bytes > kMaxRequestNameBytes) {
        return Corrupt(absl::StrCat("request name of ", bytes, " bytes at byte ", record_at));
      }
      std::string name(bytes, '\0');
      RETURN_IF_ERROR(Read(name.data(), bytes, "a request name"));
      names_.push_back(std::move(name));
      continue;
    }
    if (kind == kRecordToken) {
      RETURN_IF_ERROR(Read(&token.request, 8, "a token's request"));
      RETURN_IF_ERROR(Read(&token.position, 4, "a token position"));
      RETURN_IF_ERROR(Read(&token.token, 4, "a token id"));
      if (token.request >= names_.size()) {
        return Corrupt(absl::StrCat("token record at byte ", record_at,
                                    " names undeclared request ", token.request));
      }
      if (header_.vocab_size != 0 && token.token >= header_.vocab_size) {
        return Corrupt(absl::StrCat("token id ", token.token, " at byte ", record_at,
                                    " is outside the vocabulary"));
      }
      token.experts.resize(n);
      RETURN_IF_ERROR(Read(token.experts.data(), 2 * n, "expert ids"));
      for (uint16_t e : token.experts) {
        if (e >= header_.num_experts) {
          return Corrupt(
              absl::StrCat("expert id ", e, " at byte ", record_at, " >= ", header_.num_experts));
        }
      }
      token.weights.clear();
      if (header_.has_weights) {
        f16_.resize(n);
        RETURN_IF_ERROR(Read(f16_.data(), 2 * n, "gate weights"));
        for (uint16_t bits : f16_) token.weights.push_back(kernels::F16ToF32({bits}));
      }
      ++tokens_read_;
      return true;
    }
    if (kind == kRecordEnd) {
      uint64_t requests, tokens;
      RETURN_IF_ERROR(Read(&requests, 8, "the end record"));
      RETURN_IF_ERROR(Read(&tokens, 8, "the end record"));
      if (requests != names_.size() || tokens != tokens_read_) {
        return Corrupt(absl::StrCat("end record counts ", requests, " requests and ", tokens,
                                    " tokens, the file holds ", names_.size(), " and ",
                                    tokens_read_));
      }
      ended_ = true;
      return false;
    }
    return Corrupt(
        absl::StrCat("unknown record kind ", static_cast<int>(kind), " at byte ", record_at));
  }
}

}  // namespace semmoe::planner::trace
