// Resource limits checked before work: a graph or file that would not fit
// in memory is refused with the estimate and the limit (exit 2), instead
// of being killed by the kernel after minutes of swapping.
#pragma once

#include <cstdint>
#include <string>

namespace remat {

// Estimated bytes per node and per edge of a graph while it is built and
// analysed (`remat graph info chain:n=1000000`, 2*10^6 nodes and 4*10^6
// edges, peaks at 0.62 GB resident: ~310 B/node with the edges).
inline constexpr int64_t kBytesPerNode = 288;
inline constexpr int64_t kBytesPerEdge = 16;
// Bytes of memory per byte of a graph file while it is parsed (a 44.5 MB
// native JSON file of chain:n=200000 peaks at 0.51 GB resident: 11.5x).
inline constexpr int64_t kBytesPerFileByte = 12;

// The memory a run may plan to use: the --max-memory option if given,
// else MemAvailable of /proc/meminfo (unlimited if that cannot be read),
// or less under an address-space limit (ulimit -v): what it leaves beyond
// the process's mappings when first asked.
int64_t MemoryLimit();
// Where MemoryLimit() comes from, for messages: "--max-memory" or
// "available memory".
std::string MemoryLimitSource();
// Overrides the limit (--max-memory, fuzzers); bytes > 0.
void SetMemoryLimit(int64_t bytes);
// The limit SetMemoryLimit set, or 0 if none: what an isolated solver
// (harness/isolation.h) is handed, since its own would be MemAvailable.
int64_t GivenMemoryLimit();

// The line a command ends with, exit status 2, when memory runs out.
inline constexpr char kOutOfMemoryLine[] =
    "remat: out of memory (--max-memory refuses large inputs before they "
    "are read)";

// Makes a std::bad_alloc that reaches std::terminate end the process with
// kOutOfMemoryLine and exit status 2 instead of an abort (134): one thrown
// in a thread (OpenMP's, the journal writer's, the progress ticker's) or
// through a noexcept function (nlohmann's destructor, which allocates
// while freeing a partly parsed document). Any other exception still
// aborts. Call first in main().
void ExitOnUncaughtOutOfMemory();

// Throws InputError "<what>: needs about <bytes>, more than the <limit>
// of <source>" when `bytes` exceeds MemoryLimit().
void CheckMemory(int64_t bytes, const std::string& what);

// The estimate of kBytesPerNode and kBytesPerEdge, saturating.
int64_t GraphBytes(int64_t nodes, int64_t edges);

}  // namespace remat
