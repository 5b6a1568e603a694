#include "verl/tokenizer/tokenizer_json.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "verl/common/error.h"

namespace verl::tokenizer {

namespace {

using json = nlohmann::json;

const json& member_or_null(const json& root, const char* key) {
  static const json null_value;
  auto it = root.find(key);
  return it == root.end() ? null_value : *it;
}

std::vector<AddedToken> parse_added_tokens(const json& root, const std::string& where) {
  std::vector<AddedToken> tokens;
  const json& list = member_or_null(root, "added_tokens");
  if (list.is_null()) return tokens;
  VERL_CHECK(list.is_array(), "tokenizer", where, ": \"added_tokens\" must be an array");
  for (size_t i = 0; i < list.size(); ++i) {
    const json& entry = list[i];
    VERL_CHECK(entry.is_object() && entry.contains("id") && entry["id"].is_number_integer() &&
                   entry.contains("content") && entry["content"].is_string(),
               "tokenizer", where, ": added_tokens[", i, "] needs an integer \"id\" and a string \"content\"");
    AddedToken token;
    token.id = entry["id"].get<int32_t>();
    token.content = entry["content"].get<std::string>();
    token.single_word = entry.value("single_word", false);
    token.lstrip = entry.value("lstrip", false);
    token.rstrip = entry.value("rstrip", false);
    token.special = entry.value("special", false);
    token.normalized = entry.value("normalized", !token.special);
    VERL_CHECK(!token.content.empty(), "tokenizer", where, ": added_tokens[", i, "] has empty content");
    tokens.push_back(std::move(token));
  }
  return tokens;
}

}  // namespace

TokenizerPipeline parse_tokenizer_json(const std::string& text, const std::string& where) {
  json root;
  try {
    root = json::parse(text);
  } catch (const json::parse_error& e) {
    VERL_FAIL("tokenizer", where, ": not valid JSON: ", e.what());
  }
  VERL_CHECK(root.is_object(), "tokenizer", where, ": expected a JSON object at the top level");
  VERL_CHECK(root.contains("model") && root["model"].is_object(), "tokenizer", where,
             ": missing the \"model\" object");
  const json& model = root["model"];
  // Old files omit "type" for BPE; HF infers it from the presence of "merges".
  std::string type = model.contains("type") && model["type"].is_string() ? model["type"].get<std::string>()
                     : model.contains("merges")                           ? "BPE"
                                                                          : "";
  VERL_CHECK(type == "BPE", "tokenizer", where, ": unsupported model type '", type,
             "' (supported: BPE; WordPiece, Unigram and WordLevel are not implemented)");

  TokenizerPipeline pipeline;
  try {
    pipeline.normalizer = make_normalizer(member_or_null(root, "normalizer"), where + " normalizer");
    pipeline.pre_tokenizer = make_pre_tokenizer(member_or_null(root, "pre_tokenizer"), where + " pre_tokenizer");
    pipeline.model = std::make_unique<BpeModel>(model, where + " model");
    pipeline.post_processor =
        make_post_processor(member_or_null(root, "post_processor"), where + " post_processor");
    pipeline.decoder = make_decoder(member_or_null(root, "decoder"), where + " decoder");
  } catch (const json::exception& e) {  // a field of the wrong JSON type
    VERL_FAIL("tokenizer", where, ": unexpected value: ", e.what());
  }
  pipeline.added_tokens =
      std::make_unique<AddedVocabulary>(parse_added_tokens(root, where), pipeline.normalizer.get());
  return pipeline;
}

TokenizerPipeline load_tokenizer_json(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  VERL_CHECK(in.good(), "tokenizer", "cannot open ", path);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return parse_tokenizer_json(buffer.str(), path);
}

}  // namespace verl::tokenizer
