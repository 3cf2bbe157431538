// The remat2 importer (graphs/importers/remat2.cc), through its registered
// reader: the input is written to a file first.
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  remat::fuzz::Init();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return remat::fuzz::ReadAsFormat("remat2", data, size, ".remat2");
}
