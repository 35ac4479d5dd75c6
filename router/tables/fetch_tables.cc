#include "router/tables/fetch_tables.h"

#include "absl/strings/str_cat.h"
#include "planner/affinity/prompt_score_table.h"
#include "planner/proto/table_chunks.h"

namespace semmoe::router {

absl::StatusOr<std::shared_ptr<const RouterTables>> FetchRouterTables(
    planner::rpc::PlannerService::StubInterface& stub, int64_t version, int ranks, uint32_t vocab,
    absl::Duration timeout) {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  planner::rpc::PromptScoresRequest request;
  request.set_version(version);
  request.set_vocab(vocab);
  request.set_ranks(ranks);
  absl::StatusOr<std::string> bytes =
      planner::ReadTableChunks(*stub.GetPromptScores(&context, request),
                               planner::PromptScoreTable::SerializedSize(vocab, ranks));
  absl::StatusOr<std::shared_ptr<const RouterTables>> tables =
      bytes.ok() ? RouterTablesFromScores(version, *bytes, ranks, vocab)
                 : absl::StatusOr<std::shared_ptr<const RouterTables>>(bytes.status());
  if (!tables.ok()) {
    return absl::Status(
        tables.status().code(),
        absl::StrCat("version ", version, "'s tables: ", tables.status().message()));
  }
  return tables;
}

bool IsTransient(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kDataLoss:
    case absl::StatusCode::kResourceExhausted:
    case absl::StatusCode::kAborted:
    case absl::StatusCode::kCancelled:
    case absl::StatusCode::kInternal:
    case absl::StatusCode::kUnknown:
      return true;
    default:
      return false;
  }
}

}  // namespace semmoe::router
