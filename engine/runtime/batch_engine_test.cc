#include "engine/runtime/batch_engine.h"

#include <cstdlib>
#include <map>

#include "absl/strings/str_cat.h"
#include "common/file.h"
#include "common/testing/shared_data.h"
#include "engine/forward/cpu_forward.h"
#include "engine/forward/testing/paged_cpu_forward.h"
#include "engine/model/model.h"
#include "engine/model/testing/tiny_model.h"
#include "engine/text/unicode.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace semmoe::engine::runtime {
namespace {

using model::LogitsMode;
using model::Model;
using model::SequenceInput;

std::unique_ptr<Model> TinyModel() {
  const std::string dir = JoinPath(std::getenv("TEST_TMPDIR"), "tiny");
  ::semmoe::testing::TinyModelOptions o;
  o.seed = 11;
  EXPECT_TRUE(::semmoe::testing::WriteTinyModel(o, dir).ok());
  auto model = model::LoadModel(dir, {.require_tokenizer = true});
  EXPECT_TRUE(model.ok()) << model.status();
  return std::move(*model);
}

// Greedy continuation of one prompt alone, one token at a time (the reference for batching), on
// a CpuForward of its own.
std::vector<int32_t> GreedyAlone(const Model& m, const std::vector<int32_t>& prompt, int n) {
  const int capacity = static_cast<int>(prompt.size()) + n;
  auto cpu = forward::testing::PagedCpuForward::Create(m.config, *m.weights, capacity / 4 + 1);
  EXPECT_TRUE(cpu.ok()) << cpu.status();
  auto kv = (*cpu)->NewSequence(capacity);
  EXPECT_TRUE(kv.ok()) << kv.status();
  std::vector<int32_t> out, step = prompt;
  int pos = 0;
  for (int i = 0; i < n; ++i) {
    SequenceInput in{step, pos, kv->get(), LogitsMode::kLast};
    auto f = (*cpu)->forward().Forward({&in, 1});
    EXPECT_TRUE(f.ok());
    Eigen::Index best;
    f->logits.row(0).maxCoeff(&best);
    pos += step.size();
    out.push_back(static_cast<int32_t>(best));
    step = {static_cast<int32_t>(best)};
  }
  return out;
}

std::vector<int32_t> Prompt(int length, int salt) {
  std::vector<int32_t> p;
  for (int i = 0; i < length; ++i) p.push_back((i * 37 + salt * 101) % 320);
  return p;
}

// The CPU product's engine: its own op-set forward (engine/forward/cpu_forward.h).
absl::StatusOr<std::unique_ptr<BatchEngine>> MakeEngine(const Model& m,
                                                        const BatchEngine::Options& o = {}) {
  return BatchEngine::Create(m.config, *m.weights, o);
}

TEST(BatchEngineTest, ContinuousBatchingWithChunksAndPreemptionMatchesAlone) {
  auto m = TinyModel();
  // A tiny KV cache (16 pages × 4 positions) and 9-token steps force chunked prefill, mixed
  // steps and preemption.
  BatchEngine::Options o{.max_batch_tokens = 9, .max_running = 8, .page_size = 4};
  o.kv_cache_bytes = 16ll * m->config.num_layers * 2 * 4 * m->config.kv_size() * 4;
  auto engine = MakeEngine(*m, o);
  ASSERT_TRUE(engine.ok()) << engine.status();
  std::map<std::string, std::vector<int32_t>> expected;
  for (int r = 0; r < 12; ++r) {
    const auto prompt = Prompt(3 + (r * 7) % 23, r);
    const int n = 4 + r % 9;
    expected[absl::StrCat("r", r)] = GreedyAlone(*m, prompt, n);
    ASSERT_TRUE(
        (*engine)
            ->Submit(
                {.id = absl::StrCat("r", r), .prompt = prompt, .max_tokens = n, .ignore_eos = true})
            .ok());
  }
  auto results = (*engine)->RunUntilIdle();
  ASSERT_TRUE(results.ok()) << results.status();
  ASSERT_EQ(results->size(), 12u);
  for (const auto& r : *results) {
    EXPECT_EQ(r.tokens, expected[r.id]) << r.id;
    EXPECT_EQ(r.finish, FinishReason::kLength);
  }
  const auto& s = (*engine)->stats();
  EXPECT_GT(s.preemptions, 0);
  EXPECT_GT(s.mixed_steps, 0);
  EXPECT_GT(s.max_batch_size, 2);
  EXPECT_EQ((*engine)->kv_cache().free_pages(), (*engine)->kv_cache().total_pages());
}

TEST(BatchEngineTest, CancelFreesTheSlotAndTheOthersContinue) {
  auto m = TinyModel();
  auto engine = MakeEngine(*m);
  ASSERT_TRUE((*engine)
                  ->Submit({.id = "a", .prompt = Prompt(5, 1), .max_tokens = 6, .ignore_eos = true})
                  .ok());
  ASSERT_TRUE((*engine)
                  ->Submit({.id = "b", .prompt = Prompt(5, 2), .max_tokens = 6, .ignore_eos = true})
                  .ok());
  std::vector<GenerationResult> finished;
  ASSERT_TRUE((*engine)->Step(finished).ok());  // Both admitted and prefilled.
  EXPECT_LT((*engine)->kv_cache().free_pages(), (*engine)->kv_cache().total_pages());
  EXPECT_TRUE((*engine)->Cancel("a"));
  EXPECT_FALSE((*engine)->Cancel("a"));
  EXPECT_FALSE((*engine)->Cancel("never"));
  EXPECT_EQ((*engine)->running(), 1);
  auto results = (*engine)->RunUntilIdle();
  ASSERT_TRUE(results.ok());
  ASSERT_EQ(results->size(), 1u);
  EXPECT_EQ((*results)[0].id, "b");
  EXPECT_EQ((*results)[0].tokens, GreedyAlone(*m, Prompt(5, 2), 6));
  EXPECT_EQ((*engine)->kv_cache().free_pages(), (*engine)->kv_cache().total_pages());
  // A cancelled id can be used again.
  EXPECT_TRUE((*engine)->Submit({.id = "a", .prompt = Prompt(3, 1), .max_tokens = 1}).ok());
}

// The engine's own CPU forward for a hook (options.forward) that watches its passes.
absl::StatusOr<std::unique_ptr<forward::CpuForward>> CpuForwardFor(const Model& m,
                                                                   const BatchEngine::Options& o) {
  return forward::CpuForward::Create(
      m.config, *m.weights,
      {.num_pages = PagedKvCache::PagesForModel(m.config, o.page_size, o.kv_cache_bytes),
       .page_size = o.page_size});
}

TEST(BatchEngineTest, ForwardEveryStepRunsEmptyPassesThroughTheHook) {
  auto m = TinyModel();
  int passes = 0, empty_passes = 0;
  BatchEngine::Options o;
  o.forward_every_step = true;
  auto cpu = CpuForwardFor(*m, o);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  o.forward = [&](absl::Span<const SequenceInput> batch) {
    ++passes;
    empty_passes += batch.empty();
    return (*cpu)->Forward(batch);
  };
  auto engine = BatchEngine::Create(m->config, o);
  std::vector<GenerationResult> finished;
  ASSERT_TRUE((*engine)->Step(finished).ok());  // Idle: still one (empty) pass.
  EXPECT_EQ(passes, 1);
  EXPECT_EQ(empty_passes, 1);
  ASSERT_TRUE((*engine)
                  ->Submit({.id = "x", .prompt = Prompt(4, 9), .max_tokens = 3, .ignore_eos = true})
                  .ok());
  auto results = (*engine)->RunUntilIdle();
  ASSERT_TRUE(results.ok());
  EXPECT_EQ((*results)[0].tokens, GreedyAlone(*m, Prompt(4, 9), 3));
  EXPECT_EQ(passes, 4);
}

// Plan() tells the next step's tokens before it runs (a group agrees on them); Step() runs that
// batch; a Cancel() in between drops the plan, and the step plans anew.
TEST(BatchEngineTest, PlanTellsTheStepsTokensAndACancelReplans) {
  auto m = TinyModel();
  std::vector<int64_t> pass_tokens;
  BatchEngine::Options o;
  o.max_batch_tokens = 6;
  auto cpu = CpuForwardFor(*m, o);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  o.forward = [&](absl::Span<const SequenceInput> batch) {
    int64_t tokens = 0;
    for (const SequenceInput& s : batch) tokens += s.tokens.size();
    pass_tokens.push_back(tokens);
    return (*cpu)->Forward(batch);
  };
  auto engine = BatchEngine::Create(m->config, o);
  ASSERT_TRUE(engine.ok()) << engine.status();
  EXPECT_EQ((*engine)->Plan(), 0);  // Nothing waits.
  for (const char* id : {"a", "b"}) {
    ASSERT_TRUE(
        (*engine)
            ->Submit({.id = id, .prompt = Prompt(4, id[0]), .max_tokens = 3, .ignore_eos = true})
            .ok());
  }
  EXPECT_EQ((*engine)->Plan(), 6);  // a's 4 prompt tokens and 2 of b's (the budget).
  std::vector<GenerationResult> finished;
  ASSERT_TRUE((*engine)->Step(finished).ok());
  EXPECT_EQ(pass_tokens, (std::vector<int64_t>{6}));
  EXPECT_EQ((*engine)->Plan(), 3);  // a decodes, b's last 2 prompt tokens.
  EXPECT_TRUE((*engine)->Cancel("a"));
  ASSERT_TRUE((*engine)->Step(finished).ok());
  EXPECT_EQ(pass_tokens, (std::vector<int64_t>{6, 2}));  // Planned anew without a.
  auto results = (*engine)->RunUntilIdle();
  ASSERT_TRUE(results.ok());
  ASSERT_EQ(results->size(), 1u);
  EXPECT_EQ((*results)[0].tokens, GreedyAlone(*m, Prompt(4, 'b'), 3));
}

TEST(BatchEngineTest, SeededSamplingDoesNotDependOnTheBatch) {
  auto m = TinyModel();
  auto run = [&](int others) {
    auto engine = MakeEngine(*m);
    for (int i = 0; i < others; ++i) {
      EXPECT_TRUE((*engine)
                      ->Submit({.id = absl::StrCat("other", i),
                                .prompt = Prompt(9, i + 50),
                                .max_tokens = 7,
                                .sampling = {.temperature = 0.9f, .seed = 99u + i}})
                      .ok());
    }
    EXPECT_TRUE(
        (*engine)
            ->Submit({.id = "me",
                      .prompt = Prompt(11, 3),
                      .max_tokens = 12,
                      .sampling = {.temperature = 1.2f, .top_k = 40, .top_p = 0.95f, .seed = 5},
                      .ignore_eos = true})
            .ok());
    auto results = (*engine)->RunUntilIdle();
    for (const auto& r : *results) {
      if (r.id == "me") return r.tokens;
    }
    return std::vector<int32_t>();
  };
  std::vector<int32_t> alone = run(0);
  EXPECT_EQ(alone.size(), 12u);
  EXPECT_EQ(run(5), alone);
}

TEST(BatchEngineTest, StopStringsEosAndStreamingEvents) {
  auto m = TinyModel();
  BatchEngine::Options o{.tokenizer = m->tokenizer.get()};
  auto engine = MakeEngine(*m, o);
  const auto prompt = *m->tokenizer->Encode("The router sends");
  ASSERT_TRUE((*engine)
                  ->Submit({.id = "free", .prompt = prompt, .max_tokens = 24, .ignore_eos = true})
                  .ok());
  std::vector<GenerationResult> done;
  std::vector<TokenEvent> events;
  while (!(*engine)->idle()) ASSERT_TRUE((*engine)->Step(done, &events).ok());
  ASSERT_EQ(done.size(), 1u);
  const std::string text = done[0].text;
  EXPECT_EQ(events.size(), 24u);
  EXPECT_EQ(model::ToValidUtf8(*m->tokenizer->Decode(done[0].tokens, /*skip_special=*/true)), text);
  ASSERT_GE(text.size(), 6u);
  // The output is decoded once: the events' pieces joined are the result's text.
  std::string joined;
  for (const TokenEvent& e : events) joined += e.text;
  EXPECT_EQ(joined, text);

  // A stop string taken from the middle of the free-running text cuts the output there.
  const std::string stop = text.substr(text.size() / 2, 2);
  ASSERT_TRUE((*engine)
                  ->Submit({.id = "stop",
                            .prompt = prompt,
                            .max_tokens = 24,
                            .stop = {stop},
                            .ignore_eos = true})
                  .ok());
  std::vector<GenerationResult> stopped;
  events.clear();
  while (!(*engine)->idle()) ASSERT_TRUE((*engine)->Step(stopped, &events).ok());
  ASSERT_EQ(stopped.size(), 1u);
  EXPECT_EQ(stopped[0].finish, FinishReason::kStop);
  EXPECT_EQ(stopped[0].text, text.substr(0, text.find(stop)));
  joined.clear();
  for (const TokenEvent& e : events) joined += e.text;
  EXPECT_EQ(joined, stopped[0].text);  // Nothing of the stop string was ever streamed.

  // EOS: make the first greedy token an EOS id.
  o.eos_ids = {done[0].tokens[0]};
  auto eos_engine = MakeEngine(*m, o);
  ASSERT_TRUE((*eos_engine)->Submit({.id = "eos", .prompt = prompt, .max_tokens = 24}).ok());
  auto eos = (*eos_engine)->RunUntilIdle();
  EXPECT_EQ((*eos)[0].finish, FinishReason::kEos);
  EXPECT_EQ((*eos)[0].tokens.size(), 1u);
  EXPECT_EQ((*eos)[0].text, "");
}

TEST(BatchEngineTest, PromptOnlyRequests) {
  auto m = TinyModel();
  auto engine = MakeEngine(*m, {.max_batch_tokens = 5});
  ASSERT_TRUE((*engine)->Submit({.id = "p", .prompt = Prompt(12, 1), .max_tokens = 0}).ok());
  auto results = (*engine)->RunUntilIdle();
  ASSERT_EQ(results->size(), 1u);
  EXPECT_TRUE((*results)[0].tokens.empty());
  EXPECT_EQ((*engine)->stats().prefill_tokens, 12);
  EXPECT_EQ((*engine)->stats().steps, 3);  // 5 + 5 + 2.
}

TEST(BatchEngineTest, SubmitErrors) {
  auto m = TinyModel();
  auto engine = MakeEngine(*m, {.max_waiting = 2});
  auto code = [&](GenerationRequest r) { return (*engine)->Submit(std::move(r)).code(); };
  using absl::StatusCode;
  EXPECT_EQ(code({.id = "a", .prompt = {}}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code({.id = "a", .prompt = {1}, .max_tokens = 600}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code({.id = "a", .prompt = {9999}}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code({.id = "a", .prompt = {1}, .sampling = {.top_p = 2}}),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(code({.id = "a", .prompt = {1}, .stop = {"x"}}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code({.id = "a", .prompt = {1}}), StatusCode::kOk);
  EXPECT_EQ(code({.id = "a", .prompt = {1}}), StatusCode::kAlreadyExists);
  EXPECT_EQ(code({.id = "b", .prompt = {1}}), StatusCode::kOk);
  EXPECT_EQ(code({.id = "c", .prompt = {1}}), StatusCode::kResourceExhausted);
  EXPECT_FALSE(MakeEngine(*m, {.max_batch_tokens = 0}).ok());
}

// The shared trained model: 22 reference prompts batched together give exactly the reference's
// 32-token greedy continuations.
TEST(BatchEngineTest, SharedModelGreedyContinuationsInOneBatch) {
  SEMMOE_REQUIRE_SHARED_DIR(shared);
  const std::string dir = JoinPath(shared, "models/qwen3-moe-a");
  auto m = model::LoadModel(dir);
  ASSERT_TRUE(m.ok()) << m.status();
  auto engine = MakeEngine(**m, {.max_batch_tokens = 512});
  auto prompts = nlohmann::json::parse(*ReadFile(JoinPath(dir, "reference/prompts.json")));
  std::map<std::string, std::vector<int32_t>> expected;
  for (const auto& p : prompts["prompts"]) {
    const std::string id = absl::StrCat("p", p["index"].get<int>());
    expected[id] = p["greedy_continuation_ids"].get<std::vector<int32_t>>();
    ASSERT_TRUE((*engine)
                    ->Submit({.id = id,
                              .prompt = p["token_ids"].get<std::vector<int32_t>>(),
                              .max_tokens = 32,
                              .ignore_eos = true})
                    .ok());
  }
  auto results = (*engine)->RunUntilIdle();
  ASSERT_TRUE(results.ok()) << results.status();
  ASSERT_EQ(results->size(), 22u);
  for (const auto& r : *results) EXPECT_EQ(r.tokens, expected[r.id]) << r.id;
  EXPECT_GT((*engine)->stats().mixed_steps, 0);
}

}  // namespace
}  // namespace semmoe::engine::runtime
