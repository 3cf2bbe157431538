// Schedule text (harness/schedule.h) against a graph of 16 nodes.
#include "harness/schedule.h"

#include <sstream>

#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  remat::fuzz::Init();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::istringstream in{std::string(remat::fuzz::Text(data, size))};
  std::vector<int64_t> lines;
  return remat::fuzz::Accept(
      [&] { remat::ParseScheduleText(in, "fuzz", 16, &lines); });
}
