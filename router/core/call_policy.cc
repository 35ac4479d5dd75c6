#include "router/core/call_policy.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace semmoe::router {

absl::Status Admit(int64_t in_flight, int max_in_flight) {
  if (in_flight <= max_in_flight) return absl::OkStatus();
  return absl::ResourceExhaustedError(
      absl::StrCat("the router has ", max_in_flight, " requests in flight; retry later"));
}

absl::Status AdmitByWait(absl::Duration predicted_wait, int64_t queued_tokens, double tokens_per_s,
                         std::optional<absl::Duration> deadline_left, absl::Duration max_wait) {
  const std::string prediction = absl::StrFormat(
      "predicted wait %.1f s (%d prompt tokens ahead, its own included, at %.0f tokens/s)",
      absl::ToDoubleSeconds(predicted_wait), queued_tokens, tokens_per_s);
  if (deadline_left.has_value() && predicted_wait > *deadline_left) {
    return absl::ResourceExhaustedError(absl::StrCat(
        prediction, " exceeds the request's deadline (", absl::FormatDuration(*deadline_left),
        " left); refused now rather than queued; retry later"));
  }
  if (max_wait > absl::ZeroDuration() && predicted_wait > max_wait) {
    return absl::ResourceExhaustedError(absl::StrCat(
        prediction, " exceeds what the TTFT SLO allows (", absl::FormatDuration(max_wait),
        "); refused now rather than queued; retry later"));
  }
  return absl::OkStatus();
}

absl::Status NoRankStatus(const std::string& last_error) {
  return absl::UnavailableError(
      last_error.empty()
          ? "no engine rank can take the request"
          : absl::StrCat("no other engine rank can take the request (", last_error, ")"));
}

AttemptDecision DecideAttempt(const AttemptEnd& end) {
  using Kind = AttemptDecision::Kind;
  if (end.status.ok()) {
    if (end.final_received) return {.kind = Kind::kComplete};
    return {.kind = Kind::kFail,
            .status = absl::UnavailableError(
                absl::StrCat("engine rank ", end.rank, " ended the stream early"))};
  }
  if (end.cancelled) return {.kind = Kind::kFail, .status = end.status};
  // Before any token: a busy rank's request goes to another rank while one is left; a dead or
  // re-forming rank's is placed again even when every rank was tried — placement then waits
  // for a rank to come back within the router's requeue window (routed_call.cc).
  const bool untried_left = end.excluded + 1 < end.group_size;
  const bool retriable =
      absl::IsUnavailable(end.status) || (absl::IsResourceExhausted(end.status) && untried_left);
  if (end.tokens_received == 0 && retriable) {
    return {.kind = Kind::kRetry,
            .note = absl::StrCat("rank ", end.rank, ": ", end.status.message()),
            .mark_unusable = absl::IsUnavailable(end.status)};
  }
  if (end.tokens_received > 0) {
    return {.kind = Kind::kFail,
            .status = absl::UnavailableError(absl::StrCat("engine rank ", end.rank,
                                                          " failed after ", end.tokens_received,
                                                          " tokens: ", end.status.message()))};
  }
  return {.kind = Kind::kFail, .status = end.status};
}

rpc::FinalRecord MakeFinalRecord(const engine::rpc::FinalRecord& e, const CallTimes& t, int rank,
                                 const std::string& arm, int retries, int64_t version,
                                 double rank_lar) {
  rpc::FinalRecord f;
  f.set_request_id(e.request_id());
  f.set_prompt_tokens(e.prompt_tokens());
  f.set_completion_tokens(e.completion_tokens());
  f.set_finish_reason(e.finish_reason());
  f.set_text(e.text());
  f.set_rank(rank);
  f.set_arm(arm);
  const absl::Time first = t.first_token.value_or(t.now);
  f.set_ttft_ms(absl::ToDoubleMilliseconds(first - t.start));
  f.set_e2e_ms(absl::ToDoubleMilliseconds(t.now - t.start));
  const int n = e.completion_tokens();
  f.set_tpot_ms(n > 1 ? absl::ToDoubleMilliseconds(t.last_token - first) / (n - 1) : 0.0);
  f.set_queue_ms(absl::ToDoubleMilliseconds(t.placed - t.start));
  f.set_retries(retries);
  f.set_placement_version(version);
  f.set_rank_lar(rank_lar);
  f.set_lar(e.activations() > 0
                ? static_cast<double>(e.local_activations()) / static_cast<double>(e.activations())
                : -1.0);
  return f;
}

}  // namespace semmoe::router
