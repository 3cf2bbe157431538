#include "model/json_text.h"

#include <fmt/format.h>

#include <algorithm>

#include "model/errors.h"

namespace remat {

namespace {

int64_t LineOf(std::string_view text, size_t byte) {
  byte = std::min(byte, text.size());
  return 1 + std::count(text.begin(), text.begin() + byte, '\n');
}

}  // namespace

size_t FindExcessNesting(std::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character, a quote perhaps
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        break;
      case '[':
      case '{':
        if (++depth > max_depth) return i;
        break;
      case ']':
      case '}':
        // Unbalanced closers make the text invalid; the parser says so.
        depth = std::max(0, depth - 1);
        break;
      default:
        break;
    }
  }
  return std::string_view::npos;
}

nlohmann::json ParseJson(std::string_view text, const std::string& source) {
  if (const size_t deep = FindExcessNesting(text);
      deep != std::string_view::npos) {
    throw InputError(
        fmt::format("{}:{}: not valid JSON here: arrays and objects nested "
                    "deeper than {} levels",
                    source, LineOf(text, deep), kMaxJsonDepth));
  }
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    // e.byte is one past the offending character; the message says what
    // was read there, which matters in files that are one long line.
    const size_t byte = e.byte > 0 ? e.byte - 1 : 0;
    std::string what = e.what();
    if (auto pos = what.find("syntax error"); pos != std::string::npos) {
      what = what.substr(pos);
    }
    throw InputError(fmt::format("{}:{}: not valid JSON: {}", source,
                                 LineOf(text, byte), Printable(what, 200)));
  } catch (const nlohmann::json::exception& e) {
    // Not a syntax error: a number beyond double's range (out_of_range.406).
    std::string what = e.what();
    if (auto pos = what.find("] "); pos != std::string::npos) {
      what = what.substr(pos + 2);
    }
    throw InputError(
        fmt::format("{}: not valid JSON: {}", source, Printable(what, 100)));
  }
}

nlohmann::json ParseJsonLine(std::string_view text) {
  if (FindExcessNesting(text) != std::string_view::npos) {
    return nlohmann::json(nlohmann::json::value_t::discarded);
  }
  return nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
}

std::string DescribeJson(const nlohmann::json& value) {
  switch (value.type()) {
    case nlohmann::json::value_t::array:
      return value.empty() ? "an empty array"
                           : fmt::format("an array of {}", value.size());
    case nlohmann::json::value_t::object:
      return value.empty() ? "an empty object"
                           : fmt::format("an object of {} keys", value.size());
    case nlohmann::json::value_t::string: {
      const std::string& text = value.get_ref<const std::string&>();
      if (text.size() <= 60) return DumpJson(value);
      return DumpJson(nlohmann::json(text.substr(0, 60))) + "...";
    }
    case nlohmann::json::value_t::discarded:
      return "nothing";
    default:
      return DumpJson(value);
  }
}

}  // namespace remat
