#include "tools/client/generate_flags.h"

#include <iostream>

#include "google/protobuf/util/json_util.h"

ABSL_FLAG(std::string, prompt, "", "generate: prompt text");
ABSL_FLAG(std::vector<std::string>, token_ids, {}, "generate: prompt token ids (comma-separated)");
ABSL_FLAG(int, max_tokens, 32, "generate: tokens to generate at most");
ABSL_FLAG(float, temperature, 0, "generate: 0 for greedy");
ABSL_FLAG(uint64_t, seed, 0, "generate: sampling seed");
ABSL_FLAG(bool, ignore_eos, false, "generate: run max_tokens whatever the model says");
ABSL_FLAG(std::string, id, "", "generate: request id (empty: the server names it)");
ABSL_FLAG(int, deadline_ms, 60000, "RPC deadline");
ABSL_FLAG(bool, json, false, "print protobuf JSON");

namespace semmoe::tools {

std::string ProtoJson(const google::protobuf::Message& message) {
  std::string out;
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(message, &out, options);
  return out;
}

int RpcFailed(const std::string& tool, const grpc::Status& status) {
  std::cerr << tool << ": " << status.error_code() << ": " << status.error_message() << "\n";
  return 1;
}

}  // namespace semmoe::tools
