// Whole-file reads and crash-safe writes.
#pragma once

#include <functional>
#include <iosfwd>
#include <string>

namespace remat {

// Throws InputError naming the path (and strerror's reason) unless it is a
// regular file: a directory, FIFO or device such as /dev/zero is refused
// before it is opened, since reading one may block or never end.
void RequireRegularFile(const std::string& path);

// Reads a whole regular file; throws InputError naming the path if it
// cannot, or if parsing it would need more memory than the limit
// (harness/limits.h: kBytesPerFileByte per byte).
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
