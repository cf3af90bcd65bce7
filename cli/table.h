// Aligned text tables for dumpctl's listings (`list`, `signatures`).
#pragma once

#include <cstddef>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

namespace coredumpd::cli {

/// One column of a table: its title and whether its cells are right-aligned (numbers, sizes).
struct TableColumn {
  const char* title;
  bool right = false;
};

/// ANSI sequences around one cell (cli/terminal.h ansi_*()), not counted in its width; both ""
/// for none.
struct CellColour {
  const char* on = "";
  const char* off = "";
};

/// How a table is printed beside its cells.
struct TableStyle {
  bool legend = true;  ///< the header line of titles (false: --no-legend; widths from cells only)
  /// The colour of the cell at (row, column); empty: none.
  std::function<CellColour(std::size_t row, std::size_t column)> colour;
};

/// Prints a header line of the titles (unless !style.legend), then one line per row, cells
/// separated by one space and padded to the widest cell of their column (display_width(): cells
/// must already be escaped); the last column is not padded. Every row must have as many cells as
/// there are columns.
void print_table(const std::vector<TableColumn>& columns, const std::vector<std::vector<std::string>>& rows,
                 std::ostream& out, const TableStyle& style = {});

}  // namespace coredumpd::cli
