#include "planner/affinity/token_affinity.h"

#include <algorithm>
#include <cstring>

#include "Eigen/Core"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "planner/affinity/byte_io.h"

namespace semmoe::planner {

void TokenAffinity::ContextShares(int layer, uint32_t prev, uint32_t token,
                                  const Placement& placement, float* share) const {
  const int g = placement.num_devices();
  std::fill(share, share + g, 0.0f);
  for (int e = 0; e < num_experts_; ++e) {
    const float p = static_cast<float>(Probability(layer, token, e));
    for (int32_t d : placement.HoldersOf(layer, e)) share[d] += p;
  }
  auto it = contexts_.find(ContextKey(prev, token));
  if (it == contexts_.end()) return;
  // Interpolated: (λ · unigram + n · context) / (λ + n), λ = 1 (measured in docs/PLANNER.md).
  const Context& c = it->second;
  std::vector<float> context(g, 0.0f);
  const uint32_t begin = static_cast<uint32_t>(layer) * num_experts_, end = begin + num_experts_;
  for (const auto& [index, p] : c.entries) {
    if (index < begin || index >= end) continue;
    for (int32_t d : placement.HoldersOf(layer, static_cast<int>(index - begin))) context[d] += p;
  }
  const float n = static_cast<float>(c.count);
  for (int d = 0; d < g; ++d) share[d] = (share[d] + n * context[d]) / (1.0f + n);
}

double TokenAffinity::Probability(int layer, uint32_t token, int expert) const {
  auto it = rows_.find(token);
  if (it == rows_.end()) {
    auto near = nearest_.find(token);
    if (near == nearest_.end()) return marginal_[layer][expert];
    it = rows_.find(near->second);
  }
  return it->second[static_cast<size_t>(layer) * num_experts_ + expert];
}

int64_t TokenAffinity::StandIn(uint32_t token) const {
  if (rows_.contains(token)) return token;
  auto near = nearest_.find(token);
  return near == nearest_.end() ? int64_t{-1} : int64_t{near->second};
}

std::vector<std::pair<uint32_t, uint32_t>> TokenAffinity::Fallbacks() const {
  std::vector<std::pair<uint32_t, uint32_t>> pairs(nearest_.begin(), nearest_.end());
  std::sort(pairs.begin(), pairs.end());
  return pairs;
}

absl::Status TokenAffinity::AddEmbeddingFallback(absl::Span<const float> embeddings,
                                                 int64_t hidden) {
  if (hidden <= 0 || embeddings.size() % hidden != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("embeddings of ", embeddings.size(), " values are not rows of ", hidden));
  }
  const int64_t vocab = static_cast<int64_t>(embeddings.size()) / hidden;
  const std::vector<uint32_t> seen = SeenTokens();
  if (seen.empty()) return absl::OkStatus();
  if (seen.back() >= vocab) {
    return absl::InvalidArgumentError(absl::StrCat("token ", seen.back(), " was traced but the ",
                                                   "embeddings have ", vocab, " rows"));
  }
  using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const Eigen::Map<const RowMatrix> all(embeddings.data(), vocab, hidden);
  auto normalized = [&](int64_t v) {
    Eigen::RowVectorXf row = all.row(v);
    const float norm = row.norm();
    if (norm > 0) row /= norm;
    return row;
  };
  RowMatrix known(seen.size(), hidden);
  for (size_t i = 0; i < seen.size(); ++i) known.row(i) = normalized(seen[i]);
  // Unseen ids in blocks: one GEMM of cosines per block, then the best seen row.
  constexpr int64_t kBlock = 1024;
  std::vector<uint32_t> unseen;
  for (int64_t v = 0; v < vocab; ++v) {
    if (!rows_.contains(static_cast<uint32_t>(v))) unseen.push_back(static_cast<uint32_t>(v));
  }
  RowMatrix block, cosines;
  for (size_t start = 0; start < unseen.size(); start += kBlock) {
    const int64_t n = std::min<int64_t>(kBlock, unseen.size() - start);
    block.resize(n, hidden);
    for (int64_t i = 0; i < n; ++i) block.row(i) = normalized(unseen[start + i]);
    cosines.noalias() = block * known.transpose();
    for (int64_t i = 0; i < n; ++i) {
      Eigen::Index best;
      cosines.row(i).maxCoeff(&best);
      nearest_[unseen[start + i]] = seen[best];
    }
  }
  return absl::OkStatus();
}

std::vector<std::pair<uint32_t, uint32_t>> TokenAffinity::ContextPairs() const {
  std::vector<std::pair<uint32_t, uint32_t>> pairs;
  pairs.reserve(contexts_.size());
  for (const auto& [key, context] : contexts_) {
    pairs.emplace_back(static_cast<uint32_t>(key >> 32), static_cast<uint32_t>(key));
  }
  std::sort(pairs.begin(), pairs.end());
  return pairs;
}

std::vector<uint32_t> TokenAffinity::SeenTokens() const {
  std::vector<uint32_t> ids;
  ids.reserve(rows_.size());
  for (const auto& [id, row] : rows_) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  return ids;
}

absl::Status TokenAffinity::CheckMatches(const Placement& placement, absl::string_view what) const {
  if (num_layers() == placement.num_layers() && num_experts_ == placement.num_experts()) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      what, " (", num_layers(), " MoE layers, ", num_experts_,
      " experts) do not match the placement (", placement.num_layers(), " MoE layers, ",
      placement.num_experts(), " experts): they come from another model"));
}

std::vector<float> TokenAffinity::DpScores(const Placement& placement, uint32_t vocab_size) const {
  const int g = placement.num_devices();
  std::vector<float> scores(static_cast<size_t>(vocab_size) * g, 0.0f);
  std::vector<float> marginal_row(g, 0.0f);
  for (int l = 0; l < num_layers(); ++l) {
    for (int e = 0; e < num_experts_; ++e) {
      for (int32_t d : placement.HoldersOf(l, e)) marginal_row[d] += marginal_[l][e];
    }
  }
  // Each seen token's row is computed once; the ids it stands in for copy it (at a real
  // vocabulary with the embedding fallback, most ids are stand-ins).
  absl::flat_hash_map<uint32_t, const float*> done;
  for (uint32_t v = 0; v < vocab_size; ++v) {
    float* row = &scores[static_cast<size_t>(v) * g];
    const int64_t stand_in = StandIn(v);
    if (stand_in < 0) {
      std::copy(marginal_row.begin(), marginal_row.end(), row);
      continue;
    }
    auto [cached, fresh] = done.try_emplace(static_cast<uint32_t>(stand_in), row);
    if (!fresh) {
      std::copy(cached->second, cached->second + g, row);
      continue;
    }
    const std::vector<float>& p = rows_.find(static_cast<uint32_t>(stand_in))->second;
    for (int l = 0; l < num_layers(); ++l) {
      for (int e = 0; e < num_experts_; ++e) {
        const float x = p[static_cast<size_t>(l) * num_experts_ + e];
        if (x == 0) continue;
        for (int32_t d : placement.HoldersOf(l, e)) row[d] += x;
      }
    }
  }
  return scores;
}

namespace {

constexpr char kMagic[8] = {'S', 'M', 'A', 'F', 'F', 'I', 'N', '1'};

}  // namespace

std::string TokenAffinity::Serialize() const {
  std::string out(kMagic, 8);
  const uint32_t layers = num_layers(), experts = num_experts_;
  PutBytes<uint32_t>(out, layers);
  PutBytes<uint32_t>(out, experts);
  PutBytes<uint32_t>(out, static_cast<uint32_t>(rows_.size()));
  for (const auto& m : marginal_) {
    for (float p : m) PutBytes<float>(out, p);
  }
  std::vector<uint32_t> ids;
  for (const auto& [id, row] : rows_) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  for (uint32_t id : ids) {
    const std::vector<float>& row = rows_.at(id);
    PutBytes<uint32_t>(out, id);
    for (uint32_t l = 0; l < layers; ++l) {
      uint16_t n = 0;
      for (uint32_t e = 0; e < experts; ++e) n += row[l * experts + e] > 0;
      PutBytes<uint16_t>(out, n);
      for (uint32_t e = 0; e < experts; ++e) {
        if (row[l * experts + e] > 0) {
          PutBytes<uint16_t>(out, static_cast<uint16_t>(e));
          PutBytes<float>(out, row[l * experts + e]);
        }
      }
    }
  }
  if (!nearest_.empty()) {
    out.append("NEARBY01", 8);
    PutBytes<uint32_t>(out, static_cast<uint32_t>(nearest_.size()));
    for (const auto& [unseen, seen] : Fallbacks()) {
      PutBytes<uint32_t>(out, unseen);
      PutBytes<uint32_t>(out, seen);
    }
  }
  if (!contexts_.empty()) {
    out.append("BIGRAM01", 8);
    PutBytes<uint32_t>(out, static_cast<uint32_t>(contexts_.size()));
    std::vector<uint64_t> keys;
    for (const auto& [key, c] : contexts_) keys.push_back(key);
    std::sort(keys.begin(), keys.end());
    for (uint64_t key : keys) {
      const Context& c = contexts_.at(key);
      PutBytes<uint32_t>(out, static_cast<uint32_t>(key >> 32));
      PutBytes<uint32_t>(out, static_cast<uint32_t>(key));
      PutBytes<uint32_t>(out, c.count);
      PutBytes<uint32_t>(out, static_cast<uint32_t>(c.entries.size()));
      for (const auto& [index, p] : c.entries) {
        PutBytes<uint32_t>(out, index);
        PutBytes<float>(out, p);
      }
    }
  }
  return out;
}

absl::StatusOr<TokenAffinity> TokenAffinity::Deserialize(absl::string_view bytes) {
  if (bytes.size() < 8 || std::memcmp(bytes.data(), kMagic, 8) != 0) {
    return absl::InvalidArgumentError("not an affinity table (bad magic)");
  }
  ByteReader r(bytes.substr(8), "affinity table");
  uint32_t layers, experts, tokens;
  if (absl::Status s = r.Get(layers, "the layer count"); !s.ok()) return s;
  if (absl::Status s = r.Get(experts, "the expert count"); !s.ok()) return s;
  if (absl::Status s = r.Get(tokens, "the token count"); !s.ok()) return s;
  if (layers == 0 || layers > 4096 || experts == 0 || experts > 65536 ||
      static_cast<uint64_t>(layers) * experts * 4 > bytes.size()) {
    return absl::InvalidArgumentError(absl::StrCat("affinity table: implausible shape ", layers,
                                                   " layers × ", experts, " experts"));
  }
  TokenAffinity a;
  a.num_experts_ = static_cast<int>(experts);
  a.marginal_.assign(layers, std::vector<float>(experts));
  for (auto& m : a.marginal_) {
    for (float& p : m) {
      if (absl::Status s = r.Get(p, "the marginal"); !s.ok()) return s;
    }
  }
  // Each token needs at least 4 + 2·layers bytes: a bound on the count before allocating.
  if (static_cast<uint64_t>(tokens) * (4 + 2ull * layers) > bytes.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("affinity table: ", tokens, " tokens cannot fit in ", bytes.size(), " bytes"));
  }
  for (uint32_t t = 0; t < tokens; ++t) {
    uint32_t id;
    if (absl::Status s = r.Get(id, "a token id"); !s.ok()) return s;
    std::vector<float> row(static_cast<size_t>(layers) * experts, 0.0f);
    for (uint32_t l = 0; l < layers; ++l) {
      uint16_t n;
      if (absl::Status s = r.Get(n, "an entry count"); !s.ok()) return s;
      for (uint16_t i = 0; i < n; ++i) {
        uint16_t e;
        float p;
        if (absl::Status s = r.Get(e, "an expert id"); !s.ok()) return s;
        if (absl::Status s = r.Get(p, "a probability"); !s.ok()) return s;
        if (e >= experts || !(p >= 0.0f && p <= 1.0f)) {
          return absl::InvalidArgumentError(absl::StrCat("affinity table: bad entry (expert ", e,
                                                         ", p ", p, ") before byte ", 8 + r.at()));
        }
        row[static_cast<size_t>(l) * experts + e] = p;
      }
    }
    if (!a.rows_.emplace(id, std::move(row)).second) {
      return absl::InvalidArgumentError(absl::StrCat("affinity table: token ", id, " twice"));
    }
  }
  while (!r.done()) {  // Optional sections: the embedding fallback, the previous-token rows.
    char tag[8];
    for (char& c : tag) RETURN_IF_ERROR(r.Get(c, "a section tag"));
    const absl::string_view section(tag, 8);
    uint32_t count;
    RETURN_IF_ERROR(r.Get(count, "a section's count"));
    if (static_cast<uint64_t>(count) * 8 > bytes.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("affinity table: ", count, " entries cannot fit"));
    }
    if (section == "NEARBY01") {
      for (uint32_t i = 0; i < count; ++i) {
        uint32_t unseen, seen;
        RETURN_IF_ERROR(r.Get(unseen, "a fallback id"));
        RETURN_IF_ERROR(r.Get(seen, "a fallback's stand-in"));
        if (a.rows_.contains(unseen) || !a.rows_.contains(seen) ||
            !a.nearest_.emplace(unseen, seen).second) {
          return absl::InvalidArgumentError(absl::StrCat("affinity table: bad fallback ", unseen,
                                                         " → ", seen, " before byte ", 8 + r.at()));
        }
      }
    } else if (section == "BIGRAM01") {
      for (uint32_t i = 0; i < count; ++i) {
        uint32_t prev, token, n, m;
        RETURN_IF_ERROR(r.Get(prev, "a context's previous token"));
        RETURN_IF_ERROR(r.Get(token, "a context's token"));
        RETURN_IF_ERROR(r.Get(n, "a context's count"));
        RETURN_IF_ERROR(r.Get(m, "a context's size"));
        if (n == 0 || m > static_cast<uint64_t>(layers) * experts || !a.rows_.contains(token)) {
          return absl::InvalidArgumentError(
              absl::StrCat("affinity table: bad context header before byte ", 8 + r.at()));
        }
        Context c{n, {}};
        c.entries.resize(m);
        for (auto& [index, p] : c.entries) {
          RETURN_IF_ERROR(r.Get(index, "a context entry"));
          RETURN_IF_ERROR(r.Get(p, "a context probability"));
          if (index >= layers * experts || !(p >= 0.0f && p <= 1.0f)) {
            return absl::InvalidArgumentError(
                absl::StrCat("affinity table: bad context entry before byte ", 8 + r.at()));
          }
        }
        if (!a.contexts_.emplace(ContextKey(prev, token), std::move(c)).second) {
          return absl::InvalidArgumentError(
              absl::StrCat("affinity table: context ", prev, " → ", token, " twice"));
        }
      }
    } else {
      return absl::InvalidArgumentError("affinity table: trailing bytes");
    }
  }
  return a;
}

}  // namespace semmoe::planner
