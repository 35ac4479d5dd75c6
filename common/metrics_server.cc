#include "common/metrics_server.h"

#include <httplib.h>

#include "absl/strings/str_cat.h"
#include "common/metrics.h"
#include "common/security.h"

namespace semmoe::metrics {

namespace {

// HTTPS with the process's TLS identity, requiring client certificates its CA signed when one is
// installed (Prometheus' scrape configuration takes a client certificate); else plain HTTP.
std::unique_ptr<httplib::Server> NewServer() {
  const SecurityMaterial& m = Security();
  if (!m.tls()) return std::make_unique<httplib::Server>();
  return std::make_unique<httplib::SSLServer>(m.cert_file.c_str(), m.key_file.c_str(),
                                              m.ca_file.empty() ? nullptr : m.ca_file.c_str());
}

}  // namespace

MetricsServer::MetricsServer() : server_(NewServer()) {}

MetricsServer::~MetricsServer() {
  server_->stop();
  if (thread_.joinable()) thread_.join();
}

absl::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::Start(
    const std::string& listen, int port, std::function<std::string()> render) {
  if (port < 0 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics port ", port, " is not a TCP port (0 to 65535; 0: any free one)"));
  }
  std::unique_ptr<MetricsServer> s(new MetricsServer());
  if (!s->server_->is_valid()) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics: cannot use the TLS certificate ", Security().cert_file));
  }
  s->server_->new_task_queue = [] { return new httplib::ThreadPool(2); };
  s->server_->Get("/metrics", [render](const httplib::Request&, httplib::Response& res) {
    res.set_content(render(), kTextContentType);
  });
  s->port_ = port == 0 ? s->server_->bind_to_any_port(listen)
                       : (s->server_->bind_to_port(listen, port) ? port : -1);
  if (s->port_ <= 0) {
    return absl::UnavailableError(absl::StrCat("metrics: cannot listen on ", listen, ":", port));
  }
  httplib::Server* server = s->server_.get();
  s->thread_ = std::thread([server] { server->listen_after_bind(); });
  return s;
}

}  // namespace semmoe::metrics
