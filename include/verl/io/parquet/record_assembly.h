// Dremel record assembly: definition / repetition levels of the read columns back into nested rows.
// LIST-annotated groups become lists (3-level, and the legacy 2-level forms), MAP groups become structs keyed by
// the map keys' text, other groups become structs with fields in schema order.
#pragma once

#include <string>
#include <vector>

#include "verl/io/parquet/column_reader.h"
#include "verl/io/parquet/schema.h"
#include "verl/io/value.h"

namespace verl::io::parquet {

// `columns[c]` is the decoded column c, or nullptr for a column that was not read; `top_fields` are the
// top-level nodes to output (schema order). Rows are structs. Inconsistent levels are errors naming `where`.
std::vector<Value> assemble_rows(const Schema& schema, const std::vector<int>& top_fields,
                                 const std::vector<ColumnData*>& columns, size_t num_rows, const std::string& where);

}  // namespace verl::io::parquet
