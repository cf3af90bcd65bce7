// An enum's stable names in one table, looked up both ways.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>
#include <utility>

namespace coredumpd {

/// One row of an enum's name table: a value and its name.
template <typename E>
using EnumName = std::pair<E, std::string_view>;

/// The name of `value` in `table`, or std::nullopt if the table lacks it.
template <typename E, std::size_t N>
constexpr std::optional<std::string_view> name_of(const std::array<EnumName<E>, N>& table, E value) {
  for (const auto& [v, name] : table)
    if (v == value) return name;
  return std::nullopt;
}

/// The value named `name` in `table`, or std::nullopt for any other string.
template <typename E, std::size_t N>
constexpr std::optional<E> value_of(const std::array<EnumName<E>, N>& table, std::string_view name) {
  for (const auto& [v, n] : table)
    if (n == name) return v;
  return std::nullopt;
}

}  // namespace coredumpd
