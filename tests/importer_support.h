// Helpers of the importer suites: the hand-written files under
// tests/importers/, malformed variants of them written to a temporary
// folder, and the error every malformed file must produce (one line naming
// the file, and the line where the format has lines).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "model/errors.h"
#include "model/graph_source.h"
#include "tests/test_support.h"

namespace remat::testing {

inline std::string ImporterFile(const std::string& name) {
  return SourceDir() + "/tests/importers/" + name;
}

inline std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// `text` with the first `from` replaced by `to`; `from` must occur.
inline std::string Replace(std::string text, const std::string& from,
                           const std::string& to) {
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << "'" << from << "' not in the text";
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

// Writes `text` to `name` in a folder of this process (test binaries may
// run in parallel) and returns the path.
inline std::string WriteTemp(const std::string& name, const std::string& text) {
  std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) /
                              ("remat_importers_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::string path = (dir / name).string();
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// Success iff loading `text` (saved as `name`) throws an InputError of one
// line that starts with the path, then ":<line>:" if `line` > 0, and
// contains `expected`.
inline ::testing::AssertionResult Refused(const std::string& name,
                                          const std::string& text, int line,
                                          const std::string& expected) {
  const std::string path = WriteTemp(name, text);
  std::string error;
  try {
    LoadGraph(path);
    return ::testing::AssertionFailure() << name << " was accepted";
  } catch (const InputError& e) {
    error = e.what();
  }
  std::string prefix =
      line > 0 ? path + ":" + std::to_string(line) + ":" : path;
  if (!error.starts_with(prefix)) {
    return ::testing::AssertionFailure()
           << "does not start with '" << prefix << "': " << error;
  }
  if (error.find(expected) == std::string::npos) {
    return ::testing::AssertionFailure()
           << "'" << expected << "' not in: " << error;
  }
  if (error.find('\n') != std::string::npos) {
    return ::testing::AssertionFailure() << "not one line: " << error;
  }
  return ::testing::AssertionSuccess();
}

}  // namespace remat::testing
