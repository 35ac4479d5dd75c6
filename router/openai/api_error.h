// An error as OpenAI's API returns it: the HTTP status and {"error": {message, type, param,
// code}}. Every refusal of the door is one of these.
#ifndef SEMMOE_ROUTER_OPENAI_API_ERROR_H_
#define SEMMOE_ROUTER_OPENAI_API_ERROR_H_

#include <string>

#include "nlohmann/json.hpp"

namespace semmoe::router::openai {

struct ApiError {
  int http_status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param;  // The offending field ("" when none).
  std::string code;   // e.g. "model_not_found" ("" when none).

  nlohmann::ordered_json ToJson() const;
};

}  // namespace semmoe::router::openai

#endif  // SEMMOE_ROUTER_OPENAI_API_ERROR_H_
