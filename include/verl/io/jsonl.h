// JSON Lines: one JSON object per line, read into io::Value rows (key order kept) and written back compactly.
#pragma once

#include <string>
#include <vector>

#include "verl/io/value.h"

namespace verl::io {

// Every non-blank line of `path` as a Value; a bad line is an error naming the file and line number.
std::vector<Value> read_jsonl(const std::string& path);

// One line per row (to_json), UTF-8, '\n' terminated.
void write_jsonl(const std::string& path, const std::vector<Value>& rows);

}  // namespace verl::io
