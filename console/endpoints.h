// The endpoints file a local cluster writes (`local_cluster --endpoints_file`), as the console
// takes its default addresses from it. The file is input like any other: a wrong type or a
// malformed address is an error naming the field, never a crash or a silent default.
#ifndef SEMMOE_CONSOLE_ENDPOINTS_H_
#define SEMMOE_CONSOLE_ENDPOINTS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace semmoe::console {

struct Endpoints {
  std::string planner, router, http;  // HOST:PORT; "" when the cluster has none.
  struct Engine {
    int rank = 0;
    std::string address, metrics, arm;
    bool accepts_requests = true;
  };
  std::vector<Engine> engines;
};

// InvalidArgument "<path>: <field>: ..." for JSON that is not the endpoints object: invalid or
// too deeply nested JSON, a field of the wrong type, an address that is not HOST:PORT.
absl::StatusOr<Endpoints> ParseEndpoints(absl::string_view text, absl::string_view path);

}  // namespace semmoe::console

#endif  // SEMMOE_CONSOLE_ENDPOINTS_H_
