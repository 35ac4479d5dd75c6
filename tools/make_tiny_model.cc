// make_tiny_model: writes a seeded random checkpoint in exact Hugging Face layout.
//
//   bazel run //tools:make_tiny_model -- --arch=qwen2_moe --out=/tmp/tiny --seed=7
//       --hidden=64 --layers=2 --experts=8 --top_k=2   (one command line)
#include <cstdlib>
#include <iostream>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "common/file.h"
#include "engine/model/testing/tiny_model.h"
#include "engine/text/config.h"
#include "kernels/dtype.h"

ABSL_FLAG(std::string, arch, "qwen3_moe",
          "qwen3_moe, qwen2_moe, mixtral, deepseek_v2 or deepseek_v3");
ABSL_FLAG(std::string, out, "", "output directory (created if missing)");
ABSL_FLAG(uint64_t, seed, 0, "random seed: the same flags always give the same bytes");
ABSL_FLAG(int, vocab, 0, "vocab_size (0: the tokenizer's 256 + merges + 3 ids)");
ABSL_FLAG(int, merges, 64, "BPE merges learned for tokenizer.json");
ABSL_FLAG(int, hidden, 64, "hidden_size");
ABSL_FLAG(int, layers, 2, "num_hidden_layers");
ABSL_FLAG(int, heads, 4, "num_attention_heads");
ABSL_FLAG(int, kv_heads, 2, "num_key_value_heads");
ABSL_FLAG(int, head_dim, 16, "head_dim (qwen3_moe; others use hidden / heads)");
ABSL_FLAG(int, experts, 8, "experts per MoE layer");
ABSL_FLAG(int, top_k, 2, "num_experts_per_tok");
ABSL_FLAG(int, moe_intermediate, 32, "expert intermediate size");
ABSL_FLAG(int, shared_intermediate, 48, "qwen2_moe shared expert intermediate size (0: none)");
ABSL_FLAG(int, intermediate, 96, "dense-layer intermediate size");
ABSL_FLAG(std::string, dense_layers, "", "comma-separated dense layers (mlp_only_layers)");
ABSL_FLAG(bool, norm_topk_prob, true, "renormalise top-k weights (qwen archs)");
ABSL_FLAG(bool, tie_embeddings, false, "tie lm_head to the embeddings");
ABSL_FLAG(int, max_positions, 512, "max_position_embeddings");
ABSL_FLAG(std::string, dtype, "BF16", "BF16, F16 or F32");
ABSL_FLAG(int, shards, 1, "number of safetensors shards (> 1 writes an index)");
ABSL_FLAG(bool, fp8, false,
          "block-scaled FP8 as DeepSeek-V3 publishes it: the projection weights F8_E4M3 with "
          "<name>_scale_inv per --fp8_block, the rest in --dtype, and quantization_config");
ABSL_FLAG(std::string, fp8_block, "128,128", "with --fp8: weight_block_size ROWS,COLS");
ABSL_FLAG(bool, fp8_dequantized, false,
          "with --fp8: write the same FP8 values dequantised, as F32 without quantization_config "
          "(the checkpoint a user converting the FP8 one offline gets)");
// deepseek_v2 / deepseek_v3 only.
ABSL_FLAG(int, q_lora_rank, 0, "deepseek: q LoRA rank (0: a plain q_proj)");
ABSL_FLAG(int, kv_lora_rank, 32, "deepseek: the MLA latent size");
ABSL_FLAG(int, qk_nope_dim, 16, "deepseek: qk_nope_head_dim");
ABSL_FLAG(int, qk_rope_dim, 8, "deepseek: qk_rope_head_dim (even)");
ABSL_FLAG(int, v_head_dim, 12, "deepseek: v_head_dim");
ABSL_FLAG(int, shared_experts, 1, "deepseek: n_shared_experts (each moe_intermediate wide)");
ABSL_FLAG(int, first_dense, 1, "deepseek: first_k_dense_replace");
ABSL_FLAG(int, moe_layer_freq, 1, "deepseek: moe_layer_freq");
ABSL_FLAG(std::string, scoring_func, "", "deepseek: softmax or sigmoid (default: the version's)");
ABSL_FLAG(std::string, topk_method, "",
          "deepseek: greedy, group_limited_greedy or noaux_tc (default: the version's)");
ABSL_FLAG(int, groups, 4, "deepseek: n_group");
ABSL_FLAG(int, topk_groups, 2, "deepseek: topk_group");
ABSL_FLAG(double, routed_scaling, 1.0, "deepseek: routed_scaling_factor");
ABSL_FLAG(bool, yarn, false, "deepseek: YaRN rope scaling (factor 4)");

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage("Writes a seeded random MoE checkpoint in Hugging Face layout.");
  absl::ParseCommandLine(argc, argv);
  using semmoe::testing::TinyModelOptions;
  TinyModelOptions o;
  auto fail = [](const std::string& message) {
    std::cerr << "make_tiny_model: " << message << "\n";
    return 2;
  };
  if (absl::GetFlag(FLAGS_out).empty()) return fail("--out is required");
  auto arch = semmoe::engine::model::ParseArch(absl::GetFlag(FLAGS_arch));
  if (!arch.ok()) return fail(std::string(arch.status().message()));
  auto dtype = semmoe::kernels::ParseDType(absl::GetFlag(FLAGS_dtype));
  if (!dtype.ok() || *dtype == semmoe::kernels::DType::kI32 ||
      *dtype == semmoe::kernels::DType::kF8E4M3) {
    return fail("--dtype: BF16, F16 or F32 (FP8: --fp8)");
  }
  o.arch = *arch;
  o.dtype = *dtype;
  if (absl::GetFlag(FLAGS_fp8)) {
    std::vector<std::string> block = absl::StrSplit(absl::GetFlag(FLAGS_fp8_block), ',');
    if (block.size() != 2 || !absl::SimpleAtoi(block[0], &o.fp8_block_rows) ||
        !absl::SimpleAtoi(block[1], &o.fp8_block_cols) || o.fp8_block_rows < 1 ||
        o.fp8_block_cols < 1) {
      return fail("--fp8_block: expected two positive integers ROWS,COLS");
    }
    o.fp8_dequantized = absl::GetFlag(FLAGS_fp8_dequantized);
  } else if (absl::GetFlag(FLAGS_fp8_dequantized)) {
    return fail("--fp8_dequantized needs --fp8");
  }
  o.seed = absl::GetFlag(FLAGS_seed);
  o.vocab_size = absl::GetFlag(FLAGS_vocab);
  o.num_merges = absl::GetFlag(FLAGS_merges);
  o.hidden_size = absl::GetFlag(FLAGS_hidden);
  o.num_layers = absl::GetFlag(FLAGS_layers);
  o.num_heads = absl::GetFlag(FLAGS_heads);
  o.num_kv_heads = absl::GetFlag(FLAGS_kv_heads);
  o.head_dim = o.arch == semmoe::engine::model::Arch::kQwen3Moe
                   ? absl::GetFlag(FLAGS_head_dim)
                   : o.hidden_size / std::max(1, o.num_heads);
  o.num_experts = absl::GetFlag(FLAGS_experts);
  o.top_k = absl::GetFlag(FLAGS_top_k);
  o.moe_intermediate_size = absl::GetFlag(FLAGS_moe_intermediate);
  o.shared_expert_intermediate_size = absl::GetFlag(FLAGS_shared_intermediate);
  o.intermediate_size = absl::GetFlag(FLAGS_intermediate);
  o.norm_topk_prob = absl::GetFlag(FLAGS_norm_topk_prob);
  o.tie_word_embeddings = absl::GetFlag(FLAGS_tie_embeddings);
  o.max_position_embeddings = absl::GetFlag(FLAGS_max_positions);
  o.num_shards = absl::GetFlag(FLAGS_shards);
  TinyModelOptions::Deepseek& d = o.deepseek;
  d.q_lora_rank = absl::GetFlag(FLAGS_q_lora_rank);
  d.kv_lora_rank = absl::GetFlag(FLAGS_kv_lora_rank);
  d.qk_nope_head_dim = absl::GetFlag(FLAGS_qk_nope_dim);
  d.qk_rope_head_dim = absl::GetFlag(FLAGS_qk_rope_dim);
  d.v_head_dim = absl::GetFlag(FLAGS_v_head_dim);
  d.n_shared_experts = absl::GetFlag(FLAGS_shared_experts);
  d.first_k_dense_replace = absl::GetFlag(FLAGS_first_dense);
  d.moe_layer_freq = absl::GetFlag(FLAGS_moe_layer_freq);
  d.scoring_func = absl::GetFlag(FLAGS_scoring_func);
  d.topk_method = absl::GetFlag(FLAGS_topk_method);
  d.n_group = absl::GetFlag(FLAGS_groups);
  d.topk_group = absl::GetFlag(FLAGS_topk_groups);
  d.routed_scaling_factor = absl::GetFlag(FLAGS_routed_scaling);
  d.yarn = absl::GetFlag(FLAGS_yarn);
  for (absl::string_view part :
       absl::StrSplit(absl::GetFlag(FLAGS_dense_layers), ',', absl::SkipEmpty())) {
    int layer;
    if (!absl::SimpleAtoi(part, &layer)) return fail("--dense_layers: expected integers");
    o.mlp_only_layers.push_back(layer);
  }
  const std::string out = semmoe::UserPath(absl::GetFlag(FLAGS_out));
  absl::Status status = semmoe::testing::WriteTinyModel(o, out);
  if (!status.ok()) return fail(std::string(status.message()));
  std::cout << "wrote " << semmoe::engine::model::ArchName(o.arch) << " checkpoint to " << out
            << "\n";
  return 0;
}
