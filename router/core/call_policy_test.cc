#include "router/core/call_policy.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace semmoe::router {
namespace {

using ::testing::HasSubstr;
using Kind = AttemptDecision::Kind;

TEST(AdmitTest, RefusesBeyondTheLimit) {
  EXPECT_TRUE(Admit(1, 2).ok());
  EXPECT_TRUE(Admit(2, 2).ok());
  const absl::Status refused = Admit(3, 2);
  EXPECT_TRUE(absl::IsResourceExhausted(refused));
  EXPECT_THAT(refused.message(), HasSubstr("2 requests in flight; retry later"));
}

TEST(AdmitByWaitTest, RefusesWhatCannotStartInTime) {
  const absl::Duration slo2 = absl::Seconds(2);
  EXPECT_TRUE(AdmitByWait(absl::Seconds(1), 8, 8.0, std::nullopt, slo2).ok());
  EXPECT_TRUE(AdmitByWait(absl::Seconds(1), 8, 8.0, absl::Seconds(5), slo2).ok());
  // Past the SLO's bound.
  const absl::Status slow = AdmitByWait(absl::Seconds(30), 240, 8.0, std::nullopt, slo2);
  EXPECT_TRUE(absl::IsResourceExhausted(slow));
  EXPECT_THAT(
      slow.message(),
      HasSubstr(
          "predicted wait 30.0 s (240 prompt tokens ahead, its own included, at 8 tokens/s)"));
  EXPECT_THAT(slow.message(), HasSubstr("exceeds what the TTFT SLO allows (2s)"));
  // Past the request's own deadline, even within the SLO's bound or with none.
  const absl::Status late = AdmitByWait(absl::Seconds(1), 8, 8.0, absl::Milliseconds(500), slo2);
  EXPECT_TRUE(absl::IsResourceExhausted(late));
  EXPECT_THAT(late.message(), HasSubstr("exceeds the request's deadline (500ms left)"));
  EXPECT_FALSE(AdmitByWait(absl::Seconds(9), 72, 8.0, absl::Seconds(3), absl::ZeroDuration()).ok());
  EXPECT_TRUE(AdmitByWait(absl::Seconds(9), 72, 8.0, std::nullopt, absl::ZeroDuration()).ok());
}

TEST(NoRankStatusTest, SaysWhyTheLastRankWasLeft) {
  EXPECT_EQ(NoRankStatus("").message(), "no engine rank can take the request");
  const absl::Status s = NoRankStatus("rank 1: connection refused");
  EXPECT_TRUE(absl::IsUnavailable(s));
  EXPECT_THAT(s.message(), HasSubstr("no other engine rank can take the request (rank 1: conn"));
}

AttemptEnd End(absl::Status status) {
  return {.rank = 1, .status = std::move(status), .group_size = 3};
}

TEST(DecideAttemptTest, CompletesWithTheFinalRecord) {
  AttemptEnd end = End(absl::OkStatus());
  end.final_received = true;
  EXPECT_EQ(DecideAttempt(end).kind, Kind::kComplete);
  end.final_received = false;  // An OK stream without its final record ended early.
  const AttemptDecision early = DecideAttempt(end);
  EXPECT_EQ(early.kind, Kind::kFail);
  EXPECT_TRUE(absl::IsUnavailable(early.status));
  EXPECT_THAT(early.status.message(), HasSubstr("engine rank 1 ended the stream early"));
}

TEST(DecideAttemptTest, RetriesADeadOrFullRankBeforeTheFirstToken) {
  const AttemptDecision dead = DecideAttempt(End(absl::UnavailableError("connection refused")));
  EXPECT_EQ(dead.kind, Kind::kRetry);
  EXPECT_TRUE(dead.mark_unusable);
  EXPECT_EQ(dead.note, "rank 1: connection refused");
  const AttemptDecision full = DecideAttempt(End(absl::ResourceExhaustedError("queue full")));
  EXPECT_EQ(full.kind, Kind::kRetry);
  EXPECT_FALSE(full.mark_unusable);  // Busy, not dead.
}

TEST(DecideAttemptTest, FailsWhenNoRankIsLeftOrTokensWereSent) {
  AttemptEnd last = End(absl::ResourceExhaustedError("queue full"));
  last.excluded = 2;  // With this one, all 3 ranks were tried.
  const AttemptDecision none = DecideAttempt(last);
  EXPECT_EQ(none.kind, Kind::kFail);
  EXPECT_EQ(none.status.message(), "queue full");
  // A dead rank's request is placed again (it waits for a rank within the requeue window).
  AttemptEnd down = End(absl::UnavailableError("down"));
  down.excluded = 2;
  EXPECT_EQ(DecideAttempt(down).kind, Kind::kRetry);

  AttemptEnd streamed = End(absl::UnavailableError("reset"));
  streamed.tokens_received = 5;
  const AttemptDecision broke = DecideAttempt(streamed);
  EXPECT_EQ(broke.kind, Kind::kFail);
  EXPECT_TRUE(absl::IsUnavailable(broke.status));
  EXPECT_THAT(broke.status.message(), HasSubstr("engine rank 1 failed after 5 tokens: reset"));
}

TEST(DecideAttemptTest, KeepsOtherErrorsAndCancellations) {
  const AttemptDecision invalid = DecideAttempt(End(absl::InvalidArgumentError("bad prompt")));
  EXPECT_EQ(invalid.kind, Kind::kFail);
  EXPECT_TRUE(absl::IsInvalidArgument(invalid.status));
  AttemptEnd cancelled = End(absl::UnavailableError("gone"));
  cancelled.cancelled = true;  // Not retried: nobody is waiting.
  EXPECT_EQ(DecideAttempt(cancelled).kind, Kind::kFail);
}

TEST(MakeFinalRecordTest, TimesAndPlacement) {
  engine::rpc::FinalRecord e;
  e.set_request_id("r");
  e.set_prompt_tokens(7);
  e.set_completion_tokens(5);
  e.set_finish_reason("length");
  e.set_activations(40);
  e.set_local_activations(10);
  const absl::Time t0 = absl::UnixEpoch();
  const rpc::FinalRecord f = MakeFinalRecord(e,
                                             {.start = t0,
                                              .placed = t0 + absl::Milliseconds(2),
                                              .first_token = t0 + absl::Milliseconds(10),
                                              .last_token = t0 + absl::Milliseconds(50),
                                              .now = t0 + absl::Milliseconds(60)},
                                             /*rank=*/2, "B", /*retries=*/1, /*version=*/9, 0.5);
  EXPECT_EQ(f.request_id(), "r");
  EXPECT_EQ(f.rank(), 2);
  EXPECT_EQ(f.arm(), "B");
  EXPECT_DOUBLE_EQ(f.queue_ms(), 2);
  EXPECT_DOUBLE_EQ(f.ttft_ms(), 10);
  EXPECT_DOUBLE_EQ(f.e2e_ms(), 60);
  EXPECT_DOUBLE_EQ(f.tpot_ms(), 10);  // 40 ms over the 4 gaps between 5 tokens.
  EXPECT_DOUBLE_EQ(f.lar(), 0.25);
  EXPECT_DOUBLE_EQ(f.rank_lar(), 0.5);
  EXPECT_EQ(f.retries(), 1);
  EXPECT_EQ(f.placement_version(), 9);
  e.set_activations(0);
  EXPECT_DOUBLE_EQ(MakeFinalRecord(e, {.now = t0}, 0, "", 0, 0, 0).lar(), -1.0);
}

}  // namespace
}  // namespace semmoe::router
