// Test helper: a tiny SFT setup in a temp folder -- the demo's byte-level tokenizer, a small random Qwen2
// model (verl model init's code) and `arithmetic` SFT splits.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "verl/data/preprocess/preprocess.h"
#include "verl/io/parquet/writer.h"
#include "verl/model/model_tools.h"
#include "verl/tokenizer/tokenizer_builder.h"
#include "verl/trainer/demo.h"

namespace verl::test {

struct TinySFTSetup {
  std::string dir, tokenizer_dir, model_dir, data_dir;
  int64_t vocab_size = 0;
};

inline tokenizer::ByteLevelBPESpec demo_like_tokenizer_spec() {
  tokenizer::ByteLevelBPESpec spec;
  spec.alphabet = tokenizer::printable_ascii_alphabet();
  spec.words = trainer::demo_tokenizer_words();
  spec.special_tokens = {"<|im_start|>", "<|im_end|>", "<|endoftext|>"};
  spec.eos_token = "<|im_end|>";
  spec.pad_token = "<|endoftext|>";
  spec.chat_template = tokenizer::chatml_template();
  return spec;
}

inline TinySFTSetup make_tiny_sft_setup(const std::string& dir, int64_t sft_train_rows, int64_t sft_val_rows,
                                        int64_t hidden = 32, int64_t layers = 2, uint64_t seed = 1) {
  TinySFTSetup s;
  s.dir = dir;
  s.tokenizer_dir = dir + "/tokenizer";
  s.model_dir = dir + "/model";
  s.data_dir = dir + "/data";
  s.vocab_size = tokenizer::write_byte_level_bpe_folder(s.tokenizer_dir, demo_like_tokenizer_spec());
  model::InitOptions init;
  init.arch = model::Arch::Qwen2;
  init.out_dir = s.model_dir;
  init.seed = seed;
  init.hidden_size = hidden;
  init.num_layers = layers;
  init.num_heads = 4;
  init.num_kv_heads = 2;
  init.intermediate_size = 2 * hidden;
  init.vocab_size = s.vocab_size;
  init.tie_word_embeddings = true;
  init.perturb_norms_and_biases = true;
  init.tokenizer_dir = s.tokenizer_dir;
  model::init_model_folder(init);
  data::ArithmeticOptions data_options;
  data_options.seed = seed;
  data_options.train_size = 0;
  data_options.test_size = 0;
  data_options.sft_train_size = sft_train_rows;
  data_options.sft_val_size = sft_val_rows;
  data::write_arithmetic_dataset(s.data_dir, data_options);
  return s;
}

// Conversation rows for the sft_trainer_engine layout: `rows` parquet rows of a `messages` column, row i holding
// (i + offset) % 3 + 1 exchanges "a+b=" -> the sum, a = (i + offset + turn) % 10, b = (b_step * i + turn) % 10
// (b_step varies the rows between test files). Returns `path`.
inline std::string write_addition_conversations(const std::string& path, int64_t rows, int64_t offset = 0,
                                                int64_t b_step = 2) {
  auto message = [](const std::string& role, const std::string& content) {
    return io::Value(io::Struct{{"role", io::Value(role)}, {"content", io::Value(content)}});
  };
  std::vector<io::Value> out;
  for (int64_t i = 0; i < rows; ++i) {
    io::List messages;
    for (int64_t turn = 0; turn <= (i + offset) % 3; ++turn) {
      const int64_t a = (i + offset + turn) % 10, b = (b_step * i + turn) % 10;
      messages.push_back(message("user", std::to_string(a) + "+" + std::to_string(b) + "="));
      messages.push_back(message("assistant", std::to_string(a + b)));
    }
    out.push_back(io::Value(io::Struct{{"messages", io::Value(std::move(messages))}}));
  }
  io::parquet::write_parquet(path, out);
  return path;
}

}  // namespace verl::test
