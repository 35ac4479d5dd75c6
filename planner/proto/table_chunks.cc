#include "planner/proto/table_chunks.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace semmoe::planner {

bool WriteTableChunks(grpc::ServerWriterInterface<rpc::TableChunk>& writer, int64_t version,
                      absl::string_view table, size_t chunk_bytes) {
  size_t offset = 0;
  do {
    const size_t n = std::min(chunk_bytes, table.size() - offset);
    rpc::TableChunk chunk;
    chunk.set_version(version);
    chunk.set_total_bytes(static_cast<int64_t>(table.size()));
    chunk.set_offset(static_cast<int64_t>(offset));
    chunk.set_data(table.data() + offset, n);
    if (!writer.Write(chunk)) return false;
    offset += n;
  } while (offset < table.size());
  return true;
}

absl::Status TableAssembler::Add(const rpc::TableChunk& chunk) {
  if (!started_) {
    if (chunk.total_bytes() < 0 || static_cast<uint64_t>(chunk.total_bytes()) > max_bytes_) {
      return absl::DataLossError(absl::StrCat("a table of ", chunk.total_bytes(),
                                              " bytes (at most ", max_bytes_, " accepted)"));
    }
    started_ = true;
    version_ = chunk.version();
    total_ = chunk.total_bytes();
    table_.reserve(static_cast<size_t>(total_));
  }
  if (chunk.version() != version_ || chunk.total_bytes() != total_) {
    return absl::DataLossError(absl::StrCat("a chunk of version ", chunk.version(), " (",
                                            chunk.total_bytes(), " bytes) in version ", version_,
                                            "'s table (", total_, " bytes)"));
  }
  if (chunk.offset() != static_cast<int64_t>(table_.size()) ||
      static_cast<uint64_t>(total_) - table_.size() < chunk.data().size()) {
    return absl::DataLossError(absl::StrCat("table chunk at byte ", chunk.offset(), " (",
                                            chunk.data().size(), " bytes) after ", table_.size(),
                                            " of ", total_, " bytes"));
  }
  table_.append(chunk.data());
  return absl::OkStatus();
}

absl::StatusOr<std::string> TableAssembler::Finish() && {
  if (!started_ || table_.size() != static_cast<size_t>(total_)) {
    return absl::DataLossError(absl::StrCat("the table stream ended after ", table_.size(),
                                            started_ ? absl::StrCat(" of ", total_) : "",
                                            " bytes"));
  }
  return std::move(table_);
}

absl::StatusOr<std::string> ReadTableChunks(grpc::ClientReaderInterface<rpc::TableChunk>& reader,
                                            size_t max_bytes) {
  TableAssembler table(max_bytes);
  absl::Status bad;
  rpc::TableChunk chunk;
  while (reader.Read(&chunk)) {
    if (bad.ok()) bad = table.Add(chunk);  // Keep reading: Finish needs the stream drained.
  }
  const grpc::Status status = reader.Finish();
  if (!status.ok()) {
    return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
  }
  if (!bad.ok()) return bad;
  return std::move(table).Finish();
}

}  // namespace semmoe::planner
