#include "verl/tokenizer/post_processors.h"

#include <map>
#include <nlohmann/json.hpp>

#include "pipeline_part.h"
#include "verl/common/error.h"

namespace verl::tokenizer {

namespace {

using json = nlohmann::json;

// TemplateProcessing's "single" template: pieces are either the sequence ("A") or special-token ids.
class TemplateProcessor : public PostProcessor {
 public:
  struct Item {
    bool is_sequence;
    std::vector<int32_t> ids;  // for special tokens
  };
  explicit TemplateProcessor(std::vector<Item> items) : items_(std::move(items)) {}

  std::vector<int32_t> process(std::vector<int32_t> ids, bool add_special_tokens) const override {
    if (!add_special_tokens) return ids;
    std::vector<int32_t> out;
    out.reserve(ids.size() + 4);
    for (const Item& item : items_) {
      if (item.is_sequence) {
        out.insert(out.end(), ids.begin(), ids.end());
      } else {
        out.insert(out.end(), item.ids.begin(), item.ids.end());
      }
    }
    return out;
  }

 private:
  std::vector<Item> items_;
};

class IdentityProcessor : public PostProcessor {
 public:
  std::vector<int32_t> process(std::vector<int32_t> ids, bool) const override { return ids; }
};

class SequenceProcessor : public PostProcessor {
 public:
  explicit SequenceProcessor(std::vector<std::unique_ptr<PostProcessor>> parts) : parts_(std::move(parts)) {}
  std::vector<int32_t> process(std::vector<int32_t> ids, bool add_special_tokens) const override {
    for (const auto& part : parts_) ids = part->process(std::move(ids), add_special_tokens);
    return ids;
  }

 private:
  std::vector<std::unique_ptr<PostProcessor>> parts_;
};

std::unique_ptr<PostProcessor> make_template(const json& config, const std::string& where) {
  VERL_CHECK(config.contains("single") && config["single"].is_array(), "tokenizer", where,
             ": expected an array \"single\"");
  std::map<std::string, std::vector<int32_t>> special;
  if (config.contains("special_tokens") && config["special_tokens"].is_object()) {
    for (auto it = config["special_tokens"].begin(); it != config["special_tokens"].end(); ++it) {
      VERL_CHECK(it.value().contains("ids") && it.value()["ids"].is_array(), "tokenizer", where,
                 ": special_tokens['", it.key(), "'] needs an array \"ids\"");
      std::vector<int32_t> ids;
      for (const json& id : it.value()["ids"]) {
        VERL_CHECK(id.is_number_integer(), "tokenizer", where, ": special_tokens['", it.key(), "'].ids must be integers");
        ids.push_back(id.get<int32_t>());
      }
      special[it.key()] = ids;
    }
  }
  std::vector<TemplateProcessor::Item> items;
  for (const json& piece : config["single"]) {
    if (piece.contains("Sequence")) {
      items.push_back({true, {}});
    } else if (piece.contains("SpecialToken") && piece["SpecialToken"].contains("id") &&
               piece["SpecialToken"]["id"].is_string()) {
      const std::string name = piece["SpecialToken"]["id"].get<std::string>();
      auto it = special.find(name);
      VERL_CHECK(it != special.end(), "tokenizer", where, ": template uses special token '", name,
                 "' that is missing from \"special_tokens\"");
      items.push_back({false, it->second});
    } else {
      VERL_FAIL("tokenizer", where, ": template piece must be {\"Sequence\": ...} or {\"SpecialToken\": {\"id\": ...}}, got ",
                piece.dump());
    }
  }
  return std::make_unique<TemplateProcessor>(std::move(items));
}

}  // namespace

std::unique_ptr<PostProcessor> make_bos_eos_processor(std::vector<int32_t> bos, std::vector<int32_t> eos) {
  std::vector<TemplateProcessor::Item> items;
  if (!bos.empty()) items.push_back({false, std::move(bos)});
  items.push_back({true, {}});
  if (!eos.empty()) items.push_back({false, std::move(eos)});
  return std::make_unique<TemplateProcessor>(std::move(items));
}

std::unique_ptr<PostProcessor> make_post_processor(const json& config, const std::string& where) {
  if (config.is_null()) return nullptr;
  const std::string type = detail::pipeline_part_type(config, where);
  const std::string here = where + " " + type;
  if (type == "TemplateProcessing") return make_template(config, here);
  if (type == "ByteLevel") return std::make_unique<IdentityProcessor>();  // only trims offsets
  if (type == "Sequence") {
    return std::make_unique<SequenceProcessor>(
        detail::sequence_parts<PostProcessor>(config, "processors", here, make_post_processor));
  }
  VERL_FAIL("tokenizer", where, ": unsupported post_processor type '", type,
            "' (supported: TemplateProcessing, ByteLevel, Sequence)");
}

}  // namespace verl::tokenizer
