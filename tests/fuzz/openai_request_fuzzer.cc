// The OpenAI-compatible request bodies (router/openai).
#include "router/openai/openai_request.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace semmoe::router::openai;
  const std::string body = semmoe::fuzz::Text(data, size);
  for (Endpoint e : {Endpoint::kCompletions, Endpoint::kChatCompletions}) {
    OpenAiRequest r;
    if (std::optional<ApiError> err = ParseRequest(e, body, "m", &r)) (void)err->ToJson().dump();
  }
  return 0;
}
