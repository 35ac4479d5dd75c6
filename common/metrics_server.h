// GET /metrics over HTTP for a component with no HTTP server of its own (engine ranks, the
// planner): `render` is called per scrape. Plaintext on `listen` (127.0.0.1 by default).
//
// Thread-safe; the destructor stops it.
#ifndef SEMMOE_COMMON_METRICS_SERVER_H_
#define SEMMOE_COMMON_METRICS_SERVER_H_

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"

namespace httplib {
class Server;
}

namespace semmoe::metrics {

class MetricsServer {
 public:
  // Port 0: any free one (port()). Unavailable when the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<MetricsServer>> Start(const std::string& listen, int port,
                                                              std::function<std::string()> render);
  ~MetricsServer();

  int port() const { return port_; }

 private:
  MetricsServer();
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace semmoe::metrics

#endif  // SEMMOE_COMMON_METRICS_SERVER_H_
