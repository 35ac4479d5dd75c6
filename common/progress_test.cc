#include "common/progress.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "common/testing/fake_clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace semmoe {
namespace {

using ::testing::HasSubstr;

ProgressOptions Options(int64_t total) {
  ProgressOptions o;
  o.label = "engine trace";
  o.unit = "prompts";
  o.total = total;
  return o;
}

TEST(ProgressTest, LineHasDoneTotalRateAndEta) {
  EXPECT_EQ(Progress::Line(Options(1500), 300, absl::Seconds(20)),
            "engine trace: 300/1500 prompts (20.0%), 15.0 prompts/s, ETA 1m20s");
  EXPECT_EQ(Progress::Line(Options(1500), 1500, absl::Seconds(3725)),
            "engine trace: 1500/1500 prompts (100.0%), 0.4 prompts/s, took 1h2m5s");
  EXPECT_EQ(Progress::Line(Options(0), 7, absl::Seconds(2)),
            "engine trace: 7 prompts, 3.5 prompts/s");  // Unknown total: no ETA.
  EXPECT_EQ(Progress::Line(Options(10), 0, absl::ZeroDuration()),
            "engine trace: 0/10 prompts (0.0%), 0.0 prompts/s");
}

// Reads what a Progress wrote into a temporary FILE.
std::string Contents(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string out;
  char buf[256];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  return out;
}

TEST(ProgressTest, RedrawsAtMostEveryIntervalAndEndsWithANewline) {
  FakeClock clock;
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  ProgressOptions o = Options(4);
  o.out = f;
  o.clock = &clock;
  o.interval = absl::Seconds(1);
  {
    Progress p(o);
    p.Add();  // Draws (first time).
    p.Add();  // Same instant: no redraw.
    clock.Advance(absl::Seconds(2));
    p.Add();  // Redraws.
    p.Add();
  }  // Finish: the final line.
  const std::string out = Contents(f);
  std::fclose(f);
  EXPECT_EQ(std::count(out.begin(), out.end(), '\r'), 3) << out;
  EXPECT_THAT(out, HasSubstr("1/4 prompts"));
  EXPECT_THAT(out, HasSubstr("3/4 prompts"));
  EXPECT_THAT(out, HasSubstr("4/4 prompts (100.0%), 2.0 prompts/s, took 2s\x1b[K\n"));
  EXPECT_EQ(out.find("2/4"), std::string::npos);
  EXPECT_EQ(out.back(), '\n');
}

TEST(ProgressTest, DetailShowsWhatRunsNowAndRedrawsAtOnce) {
  EXPECT_EQ(Progress::Line(Options(5), 1, absl::Seconds(2), "solving"),
            "engine trace: 1/5 prompts (20.0%), 0.5 prompts/s, ETA 8s [solving]");
  FakeClock clock;
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  ProgressOptions o = Options(2);
  o.out = f;
  o.clock = &clock;
  o.interval = absl::Hours(1);
  {
    Progress p(o);
    p.SetDetail("loading traces");  // Drawn although the interval has not passed.
    p.Add();
    p.SetDetail("solving");
    p.Add();
  }
  const std::string out = Contents(f);
  std::fclose(f);
  EXPECT_THAT(out, HasSubstr("0/2 prompts (0.0%), 0.0 prompts/s [loading traces]"));
  EXPECT_THAT(out, HasSubstr("1/2 prompts (50.0%), 0.0 prompts/s [solving]"));
  // The last line says it took, with no stale detail.
  EXPECT_THAT(out, HasSubstr("2/2 prompts (100.0%), 0.0 prompts/s, took 0s\x1b[K\n"));
}

TEST(ProgressTest, DisabledWritesNothing) {
  std::FILE* f = std::tmpfile();
  ProgressOptions o = Options(3);
  o.out = f;
  o.enabled = false;
  {
    Progress p(o);
    p.Add(3);
    p.Finish();
  }
  EXPECT_EQ(Contents(f), "");
  std::fclose(f);
  EXPECT_FALSE(ProgressEnabled(/*quiet=*/true));
}

TEST(ProgressTest, AddFromManyThreadsCountsEverything) {
  FakeClock clock;
  std::FILE* f = std::tmpfile();
  ProgressOptions o = Options(4000);
  o.out = f;
  o.clock = &clock;
  Progress p(o);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) p.Add();
    });
  }
  for (auto& t : threads) t.join();
  p.Finish();
  p.Finish();  // Once only.
  const std::string out = Contents(f);
  std::fclose(f);
  EXPECT_THAT(out, HasSubstr("4000/4000 prompts"));
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1);
}

}  // namespace
}  // namespace semmoe
