#include "verl/config/overrides.h"

#include <cctype>

#include "verl/common/error.h"
#include "verl/common/strings.h"
#include "verl/config/interpolation.h"
#include "verl/config/yaml_io.h"

namespace verl::config {

namespace {

bool valid_path(const std::string& path) {
  if (path.empty()) return false;
  for (const auto& part : split(path, '.')) {
    if (part.empty()) return false;
    for (char c : part) {
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '@')) return false;
    }
  }
  return true;
}

Node parse_value_text(const std::string& raw, const std::string& source) {
  const std::string text = trim(raw);
  if (text.empty()) return Node::string("");  // Hydra: `key=` sets the empty string
  if (text.front() == '[' || text.front() == '{' || text.front() == '"' || text.front() == '\'') {
    return parse_yaml(text, source);
  }
  return parse_plain_scalar(text, source);
}

std::string describe(const Node& value, const std::string& raw) {
  std::string shown = raw.empty() ? value.to_text() : raw;
  return std::string(kind_name(value.kind())) + " '" + shown + "'";
}

// Returns `value` converted to the type of `current` (the default), or throws naming key and types.
Node fit_to_default(const Node& root, const std::string& path, const Node& current, const Node& value,
                    const std::string& raw, const std::string& source);

void merge_map(const Node& root, const std::string& path, Node& target, const Node& value, const std::string& source) {
  for (const auto& [key, child] : value.fields()) {
    const std::string child_path = path.empty() ? key : path + "." + key;
    Node* existing = target.find(key);
    VERL_CHECK(existing != nullptr, "config", unknown_key_message(root, child_path, source));
    if (existing->is_map() && child.is_map()) {
      merge_map(root, child_path, *existing, child, source);
    } else if (existing->has_interpolation() && child.is_map()) {
      // A map in place of a reference to one (rollout.mtp: ${oc.select:actor_rollout_ref.model.mtp, null}), as
      // `config show` writes it resolved: taken whole; the typed sections and the key rules check its keys.
      *existing = child;
    } else {
      *existing = fit_to_default(root, child_path, *existing, child, "", source);
    }
  }
}

Node fit_to_default(const Node& root, const std::string& path, const Node& current, const Node& value,
                    const std::string& raw, const std::string& source) {
  if (value.is_null() || value.has_interpolation()) return value;  // null is allowed for any key;
                                                                   // references are typed after resolution
  Kind expected = expected_kind(root, path);
  auto mismatch = [&]() {
    return str_cat("config key '", path, "' expects ", kind_name(expected), ", got ", describe(value, raw), " (from ",
                   source, ")");
  };
  switch (expected) {
    case Kind::Null: return value;  // no default type: anything goes, the typed section checks it
    case Kind::Bool:
      VERL_CHECK(value.kind() == Kind::Bool, "config", mismatch());
      return value;
    case Kind::Int:
      // verl sft_trainer's save_freq / test_freq: steps, or the word after_each_epoch.
      if (value.kind() == Kind::String && value.as_string() == "after_each_epoch" &&
          (ends_with(path, ".save_freq") || ends_with(path, ".test_freq"))) {
        return value;
      }
      VERL_CHECK(value.kind() == Kind::Int, "config", mismatch());
      return value;
    case Kind::Float:
      VERL_CHECK(value.kind() == Kind::Int || value.kind() == Kind::Float, "config", mismatch());
      return Node::floating(value.as_double());
    case Kind::String:
      // verl's LoRA target_modules: `all-linear` by default, or a list of module names.
      if (value.is_list() && ends_with(path, ".target_modules")) return value;
      VERL_CHECK(value.is_scalar(), "config", mismatch());
      if (value.kind() == Kind::String) return value;
      return Node::string(raw.empty() ? value.to_text() : trim(raw));
    case Kind::List:
      if (value.is_list()) return value;
      VERL_CHECK(value.is_scalar(), "config", mismatch());
      return Node::list({value});  // `trainer.logger=console` means [console]
    case Kind::Map: {
      VERL_CHECK(value.is_map(), "config", mismatch());
      Node merged = current.is_map() ? current : Node::map();
      merge_map(root, path, merged, value, source);
      return merged;
    }
  }
  return value;
}

Node& ensure_parent(Node& root, const std::string& path, std::string& leaf, const std::string& source) {
  std::vector<std::string> parts = split(path, '.');
  leaf = parts.back();
  parts.pop_back();
  Node* current = &root;
  std::string walked;
  for (const auto& part : parts) {
    walked = walked.empty() ? part : walked + "." + part;
    Node* child = current->find(part);
    if (child == nullptr) child = &current->set(part, Node::map());
    VERL_CHECK(child->is_map(), "config", "cannot add '", path, "' (from ", source, "): '", walked, "' is a ",
               kind_name(child->kind()), ", not a map");
    current = child;
  }
  return *current;
}

}  // namespace

bool is_override_argument(const std::string& arg) {
  if (arg.empty() || starts_with(arg, "-") ) return false;
  if (arg[0] == '~') return true;
  return arg.find('=') != std::string::npos;
}

Override parse_override(const std::string& arg) {
  Override result;
  result.text = arg;
  std::string body = arg;
  if (starts_with(body, "~")) {
    result.op = Override::Op::Remove;
    result.path = body.substr(1);
    size_t eq = result.path.find('=');
    if (eq != std::string::npos) result.path = result.path.substr(0, eq);  // Hydra allows `~key=value`
    VERL_CHECK(valid_path(result.path), "config", "override '", arg, "': '", result.path, "' is not a key path");
    return result;
  }
  if (starts_with(body, "++")) {
    result.op = Override::Op::ForceAdd;
    body = body.substr(2);
  } else if (starts_with(body, "+")) {
    result.op = Override::Op::Add;
    body = body.substr(1);
  }
  size_t eq = body.find('=');
  VERL_CHECK(eq != std::string::npos, "config", "override '", arg, "' has no '='; expected key.path=value");
  result.path = trim(body.substr(0, eq));
  VERL_CHECK(valid_path(result.path), "config", "override '", arg, "': '", result.path,
             "' is not a key path (expected names joined by '.')");
  result.raw_value = body.substr(eq + 1);
  result.value = parse_value_text(result.raw_value, "override " + result.path);
  return result;
}

void apply_override(Node& root, const Override& o) {
  const std::string source = "override " + o.text;
  Node* existing = find_path(root, o.path);
  switch (o.op) {
    case Override::Op::Remove: {
      VERL_CHECK(existing != nullptr, "config", unknown_key_message(root, o.path, source));
      std::string leaf;
      ensure_parent(root, o.path, leaf, source).erase(leaf);
      return;
    }
    case Override::Op::Set:
      if (existing == nullptr) {
        std::string message = unknown_key_message(root, o.path, source);
        if (message.find("did you mean") == std::string::npos) message += str_cat("; use +", o.path, "=... to add a key");
        VERL_FAIL("config", message);
      }
      *existing = fit_to_default(root, o.path, *existing, o.value, o.raw_value, source);
      return;
    case Override::Op::Add: {
      VERL_CHECK(existing == nullptr, "config", "cannot add '", o.path, "' (from ", source,
                 "): the key already exists; use ", o.path, "=... to change it or ++", o.path, "=... to force");
      std::string leaf;
      ensure_parent(root, o.path, leaf, source).set(leaf, o.value);
      return;
    }
    case Override::Op::ForceAdd: {
      std::string leaf;
      ensure_parent(root, o.path, leaf, source).set(leaf, o.value);
      return;
    }
  }
}

void merge_config_file(Node& root, const Node& user, const std::string& source) {
  VERL_CHECK(user.is_map(), "config", source, ": expected a mapping at the top level");
  Node snapshot = root;  // types and suggestions come from the tree before this file
  merge_map(snapshot, "", root, user, source);
}

std::string unknown_key_message(const Node& root, const std::string& path, const std::string& source) {
  // Prefer a sibling of the deepest part of the path that exists; else the closest key anywhere.
  std::vector<std::string> parts = split(path, '.');
  std::string suggestion;
  const Node* current = &root;
  std::string prefix;
  for (size_t i = 0; i < parts.size(); ++i) {
    const Node* child = current->is_map() ? current->find(parts[i]) : nullptr;
    if (child == nullptr) {
      if (current->is_map()) {
        std::vector<std::string> names;
        for (const auto& field : current->fields()) names.push_back(field.first);
        std::string near = closest_match(parts[i], names);
        if (!near.empty()) {
          std::vector<std::string> rest(parts.begin() + static_cast<long>(i) + 1, parts.end());
          std::string candidate = prefix.empty() ? near : prefix + "." + near;
          if (!rest.empty()) candidate += "." + join(rest, ".");
          if (find_path(root, candidate) != nullptr) suggestion = candidate;
        }
      }
      break;
    }
    prefix = prefix.empty() ? parts[i] : prefix + "." + parts[i];
    current = child;
  }
  // No config key is kilobytes long; comparing such a path with every path costs length^2 per path (fuzz finding).
  constexpr size_t kLongestPathToSuggestFor = 256;
  if (suggestion.empty() && path.size() <= kLongestPathToSuggestFor) suggestion = closest_match(path, all_paths(root));
  std::string message = str_cat("unknown config key '", path, "' (from ", source, ")");
  if (!suggestion.empty()) message += str_cat("; did you mean '", suggestion, "'?");
  return message;
}

}  // namespace verl::config
