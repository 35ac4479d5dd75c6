// The placement store under process death and a full disk (issue 21, "Store"): two writer
// processes write versions, experiments and arm metrics into one database concurrently and are
// killed with SIGKILL at a random moment, 100 times over the same file. After each kill the
// database passes `PRAGMA integrity_check` and holds every row a writer saw committed. A writer
// whose file size limit runs out (RLIMIT_FSIZE: the disk is full) gets a clear error, exits
// cleanly, and leaves the database intact.
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "planner/store/experiment_store.h"
#include "planner/store/placement_store.h"
#include "planner/store/testing/temp_database_path.h"

namespace semmoe::planner {
namespace {

// Writes to `fd` one line per committed row: "v VERSION", "e EXPERIMENT", "m EXPERIMENT ARM N".
void Report(int fd, const std::string& line) {
  const std::string text = line + "\n";
  if (write(fd, text.data(), text.size()) < 0) _exit(3);
}

// A writer process's life: its own model (one running experiment per model), then versions,
// an experiment over two of them, and arm metrics with a counter, until killed or failing.
[[noreturn]] void Writer(const std::string& path, int id, int fd) {
  auto store = PlacementStore::Open(path);
  if (!store.ok()) {
    Report(fd, absl::StrCat("error ", store.status().ToString()));
    _exit(1);
  }
  const std::string model = absl::StrCat("m", id);
  auto fail = [&](const absl::Status& s) {
    Report(fd, absl::StrCat("error ", s.ToString()));
    _exit(1);
  };
  if (absl::Status s = (*store)->AddModel(model, 1, 4); !s.ok()) fail(s);
  ExperimentStore experiments(**store);
  std::vector<int64_t> versions;
  int64_t experiment = 0;
  int64_t counter = 0;
  std::mt19937 rng(id * 7919 + getpid());
  while (true) {
    const int what = versions.size() < 2 ? 0 : static_cast<int>(rng() % 3);
    if (what == 0 || experiment == 0) {
      PlacementVersion v;
      v.model = model;
      v.name = "crash";
      v.algorithm = "vanilla";
      v.placement = *Placement::Vanilla({0}, 4, 2);
      absl::StatusOr<int64_t> created = (*store)->Create(v, std::string(2048, 'a'));
      if (!created.ok()) fail(created.status());
      versions.push_back(*created);
      Report(fd, absl::StrCat("v ", *created));
      if (versions.size() >= 2 && experiment == 0) {
        absl::StatusOr<int64_t> e =
            experiments.Create(model, "crash", {{"A", versions[0], 50}, {"B", versions[1], 50}});
        if (!e.ok()) fail(e.status());
        if (absl::Status s = experiments.Start(*e); !s.ok()) fail(s);
        experiment = *e;
        Report(fd, absl::StrCat("e ", experiment));
      }
      continue;
    }
    const std::string arm = rng() % 2 ? "A" : "B";
    ++counter;
    absl::Status s = experiments.RecordArmMetrics(
        experiment, arm,
        nlohmann::json({{"count", counter}, {"pad", std::string(512, 'x')}}).dump());
    if (!s.ok()) fail(s);
    Report(fd, absl::StrCat("m ", experiment, " ", arm, " ", counter));
  }
}

struct Child {
  pid_t pid = -1;
  int fd = -1;
};

Child Spawn(const std::string& path, int id, rlim_t file_size_limit = RLIM_INFINITY) {
  int fds[2];
  if (pipe(fds) != 0) return {};
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    if (file_size_limit != RLIM_INFINITY) {
      signal(SIGXFSZ, SIG_IGN);  // Writes past the limit fail with EFBIG instead.
      rlimit l{.rlim_cur = file_size_limit, .rlim_max = file_size_limit};
      setrlimit(RLIMIT_FSIZE, &l);
    }
    Writer(path, id, fds[1]);
  }
  close(fds[1]);
  return {pid, fds[0]};
}

// Everything the child wrote (after it ended).
std::string Drain(int fd) {
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) out.append(buf, n);
  close(fd);
  return out;
}

// What the writers reported committed, checked against the database.
struct Seen {
  std::vector<int64_t> versions, experiments;
  std::map<std::pair<int64_t, std::string>, int64_t> metrics;  // (experiment, arm) → last count.
  void Add(const std::string& report) {
    std::istringstream in(report);
    std::string kind;
    while (in >> kind) {
      if (kind == "v" || kind == "e") {
        int64_t id = 0;
        if (!(in >> id)) return;  // A line cut by the kill: not reported, not owed.
        (kind == "v" ? versions : experiments).push_back(id);
      } else if (kind == "m") {
        int64_t e = 0, n = 0;
        std::string arm;
        if (!(in >> e >> arm >> n)) return;
        metrics[{e, arm}] = n;
      } else {
        std::string rest;
        std::getline(in, rest);
      }
    }
  }
};

void ExpectIntactAndComplete(const std::string& path, const Seen& seen) {
  auto db = Database::Open(path);
  ASSERT_TRUE(db.ok()) << db.status();
  auto check = (*db)->Prepare("PRAGMA integrity_check");
  ASSERT_TRUE(check.ok());
  ASSERT_TRUE(*check->Step());
  EXPECT_EQ(check->ColumnText(0), "ok");
  auto store = PlacementStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  for (int64_t v : seen.versions) EXPECT_TRUE((*store)->Get(v).ok()) << "version " << v << " lost";
  ExperimentStore experiments(**store);
  for (int64_t e : seen.experiments) {
    EXPECT_TRUE(experiments.Get(e).ok()) << "experiment " << e << " lost";
  }
  for (const auto& [key, count] : seen.metrics) {
    auto e = experiments.Get(key.first);
    ASSERT_TRUE(e.ok());
    int64_t stored = -1;
    for (const ExperimentArm& arm : e->arms) {
      if (arm.name != key.second || arm.latest_metrics_json.empty()) continue;
      stored = nlohmann::json::parse(arm.latest_metrics_json).value("count", int64_t{-1});
    }
    // The latest stored is the last committed: at least the last one reported.
    EXPECT_GE(stored, count) << "experiment " << key.first << " arm " << key.second;
  }
}

TEST(StoreCrashTest, HundredKillsDuringConcurrentWrites) {
  const std::string path = TempDatabasePath("crash.db");
  ASSERT_TRUE(PlacementStore::Open(path).ok());  // Created (and migrated) once.
  std::mt19937 rng(11);
  Seen seen;  // Over all trials: checked once more at the end.
  int writers = 0, trials = 0, corrupt = 0;
  const char* env = std::getenv("SEMMOE_STORE_TRIALS");  // tests/faults/run.sh --quick: fewer.
  const int want = env != nullptr && std::atoi(env) > 0 ? std::atoi(env) : 100;
  for (int trial = 0; trial < want; ++trial) {
    Child a = Spawn(path, 2 * trial), b = Spawn(path, 2 * trial + 1);
    ASSERT_GT(a.pid, 0);
    ASSERT_GT(b.pid, 0);
    usleep(20'000 + rng() % 120'000);
    kill(a.pid, SIGKILL);
    kill(b.pid, SIGKILL);
    Seen trial_seen;  // This trial's rows, checked now (all of them at the end).
    for (Child* c : {&a, &b}) {
      int status = 0;
      waitpid(c->pid, &status, 0);
      const std::string report = Drain(c->fd);
      // Killed, never failed: concurrent writers wait for each other's locks.
      EXPECT_TRUE(WIFSIGNALED(status)) << "trial " << trial << ": " << report;
      seen.Add(report);
      trial_seen.Add(report);
      writers += !report.empty();
    }
    ExpectIntactAndComplete(path, trial_seen);
    ++trials;
    if (HasFailure()) {
      ++corrupt;
      break;
    }
  }
  ExpectIntactAndComplete(path, seen);
  // One line tests/faults/run.sh reads.
  std::cout << "store crash trials: " << trials << ", corrupt databases: " << corrupt
            << ", writers that committed: " << writers << ", versions " << seen.versions.size()
            << ", arm metric series " << seen.metrics.size() << "\n";
  EXPECT_EQ(trials, want);
  EXPECT_GT(writers, want) << "most writers committed something before the kill";
  EXPECT_GT(seen.versions.size(), 3u * want);
  EXPECT_GT(seen.metrics.size(), want / 2u);
}

TEST(StoreCrashTest, AFullDiskIsAClearErrorAndNoCorruption) {
  const std::string path = TempDatabasePath("full.db");
  ASSERT_TRUE(PlacementStore::Open(path).ok());
  // Room for a few hundred KiB more: the writer runs into the limit within a second.
  Child c = Spawn(path, 1, 512 << 10);
  int status = 0;
  waitpid(c.pid, &status, 0);
  const std::string report = Drain(c.fd);
  ASSERT_TRUE(WIFEXITED(status)) << "the writer crashed: " << report;
  EXPECT_EQ(WEXITSTATUS(status), 1) << report;
  EXPECT_THAT(report, ::testing::ContainsRegex("error .*(disk is full|I/O error|too large)"));
  Seen seen;
  seen.Add(report);
  EXPECT_GT(seen.versions.size(), 5u) << report;
  ExpectIntactAndComplete(path, seen);
}

}  // namespace
}  // namespace semmoe::planner
