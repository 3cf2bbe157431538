#include "model/params.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include "model/errors.h"

namespace remat {

namespace {

bool ParseInt(const std::string& text, int64_t& value) {
  auto [end, ec] =
      std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && end == text.data() + text.size();
}

bool ParseDouble(const std::string& text, double& value) {
  auto [end, ec] =
      std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && end == text.data() + text.size() &&
         std::isfinite(value);
}

std::vector<std::string> SplitList(const std::string& text) {
  std::vector<std::string> items;
  size_t start = 0;
  for (size_t plus; (plus = text.find('+', start)) != std::string::npos;
       start = plus + 1) {
    items.push_back(text.substr(start, plus - start));
  }
  items.push_back(text.substr(start));
  return items;
}

void CheckValue(const ParamSpec& spec, const std::string& value,
                const std::string& owner) {
  auto fail = [&](const std::string& expected) {
    throw InputError(fmt::format("{}: parameter {}={}: {}", owner, spec.name,
                                 value, expected));
  };
  switch (spec.type) {
    case ParamSpec::Type::kInt: {
      int64_t x;
      if (!ParseInt(value, x)) fail("expected an integer");
      if (x < spec.min_int) fail(fmt::format("must be >= {}", spec.min_int));
      break;
    }
    case ParamSpec::Type::kBytes: {
      int64_t x =
          ParseBytes(value, fmt::format("{}: parameter {}", owner, spec.name));
      if (x < spec.min_int) fail(fmt::format("must be >= {}", spec.min_int));
      break;
    }
    case ParamSpec::Type::kDouble: {
      double x;
      if (!ParseDouble(value, x)) fail("expected a number");
      if (x < spec.min_double) {
        fail(fmt::format("must be >= {}", spec.min_double));
      }
      break;
    }
    case ParamSpec::Type::kChoice:
      if (std::find(spec.choices.begin(), spec.choices.end(), value) ==
          spec.choices.end()) {
        fail(fmt::format("expected one of {}", fmt::join(spec.choices, ", ")));
      }
      break;
    case ParamSpec::Type::kList:
      if (value.empty()) fail("expected at least one name");
      for (const std::string& item : SplitList(value)) {
        if (item.empty()) fail("an empty name between '+' signs");
        if (spec.check_item) {
          if (std::string why = spec.check_item(item); !why.empty()) {
            fail(fmt::format("'{}': {}", item, why));
          }
        }
      }
      break;
  }
}

}  // namespace

Params Params::Parse(const std::vector<std::string>& items,
                     const std::vector<ParamSpec>& specs,
                     const std::string& owner) {
  Params params;
  for (const std::string& item : items) {
    size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw InputError(fmt::format(
          "{}: parameter '{}' must have the form key=value", owner, item));
    }
    std::string key = item.substr(0, eq);
    std::string value = item.substr(eq + 1);
    auto spec = std::find_if(specs.begin(), specs.end(),
                             [&](const ParamSpec& s) { return s.name == key; });
    if (spec == specs.end()) {
      std::vector<std::string> known;
      for (const ParamSpec& s : specs) known.push_back(s.name);
      throw InputError(fmt::format(
          "{}: unknown parameter '{}' (known: {})", owner, key,
          known.empty() ? "none" : fmt::format("{}", fmt::join(known, ", "))));
    }
    if (params.given_.count(key)) {
      throw InputError(
          fmt::format("{}: parameter '{}' given twice", owner, key));
    }
    CheckValue(*spec, value, owner);
    params.given_[key] = value;
  }
  for (const ParamSpec& spec : specs) {
    if (auto it = params.given_.find(spec.name); it != params.given_.end()) {
      params.values_[spec.name] = it->second;
    } else if (spec.default_value.empty()) {
      throw InputError(fmt::format("{}: parameter '{}' is required ({})", owner,
                                   spec.name, spec.description));
    } else {
      params.values_[spec.name] = spec.default_value;
    }
  }
  return params;
}

const std::string& Params::String(const std::string& key) const {
  auto it = values_.find(key);
  if (it == values_.end()) {
    // A parameter read but never declared is a programming error.
    throw std::logic_error("undeclared parameter " + key);
  }
  return it->second;
}

std::vector<std::string> Params::List(const std::string& key) const {
  return SplitList(String(key));
}

int64_t Params::Int(const std::string& key) const {
  const std::string& text = String(key);
  int64_t value;
  if (ParseInt(text, value)) return value;
  return ParseBytes(text, key);
}

double Params::Double(const std::string& key) const {
  double value = 0;
  ParseDouble(String(key), value);
  return value;
}

std::string Params::Canonical() const {
  std::vector<std::string> items;
  for (const auto& [key, value] : given_) items.push_back(key + "=" + value);
  return fmt::format("{}", fmt::join(items, ","));
}

std::vector<std::string> SplitParamList(const std::string& text) {
  std::vector<std::string> items;
  size_t start = 0;
  while (start <= text.size() && !text.empty()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    items.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return items;
}

std::pair<std::string, std::vector<std::string>> SplitSpec(
    const std::string& spec) {
  size_t colon = spec.find(':');
  if (colon == std::string::npos) return {spec, {}};
  return {spec.substr(0, colon), SplitParamList(spec.substr(colon + 1))};
}

std::vector<std::string> SplitSpecList(const std::string& text) {
  std::vector<std::string> specs;
  for (const std::string& item : SplitParamList(text)) {
    size_t eq = item.find('=');
    size_t colon = item.find(':');
    bool continues =
        eq != std::string::npos && (colon == std::string::npos || colon > eq);
    if (continues && !specs.empty()) {
      specs.back() += "," + item;
    } else if (!item.empty()) {
      specs.push_back(item);
    }
  }
  return specs;
}

int64_t ParseBytes(const std::string& text, const std::string& what) {
  struct Unit {
    const char* suffix;
    double factor;
  };
  static const Unit kUnits[] = {{"KiB", 1024.0},
                                {"MiB", 1024.0 * 1024},
                                {"GiB", 1024.0 * 1024 * 1024},
                                {"TiB", 1024.0 * 1024 * 1024 * 1024},
                                {"kB", 1e3},
                                {"KB", 1e3},
                                {"MB", 1e6},
                                {"GB", 1e9},
                                {"TB", 1e12},
                                {"B", 1.0}};
  // Spaces around the number and before the unit are allowed alike
  // (" 20", "10 GB"), so a budget reads the same however it was quoted.
  auto trim = [](std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
      s.remove_prefix(1);
    }
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) {
      s.remove_suffix(1);
    }
    return s;
  };
  const std::string_view trimmed = trim(text);
  auto fail = [&]() -> int64_t {
    if (trimmed.empty()) {
      throw InputError(fmt::format(
          "{}: empty; expected a byte count (examples: 1000, 512MiB, 8GB)",
          what));
    }
    throw InputError(fmt::format(
        "{}: '{}' is not a byte count (examples: 1000, 512MiB, 1.5GiB, 8GB)",
        what, Printable(text, 60)));
  };
  std::string number(trimmed);
  double factor = 1.0;
  for (const Unit& unit : kUnits) {
    std::string_view suffix = unit.suffix;
    if (trimmed.size() > suffix.size() && trimmed.ends_with(suffix)) {
      number = trim(trimmed.substr(0, trimmed.size() - suffix.size()));
      factor = unit.factor;
      break;
    }
  }
  int64_t whole;
  if (factor == 1.0 && ParseInt(number, whole)) {
    if (whole < 0) fail();
    return whole;
  }
  double value;
  if (!ParseDouble(number, value) || value < 0) return fail();
  double bytes = std::ceil(value * factor);
  if (bytes >= 9.2e18) {
    throw InputError(
        fmt::format("{}: '{}' overflows int64", what, Printable(text, 60)));
  }
  return static_cast<int64_t>(bytes);
}

std::string FormatBytes(int64_t bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (std::abs(value) >= 1024 && unit < 6) {
    value /= 1024;
    ++unit;
  }
  if (unit == 0) return fmt::format("{} B", bytes);
  return fmt::format("{:.2f} {}", value, kUnits[unit]);
}

}  // namespace remat
