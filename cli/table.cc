#include "cli/table.h"

#include <algorithm>

#include "util/text.h"

namespace coredumpd::cli {

void print_table(const std::vector<TableColumn>& columns, const std::vector<std::vector<std::string>>& rows,
                 std::ostream& out, const TableStyle& style) {
  std::vector<std::size_t> width(columns.size());
  if (style.legend)
    for (std::size_t c = 0; c < columns.size(); ++c) width[c] = display_width(columns[c].title);
  for (const auto& row : rows)
    for (std::size_t c = 0; c < columns.size(); ++c) width[c] = std::max(width[c], display_width(row.at(c)));
  const auto print_row = [&](const auto& cell_of, const auto& colour_of) {
    std::string line;
    for (std::size_t c = 0; c < columns.size(); ++c) {
      const std::string& cell = cell_of(c);
      const std::size_t pad = width[c] - display_width(cell);
      const CellColour colour = colour_of(c);
      if (c > 0) line.push_back(' ');
      if (columns[c].right) line.append(pad, ' ');
      line += colour.on;
      line += cell;
      line += colour.off;
      if (!columns[c].right && c + 1 < columns.size()) line.append(pad, ' ');
    }
    out << line << '\n';
  };
  const auto no_colour = [](std::size_t) { return CellColour{}; };
  if (style.legend) {
    std::vector<std::string> titles;
    for (const auto& c : columns) titles.emplace_back(c.title);
    print_row([&](std::size_t c) -> const std::string& { return titles[c]; }, no_colour);
  }
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const auto colour_of = [&](std::size_t c) { return style.colour ? style.colour(r, c) : CellColour{}; };
    print_row([&](std::size_t c) -> const std::string& { return rows[r][c]; }, colour_of);
  }
}

}  // namespace coredumpd::cli
