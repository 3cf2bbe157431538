// Named parameters (`key=value`) of algorithms and graph generators.
//
// Each algorithm and generator declares its parameters once (ParamSpec);
// that declaration gives the defaults, the checks, and the text of
// `remat list`, so the three can never disagree. An algorithm or a generator
// writes its ParamSpecs through its typed options (model/options.h) and
// reads the checked values as that struct, never by key.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

namespace remat {

struct ParamSpec {
  // kList: names separated by '+' ("chen_greedy+revolve"), since commas
  // already separate parameters and specs.
  enum class Type { kInt, kDouble, kChoice, kBytes, kList };
  std::string name;
  Type type = Type::kInt;
  std::string default_value;  // empty: required
  std::string description;
  std::vector<std::string> choices;  // kChoice only
  int64_t min_int = 0;               // kInt / kBytes lower bound
  double min_double = -std::numeric_limits<double>::infinity();  // kDouble
  // kList only: the reason an item is refused, or empty when it is fine.
  std::function<std::string(const std::string& item)> check_item;
};

// Checked, defaulted parameter values. Construct with Params::Parse.
class Params {
 public:
  Params() = default;

  // Parses "k=v" items against `specs`. `owner` names the algorithm or
  // generator in errors. Throws InputError on unknown keys, repeated keys,
  // missing required ones and values of the wrong type.
  static Params Parse(const std::vector<std::string>& items,
                      const std::vector<ParamSpec>& specs,
                      const std::string& owner);

  int64_t Int(const std::string& key) const;
  double Double(const std::string& key) const;
  const std::string& String(const std::string& key) const;
  std::vector<std::string> List(const std::string& key) const;

  // Only the values given explicitly, for result files and canonical names.
  const std::map<std::string, std::string>& given() const { return given_; }
  // "k1=v1,k2=v2" of the given values, sorted by key; empty if none.
  std::string Canonical() const;

 private:
  std::map<std::string, std::string> values_;  // given values and defaults
  std::map<std::string, std::string> given_;
};

// Splits "a=1,b=2" into {"a=1", "b=2"}; empty text gives no items.
std::vector<std::string> SplitParamList(const std::string& text);

// Splits "name:k=v,k=v" into the name and its items.
std::pair<std::string, std::vector<std::string>> SplitSpec(
    const std::string& spec);

// Splits a comma-separated list of specs such as
// "chain:n=8,mem=2,chain:n=4" into {"chain:n=8,mem=2", "chain:n=4"}: an item
// that holds '=' but no ':' before it continues the previous spec.
std::vector<std::string> SplitSpecList(const std::string& text);

// Parses a byte count with an optional unit: B, kB/KB, MB, GB, TB (powers of
// 1000) or KiB, MiB, GiB, TiB (powers of 1024); fractions round up
// ("1.5GiB"). Throws InputError naming `what`.
int64_t ParseBytes(const std::string& text, const std::string& what);

// "1.50 GiB" style rendering for humans.
std::string FormatBytes(int64_t bytes);

}  // namespace remat
