// The parquet schema as a tree (built from the footer's depth-first SchemaElement list), with each node's
// maximum definition and repetition levels, and the leaf columns in file order.
#pragma once

#include <string>
#include <vector>

#include "verl/io/parquet/metadata.h"

namespace verl::io::parquet {

struct SchemaNode {
  SchemaElement element;
  int parent = -1;
  std::vector<int> children;  // node indices
  int max_def = 0;             // definition level when this node is present
  int max_rep = 0;             // repetition level of this node's innermost repeated ancestor-or-self
  int column = -1;             // leaf: index of its column chunk in each row group
  bool is_leaf() const { return element.type.has_value(); }
  bool is_repeated() const { return element.repetition == Repetition::kRepeated; }
};

class Schema {
 public:
  // `where` names the file in errors.
  static Schema from_elements(const std::vector<SchemaElement>& elements, const std::string& where);

  const SchemaNode& node(int index) const { return nodes_[static_cast<size_t>(index)]; }
  const SchemaNode& root() const { return nodes_.front(); }
  size_t num_columns() const { return leaves_.size(); }
  int leaf_node(size_t column) const { return leaves_[column]; }
  // Node indices from the top-level field down to the leaf of `column`.
  std::vector<int> column_path(size_t column) const;
  // Top-level field node whose subtree holds `column`.
  int top_level_of(size_t column) const;
  // Top-level field by name, -1 when absent.
  int find_top_level(const std::string& name) const;

  // parquet-tools style text: `message schema { optional binary name (STRING); ... }`.
  std::string to_text() const;

 private:
  std::vector<SchemaNode> nodes_;
  std::vector<int> leaves_;
};

}  // namespace verl::io::parquet
