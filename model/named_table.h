// The registries' tables (algorithms, generators, graph properties, graph
// formats): entries by name, filled from other files' static initializers
// (each table is a function-local static for that reason) and listed in
// name order.
#pragma once

#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace remat {

template <typename Entry>
using NamedTable = std::map<std::string, Entry>;

// Adds `entry` under its `name`; returns true, for `const bool kRegistered =
// ...`. A second entry of one name is a bug of the build (two files register
// it): std::logic_error "<kind> registered twice: <name>".
template <typename Entry>
bool AddNamed(NamedTable<Entry>& table, Entry entry, const std::string& kind) {
  std::string name = entry.name;
  if (!table.emplace(name, std::move(entry)).second) {
    throw std::logic_error(kind + " registered twice: " + name);
  }
  return true;
}

// Every entry, in name order.
template <typename Entry>
std::vector<const Entry*> AllNamed(const NamedTable<Entry>& table) {
  std::vector<const Entry*> all;
  for (const auto& [name, entry] : table) all.push_back(&entry);
  return all;
}

}  // namespace remat
