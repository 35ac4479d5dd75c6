#include "engine/parallel/gloo_communicator.h"

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "gloo/rendezvous/file_store.h"
#include "gloo/rendezvous/hash_store.h"
#include "gtest/gtest.h"

namespace semmoe::engine {
namespace {

constexpr int kRanks = 4;

// Runs `body(group)` on `ranks` threads, each with its own group joined through one HashStore.
void RunRanks(int ranks, const std::function<void(GlooCommunicator&)>& body,
              absl::Duration timeout = absl::Seconds(30)) {
  gloo::rendezvous::HashStore store;
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      absl::StatusOr<std::unique_ptr<GlooCommunicator>> group =
          GlooCommunicator::Create(store, {.rank = r,
                                           .size = ranks,
                                           .hostname = "127.0.0.1",
                                           .prefix = "test",
                                           .timeout = timeout});
      ASSERT_TRUE(group.ok()) << group.status();
      body(**group);
    });
  }
  for (std::thread& t : threads) t.join();
}

// Rank `src` sends this many elements to rank `dst`: uneven, with zeros, asymmetric.
int64_t Count(int src, int dst) {
  return (src * 3 + dst * 5) % 7 == 0 ? 0 : (src + 2 * dst) % 5 + 1;
}

float Value(int src, int dst, int64_t i) { return 1000.0f * src + 100.0f * dst + i; }

TEST(GlooCommunicatorTest, AllToAllVWithUnevenCounts) {
  RunRanks(kRanks, [](GlooCommunicator& group) {
    const int me = group.rank();
    std::vector<int64_t> send_counts(kRanks), recv_counts(kRanks);
    std::vector<float> send;
    for (int dst = 0; dst < kRanks; ++dst) {
      send_counts[dst] = Count(me, dst);
      for (int64_t i = 0; i < send_counts[dst]; ++i) send.push_back(Value(me, dst, i));
    }
    int64_t total = 0;
    for (int src = 0; src < kRanks; ++src) total += recv_counts[src] = Count(src, me);
    std::vector<float> recv(total, -1.0f);
    ASSERT_TRUE(group.AllToAllV(send, send_counts, absl::MakeSpan(recv), recv_counts).ok());

    size_t at = 0;
    for (int src = 0; src < kRanks; ++src) {
      for (int64_t i = 0; i < recv_counts[src]; ++i) {
        EXPECT_EQ(recv[at++], Value(src, me, i)) << "rank " << me << " from " << src;
      }
    }
    EXPECT_EQ(group.counters()[CollectiveKind::kAllToAll].bytes_sent,
              static_cast<int64_t>((send.size() - send_counts[me]) * sizeof(float)));
    EXPECT_EQ(group.counters()[CollectiveKind::kAllToAll].bytes_received,
              static_cast<int64_t>((recv.size() - recv_counts[me]) * sizeof(float)));
  });
}

// Only pairs that move bytes exchange a message: rounds where each rank sends to one peer (the
// node exchange's stages), to none (an idle group) and to all, interleaved, deliver exactly.
TEST(GlooCommunicatorTest, SparseRoundsInterleavedWithFullOnesStayInStep) {
  RunRanks(kRanks, [](GlooCommunicator& group) {
    const int me = group.rank();
    for (int round = 0; round < 30; ++round) {
      const int pattern = round % 3;  // 0: a ring (one peer), 1: nothing, 2: everyone.
      auto count = [&](int src, int dst) -> int64_t {
        if (pattern == 1) return 0;
        if (pattern == 0) return dst == (src + 1 + round % (kRanks - 1)) % kRanks ? round + 1 : 0;
        return 1 + (src + dst + round) % 3;
      };
      std::vector<int64_t> send_counts(kRanks), recv_counts(kRanks);
      std::vector<float> send;
      for (int dst = 0; dst < kRanks; ++dst) {
        send_counts[dst] = count(me, dst);
        for (int64_t i = 0; i < send_counts[dst]; ++i) send.push_back(Value(me, dst, i + round));
      }
      int64_t total = 0;
      for (int src = 0; src < kRanks; ++src) total += recv_counts[src] = count(src, me);
      std::vector<float> recv(total, -1.0f);
      ASSERT_TRUE(group.AllToAllV(send, send_counts, absl::MakeSpan(recv), recv_counts).ok())
          << "round " << round;
      size_t at = 0;
      for (int src = 0; src < kRanks; ++src) {
        for (int64_t i = 0; i < recv_counts[src]; ++i) {
          ASSERT_EQ(recv[at++], Value(src, me, i + round)) << "round " << round << " from " << src;
        }
      }
    }
  });
}

// Three parts of different types and counts (the dispatch's rows, ids and weights) in one call:
// each part arrives as its own AllToAllV would deliver it, and it is one all-to-all.
TEST(GlooCommunicatorTest, AllToAllVPartsDeliverEachPartAsItsOwnExchange) {
  RunRanks(kRanks, [](GlooCommunicator& group) {
    const int me = group.rank();
    std::vector<int64_t> rows_out(kRanks), rows_in(kRanks), ids_out(kRanks), ids_in(kRanks);
    std::vector<float> rows;
    std::vector<int32_t> ids;
    for (int dst = 0; dst < kRanks; ++dst) {
      rows_out[dst] = Count(me, dst) * 3;
      ids_out[dst] = Count(dst, me);  // Another shape: the transpose of the counts.
      for (int64_t i = 0; i < rows_out[dst]; ++i) rows.push_back(Value(me, dst, i));
      for (int64_t i = 0; i < ids_out[dst]; ++i) ids.push_back(-(100 * me + 10 * dst + i));
    }
    int64_t rows_total = 0, ids_total = 0;
    for (int src = 0; src < kRanks; ++src) {
      rows_total += rows_in[src] = Count(src, me) * 3;
      ids_total += ids_in[src] = Count(me, src);
    }
    std::vector<float> rows_got(rows_total, -1.0f), empty_got;
    std::vector<int32_t> ids_got(ids_total, 7);
    const std::vector<int64_t> zeros(kRanks, 0);
    using Part = Communicator::AllToAllPart;
    const Part parts[] = {
        Part::Of(absl::MakeConstSpan(rows), rows_out, absl::MakeSpan(rows_got), rows_in),
        Part::Of(absl::Span<const float>(), zeros, absl::MakeSpan(empty_got), zeros),
        Part::Of(absl::MakeConstSpan(ids), ids_out, absl::MakeSpan(ids_got), ids_in)};
    ASSERT_TRUE(group.AllToAllVParts(parts).ok());

    size_t r = 0, d = 0;
    for (int src = 0; src < kRanks; ++src) {
      for (int64_t i = 0; i < rows_in[src]; ++i) {
        EXPECT_EQ(rows_got[r++], Value(src, me, i)) << "rank " << me << " from " << src;
      }
      for (int64_t i = 0; i < ids_in[src]; ++i) {
        EXPECT_EQ(ids_got[d++], -(100 * src + 10 * me + i)) << "rank " << me << " from " << src;
      }
    }
    const CollectiveCounters& c = group.counters()[CollectiveKind::kAllToAll];
    EXPECT_EQ(c.calls, 1);
    EXPECT_EQ(c.bytes_sent, static_cast<int64_t>((rows.size() - rows_out[me]) * sizeof(float) +
                                                 (ids.size() - ids_out[me]) * sizeof(int32_t)));
    EXPECT_EQ(c.bytes_received,
              static_cast<int64_t>((rows_got.size() - rows_in[me]) * sizeof(float) +
                                   (ids_got.size() - ids_in[me]) * sizeof(int32_t)));

    // A part whose counts do not match its buffer is refused by its index before anything moves
    // (every rank refuses, so the group stays usable).
    const std::vector<int64_t> wrong(kRanks, 1);
    const Part bad[] = {parts[0],
                        Part::Of(absl::MakeConstSpan(ids), wrong, absl::MakeSpan(ids_got), ids_in)};
    const absl::Status refused = group.AllToAllVParts(bad);
    EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(refused.message().find("part 1 send"), std::string::npos) << refused;
    EXPECT_TRUE(group.AllToAllVParts(parts).ok());
  });
}

TEST(GlooCommunicatorTest, ReduceScatterVsEachSegmentInRankOrder) {
  const std::vector<int64_t> counts = {3, 0, 5, 2};
  RunRanks(kRanks, [&](GlooCommunicator& group) {
    const int me = group.rank();
    std::vector<float> send;
    for (int seg = 0; seg < kRanks; ++seg) {
      for (int64_t i = 0; i < counts[seg]; ++i) send.push_back((me + 1) * 0.5f + seg * 10 + i);
    }
    std::vector<float> recv(counts[me]);
    ASSERT_TRUE(group.ReduceScatterV(send, counts, absl::MakeSpan(recv)).ok());
    for (int64_t i = 0; i < counts[me]; ++i) {
      // Sum over ranks r of (r + 1) / 2 + 10 me + i, r = 0..3: 5 + 4 (10 me + i).
      EXPECT_FLOAT_EQ(recv[i], 5.0f + 4.0f * (me * 10 + i)) << "rank " << me << " elem " << i;
    }
  });
}

TEST(GlooCommunicatorTest, AllGatherVCollectsEveryRankInOrder) {
  const std::vector<int64_t> counts = {1, 4, 0, 2};
  RunRanks(kRanks, [&](GlooCommunicator& group) {
    const int me = group.rank();
    std::vector<float> send(counts[me]);
    for (int64_t i = 0; i < counts[me]; ++i) send[i] = me * 10.0f + i;
    std::vector<float> recv(7, -1.0f);
    ASSERT_TRUE(group.AllGatherV(send, counts, absl::MakeSpan(recv)).ok());
    const std::vector<float> expected = {0, 10, 11, 12, 13, 30, 31};
    EXPECT_EQ(recv, expected) << "rank " << me;
    // Built on the all-to-all, but counted as what it is.
    EXPECT_EQ(group.counters()[CollectiveKind::kAllGather].calls, 1);
    EXPECT_EQ(group.counters()[CollectiveKind::kAllToAll].calls, 0);
  });
}

TEST(GlooCommunicatorTest, TheWaitForALatePeerCountsInItsKindsSeconds) {
  RunRanks(kRanks, [](GlooCommunicator& group) {
    if (group.rank() == 0) absl::SleepFor(absl::Milliseconds(60));
    std::vector<int32_t> mine = {group.rank()}, all(kRanks);
    ASSERT_TRUE(
        group.AllGatherV(absl::MakeConstSpan(mine), std::vector<int64_t>(kRanks, 1),
                         absl::MakeSpan(all))
            .ok());
    const CommCounters& c = group.counters();
    if (group.rank() != 0) {
      EXPECT_GE(c[CollectiveKind::kAllGather].seconds, 0.05);
    }
    EXPECT_GT(c[CollectiveKind::kAllGather].seconds, 0);
    EXPECT_EQ(c[CollectiveKind::kAllToAll].seconds, 0);
    EXPECT_EQ(c[CollectiveKind::kBroadcast].seconds, 0);
  });
}

TEST(GlooCommunicatorTest, AllReduceAndBarrier) {
  RunRanks(kRanks, [](GlooCommunicator& group) {
    std::vector<float> data = {1.0f * group.rank(), 1.0f};
    ASSERT_TRUE(group.AllReduce(absl::MakeSpan(data)).ok());
    EXPECT_EQ(data, (std::vector<float>{6.0f, 4.0f}));
    ASSERT_TRUE(group.Barrier().ok());
    EXPECT_EQ(group.counters()[CollectiveKind::kAllReduce].calls, 1);
    EXPECT_EQ(group.counters()[CollectiveKind::kBarrier].calls, 1);
  });
}

TEST(GlooCommunicatorTest, BroadcastAndTypedExchangesCountBytes) {
  RunRanks(kRanks, [](GlooCommunicator& group) {
    const int me = group.rank();
    std::vector<int64_t> data = {me == 2 ? 42 : -1, me == 2 ? 7 : -1};
    ASSERT_TRUE(group.Broadcast(absl::MakeSpan(data), /*root=*/2).ok());
    EXPECT_EQ(data, (std::vector<int64_t>{42, 7}));
    const CollectiveCounters& b = group.counters()[CollectiveKind::kBroadcast];
    EXPECT_EQ(b.bytes_sent, me == 2 ? 16 * (kRanks - 1) : 0);
    EXPECT_EQ(b.bytes_received, me == 2 ? 0 : 16);
    EXPECT_EQ(group.Broadcast(absl::MakeSpan(data), kRanks).code(),
              absl::StatusCode::kInvalidArgument);

    // int32 all-to-all-v: one element to every rank, value 10·src + dst.
    std::vector<int32_t> send(kRanks), recv(kRanks);
    for (int d = 0; d < kRanks; ++d) send[d] = 10 * me + d;
    const std::vector<int64_t> ones(kRanks, 1);
    ASSERT_TRUE(group.AllToAllV(absl::MakeConstSpan(send), ones, absl::MakeSpan(recv), ones).ok());
    for (int s = 0; s < kRanks; ++s) EXPECT_EQ(recv[s], 10 * s + me);
    EXPECT_EQ(group.counters()[CollectiveKind::kAllToAll].bytes_sent, 4 * (kRanks - 1));
    EXPECT_EQ(group.counters().bytes_sent(), 4 * (kRanks - 1) + (me == 2 ? 16 * (kRanks - 1) : 0));
  });
}

TEST(GlooCommunicatorTest, LargeTransfersAfterReduceScatterStayCorrect) {
  // 1 MiB per rank after a reduce-scatter: the path that Gloo's legacy classes slow down.
  RunRanks(kRanks, [](GlooCommunicator& group) {
    std::vector<float> small(kRanks, 1.0f), out(1);
    ASSERT_TRUE(group.ReduceScatterV(small, {1, 1, 1, 1}, absl::MakeSpan(out)).ok());
    const int64_t per_peer = (1 << 18) / kRanks;
    std::vector<float> send(per_peer * kRanks), recv(per_peer * kRanks);
    for (size_t i = 0; i < send.size(); ++i) send[i] = group.rank() + i % 1000;
    const std::vector<int64_t> counts(kRanks, per_peer);
    ASSERT_TRUE(group.AllToAllV(send, counts, absl::MakeSpan(recv), counts).ok());
    for (int src = 0; src < kRanks; ++src) {
      const size_t i = src * per_peer + 7;
      EXPECT_EQ(recv[i], src + (group.rank() * per_peer + 7) % 1000);
    }
  });
}

TEST(GlooCommunicatorTest, BadArgumentsAreErrorsNotHangs) {
  RunRanks(2, [](GlooCommunicator& group) {
    std::vector<float> buf(4);
    EXPECT_EQ(group.AllToAllV(buf, {1, 1}, absl::MakeSpan(buf), {2, 2}).code(),
              absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(group.AllToAllV(buf, {4}, absl::MakeSpan(buf), {2, 2}).code(),
              absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(group.AllToAllV(buf, {5, -1}, absl::MakeSpan(buf), {2, 2}).code(),
              absl::StatusCode::kInvalidArgument);
    std::vector<float> one(1);
    EXPECT_EQ(group.ReduceScatterV(buf, {2, 2}, absl::MakeSpan(one)).code(),
              absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(group.AllGatherV(one, {2, 2}, absl::MakeSpan(buf)).code(),
              absl::StatusCode::kInvalidArgument);
  });
}

TEST(GlooCommunicatorTest, APeerThatNeverArrivesTimesOutAndBreaksTheGroup) {
  std::promise<void> rank0_done;
  std::shared_future<void> done = rank0_done.get_future().share();
  RunRanks(
      2,
      [&](GlooCommunicator& group) {
        if (group.rank() == 1) {  // Skips the collective; leaves once rank 0 has seen the error.
          done.wait();
          return;
        }
        std::vector<float> buf(2);
        const absl::Status status = group.AllToAllV(buf, {1, 1}, absl::MakeSpan(buf), {1, 1});
        EXPECT_FALSE(status.ok());
        EXPECT_TRUE(status.code() == absl::StatusCode::kDeadlineExceeded ||
                    status.code() == absl::StatusCode::kUnavailable)
            << status;
        EXPECT_EQ(group.Barrier().code(), absl::StatusCode::kFailedPrecondition);
        rank0_done.set_value();
      },
      absl::Milliseconds(300));
}

TEST(GlooCommunicatorTest, FileStoreRendezvousForOneHost) {
  // Gloo's FileStore refuses keys left by an earlier run: one fresh folder per run.
  const char* tmp = std::getenv("TEST_TMPDIR");
  char pattern[512];
  std::snprintf(pattern, sizeof(pattern), "%s/gloo_store_XXXXXX", tmp != nullptr ? tmp : "/tmp");
  ASSERT_NE(mkdtemp(pattern), nullptr);
  std::vector<std::thread> threads;
  for (int r = 0; r < 3; ++r) {
    threads.emplace_back([&, r] {
      // One store object per rank, as separate processes would have: a shared FileStore object
      // is not thread-safe (a shared one crashed about once in 50 runs).
      gloo::rendezvous::FileStore store(pattern);
      auto group = GlooCommunicator::Create(store, {.rank = r, .size = 3, .prefix = "file"});
      ASSERT_TRUE(group.ok()) << group.status();
      std::vector<float> data = {1.0f};
      ASSERT_TRUE((*group)->AllReduce(absl::MakeSpan(data)).ok());
      EXPECT_EQ(data[0], 3.0f);
    });
  }
  for (std::thread& t : threads) t.join();
}

TEST(GlooCommunicatorTest, RejectsBadOptions) {
  gloo::rendezvous::HashStore store;
  EXPECT_EQ(GlooCommunicator::Create(store, {.rank = 2, .size = 2}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(GlooCommunicator::Create(store, {.rank = 0, .size = 0}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(GlooCommunicator::Create(store, {.rank = 0, .size = 2, .timeout = absl::ZeroDuration()})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(GlooCommunicatorTest, MissingPeerTimesOutWithAStatus) {
  gloo::rendezvous::HashStore store;
  absl::StatusOr<std::unique_ptr<GlooCommunicator>> group = GlooCommunicator::Create(
      store, {.rank = 0, .size = 2, .prefix = "lonely", .timeout = absl::Milliseconds(300)});
  ASSERT_FALSE(group.ok());
  EXPECT_NE(group.status().message().find("rendezvous"), absl::string_view::npos) << group.status();
}

}  // namespace
}  // namespace semmoe::engine
