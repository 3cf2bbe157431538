// Whole-file reads and crash-safe writes.
#pragma once

#include <cstdint>
#include <fstream>
#include <functional>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

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
// (model/limits.h: kBytesPerFileByte per byte); throws Stopped once a stop
// is requested (model/stop.h).
std::string ReadFile(const std::string& path);

// Writes through `write` into a temporary file beside `path` and renames it
// into place, so an interrupted or failed write never leaves a truncated
// file. "-" writes to stdout. What is not a regular file (a device, a FIFO,
// /dev/stdout or any link through /proc or /dev/fd) is written in place,
// never renamed over; a symbolic link to a regular file is kept and the
// file it names replaced. Throws InputError if the file cannot be written
// (a file size limit gives EFBIG's reason when SIGXFSZ is ignored); no
// temporary is left behind.
void WriteFileAtomically(const std::string& path,
                         const std::function<void(std::ostream&)>& write);

// Throws InputError "<what> <output> is one of the command's inputs (<input>);
// it would be replaced" when `output` exists and is the same file as one of
// `inputs` (files, or generator specs that name none).
void RefuseOutputThatIsAnInput(const std::string& output,
                               const std::string& what,
                               const std::vector<std::string>& inputs);

// Sends std::cout through a buffer on descriptor 1 that keeps the reason of
// a failed write; FinishStdout() flushes and closes it and returns "" or
// "stdout: write failed (<reason>)". main() calls both, so that output lost
// to a full disk or a closed pipe is an error, not exit status 0.
void CheckStdoutWrites();
std::string FinishStdout();

// Removes what WriteFileAtomically(path) left when its process was killed
// while writing: "<path>.tmp.<pid>" files whose process is gone. Those of
// running processes (another sweep writing the same file) are kept.
void RemoveStaleTemporaries(const std::string& path);

}  // namespace remat
