// The invariant of docs/PARALLEL.md: placement never changes the math (every architecture:
// qwen3_moe, qwen2_moe, mixtral, and deepseek_v2/v3 with MLA on the shared fixtures). G ranks
// (threads, each with its own Gloo communicator, weights and KV) run prompts through prefill and
// greedy decoding in Attention-DP, Attention-TP plain and Attention-TP shuffled, under vanilla,
// random, skewed and replicated (hot experts copied to other devices) placements; the tokens must
// equal one device's, the logits agree within 1e-4 relative L2, and the byte counters must equal
// the bytes recomputed from the routing each rank saw.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <numeric>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/file.h"
#include "common/testing/shared_data.h"
#include "engine/forward/cpu_forward.h"
#include "engine/forward/testing/paged_cpu_forward.h"
#include "engine/model/model.h"
#include "engine/model/testing/tiny_model.h"
#include "engine/parallel/gloo_communicator.h"
#include "engine/parallel/lockstep_greedy.h"
#include "engine/parallel/rank_model.h"
#include "engine/parallel/tp_weights.h"
#include "engine/runtime/kv_cache.h"
#include "gloo/rendezvous/hash_store.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "planner/affinity/layer_affinity.h"
#include "planner/affinity/token_affinity.h"
#include "planner/affinity/token_affinity_builder.h"
#include "planner/placement/balanced_assign.h"
#include "planner/placement/holder_choice.h"
#include "planner/trace/trace_set.h"

namespace semmoe::engine {
namespace {

using model::LogitsMode;
using model::Matrix;
using model::Routing;
using model::SequenceInput;

constexpr int kDecodeSteps = 6;
constexpr double kSlack = 0.5;  // Shuffled TP: a rank's chunk may reach 1.5 × the mean.

enum class Mode { kDp, kTpPlain, kTpShuffled };
// kReplicatedApart: replicated, the holder choice's demand and row counts exchanged apart (two
// collectives a layer) instead of the routing all-gathered (one; engine/forward/ep_exchange.h).
// kNodes: random, on nodes (G = 4: 2 × 2, a token crossing to each remote node once and fanned
// out there, engine/forward/node_exchange.h; G = 2: 2 × 1, the flat exchange counting every
// peer's bytes as cross-node).
enum class Layout { kVanilla, kRandom, kSkewed, kReplicated, kReplicatedApart, kNodes };
const char* ModeName(Mode m) {
  return m == Mode::kDp ? "dp" : m == Mode::kTpPlain ? "tp_plain" : "tp_shuffled";
}
const char* LayoutName(Layout l) {
  return l == Layout::kVanilla  ? "vanilla"
         : l == Layout::kRandom ? "random"
         : l == Layout::kSkewed     ? "skewed"
         : l == Layout::kReplicated ? "replicated"
         : l == Layout::kNodes      ? "nodes"
                                    : "replicated_apart";
}

using SeqOutput = GreedyOutput;

absl::StatusOr<std::vector<SeqOutput>> RunGreedy(
    const GreedyForwardFn& forward, runtime::PagedKvCache& pages,
    const std::vector<std::vector<int32_t>>& prompts,
    std::vector<std::vector<Routing>>* routing = nullptr) {
  return RunLockstepGreedy(forward, pages, prompts,
                           {.decode_steps = kDecodeSteps, .keep_logits = true, .routing = routing});
}

double RelL2(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    norm += double(b[i]) * b[i];
  }
  return std::sqrt(diff / std::max(norm, 1e-30));
}

struct ModelCase {
  std::string name;
  std::string dir;  // Empty: skipped (shared data not available).
  std::vector<std::vector<int32_t>> prompts;
};

std::string TempDir() {
  const char* tmp = std::getenv("TEST_TMPDIR");
  return tmp != nullptr ? tmp : "/tmp";
}

ModelCase TinyCase(const std::string& name, ::semmoe::testing::TinyModelOptions options) {
  ModelCase c{name, JoinPath(TempDir(), name), {}};
  options.seed = 11;
  options.num_layers = 3;
  const absl::Status written = ::semmoe::testing::WriteTinyModel(options, c.dir);
  EXPECT_TRUE(written.ok()) << written;
  // Prompts of uneven lengths from a fixed pseudo-random sequence over the byte tokens.
  uint32_t state = 12345;
  for (int len : {9, 3, 17, 6, 12, 1, 20}) {
    std::vector<int32_t> p;
    for (int i = 0; i < len; ++i) {
      state = state * 1103515245u + 12345u;
      p.push_back(static_cast<int32_t>((state >> 16) % 256));
    }
    c.prompts.push_back(p);
  }
  return c;
}

// A shared model with reference prompts: qwen3-moe-a (trained), deepseek-v2-tiny and
// deepseek-v3-tiny (MLA, a dense first layer, group-limited / bias-corrected routing).
ModelCase SharedCase(const std::string& name, const std::string& folder) {
  ModelCase c{name, "", {}};
  const std::string shared = testing::EnvPath("SEMMOE_SHARED_DIR");
  if (shared.empty()) return c;
  c.dir = JoinPath(shared, "models/" + folder);
  auto meta = ReadFile(JoinPath(c.dir, "reference/prompts.json"));
  EXPECT_TRUE(meta.ok()) << meta.status();
  if (!meta.ok()) return {};
  const nlohmann::json json = nlohmann::json::parse(*meta);
  for (int i = 0; i < 6; ++i) {
    std::vector<int32_t> ids = json["prompts"][i]["token_ids"].get<std::vector<int32_t>>();
    ids.resize(std::min<size_t>(ids.size(), 24 + 7 * i));  // Uneven, short enough to be quick.
    c.prompts.push_back(ids);
  }
  return c;
}

const ModelCase& GetModelCase(const std::string& name) {
  static const auto* cases = [] {
    auto* m = new std::map<std::string, ModelCase>();
    ::semmoe::testing::TinyModelOptions q3;
    q3.arch = model::Arch::kQwen3Moe;
    q3.mlp_only_layers = {1};  // A dense layer between MoE layers.
    (*m)["tiny_qwen3_moe"] = TinyCase("tiny_qwen3_moe", q3);
    ::semmoe::testing::TinyModelOptions q2;
    q2.arch = model::Arch::kQwen2Moe;  // Shared expert and q/k/v biases.
    (*m)["tiny_qwen2_moe"] = TinyCase("tiny_qwen2_moe", q2);
    ::semmoe::testing::TinyModelOptions mx;
    mx.arch = model::Arch::kMixtral;
    mx.num_kv_heads = 4;  // KV heads split (not replicated) under TP.
    mx.dtype = kernels::DType::kF32;
    (*m)["tiny_mixtral"] = TinyCase("tiny_mixtral", mx);
    for (const auto& [name, folder] : std::vector<std::pair<std::string, std::string>>{
             {"shared_qwen3_moe_a", "qwen3-moe-a"},
             {"shared_deepseek_v2_tiny", "deepseek-v2-tiny"},
             {"shared_deepseek_v3_tiny", "deepseek-v3-tiny"}}) {
      (*m)[name] = SharedCase(name, folder);
    }
    return m;
  }();
  return cases->at(name);
}

struct Reference {
  std::unique_ptr<model::Model> model;
  std::vector<SeqOutput> outputs;
  std::vector<std::vector<Routing>> routing;  // [forward][moe layer]
};

const Reference& GetReference(const ModelCase& c) {
  static auto* refs = new std::map<std::string, std::unique_ptr<Reference>>();
  auto& ref = (*refs)[c.name];
  if (ref == nullptr) {
    ref = std::make_unique<Reference>();
    auto model = model::LoadModel(c.dir);
    EXPECT_TRUE(model.ok()) << model.status();
    ref->model = std::move(*model);
    // The single device: the product's CPU forward with every expert.
    const model::ModelConfig& config = ref->model->config;
    auto one = forward::testing::PagedCpuForward::Create(config, *ref->model->weights,
                                                         /*num_pages=*/256, /*page_size=*/16);
    EXPECT_TRUE(one.ok()) << one.status();
    auto outputs =
        RunGreedy([&](absl::Span<const model::SequenceInput> b,
                      const model::ForwardOptions& o) { return (*one)->forward().Forward(b, o); },
                  (*one)->pages(), c.prompts, &ref->routing);
    EXPECT_TRUE(outputs.ok()) << outputs.status();
    ref->outputs = std::move(*outputs);
  }
  return *ref;
}

// Experts sorted by how often the reference routed to them, the busiest N/G on device 0, and so
// on: balanced slots, maximally unbalanced load.
planner::Placement Skewed(const model::ModelConfig& config, const Reference& ref, int g) {
  const int n = config.num_experts;
  std::vector<std::vector<int32_t>> device_of;
  for (size_t l = 0; l < config.MoeLayers().size(); ++l) {
    std::vector<int64_t> load(n, 0);
    for (const auto& forward : ref.routing) {
      for (int32_t e : forward[l].expert_ids) ++load[e];
    }
    std::vector<int32_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return load[a] > load[b]; });
    std::vector<int32_t> dev(n);
    for (int i = 0; i < n; ++i) dev[order[i]] = i / (n / g);
    device_of.push_back(dev);
  }
  return *planner::Placement::FromAssignment(config.MoeLayers(), n, g, device_of);
}

// Random homes plus, per device, one replica of the busiest expert it does not hold.
planner::Placement Replicated(const model::ModelConfig& config, const Reference& ref, int g) {
  const planner::Placement base =
      *planner::Placement::Random(config.MoeLayers(), config.num_experts, g, /*seed=*/9);
  std::vector<std::vector<std::vector<int32_t>>> replicas(base.num_layers());
  for (int l = 0; l < base.num_layers(); ++l) {
    std::vector<int64_t> load(config.num_experts, 0);
    for (const auto& forward : ref.routing) {
      for (int32_t e : forward[l].expert_ids) ++load[e];
    }
    for (int d = 0; d < g; ++d) {
      int best = -1;
      for (int e = 0; e < config.num_experts; ++e) {
        if (base.Device(l, e) != d && (best < 0 || load[e] > load[best])) best = e;
      }
      replicas[l].push_back({best});
    }
  }
  return *base.WithReplicas(std::move(replicas));
}

// The predictor borrows its affinity tables: both travel together.
struct Prediction {
  std::unique_ptr<planner::TokenAffinity> affinity;
  std::unique_ptr<DevicePredictor> predictor;
};

// Affinity tables from the reference's prefill routing (a trace of these very prompts).
Prediction Predictor(const ModelCase& c, const Reference& ref,
                     const planner::Placement& placement) {
  const model::ModelConfig& config = ref.model->config;
  planner::trace::TraceSet trace;
  trace.header = {.num_experts = static_cast<uint32_t>(config.num_experts),
                  .vocab_size = static_cast<uint32_t>(config.vocab_size),
                  .top_k = static_cast<uint16_t>(config.top_k)};
  for (int l : config.MoeLayers()) trace.header.moe_layers.push_back(l);
  const int layers = placement.num_layers(), k = config.top_k;
  int64_t row = 0;
  for (size_t i = 0; i < c.prompts.size(); ++i) {
    std::vector<uint32_t> tokens(c.prompts[i].begin(), c.prompts[i].end());
    std::vector<uint16_t> experts;
    for (size_t t = 0; t < tokens.size(); ++t) {
      for (int l = 0; l < layers; ++l) {
        for (int j = 0; j < k; ++j)
          experts.push_back(ref.routing[0][l].expert_ids[(row + t) * k + j]);
      }
    }
    row += static_cast<int64_t>(tokens.size());
    EXPECT_TRUE(trace.AddRequest(absl::StrCat("p", i), tokens, experts).ok());
  }
  Prediction out;
  out.affinity = std::make_unique<planner::TokenAffinity>(planner::BuildTokenAffinity(trace));
  const auto transitions = planner::LayerAffinity::Build(trace, placement);
  out.predictor = std::make_unique<DevicePredictor>(*out.affinity, placement, transitions.Table());
  return out;
}

struct RankResult {
  std::vector<SeqOutput> outputs;
  std::vector<size_t> prompt_ids;             // Which prompts this rank ran.
  std::vector<std::vector<Routing>> routing;  // [forward][moe layer], rows this rank routed.
  std::vector<MoeLayerCounters> counters;
  CommCounters comm;
  std::vector<int32_t> tp_devices;  // CpuForward::TpLastDevices() after the last forward.
};

// Under a topology: the bytes crossing nodes and staying inside, recomputed from the routing each
// rank ran (no replicas: every expert runs on its home), against the counters; each sum over the
// ranks of bytes sent equals the sum received.
void CheckNodeBytes(const planner::Topology& topo, const planner::Placement& placement,
                    const std::vector<RankResult>& results, const model::ModelConfig& config,
                    int64_t calls) {
  const int g = topo.num_ranks(), k = config.top_k;
  const bool dedup = topo.num_nodes() > 1 && topo.num_nodes() < g;
  const int64_t hidden = config.hidden_size;
  const int64_t back = hidden * 4, flat_row = hidden * 4 + k * 8, cross_row = hidden * 4 + k * 12;
  int64_t cross_rows = 0, intra_rows = 0;  // Dispatch rows over all ranks, passes and layers.
  for (int r = 0; r < g; ++r) {
    for (const auto& pass : results[r].routing) {
      for (size_t l = 0; l < pass.size(); ++l) {
        for (int t = 0; t < pass[l].tokens(); ++t) {
          std::set<int> ranks;
          for (int j = 0; j < k; ++j) ranks.insert(placement.Device(l, pass[l].expert_ids[t * k + j]));
          std::set<int> nodes;
          for (int d : ranks) {
            if (d == r) continue;
            if (topo.SameNode(d, r)) {
              ++intra_rows;
            } else if (!dedup) {
              ++cross_rows;
            } else {
              nodes.insert(topo.NodeOf(d));
              if (d != topo.Gateway(r, topo.NodeOf(d))) ++intra_rows;  // Fanned out there.
            }
          }
          cross_rows += static_cast<int64_t>(nodes.size());
        }
      }
    }
  }
  int64_t cross_sent = 0, cross_received = 0, intra_sent = 0, intra_received = 0;
  for (int r = 0; r < g; ++r) {
    int64_t dispatch_sent = 0, combine_sent = 0, rank_cross = 0, rank_intra = 0;
    for (const MoeLayerCounters& m : results[r].counters) {
      cross_sent += m.cross_node_bytes_sent;
      cross_received += m.cross_node_bytes_received;
      intra_sent += m.intra_node_bytes_sent;
      intra_received += m.intra_node_bytes_received;
      rank_cross += m.cross_node_bytes_sent;
      rank_intra += m.intra_node_bytes_sent;
      dispatch_sent += m.dispatch_bytes_sent;
      combine_sent += m.combine_bytes_sent;
    }
    EXPECT_EQ(rank_cross + rank_intra, dispatch_sent + combine_sent) << "rank " << r;
    if (!dedup) continue;
    // Two stages and their combines: four all-to-alls a call; the counts are all-gathered.
    const CollectiveCounters& a2a = results[r].comm[CollectiveKind::kAllToAll];
    EXPECT_EQ(a2a.calls, 4 * calls) << "rank " << r;
    EXPECT_EQ(a2a.bytes_sent, dispatch_sent + combine_sent) << "rank " << r;
  }
  EXPECT_EQ(cross_sent, cross_received);
  EXPECT_EQ(intra_sent, intra_received);
  EXPECT_EQ(cross_sent, cross_rows * ((dedup ? cross_row : flat_row) + back));
  EXPECT_EQ(intra_sent, intra_rows * (flat_row + back));
  if (dedup) {
    EXPECT_GT(cross_rows, 0) << "no row crossed nodes";
  }
  std::cout << "node exchange: " << cross_rows << " rows crossed nodes, " << intra_rows
            << " stayed inside\n";
}

using Param = std::tuple<std::string, int, Mode, Layout>;

class ParallelForwardTest : public ::testing::TestWithParam<Param> {};

TEST_P(ParallelForwardTest, MatchesOneDeviceAndCountsBytesExactly) {
  const auto& [name, g, mode, layout] = GetParam();
  const ModelCase& c = GetModelCase(name);
  if (c.dir.empty()) GTEST_SKIP() << "SEMMOE_SHARED_DIR is not set (./semmoe test sets it)";
  const Reference& ref = GetReference(c);
  ASSERT_NE(ref.model, nullptr);
  const model::ModelConfig& config = ref.model->config;
  const std::vector<int> moe_layers = config.MoeLayers();

  std::unique_ptr<planner::Placement> placement;
  switch (layout) {
    case Layout::kVanilla:
      placement = std::make_unique<planner::Placement>(
          *planner::Placement::Vanilla(moe_layers, config.num_experts, g));
      break;
    case Layout::kRandom:
    case Layout::kNodes:
      placement = std::make_unique<planner::Placement>(
          *planner::Placement::Random(moe_layers, config.num_experts, g, /*seed=*/5));
      break;
    case Layout::kSkewed:
      placement = std::make_unique<planner::Placement>(Skewed(config, ref, g));
      break;
    case Layout::kReplicated:
    case Layout::kReplicatedApart:
      placement = std::make_unique<planner::Placement>(Replicated(config, ref, g));
      break;
  }
  std::unique_ptr<planner::Topology> topology;
  if (layout == Layout::kNodes) {
    topology = std::make_unique<planner::Topology>(*planner::Topology::Parse(g == 4 ? "2x2" : "2x1"));
  }
  Prediction prediction;
  if (mode == Mode::kTpShuffled) prediction = Predictor(c, ref, *placement);
  const DevicePredictor* predictor = prediction.predictor.get();

  gloo::rendezvous::HashStore store;
  std::vector<RankResult> results(g);
  std::vector<std::thread> threads;
  for (int r = 0; r < g; ++r) {
    threads.emplace_back([&, r] {
      auto comm = GlooCommunicator::Create(store, {.rank = r, .size = g, .prefix = "pf"});
      ASSERT_TRUE(comm.ok()) << comm.status();
      RankModelOptions options;
      options.attention = mode == Mode::kDp ? AttentionMode::kDp : AttentionMode::kTp;
      options.predictor = predictor;
      // A large slack, so that chunks really are uneven in these small batches.
      options.token_balance_eps = kSlack;
      if (layout == Layout::kReplicatedApart) options.routing_gather_max_bytes = 0;
      options.topology = topology.get();
      auto rank_model = RankModel::Create(c.dir, *placement, **comm, options);
      ASSERT_TRUE(rank_model.ok()) << rank_model.status();
      RankResult& mine = results[r];
      std::vector<std::vector<int32_t>> prompts;
      for (size_t i = 0; i < c.prompts.size(); ++i) {
        if (mode != Mode::kDp || static_cast<int>(i % g) == r) {
          prompts.push_back(c.prompts[i]);
          mine.prompt_ids.push_back(i);
        }
      }
      auto pages = (*rank_model)->NewPageCache();
      ASSERT_TRUE(pages.ok()) << pages.status();
      forward::CpuForward& cpu = *(*rank_model)->cpu_forward();
      auto outputs = RunGreedy([&](absl::Span<const model::SequenceInput> b,
                                   const model::ForwardOptions& o) { return cpu.Forward(b, o); },
                               **pages, prompts, &mine.routing);
      ASSERT_TRUE(outputs.ok()) << outputs.status();
      mine.outputs = std::move(*outputs);
      mine.counters = cpu.ep_counters();
      mine.comm = (*comm)->counters();
      auto devices = cpu.TpLastDevices();
      ASSERT_TRUE(devices.ok()) << devices.status();
      mine.tp_devices = std::move(*devices);
    });
  }
  for (std::thread& t : threads) t.join();
  if (HasFatalFailure()) return;

  // Outputs: every prompt, wherever it ran, equals the single device.
  double worst = 0;
  for (int r = 0; r < g; ++r) {
    for (size_t j = 0; j < results[r].prompt_ids.size(); ++j) {
      const SeqOutput& got = results[r].outputs[j];
      const SeqOutput& want = ref.outputs[results[r].prompt_ids[j]];
      EXPECT_EQ(got.tokens, want.tokens) << "rank " << r << " prompt " << results[r].prompt_ids[j];
      for (size_t s = 0; s < want.logits.size(); ++s) {
        worst = std::max(worst, RelL2(got.logits[s], want.logits[s]));
      }
    }
  }
  EXPECT_LT(worst, 1e-4);
  int64_t all_remote = 0, all_local = 0;
  for (int r = 0; r < g; ++r) {
    for (const MoeLayerCounters& m : results[r].counters) {
      all_remote += m.remote_activations;
      all_local += m.local_activations;
    }
  }
  EXPECT_GT(all_remote, 0) << "the dispatch path was never exercised";
  std::cout << "worst logits rel L2 " << worst << ", LAR "
            << double(all_local) / std::max<int64_t>(1, all_local + all_remote) << "\n";

  // Shuffled TP: chunks follow the predictions, within the slack; plain TP: equal chunks.
  if (mode != Mode::kDp) {
    int uneven = 0;
    for (size_t f = 0; f < results[0].routing.size(); ++f) {
      for (size_t l = 0; l < results[0].routing[f].size(); ++l) {
        int64_t total = 0;
        for (int r = 0; r < g; ++r) total += results[r].routing[f][l].tokens();
        const std::vector<int64_t> cap =
            planner::ChunkCapacities(total, g, mode == Mode::kTpShuffled ? kSlack : 0);
        const std::vector<int64_t> equal = planner::EqualChunks(total, g);
        for (int r = 0; r < g; ++r) {
          EXPECT_LE(results[r].routing[f][l].tokens(), cap[r]) << "forward " << f << " layer " << l;
          if (results[r].routing[f][l].tokens() != equal[r]) ++uneven;
        }
      }
    }
    if (mode == Mode::kTpPlain) {
      EXPECT_EQ(uneven, 0);
    }
    if (mode == Mode::kTpShuffled) {
      EXPECT_GT(uneven, 0) << "the slack was never used";
    }
  }

  // With the A tables, the all-gather also tells every rank each token's home device at the latest
  // MoE layer: every rank must hold the same list, and it must be the home devices of the rows
  // the ranks routed there (as a multiset: the chunks' order is the shuffle's).
  if (predictor != nullptr && predictor->uses_history() && !results[0].routing.empty()) {
    std::vector<int32_t> homes;
    const int last = static_cast<int>(results[0].routing.back().size()) - 1;
    for (int r = 0; r < g; ++r) {
      const Routing& routed = results[r].routing.back()[last];
      for (int t = 0; t < routed.tokens(); ++t) {
        std::vector<int> count(g, 0);
        for (int j = 0; j < routed.top_k; ++j) {
          ++count[placement->Device(last, routed.expert_ids[t * routed.top_k + j])];
        }
        homes.push_back(
            static_cast<int32_t>(std::max_element(count.begin(), count.end()) - count.begin()));
      }
    }
    std::sort(homes.begin(), homes.end());
    for (int r = 0; r < g; ++r) {
      EXPECT_EQ(results[r].tp_devices, results[0].tp_devices) << "rank " << r;
      std::vector<int32_t> got = results[r].tp_devices;
      std::sort(got.begin(), got.end());
      EXPECT_EQ(got, homes) << "rank " << r << ": the devices the all-gather carried";
    }
  }

  // Bytes: recompute each rank's dispatch/combine traffic from the routing it ran.
  const int64_t hidden = config.hidden_size, k = config.top_k;
  const int64_t row_bytes = hidden * 4 + k * 8;
  // With replicas, each pass's layer spreads an expert's activations from ranks without it over
  // its holders by the choice all ranks compute from everyone's activations per expert
  // (planner/placement:holder_choice), this rank's in token order.
  std::vector<std::vector<int64_t>> rows(g, std::vector<int64_t>(g, 0));  // [src][dst]
  std::vector<int64_t> local(g, 0), remote(g, 0), served(g, 0);
  const size_t passes = results[0].routing.size();
  const int n = config.num_experts;
  // [rank][layer][expert]: the activations of each expert each rank ran.
  std::vector<std::vector<std::vector<int64_t>>> served_expert(
      g, std::vector<std::vector<int64_t>>(results[0].counters.size(), std::vector<int64_t>(n)));
  for (size_t pass = 0; pass < passes; ++pass) {
    for (size_t l = 0; l < results[0].routing[pass].size(); ++l) {
      std::vector<int32_t> demand(static_cast<size_t>(g) * n, 0);
      for (int r = 0; r < g; ++r) {
        ASSERT_EQ(results[r].routing.size(), passes) << "rank " << r;
        for (int32_t e : results[r].routing[pass][l].expert_ids) ++demand[r * n + e];
      }
      const planner::HolderChoice choice = planner::ChooseHolders(*placement, l, demand);
      for (int r = 0; r < g; ++r) {
        const model::Routing& routed = results[r].routing[pass][l];
        std::vector<std::vector<int32_t>> left(n);
        for (int e = 0; e < n; ++e)
          left[e].assign(choice.Shares(r, e).begin(), choice.Shares(r, e).end());
        for (int t = 0; t < routed.tokens(); ++t) {
          std::vector<bool> hit(g, false);
          for (int j = 0; j < k; ++j) {
            const int e = routed.expert_ids[t * k + j];
            int d = placement->Serving(l, e, r);
            if (placement->replicas_per_device() > 0 && d != r) {
              const auto holder =
                  std::find_if(left[e].begin(), left[e].end(), [](int32_t c) { return c > 0; });
              ASSERT_NE(holder, left[e].end()) << "expert " << e << " past its shares";
              --*holder;
              d = placement->HoldersOf(l, e)[holder - left[e].begin()];
            }
            hit[d] = true;
            ++(d == r ? local[r] : remote[r]);
            ++served[d];
            ++served_expert[d][l][e];
          }
          for (int d = 0; d < g; ++d) rows[r][d] += hit[d] ? 1 : 0;
        }
      }
    }
  }
  const int64_t calls = static_cast<int64_t>(kDecodeSteps + 1) * moe_layers.size();
  if (topology != nullptr) CheckNodeBytes(*topology, *placement, results, config, calls);
  // Two stages (node_exchange.h): its bytes are CheckNodeBytes's; the rest holds as below.
  const bool two_stage =
      topology != nullptr && topology->num_nodes() > 1 && topology->num_nodes() < g;
  for (int r = 0; r < g; ++r) {
    int64_t sent = 0, received = 0, local_total = 0, remote_total = 0, served_total = 0;
    for (int d = 0; d < g; ++d) {
      if (d == r) continue;
      sent += rows[r][d];
      received += rows[d][r];
    }
    for (const MoeLayerCounters& m : results[r].counters) {
      local_total += m.local_activations;
      remote_total += m.remote_activations;
      served_total += m.served_activations;
    }
    int64_t dispatch_sent = 0, dispatch_received = 0, combine_sent = 0, combine_received = 0;
    for (const MoeLayerCounters& m : results[r].counters) {
      dispatch_sent += m.dispatch_bytes_sent;
      dispatch_received += m.dispatch_bytes_received;
      combine_sent += m.combine_bytes_sent;
      combine_received += m.combine_bytes_received;
    }
    if (!two_stage) {
      EXPECT_EQ(dispatch_sent, sent * row_bytes) << "rank " << r;
      EXPECT_EQ(dispatch_received, received * row_bytes) << "rank " << r;
      EXPECT_EQ(combine_sent, received * hidden * 4) << "rank " << r;
      EXPECT_EQ(combine_received, sent * hidden * 4) << "rank " << r;
    }
    EXPECT_EQ(local_total, local[r]);
    EXPECT_EQ(remote_total, remote[r]);
    EXPECT_EQ(served_total, served[r]) << "rank " << r << ": the activations its experts ran";
    for (size_t l = 0; l < results[r].counters.size(); ++l) {
      EXPECT_EQ(results[r].counters[l].expert_activations, served_expert[r][l])
          << "rank " << r << ", MoE layer " << l << ": activations per expert";
    }
    // Its row of the rank × rank traffic matrix: the rows it sent each peer and their results.
    std::vector<int64_t> to_peer(g, 0);
    for (const MoeLayerCounters& m : results[r].counters) {
      ASSERT_EQ(static_cast<int>(m.bytes_to_peer.size()), g) << "rank " << r;
      for (int d = 0; d < g; ++d) to_peer[d] += m.bytes_to_peer[d];
    }
    for (int d = 0; d < g && !two_stage; ++d) {
      EXPECT_EQ(to_peer[d], d == r ? 0 : rows[r][d] * row_bytes + rows[d][r] * hidden * 4)
          << "rank " << r << " to " << d;
    }
    // With replicas these small batches all-gather their routing (the row counts follow from
    // it), unless told to exchange the demand and row counts apart; without, never.
    int64_t gathers = 0;
    for (const MoeLayerCounters& m : results[r].counters) gathers += m.routing_gathers;
    EXPECT_EQ(gathers, layout == Layout::kReplicated ? calls : 0) << "rank " << r;
    if (two_stage) continue;
    // The communicator saw exactly that plus the row-count exchange (one i64 per peer per call
    // that did not gather the routing).
    const int64_t counted = (calls - gathers) * 8 * (g - 1);
    const CollectiveCounters& a2a = results[r].comm[CollectiveKind::kAllToAll];
    EXPECT_EQ(a2a.bytes_sent, dispatch_sent + combine_sent + counted) << "rank " << r;
    EXPECT_EQ(a2a.bytes_received, dispatch_received + combine_received + counted);
    // One all-to-all for the dispatch (rows, ids and weights together), one for the combine,
    // and the row counts' where the routing was not gathered.
    EXPECT_EQ(a2a.calls, 2 * calls + (calls - gathers)) << "rank " << r;
  }
}

TEST(RankModelTest, MismatchedPlacementsAndHeadSplitsAreErrors) {
  const ModelCase& c = GetModelCase("tiny_qwen3_moe");
  auto config = model::LoadModelConfig(c.dir);
  ASSERT_TRUE(config.ok());
  gloo::rendezvous::HashStore store;
  auto comm = GlooCommunicator::Create(store, {.rank = 0, .size = 1, .prefix = "bad"});
  ASSERT_TRUE(comm.ok());
  // A placement for two devices in a group of one.
  auto two = planner::Placement::Vanilla(config->MoeLayers(), config->num_experts, 2);
  auto m = RankModel::Create(c.dir, *two, **comm, {});
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument) << m.status();
  // A placement for other MoE layers.
  auto other = planner::Placement::Vanilla({0, 1, 2}, config->num_experts, 1);
  m = RankModel::Create(c.dir, *other, **comm, {});
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument) << m.status();
  EXPECT_NE(m.status().message().find("not for this model"), absl::string_view::npos);
  // 4 query heads, 2 KV heads: 3 ranks cannot split them; 4 replicate the KV heads.
  EXPECT_EQ(CheckTpSplit(*config, 3).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(CheckTpSplit(*config, 4).ok());
  EXPECT_EQ(CheckTpSplit(*config, 8).code(), absl::StatusCode::kInvalidArgument);
}

TEST(RankModelTest, MlaSplitsOnlyItsQueryHeads) {
  const ModelCase& c = GetModelCase("shared_deepseek_v3_tiny");
  if (c.dir.empty()) GTEST_SKIP() << "SEMMOE_SHARED_DIR is not set (./semmoe test sets it)";
  auto config = model::LoadModelConfig(c.dir);
  ASSERT_TRUE(config.ok()) << config.status();
  // 8 query heads; the latent is shared, so no KV-head rule: 8 ranks hold one head each.
  EXPECT_TRUE(CheckTpSplit(*config, 8).ok());
  EXPECT_EQ(CheckTpSplit(*config, 3).code(), absl::StatusCode::kInvalidArgument);
  auto weights = model::LoadModel(c.dir);
  ASSERT_TRUE(weights.ok());
  auto local = SliceForTp(*config, *(*weights)->weights, 1, 4);
  ASSERT_TRUE(local.ok()) << local.status();
  EXPECT_EQ(local->num_heads, 2);
  const model::LayerWeights& layer = (*weights)->weights->layers[1];
  EXPECT_EQ(layer.mla.q_b.rows(), 2 * 48);   // Two heads of [nope 32 | rope 16].
  EXPECT_EQ(layer.mla.kv_b.rows(), 2 * 64);  // Two heads of [k_nope 32 | v 32].
  EXPECT_EQ(layer.o.cols(), 2 * 32);
  EXPECT_EQ(layer.mla.kv_a.rows(), 64 + 16);  // The latent stays whole.
  EXPECT_EQ(local->kv_shape().key_size, 80);
}

std::string ParamName(const ::testing::TestParamInfo<Param>& info) {
  const auto& [name, g, mode, layout] = info.param;
  return absl::StrCat(name, "_g", g, "_", ModeName(mode), "_", LayoutName(layout));
}

INSTANTIATE_TEST_SUITE_P(
    Matrix, ParallelForwardTest,
    ::testing::Combine(
        ::testing::Values("tiny_qwen3_moe", "tiny_qwen2_moe", "tiny_mixtral", "shared_qwen3_moe_a",
                          "shared_deepseek_v2_tiny", "shared_deepseek_v3_tiny"),
        ::testing::Values(2, 4), ::testing::Values(Mode::kDp, Mode::kTpPlain, Mode::kTpShuffled),
        ::testing::Values(Layout::kVanilla, Layout::kRandom, Layout::kSkewed, Layout::kReplicated)),
    ParamName);
// Nodes: the node-deduplicated dispatch (G = 4 as 2 × 2) and the cross-node counters (G = 2 as
// 2 × 1), on every model.
INSTANTIATE_TEST_SUITE_P(
    Nodes, ParallelForwardTest,
    ::testing::Combine(
        ::testing::Values("tiny_qwen3_moe", "tiny_qwen2_moe", "tiny_mixtral", "shared_qwen3_moe_a",
                          "shared_deepseek_v2_tiny", "shared_deepseek_v3_tiny"),
        ::testing::Values(2, 4), ::testing::Values(Mode::kDp, Mode::kTpPlain, Mode::kTpShuffled),
        ::testing::Values(Layout::kNodes)),
    ParamName);
// The two-collective exchange of the holder choice (what larger batches take), on two models.
INSTANTIATE_TEST_SUITE_P(
    Apart, ParallelForwardTest,
    ::testing::Combine(::testing::Values("tiny_qwen3_moe", "shared_deepseek_v3_tiny"),
                       ::testing::Values(2, 4),
                       ::testing::Values(Mode::kDp, Mode::kTpPlain, Mode::kTpShuffled),
                       ::testing::Values(Layout::kReplicatedApart)),
    ParamName);

}  // namespace
}  // namespace semmoe::engine
