// Typed options: an algorithm's or a graph generator's parameters as one
// struct of integers, doubles, enums, booleans and name lists
// (docs/adding_an_algorithm.md, "Options"), after Mt-KaHyPar's context: typed,
// declared once, checked once.
//
// Each field of an Options<T> declaration names its member of T, its key,
// its typed default and its description. From that one declaration come
//  - the ParamSpecs the registry lists (`remat list`, `remat list
//    --json`, Python's `rematbench.algorithms()`), their default texts
//    written from the typed defaults, so that the two cannot drift;
//  - the check of the given text, by Params::Parse against those specs when
//    the request is made (a bad value or an unknown choice is one
//    InputError line naming the algorithm, the key and the value: exit
//    status 2 from the command line);
//  - Read, the one place that turns the checked parameters into a T. An
//    algorithm reads its options with Read once per solve and then only
//    typed fields.
#pragma once

#include <fmt/format.h>

#include <concepts>
#include <cstdint>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "model/params.h"

namespace remat {

// One option: its spec and how it sets its member from checked parameters.
template <typename T>
struct OptionField {
  ParamSpec spec;
  std::function<void(const Params&, T&)> read;
};

// Not an option but a fact about them: whether any of `keys` was given
// explicitly (an algorithm that treats its defaults differently from the
// same values given, as twremat's knob search does).
template <typename T>
struct GivenFlag {
  bool T::*member;
  std::vector<std::string> keys;
};

template <typename T>
class Options {
 public:
  // Fields, or lists of fields (shared declarations such as NestedOptions),
  // in the order `remat list` shows them.
  template <typename... Parts>
  requires((std::same_as<Parts, OptionField<T>> ||
            std::same_as<Parts, std::vector<OptionField<T>>> ||
            std::same_as<Parts,
                         GivenFlag<T>>)&&...) explicit Options(Parts... parts) {
    (Add(std::move(parts)), ...);
  }

  // For AlgorithmInfo::params.
  std::vector<ParamSpec> Specs() const {
    std::vector<ParamSpec> specs;
    for (const OptionField<T>& field : fields_) specs.push_back(field.spec);
    return specs;
  }

  // The options of parameters that Params::Parse checked against Specs().
  T Read(const Params& params) const {
    T options{};
    for (const OptionField<T>& field : fields_) field.read(params, options);
    for (const GivenFlag<T>& flag : flags_) {
      options.*flag.member = false;
      for (const std::string& key : flag.keys) {
        if (params.given().contains(key)) options.*flag.member = true;
      }
    }
    return options;
  }

 private:
  void Add(OptionField<T> field) { fields_.push_back(std::move(field)); }
  void Add(std::vector<OptionField<T>> fields) {
    for (OptionField<T>& field : fields) Add(std::move(field));
  }
  void Add(GivenFlag<T> flag) { flags_.push_back(std::move(flag)); }

  std::vector<OptionField<T>> fields_;
  std::vector<GivenFlag<T>> flags_;
};

// An integer (any integral member type), at least `min`.
template <typename T, std::integral I>
OptionField<T> IntOption(I T::*member, std::string name,
                         std::type_identity_t<I> default_value,
                         std::string description, int64_t min = 0) {
  std::string key = name;
  return {.spec = {.name = std::move(name),
                   .type = ParamSpec::Type::kInt,
                   .default_value = std::to_string(default_value),
                   .description = std::move(description),
                   .min_int = min},
          .read = [member, key](const Params& params, T& options) {
            options.*member = static_cast<I>(params.Int(key));
          }};
}

// An integer that has no default: Params::Parse refuses its absence.
template <typename T, std::integral I>
OptionField<T> RequiredIntOption(I T::*member, std::string name,
                                 std::string description, int64_t min = 0) {
  OptionField<T> field =
      IntOption(member, std::move(name), I{}, std::move(description), min);
  field.spec.default_value.clear();
  return field;
}

// A byte count with an optional unit (ParseBytes), at least `min`.
template <typename T>
OptionField<T> BytesOption(int64_t T::*member, std::string name,
                           int64_t default_value, std::string description,
                           int64_t min = 0) {
  OptionField<T> field = IntOption(member, std::move(name), default_value,
                                   std::move(description), min);
  field.spec.type = ParamSpec::Type::kBytes;
  return field;
}

template <typename T>
OptionField<T> DoubleOption(
    double T::*member, std::string name, double default_value,
    std::string description,
    double min = -std::numeric_limits<double>::infinity()) {
  std::string key = name;
  return {.spec = {.name = std::move(name),
                   .type = ParamSpec::Type::kDouble,
                   .default_value = fmt::format("{}", default_value),
                   .description = std::move(description),
                   .min_double = min},
          .read = [member, key](const Params& params, T& options) {
            options.*member = params.Double(key);
          }};
}

// An enum given by name: `names` pairs each accepted text with its value,
// in the order `remat list` shows the choices.
template <typename T, typename E>
OptionField<T> ChoiceOption(E T::*member, std::string name, E default_value,
                            std::vector<std::pair<std::string, E>> names,
                            std::string description) {
  ParamSpec spec{.name = std::move(name),
                 .type = ParamSpec::Type::kChoice,
                 .description = std::move(description)};
  for (const auto& [text, value] : names) {
    spec.choices.push_back(text);
    if (value == default_value) spec.default_value = text;
  }
  if (spec.default_value.empty()) {
    throw std::logic_error("option " + spec.name + ": default has no name");
  }
  std::string key = spec.name;
  return {.spec = std::move(spec),
          .read = [member, key, names](const Params& params, T& options) {
            const std::string& text = params.String(key);
            for (const auto& [choice, value] : names) {
              if (choice == text) {
                options.*member = value;
                return;
              }
            }
            // Params::Parse refused any other text.
            throw std::logic_error("option " + key + ": unchecked " + text);
          }};
}

// true or false.
template <typename T>
OptionField<T> BoolOption(bool T::*member, std::string name, bool default_value,
                          std::string description) {
  return ChoiceOption(member, std::move(name), default_value,
                      {{"true", true}, {"false", false}},
                      std::move(description));
}

// Names separated by '+' (ParamSpec::Type::kList), from a shared spec such
// as WarmStartParam's.
template <typename T>
OptionField<T> ListOption(std::vector<std::string> T::*member, ParamSpec spec) {
  if (spec.type != ParamSpec::Type::kList) {
    throw std::logic_error("option " + spec.name + ": not a list");
  }
  std::string key = spec.name;
  return {.spec = std::move(spec),
          .read = [member, key](const Params& params, T& options) {
            options.*member = params.List(key);
          }};
}

// The fields of a part M shared by several algorithms' options (a family's
// common options), as fields of T's member `member`.
template <typename T, typename M>
std::vector<OptionField<T>> NestedOptions(M T::*member,
                                          std::vector<OptionField<M>> fields) {
  std::vector<OptionField<T>> nested;
  for (OptionField<M>& field : fields) {
    nested.push_back({.spec = std::move(field.spec),
                      .read = [member, read = std::move(field.read)](
                                  const Params& params, T& options) {
                        read(params, options.*member);
                      }});
  }
  return nested;
}

}  // namespace remat
