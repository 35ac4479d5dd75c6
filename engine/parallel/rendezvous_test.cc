#include "engine/parallel/rendezvous.h"

#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/rendezvous/testing/local_rendezvous.h"
#include "gtest/gtest.h"

namespace semmoe::engine {
namespace {

// Three ranks connect through `address` and all-reduce their rank + 1.
void ExpectGroupWorks(const std::string& address) {
  std::vector<std::thread> threads;
  for (int r = 0; r < 3; ++r) {
    threads.emplace_back([&, r] {
      auto comm = ConnectGloo({.address = address, .rank = r, .size = 3, .prefix = "t"});
      ASSERT_TRUE(comm.ok()) << comm.status();
      EXPECT_EQ((*comm)->backend(), "gloo");
      std::vector<float> data = {r + 1.0f};
      ASSERT_TRUE((*comm)->AllReduce(absl::MakeSpan(data)).ok());
      EXPECT_EQ(data[0], 6.0f);
    });
  }
  for (std::thread& t : threads) t.join();
}

TEST(RendezvousTest, FileStoreAddress) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  std::string dir = absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/rdv_XXXXXX");
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  ExpectGroupWorks("file:" + dir);
}

TEST(RendezvousTest, GrpcStoreAddress) {
  rendezvous::testing::LocalRendezvous rendezvous;
  ASSERT_TRUE(rendezvous.ok());
  ExpectGroupWorks("grpc:" + rendezvous.target());
}

TEST(RendezvousTest, BadAddressesAreClearErrors) {
  for (const char* address : {"", "file:", "tcp:1.2.3.4:5", "grpc:nohost", "file:/nonexistent/x"}) {
    auto comm = ConnectGloo({.address = address, .rank = 0, .size = 1});
    ASSERT_FALSE(comm.ok()) << address;
    EXPECT_EQ(comm.status().code(), absl::StatusCode::kInvalidArgument) << address;
  }
  auto comm = ConnectGloo({.address = "file:/tmp", .rank = 3, .size = 2});
  EXPECT_EQ(comm.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace semmoe::engine
