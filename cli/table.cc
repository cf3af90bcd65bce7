#include "cli/table.h"

#include <algorithm>

#include "util/text.h"

namespace coredumpd::cli {

void print_table(const std::vector<TableColumn>& columns, const std::vector<std::vector<std::string>>& rows,
                 std::ostream& out) {
  std::vector<std::size_t> width(columns.size());
  for (std::size_t c = 0; c < columns.size(); ++c) width[c] = display_width(columns[c].title);
  for (const auto& row : rows)
    for (std::size_t c = 0; c < columns.size(); ++c) width[c] = std::max(width[c], display_width(row.at(c)));
  const auto print_row = [&](const auto& cell_of) {
    std::string line;
    for (std::size_t c = 0; c < columns.size(); ++c) {
      const std::string& cell = cell_of(c);
      const std::size_t pad = width[c] - display_width(cell);
      if (c > 0) line.push_back(' ');
      if (columns[c].right) line.append(pad, ' ');
      line += cell;
      if (!columns[c].right && c + 1 < columns.size()) line.append(pad, ' ');
    }
    out << line << '\n';
  };
  std::vector<std::string> titles;
  for (const auto& c : columns) titles.emplace_back(c.title);
  print_row([&](std::size_t c) -> const std::string& { return titles[c]; });
  for (const auto& row : rows) print_row([&](std::size_t c) -> const std::string& { return row[c]; });
}

}  // namespace coredumpd::cli
