// Parameters, spec lists and byte counts with units.
#include "model/params.h"

#include <gtest/gtest.h>

#include "model/errors.h"

namespace remat {
namespace {

const std::vector<ParamSpec> kSpecs = {
    {.name = "n",
     .type = ParamSpec::Type::kInt,
     .description = "size",
     .min_int = 1},
    {.name = "order",
     .type = ParamSpec::Type::kChoice,
     .default_value = "topo",
     .choices = {"topo", "dfs"}},
    {.name = "mem", .type = ParamSpec::Type::kBytes, .default_value = "1"},
    {.name = "ratio",
     .type = ParamSpec::Type::kDouble,
     .default_value = "0.5"}};

std::string ErrorOf(const std::vector<std::string>& items) {
  try {
    Params::Parse(items, kSpecs, "gen");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Params, GivenValuesAndDefaults) {
  Params p = Params::Parse({"n=5", "mem=2KiB"}, kSpecs, "gen");
  EXPECT_EQ(p.Int("n"), 5);
  EXPECT_EQ(p.Int("mem"), 2048);
  EXPECT_EQ(p.String("order"), "topo");
  EXPECT_DOUBLE_EQ(p.Double("ratio"), 0.5);
  EXPECT_EQ(p.Canonical(), "mem=2KiB,n=5");
}

TEST(Params, RefusesBadItems) {
  EXPECT_NE(ErrorOf({}).find("gen: parameter 'n' is required"),
            std::string::npos);
  EXPECT_NE(ErrorOf({"n=1", "x=2"})
                .find("unknown parameter 'x' (known: n, "
                      "order, mem, ratio)"),
            std::string::npos);
  EXPECT_NE(ErrorOf({"n=1", "n=2"}).find("given twice"), std::string::npos);
  EXPECT_NE(ErrorOf({"n=zero"}).find("n=zero: expected an integer"),
            std::string::npos);
  EXPECT_NE(ErrorOf({"n=0"}).find("must be >= 1"), std::string::npos);
  EXPECT_NE(ErrorOf({"n=1", "order=bfs"}).find("expected one of topo, dfs"),
            std::string::npos);
  EXPECT_NE(ErrorOf({"n=1", "ratio=abc"}).find("expected a number"),
            std::string::npos);
  EXPECT_NE(ErrorOf({"n"}).find("must have the form key=value"),
            std::string::npos);
}

TEST(Params, ListsArePlusSeparatedAndCheckedItemByItem) {
  const std::vector<ParamSpec> specs = {
      {.name = "from",
       .type = ParamSpec::Type::kList,
       .default_value = "a+b",
       .check_item = [](const std::string& item) -> std::string {
         return item == "bad" ? "not allowed" : "";
       }}};
  EXPECT_EQ(Params::Parse({}, specs, "alg").List("from"),
            (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(Params::Parse({"from=c"}, specs, "alg").List("from"),
            (std::vector<std::string>{"c"}));
  auto error = [&](const std::string& item) -> std::string {
    try {
      Params::Parse({item}, specs, "alg");
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(error("from=a+bad"),
            "alg: parameter from=a+bad: 'bad': not allowed");
  EXPECT_EQ(error("from=a++b"),
            "alg: parameter from=a++b: an empty name between '+' signs");
  EXPECT_EQ(error("from="), "alg: parameter from=: expected at least one name");
}

TEST(SpecLists, ItemsWithoutAColonContinueTheSpecBeforeThem) {
  EXPECT_EQ(
      SplitSpecList("chain:n=8,mem=2,chain:n=4,noremat"),
      (std::vector<std::string>{"chain:n=8,mem=2", "chain:n=4", "noremat"}));
  EXPECT_EQ(SplitSpecList("a.json,b.json"),
            (std::vector<std::string>{"a.json", "b.json"}));
  EXPECT_EQ(SplitSpec("resnet:depth=50,batch=2"),
            (std::pair<std::string, std::vector<std::string>>{
                "resnet", {"depth=50", "batch=2"}}));
}

TEST(Bytes, UnitsArePowersOf1000Or1024AndFractionsRoundUp) {
  EXPECT_EQ(ParseBytes("1000", "b"), 1000);
  EXPECT_EQ(ParseBytes("1000B", "b"), 1000);
  EXPECT_EQ(ParseBytes("512MiB", "b"), 512LL << 20);
  EXPECT_EQ(ParseBytes("8GB", "b"), 8'000'000'000LL);
  EXPECT_EQ(ParseBytes("1.5GiB", "b"), 3LL << 29);
  EXPECT_EQ(ParseBytes("2kB", "b"), 2000);
  EXPECT_EQ(ParseBytes("1.0001KiB", "b"), 1025);  // 1024.1 rounds up
  EXPECT_THROW(ParseBytes("-1", "b"), InputError);
  EXPECT_THROW(ParseBytes("lots", "b"), InputError);
  EXPECT_THROW(ParseBytes("12XB", "b"), InputError);
  EXPECT_THROW(ParseBytes("9000000TiB", "b"), InputError);
  EXPECT_THROW(ParseBytes("", "b"), InputError);
}

TEST(Bytes, FormatsForHumans) {
  EXPECT_EQ(FormatBytes(512), "512 B");
  EXPECT_EQ(FormatBytes(1536), "1.50 KiB");
  EXPECT_EQ(FormatBytes(3LL << 30), "3.00 GiB");
}

}  // namespace
}  // namespace remat
