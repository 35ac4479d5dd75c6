#include "engine/text/quantization_config.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "common/json_fields.h"
#include "common/status_macros.h"

namespace semmoe::engine::model {

absl::Status ParseQuantization(const nlohmann::json& j, ModelConfig& c) {
  const auto it = j.find("quantization_config");
  if (it == j.end() || it->is_null()) return absl::OkStatus();
  if (!it->is_object()) {
    return absl::InvalidArgumentError("config.json: quantization_config: expected an object");
  }
  const nlohmann::json& q = *it;
  JsonFields f(q, "config.json: quantization_config");
  for (auto field = q.begin(); field != q.end(); ++field) {
    const std::string& key = field.key();
    if (key != "quant_method" && key != "fmt" && key != "activation_scheme" &&
        key != "weight_block_size" && key != "modules_to_not_convert") {
      return f.Error(key,
                     "unknown field (supported: block-scaled FP8 with quant_method, fmt, "
                     "activation_scheme, weight_block_size, modules_to_not_convert)");
    }
  }
  ASSIGN_OR_RETURN(std::string method, f.String("quant_method"));
  if (method != "fp8") {
    return f.Error("quant_method", absl::StrCat("'", method,
                                                "' is not supported (only fp8 with block scales; "
                                                "convert the checkpoint to BF16 first)"));
  }
  ASSIGN_OR_RETURN(std::string fmt, f.String("fmt", "e4m3"));
  if (fmt != "e4m3") {
    return f.Error("fmt", absl::StrCat("'", fmt, "' is not supported (only e4m3: float8_e4m3fn)"));
  }
  ASSIGN_OR_RETURN(std::string scheme, f.String("activation_scheme", "dynamic"));
  if (scheme != "dynamic") {
    return f.Error("activation_scheme",
                   absl::StrCat("'", scheme,
                                "' is not supported (only dynamic: static activation "
                                "scales are not read)"));
  }
  if (q.contains("modules_to_not_convert")) {
    const nlohmann::json& m = q["modules_to_not_convert"];
    bool strings = m.is_array() || m.is_null();
    if (m.is_array()) {
      for (const nlohmann::json& name : m) strings = strings && name.is_string();
    }
    if (!strings) return f.Error("modules_to_not_convert", "expected a list of module names");
  }
  if (!q.contains("weight_block_size")) {
    return f.Error("weight_block_size",
                   "missing: per-tensor FP8 is not supported (only block scales, e.g. [128, 128])");
  }
  const nlohmann::json& block = q["weight_block_size"];
  if (!block.is_array() || block.size() != 2 || !block[0].is_number_integer() ||
      !block[1].is_number_integer() || block[0].get<int64_t>() < 1 || block[1].get<int64_t>() < 1 ||
      block[0].get<int64_t>() > (1 << 20) || block[1].get<int64_t>() > (1 << 20)) {
    return f.Error("weight_block_size", "expected two positive integers [rows, columns]");
  }
  c.fp8.block_rows = block[0].get<int>();
  c.fp8.block_cols = block[1].get<int>();
  return absl::OkStatus();
}

}  // namespace semmoe::engine::model
