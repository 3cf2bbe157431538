// The remat2 importer (graphs/importers/remat2.cc), through its registered
// reader: the input is written to a file first.
#include <stdexcept>

#include "harness/graph_source.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

const remat::GraphFormat& Format() {
  for (const remat::GraphFormat* format : remat::AllGraphFormats()) {
    if (format->name == "remat2") return *format;
  }
  throw std::logic_error("no remat2 reader registered");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  remat::fuzz::Init();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path =
      remat::fuzz::WriteInput(remat::fuzz::Text(data, size), ".remat2");
  return remat::fuzz::Accept([&] { Format().read(path); });
}
