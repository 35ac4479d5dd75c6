#include "engine/parallel/group_epoch.h"

#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/rendezvous/testing/local_rendezvous.h"
#include "gtest/gtest.h"

namespace semmoe::engine {
namespace {

std::string FileAddress() {
  const char* tmp = std::getenv("TEST_TMPDIR");
  std::string dir = absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/epoch_XXXXXX");
  EXPECT_NE(mkdtemp(dir.data()), nullptr);
  return "file:" + dir;
}

EpochJoinOptions Join(const std::string& address, int rank, int size, int64_t failed) {
  return {.rendezvous = {.address = address, .rank = rank, .size = size, .prefix = "g",
                         .timeout = absl::Seconds(10)},
          .failed_epoch = failed,
          .round = absl::Seconds(2),
          .deadline = absl::Now() + absl::Seconds(30)};
}

// Every group's all-reduce of rank + 1 over `groups` (one per rank) sums to size(size+1)/2.
void ExpectWorks(std::vector<EpochGroup>& groups) {
  std::vector<std::thread> threads;
  for (EpochGroup& g : groups) {
    threads.emplace_back([&g, n = groups.size()] {
      std::vector<float> data = {g.comm->rank() + 1.0f};
      ASSERT_TRUE(g.comm->AllReduce(absl::MakeSpan(data)).ok());
      EXPECT_EQ(data[0], n * (n + 1) / 2.0f);
    });
  }
  for (std::thread& t : threads) t.join();
}

// Ranks joining at once; each rank's failed epoch in `failed`.
std::vector<EpochGroup> Form(const std::string& address, std::vector<int64_t> failed,
                             std::vector<absl::Duration> delays = {}) {
  const int n = static_cast<int>(failed.size());
  std::vector<EpochGroup> groups(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      if (r < static_cast<int>(delays.size())) absl::SleepFor(delays[r]);
      auto g = JoinEpoch(Join(address, r, n, failed[r]));
      ASSERT_TRUE(g.ok()) << g.status();
      groups[r] = std::move(*g);
    });
  }
  for (std::thread& t : threads) t.join();
  return groups;
}

class GroupEpochTest : public ::testing::TestWithParam<bool> {
 protected:
  std::string Address() {
    if (!GetParam()) return FileAddress();
    return "grpc:" + rendezvous_.target();
  }
  rendezvous::testing::LocalRendezvous rendezvous_;
};

TEST_P(GroupEpochTest, FirstStartFormsEpochZero) {
  const std::string address = Address();
  std::vector<EpochGroup> groups = Form(address, {-1, -1, -1});
  for (const EpochGroup& g : groups) EXPECT_EQ(g.epoch, 0);
  ExpectWorks(groups);
}

TEST_P(GroupEpochTest, SurvivorAndRestartedRankMeetInTheNextEpoch) {
  const std::string address = Address();
  std::vector<EpochGroup> groups = Form(address, {-1, -1});
  groups.clear();  // Both meshes gone (a rank died; the survivor's collective failed).
  // The survivor re-forms at once; the restarted process arrives later.
  std::vector<EpochGroup> again = Form(address, {0, -1}, {absl::ZeroDuration(), absl::Seconds(1)});
  EXPECT_EQ(again[0].epoch, 1);
  EXPECT_EQ(again[1].epoch, 1);
  ExpectWorks(again);
}

TEST_P(GroupEpochTest, RestartedRankFirstStillMeetsTheSurvivor) {
  const std::string address = Address();
  std::vector<EpochGroup> groups = Form(address, {-1, -1});
  groups.clear();
  // The restarted process arrives before the survivor noticed the failure.
  std::vector<EpochGroup> again = Form(address, {0, -1}, {absl::Seconds(1), absl::ZeroDuration()});
  EXPECT_EQ(again[0].epoch, 1);
  EXPECT_EQ(again[1].epoch, 1);
  ExpectWorks(again);
  // And once more: the next failure moves both to epoch 2.
  again.clear();
  std::vector<EpochGroup> third = Form(address, {-1, 1}, {absl::Seconds(3), absl::ZeroDuration()});
  EXPECT_EQ(third[0].epoch, 2);
  EXPECT_EQ(third[1].epoch, 2);
  ExpectWorks(third);
}

TEST_P(GroupEpochTest, MissingRankIsADeadlineNamingIt) {
  EpochJoinOptions o = Join(Address(), 0, 2, -1);
  o.round = absl::Milliseconds(300);
  o.deadline = absl::Now() + absl::Seconds(1);
  std::string missing;
  o.on_round = [&missing](int64_t, const std::string& m) { missing = m; };
  auto g = JoinEpoch(o);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), absl::StatusCode::kDeadlineExceeded) << g.status();
  EXPECT_EQ(missing, "1");
}

TEST_P(GroupEpochTest, StopCancels) {
  EpochJoinOptions o = Join(Address(), 1, 2, 4);
  o.round = absl::Milliseconds(200);
  const absl::Time until = absl::Now() + absl::Milliseconds(500);
  o.stop = [until] { return absl::Now() > until; };
  auto g = JoinEpoch(o);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), absl::StatusCode::kCancelled) << g.status();
  auto next = NextEpoch(o.rendezvous, -1);
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ(*next, 5);  // Rank 1 posted that it is joining epoch 5.
}

INSTANTIATE_TEST_SUITE_P(Stores, GroupEpochTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "grpc" : "file"; });

}  // namespace
}  // namespace semmoe::engine
