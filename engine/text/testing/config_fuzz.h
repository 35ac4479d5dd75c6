// Fuzz-style checks shared by the config.json parser tests: random byte edits and truncations
// of a real config, and every top-level field (and every field of the named nested objects) set
// to each wrong JSON type. The parser must answer with a Status each time — never an exception
// or a crash. Returns how many of the byte-edited texts were rejected.
#ifndef SEMMOE_ENGINE_MODEL_TESTING_CONFIG_FUZZ_H_
#define SEMMOE_ENGINE_MODEL_TESTING_CONFIG_FUZZ_H_

#include <random>
#include <string>
#include <vector>

#include "engine/text/config.h"
#include "nlohmann/json.hpp"

namespace semmoe::testing {

inline int FuzzConfig(const std::string& base, uint32_t seed, int edits_to_try,
                      const std::vector<std::string>& nested = {}) {
  std::mt19937 rng(seed);
  int rejected = 0;
  for (int iter = 0; iter < edits_to_try; ++iter) {
    std::string text = base;
    for (int e = 0, edits = 1 + rng() % 3; e < edits; ++e) {
      if (rng() % 4 == 0) {
        text.resize(rng() % (text.size() + 1));
      } else if (!text.empty()) {
        text[rng() % text.size()] = "{}[]\":,0-9e. "[rng() % 14];
      }
    }
    rejected += !engine::model::ParseModelConfig(text).ok();
  }
  const nlohmann::json good = nlohmann::json::parse(base);
  const std::vector<nlohmann::json> wrong = {nlohmann::json(nullptr),
                                             nlohmann::json(-7),
                                             nlohmann::json(1e300),
                                             nlohmann::json(0.5),
                                             nlohmann::json(true),
                                             nlohmann::json("x"),
                                             nlohmann::json::array({1, "a"}),
                                             nlohmann::json::object()};
  for (auto it = good.begin(); it != good.end(); ++it) {
    for (const nlohmann::json& value : wrong) {
      nlohmann::json j = good;
      j[it.key()] = value;
      (void)engine::model::ParseModelConfig(j.dump());
      for (const std::string& object : nested) {
        nlohmann::json k = good;
        k[object][it.key()] = value;
        (void)engine::model::ParseModelConfig(k.dump());
      }
    }
  }
  return rejected;
}

}  // namespace semmoe::testing

#endif  // SEMMOE_ENGINE_MODEL_TESTING_CONFIG_FUZZ_H_
