// Generator specs ("chain:n=16,mem=4"; model/graph_source.h LoadGraph).
// Inputs that name an existing path are skipped: only specs are fuzzed.
#include <filesystem>

#include "model/graph_source.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  remat::fuzz::Init();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string spec(remat::fuzz::Text(data, size));
  std::error_code ec;
  if (spec.find('\0') != std::string::npos ||
      std::filesystem::exists(spec, ec)) {
    return 0;
  }
  return remat::fuzz::Accept([&] { remat::LoadGraph(spec); });
}
