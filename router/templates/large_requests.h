// Large chat requests for measuring and testing how templates grow with them: N function tools
// (each with a description and a one-property schema), and N short system messages before one
// user turn. Shared by //router/templates:shipped_templates_test and tools/bench_chat_template.
#ifndef SEMMOE_ROUTER_TEMPLATES_LARGE_REQUESTS_H_
#define SEMMOE_ROUTER_TEMPLATES_LARGE_REQUESTS_H_

#include <string>

#include "nlohmann/json.hpp"

namespace semmoe::router::templates {

inline nlohmann::ordered_json ManyTools(int n) {
  using Json = nlohmann::ordered_json;
  Json tools = Json::array();
  for (int i = 0; i < n; ++i) {
    tools.push_back(
        {{"type", "function"},
         {"function",
          {{"name", "tool_" + std::to_string(i)},
           {"description", "Looks a thing up."},
           {"parameters", {{"type", "object"}, {"properties", {{"q", {{"type", "string"}}}}}}}}}});
  }
  return tools;
}

inline nlohmann::ordered_json ManySystemMessages(int n) {
  using Json = nlohmann::ordered_json;
  Json m = Json::array();
  for (int i = 0; i < n; ++i) m.push_back({{"role", "system"}, {"content", "Be brief."}});
  m.push_back({{"role", "user"}, {"content", "Hi"}});
  return m;
}

}  // namespace semmoe::router::templates

#endif  // SEMMOE_ROUTER_TEMPLATES_LARGE_REQUESTS_H_
