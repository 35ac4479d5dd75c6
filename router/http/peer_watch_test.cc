#include "router/http/peer_watch.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gtest/gtest.h"

namespace semmoe::router::http {
namespace {

int Port(int fd, bool peer) {
  sockaddr_in a{};
  socklen_t n = sizeof a;
  peer ? getpeername(fd, reinterpret_cast<sockaddr*>(&a), &n)
       : getsockname(fd, reinterpret_cast<sockaddr*>(&a), &n);
  return ntohs(a.sin_port);
}

TEST(PeerWatchTest, FindsTheConnectionAndSeesThePeerClose) {
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(listen(listener, 4), 0);
  a.sin_port = htons(Port(listener, false));
  const int client = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_EQ(connect(client, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  const int server = accept(listener, nullptr, nullptr);
  ASSERT_GE(server, 0);

  PeerWatch watch("127.0.0.1", Port(client, false), Port(server, false));
  ASSERT_TRUE(watch.found());
  EXPECT_FALSE(watch.Closed());
  ASSERT_EQ(write(client, "GET", 3), 3);  // Data waiting is not a close.
  EXPECT_FALSE(watch.Closed());
  close(client);
  EXPECT_TRUE(watch.Closed());

  PeerWatch nobody("127.0.0.1", 1, Port(server, false));
  EXPECT_FALSE(nobody.found());
  EXPECT_FALSE(nobody.Closed());
  close(server);
  close(listener);
}

}  // namespace
}  // namespace semmoe::router::http
