// The flags and helpers engine_client and router_client share: both send the same kind of
// streaming Generate request (engine/proto/engine.proto, router/proto/router.proto) and print
// its tokens and final record, or a GetStats answer, as text or protobuf JSON.
#ifndef SEMMOE_TOOLS_CLIENT_GENERATE_FLAGS_H_
#define SEMMOE_TOOLS_CLIENT_GENERATE_FLAGS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/message.h"
#include "grpcpp/support/status.h"
#include "grpcpp/support/sync_stream.h"

ABSL_DECLARE_FLAG(std::string, prompt);
ABSL_DECLARE_FLAG(std::vector<std::string>, token_ids);
ABSL_DECLARE_FLAG(int, max_tokens);
ABSL_DECLARE_FLAG(float, temperature);
ABSL_DECLARE_FLAG(uint64_t, seed);
ABSL_DECLARE_FLAG(bool, ignore_eos);
ABSL_DECLARE_FLAG(std::string, id);
ABSL_DECLARE_FLAG(int, deadline_ms);
ABSL_DECLARE_FLAG(bool, json);

namespace semmoe::tools {

// The message as protobuf JSON with the .proto field names.
std::string ProtoJson(const google::protobuf::Message& message);

// Prints "<tool>: CODE: message" to stderr; returns the exit status 1.
int RpcFailed(const std::string& tool, const grpc::Status& status);

// Sets a GenerateRequest's id, prompt (text or ids), max_tokens and sampling from the flags.
// INVALID_ARGUMENT naming a token id that is not an integer.
template <typename Request>
absl::Status FillGenerateRequest(Request& request);

// Reads a Generate stream to its end: every token in order, and the final record.
template <typename Response, typename Final>
grpc::Status ReadGeneration(grpc::ClientReaderInterface<Response>& reader,
                            std::vector<int32_t>& tokens, Final& final);

// --- Implementation. ---

template <typename Request>
absl::Status FillGenerateRequest(Request& request) {
  request.set_request_id(absl::GetFlag(FLAGS_id));
  request.set_text(absl::GetFlag(FLAGS_prompt));
  for (const std::string& id : absl::GetFlag(FLAGS_token_ids)) {
    int value = 0;
    if (!absl::SimpleAtoi(id, &value)) {
      return absl::InvalidArgumentError(absl::StrCat("bad token id '", id, "'"));
    }
    request.add_token_ids(value);
  }
  request.set_max_tokens(absl::GetFlag(FLAGS_max_tokens));
  request.mutable_sampling()->set_temperature(absl::GetFlag(FLAGS_temperature));
  request.mutable_sampling()->set_seed(absl::GetFlag(FLAGS_seed));
  request.set_ignore_eos(absl::GetFlag(FLAGS_ignore_eos));
  return absl::OkStatus();
}

template <typename Response, typename Final>
grpc::Status ReadGeneration(grpc::ClientReaderInterface<Response>& reader,
                            std::vector<int32_t>& tokens, Final& final) {
  Response response;
  while (reader.Read(&response)) {
    tokens.insert(tokens.end(), response.token_ids().begin(), response.token_ids().end());
    if (response.has_final()) final = response.final();
  }
  return reader.Finish();
}

}  // namespace semmoe::tools

#endif  // SEMMOE_TOOLS_CLIENT_GENERATE_FLAGS_H_
