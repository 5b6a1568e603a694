// What a rule scorer returns: verl's compute_score gives either a number or a dict such as
// {"score": -1.0, "acc": False, "pred": "12"}; default_compute_score passes dicts through and turns numbers
// into float. ScoreResult holds both forms: `score` always, the other dict entries in `extra`.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace verl::reward {

// std::monostate stands for Python's None.
using ExtraValue = std::variant<std::monostate, bool, int64_t, double, std::string>;

struct ScoreResult {
  double score = 0.0;
  // True when verl's scorer returns a dict (then the reward manager records every key, "score" included,
  // in reward_extra_info); false for a plain number.
  bool is_dict = false;
  // The dict's entries other than "score", in verl's key order.
  std::vector<std::pair<std::string, ExtraValue>> extra;

  static ScoreResult scalar(double value) { return ScoreResult{value, false, {}}; }
};

}  // namespace verl::reward
