#include "harness/cli/output.h"

#include <fmt/format.h>

#include <iostream>

#include "model/json_text.h"
#include "model/params.h"

namespace remat::cli {

namespace {

std::string Render(const std::string& key, const Json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_null()) return "-";
  if (value.is_number_float()) return fmt::format("{:.4f}", value.get<double>());
  if (key.ends_with("_bytes") && value.is_number_integer()) {
    return fmt::format("{} ({})", value.get<int64_t>(),
                       FormatBytes(value.get<int64_t>()));
  }
  return DumpJson(value);
}

void PrintRows(const Json& object, const std::string& indent) {
  size_t width = 0;
  for (const auto& [key, value] : object.items()) {
    width = std::max(width, key.size());
  }
  for (const auto& [key, value] : object.items()) {
    if (value.is_object() && !value.empty()) {
      std::cout << indent << key << ":\n";
      PrintRows(value, indent + "  ");
      continue;
    }
    std::cout << fmt::format("{}{:<{}}  {}\n", indent, key, width,
                             Render(key, value));
  }
}

}  // namespace

std::shared_ptr<bool> AddJsonFlag(CLI::App* command) {
  auto flag = std::make_shared<bool>(false);
  command->add_flag("--json", *flag, "print one JSON object on stdout");
  return flag;
}

std::string& CommandLine() {
  static std::string command_line;
  return command_line;
}

void Print(const Json& object, bool as_json) {
  if (as_json) {
    std::cout << DumpJson(object, 2) << "\n";
    return;
  }
  PrintRows(object, "");
}

}  // namespace remat::cli
