#include "common/work_queue.h"

#include <atomic>
#include <memory>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace semmoe {
namespace {

TEST(WorkQueueTest, RunsEveryTaskOnItsThreadsInPostingOrder) {
  absl::Mutex mu;
  std::vector<int> order;
  absl::Notification done;
  {
    WorkQueue queue(1);  // One thread: the order is the posting order.
    for (int i = 0; i < 100; ++i) {
      queue.Post([&, i] {
        absl::MutexLock lock(&mu);
        order.push_back(i);
        if (i == 99) done.Notify();
      });
    }
    done.WaitForNotification();
  }
  ASSERT_EQ(order.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(order[i], i);
}

TEST(WorkQueueTest, ABlockedTaskDoesNotHoldUpTheOtherThreads) {
  WorkQueue queue(2);
  absl::Notification release, ran;
  queue.Post([&] { release.WaitForNotification(); });
  queue.Post([&] { ran.Notify(); });
  EXPECT_TRUE(ran.WaitForNotificationWithTimeout(absl::Seconds(20)));
  release.Notify();
}

TEST(WorkQueueTest, DestructionDropsTasksNotStarted) {
  std::atomic<int> ran{0};
  auto token = std::make_shared<int>(0);  // Held by the dropped tasks' captures.
  absl::Notification started, release;
  {
    WorkQueue queue(1);
    queue.Post([&] {
      started.Notify();
      release.WaitForNotification();
      ++ran;
    });
    for (int i = 0; i < 10; ++i) queue.Post([&ran, token] { ++ran; });
    started.WaitForNotification();
    EXPECT_EQ(queue.queued(), 10);
    release.Notify();  // The running task ends; the destructor may drop the rest.
  }
  EXPECT_GE(ran.load(), 1);
  EXPECT_EQ(token.use_count(), 1);  // Every task was released, run or not.
}

}  // namespace
}  // namespace semmoe
