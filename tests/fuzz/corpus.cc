// Corpus manifests (harness/sweep.h ReadCorpus), written to a file first.
#include "harness/sweep.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  remat::fuzz::Init();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path =
      remat::fuzz::WriteInput(remat::fuzz::Text(data, size), ".json");
  return remat::fuzz::Accept([&] { remat::ReadCorpus(path); });
}
