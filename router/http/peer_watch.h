// Whether an HTTP client is still connected, while its request waits for its first token (in
// the router's queue or in prefill) and nothing has been written to it yet. cpp-httplib does not
// hand a handler its socket, so the socket is found by the connection's addresses among the
// process's descriptors (Linux: /proc/self/fd); it stays open, and ours, until the handler
// returns. A peer that closed its end shows as POLLRDHUP / POLLHUP on it.
//
// Not thread-safe; one per request.
#ifndef SEMMOE_ROUTER_HTTP_PEER_WATCH_H_
#define SEMMOE_ROUTER_HTTP_PEER_WATCH_H_

#include <string>

namespace semmoe::router::http {

class PeerWatch {
 public:
  // The connection from `remote_addr`:`remote_port` to our `local_port`.
  PeerWatch(const std::string& remote_addr, int remote_port, int local_port);

  bool found() const { return fd_ >= 0; }
  // True once the peer has closed the connection; false while it is open or when the socket
  // was not found (then nothing is known: the caller keeps waiting).
  bool Closed() const;

 private:
  int fd_ = -1;
};

}  // namespace semmoe::router::http

#endif  // SEMMOE_ROUTER_HTTP_PEER_WATCH_H_
