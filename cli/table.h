// Aligned text tables for dumpctl's listings (`list`, `signatures`).
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace coredumpd::cli {

/// One column of a table: its title and whether its cells are right-aligned (numbers, sizes).
struct TableColumn {
  const char* title;
  bool right = false;
};

/// Prints a header line of the titles, then one line per row, cells separated by one space and
/// padded to the widest cell of their column (display_width(): cells must already be escaped);
/// the last column is not padded. Every row must have as many cells as there are columns.
void print_table(const std::vector<TableColumn>& columns, const std::vector<std::vector<std::string>>& rows,
                 std::ostream& out);

}  // namespace coredumpd::cli
