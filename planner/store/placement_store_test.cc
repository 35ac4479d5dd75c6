#include "planner/store/placement_store.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "common/testing/fake_clock.h"
#include "gtest/gtest.h"
#include "planner/store/testing/temp_database_path.h"

namespace semmoe::planner {
namespace {

PlacementVersion Version(const std::string& name, uint64_t seed,
                         std::optional<int64_t> parent = std::nullopt) {
  PlacementVersion v;
  v.model = "qwen3-moe-a";
  v.name = name;
  v.parent = parent;
  v.algorithm = "random";
  v.params_json = R"({"seed": )" + std::to_string(seed) + "}";
  v.metrics_json = R"({"lar": 0.25})";
  v.placement = *Placement::Random({0, 1, 2, 3}, 32, 8, seed);
  return v;
}

std::unique_ptr<PlacementStore> OpenStore(const std::string& path) {
  auto store = PlacementStore::Open(path);
  EXPECT_TRUE(store.ok()) << store.status();
  EXPECT_TRUE((*store)->AddModel("qwen3-moe-a", 4, 32).ok());
  return std::move(*store);
}

TEST(PlacementStoreTest, CreateGetList) {
  FakeClock clock(absl::FromUnixSeconds(1000));
  auto store = PlacementStore::Open(TempDatabasePath("create.db"), {.clock = &clock});
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_TRUE((*store)->AddModel("qwen3-moe-a", 4, 32).ok());
  ASSERT_TRUE((*store)->AddModel("qwen3-moe-a", 4, 32).ok());  // Idempotent.
  auto v1 = (*store)->Create(Version("first", 1));
  ASSERT_TRUE(v1.ok()) << v1.status();
  auto v2 = (*store)->Create(Version("second", 2, *v1));
  ASSERT_TRUE(v2.ok()) << v2.status();
  auto got = (*store)->Get(*v2);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->name, "second");
  EXPECT_EQ(got->parent, *v1);
  EXPECT_EQ(got->status, "draft");
  EXPECT_EQ(got->created, absl::FromUnixSeconds(1000));
  EXPECT_EQ(got->placement.ToJson(), Placement::Random({0, 1, 2, 3}, 32, 8, 2)->ToJson());
  auto all = (*store)->List("qwen3-moe-a");
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].version, *v1);
  EXPECT_EQ((*store)->Get(999).status().code(), absl::StatusCode::kNotFound);
}

TEST(PlacementStoreTest, AffinityTablesStoredWithTheVersion) {
  auto store = OpenStore(TempDatabasePath("affinity.db"));
  const std::string tables("SMAFFIN1\x01\x00", 10);
  const int64_t with = *store->Create(Version("a", 1), tables);
  const int64_t without = *store->Create(Version("b", 2));
  auto got = store->GetAffinityTables(with);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, tables);
  EXPECT_EQ(store->GetAffinityTables(without).status().code(), absl::StatusCode::kNotFound);
  EXPECT_FALSE(store->database().Execute("UPDATE affinity_tables SET data = x'00'").ok());
  // The A (layer transition) tables, likewise.
  const std::string layers("SMLAYRA1\x02", 9);
  const int64_t both = *store->Create(Version("c", 3), tables, layers);
  EXPECT_EQ(*store->GetLayerTables(both), layers);
  EXPECT_EQ(*store->GetAffinityTables(both), tables);
  EXPECT_EQ(store->GetLayerTables(with).status().code(), absl::StatusCode::kNotFound);
  EXPECT_FALSE(store->database().Execute("DELETE FROM layer_tables").ok());
}

TEST(PlacementStoreTest, ReplicasRoundTrip) {
  auto store = OpenStore(TempDatabasePath("replicas.db"));
  PlacementVersion v = Version("r", 1);
  std::vector<std::vector<std::vector<int32_t>>> replicas;
  for (int l = 0; l < v.placement.num_layers(); ++l) {
    std::vector<std::vector<int32_t>> per_device(v.placement.num_devices());
    for (int d = 0; d < v.placement.num_devices(); ++d) {
      for (int e = 0; e < v.placement.num_experts(); ++e) {
        if (!v.placement.Holds(l, d, e)) {
          per_device[d].push_back(e);
          break;
        }
      }
    }
    replicas.push_back(per_device);
  }
  v.placement = *v.placement.WithReplicas(replicas);
  const int64_t id = *store->Create(v);
  auto back = store->Get(id);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->placement.ToJson(), v.placement.ToJson());
  EXPECT_EQ(back->placement.replicas_per_device(), 1);
  const int64_t plain = *store->Create(Version("p", 2));
  EXPECT_EQ(store->Get(plain)->placement.replicas_per_device(), 0);
}

TEST(PlacementStoreTest, TopologyRoundTripsAndCannotBeChanged) {
  const std::string path = TempDatabasePath("topology.db");
  auto store = OpenStore(path);
  PlacementVersion v = Version("t", 1);
  v.placement = *v.placement.WithTopology(*Topology::Parse("2x4"));
  const int64_t id = *store->Create(v);
  auto back = store->Get(id);
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_NE(back->placement.topology(), nullptr);
  EXPECT_EQ(back->placement.topology()->Describe(), "2x4");
  EXPECT_EQ(back->placement.ToJson(), v.placement.ToJson());
  const int64_t flat = *store->Create(Version("f", 2));
  EXPECT_EQ(store->Get(flat)->placement.topology(), nullptr);
  store.reset();
  auto db = Database::Open(path);
  ASSERT_TRUE(db.ok());
  EXPECT_FALSE((*db)->Execute("UPDATE placements SET topology = NULL").ok());
}

TEST(PlacementStoreTest, ActivateRetireAndRollback) {
  auto store = OpenStore(TempDatabasePath("activate.db"));
  const int64_t a = *store->Create(Version("a", 1)), b = *store->Create(Version("b", 2));
  EXPECT_FALSE(store->Active("qwen3-moe-a")->has_value());
  EXPECT_EQ(store->Rollback("qwen3-moe-a").status().code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(store->Activate(a).ok());
  EXPECT_EQ(store->Rollback("qwen3-moe-a").status().code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(store->Activate(b).ok());
  EXPECT_EQ((*store->Active("qwen3-moe-a"))->version, b);
  EXPECT_EQ(store->Get(a)->status, "retired");
  auto back = store->Rollback("qwen3-moe-a");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, a);
  EXPECT_EQ(store->Get(a)->status, "active");
  EXPECT_EQ(store->Get(b)->status, "retired");
  EXPECT_EQ(store->Activate(77).code(), absl::StatusCode::kNotFound);
}

TEST(PlacementStoreTest, PredictionsGuardActivation) {
  auto store = OpenStore(TempDatabasePath("predictions.db"));
  const int64_t v = *store->Create(Version("a", 1));
  EXPECT_TRUE(store->CheckPredictedNotSlower(v).ok());  // Nothing predicted: nothing to refuse.
  ASSERT_TRUE(
      store
          ->SetPrediction(v, "h200 2x8",
                          R"({"predicted_vs_vanilla": 1.01, "predicted_max_rate_vs_vanilla": 1})")
          .ok());
  EXPECT_TRUE(store->CheckPredictedNotSlower(v).ok());  // Within 2%.
  ASSERT_TRUE(
      store
          ->SetPrediction(v, "h100 4x8",
                          R"({"predicted_vs_vanilla": 1.05, "predicted_max_rate_vs_vanilla": 1})")
          .ok());
  absl::Status refused = store->CheckPredictedNotSlower(v);
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.message().find("on h100 4x8: its MoE layer is predicted 1.05x"),
            std::string::npos)
      << refused;
  EXPECT_NE(refused.message().find("--force"), std::string::npos);
  // Predicted again for that cluster: replaced; a lower max rate is refused too.
  ASSERT_TRUE(
      store
          ->SetPrediction(v, "h100 4x8",
                          R"({"predicted_vs_vanilla": 0.9, "predicted_max_rate_vs_vanilla": 0.5})")
          .ok());
  EXPECT_NE(store->CheckPredictedNotSlower(v).message().find("max rate in SLO is predicted 0.5x"),
            std::string::npos);
  EXPECT_EQ(store->Predictions(v)->size(), 2u);
  EXPECT_EQ(store->SetPrediction(99, "h200", "{}").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store->SetPrediction(v, "h200", "[1]").code(), absl::StatusCode::kInvalidArgument);
}

TEST(PlacementStoreTest, VersionsAreImmutable) {
  auto store = OpenStore(TempDatabasePath("immutable.db"));
  const int64_t v = *store->Create(Version("a", 1));
  Database& db = store->database();
  for (const char* sql : {"UPDATE placement_layers SET device_of = x'00'",
                          "DELETE FROM placement_layers", "UPDATE placements SET name = 'x'",
                          "UPDATE placements SET metrics_json = '{}'", "DELETE FROM placements"}) {
    absl::Status s = db.Execute(sql);
    EXPECT_FALSE(s.ok()) << sql;
    EXPECT_NE(s.message().find("immutable"), std::string::npos) << s;
  }
  EXPECT_EQ(store->Get(v)->name, "a");
}

TEST(PlacementStoreTest, BadWritesAreClearErrors) {
  auto store = OpenStore(TempDatabasePath("bad.db"));
  PlacementVersion v = Version("a", 1);
  v.model = "nope";
  EXPECT_EQ(store->Create(v).status().code(), absl::StatusCode::kNotFound);
  v = Version("a", 1);
  v.placement = *Placement::Vanilla({0, 1}, 32, 8);
  EXPECT_NE(store->Create(v).status().message().find("model 'qwen3-moe-a' has 4 and 32"),
            std::string::npos);
  EXPECT_EQ(store->Create(Version("a", 1, 12345)).status().code(), absl::StatusCode::kNotFound);
  v = Version("a", 1);
  v.metrics_json = "[1]";
  EXPECT_EQ(store->Create(v).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store->AddModel("qwen3-moe-a", 8, 32).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(store->List("qwen3-moe-a")->empty());  // Nothing half-written.
}

// A reader on its own connection always sees whole versions while a writer adds them.
TEST(PlacementStoreTest, ConcurrentReaderAndWriter) {
  const std::string path = TempDatabasePath("concurrent.db");
  OpenStore(path);
  std::atomic<bool> done{false};
  std::atomic<int> reads{0}, read_errors{0};
  std::thread reader([&] {
    auto store = PlacementStore::Open(path);
    ASSERT_TRUE(store.ok());
    while (!done) {
      auto all = (*store)->List("qwen3-moe-a");
      if (!all.ok()) {
        ++read_errors;
        continue;
      }
      for (const auto& v : *all) EXPECT_EQ(v.placement.num_layers(), 4);
      ++reads;
    }
  });
  auto writer = OpenStore(path);
  // At least 40 versions, and on until the reader has read while they were written (on a loaded
  // machine its thread may not run at all during the first 40).
  const int read_before = reads;
  int written = 0;
  while (written < 40 || (reads == read_before && written < 4000)) {
    ASSERT_TRUE(writer->Create(Version("v", written)).ok());
    ++written;
  }
  const int read_while_writing = reads - read_before;
  done = true;
  reader.join();
  EXPECT_GT(read_while_writing, 0);
  EXPECT_EQ(read_errors, 0);
  EXPECT_EQ(writer->List("qwen3-moe-a")->size(), static_cast<size_t>(written));
}

// kill -9 in the middle of writing leaves a consistent database holding every committed
// version whole.
TEST(PlacementStoreTest, KillDuringWritesLosesNothingCommitted) {
  const std::string path = TempDatabasePath("kill.db");
  OpenStore(path);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto store = PlacementStore::Open(path);
    for (int i = 0;; ++i) {
      if (!(*store)->Create(Version("w", i)).ok()) _exit(3);
    }
  }
  usleep(400 * 1000);
  ASSERT_EQ(kill(child, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFSIGNALED(status)) << "the writer stopped on its own: " << status;
  auto store = PlacementStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  auto check = (*store)->database().Prepare("PRAGMA integrity_check");
  ASSERT_TRUE(check.ok());
  ASSERT_TRUE(*check->Step());
  EXPECT_EQ(check->ColumnText(0), "ok");
  auto all = (*store)->List("qwen3-moe-a");
  ASSERT_TRUE(all.ok()) << all.status();  // Every listed version reads back whole.
  EXPECT_GT(all->size(), 0u);
  for (size_t i = 0; i < all->size(); ++i) {
    EXPECT_EQ((*all)[i].placement.ToJson(), Placement::Random({0, 1, 2, 3}, 32, 8, i)->ToJson());
  }
}

}  // namespace
}  // namespace semmoe::planner
