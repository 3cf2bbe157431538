#include "model/file_io.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <vector>

#include "model/errors.h"
#include "model/limits.h"
#include "model/params.h"
#include "model/stop.h"

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
  // A file of /proc or /sys says it is empty (size 0) and its contents
  // change as it is read: no input to measure, read whole or trust.
  struct statfs fs;
  constexpr long kProcMagic = 0x9fa0, kSysfsMagic = 0x62656572;
  if (statfs(path.c_str(), &fs) == 0 &&
      (fs.f_type == kProcMagic || fs.f_type == kSysfsMagic)) {
    throw InputError(fmt::format(
        "{}: not a regular file (a file of {}); copy it to a file first",
        path, fs.f_type == kProcMagic ? "/proc" : "/sys"));
  }
}

std::ifstream OpenSizedFile(const std::string& path, int64_t bytes_per_byte,
                            std::string_view what) {
  RequireRegularFile(path);
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw InputError(
        fmt::format("{}: cannot open file ({})", path, std::strerror(errno)));
  }
  in.seekg(0, std::ios::end);
  const int64_t size = in.tellg();
  in.seekg(0);
  int64_t bytes;
  if (__builtin_mul_overflow(size, bytes_per_byte, &bytes)) {
    bytes = std::numeric_limits<int64_t>::max();
  }
  CheckMemory(bytes, fmt::format("{} ({} {})", path, FormatBytes(size), what));
  return in;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in = OpenSizedFile(path, kBytesPerFileByte, "to parse");
  // A piece at a time, so that a stop (model/stop.h) ends the read of a
  // large file, on a slow disk too. 64 KiB: a buffer of 1 MiB took fresh
  // pages at every read (glibc's and ASan's allocators map allocations
  // that large), which cost small files the most: remat2's fuzz target,
  // a file per input, ran 15 times slower.
  std::string text;
  std::vector<char> piece(size_t{1} << 16);
  while (in.read(piece.data(), static_cast<std::streamsize>(piece.size())) ||
         in.gcount() > 0) {
    text.append(piece.data(), static_cast<size_t>(in.gcount()));
    ThrowIfStopped();
  }
  if (in.bad()) {
    throw InputError(
        fmt::format("{}: read error ({})", path, std::strerror(errno)));
  }
  return text;
}

namespace {

// An output stream buffer on a file descriptor that keeps the errno of a
// failed write, so that the message can say why (no space, read-only, ...):
// std::ofstream only says that it failed.
class FdBuffer : public std::streambuf {
 public:
  explicit FdBuffer(int fd) : fd_(fd) { setp(buffer_, buffer_ + kSize); }
  // The errno of the first failed write, or 0.
  int error() const { return error_; }

 protected:
  int overflow(int c) override {
    if (!Drain()) return traits_type::eof();
    if (c != traits_type::eof()) {
      *pptr() = static_cast<char>(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }
  int sync() override { return Drain() ? 0 : -1; }

 private:
  static constexpr size_t kSize = 1 << 16;

  bool Drain() {
    for (const char* p = pbase(); p < pptr() && error_ == 0;) {
      const ssize_t n = ::write(fd_, p, pptr() - p);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        error_ = n < 0 ? errno : EIO;
      } else {
        p += n;
      }
    }
    setp(buffer_, buffer_ + kSize);
    return error_ == 0;
  }

  int fd_;
  int error_ = 0;
  char buffer_[kSize];
};

// Writes through `write` to `fd` and closes it; "" or why it failed
// (strerror's reason).
std::string WriteAndClose(int fd,
                          const std::function<void(std::ostream&)>& write) {
  FdBuffer buffer(fd);
  std::ostream out(&buffer);
  try {
    write(out);
  } catch (...) {
    close(fd);
    throw;
  }
  out.flush();
  int error = buffer.error();
  if (error == 0 && !out) error = EIO;
  if (close(fd) != 0 && error == 0) error = errno;
  return error == 0 ? "" : std::strerror(error);
}

}  // namespace

void RemoveStaleTemporaries(const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path file(path);
  const std::string prefix = file.filename().string() + ".tmp.";
  const fs::path folder =
      file.has_parent_path() ? file.parent_path() : fs::path(".");
  std::error_code error;  // an unreadable folder: nothing to remove
  for (fs::directory_iterator it(folder, error), end; !error && it != end;
       it.increment(error)) {
    const std::string name = it->path().filename().string();
    if (name.size() <= prefix.size() ||
        name.compare(0, prefix.size(), prefix) != 0) {
      continue;
    }
    const std::string digits = name.substr(prefix.size());
    if (digits.size() > 9 ||
        digits.find_first_not_of("0123456789") != std::string::npos) {
      continue;
    }
    const pid_t pid = static_cast<pid_t>(std::stol(digits));
    if (pid > 0 && pid != getpid() && kill(pid, 0) != 0 && errno == ESRCH) {
      std::error_code ignored;
      fs::remove(it->path(), ignored);
    }
  }
}

namespace {

FdBuffer* stdout_buffer = nullptr;
bool stdout_error_reported = false;  // by WriteToStdout's exception

bool UnderProcOrDevFd(const std::string& path) {
  const std::string p = std::filesystem::path(path).lexically_normal().string();
  return p.starts_with("/proc/") || p.starts_with("/dev/fd/");
}

// Where a write to `path` goes. A device, FIFO or socket, and anything
// reached through /proc or /dev/fd (/dev/stdout, /proc/self/fd/1, which may
// stand for a pipe or for the file the shell redirected stdout to), is
// written in place: a rename would replace the link or the device node. A
// regular file, or one that does not exist yet, is replaced atomically; a
// symbolic link to a regular file is followed, so the link stays and the
// file it names is replaced.
struct OutputTarget {
  bool in_place = false;
  std::string file;
};

OutputTarget ResolveOutput(const std::string& path) {
  std::string p = path;
  for (int hops = 0; hops < 40; ++hops) {
    if (UnderProcOrDevFd(p)) return {true, p};
    struct stat st;
    if (lstat(p.c_str(), &st) != 0) return {false, p};  // a new file
    if (S_ISDIR(st.st_mode)) {
      throw InputError(fmt::format("{}: is a directory, not a file", path));
    }
    if (!S_ISLNK(st.st_mode)) return {!S_ISREG(st.st_mode), p};
    // st_size is the link's length, or 0 where a file system does not say.
    std::vector<char> target(
        std::max<size_t>(static_cast<size_t>(st.st_size), 4096) + 2);
    const ssize_t n = readlink(p.c_str(), target.data(), target.size() - 1);
    if (n < 0) return {true, path};  // let open() say why
    const std::filesystem::path link(std::string(target.data(), n));
    p = link.is_absolute()
            ? link.string()
            : (std::filesystem::path(p).parent_path() / link).string();
  }
  throw InputError(fmt::format(
      "{}: cannot write ({})", path, std::strerror(ELOOP)));
}

// The descriptor among stdout and stderr that is the file `path` opens, or
// -1: writing to `-o /dev/stdout` while stdout is a file must continue
// where stdout is, not open the file again at offset 0.
int StandardDescriptorOf(const std::string& path) {
  struct stat target;
  if (stat(path.c_str(), &target) != 0) return -1;
  for (int fd : {STDOUT_FILENO, STDERR_FILENO}) {
    struct stat st;
    if (fstat(fd, &st) == 0 && st.st_dev == target.st_dev &&
        st.st_ino == target.st_ino) {
      return fd;
    }
  }
  return -1;
}

void WriteToStdout(const std::function<void(std::ostream&)>& write) {
  write(std::cout);
  std::cout.flush();
  if (!std::cout) {
    const int error = stdout_buffer && stdout_buffer->error()
                          ? stdout_buffer->error()
                          : (errno ? errno : EIO);
    stdout_error_reported = true;
    throw InputError(
        fmt::format("stdout: write failed ({})", std::strerror(error)));
  }
}

}  // namespace

void CheckStdoutWrites() {
  static FdBuffer buffer(STDOUT_FILENO);
  stdout_buffer = &buffer;
  std::cout.rdbuf(&buffer);
}

std::string FinishStdout() {
  std::cout.flush();
  int error = stdout_buffer ? stdout_buffer->error() : 0;
  if (error == 0 && !std::cout) error = EIO;
  if (stdout_buffer) {
    // Once, at the end: a failed close (NFS, a full disk) is a failed write.
    // A closed stdout that nothing was written to is no error.
    if (close(STDOUT_FILENO) != 0 && errno != EBADF && error == 0) {
      error = errno;
    }
    std::cout.rdbuf(nullptr);
    stdout_buffer = nullptr;
  }
  return error == 0 || stdout_error_reported ? ""
                    : fmt::format("stdout: write failed ({})",
                                  std::strerror(error));
}

void RefuseOutputThatIsAnInput(const std::string& output,
                               const std::string& what,
                               const std::vector<std::string>& inputs) {
  if (output.empty() || output == "-") return;
  struct stat out;
  if (stat(output.c_str(), &out) != 0) return;  // a new file
  for (const std::string& input : inputs) {
    struct stat in;
    if (stat(input.c_str(), &in) == 0 && in.st_dev == out.st_dev &&
        in.st_ino == out.st_ino) {
      throw InputError(fmt::format(
          "{} {} is one of the command's inputs ({}); it would be replaced",
          what, output, input));
    }
  }
}

void WriteFileAtomically(const std::string& path,
                         const std::function<void(std::ostream&)>& write) {
  if (path == "-") return WriteToStdout(write);
  const OutputTarget target = ResolveOutput(path);
  if (target.in_place) {
    const int standard = StandardDescriptorOf(target.file);
    if (standard == STDOUT_FILENO) return WriteToStdout(write);
    if (standard == STDERR_FILENO) std::cerr.flush();
    struct stat st;
    const bool regular =
        stat(target.file.c_str(), &st) == 0 && S_ISREG(st.st_mode);
    const int fd =
        standard >= 0 ? fcntl(standard, F_DUPFD_CLOEXEC, 3)
                      : open(target.file.c_str(),
                             O_WRONLY | O_CLOEXEC | (regular ? O_TRUNC : 0));
    if (fd < 0) {
      throw InputError(
          fmt::format("{}: cannot write ({})", path, std::strerror(errno)));
    }
    if (std::string error = WriteAndClose(fd, write); !error.empty()) {
      throw InputError(fmt::format("{}: write failed ({})", path, error));
    }
    return;
  }
  const std::string& file = target.file;
  const std::string temp = fmt::format("{}.tmp.{}", file, getpid());
  const int fd =
      open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) {
    throw InputError(
        fmt::format("{}: cannot write file ({})", path, std::strerror(errno)));
  }
  std::string error;
  try {
    error = WriteAndClose(fd, write);
  } catch (...) {
    std::remove(temp.c_str());
    throw;
  }
  if (!error.empty()) {
    std::remove(temp.c_str());
    throw InputError(fmt::format("{}: write failed ({})", path, error));
  }
  if (std::rename(temp.c_str(), file.c_str()) != 0) {
    const int why = errno;
    std::remove(temp.c_str());
    throw InputError(fmt::format("{}: cannot rename into place ({})", path,
                                 std::strerror(why)));
  }
}

}  // namespace remat
