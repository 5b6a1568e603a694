// Command-line option values: the whole text must parse, otherwise a one-line error naming the option.
#pragma once

#include <cstdint>
#include <string>

namespace verl::cli {

int64_t parse_int_option(const std::string& option, const std::string& text);
double parse_number_option(const std::string& option, const std::string& text);
// Counts, sizes and seeds: an integer >= 0.
int64_t parse_count_option(const std::string& option, const std::string& text);

}  // namespace verl::cli
