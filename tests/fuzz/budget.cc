// Budgets and other byte counts (model/params.h ParseBytes), and the
// parameter lists that carry them ("k=v,k=v" of an algorithm or generator).
#include "model/params.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  remat::fuzz::Init();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(remat::fuzz::Text(data, size));
  static const std::vector<remat::ParamSpec> kSpecs = {
      {.name = "budget",
       .type = remat::ParamSpec::Type::kBytes,
       .default_value = "1"},
      {.name = "n",
       .type = remat::ParamSpec::Type::kInt,
       .default_value = "1",
       .min_int = 1},
      {.name = "x",
       .type = remat::ParamSpec::Type::kDouble,
       .default_value = "0.5"},
      {.name = "order",
       .type = remat::ParamSpec::Type::kChoice,
       .default_value = "up",
       .choices = {"up", "down"}},
      {.name = "list",
       .type = remat::ParamSpec::Type::kList,
       .default_value = "a"}};
  remat::fuzz::Accept([&] {
    const int64_t bytes = remat::ParseBytes(text, "fuzz");
    if (bytes < 0) __builtin_trap();
    remat::FormatBytes(bytes);
  });
  return remat::fuzz::Accept([&] {
    remat::Params params =
        remat::Params::Parse(remat::SplitParamList(text), kSpecs, "fuzz");
    params.Int("budget");
    params.Int("n");
    params.Double("x");
    params.List("list");
  });
}
