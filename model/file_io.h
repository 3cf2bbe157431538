// Whole-file reads and crash-safe writes.
#pragma once

#include <cstdint>
#include <fstream>
#include <functional>
#include <iosfwd>
#include <string>
#include <string_view>

namespace remat {

// Throws InputError naming the path (and strerror's reason) unless it is a
// regular file: a directory, FIFO or device such as /dev/zero is refused
// before it is opened, since reading one may block or never end.
void RequireRegularFile(const std::string& path);

// Opens a regular file for reading (RequireRegularFile), or throws
// InputError naming the path if it cannot, or if holding `bytes_per_byte`
// bytes of memory per byte of it would pass the memory limit
// (model/limits.h): "<path> (<size> <what>): needs about ...". The readers
// of whole files share it so that each checks its memory before it reads.
std::ifstream OpenSizedFile(const std::string& path, int64_t bytes_per_byte,
                            std::string_view what);

// Reads a whole regular file; throws InputError naming the path if it
// cannot, or if parsing it would need more memory than the limit
// (model/limits.h: kBytesPerFileByte per byte).
std::string ReadFile(const std::string& path);

// Writes through `write` into a temporary file beside `path` and renames it
// into place, so an interrupted or failed write never leaves a truncated
// file. "-" writes to stdout, and a path that is a device or pipe is
// written in place. Throws InputError if the file cannot be written.
void WriteFileAtomically(const std::string& path,
                         const std::function<void(std::ostream&)>& write);

// Removes what WriteFileAtomically(path) left when its process was killed
// while writing: "<path>.tmp.<pid>" files whose process is gone. Those of
// running processes (another sweep writing the same file) are kept.
void RemoveStaleTemporaries(const std::string& path);

}  // namespace remat
