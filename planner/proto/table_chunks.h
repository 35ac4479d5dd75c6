// Tables over PlannerService as streams of TableChunk (planner.proto): the server cuts a table
// into chunks of at most kTableChunkBytes, the client puts them back together and checks that
// they add up. No table travels as one message, so none depends on gRPC's message-size limits
// (4 MB by default), whatever the vocabulary or expert count.
#ifndef SEMMOE_PLANNER_PROTO_TABLE_CHUNKS_H_
#define SEMMOE_PLANNER_PROTO_TABLE_CHUNKS_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "grpcpp/support/sync_stream.h"
#include "planner/proto/planner.pb.h"

namespace semmoe::planner {

inline constexpr size_t kTableChunkBytes = 1 << 20;

// Writes `table` as chunks (one empty chunk for an empty table). False when the client went away.
bool WriteTableChunks(grpc::ServerWriterInterface<rpc::TableChunk>& writer, int64_t version,
                      absl::string_view table, size_t chunk_bytes = kTableChunkBytes);

// Puts chunks back together, checking each against the first: same version and total, the next
// offset, nothing past the total, the total at most `max_bytes`. DATA_LOSS naming the mismatch.
class TableAssembler {
 public:
  explicit TableAssembler(size_t max_bytes) : max_bytes_(max_bytes) {}
  absl::Status Add(const rpc::TableChunk& chunk);
  // The table, once every byte came; DATA_LOSS if none or only some did.
  absl::StatusOr<std::string> Finish() &&;
  int64_t version() const { return version_; }

 private:
  const size_t max_bytes_;
  bool started_ = false;
  int64_t version_ = 0, total_ = 0;
  std::string table_;
};

// Reads a whole table from a call's stream and finishes the call: the call's error as a Status
// (NOT_FOUND stays NOT_FOUND), else the assembler's.
absl::StatusOr<std::string> ReadTableChunks(grpc::ClientReaderInterface<rpc::TableChunk>& reader,
                                            size_t max_bytes);

}  // namespace semmoe::planner

#endif  // SEMMOE_PLANNER_PROTO_TABLE_CHUNKS_H_
