#include "model/json_text.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <unordered_set>
#include <vector>

#include "model/errors.h"
#include "model/stop.h"

namespace remat {

namespace {

int64_t LineOf(std::string_view text, size_t byte) {
  byte = std::min(byte, text.size());
  return 1 + std::count(text.begin(), text.begin() + byte, '\n');
}

// nlohmann's DOM builder with one check more: a key that an object has
// already is an error, not a value that silently replaces the first.
class UniqueKeysBuilder {
 public:
  using Json = nlohmann::json;
  UniqueKeysBuilder(Json& root, bool exceptions) : dom_(root, exceptions) {}

  bool null() { return dom_.null(); }
  bool boolean(bool v) { return dom_.boolean(v); }
  bool number_integer(Json::number_integer_t v) {
    stop_.Tick();
    return dom_.number_integer(v);
  }
  bool number_unsigned(Json::number_unsigned_t v) {
    stop_.Tick();
    return dom_.number_unsigned(v);
  }
  bool number_float(Json::number_float_t v, const Json::string_t& s) {
    stop_.Tick();
    return dom_.number_float(v, s);
  }
  bool string(Json::string_t& v) {
    stop_.Tick();
    return dom_.string(v);
  }
  bool binary(Json::binary_t& v) { return dom_.binary(v); }
  bool start_array(size_t n) {
    stop_.Tick();
    return dom_.start_array(n);
  }
  bool end_array() { return dom_.end_array(); }
  bool start_object(size_t n) {
    stop_.Tick();
    levels_.push_back({keys_.size(), nullptr});
    return dom_.start_object(n);
  }
  bool end_object() {
    keys_.resize(levels_.back().start);
    levels_.pop_back();
    return dom_.end_object();
  }
  bool key(Json::string_t& k) {
    Level& level = levels_.back();
    bool seen;
    if (level.many) {
      seen = !level.many->insert(k).second;
    } else {
      // Objects hold a handful of keys: a scan, until one holds many.
      seen = std::find(keys_.begin() + level.start, keys_.end(), k) !=
             keys_.end();
      keys_.push_back(k);
      if (keys_.size() - level.start > 64) {
        level.many = std::make_unique<std::unordered_set<std::string>>(
            keys_.begin() + level.start, keys_.end());
      }
    }
    if (seen) {
      duplicate_ = k;
      return false;
    }
    return dom_.key(k);
  }
  template <typename Exception>
  bool parse_error(size_t position, const std::string& token,
                   const Exception& e) {
    return dom_.parse_error(position, token, e);
  }

  // The key found twice in one object, if any.
  const std::optional<std::string>& duplicate() const { return duplicate_; }

 private:
  struct Level {
    size_t start;
    std::unique_ptr<std::unordered_set<std::string>> many;
  };
  nlohmann::detail::json_sax_dom_parser<Json> dom_;
  std::vector<std::string> keys_;
  std::vector<Level> levels_;
  std::optional<std::string> duplicate_;
  // A large document stops being parsed soon after a stop (model/stop.h).
  StopPoll stop_;
};

// Parses `text`; a discarded value on a syntax error when !exceptions.
// Throws InputError naming a duplicate key (as "<source>: ..." when
// exceptions, else returns a discarded value).
nlohmann::json ParseUniqueKeys(std::string_view text, bool exceptions,
                               const std::string& source) {
  nlohmann::json root;
  UniqueKeysBuilder builder(root, exceptions);
  const bool ok = nlohmann::json::sax_parse(text, &builder);
  if (builder.duplicate()) {
    if (!exceptions) return nlohmann::json(nlohmann::json::value_t::discarded);
    throw InputError(fmt::format(
        "{}: not valid JSON: the key \"{}\" twice in one object", source,
        Printable(*builder.duplicate(), 100)));
  }
  if (!ok) return nlohmann::json(nlohmann::json::value_t::discarded);
  return root;
}

// JSON text never holds a NUL byte (inside strings it is written \u0000),
// but nlohmann's parser stops at one as at the end: what follows would be
// ignored.
size_t FindNul(std::string_view text) { return text.find('\0'); }

}  // namespace

size_t FindExcessNesting(std::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false;
  // A stop (model/stop.h) is looked for every kStopPoll bytes.
  constexpr size_t kStopPoll = size_t{1} << 20;
  size_t next_poll = kStopPoll;
  for (size_t i = 0; i < text.size(); ++i) {
    if (i >= next_poll) {
      next_poll = i + kStopPoll;
      ThrowIfStopped();
    }
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
  if (const size_t nul = FindNul(text); nul != std::string_view::npos) {
    throw InputError(fmt::format(
        "{}:{}: not valid JSON: a NUL byte at byte {}{}", source,
        LineOf(text, nul), nul,
        nul + 1 < text.size() ? " (the document does not end there)" : ""));
  }
  try {
    return ParseUniqueKeys(text, /*exceptions=*/true, source);
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
  if (FindNul(text) != std::string_view::npos) {
    return nlohmann::json(nlohmann::json::value_t::discarded);
  }
  return ParseUniqueKeys(text, /*exceptions=*/false, "");
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
