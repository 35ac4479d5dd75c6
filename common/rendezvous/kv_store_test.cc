#include "common/rendezvous/kv_store.h"

#include <thread>

#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace semmoe::rendezvous {
namespace {

TEST(KvStoreTest, SetReplacesAndTracksBytes) {
  KvStore store;
  ASSERT_TRUE(store.Set("k", "abc").ok());
  EXPECT_EQ(store.total_bytes(), 4u);
  ASSERT_TRUE(store.Set("k", "a").ok());
  EXPECT_EQ(store.total_bytes(), 2u);
  auto values = store.Get({"k"}, absl::ZeroDuration());
  ASSERT_TRUE(values.ok());
  EXPECT_EQ((*values)[0], "a");
}

TEST(KvStoreTest, BoundsAreEnforced) {
  KvStore store(
      {.max_key_bytes = 4, .max_value_bytes = 8, .max_total_bytes = 20, .max_keys_per_get = 2});
  EXPECT_EQ(store.Set("", "x").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store.Set("toolong", "x").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store.Set("k", "123456789").code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(store.Set("a", "12345678").ok());
  ASSERT_TRUE(store.Set("b", "12345678").ok());
  EXPECT_EQ(store.Set("c", "12").code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(store.Set("a", "1").ok());  // Replacing frees room.
  EXPECT_EQ(store.Get({"a", "b", "a"}, absl::ZeroDuration()).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(KvStoreTest, GetWaitsForAllKeysOrTimesOut) {
  KvStore store;
  std::thread writer([&] {
    absl::SleepFor(absl::Milliseconds(50));
    EXPECT_TRUE(store.Set("x", "1").ok());
    absl::SleepFor(absl::Milliseconds(50));
    EXPECT_TRUE(store.Set("y", "2").ok());
  });
  auto values = store.Get({"x", "y"}, absl::Seconds(10));
  writer.join();
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_EQ(*values, (std::vector<std::string>{"1", "2"}));

  auto missing = store.Get({"x", "z"}, absl::Milliseconds(50));
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_NE(missing.status().message().find("z"), absl::string_view::npos);
  EXPECT_EQ(store.Get({"z"}, absl::ZeroDuration()).status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace semmoe::rendezvous
