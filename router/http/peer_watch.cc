#include "router/http/peer_watch.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <cstdlib>
#include <cstring>

namespace semmoe::router::http {
namespace {

// The port and printable address of a socket address (IPv4 or IPv6).
bool Describe(const sockaddr_storage& a, std::string* addr, int* port) {
  char text[INET6_ADDRSTRLEN] = {0};
  if (a.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&a);
    inet_ntop(AF_INET, &in->sin_addr, text, sizeof text);
    *port = ntohs(in->sin_port);
  } else if (a.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&a);
    inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof text);
    *port = ntohs(in6->sin6_port);
  } else {
    return false;
  }
  *addr = text;
  return true;
}

}  // namespace

PeerWatch::PeerWatch(const std::string& remote_addr, int remote_port, int local_port) {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return;
  while (dirent* e = readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0') continue;
    sockaddr_storage local{}, peer{};
    socklen_t n = sizeof local;
    if (getsockname(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&local), &n) != 0) continue;
    std::string addr;
    int port = 0;
    if (!Describe(local, &addr, &port) || port != local_port) continue;
    n = sizeof peer;
    if (getpeername(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&peer), &n) != 0) continue;
    if (!Describe(peer, &addr, &port) || port != remote_port) continue;
    // IPv4 peers of a dual-stack socket show as ::ffff:a.b.c.d.
    if (addr != remote_addr && addr != "::ffff:" + remote_addr) continue;
    fd_ = static_cast<int>(fd);
    break;
  }
  closedir(dir);
}

bool PeerWatch::Closed() const {
  if (fd_ < 0) return false;
  pollfd p{.fd = fd_, .events = POLLRDHUP, .revents = 0};
  if (poll(&p, 1, 0) <= 0) return false;
  return (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

}  // namespace semmoe::router::http
