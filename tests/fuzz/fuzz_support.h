// Shared by the fuzz targets (one per reader; docs/robustness.md): every
// input must be read or refused with an InputError; any other exception,
// crash, hang or sanitizer report is a bug.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <string_view>

#include "model/errors.h"
#include "model/graph_source.h"
#include "model/limits.h"

namespace remat::fuzz {

// A small memory limit keeps every input fast: a spec or file that asks
// for millions of nodes is refused by the estimate (model/limits.h)
// instead of being built.
inline void Init() { SetMemoryLimit(64 << 20); }

inline std::string_view Text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// The file readers take a path: the input is written to one temporary file
// per process (in /dev/shm when it exists, memory-backed), named with the
// extension the reader may look at.
inline std::string WriteInput(std::string_view text, const char* extension) {
  static const std::string path =
      std::string(access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp") +
      "/remat_fuzz_" + std::to_string(getpid()) + extension;
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) __builtin_trap();
  std::fwrite(text.data(), 1, text.size(), f);
  std::fclose(f);
  return path;
}

// Runs `read`, accepting an InputError (bad input refused) as success.
template <typename Read>
int Accept(Read read) {
  try {
    read();
  } catch (const InputError&) {
  }
  return 0;
}

// One input through the registered file reader `format` (kusumoto,
// checkmate, remat2): written to a file named with `extension`, then read.
inline int ReadAsFormat(std::string_view format, const uint8_t* data,
                        size_t size, const char* extension) {
  const GraphFormat* reader = nullptr;
  for (const GraphFormat* f : AllGraphFormats()) {
    if (f->name == format) reader = f;
  }
  if (reader == nullptr) throw std::logic_error("no such reader registered");
  const std::string path = WriteInput(Text(data, size), extension);
  return Accept([&] { reader->read(path); });
}

}  // namespace remat::fuzz
