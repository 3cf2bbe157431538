// Whole-file reads and crash-safe writes.
#pragma once

#include <functional>
#include <iosfwd>
#include <string>

namespace remat {

// Reads a whole file; throws InputError naming the path if it cannot.
std::string ReadFile(const std::string& path);

// Writes through `write` into a temporary file beside `path` and renames it
// into place, so an interrupted or failed write never leaves a truncated
// file. "-" writes to stdout, and a path that is a device or pipe is
// written in place. Throws InputError if the file cannot be written.
void WriteFileAtomically(const std::string& path,
                         const std::function<void(std::ostream&)>& write);

}  // namespace remat
