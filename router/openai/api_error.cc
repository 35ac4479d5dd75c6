#include "router/openai/api_error.h"

namespace semmoe::router::openai {

nlohmann::ordered_json ApiError::ToJson() const {
  using Json = nlohmann::ordered_json;
  return {{"error",
           {{"message", message},
            {"type", type},
            {"param", param.empty() ? Json() : Json(param)},
            {"code", code.empty() ? Json() : Json(code)}}}};
}

}  // namespace semmoe::router::openai
