#include "harness/file_io.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <sstream>

#include "harness/errors.h"
#include "harness/limits.h"
#include "harness/params.h"

namespace remat {

void RequireRegularFile(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    throw InputError(
        fmt::format("{}: cannot open file ({})", path, std::strerror(errno)));
  }
  if (S_ISDIR(st.st_mode)) {
    throw InputError(fmt::format("{}: is a directory, not a file", path));
  }
  // Reading a FIFO or a device such as /dev/zero may never end.
  if (!S_ISREG(st.st_mode)) {
    throw InputError(fmt::format(
        "{}: not a regular file (a {}); copy it to a file first", path,
        S_ISFIFO(st.st_mode)   ? "pipe"
        : S_ISCHR(st.st_mode)  ? "character device"
        : S_ISBLK(st.st_mode)  ? "block device"
        : S_ISSOCK(st.st_mode) ? "socket"
                               : "special file"));
  }
}

std::string ReadFile(const std::string& path) {
  RequireRegularFile(path);
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw InputError(
        fmt::format("{}: cannot open file ({})", path, std::strerror(errno)));
  }
  in.seekg(0, std::ios::end);
  const int64_t size = in.tellg();
  in.seekg(0);
  if (size > 0) {
    int64_t bytes;
    if (__builtin_mul_overflow(size, kBytesPerFileByte, &bytes)) {
      bytes = std::numeric_limits<int64_t>::max();
    }
    CheckMemory(bytes,
                fmt::format("{} ({} to parse)", path, FormatBytes(size)));
  }
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) {
    throw InputError(
        fmt::format("{}: read error ({})", path, std::strerror(errno)));
  }
  return std::move(buffer).str();
}

void WriteFileAtomically(const std::string& path,
                         const std::function<void(std::ostream&)>& write) {
  if (path == "-") {
    write(std::cout);
    std::cout.flush();
    return;
  }
  // A device or pipe (/dev/stdout, a FIFO) is written in place: renaming
  // over it would replace the device node with a regular file.
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (!ec && std::filesystem::exists(status) &&
      !std::filesystem::is_regular_file(status)) {
    std::ofstream out(path, std::ios::binary);
    if (!out) {
      throw InputError(
          fmt::format("{}: cannot write ({})", path, std::strerror(errno)));
    }
    write(out);
    out.flush();
    if (!out) throw InputError(fmt::format("{}: write failed", path));
    return;
  }
  const std::string temp = fmt::format("{}.tmp.{}", path, getpid());
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!out) {
      throw InputError(fmt::format("{}: cannot write file ({})", path,
                                   std::strerror(errno)));
    }
    try {
      write(out);
    } catch (...) {
      out.close();
      std::remove(temp.c_str());
      throw;
    }
    out.flush();
    if (!out) {
      out.close();
      std::remove(temp.c_str());
      throw InputError(fmt::format("{}: write failed", path));
    }
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    std::remove(temp.c_str());
    throw InputError(fmt::format("{}: cannot rename into place ({})", path,
                                 std::strerror(errno)));
  }
}

}  // namespace remat
