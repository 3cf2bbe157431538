// Native graph JSON (model/graph_json.h), parsed from memory.
#include "model/graph_json.h"

#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  remat::fuzz::Init();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return remat::fuzz::Accept(
      [&] { remat::ParseGraphJson(remat::fuzz::Text(data, size), "fuzz"); });
}
