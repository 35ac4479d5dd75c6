#include "engine/parallel/routing_sampler.h"

#include <map>
#include <memory>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/file.h"
#include "engine/forward/testing/paged_cpu_forward.h"
#include "engine/model/kv_sequence.h"
#include "engine/model/model.h"
#include "engine/parallel/gloo_communicator.h"
#include "engine/parallel/group_engine.h"
#include "engine/parallel/testing/tiny_group.h"
#include "gloo/rendezvous/hash_store.h"
#include "gtest/gtest.h"
#include "planner/trace/trace_reader.h"

namespace semmoe::engine {
namespace {

using testing::Collect;
using testing::Prompt;
using testing::TinyDir;

constexpr int kRanks = 2;

std::string TracePath(int rank) {
  return JoinPath(std::getenv("TEST_TMPDIR"), absl::StrCat("live-", rank, ".trace"));
}

// request name → its tokens in position order.
std::map<std::string, std::vector<planner::trace::TraceToken>> Read(const std::string& path) {
  auto reader = planner::trace::TraceReader::Open(path);
  EXPECT_TRUE(reader.ok()) << reader.status();
  std::map<std::string, std::vector<planner::trace::TraceToken>> out;
  planner::trace::TraceToken t;
  for (;;) {
    auto more = (*reader)->Next(t);
    EXPECT_TRUE(more.ok()) << more.status();
    if (!more.ok() || !*more) break;
    out[(*reader)->RequestName(t.request)].push_back(t);
  }
  return out;
}

// Every rank samples every request: each rank's trace holds the requests it served, every token
// they ran (prompt and fed-back outputs) at its position, with the experts one device routes the
// prompt's tokens to.
TEST(RoutingSamplerTest, TracesWhatEachRankServes) {
  constexpr int kRequests = 6, kTokens = 4;
  auto config = model::LoadModelConfig(TinyDir());
  ASSERT_TRUE(config.ok());
  gloo::rendezvous::HashStore store;
  std::vector<std::unique_ptr<Communicator>> comms(kRanks);
  std::vector<std::unique_ptr<RankModel>> models(kRanks);
  std::vector<std::unique_ptr<RoutingSampler>> samplers(kRanks);
  std::vector<std::unique_ptr<GroupEngine>> engines(kRanks);
  auto placement = planner::Placement::Random(config->MoeLayers(), config->num_experts, kRanks, 4);
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r) {
    threads.emplace_back([&, r] {
      comms[r] = *GlooCommunicator::Create(store, {.rank = r, .size = kRanks, .prefix = "rs"});
      models[r] = *RankModel::Create(TinyDir(), *placement, *comms[r], {});
      samplers[r] = *RoutingSampler::Create(
          *config, {.share = 1, .path = TracePath(r), .name_prefix = absl::StrCat("rank", r)});
      engines[r] = *GroupEngine::Create(*models[r], {.routing_sampler = samplers[r].get()});
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : engines) e->Start();
  std::vector<std::shared_ptr<Collect>> sinks;
  for (int i = 0; i < kRequests; ++i) {
    sinks.push_back(std::make_shared<Collect>());
    ASSERT_TRUE(engines[i % kRanks]
                    ->Submit({.id = absl::StrCat("r", i),
                              .prompt = Prompt(3 + i, i),
                              .max_tokens = kTokens,
                              .ignore_eos = true},
                             sinks.back())
                    .ok());
  }
  for (auto& s : sinks) {
    s->done.WaitForNotification();
    ASSERT_TRUE(s->status.ok()) << s->status;
  }
  engines[0]->RequestStop();
  for (auto& e : engines) ASSERT_TRUE(e->Wait().ok());
  EXPECT_TRUE(engines[0]->stats().samples_routing);

  auto one = model::LoadModel(TinyDir());
  ASSERT_TRUE(one.ok());
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_TRUE(samplers[r]->Flush().ok());
    const RoutingSampleStats s = samplers[r]->stats();
    EXPECT_EQ(s.requests, kRequests / kRanks);
    EXPECT_EQ(s.dropped_tokens, 0);
    EXPECT_EQ(s.error, "");
    const auto traced = Read(TracePath(r));
    ASSERT_EQ(traced.size(), static_cast<size_t>(kRequests / kRanks)) << "rank " << r;
    int n = 0;
    for (int i = r; i < kRequests; i += kRanks, ++n) {
      const std::vector<int32_t> prompt = Prompt(3 + i, i);
      const auto& tokens = traced.at(absl::StrCat("rank", r, "-", n));
      // The prompt, then every generated token but the last (it is never run).
      ASSERT_EQ(tokens.size(), prompt.size() + kTokens - 1) << i;
      std::vector<int32_t> ran = prompt;
      ran.insert(ran.end(), sinks[i]->result.tokens.begin(), sinks[i]->result.tokens.end() - 1);
      for (size_t p = 0; p < tokens.size(); ++p) {
        EXPECT_EQ(tokens[p].position, p);
        EXPECT_EQ(static_cast<int32_t>(tokens[p].token), ran[p]);
      }
      // The prompt's routing as one device computes it.
      auto cpu = forward::testing::PagedCpuForward::Create(*config, *(*one)->weights, 16);
      ASSERT_TRUE(cpu.ok()) << cpu.status();
      auto kv = (*cpu)->NewSequence(64);
      ASSERT_TRUE(kv.ok()) << kv.status();
      auto out = (*cpu)->forward().Forward({{.tokens = prompt, .kv = kv->get()}},
                                           {.collect_routing = true});
      ASSERT_TRUE(out.ok()) << out.status();
      const int k = config->top_k;
      for (size_t l = 0; l < out->routing.size(); ++l) {
        for (size_t p = 0; p < prompt.size(); ++p) {
          for (int j = 0; j < k; ++j) {
            EXPECT_EQ(tokens[p].experts[l * k + j], out->routing[l].expert_ids[p * k + j])
                << "request " << i << " layer " << l << " position " << p;
          }
        }
      }
    }
  }
}

TEST(RoutingSamplerTest, SamplesAShareAndKeepsAtMostMaxTokens) {
  auto config = model::LoadModelConfig(TinyDir());
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(RoutingSampler::Create(*config, {.share = 0, .path = "x"}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RoutingSampler::Create(*config, {.share = 1.5, .path = "x"}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RoutingSampler::Create(*config, {.share = 1}).status().code(),
            absl::StatusCode::kInvalidArgument);
  auto sampler = RoutingSampler::Create(
      *config, {.share = 0.5, .max_tokens = 40, .path = TracePath(9), .seed = 3});
  ASSERT_TRUE(sampler.ok());
  // 200 one-token requests, each a fresh sequence at position 0.
  std::vector<model::UnpagedKvSequence> dummies(200, model::UnpagedKvSequence(1));
  for (int i = 0; i < 200; ++i) {
    const int32_t token = i % 100;
    model::ForwardOutput out;
    for (int l = 0; l < static_cast<int>(config->MoeLayers().size()); ++l) {
      model::Routing r;
      r.top_k = config->top_k;
      for (int j = 0; j < config->top_k; ++j) {
        r.expert_ids.push_back(j);
        r.weights.push_back(0.5f);
      }
      out.routing.push_back(r);
    }
    std::vector<model::SequenceInput> batch = {
        {.tokens = absl::MakeConstSpan(&token, 1), .kv = &dummies[i]}};
    (*sampler)->Observe(batch, out);
  }
  const RoutingSampleStats s = (*sampler)->stats();
  EXPECT_GT(s.requests, 60);  // About half of 200.
  EXPECT_LT(s.requests, 140);
  EXPECT_EQ(s.tokens, 40);  // The bound.
  EXPECT_EQ(s.dropped_tokens, s.requests - 40);
  ASSERT_TRUE((*sampler)->Flush().ok());
  EXPECT_EQ(Read(TracePath(9)).size(), 40u);
  // An unwritable path: the error names it, in the stats too.
  auto bad = RoutingSampler::Create(*config, {.share = 1, .path = "/nonexistent/dir/t.trace"});
  ASSERT_TRUE(bad.ok());
  EXPECT_FALSE((*bad)->Flush().ok());
  EXPECT_NE((*bad)->stats().error.find("/nonexistent/dir/t.trace"), std::string::npos);
}

}  // namespace
}  // namespace semmoe::engine
