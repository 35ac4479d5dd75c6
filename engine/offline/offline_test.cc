#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>

#include "common/file.h"
#include "common/testing/shared_data.h"
#include "engine/model/model.h"
#include "engine/model/testing/tiny_model.h"
#include "engine/offline/cpu_prefill.h"
#include "engine/offline/score.h"
#include "engine/offline/trace_run.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "planner/trace/trace_reader.h"

namespace semmoe::engine::offline {
namespace {

using ::testing::HasSubstr;

std::string Tmp(const std::string& name) { return JoinPath(std::getenv("TEST_TMPDIR"), name); }

template <typename T>
std::vector<T> ReadBinary(const std::string& path) {
  auto bytes = ReadFile(path);
  std::vector<T> out(bytes->size() / sizeof(T));
  std::memcpy(out.data(), bytes->data(), out.size() * sizeof(T));
  return out;
}

std::vector<nlohmann::json> ReadLines(const std::string& path) {
  std::ifstream in(path);
  std::vector<nlohmann::json> lines;
  std::string line;
  while (std::getline(in, line)) lines.push_back(nlohmann::json::parse(line));
  return lines;
}

// `engine score` on each shared model's reference input reproduces the reference final logits
// and router choices on the product's forward (CpuPrefill, what `engine score` runs). Its
// routing lists the MoE layers only, in layer order, as the reference's router files do
// (deepseek-v*-tiny: layers 1-3; layer 0 is dense).
class ScoreReferenceTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ScoreReferenceTest, MatchesReference) {
  SEMMOE_REQUIRE_SHARED_DIR(shared);
  const std::string& name = GetParam();
  const std::string dir = JoinPath(shared, "models/" + name);
  auto m = model::LoadModel(dir);
  ASSERT_TRUE(m.ok()) << m.status();
  const std::string out = Tmp(name + ".score.jsonl");
  auto cpu = CreateCpuPrefill((*m)->config, *(*m)->weights, 300);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  auto n = RunScore((*m)->config, {.input = JoinPath(dir, "reference/score_input.jsonl"),
                                   .output = out,
                                   .max_batch_tokens = 300,
                                   .backend = (*cpu)->backend()});
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, 22);
  auto final_logits = ReadBinary<float>(JoinPath(dir, "reference/final_logits.f32"));
  auto ref_ids = ReadBinary<int32_t>(JoinPath(dir, "reference/router_topk_ids.i32"));
  auto prompts = nlohmann::json::parse(*ReadFile(JoinPath(dir, "reference/prompts.json")));
  const int layers = prompts.value("num_moe_layers", prompts["num_layers"].get<int>());
  const int k = prompts["top_k"];
  ASSERT_EQ(static_cast<size_t>(layers), (*m)->config.MoeLayers().size());
  auto lines = ReadLines(out);
  ASSERT_EQ(lines.size(), 22u);
  int64_t pairs = 0, same = 0;
  double worst = 0;
  for (const auto& line : lines) {
    const int index = line["id"];
    const auto logits = line["last_logits"].get<std::vector<float>>();
    ASSERT_EQ(logits.size(), 4096u);
    double diff = 0, norm = 0;
    for (int v = 0; v < 4096; ++v) {
      const double ref = final_logits[index * 4096 + v];
      diff += (logits[v] - ref) * (logits[v] - ref);
      norm += ref * ref;
    }
    worst = std::max(worst, std::sqrt(diff / norm));
    EXPECT_LT(std::sqrt(diff / norm), 1e-4) << index;
    const int offset = prompts["prompts"][index]["token_offset"];
    const auto& routing = line["routing"];
    ASSERT_EQ(routing.size(), static_cast<size_t>(layers));
    for (int l = 0; l < layers; ++l) {
      ASSERT_EQ(routing[l].size(), prompts["prompts"][index]["n_tokens"].get<size_t>());
      for (size_t t = 0; t < routing[l].size(); ++t) {
        auto ours = routing[l][t].get<std::vector<int32_t>>();
        const size_t at = ((offset + t) * layers + l) * k;
        std::vector<int32_t> theirs(ref_ids.begin() + at, ref_ids.begin() + at + k);
        std::sort(ours.begin(), ours.end());
        std::sort(theirs.begin(), theirs.end());
        ++pairs;
        same += ours == theirs;
      }
    }
  }
  std::cout << name << ": worst final-logit rel-L2 " << worst << ", router sets " << same << "/"
            << pairs << "\n";
  EXPECT_EQ(pairs, 1347 * layers);
  // The random-initialised fixtures have no near-tie: every set must match.
  if (prompts.value("random_init", false)) {
    EXPECT_EQ(same, pairs);
  } else {
    EXPECT_GE(same, pairs * 999 / 1000);
  }
}

INSTANTIATE_TEST_SUITE_P(SharedModels, ScoreReferenceTest,
                         ::testing::Values("qwen3-moe-a", "deepseek-v2-tiny", "deepseek-v3-tiny"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param;
                           for (char& c : name) {
                             if (c == '-') c = '_';
                           }
                           return name;
                         });

// `engine trace` against the shared model's reference routing trace: 20 held-out prompts spread
// over all domains (64–512 tokens, so positions past the 256 the model was trained on too), on
// the product's forward (CpuPrefill).
TEST(TraceTest, SharedModelMatchesReferenceTrace) {
  SEMMOE_REQUIRE_SHARED_DIR(shared);
  const std::string dir = JoinPath(shared, "models/qwen3-moe-a");
  const std::string ref = JoinPath(dir, "reference/trace");
  auto m = model::LoadModel(dir);
  ASSERT_TRUE(m.ok()) << m.status();
  auto index = nlohmann::json::parse(*ReadFile(JoinPath(ref, "index.json")));
  auto tokens = ReadBinary<uint16_t>(JoinPath(ref, "tokens.u16"));
  auto ids = ReadBinary<uint8_t>(JoinPath(ref, "topk_ids.u8"));
  std::string jsonl;
  std::vector<int> offsets;
  for (int i = 0; i < 2000; i += 100) {
    const auto& p = index["prompts"][i];
    const int offset = p["token_offset"], n = p["n_tokens"];
    offsets.push_back(offset);
    std::vector<int> prompt(tokens.begin() + offset, tokens.begin() + offset + n);
    jsonl += nlohmann::json({{"id", i}, {"token_ids", prompt}}).dump() + "\n";
  }
  ASSERT_TRUE(WriteFileAtomically(Tmp("ref_prompts.jsonl"), jsonl).ok());
  auto cpu = CreateCpuPrefill((*m)->config, *(*m)->weights, TraceOptions{}.max_batch_tokens);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  const std::string trace = Tmp("ref.trace");
  auto summary = RunTrace(
      (*m)->config, nullptr,
      {.prompts = Tmp("ref_prompts.jsonl"), .output = trace, .backend = (*cpu)->backend()});
  ASSERT_TRUE(summary.ok()) << summary.status();
  auto reader = planner::trace::TraceReader::Open(trace);
  ASSERT_TRUE(reader.ok());
  planner::trace::TraceToken token;
  int64_t pairs = 0, same = 0;
  while (*(*reader)->Next(token)) {
    const size_t at = (offsets[token.request] + token.position) * 16;
    EXPECT_EQ(token.token, tokens[offsets[token.request] + token.position]);
    for (int l = 0; l < 4; ++l) {
      std::vector<int> ours(token.experts.begin() + l * 4, token.experts.begin() + l * 4 + 4);
      std::vector<int> theirs(ids.begin() + at + l * 4, ids.begin() + at + l * 4 + 4);
      std::sort(ours.begin(), ours.end());
      std::sort(theirs.begin(), theirs.end());
      ++pairs;
      same += ours == theirs;
    }
  }
  std::cout << "reference trace: router sets " << same << "/" << pairs << " over "
            << summary->tokens << " tokens\n";
  EXPECT_EQ(pairs, summary->tokens * 4);
  EXPECT_GT(summary->tokens, 4000);
  EXPECT_GE(static_cast<double>(same) / pairs, 0.999) << same << " of " << pairs;
}

class TinyOfflineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = Tmp("tiny");
    ::semmoe::testing::TinyModelOptions o;
    o.seed = 21;
    ASSERT_TRUE(::semmoe::testing::WriteTinyModel(o, dir_).ok());
    auto m = model::LoadModel(dir_, {.require_tokenizer = true});
    ASSERT_TRUE(m.ok()) << m.status();
    model_ = std::move(*m);
    auto cpu = CreateCpuPrefill(model_->config, *model_->weights, ScoreOptions{}.max_batch_tokens);
    ASSERT_TRUE(cpu.ok()) << cpu.status();
    cpu_ = std::move(*cpu);
  }
  std::string dir_;
  std::unique_ptr<model::Model> model_;
  std::unique_ptr<CpuPrefill> cpu_;  // What `engine score` and `engine trace` run on.
};

TEST_F(TinyOfflineTest, ScoreErrorsNameTheLineAndLeaveNoOutput) {
  struct Case {
    std::string input;
    std::string error;
  };
  for (const Case& c : std::vector<Case>{
           {"{\"id\": 1, \"token_ids\": [1, 2]}\nnot json\n", "in.jsonl:2: not a JSON object"},
           {"{\"id\": 1, \"token_ids\": [1, 99999]}\n", "in.jsonl:1: token id 99999"},
           {"{\"token_ids\": [1]}\n", "in.jsonl:1: \"id\""},
           {"{\"id\": \"a\", \"token_ids\": []}\n", "non-empty list"},
           {"{\"id\": \"a\", \"token_ids\": [1.5]}\n", "token id 1.5"}}) {
    const std::string in = Tmp("in.jsonl"), out = Tmp("out.jsonl");
    ASSERT_TRUE(WriteFileAtomically(in, c.input).ok());
    auto n = RunScore(model_->config, {.input = in, .output = out, .backend = cpu_->backend()});
    ASSERT_FALSE(n.ok()) << c.input;
    EXPECT_THAT(std::string(n.status().message()), HasSubstr(c.error));
    EXPECT_FALSE(ReadFile(out).ok());
    EXPECT_FALSE(ReadFile(out + ".partial").ok());
  }
  EXPECT_EQ(RunScore(model_->config,
                     {.input = Tmp("missing"), .output = Tmp("o"), .backend = cpu_->backend()})
                .status()
                .code(),
            absl::StatusCode::kNotFound);
  // Without a forward to run on: refused, and no output.
  ASSERT_TRUE(WriteFileAtomically(Tmp("in.jsonl"), "{\"id\": 1, \"token_ids\": [1, 2]}\n").ok());
  auto unbacked = RunScore(model_->config, {.input = Tmp("in.jsonl"), .output = Tmp("out.jsonl")});
  EXPECT_EQ(unbacked.status().code(), absl::StatusCode::kFailedPrecondition) << unbacked.status();
  EXPECT_FALSE(ReadFile(Tmp("out.jsonl")).ok());
}

// Small batches (several passes, one prompt longer than the budget) score and trace what one
// batch of everything does — the same routing, logits within f32 summation order — through a
// backend that wraps the forward (how the GPU forward plugs in), and return every page.
TEST_F(TinyOfflineTest, SmallBatchesScoreAndTraceWhatOneBatchDoes) {
  std::string in;
  for (int i = 0; i < 9; ++i) {
    std::vector<int32_t> ids;
    for (int t = 0; t < 3 + 5 * i; ++t) ids.push_back((7 * t + i) % 300);
    in += nlohmann::json({{"id", i}, {"token_ids", ids}}).dump() + "\n";
  }
  ASSERT_TRUE(WriteFileAtomically(Tmp("batched_in.jsonl"), in).ok());
  const int budget = 24;
  const PrefillBackend plain = cpu_->backend();
  int passes = 0;
  PrefillBackend counted{
      .forward =
          [&](absl::Span<const model::SequenceInput> batch, const model::ForwardOptions& o) {
            ++passes;
            for (const auto& s : batch) EXPECT_FALSE(s.kv->page_table().empty());
            return plain.forward(batch, o);
          },
      .cache = plain.cache};
  ASSERT_TRUE(
      RunScore(model_->config,
               {.input = Tmp("batched_in.jsonl"), .output = Tmp("one.jsonl"), .backend = plain})
          .ok());
  ASSERT_TRUE(RunScore(model_->config, {.input = Tmp("batched_in.jsonl"),
                                        .output = Tmp("small.jsonl"),
                                        .max_batch_tokens = budget,
                                        .backend = counted})
                  .ok());
  EXPECT_GT(passes, 3);  // Several batches.
  const auto one = ReadLines(Tmp("one.jsonl")), small = ReadLines(Tmp("small.jsonl"));
  ASSERT_EQ(one.size(), 9u);
  ASSERT_EQ(small.size(), one.size());
  for (size_t i = 0; i < one.size(); ++i) {
    EXPECT_EQ(small[i]["id"], one[i]["id"]);
    EXPECT_EQ(small[i]["routing"], one[i]["routing"]) << i;
    const auto a = small[i]["last_logits"].get<std::vector<float>>();
    const auto b = one[i]["last_logits"].get<std::vector<float>>();
    ASSERT_EQ(a.size(), b.size());
    for (size_t v = 0; v < a.size(); ++v) EXPECT_NEAR(a[v], b[v], 1e-4f) << i << " " << v;
  }
  EXPECT_EQ(plain.cache->free_pages(), plain.cache->total_pages());

  ASSERT_TRUE(
      RunTrace(model_->config, nullptr,
               {.prompts = Tmp("batched_in.jsonl"), .output = Tmp("one.trace"), .backend = plain})
          .ok());
  ASSERT_TRUE(RunTrace(model_->config, nullptr,
                       {.prompts = Tmp("batched_in.jsonl"),
                        .output = Tmp("small.trace"),
                        .max_batch_tokens = budget,
                        .backend = counted})
                  .ok());
  auto a = planner::trace::TraceReader::Open(Tmp("one.trace"));
  auto b = planner::trace::TraceReader::Open(Tmp("small.trace"));
  ASSERT_TRUE(a.ok() && b.ok());
  planner::trace::TraceToken ta, tb;
  int64_t tokens = 0;
  while (*(*a)->Next(ta)) {
    ASSERT_TRUE(*(*b)->Next(tb));
    EXPECT_EQ(tb.request, ta.request);
    EXPECT_EQ(tb.position, ta.position);
    EXPECT_EQ(tb.experts, ta.experts);
    ++tokens;
  }
  EXPECT_FALSE(*(*b)->Next(tb));
  EXPECT_GT(tokens, 100);
  EXPECT_EQ(plain.cache->free_pages(), plain.cache->total_pages());
}

// The trace holds, for every prompt token, the routing the forward pass chose — checked
// against `score`'s routing for the same prompts — whether prompts came as text or ids.
TEST_F(TinyOfflineTest, TraceRecordsEveryTokensRouting) {
  const std::string prompts = Tmp("prompts.jsonl");
  const std::vector<std::string> texts = {"The planner reads the traces.",
                                          "int main() { return 0; }", "x"};
  std::string jsonl;
  std::string score_in;
  for (size_t i = 0; i < texts.size(); ++i) {
    const auto ids = *model_->tokenizer->Encode(texts[i]);
    jsonl += nlohmann::json({{"id", "p" + std::to_string(i)}, {"text", texts[i]}}).dump() + "\n";
    score_in += nlohmann::json({{"id", i}, {"token_ids", ids}}).dump() + "\n";
  }
  jsonl += "{\"id\": 7, \"token_ids\": [5, 6, 7, 8]}\n";
  score_in += "{\"id\": 3, \"token_ids\": [5, 6, 7, 8]}\n";
  ASSERT_TRUE(WriteFileAtomically(prompts, jsonl).ok());
  ASSERT_TRUE(WriteFileAtomically(Tmp("score_in.jsonl"), score_in).ok());
  auto summary = RunTrace(model_->config, model_->tokenizer.get(),
                          {.prompts = prompts,
                           .output = Tmp("t.trace"),
                           .max_batch_tokens = 16,
                           .backend = cpu_->backend()});
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->prompts, 4);
  ASSERT_TRUE(RunScore(model_->config, {.input = Tmp("score_in.jsonl"),
                                        .output = Tmp("score_out.jsonl"),
                                        .backend = cpu_->backend()})
                  .ok());
  auto scored = ReadLines(Tmp("score_out.jsonl"));

  auto reader = planner::trace::TraceReader::Open(Tmp("t.trace"));
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_EQ((*reader)->header().num_experts, 8u);
  EXPECT_EQ((*reader)->header().num_moe_layers(), 2);
  planner::trace::TraceToken token;
  int64_t count = 0;
  while (*(*reader)->Next(token)) {
    const auto& routing = scored[token.request]["routing"];
    for (int l = 0; l < 2; ++l) {
      for (int j = 0; j < 2; ++j) {
        EXPECT_EQ(token.experts[l * 2 + j], routing[l][token.position][j].get<int>());
      }
      EXPECT_NEAR(token.weights[l * 2] + token.weights[l * 2 + 1], 1.0f, 2e-3);  // Renormalised.
    }
    ++count;
  }
  EXPECT_EQ(count, summary->tokens);
  EXPECT_EQ((*reader)->RequestName(0), "p0");
  EXPECT_EQ((*reader)->RequestName(3), "7");
}

TEST_F(TinyOfflineTest, TraceErrors) {
  const std::string prompts = Tmp("bad_prompts.jsonl");
  ASSERT_TRUE(WriteFileAtomically(prompts, "{\"id\": 1, \"prompt\": \"x\"}\n").ok());
  auto s = RunTrace(model_->config, model_->tokenizer.get(),
                    {.prompts = prompts, .output = Tmp("bad.trace"), .backend = cpu_->backend()});
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("bad_prompts.jsonl:1: needs \"text\""));
  EXPECT_FALSE(ReadFile(Tmp("bad.trace")).ok());
  ASSERT_TRUE(WriteFileAtomically(prompts, "{\"id\": 1, \"text\": \"hi\"}\n").ok());
  s = RunTrace(model_->config, nullptr,
               {.prompts = prompts, .output = Tmp("bad.trace"), .backend = cpu_->backend()});
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("needs a tokenizer.json"));
}

}  // namespace
}  // namespace semmoe::engine::offline
