#include "model/limits.h"

#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <limits>
#include <mutex>
#include <new>
#include <sstream>

#include "model/errors.h"
#include "model/params.h"

namespace remat {

namespace {

constexpr int64_t kUnlimited = std::numeric_limits<int64_t>::max();

struct Limit {
  std::once_flag read;
  int64_t bytes = kUnlimited;
  bool set = false;
  const char* source = "available memory (/proc/meminfo)";
};

Limit& TheLimit() {
  static Limit limit;
  return limit;
}

int64_t ReadMemAvailable() {
  std::ifstream meminfo("/proc/meminfo");
  std::string line;
  while (std::getline(meminfo, line)) {
    std::istringstream fields(line);
    std::string key, unit;
    int64_t kib = 0;
    if (fields >> key >> kib >> unit && key == "MemAvailable:" &&
        unit == "kB" && kib > 0) {
      return kib * 1024;
    }
  }
  return kUnlimited;
}

// What an address-space limit (ulimit -v, RLIMIT_AS) leaves beyond what
// the process has mapped already (VmSize), or kUnlimited. Allocations past
// it fail with bad_alloc, some where nothing can catch it (nlohmann's
// destructor allocates while freeing a partly parsed document).
int64_t AddressSpaceLeft() {
  struct rlimit limit;
  if (getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) {
    return kUnlimited;
  }
  std::ifstream status("/proc/self/status");
  std::string line;
  int64_t mapped = 0;
  while (std::getline(status, line)) {
    std::istringstream fields(line);
    std::string key;
    int64_t kib = 0;
    if (fields >> key >> kib && key == "VmSize:") mapped = kib * 1024;
  }
  const int64_t cap = static_cast<int64_t>(
      std::min<rlim_t>(limit.rlim_cur, static_cast<rlim_t>(kUnlimited)));
  return std::max<int64_t>(0, cap - mapped);
}

std::terminate_handler default_terminate = nullptr;
std::atomic<bool> out_of_memory_reported{false};

[[noreturn]] void TerminateOnOutOfMemory() {
  bool out_of_memory = false;
  if (const std::exception_ptr error = std::current_exception()) {
    try {
      std::rethrow_exception(error);
    } catch (const std::bad_alloc&) {
      out_of_memory = true;
    } catch (...) {
    }
  }
  if (!out_of_memory) {
    default_terminate();
    std::abort();  // a terminate handler must not return
  }
  // Threads that run out together: one line, from the first.
  if (out_of_memory_reported.exchange(true)) {
    for (;;) pause();
  }
  // write(2), which allocates nothing: there is no memory left.
  [[maybe_unused]] ssize_t written =
      write(STDERR_FILENO, kOutOfMemoryLine, sizeof kOutOfMemoryLine - 1);
  written = write(STDERR_FILENO, "\n", 1);
  // No destructors or atexit handlers: other threads are still running.
  std::_Exit(2);
}

}  // namespace

void ExitOnUncaughtOutOfMemory() {
  default_terminate = std::set_terminate(TerminateOnOutOfMemory);
}

int64_t MemoryLimit() {
  Limit& limit = TheLimit();
  std::call_once(limit.read, [&] {
    if (limit.set) return;
    limit.bytes = ReadMemAvailable();
    if (const int64_t left = AddressSpaceLeft(); left < limit.bytes) {
      limit.bytes = left;
      limit.source = "address space left under ulimit -v";
    }
  });
  return limit.bytes;
}

std::string MemoryLimitSource() {
  return TheLimit().set ? "--max-memory" : TheLimit().source;
}

void SetMemoryLimit(int64_t bytes) {
  Limit& limit = TheLimit();
  limit.bytes = bytes;
  limit.set = true;
}

int64_t GivenMemoryLimit() { return TheLimit().set ? TheLimit().bytes : 0; }

void CheckMemory(int64_t bytes, const std::string& what) {
  const int64_t limit = MemoryLimit();
  if (bytes <= limit) return;
  throw InputError(fmt::format(
      "{}: needs about {}, more than the {} of {} (set --max-memory to "
      "change the limit)",
      what, FormatBytes(bytes), FormatBytes(limit), MemoryLimitSource()));
}

int64_t GraphBytes(int64_t nodes, int64_t edges) {
  int64_t node_bytes, edge_bytes, total;
  if (__builtin_mul_overflow(nodes, kBytesPerNode, &node_bytes) ||
      __builtin_mul_overflow(edges, kBytesPerEdge, &edge_bytes) ||
      __builtin_add_overflow(node_bytes, edge_bytes, &total)) {
    return kUnlimited;
  }
  return total;
}

}  // namespace remat
