#include "harness/limits.h"

#include <fmt/format.h>

#include <fstream>
#include <limits>
#include <mutex>
#include <sstream>

#include "harness/errors.h"
#include "harness/params.h"

namespace remat {

namespace {

constexpr int64_t kUnlimited = std::numeric_limits<int64_t>::max();

struct Limit {
  std::once_flag read;
  int64_t bytes = kUnlimited;
  bool set = false;
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

}  // namespace

int64_t MemoryLimit() {
  Limit& limit = TheLimit();
  std::call_once(limit.read, [&] {
    if (!limit.set) limit.bytes = ReadMemAvailable();
  });
  return limit.bytes;
}

std::string MemoryLimitSource() {
  return TheLimit().set ? "--max-memory" : "available memory (/proc/meminfo)";
}

void SetMemoryLimit(int64_t bytes) {
  Limit& limit = TheLimit();
  limit.bytes = bytes;
  limit.set = true;
}

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
