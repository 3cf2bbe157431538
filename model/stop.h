// A stop of all the work of this process, asked for by the Python module
// when Ctrl-C arrives during a call that released the GIL: while it is
// requested every Deadline has passed (algorithms end as at their time
// limit), child solvers are killed, a sweep starts no more tasks and a
// simulation ends, invalid. It holds until ClearStop.
#pragma once

#include <atomic>
#include <stdexcept>

namespace remat {

namespace internal {
inline std::atomic<bool> stop_requested{false};
}  // namespace internal

inline void RequestStop() { internal::stop_requested.store(true); }
inline void ClearStop() { internal::stop_requested.store(false); }
inline bool StopRequested() {
  return internal::stop_requested.load(std::memory_order_relaxed);
}

// Thrown by work that has no partial answer to give when stopped (a
// sweep's results document).
class Stopped : public std::runtime_error {
 public:
  Stopped() : std::runtime_error("stopped (interrupted)") {}
};

}  // namespace remat
