// Small string helpers shared by the config system and the CLI.
#pragma once

#include <string>
#include <vector>

namespace verl {

std::vector<std::string> split(const std::string& text, char separator);
std::string join(const std::vector<std::string>& parts, const std::string& separator);
bool starts_with(const std::string& text, const std::string& prefix);
bool ends_with(const std::string& text, const std::string& suffix);
std::string trim(const std::string& text);
// Whether `items` holds `item`.
bool contains(const std::vector<std::string>& items, const std::string& item);

// Levenshtein distance (insert, delete, substitute each cost 1).
size_t edit_distance(const std::string& a, const std::string& b);

// The candidate closest to `word` by edit distance, or "" when none is within max(2, |word|/2) edits.
std::string closest_match(const std::string& word, const std::vector<std::string>& candidates);

// Shortest %g text (1 to 17 significant digits) that strtod reads back to exactly the finite `value`: "0.1", "3",
// "1e-06".
std::string shortest_round_trip(double value);

// Shortest decimal text that parses back to exactly `value`, always readable as a float by YAML 1.1
// and 1.2 and JSON-like readers: "0.001", "1.0", "3.0e-06", ".inf", "-.inf", ".nan".
std::string format_double_yaml(double value);

}  // namespace verl
