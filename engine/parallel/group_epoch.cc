#include "engine/parallel/group_epoch.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "glog/logging.h"

namespace semmoe::engine {
namespace {

std::string Key(const RendezvousOptions& o, int rank, const char* what) {
  return absl::StrCat(o.prefix, "/rank", rank, "/", what);
}

// The epoch stored under `key`, or nullopt when it is missing (or unreadable: the rendezvous
// that follows reports an unreachable store by name).
std::optional<int64_t> Peek(gloo::rendezvous::Store& store, const std::string& key) {
  try {
    store.wait({key}, std::chrono::milliseconds(1));
    const std::vector<char> value = store.get(key);
    int64_t epoch = 0;
    if (absl::SimpleAtoi(absl::string_view(value.data(), value.size()), &epoch)) return epoch;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

absl::Status Post(gloo::rendezvous::Store& store, const std::string& key, int64_t epoch) {
  const std::string text = absl::StrCat(epoch);
  try {
    store.set(key, std::vector<char>(text.begin(), text.end()));
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat("rendezvous store: cannot write ", key, ": ",
                                               e.what()));
  }
  return absl::OkStatus();
}

struct Posted {
  std::vector<int64_t> joining, formed;  // Per rank; −1: missing.
};

Posted ReadPosted(gloo::rendezvous::Store& store, const RendezvousOptions& o) {
  Posted p;
  for (int r = 0; r < o.size; ++r) {
    p.joining.push_back(Peek(store, Key(o, r, "joining")).value_or(-1));
    p.formed.push_back(Peek(store, Key(o, r, "formed")).value_or(-1));
  }
  return p;
}

int64_t Pick(const Posted& p, int64_t failed) {
  int64_t e = failed + 1;
  for (int64_t j : p.joining) e = std::max(e, j);
  for (int64_t f : p.formed) e = std::max(e, f + 1);
  return e;
}

std::string Missing(const Posted& p, int64_t epoch, int self) {
  std::vector<int> missing;
  for (size_t r = 0; r < p.joining.size(); ++r) {
    if (static_cast<int>(r) != self && p.joining[r] < epoch) missing.push_back(static_cast<int>(r));
  }
  return absl::StrJoin(missing, ", ");
}

}  // namespace

absl::StatusOr<int64_t> NextEpoch(const RendezvousOptions& rendezvous, int64_t failed_epoch) {
  ASSIGN_OR_RETURN(std::unique_ptr<gloo::rendezvous::Store> store, OpenStore(rendezvous.address));
  return Pick(ReadPosted(*store, rendezvous), failed_epoch);
}

absl::StatusOr<EpochGroup> JoinEpoch(const EpochJoinOptions& options) {
  const RendezvousOptions& o = options.rendezvous;
  if (o.size < 1 || o.rank < 0 || o.rank >= o.size) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", o.rank, " is not in a group of ", o.size));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<gloo::rendezvous::Store> store, OpenStore(o.address));
  absl::Status last = absl::DeadlineExceededError("no round ran");
  while (true) {
    if (options.stop && options.stop()) {
      return absl::CancelledError(absl::StrCat("rank ", o.rank, ": stopped while joining"));
    }
    const absl::Duration left = options.deadline - absl::Now();
    if (left <= absl::ZeroDuration()) {
      return absl::DeadlineExceededError(absl::StrCat(
          "rank ", o.rank, "/", o.size, " via ", o.address, ": the group did not form: ",
          last.message()));
    }
    const Posted posted = ReadPosted(*store, o);
    const int64_t epoch = Pick(posted, options.failed_epoch);
    if (options.on_round) options.on_round(epoch, Missing(posted, epoch, o.rank));
    absl::Status wrote = Post(*store, Key(o, o.rank, "joining"), epoch);
    if (!wrote.ok()) {
      last = wrote;
      absl::SleepFor(std::min(absl::Milliseconds(200), left));
      continue;
    }
    RendezvousOptions round = o;
    round.prefix = absl::StrCat(o.prefix, "/e", epoch);
    round.connect_timeout = std::min(options.round, left);
    absl::StatusOr<std::unique_ptr<Communicator>> comm = ConnectGloo(round);
    if (comm.ok()) {
      // Best effort: a lost key only makes a later joiner pick a higher epoch and wait.
      if (absl::Status s = Post(*store, Key(o, o.rank, "formed"), epoch); !s.ok()) {
        LOG(WARNING) << s;
      }
      return EpochGroup{.comm = std::move(*comm), .epoch = epoch};
    }
    if (comm.status().code() == absl::StatusCode::kInvalidArgument) return comm.status();
    last = absl::Status(comm.status().code(),
                        absl::StrCat("epoch ", epoch, ": ", comm.status().message()));
    LOG(INFO) << "rank " << o.rank << ": " << last;
  }
}

}  // namespace semmoe::engine
