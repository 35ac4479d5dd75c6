#include "planner/autopilot/autopilot.h"

#include <cmath>
#include <functional>
#include <sstream>

#include "common/file.h"
#include "common/testing/fake_clock.h"
#include "gtest/gtest.h"
#include "planner/cli/commands.h"
#include "planner/cli/testing/topic_trace.h"
#include "planner/store/testing/temp_database_path.h"

namespace semmoe::planner {
namespace {

using testing::WriteTopicTrace;

// A served version planned from topic traffic, and a live window the test rewrites: the same
// topics (steady), then every topic on another topic's experts (a shift).
class AutopilotTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = TempDatabasePath("autopilot.db");
    std::ostringstream out;
    auto v1 = cli::Build(
        {.db = db_, .model = "m", .traces = {WriteTopicTrace("profile.trace", 1)}, .devices = 4},
        out);
    ASSERT_TRUE(v1.ok()) << v1.status();
    v1_ = *v1;
    ASSERT_TRUE(cli::Activate(db_, v1_, out).ok());
    live_ = JoinPath(std::getenv("TEST_TMPDIR"), "live.trace");
  }
  // The ranks' sampled routing: `requests` of 12 tokens.
  void Live(uint64_t seed, int shift, int requests = 80, int layer1_shift = 0) {
    const std::string written = WriteTopicTrace("live-" + std::to_string(seed) + ".trace", seed,
                                                shift, requests, 16, 4, layer1_shift);
    ASSERT_TRUE(WriteFileAtomically(live_, *ReadFile(written)).ok());
  }
  std::unique_ptr<Autopilot> Make() {
    auto a = Autopilot::Create({.db = db_,
                                .model = "m",
                                .traces = {live_},
                                .min_window_tokens = 200,
                                .min_interval = absl::Minutes(5),
                                .drift_confirm = absl::ZeroDuration(),
                                .clock = &clock_});
    EXPECT_TRUE(a.ok()) << a.status();
    return a.ok() ? std::move(*a) : nullptr;
  }
  int64_t Active() {
    auto store = PlacementStore::Open(db_);
    return (*(*store)->Active("m"))->version;
  }

  FakeClock clock_{absl::FromUnixSeconds(1'800'000'000)};
  std::string db_, live_;
  int64_t v1_ = 0;
};

TEST_F(AutopilotTest, ItWaitsForTrafficStaysOnSteadyTrafficAndReplansAShift) {
  auto a = Make();
  ASSERT_NE(a, nullptr);
  auto d = a->Tick();  // No trace written yet.
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->action, "wait") << d->reason;
  EXPECT_NE(d->reason.find("no live routing traces"), std::string::npos) << d->reason;

  Live(2, 0, /*requests=*/2);  // 24 tokens: too few to plan from.
  d = a->Tick();
  EXPECT_EQ(d->action, "wait") << d->reason;
  EXPECT_NE(d->reason.find("at least 200 tokens"), std::string::npos) << d->reason;

  Live(3, 0);
  for (int i = 0; i < 3; ++i) {
    d = a->Tick();
    EXPECT_EQ(d->action, "steady") << d->reason;
    clock_.Advance(absl::Minutes(10));
  }
  EXPECT_EQ(Active(), v1_);

  Live(4, 1);  // Every topic now uses another topic's experts.
  d = a->Tick();
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->action, "rollout") << d->reason;
  EXPECT_EQ(d->served_version, v1_);
  EXPECT_GT(d->candidate_version, v1_);
  EXPECT_EQ(Active(), d->candidate_version);
  // Within the default budget: a quarter of 2 layers × 16 experts.
  EXPECT_GE(d->moved_experts, 0);
  EXPECT_LE(d->moved_experts, 8);
  const auto figures = nlohmann::json::parse(d->figures_json);
  EXPECT_GT(figures["check_lar_candidate"].get<double>(),
            figures["check_lar_served"].get<double>());
  EXPECT_LT(figures["lar_drift"].get<double>(), -0.03);
  const int64_t rolled_out = d->candidate_version;

  // New traffic of the shifted kind: the rollout passes its check and the cluster stays.
  Live(5, 1);
  d = a->Tick();
  EXPECT_NE(d->action, "rollback") << d->reason;
  EXPECT_EQ(Active(), rolled_out);
  EXPECT_TRUE(nlohmann::json::parse(d->figures_json).value("probation_passed", false));
}

TEST_F(AutopilotTest, ARolloutThatServesWorseIsRolledBackAfterARestart) {
  Live(4, 1);
  auto a = Make();
  auto d = a->Tick();
  ASSERT_EQ(d->action, "rollout") << d->reason;
  const int64_t rolled_out = d->candidate_version;
  a.reset();  // The planner restarts mid-loop.

  auto again = Make();
  ASSERT_NE(again, nullptr);
  Live(6, 0);  // Traffic goes back to what version 1 was planned for.
  d = again->Tick();
  EXPECT_EQ(d->action, "rollback") << d->reason;
  EXPECT_EQ(d->candidate_version, v1_);
  EXPECT_EQ(Active(), v1_);
  EXPECT_NE(d->reason.find(absl::StrCat("version ", rolled_out)), std::string::npos);
  // And it does not flap: the drift is gone; and within the minimum interval nothing moves.
  d = again->Tick();
  EXPECT_NE(d->action, "rollout") << d->reason;
  EXPECT_EQ(Active(), v1_);
}

TEST_F(AutopilotTest, TheMinimumIntervalHoldsAndEveryDecisionIsARow) {
  Live(4, 1);
  auto a = Make();
  ASSERT_EQ(a->Tick()->action, "rollout");
  Live(7, 2);  // Another shift at once.
  auto d = a->Tick();
  EXPECT_EQ(d->action, "wait") << d->reason;
  EXPECT_NE(d->reason.find("minimum 5m"), std::string::npos) << d->reason;
  auto store = PlacementStore::Open(db_);
  AutopilotStore decisions(**store);
  auto rows = decisions.Latest("m", 10);
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[0].action, "wait");
  EXPECT_EQ((*rows)[1].action, "rollout");
}

// A candidate that gains too little is refused and stays a draft; the next one waits for the
// minimum interval, so a shift that no plan helps does not fill the database with drafts.
TEST_F(AutopilotTest, ARefusedCandidateIsNotRebuiltBeforeTheMinimumInterval) {
  Live(4, 1);
  auto a = Autopilot::Create({.db = db_,
                              .model = "m",
                              .traces = {live_},
                              .min_window_tokens = 200,
                              .min_interval = absl::Minutes(5),
                              .min_gain = 1.0,  // More than any LAR can gain.
                              .drift_confirm = absl::ZeroDuration(),
                              .clock = &clock_});
  ASSERT_TRUE(a.ok()) << a.status();
  auto d = (*a)->Tick();
  ASSERT_EQ(d->action, "refuse") << d->reason;
  EXPECT_GT(d->candidate_version, v1_);
  EXPECT_EQ(Active(), v1_);
  d = (*a)->Tick();
  EXPECT_EQ(d->action, "wait") << d->reason;
  EXPECT_NE(d->reason.find("refused candidate"), std::string::npos) << d->reason;
  clock_.Advance(absl::Minutes(6));
  EXPECT_EQ((*a)->Tick()->action, "refuse");
  auto store = PlacementStore::Open(db_);
  EXPECT_EQ((*store)->List("m")->size(), 3u);  // Version 1 and two drafts.
}

// A rollout that spent the whole expert budget is an unfinished migration: on new traffic it goes
// on, a budget per step, until a candidate gains too little — then once more on a window that has
// turned over (the refused one may have been noise; the retry survives a restart); then the loop
// is steady.
TEST_F(AutopilotTest, AMigrationThatSpentItsBudgetGoesOnUntilNothingGainsEnough) {
  Live(4, 0, 80, /*layer1_shift=*/1);  // Layer 1's experts must move: no relabelling undoes it.
  const AutopilotOptions options{.db = db_,
                                 .model = "m",
                                 .traces = {live_},
                                 .min_window_tokens = 200,
                                 .min_interval = absl::Minutes(5),
                                 .max_moved_experts = 4,
                                 .drift_confirm = absl::ZeroDuration(),
                                 .clock = &clock_};
  auto a = Autopilot::Create(options);
  ASSERT_TRUE(a.ok()) << a.status();
  auto d = (*a)->Tick();
  ASSERT_EQ(d->action, "rollout") << d->reason;
  EXPECT_EQ(d->moved_experts, 4);
  EXPECT_TRUE(nlohmann::json::parse(d->figures_json).value("budget_spent", false));
  clock_.Advance(absl::Minutes(6));
  d = (*a)->Tick();  // The same window: nothing new to plan from.
  EXPECT_EQ(d->action, "steady") << d->reason;

  int continued = 0, retried = 0, restarted = 0;
  bool ended = false;  // A refusal with no retry left.
  uint64_t seed = 10;
  for (; seed < 60 && !ended; ++seed) {
    clock_.Advance(absl::Minutes(6));
    Live(seed, 0, 80, 1);  // More of the shifted traffic.
    d = (*a)->Tick();
    const nlohmann::json figures = nlohmann::json::parse(d->figures_json);
    if (d->action == "rollout") {
      ++continued;
      EXPECT_TRUE(d->reason.find("spent the whole expert budget: the migration goes on") !=
                      std::string::npos ||
                  d->reason.find("tried again on this one") != std::string::npos)
          << d->reason;
      EXPECT_LE(d->moved_experts, 4);
    } else if (d->action == "refuse" && figures.value("migration_retry", false)) {
      ++retried;
      EXPECT_EQ(figures.value("retries_left", -1), 0);
      EXPECT_NE(d->reason.find("tried again once the window has turned over"), std::string::npos)
          << d->reason;
      // Not on the same window, however long it waits...
      clock_.Advance(absl::Minutes(6));
      EXPECT_EQ((*a)->Tick()->action, "steady");
      // ... and the retry outlives a restart of the planner.
      if (restarted++ == 0) {
        a = Autopilot::Create(options);
        ASSERT_TRUE(a.ok()) << a.status();
      }
    } else if (d->action == "refuse") {
      ended = true;
      EXPECT_GE(retried, 1) << "the migration ended without its retry: " << d->reason;
    } else {
      EXPECT_EQ(d->action, "steady") << d->reason;
    }
  }
  EXPECT_GE(continued, 1);
  EXPECT_GE(retried, 1);
  ASSERT_TRUE(ended);
  clock_.Advance(absl::Minutes(6));
  Live(seed + 100, 0, 80, 1);
  d = (*a)->Tick();
  EXPECT_EQ(d->action, "steady") << d->reason;
}

TEST_F(AutopilotTest, BadOptionsAndUnreadableTracesAreReported) {
  EXPECT_FALSE(Autopilot::Create({.db = db_, .model = "m"}).ok());  // No traces.
  EXPECT_FALSE(
      Autopilot::Create({.db = db_, .model = "m", .traces = {live_}, .min_gain = -1}).ok());
  EXPECT_FALSE(Autopilot::Create({.db = db_, .model = "nope", .traces = {live_}}).ok());
  ASSERT_TRUE(WriteFileAtomically(live_, "not a trace").ok());
  auto a = Make();
  auto d = a->Tick();
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->action, "error");
  EXPECT_NE(d->reason.find("live.trace"), std::string::npos) << d->reason;
  EXPECT_EQ(Active(), v1_);
}

// With the engines' reports (ServingBoard): a rollout is checked where it serves.
class ServedCheckTest : public AutopilotTest {
 protected:
  std::unique_ptr<Autopilot> MakeServed() {
    auto a = Autopilot::Create({.db = db_,
                                .model = "m",
                                .traces = {live_},
                                .min_window_tokens = 200,
                                .min_interval = absl::Minutes(5),
                                .drift_confirm = absl::Seconds(30),
                                .serving = &board_,
                                .min_served_requests = 16,
                                .clock = &clock_});
    EXPECT_TRUE(a.ok()) << a.status();
    return a.ok() ? std::move(*a) : nullptr;
  }
  // The one group reports: serving `version`, after `requests` more requests of which `failed`
  // failed, and `local` of every 100 more activations local; each completed request 10 output
  // tokens at `ms_per_token`.
  void Serve(int64_t version, int requests, int failed, int local, int64_t refused = 0,
             double ms_per_token = 50) {
    state_.serving_version = version;
    state_.refused_version = refused;
    state_.refusal = refused > 0 ? "rank 1: the checkpoint lacks expert 3" : "";
    state_.completed += requests - failed;
    state_.failed += failed;
    state_.local_activations += local;
    state_.remote_activations += 100 - local;
    state_.output_tokens += 10 * (requests - failed);
    state_.request_seconds += 10 * (requests - failed) * ms_per_token / 1000;
    state_.at = clock_.Now();
    ASSERT_TRUE(board_.Report(state_).ok());
  }
  // Steady traffic, then a shift served by version 1 for the confirmation time, then the
  // rollout: its version.
  int64_t RollOutAfterAShift(Autopilot& a, int local_before = 40) {
    Serve(v1_, 20, 0, 80);
    Live(4, 1);
    auto d = a.Tick();
    EXPECT_EQ(d->action, "wait") << d->reason;
    EXPECT_NE(d->reason.find("seen for 0 s of the 30 s a drift must last"), std::string::npos)
        << d->reason;
    clock_.Advance(absl::Seconds(31));
    Serve(v1_, 20, 0, local_before);  // Version 1 on the shifted traffic.
    d = a.Tick();
    EXPECT_EQ(d->action, "rollout") << d->reason;
    return d->candidate_version;
  }

  ServingBoard board_;
  ServingState state_{.model = "m", .group = "127.0.0.1:7001", .ranks = 4};
};

TEST_F(ServedCheckTest, AVersionTheGroupRefusesIsRolledBackWithTheGroupsReason) {
  auto a = MakeServed();
  ASSERT_NE(a, nullptr);
  const int64_t v = RollOutAfterAShift(*a);
  ASSERT_EQ(Active(), v);
  clock_.Advance(absl::Seconds(2));
  Serve(v1_, 4, 0, 40, /*refused=*/v);
  auto d = a->Tick();
  EXPECT_EQ(d->action, "rollback") << d->reason;
  EXPECT_EQ(d->candidate_version, v1_);
  EXPECT_EQ(Active(), v1_);
  EXPECT_NE(d->reason.find(absl::StrCat("group 127.0.0.1:7001 refused version ", v,
                                        " (rank 1: the checkpoint lacks expert 3)")),
            std::string::npos)
      << d->reason;
  // Within the minimum interval nothing is built again, however long the shift lasts.
  clock_.Advance(absl::Minutes(1));
  d = a->Tick();
  EXPECT_EQ(d->action, "wait") << d->reason;
  EXPECT_EQ(Active(), v1_);
}

TEST_F(ServedCheckTest, ARolloutServingAtALowerLarThanItsPredecessorIsRolledBack) {
  auto a = MakeServed();
  const int64_t v = RollOutAfterAShift(*a, /*local_before=*/60);
  clock_.Advance(absl::Seconds(2));
  Serve(v, 2, 0, 60);  // The group switched.
  auto d = a->Tick();
  EXPECT_NE(d->action, "rollback") << d->reason;
  EXPECT_TRUE(nlohmann::json::parse(d->figures_json).value("served_switched", false));
  clock_.Advance(absl::Seconds(2));
  Serve(v, 10, 0, 50);  // 10 requests since the switch: too few to judge.
  EXPECT_NE(a->Tick()->action, "rollback");
  EXPECT_EQ(Active(), v);
  clock_.Advance(absl::Seconds(2));
  Serve(v, 10, 0, 50);
  d = a->Tick();
  EXPECT_EQ(d->action, "rollback") << d->reason;
  EXPECT_EQ(Active(), v1_);
  EXPECT_NE(d->reason.find(absl::StrCat("version ", v, " serves at LAR 0.5000")), std::string::npos)
      << d->reason;
  EXPECT_NE(d->reason.find("version 1's 0.6000"), std::string::npos) << d->reason;
}

TEST_F(ServedCheckTest, ARolloutThatFailsRequestsIsRolledBackAndOneThatServesWellStays) {
  auto a = MakeServed();
  int64_t v = RollOutAfterAShift(*a);
  Serve(v, 0, 0, 0);
  ASSERT_NE(a->Tick()->action, "rollback");
  clock_.Advance(absl::Seconds(2));
  Serve(v, 20, 3, 70);  // Better placed, but 3 of 20 requests failed.
  auto d = a->Tick();
  EXPECT_EQ(d->action, "rollback") << d->reason;
  EXPECT_NE(d->reason.find("failed 15.0% of its requests"), std::string::npos) << d->reason;
  EXPECT_EQ(Active(), v1_);

  // The next shift, after the minimum interval: this rollout serves better and stays.
  clock_.Advance(absl::Minutes(6));
  Live(8, 1);
  Serve(v1_, 20, 0, 40);
  ASSERT_EQ(a->Tick()->action, "wait");  // The drift, seen anew.
  clock_.Advance(absl::Seconds(31));
  Serve(v1_, 20, 0, 40);
  d = a->Tick();
  ASSERT_EQ(d->action, "rollout") << d->reason;
  v = d->candidate_version;
  Serve(v, 0, 0, 0);
  ASSERT_TRUE(a->Tick().ok());  // The switch is seen.
  clock_.Advance(absl::Seconds(2));
  Serve(v, 20, 0, 70);
  d = a->Tick();
  EXPECT_NE(d->action, "rollback") << d->reason;
  EXPECT_TRUE(nlohmann::json::parse(d->figures_json).value("served_check_passed", false))
      << d->figures_json;
  EXPECT_EQ(Active(), v);
}

TEST_F(ServedCheckTest, ARolloutWhoseTokensComeSlowerIsRolledBack) {
  auto a = MakeServed();
  const int64_t v = RollOutAfterAShift(*a);  // Version 1 served 50 ms per output token.
  Serve(v, 0, 0, 0);
  ASSERT_NE(a->Tick()->action, "rollback");
  clock_.Advance(absl::Seconds(2));
  // Better placed, every request served, but 80 ms per output token: goodput within a latency
  // SLO falls (70 ms, 40% slower, would be within the default margin of 50%).
  Serve(v, 20, 0, 70, /*refused=*/0, /*ms_per_token=*/80);
  auto d = a->Tick();
  EXPECT_EQ(d->action, "rollback") << d->reason;
  EXPECT_NE(d->reason.find(absl::StrCat("version ", v, " serves at 80.0 ms per output token")),
            std::string::npos)
      << d->reason;
  EXPECT_NE(d->reason.find("version 1's 50.0 by more than 50.0%"), std::string::npos) << d->reason;
  EXPECT_EQ(Active(), v1_);
  const nlohmann::json f = nlohmann::json::parse(d->figures_json);
  EXPECT_NEAR(f["served_after"].value("ms_per_output_token", 0.0), 80.0, 1e-9) << f;
}

TEST_F(ServedCheckTest, AGroupThatNeverSwitchesRollsTheVersionBackAfterTheTimeout) {
  auto a = MakeServed();
  const int64_t v = RollOutAfterAShift(*a);
  for (int i = 0; i < 9; ++i) {  // Still staging after 9 minutes: patience.
    clock_.Advance(absl::Minutes(1));
    state_.rollout_target = v;
    Serve(v1_, 5, 0, 40);
    EXPECT_NE(a->Tick()->action, "rollback");
  }
  clock_.Advance(absl::Minutes(2));
  Serve(v1_, 5, 0, 40);
  auto d = a->Tick();
  EXPECT_EQ(d->action, "rollback") << d->reason;
  EXPECT_NE(d->reason.find("127.0.0.1:7001 v1"), std::string::npos) << d->reason;
  EXPECT_EQ(Active(), v1_);
}

}  // namespace
// One row per bad value: each refused before the autopilot opens anything, naming its flag.
TEST(ValidateAutopilotOptionsTest, OneRowPerBadValue) {
  const double nan = std::nan("");
  struct Row {
    std::function<void(AutopilotOptions&)> set;
    const char* flag;
  } rows[] = {
      {[&](AutopilotOptions& o) { o.min_gain = nan; }, "--autopilot_min_gain"},
      {[](AutopilotOptions& o) { o.min_gain = -0.1; }, "--autopilot_min_gain"},
      {[&](AutopilotOptions& o) { o.drift_threshold = nan; }, "--autopilot_drift"},
      {[](AutopilotOptions& o) { o.shift_threshold = INFINITY; }, "--autopilot_shift"},
      {[&](AutopilotOptions& o) { o.max_lar_loss = nan; }, "--autopilot_max_lar_loss"},
      {[](AutopilotOptions& o) { o.max_lar_loss = -1; }, "--autopilot_max_lar_loss"},
      {[](AutopilotOptions& o) { o.served_latency_margin = -1; },
       "--autopilot_served_latency_margin"},
      {[](AutopilotOptions& o) { o.min_window_tokens = 0; }, "--autopilot_min_window_tokens"},
      {[](AutopilotOptions& o) { o.max_moved_experts = -5; }, "--autopilot_expert_budget"},
      {[](AutopilotOptions& o) { o.migration_retries = -1; }, "--autopilot_migration_retries"},
      {[](AutopilotOptions& o) { o.migration_retries = 1000000; }, "--autopilot_migration_retries"},
      {[](AutopilotOptions& o) { o.min_served_requests = -3; }, "--autopilot_min_served_requests"},
      {[](AutopilotOptions& o) { o.min_interval = -absl::Seconds(1); }, "--autopilot_min_interval"},
      {[](AutopilotOptions& o) { o.drift_confirm = absl::InfiniteDuration(); },
       "--autopilot_confirm"},
      {[](AutopilotOptions& o) { o.rollout_timeout = absl::ZeroDuration(); },
       "--autopilot_rollout_timeout"},
  };
  EXPECT_TRUE(ValidateAutopilotOptions({.model = "m", .traces = {"t"}}).ok());
  for (const Row& row : rows) {
    AutopilotOptions o{.model = "m", .traces = {"t"}};
    row.set(o);
    const absl::Status s = ValidateAutopilotOptions(o);
    EXPECT_FALSE(s.ok()) << row.flag;
    EXPECT_NE(s.message().find(row.flag), std::string::npos) << s;
    EXPECT_FALSE(Autopilot::Create(o).ok()) << row.flag;
  }
}

}  // namespace semmoe::planner
