#include "verl/tokenizer/tokenizer_json.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "verl/common/error.h"
#include "verl/common/input_limits.h"

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
    const int64_t id = entry["id"].get<int64_t>();
    VERL_CHECK(id >= 0 && id < kMaxVocabSize, "tokenizer", where, ": added_tokens[", i, "].id is ", id,
               " (ids must be a non-negative integer below ", kMaxVocabSize, ", limit ", kMaxVocabSize, ")");
    AddedToken token;
    token.id = static_cast<int32_t>(id);
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


// Streams tokenizer.json: model.vocab and model.merges (hundreds of thousands of entries) go straight into
// BpeVocab; everything else becomes a JSON tree. Building the tree for the vocab would cost most of the
// load time.
class TokenizerJsonReader : public nlohmann::json_sax<json> {
 public:
  explicit TokenizerJsonReader(std::string where) : where_(std::move(where)) {}

  json root;
  BpeVocab bpe;
  bool saw_vocab = false, saw_merges = false;

  bool null() override { return value(nullptr); }
  bool boolean(bool v) override { return value(v); }
  bool number_integer(number_integer_t v) override { return value(v); }
  bool number_unsigned(number_unsigned_t v) override { return value(v); }
  bool number_float(number_float_t v, const string_t&) override { return value(v); }
  bool string(string_t& v) override { return value(std::move(v)); }
  bool binary(binary_t&) override { return value(nullptr); }

  bool start_object(std::size_t) override {
    if (mode_ != Mode::Dom) return reject_nested();
    if (at_model_key("vocab")) {
      place(json::object());
      saw_vocab = true;
      mode_ = Mode::Vocab;
      return true;
    }
    frames_.push_back(Frame{place(json::object()), true, {}});
    return true;
  }
  bool key(string_t& k) override {
    if (mode_ == Mode::Vocab) {
      pending_key_ = std::move(k);
      return true;
    }
    frames_.back().key = k;
    return true;
  }
  bool end_object() override {
    if (mode_ == Mode::Vocab) {
      mode_ = Mode::Dom;
      return true;
    }
    frames_.pop_back();
    return true;
  }
  bool start_array(std::size_t) override {
    if (mode_ == Mode::Merges) {
      if (in_pair_) return reject_merge();
      in_pair_ = true;
      pair_.clear();
      return true;
    }
    if (mode_ == Mode::Vocab) return reject_nested();
    if (at_model_key("merges")) {
      place(json::array());
      saw_merges = true;
      mode_ = Mode::Merges;
      return true;
    }
    frames_.push_back(Frame{place(json::array()), false, {}});
    return true;
  }
  bool end_array() override {
    if (mode_ == Mode::Merges) {
      if (in_pair_) {
        if (pair_.size() != 2) return reject_merge();
        bpe.merges.emplace_back(std::move(pair_[0]), std::move(pair_[1]));
        in_pair_ = false;
        return true;
      }
      mode_ = Mode::Dom;
      return true;
    }
    frames_.pop_back();
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    VERL_FAIL("tokenizer", where_, ": not valid JSON: ", e.what());
  }

 private:
  enum class Mode { Dom, Vocab, Merges };
  struct Frame {
    json* node;
    bool is_object;
    std::string key;
  };

  // True when the container about to open is root["model"][name].
  bool at_model_key(const char* name) const {
    return frames_.size() == 2 && frames_[0].is_object && frames_[0].key == "model" && frames_[1].is_object &&
           frames_[1].key == name;
  }

  json* place(json v) {
    if (frames_.empty()) {
      root = std::move(v);
      return &root;
    }
    Frame& top = frames_.back();
    if (top.is_object) {
      json& slot = (*top.node)[top.key];
      slot = std::move(v);
      return &slot;
    }
    top.node->push_back(std::move(v));
    return &top.node->back();
  }

  template <typename T>
  bool value(T&& v) {
    if (mode_ == Mode::Vocab) {
      json id(std::forward<T>(v));
      VERL_CHECK(id.is_number_integer(), "tokenizer", where_, " model: vocab id of '", pending_key_,
                 "' must be a non-negative integer, got ", json_excerpt(id));
      VERL_CHECK(id.get<int64_t>() >= 0 && id.get<int64_t>() < kMaxVocabSize, "tokenizer", where_,
                 " model.vocab: id of '", pending_key_, "' is ", id.dump(), " (ids must be a non-negative integer ",
                 "below ", kMaxVocabSize, ", limit ", kMaxVocabSize, ")");
      bpe.vocab.emplace_back(std::move(pending_key_), static_cast<int32_t>(id.get<int64_t>()));
      return true;
    }
    if (mode_ == Mode::Merges) {
      json item(std::forward<T>(v));
      if (!item.is_string()) return reject_merge(item.dump());
      std::string text = item.get<std::string>();
      if (in_pair_) {
        pair_.push_back(std::move(text));
        return true;
      }
      const size_t space = text.find(' ');
      VERL_CHECK(space != std::string::npos && text.find(' ', space + 1) == std::string::npos, "tokenizer", where_,
                 " model: merge #", bpe.merges.size(), " '", text, "' must be two tokens separated by one space");
      bpe.merges.emplace_back(text.substr(0, space), text.substr(space + 1));
      return true;
    }
    place(json(std::forward<T>(v)));
    return true;
  }

  bool reject_merge(const std::string& got = "") {
    VERL_FAIL("tokenizer", where_, " model: merge #", bpe.merges.size(), R"( must be "a b" or ["a", "b"])",
              got.empty() ? "" : ", got " + got);
  }
  bool reject_nested() {
    VERL_FAIL("tokenizer", where_, " model: \"vocab\" must map tokens to integer ids (found a nested value)");
  }

  std::string where_;
  std::vector<Frame> frames_;
  Mode mode_ = Mode::Dom;
  std::string pending_key_;
  bool in_pair_ = false;
  std::vector<std::string> pair_;
};

}  // namespace

TokenizerPipeline parse_tokenizer_json(const std::string& text, const std::string& where) {
  check_json_limits(text, where);
  TokenizerJsonReader reader(where);
  json::sax_parse(text, &reader);
  json& root = reader.root;
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
    VERL_CHECK(reader.saw_vocab, "tokenizer", where, " model: BPE model needs an object \"vocab\" (token -> id)");
    VERL_CHECK(reader.saw_merges, "tokenizer", where, " model: BPE model needs an array \"merges\"");
    pipeline.model = std::make_unique<BpeModel>(model, std::move(reader.bpe), where + " model");
    pipeline.post_processor =
        make_post_processor(member_or_null(root, "post_processor"), where + " post_processor");
    pipeline.decoder = make_decoder(member_or_null(root, "decoder"), where + " decoder");
    // Inside the try: a flag of the wrong type ("single_word": 5) is nlohmann's type_error (found by fuzzing).
    pipeline.added_tokens =
        std::make_unique<AddedVocabulary>(parse_added_tokens(root, where), pipeline.normalizer.get());
  } catch (const json::exception& e) {  // a field of the wrong JSON type
    VERL_FAIL("tokenizer", where, ": unexpected value: ", e.what());
  }
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
