#include "harness/cli/output.h"

#include <fmt/format.h>

#include <iostream>
#include <string_view>

#include "model/json_text.h"
#include "model/params.h"

namespace remat::cli {

namespace {

// The human table goes to a terminal: names read from files may hold
// control characters (an escape sequence, a newline, C1's CSI), shown as
// \xNN like bytes that are not UTF-8; other UTF-8 is kept as it is.
std::string ForTerminal(std::string_view text) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  auto escape = [&](unsigned char c) {
    out += "\\x";
    out += kHex[c >> 4];
    out += kHex[c & 15];
  };
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    auto at = [&](size_t k) {
      return i + k < text.size() ? static_cast<unsigned char>(text[i + k])
                                 : 0;
    };
    size_t length = 0;
    if (c >= 0x20 && c < 0x7f) {
      length = 1;
    } else if (c >= 0xc2 && c <= 0xdf) {
      length = c == 0xc2 && at(1) < 0xa0 ? 0 : 2;  // C1 controls
    } else if (c >= 0xe0 && c <= 0xef) {
      length = (c == 0xe0 && at(1) < 0xa0) || (c == 0xed && at(1) > 0x9f)
                   ? 0
                   : 3;
    } else if (c >= 0xf0 && c <= 0xf4) {
      length = (c == 0xf0 && at(1) < 0x90) || (c == 0xf4 && at(1) > 0x8f)
                   ? 0
                   : 4;
    }
    for (size_t k = 1; k < length; ++k) {
      if (at(k) < 0x80 || at(k) > 0xbf) length = 0;
    }
    if (length == 0) {
      escape(c);
      ++i;
    } else {
      out.append(text.substr(i, length));
      i += length;
    }
  }
  return out;
}

std::string Render(const std::string& key, const Json& value) {
  if (value.is_string()) return ForTerminal(value.get<std::string>());
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
      std::cout << indent << ForTerminal(key) << ":\n";
      PrintRows(value, indent + "  ");
      continue;
    }
    std::cout << fmt::format("{}{:<{}}  {}\n", indent, ForTerminal(key), width,
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
