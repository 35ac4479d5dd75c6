#include "engine/parallel/testing/tiny_group.h"

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "common/file.h"
#include "engine/model/model.h"
#include "engine/runtime/batch_engine.h"
#include "glog/logging.h"
#include "engine/model/testing/tiny_model.h"

namespace semmoe::engine::testing {

const std::string& TinyDir() {
  static const std::string* dir = [] {
    auto* d = new std::string(JoinPath(std::getenv("TEST_TMPDIR"), "tiny_group"));
    ::semmoe::testing::TinyModelOptions o;
    o.seed = 3;
    const absl::Status written = ::semmoe::testing::WriteTinyModel(o, *d);
    CHECK(written.ok()) << written;
    return d;
  }();
  return *dir;
}

std::vector<int32_t> Prompt(int length, int salt) {
  std::vector<int32_t> p;
  for (int i = 0; i < length; ++i) p.push_back((i * 31 + salt * 17) % 250);
  return p;
}

std::map<std::string, std::vector<int32_t>> Expected(int requests, int max_tokens) {
  auto m = model::LoadModel(TinyDir());
  CHECK(m.ok()) << m.status();
  auto engine = runtime::BatchEngine::Create((*m)->config, *(*m)->weights, {});
  CHECK(engine.ok()) << engine.status();
  for (int i = 0; i < requests; ++i) {
    const absl::Status submitted = (*engine)->Submit({.id = absl::StrCat("r", i),
                                                      .prompt = Prompt(3 + i % 7, i),
                                                      .max_tokens = max_tokens,
                                                      .ignore_eos = true});
    CHECK(submitted.ok()) << submitted;
  }
  std::map<std::string, std::vector<int32_t>> out;
  auto results = (*engine)->RunUntilIdle();
  CHECK(results.ok()) << results.status();
  for (auto& r : *results) out[r.id] = r.tokens;
  return out;
}

}  // namespace semmoe::engine::testing
