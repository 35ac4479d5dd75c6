// TokenAffinity: P(expert | token id) per MoE layer, learned from a routing trace (by
// token_affinity_builder.h, on the planner's side; this table knows no traces) — the `C`
// tables of docs/PLANNER.md — and, for a placement, the DP scores `S[v][d]`: how much of token v's
// activation mass (summed over layers) is local on device d. The router places a request on the
// device where its prompt's tokens score highest.
//
// Token ids never seen in the trace borrow the row of their nearest seen token in the model's
// embedding space when embeddings were given (AddEmbeddingFallback), else fall back to the layer's
// marginal expert distribution.
#ifndef SEMMOE_PLANNER_AFFINITY_TOKEN_AFFINITY_H_
#define SEMMOE_PLANNER_AFFINITY_TOKEN_AFFINITY_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "planner/placement/placement.h"

namespace semmoe::planner {

class TokenAffinity {
 public:
  int num_layers() const { return static_cast<int>(marginal_.size()); }
  int num_experts() const { return num_experts_; }
  // The traced share of activations per expert at `layer` (the marginal). REQUIRES: a layer.
  const std::vector<float>& Marginal(int layer) const { return marginal_[layer]; }
  // InvalidArgument unless the tables are for `placement`'s layers and experts ("<what> (L
  // layers, E experts) do not match the placement (...)"): tables of another model's shape
  // must not be read against it.
  absl::Status CheckMatches(const Placement& placement, absl::string_view what) const;
  // P(expert | token) at `layer` (sums to 1 over experts; for an unseen token its nearest
  // neighbour's row, or the marginal).
  double Probability(int layer, uint32_t token, int expert) const;

  // For every id in [0, rows of `embeddings`) not seen in the trace: the seen token with the most
  // similar embedding (cosine) stands in for it. `embeddings`: row-major [vocab, hidden] (e.g.
  // the model's embed_tokens). InvalidArgument for a shape that does not hold the seen ids.
  absl::Status AddEmbeddingFallback(absl::Span<const float> embeddings, int64_t hidden);
  // The seen token standing in for `token`, or `token` itself if seen, or −1.
  int64_t StandIn(uint32_t token) const;
  // The share of the token's expected experts on each device at `layer` (replicas count), given
  // the token before it: the token's own distribution, interpolated with that of the pair
  // (previous token, token) when the trace saw the pair at least twice. `share`: [devices].
  void ContextShares(int layer, uint32_t prev, uint32_t token, const Placement& placement,
                     float* share) const;
  int num_contexts() const { return static_cast<int>(contexts_.size()); }
  // Every (previous token, token) pair with a context, ascending.
  std::vector<std::pair<uint32_t, uint32_t>> ContextPairs() const;

  // Every (unseen id, seen stand-in) pair, ascending.
  std::vector<std::pair<uint32_t, uint32_t>> Fallbacks() const;
  bool Seen(uint32_t token) const { return rows_.contains(token); }
  // The token ids seen in the trace, ascending.
  std::vector<uint32_t> SeenTokens() const;

  // S: for each token id in [0, vocab_size), expected local activations per device (Σ over
  // layers of P(expert on d | token)); row-major [vocab_size, G].
  std::vector<float> DpScores(const Placement& placement, uint32_t vocab_size) const;

  // Compact binary form (stored with each placement version, served to routers), sparse per
  // token and layer: "SMAFFIN1" | u32 layers | u32 experts | u32 tokens | f32 marginal[L×E] |
  // per token (ascending id): u32 id, per layer: u16 n, n × (u16 expert, f32 p) | optionally
  // "NEARBY01" u32 count, count × (u32 unseen id, u32 seen id) — the embedding fallback |
  // optionally "BIGRAM01" u32 count, count × (u32 prev, u32 token, u32 seen, u32 m,
  // m × (u32 l · N + e, f32 p)) — the previous-token contexts.
  std::string Serialize() const;
  // InvalidArgument naming the byte offset for anything malformed (never a crash).
  static absl::StatusOr<TokenAffinity> Deserialize(absl::string_view bytes);

 private:
  friend class TokenAffinityBuilder;  // Fills the tables in from a trace.
  int num_experts_ = 0;
  // Per token id: [layer][expert] probabilities (dense; vocabularies seen in traces are small).
  absl::flat_hash_map<uint32_t, std::vector<float>> rows_;
  std::vector<std::vector<float>> marginal_;         // [layer][expert]
  absl::flat_hash_map<uint32_t, uint32_t> nearest_;  // Unseen id → the seen id standing in.
  // (previous token, token) → how often seen and P(expert) per layer (sparse: l · N + e → p).
  struct Context {
    uint32_t count = 0;
    std::vector<std::pair<uint32_t, float>> entries;
  };
  static constexpr uint32_t kMinContextCount = 2;
  static uint64_t ContextKey(uint32_t prev, uint32_t token) {
    return (static_cast<uint64_t>(prev) << 32) | token;
  }
  absl::flat_hash_map<uint64_t, Context> contexts_;
};

}  // namespace semmoe::planner

#endif  // SEMMOE_PLANNER_AFFINITY_TOKEN_AFFINITY_H_
