// Typed options (model/options.h): the specs and default texts they
// declare, Read, the one-line errors of a bad value or choice through
// Params::Parse, and the registered algorithms' defaults against the
// tables of docs/algorithms.md.
#include "model/options.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "model/errors.h"
#include "model/registry.h"

namespace remat {
namespace {

enum class Shape { kRound, kSquare };

struct Part {
  int64_t depth = 0;
};

struct Example {
  int64_t count = 0;
  int threads = 0;
  int64_t bytes = 0;
  double ratio = 0;
  Shape shape = Shape::kRound;
  bool fast = false;
  std::vector<std::string> names;
  Part part;
};

const Options<Example> kExample(
    IntOption(&Example::count, "count", 7, "how many", 1),
    IntOption(&Example::threads, "threads", 2, "threads"),
    BytesOption(&Example::bytes, "bytes", 1024, "a size"),
    DoubleOption(&Example::ratio, "ratio", 0.25, "a fraction"),
    ChoiceOption(&Example::shape, "shape", Shape::kSquare,
                 {{"round", Shape::kRound}, {"square", Shape::kSquare}},
                 "a shape"),
    BoolOption(&Example::fast, "fast", true, "go fast"),
    ListOption(&Example::names, {.name = "names",
                                 .type = ParamSpec::Type::kList,
                                 .default_value = "a+b",
                                 .description = "names"}),
    NestedOptions(&Example::part,
                  std::vector<OptionField<Part>>{
                      IntOption(&Part::depth, "depth", -1, "depth", -1)}));

std::string ErrorOf(const std::vector<ParamSpec>& specs,
                    const std::vector<std::string>& items,
                    const std::string& owner) {
  try {
    Params::Parse(items, specs, owner);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Options, SpecsCarryTheTypedDefaultsAsText) {
  const std::vector<ParamSpec> specs = kExample.Specs();
  std::map<std::string, ParamSpec> by_name;
  for (const ParamSpec& spec : specs) by_name[spec.name] = spec;
  ASSERT_EQ(specs.size(), 8u);
  EXPECT_EQ(specs[0].name, "count");  // in declaration order
  EXPECT_EQ(by_name["count"].default_value, "7");
  EXPECT_EQ(by_name["count"].min_int, 1);
  EXPECT_EQ(by_name["bytes"].type, ParamSpec::Type::kBytes);
  EXPECT_EQ(by_name["ratio"].default_value, "0.25");
  EXPECT_EQ(by_name["shape"].type, ParamSpec::Type::kChoice);
  EXPECT_EQ(by_name["shape"].default_value, "square");
  EXPECT_EQ(by_name["shape"].choices,
            (std::vector<std::string>{"round", "square"}));
  EXPECT_EQ(by_name["fast"].default_value, "true");
  EXPECT_EQ(by_name["fast"].choices,
            (std::vector<std::string>{"true", "false"}));
  EXPECT_EQ(by_name["depth"].default_value, "-1");
}

TEST(Options, ReadGivesTheDefaultsAndTheGivenValues) {
  const std::vector<ParamSpec> specs = kExample.Specs();
  const Example defaults = kExample.Read(Params::Parse({}, specs, "ex"));
  EXPECT_EQ(defaults.count, 7);
  EXPECT_EQ(defaults.threads, 2);
  EXPECT_EQ(defaults.bytes, 1024);
  EXPECT_DOUBLE_EQ(defaults.ratio, 0.25);
  EXPECT_EQ(defaults.shape, Shape::kSquare);
  EXPECT_TRUE(defaults.fast);
  EXPECT_EQ(defaults.names, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(defaults.part.depth, -1);

  const Example given = kExample.Read(
      Params::Parse({"count=3", "threads=8", "bytes=2KiB", "ratio=0.5",
                     "shape=round", "fast=false", "names=c", "depth=4"},
                    specs, "ex"));
  EXPECT_EQ(given.count, 3);
  EXPECT_EQ(given.threads, 8);
  EXPECT_EQ(given.bytes, 2048);
  EXPECT_DOUBLE_EQ(given.ratio, 0.5);
  EXPECT_EQ(given.shape, Shape::kRound);
  EXPECT_FALSE(given.fast);
  EXPECT_EQ(given.names, (std::vector<std::string>{"c"}));
  EXPECT_EQ(given.part.depth, 4);
}

TEST(Options, BadValuesAreOneLineNamingOwnerKeyAndValue) {
  const std::vector<ParamSpec> specs = kExample.Specs();
  EXPECT_EQ(ErrorOf(specs, {"count=0"}, "ex"),
            "ex: parameter count=0: must be >= 1");
  EXPECT_EQ(ErrorOf(specs, {"shape=oval"}, "ex"),
            "ex: parameter shape=oval: expected one of round, square");
  EXPECT_EQ(ErrorOf(specs, {"fast=yes"}, "ex"),
            "ex: parameter fast=yes: expected one of true, false");
  EXPECT_EQ(ErrorOf(specs, {"ratio=x"}, "ex"),
            "ex: parameter ratio=x: expected a number");
}

TEST(Options, RequiredIntHasNoDefaultAndIsRefusedWhenAbsent) {
  struct Sized {
    int64_t n = 0;
  };
  const Options<Sized> options(
      RequiredIntOption(&Sized::n, "n", "number of nodes", 1));
  const std::vector<ParamSpec> specs = options.Specs();
  ASSERT_EQ(specs.size(), 1u);
  EXPECT_EQ(specs[0].default_value, "");
  EXPECT_EQ(specs[0].min_int, 1);
  EXPECT_EQ(ErrorOf(specs, {}, "gen"),
            "gen: parameter 'n' is required (number of nodes)");
  EXPECT_EQ(options.Read(Params::Parse({"n=5"}, specs, "gen")).n, 5);
}

// The registered algorithms' options refuse a bad value and a bad choice
// with one line naming the algorithm, the key and the value.
TEST(Options, RegisteredAlgorithmsRefuseBadValuesInOneLine) {
  const struct {
    const char* algorithm;
    const char* item;
    const char* error;
  } cases[] = {
      {"rotor", "slots=many",
       "rotor: parameter slots=many: expected an integer"},
      {"dtr", "heuristic=h_best",
       "dtr: parameter heuristic=h_best: expected one of h_dtr, h_lru, "
       "h_size, h_msps"},
      {"vdnn", "wait=yes",
       "vdnn: parameter wait=yes: expected one of true, false"},
      {"checkmate_lp", "lp_fraction=most",
       "checkmate_lp: parameter lp_fraction=most: expected a number"},
      {"swap_remat", "levels=0",
       "swap_remat: parameter levels=0: must be >= 1"},
      {"order_search", "jitter=-0.5",
       "order_search: parameter jitter=-0.5: must be >= 0"},
      {"twremat", "elimination=random",
       "twremat: parameter elimination=random: expected one of min_fill, "
       "min_degree"},
  };
  for (const auto& c : cases) {
    const std::string error =
        ErrorOf(FindAlgorithm(c.algorithm).params, {c.item}, c.algorithm);
    EXPECT_EQ(error, c.error);
    EXPECT_EQ(error.find('\n'), std::string::npos);
  }
}

// Every registered algorithm's parameters are in a table of its section of
// docs/algorithms.md ("| `key` | `default` | meaning |") with the default
// its typed options declare.
TEST(Options, DefaultsAreTheDocumentedDefaults) {
  std::ifstream file(std::string(REMAT_SOURCE_DIR) + "/docs/algorithms.md");
  ASSERT_TRUE(file) << "docs/algorithms.md";
  // algorithm -> key -> documented default
  std::map<std::string, std::map<std::string, std::string>> documented;
  std::set<std::string> section;
  const std::regex heading(R"(^#{2,3} (.*))");
  const std::regex name(R"(`?([a-z_]+)`?)");
  const std::regex row(R"(^\| `([a-z_]+)` \| `([^`]*)` \|)");
  std::set<std::string> registered;
  for (const AlgorithmInfo* info : AllAlgorithms()) {
    registered.insert(info->name);
  }
  std::string line;
  std::smatch m;
  while (std::getline(file, line)) {
    if (std::regex_match(line, m, heading)) {
      section.clear();
      const std::string title = m[1];
      for (auto it = std::sregex_iterator(title.begin(), title.end(), name);
           it != std::sregex_iterator(); ++it) {
        if (registered.count((*it)[1])) section.insert((*it)[1]);
      }
    } else if (std::regex_search(line, m, row)) {
      for (const std::string& algorithm : section) {
        documented[algorithm].emplace(m[1], m[2]);
      }
    }
  }
  for (const AlgorithmInfo* info : AllAlgorithms()) {
    for (const ParamSpec& spec : info->params) {
      auto it = documented[info->name].find(spec.name);
      if (it == documented[info->name].end()) {
        ADD_FAILURE() << info->name << ": " << spec.name
                      << " has no row in docs/algorithms.md";
        continue;
      }
      EXPECT_EQ(it->second, spec.default_value)
          << info->name << ": " << spec.name;
    }
  }
}

// Every registered generator's row of the table in graphs/README.md
// ("| `name` | `key=default`, `key`, ... |") names each of its parameters,
// with the default its typed options declare where the row gives one.
TEST(Options, GeneratorDefaultsAreTheDocumentedDefaults) {
  std::ifstream file(std::string(REMAT_SOURCE_DIR) + "/graphs/README.md");
  ASSERT_TRUE(file) << "graphs/README.md";
  // generator -> key -> documented default ("" when the row gives none)
  std::map<std::string, std::map<std::string, std::string>> documented;
  const std::regex row(R"(^\| `([a-z_]+)` \| ([^|]*) \|)");
  const std::regex param(R"(`([a-z_]+)(=([^`]*))?`)");
  std::string line;
  std::smatch m;
  while (std::getline(file, line)) {
    if (!std::regex_search(line, m, row)) continue;
    const std::string generator = m[1];
    const std::string cell = m[2];
    for (auto it = std::sregex_iterator(cell.begin(), cell.end(), param);
         it != std::sregex_iterator(); ++it) {
      documented[generator].emplace((*it)[1], (*it)[3]);
    }
  }
  ASSERT_FALSE(AllGenerators().empty());
  for (const GeneratorInfo* info : AllGenerators()) {
    for (const ParamSpec& spec : info->params) {
      auto it = documented[info->name].find(spec.name);
      if (it == documented[info->name].end()) {
        ADD_FAILURE() << info->name << ": " << spec.name
                      << " is not in its row of graphs/README.md";
      } else if (!it->second.empty()) {
        EXPECT_EQ(it->second, spec.default_value)
            << info->name << ": " << spec.name;
      }
    }
  }
}

}  // namespace
}  // namespace remat
